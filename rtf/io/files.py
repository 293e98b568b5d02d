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

import fcntl
import os
import re
import secrets
import stat
from collections.abc import Callable, Iterator
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
    emptied. Something that is not a regular file (``/dev/null``, a pipe) or
    names a descriptor (``/dev/stdout``) is written in place, as is a file
    whose folder does not let us create one (unless `durable`). `encoding=None` opens it in binary mode; `durable` fsyncs the file
    before the rename and the folder after it, so that the new file survives
    a power cut.
    """
    mode = "w" if encoding else "wb"
    if _descriptor(path) or os.path.exists(path) and not os.path.isfile(path):
        # appended to: opening /dev/stdout for writing would empty the shell's `>>` file
        with open(path, mode.replace("w", "a"), encoding=encoding) as f:
            yield f
        return
    target = os.path.realpath(path)
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


#: Names of an open descriptor of this process (the file behind one, even a regular
#: file the shell opened with `>>`, is the caller's: written where it is).
_DESCRIPTOR = re.compile(r"/(dev/(stdout|stderr|fd/\d+)|proc/(self|\d+)/fd/\d+)")


def _descriptor(path: str | os.PathLike) -> bool:
    return _DESCRIPTOR.fullmatch(os.path.abspath(path)) is not None


def lock_folder(folder: str | os.PathLike, wait: bool = True,
                on_wait: Callable[[], None] | None = None) -> int:
    """Take the exclusive `flock` of `folder` itself; return the descriptor that holds
    it (closing it releases the lock).

    Writers that read, change and replace a file of the folder (``rtf index add``,
    ``rtf serve``'s data) hold it so that none works from a version another is
    replacing. A folder cannot be deleted from under its holder while its files
    stay (a lock file could), and nothing is left behind. Busy: `BlockingIOError`
    if not `wait`; otherwise `on_wait()` is called, then the lock is waited for.
    """
    fd = os.open(folder or ".", os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not wait:
                raise
            if on_wait is not None:
                on_wait()
            fcntl.flock(fd, fcntl.LOCK_EX)
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextmanager
def folder_locked(path: str | os.PathLike, on_wait: Callable[[], None] | None = None
                  ) -> Iterator[None]:
    """Hold `lock_folder` on the folder of file `path` (links followed) for the block."""
    fd = lock_folder(os.path.dirname(os.path.realpath(path)), on_wait=on_wait)
    try:
        yield
    finally:
        os.close(fd)


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
