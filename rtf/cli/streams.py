"""Standard streams a command was started without: one clear line, never an internal error.

A daemon, a cron job or ``rtf match ... >&-`` may start rtf with descriptor
0, 1 or 2 closed. Python then sets `sys.stdin`, `sys.stdout` or `sys.stderr`
to None, and the first read or write was an AttributeError: exit 70, an
"internal error". `guard_closed_streams` runs first in `rtf.cli.main`:

- each closed descriptor is opened on /dev/null, so that no file rtf opens
  later takes its number (a worker process, or anything writing to
  descriptor 1, would write into that file);
- a closed stdin or stdout becomes a stand-in whose first read or write
  raises `ClosedStreamError` (an OSError, EBADF) naming it: the command
  stops with one line, ``rtf: error: cannot write the standard output: it is
  closed``, and exit status 1, as ``cat >&-`` does. A command that neither
  reads nor writes there (``rtf match --output F``) runs as usual;
- a closed stderr is /dev/null: what rtf would tell there is lost, its exit
  status is not.
"""

from __future__ import annotations

import errno
import io
import os
import sys

_NAMES = ((0, "stdin", "input", "read"), (1, "stdout", "output", "write"), (2, "stderr", "error", "write"))


class ClosedStreamError(OSError):
    """A read or write of a standard stream that was closed when rtf started."""

    def __init__(self, name: str, verb: str):
        super().__init__(errno.EBADF, f"cannot {verb} the standard {name}: it is closed")

    def __str__(self) -> str:
        return self.strerror


class _Closed(io.TextIOBase):
    """Stands for a closed standard stream: any read or write, or taking its binary
    `buffer` to read or write it (so that ``rtf match`` stops before it reads a
    publication), raises `ClosedStreamError` and is remembered (`refused`)."""

    def __init__(self, fd: int, name: str, verb: str):
        super().__init__()
        self._fd, self._what, self._verb = fd, name, verb
        self.refused = False

    @property
    def what(self) -> tuple[str, str]:
        """(name, verb) of `ClosedStreamError`."""
        return self._what, self._verb

    def _refuse(self, *args, **kwargs):
        self.refused = True
        raise ClosedStreamError(self._what, self._verb)

    read = readline = readlines = write = writelines = _refuse

    def __iter__(self):
        return self._refuse()

    @property
    def buffer(self):
        return self._refuse()

    def readable(self) -> bool:
        return self._verb == "read"

    def writable(self) -> bool:
        return self._verb == "write"

    def fileno(self) -> int:  # /dev/null holds the number (see the module's doc)
        return self._fd

    def isatty(self) -> bool:
        return False

    def flush(self) -> None:  # nothing is ever buffered
        pass

    def close(self) -> None:  # the interpreter's exit closes it: nothing to do
        pass


def guard_closed_streams() -> list[_Closed]:
    """Open /dev/null on each closed standard descriptor, and put a `_Closed` in place of
    a closed stdin or stdout (a closed stderr writes to /dev/null); return the stand-ins."""
    stand_ins = []
    for fd, attribute, name, verb in _NAMES:
        if getattr(sys, attribute) is not None and _open(fd):
            continue
        if not _open(fd):
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
        if attribute == "stderr":
            sys.stderr = open(fd, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
        else:
            stand_ins.append(_Closed(fd, name, verb))
            setattr(sys, attribute, stand_ins[-1])
    return stand_ins


def _open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def binary_stdout():
    """Standard output for bytes: its binary file (what was written as text before
    flushed first), or, when it has none (a StringIO), a writer that decodes."""
    sys.stdout.flush()
    buffer = getattr(sys.stdout, "buffer", None)
    return buffer if buffer is not None else _DecodingWriter(sys.stdout)


class _DecodingWriter:
    """A text stream (a StringIO standing for stdout) that takes the lines as bytes."""

    def __init__(self, text):
        self.text = text

    def write(self, data: bytes) -> None:
        self.text.write(data.decode())

    def flush(self) -> None:
        self.text.flush()
