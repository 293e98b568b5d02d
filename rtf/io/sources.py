"""Where RDF bytes come from: files (plain, gzip, bzip2), stdin and growing files, and their syntax.

`detect_format` tells the RDF syntax from a file name (or ``--format``);
`open_binary` opens a file or stdin, decompressing by suffix or, when the
name says nothing, by magic bytes; `GuardedReader` turns a read that breaks
off (a truncated archive, a failing disk) into a clean end with what was
read before; `LiveStream` reads stdin or a growing file (``--follow``) as
bytes arrive, and `FollowedFile` follows a file by name like ``tail -F``.
`rtf.io.reader` parses what these give into publications.
"""

from __future__ import annotations

import bz2
import gzip
import os
import stat
import sys
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, NamedTuple

import pyoxigraph as ox

from rtf.errors import PublicationError

_FORMATS = {
    "nt": ox.RdfFormat.N_TRIPLES, "ntriples": ox.RdfFormat.N_TRIPLES,
    "n-triples": ox.RdfFormat.N_TRIPLES,
    "nq": ox.RdfFormat.N_QUADS, "nquads": ox.RdfFormat.N_QUADS,
    "n-quads": ox.RdfFormat.N_QUADS,
    "ttl": ox.RdfFormat.TURTLE, "turtle": ox.RdfFormat.TURTLE,
    "trig": ox.RdfFormat.TRIG,
    "owl": ox.RdfFormat.RDF_XML, "rdf": ox.RdfFormat.RDF_XML, "xml": ox.RdfFormat.RDF_XML,
    "rdfxml": ox.RdfFormat.RDF_XML, "rdf/xml": ox.RdfFormat.RDF_XML,
}
_OPENERS: dict[str, Callable[..., IO[bytes]]] = {"gz": gzip.open, "bz2": bz2.open}
_LINE_FORMATS = (ox.RdfFormat.N_TRIPLES, ox.RdfFormat.N_QUADS)

STDIN = "-"

#: Size of the blocks read from line-based files: large enough that the cost
#: of a parser call vanishes (16 KiB to 16 MiB all read the sample at the same
#: speed), small enough to keep memory flat whatever the file size.
CHUNK_BYTES = 1 << 20


class Break(NamedTuple):
    """Where a file stopped being readable: the rest of it is lost.

    `line` is the first line not read whole (1-based), `bytes_read` the
    uncompressed bytes read before the break, `reason` what broke.
    """

    source: str
    line: int
    bytes_read: int
    reason: str

    def error(self) -> PublicationError:
        """The break as an error naming the file and line, for a user."""
        return PublicationError(
            f"the file breaks off here, after {self.bytes_read} bytes ({self.line - 1} whole "
            f"lines): {self.reason}; the rest of the file cannot be read", self.source, self.line)

    def as_dict(self) -> dict:
        return self._asdict()


def _suffixes(name: str) -> tuple[str, str | None]:
    """("nt", "gz") for "x.nt.gz" or "nt.gz"; ("turtle", None) for "turtle"."""
    parts = name.lower().split(".")
    compression = parts.pop() if len(parts) > 1 and parts[-1] in _OPENERS else None
    return parts[-1], compression


def detect_format(path: str | os.PathLike, format: str | ox.RdfFormat | None = None
                  ) -> tuple[ox.RdfFormat, str | None]:
    """The RDF syntax and the compression (``"gz"``, ``"bz2"`` or None) of `path`.

    Both come from the file name's suffixes (``x.nt.gz``). `format` overrides
    the syntax: a name (``"nt"``, ``"turtle"``, ``"nq"``, ``"trig"``, ``"owl"``,
    ...) or a pyoxigraph `RdfFormat`; a name may carry a compression suffix too
    (``"nt.gz"``), which is how stdin (``-``, N-Triples by default) is told
    that it is compressed. A pipe whose name says no syntax (a process
    substitution ``<(zcat x.nt.gz)`` is ``/dev/fd/63``) is N-Triples by
    default, as stdin is; `open_binary` tells a compressed one by its first bytes.
    """
    name = str(path)
    syntax, compression = _suffixes(Path(name).name) if name != STDIN else ("nt", None)
    if syntax not in _FORMATS and compression is None and _is_pipe(name):
        syntax = "nt"
    if isinstance(format, ox.RdfFormat):
        return format, compression
    if format is not None:
        syntax, override = _suffixes(format)
        compression = override or compression
    try:
        return _FORMATS[syntax], compression
    except KeyError:
        raise UnknownFormatError(syntax, name) from None


def _is_pipe(name: str) -> bool:
    """Whether `name` is a FIFO or a character device (a pipe, a terminal), not a file."""
    try:
        mode = os.stat(name).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)


class UnknownFormatError(PublicationError):
    """A file whose name (or `format`) names no RDF syntax we read."""

    def __init__(self, syntax: str, source: str, option: str = "format='nt' (or nq, ttl, trig, owl)"):
        self.syntax = syntax
        super().__init__(f"cannot tell the RDF format from {syntax!r}; name the file .nt, .nq, "
                         f".ttl, .trig or .owl (optionally .gz/.bz2), or pass {option}", source=source)


#: What a decompressor or a disk raises when a file cannot be read further:
#: a truncated archive (EOFError), a corrupt one (zlib.error, gzip's
#: BadGzipFile and bz2's "Invalid data stream" are OSErrors), a failing disk.
READ_ERRORS = (EOFError, OSError, zlib.error)

_BOM = b"\xef\xbb\xbf"


class GuardedReader:
    """A binary reader that ends, instead of raising, where its file breaks.

    A truncated or corrupt ``.gz``/``.bz2`` raises in the middle of a read,
    and a large read then loses everything it had already decompressed. This
    reader reads in small steps (``read1``), keeps what came before the
    break, records the error in `broken` and then reports an end of file; the
    caller decides what a break means. It also drops a UTF-8 byte order mark
    at the start of the file, which RDF parsers would take for part of the
    first term. `bytes_read` and `lines_read` (newlines) count what it gave.
    """

    def __init__(self, f: IO[bytes], eager: bool = False):
        self._read1 = getattr(f, "read1", f.read)
        self.broken: BaseException | None = None
        self.bytes_read = 0
        self.lines_read = 0
        self._at_start = True
        self._eager = eager

    def read(self, size: int = -1) -> bytes:
        """Up to `size` bytes (all if negative); fewer only at the end or a break.

        An `eager` reader (a live stream: stdin, a followed file) returns as
        soon as some bytes came, instead of waiting for `size` of them.
        """
        parts: list[bytes] = []
        got = 0
        while (size < 0 or got < size) and self.broken is None:
            try:
                part = self._read1(size - got if size >= 0 else CHUNK_BYTES)
            except READ_ERRORS as error:
                self.broken = error
                break
            if not part:
                break
            parts.append(part)
            got += len(part)
            if self._eager and size >= 0:
                break
        data = b"".join(parts)
        if self._at_start and data:
            self._at_start = False
            if data.startswith(_BOM):
                data = data[len(_BOM):] or self.read(size)
        self.bytes_read += len(data)
        self.lines_read += data.count(b"\n")
        return data

    def end(self, source: str) -> Iterator[Break]:
        """A `Break` if the file broke off (to chain after its last batch)."""
        if self.broken is not None:
            reason = str(self.broken) or type(self.broken).__name__
            yield Break(source, self.lines_read + 1, self.bytes_read, reason)


#: How a compressed stream starts (gzip, bzip2): stdin has no name to tell it.
_MAGIC = {b"\x1f\x8b": "gz", b"BZh": "bz2"}


class LiveStream:
    """A binary stream read as data comes: stdin, or a file that grows (``tail -F``).

    `read(n)` returns whatever is available (at most `n` bytes) rather than
    waiting for `n` of them, so that gzip, bz2 and the block reader never
    sit on a complete publication. `peek_compression` tells gzip or bzip2
    from the first bytes (kept for the first reads). With `poll` (seconds),
    the end of the file is not the end: the stream waits for more, as
    ``tail -f`` does, until `idle_timeout` seconds pass without new bytes
    (None: forever, until interrupted).
    """

    def __init__(self, raw: IO[bytes], poll: float | None = None,
                 idle_timeout: float | None = None):
        self._raw = raw
        self._read1 = getattr(raw, "read1", raw.read)
        self._head = b""
        self._poll = poll
        self._idle_timeout = idle_timeout

    def peek_compression(self) -> str | None:
        """``"gz"``, ``"bz2"`` or None, from the stream's magic bytes."""
        while len(self._head) < 3:
            part = self._next(3 - len(self._head))
            if not part:
                break
            self._head += part
        return compression_of(self._head)

    def _next(self, size: int) -> bytes:
        part = self._read1(size)
        if part or self._poll is None:
            return part
        waited = 0.0
        while not part:
            if self._idle_timeout is not None and waited >= self._idle_timeout:
                return b""
            time.sleep(self._poll)
            waited += self._poll
            part = self._read1(size)
        return part

    def read(self, size: int = -1) -> bytes:
        """What is available now, at most `size` bytes (all, to the end, if negative)."""
        if size < 0:
            head, self._head = self._head, b""
            return head + b"".join(iter(lambda: self._next(CHUNK_BYTES), b""))
        if self._head:
            head, self._head = self._head[:size], self._head[size:]
            return head
        return self._next(size)

    read1 = read

    def close(self) -> None:
        self._raw.close()


class FollowedFile:
    """A file followed by name, like ``tail -F``: the raw input of a `LiveStream`.

    `read1` gives what the file holds beyond what was read, or ``b""`` when
    there is nothing new (yet): the file does not exist yet, or has been
    moved away and not recreated. A file that is replaced (rotated: renamed
    away, a new one created under the name) is read to its end, then the new
    one from its start. A file truncated in place (``logrotate
    copytruncate``) is read again from its start: it is noticed when it is
    shorter than what was read, or when its first bytes or those just before
    the read position are no longer those read. With `separate_lines`, a line the old
    content left unfinished is ended there (a newline is given), so that it
    cannot glue itself to the first line of the new content.
    """

    #: Bytes kept from the start and the end of what was read, to notice a rewritten file.
    TAIL = 64

    def __init__(self, path: str | os.PathLike, separate_lines: bool = True):
        self.path = os.fspath(path)
        self.separate_lines = separate_lines
        self._f: IO[bytes] | None = None
        self._id: tuple[int, int] | None = None  # (device, inode) of the open file
        self._pos = 0
        self._head = b""  # the first bytes read from the open file
        self._tail = b""  # the last bytes read from the open file

    def read1(self, size: int = CHUNK_BYTES) -> bytes:
        if self._f is None and not self._open():
            return b""
        if self._pos and self._rewritten():
            return self._restart()  # truncated, then written again up to where we were
        data = self._f.read(size)
        if data:
            return self._give(data)
        try:
            now = os.stat(self.path)
        except FileNotFoundError:  # moved away, not recreated yet: keep what we have open
            return b""
        if (now.st_dev, now.st_ino) != self._id:  # replaced: the old file is done...
            rest = self._f.read(size)
            if rest:  # ...once what its writer added before the switch is read
                return self._give(rest)
            self._f.close()
            self._f = None
            return self._boundary() or self.read1(size)
        if now.st_size < self._pos:  # truncated in place
            return self._restart()
        return b""

    def _open(self) -> bool:
        try:
            self._f = open(self.path, "rb", buffering=0)
        except FileNotFoundError:
            return False
        st = os.fstat(self._f.fileno())
        self._id, self._pos, self._head, self._tail = (st.st_dev, st.st_ino), 0, b"", b""
        return True

    def _give(self, data: bytes) -> bytes:
        if len(self._head) < self.TAIL:
            self._head = (self._head + data)[:self.TAIL]
        self._pos += len(data)
        self._tail = (self._tail + data)[-self.TAIL:]
        return data

    def _rewritten(self) -> bool:
        """Whether the first or the last bytes read are no longer in the file."""
        fd = self._f.fileno()
        return (os.pread(fd, len(self._head), 0) != self._head
                or os.pread(fd, len(self._tail), self._pos - len(self._tail)) != self._tail)

    def _restart(self) -> bytes:
        """Read the open file again from its start (after the boundary)."""
        boundary = self._boundary()
        self._f.seek(0)
        self._pos, self._head, self._tail = 0, b"", b""
        return boundary

    def _boundary(self) -> bytes:
        """A newline if the content left behind ended in the middle of a line."""
        if self.separate_lines and self._tail and not self._tail.endswith(b"\n"):
            self._tail = b"\n"
            return b"\n"
        return b""

    def close(self) -> None:
        if self._f is not None:
            self._f.close()

    read = read1


def compression_of(head: bytes) -> str | None:
    """``"gz"``, ``"bz2"`` or None, from the first bytes of a file."""
    return next((c for magic, c in _MAGIC.items() if head.startswith(magic)), None)


@contextmanager
def open_binary(path: str | os.PathLike | IO[bytes], compression: str | None,
                follow: bool = False, idle_timeout: float | None = None) -> Iterator[IO[bytes]]:
    """A binary reader of `path` (``-``: stdin; or an open binary stream: both left open), decompressed.

    `compression` comes from the file name; when the name says none, the
    first bytes tell gzip or bzip2 (a ``.nt`` file that is gzipped is read
    as gzip). Stdin and open streams are `LiveStream`s. With `follow`, the
    file is followed by name as it grows, like ``tail -F`` (see
    `FollowedFile`): it need not exist yet. A file that cannot be opened
    raises `OSError`.
    """
    if hasattr(path, "read") or str(path) == STDIN:
        raw, close = LiveStream(path if hasattr(path, "read") else sys.stdin.buffer), None
        compression = compression or raw.peek_compression()
    elif follow and not _is_pipe(str(path)):
        followed = FollowedFile(path)
        raw = LiveStream(followed, poll=FOLLOW_POLL_S, idle_timeout=idle_timeout)
        close = followed.close
        compression = compression or raw.peek_compression()
        followed.separate_lines = compression is None  # a newline inside gzip would break it
    elif follow:  # a pipe has no name to follow: read as its data comes, to its end, as stdin
        raw = LiveStream(open(path, "rb"))
        close = raw.close
        compression = compression or raw.peek_compression()
    else:
        raw = open(path, "rb")
        close = raw.close
        compression = compression or compression_of(raw.peek(3)[:3])
    try:
        # gzip/bz2 never close a file object they were given: `raw` is ours.
        yield _OPENERS[compression](raw) if compression else raw
    finally:
        if close is not None:
            close()


#: How often a followed file is checked for new bytes.
FOLLOW_POLL_S = 0.1
