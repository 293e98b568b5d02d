"""Files that appear whole, survive a crash, are never replaced once they exist, and are read back checked.

The queries log's segments, a batch's pin and the stream's identity are
each written once and must never change: `publish_new` writes the bytes
under a hidden name, flushes them to disk, then links them to their name,
which fails when the name exists (another writer came first). A reader
sees the file whole or not at all, and the first writer wins.

What a crash cannot do, a disk, a restore or a hand can: `read_record`
reads such a file back as a JSON object with the keys it must have, and
turns every way it can be damaged (missing, empty, cut short, not JSON,
not an object, a key missing or of the wrong kind) into one `RecordError`
line naming the file, what is wrong with it, and what to do.

>>> import tempfile
>>> folder = tempfile.mkdtemp()
>>> publish_new(folder, "pin.json", '{"op": 3}'), publish_new(folder, "pin.json", '{"op": 4}')
(True, False)
>>> open(f"{folder}/pin.json").read()
'{"op": 3}'
"""

from __future__ import annotations

import json
import math
import os
import uuid
from collections.abc import Callable, Mapping
from contextlib import suppress
from pathlib import Path

from rtf.spark.dumps import ReplayError


def publish_new(folder: str | os.PathLike, name: str, data: str | bytes) -> bool:
    """Write `data` as `folder/name`, whole and on disk, unless that name exists.

    True if written, False if the name was taken (the file is left as it
    was). `OSError` if the folder cannot be written."""
    folder = Path(folder)
    tmp = folder / f".tmp-{uuid.uuid4().hex}"
    try:
        with open(tmp, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, folder / name)  # atomic, and never over an existing name
        except FileExistsError:
            return False
    finally:
        with suppress(OSError):
            tmp.unlink()
    fsync_folder(folder)
    return True


class RecordError(ReplayError):
    """A record file (a stream's identity, a pin, a batch's manifest) that is missing, unreadable
    or not what it should be: one line naming the file, what is wrong, and what to do."""


#: A key's check and what it says the value must be.
Field = tuple[Callable[[object], bool], str]


def whole(value: object) -> bool:
    """A JSON whole number >= 0 (not a boolean, not 3.0)."""
    return type(value) is int and value >= 0


def text(value: object) -> bool:
    return isinstance(value, str) and value != ""


def text_or_null(value: object) -> bool:
    return value is None or text(value)


def number(value: object) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


def read_record(path: str | os.PathLike, fields: Mapping[str, Field], fix: str) -> dict:
    """The JSON object in file `path`, with every key of `fields` there and passing its check.

    Otherwise `RecordError`: ``PATH: WHAT IS WRONG; FIX`` (one line)."""
    path = Path(path)

    def damaged(problem: str) -> RecordError:
        return RecordError(f"{path}: {problem}; {fix}")

    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise damaged("missing") from None
    except OSError as e:
        raise damaged(f"cannot be read ({e.strerror or e})") from None
    if not data.strip():
        raise damaged("empty")
    try:
        value = json.loads(data)
    except (ValueError, RecursionError) as e:  # cut short, garbage, bad UTF-8, nested too deep
        raise damaged(f"not JSON ({_one_line(e)})") from None
    if not isinstance(value, dict):
        raise damaged(f"not a JSON object but {_short(value)}")
    for key, (check, what) in fields.items():
        if key not in value:
            raise damaged(f'no "{key}"')
        if not check(value[key]):
            raise damaged(f'"{key}" must be {what}, not {_short(value[key])}')
    return value


def _one_line(error: Exception) -> str:
    return " ".join(str(error).split())[:120] or type(error).__name__


def _short(value: object) -> str:
    try:
        shown = json.dumps(value, ensure_ascii=False)
    except (ValueError, RecursionError):
        shown = type(value).__name__
    return _one_line(ValueError(shown if len(shown) <= 60 else shown[:57] + "..."))


def fsync_folder(folder: str | os.PathLike) -> None:
    """Flush a folder's entries (a rename or link in it) to disk, where the platform can."""
    with suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class FileLock:
    """An exclusive lock on `path` (``fcntl.flock``), released when closed or when the process dies.

    `blocking=False`: `BlockingIOError` if another process holds it."""

    def __init__(self, path: str | os.PathLike, blocking: bool = True):
        self.path = Path(path)
        self.blocking = blocking
        self.fd: int | None = None

    def acquire(self) -> "FileLock":
        import fcntl

        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if self.blocking else fcntl.LOCK_NB))
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd
        return self

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> "FileLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()
