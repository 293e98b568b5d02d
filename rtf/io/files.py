"""Output files that are never left half-written, and the refusal to overwrite an input.

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "out.txt")
>>> with atomic_output(path) as f:
...     _ = f.write("all or nothing")
>>> open(path).read()
'all or nothing'

Every command that writes a file writes through `atomic_output` (text) or
`write_atomically` (bytes, durable), so that a failed or interrupted run
never leaves a half-written or emptied file.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import IO, Any

from rtf.errors import RtfError

#: The name of standard input or output on the command line.
STDIO = "-"


class OutputIsInputError(RtfError):
    """An output file that is also one of the command's inputs: writing it would destroy it."""


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether `a` and `b` are one file: through links and relative paths when both exist."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return os.path.realpath(a) == os.path.realpath(b)


@contextmanager
def atomic_output(path: str | os.PathLike, encoding: str | None = "utf-8",
                  durable: bool = False) -> Iterator[IO[Any]]:
    """A file to write `path` through, replacing `path` only if the block succeeds.

    The data goes to a hidden temporary file beside `path` (links are
    followed, so the link stays a link), renamed over `path` at the end: a
    failed or interrupted run leaves `path` as it was, never half-written or
    emptied. Something that is not a regular file (``/dev/null``, a pipe) is
    written in place, as is a file whose folder does not let us create one
    (unless `durable`). `encoding=None` opens it in binary mode; `durable` fsyncs the file
    before the rename and the folder after it, so that the new file survives
    a power cut.
    """
    mode = "w" if encoding else "wb"
    target = os.path.realpath(path)
    if os.path.exists(target) and not os.path.isfile(target):
        with open(target, mode, encoding=encoding) as f:
            yield f
        return
    folder, name = os.path.split(target)
    temporary = os.path.join(folder, f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        f = open(temporary, mode.replace("w", "x"), encoding=encoding)
    except PermissionError:
        if durable:  # in place would not survive a crash: let the caller know
            raise
        with open(target, mode, encoding=encoding) as f:
            yield f
        return
    try:
        with f:
            yield f
            if durable:
                f.flush()
                os.fsync(f.fileno())
        if os.path.exists(target):  # keep the permissions the output had
            os.chmod(temporary, stat.S_IMODE(os.stat(target).st_mode))
        os.replace(temporary, target)
    except BaseException:
        with suppress(OSError):
            os.unlink(temporary)
        raise
    if durable:
        _fsync_folder(folder)


def write_atomically(path: str | os.PathLike, data: bytes) -> None:
    """Replace `path` by `data`, durably: all of it or, on any failure or crash, the old file."""
    with atomic_output(path, encoding=None, durable=True) as f:
        f.write(data)


def _fsync_folder(folder: str) -> None:
    with suppress(OSError):  # not every platform or file system can fsync a folder
        fd = os.open(folder or ".", os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
