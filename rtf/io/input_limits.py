"""What one RDF document may cost the reader: the limits `rtf.io.reader` applies.

A publisher's document must not be able to take the reader (or ``rtf
serve``) down, whatever its syntax:

- a line of N-Triples or N-Quads is at most `MAX_LINE_BYTES` (pyoxigraph
  cannot hold a term over 16 MiB; a longer line is one bad line, dropped as
  it is read, never held in memory);
- a term over 16 MiB in Turtle or TriG is the error of its statement
  (`overlong_term`);
- the terms a document expands to are counted (`ExpansionBudget`): Turtle
  prefixes, ``@base``, ``;`` and ``,`` lists and RDF/XML's ``xml:base`` let
  a few bytes stand for long terms, so a small document could otherwise
  make gigabytes of them;
- an RDF/XML DTD is refused before the parser sees it (`RefuseDtd`): the
  expansion of its entities happens inside the parser, where no budget
  reaches (nine nested entities of ten references each make a 1 KB
  document 3 GB).

Every limit ends in a `PublicationError` or a bad line naming the file and,
where it is known, the line (docs/limits.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import NamedTuple

import pyoxigraph as ox

from rtf.errors import PublicationError
from rtf.io.sources import GuardedReader

#: Longest N-Triples or N-Quads line read, in bytes. pyoxigraph holds at most
#: 16 MiB of one term; a longer line is a bad line, skipped without being
#: kept in memory.
MAX_LINE_BYTES = 16_000_000

#: Turtle prefixes, ``@base``, ``;`` and ``,`` lists, and RDF/XML's
#: ``xml:base`` let a few bytes stand for long terms: a document may expand
#: to at most this many times the bytes read, plus `EXPANSION_FLOOR`, of
#: terms (N-Triples and N-Quads cannot expand).
MAX_EXPANSION = 32
EXPANSION_FLOOR = 16 << 20

#: A DTD in RDF/XML: its entities would expand without bound (a 1 KB
#: document can stand for gigabytes). It is refused wherever it appears.
DTD = re.compile(rb"<!\s*(?i:doctype|entity)")


class BadLine(NamedTuple):
    """A malformed line (or statement) met while parsing, in file order."""

    line: int | None
    message: str
    #: called before the bad line ends the file (when invalid lines are not skipped):
    #: the RDF/XML reader's look for a DTD further on (`RefuseDtd.refuse_further`)
    before_refusing: Callable[[], None] | None = None


def overlong_line(line: int) -> BadLine:
    """The bad line `line`, over `MAX_LINE_BYTES`."""
    return BadLine(line, f"the line is over {MAX_LINE_BYTES} bytes, the longest line read")


def overlong_term(error: MemoryError) -> SyntaxError:
    """pyoxigraph's MemoryError for a term over its 16 MiB buffer, as a syntax
    error of the statement that holds it (any other MemoryError is raised again)."""
    if "buffer maximal size" not in str(error):
        raise error
    return SyntaxError("a single term is over 16 MiB, the parser's limit")


class ExpansionBudget:
    """The rows of a document whose terms may expand to `MAX_EXPANSION` times
    the bytes read so far (`read`), plus `EXPANSION_FLOOR`: `row` (one quad)
    and `keys` (many) convert with `convert` and raise `PublicationError` as
    soon as the terms made pass the budget, before the next quad is converted."""

    def __init__(self, source: str, convert: Callable[[ox.Quad], tuple[str, ...]],
                 read: Callable[[], int]):
        self.source = source
        self._convert = convert
        self.read = read
        self.used = 0
        self._limit = 0  # the budget when last computed (it grows with the bytes read)

    def row(self, quad: ox.Quad) -> tuple[str, ...]:
        row = self._convert(quad)
        self.used += len(row[0]) + len(row[1]) + len(row[2])
        if self.used > self._limit:
            self._check()
        return row

    def keys(self, quads: Iterable[ox.Quad]) -> list[tuple[str, ...]]:
        """`row` of each quad (the loop written out: a call less per quad)."""
        rows = []
        convert, used = self._convert, self.used
        for quad in quads:
            row = convert(quad)
            used += len(row[0]) + len(row[1]) + len(row[2])
            if used > self._limit:
                self.used = used
                self._check()
            rows.append(row)
        self.used = used
        return rows

    def _check(self) -> None:
        self._limit = MAX_EXPANSION * self.read() + EXPANSION_FLOOR
        if self.used > self._limit:
            raise PublicationError(
                f"the document expands to over {self.used} bytes of terms from {self.read()} "
                "bytes read (prefixes, @base, ';' and ',' lists or xml:base repeat text); rtf "
                f"reads at most {MAX_EXPANSION} times the bytes read, plus 16 MiB: split the "
                "document", self.source)


class RefuseDtd:
    """An RDF/XML file as pyoxigraph reads it, refusing a DTD (``<!DOCTYPE``,
    ``<!ENTITY``) before the parser sees it: its entities could make a
    document of a kilobyte expand to gigabytes inside the parser, where no
    budget can stop it. Refused wherever it is (pyoxigraph reads one even
    after the root element), even in a comment."""

    def __init__(self, f: GuardedReader, source: str):
        self._f = f
        self._source = source
        self._tail = b""  # the end of the previous read: a DTD cut across two reads

    def read(self, size: int = -1) -> bytes:
        data = self._f.read(size)
        window = self._tail + data
        found = DTD.search(window)
        if found:
            line = self._f.lines_read - window.count(b"\n", found.start()) + 1
            raise PublicationError("RDF/XML with a DTD (<!DOCTYPE or <!ENTITY) is refused: its "
                                   "entities could expand without bound; write the entities out",
                                   self._source, line)
        self._tail = window[-64:]
        return data

    def refuse_further(self) -> None:
        """Read the rest of the file for a DTD, raising its refusal if there is one: the
        parse failed for good (an entity the parser did not know, say, which a DTD
        after the root element may declare), and the DTD is the reason to give."""
        while self.read(1 << 16):
            pass
