"""Request bodies sent compressed (``Content-Encoding: gzip``), read in bounded pieces.

A client may gzip what it sends (a publication of DBpedia abstracts shrinks
about 3 times): `codings` reads the header, `Gunzip` turns the compressed
bytes back into the body a piece at a time, never more than `PIECE` bytes at
once, so that the size limit of the body (``--max-body``, counted on what
comes out) stops a gzip bomb -- a few kilobytes that inflate to gigabytes --
as soon as it passes the limit, before it fills the memory.

>>> import gzip
>>> g = Gunzip()
>>> b"".join(g.feed(gzip.compress(b"<a> <b> <c> .\\n") + gzip.compress(b"<d> <e> <f> .\\n")))
b'<a> <b> <c> .\\n<d> <e> <f> .\\n'
>>> g.finish()
>>> codings("gzip, identity"), codings("x-gzip"), codings("")
(['gzip'], ['gzip'], [])
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

#: The content codings the server reads, as it says them in ``Accept-Encoding``
#: (RFC 9110, 12.5.3: the answer to a coding it cannot read, with 415).
READ = ("gzip",)
#: Other names of those codings (RFC 9110, 18.6: x-gzip is gzip).
ALIASES = {"x-gzip": "gzip"}

#: The most a piece of decompressed body holds, bytes.
PIECE = 64 << 10


class CodingError(ValueError):
    """A body that is not what its Content-Encoding says (one line)."""


def codings(header: str) -> list[str]:
    """The codings of a Content-Encoding header, in the order they were applied,
    lower case, without ``identity`` (no coding)."""
    names = (ALIASES.get(c, c) for c in (part.strip().lower() for part in header.split(",")))
    return [name for name in names if name and name != "identity"]


class Gunzip:
    """The decompressed bytes of a gzip body fed to it piece by piece: one or more gzip
    members (as ``cat a.gz b.gz`` makes), each checked (CRC, length); anything else, or
    a body that ends inside a member, is a `CodingError`."""

    def __init__(self) -> None:
        self._member = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._started = False  # a member has begun: the body must end at a member's end
        self._waiting = False  # zlib may hold output of input it has taken: ask again

    def feed(self, data: bytes) -> Iterator[bytes]:
        """The decompressed bytes of `data` (the next compressed bytes), in pieces of
        at most `PIECE` bytes, decompressed only as the caller takes them."""
        while data or self._waiting:
            self._started = self._started or bool(data)
            try:
                piece = self._member.decompress(data, PIECE)
            except zlib.error as e:
                raise CodingError(f"the body is not the gzip data its Content-Encoding says ({e})"
                                  ) from None
            data = self._member.unconsumed_tail
            # a full piece: zlib stopped for want of room, not of input
            self._waiting = len(piece) == PIECE
            if self._member.eof:  # the next member, if any, starts in what is left
                data = self._member.unused_data  # (at the end, zlib's tail holds it too)
                self._member = zlib.decompressobj(16 + zlib.MAX_WBITS)
                self._started = self._waiting = False
            if piece:
                yield piece

    def finish(self) -> None:
        """The body has ended: it must end where a member does."""
        if self._started:
            raise CodingError("the gzip body is cut short (it ends inside its compressed data)")
