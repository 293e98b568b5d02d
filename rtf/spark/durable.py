"""Files that appear whole, survive a crash, and are never replaced once they exist.

The queries log's segments, a batch's pin and the stream's identity are
each written once and must never change: `publish_new` writes the bytes
under a hidden name, flushes them to disk, then links them to their name,
which fails when the name exists (another writer came first). A reader
sees the file whole or not at all, and the first writer wins.

>>> import tempfile
>>> folder = tempfile.mkdtemp()
>>> publish_new(folder, "pin.json", '{"op": 3}'), publish_new(folder, "pin.json", '{"op": 4}')
(True, False)
>>> open(f"{folder}/pin.json").read()
'{"op": 3}'
"""

from __future__ import annotations

import os
import uuid
from contextlib import suppress
from pathlib import Path


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
