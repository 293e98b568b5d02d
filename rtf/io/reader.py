"""Reading streams of publications from RDF files.

A DBpedia dump is a long N-Triples file sorted by subject: every resource's
triples are one contiguous run, and that run is one publication. This module
turns such files, lazily and in constant memory, into `Publication`s:

- `read_publications` opens one or more files (plain, ``.gz`` or ``.bz2``,
  or ``-`` for stdin), parses them with pyoxigraph and cuts the triple stream
  into publications, either at every change of subject (``group_by="subject"``)
  or of named graph (``group_by="graph"``, for N-Quads and TriG).
- `parse_ntriples_lines` parses a batch of N-Triples lines into key triples,
  which is what a Spark executor does with its partition of a text file.

Speed. pyoxigraph parses N-Triples many times faster than rdflib (numbers
in ``docs/parsing.md``), but only when it is given a large block of text at
once: a parser per line costs more than the parsing itself. So line-based
formats (N-Triples, N-Quads) are read in blocks of whole lines of about 1 MiB,
each parsed in one call, and the terms become keys as they are parsed. Only a
block that holds a malformed line is split into lines (`_parse_lines`), and
even then it is parsed in windows of many lines, cut where the parser blames
a line, so that a bad line is always judged alone. That keeps a file with bad
lines fast, gives exact line numbers, and does not depend on pyoxigraph's own
recovery, which after an unterminated string does not resynchronise at the
next line (its later triples and errors cannot be trusted).

Turtle statements span lines. A Turtle file is read whole (not streamed)
and parsed in one call; only if that fails is it cut into statements by its
tokens (`_turtle_statements`) and each statement parsed alone after the
directives before it, because pyoxigraph's own recovery may drop the next
statement, or everything after an unterminated string. `skipped_lines` then
counts the lines where a rejected statement starts. TriG and RDF/XML are
streamed through pyoxigraph, which skips to the end of a bad statement; there
`skipped_lines` counts its errors (sometimes two for one statement).

A file that breaks off (a truncated or corrupt ``.gz``/``.bz2``, a failing
disk) gives everything read before the break (`GuardedReader`), then a
`Break`: an error, or with ``skip_invalid=True`` an entry of
`ReadStats.breaks`. A UTF-8 byte order mark at the start of a file is dropped.

What one document may cost is bounded (`rtf.io.input_limits`): a line over
`MAX_LINE_BYTES` is a bad line, the terms of Turtle, TriG and RDF/XML are
counted against an expansion budget, and an RDF/XML DTD is refused before
the parser sees it.

Grouping notes:

- A subject that comes back after another one starts a new publication, as the
  spec's publication stream would have it; publications never span files.
- In Turtle, a nested blank node (``[ ... ]``, a list) is a subject of its own,
  so under ``group_by="subject"`` its triples form their own publications;
  group Turtle with nested structure by graph (TriG) instead.
- Under ``group_by="graph"`` a triple in the default graph has no graph IRI to
  name a publication, so default-graph triples are grouped by subject, exactly
  as with ``group_by="subject"``. An N-Triples file read by graph thus still
  streams resource by resource instead of becoming one huge publication, and
  a TriG file mixing graphs and plain triples reads as expected.

Relative IRIs are not resolved against the file's location (no base IRI):
the same file gives the same terms wherever it lives, and a relative IRI
without ``@base`` is an error.
"""

from __future__ import annotations

import io
import logging
import os
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from itertools import chain, groupby
from operator import itemgetter
from typing import IO, NamedTuple

import pyoxigraph as ox

from rtf.errors import PublicationError
from rtf.io import input_limits
from rtf.io.input_limits import (
    BadLine,
    ExpansionBudget,
    RefuseDtd,
    overlong_line,
    overlong_term,
)
from rtf.io.sources import (_LINE_FORMATS, _OPENERS, CHUNK_BYTES, STDIN, Break, GuardedReader, detect_format,
                            open_binary)
from rtf.io.idle import grouped_when_idle
from rtf.io.memory import MemorySource, in_memory
from rtf.io.publication import Publication, Triple
from rtf.query.terms import display_iri

__all__ = ["ReadStats", "read_publications", "publications_from_bytes", "parse_ntriples_lines"]

log = logging.getLogger(__name__)

#: Quads converted to keys at a time from a streamed (not line-based) file.
_STREAM_BATCH = 4096

#: How many skipped-line errors `ReadStats.errors` keeps, to show to a user.
MAX_KEPT_ERRORS = 20

@dataclass
class ReadStats:
    """What `read_publications` has read so far (it updates the object live).

    `triples` counts parsed triples; a publication keeps each triple once, so
    the publications' lengths add up to at most this. `bytes_read` counts
    uncompressed bytes: block by block for N-Triples/N-Quads, file by file for
    the other formats. `errors` keeps the first skipped errors, for a report.
    `breaks` lists the files that could not be read to their end (a truncated
    or corrupt archive, a failing disk), under ``skip_invalid=True``.
    """

    files: int = 0
    triples: int = 0
    publications: int = 0
    skipped_lines: int = 0
    bytes_read: int = 0
    errors: list[PublicationError] = field(default_factory=list)
    breaks: list[Break] = field(default_factory=list)


# ------------------------------------------------------------------- parsing

# Key functions (`KeyFunction`) turn parsed quads into rows of keys.
# Converting while parsing keeps no pyoxigraph objects alive (a little
# faster) and lets a failed parse of a window of lines drop its rows whole.


KeyFunction = Callable[[Iterable[ox.Quad]], list[tuple[str, ...]]]


def _triple_keys(quads: Iterable[ox.Quad]) -> list[Triple]:
    """(s, p, o) key rows; the graph is dropped."""
    return [(str(q.subject), str(q.predicate), str(q.object)) for q in quads]


def _quad_keys(quads: Iterable[ox.Quad]) -> list[tuple[str, str, str, str]]:
    """(s, p, o, g) key rows; g is ``DEFAULT`` (not a key) for the default graph."""
    return [(str(q.subject), str(q.predicate), str(q.object), str(q.graph_name))
            for q in quads]


# The same, one quad at a time, for the formats whose terms are budgeted (the
# batch functions above are written out: a call per quad would cost N-Triples 3 %).
def _triple_key(q: ox.Quad) -> Triple:
    return (str(q.subject), str(q.predicate), str(q.object))


def _quad_key(q: ox.Quad) -> tuple[str, str, str, str]:
    return (str(q.subject), str(q.predicate), str(q.object), str(q.graph_name))


_ONE_KEY = {_triple_keys: _triple_key, _quad_keys: _quad_key}


_DEFAULT_GRAPH = str(ox.DefaultGraph())


def _describe(error: SyntaxError) -> str:
    """pyoxigraph's message without its own position (ours is more exact)."""
    text = error.msg.split(": ", 1)[-1]
    return f"{text} (column {error.offset})" if error.offset else text


def _try_parse(data: bytes | str, fmt: ox.RdfFormat, keys: KeyFunction
               ) -> tuple[list[tuple[str, ...]], SyntaxError | None]:
    """The rows of `data`, or its first error (the rows before it are dropped)."""
    try:
        return keys(ox.parse(data, fmt)), None
    except SyntaxError as error:
        return [], error
    except MemoryError as error:
        return [], overlong_term(error)


def _parse_lines(data: bytes | str, fmt: ox.RdfFormat, keys: KeyFunction, first_line: int = 1
                 ) -> Iterator[list[tuple[str, ...]] | BadLine]:
    """Parse line-based `data`; yield lists of `keys` rows and `BadLine`s, in order.

    The whole block is parsed at once. Only if that fails is it split into
    lines and walked through in windows of lines, each parsed in one call:

    - a window that parses is good; the next one is twice as large;
    - a window that fails is cut just before the line the parser blames, and
      the lines before it are tried again;
    - when the blamed line is the first of its window, it is parsed alone: a
      line is bad only when it fails alone, with its own error. The parser
      may blame the line after the bad one (a missing final dot shows at the
      next line); such a line parses alone and is simply good.

    Every step moves on or shrinks the window, so this ends. Windows follow
    the gaps between bad lines, so a batch with many bad lines costs about
    twice a clean one, not a parse of the whole remaining batch per bad line.
    """
    rows, error = _try_parse(data, fmt, keys)
    if error is None:
        yield rows
        return
    newline = b"\n" if isinstance(data, bytes) else "\n"
    lines = data.split(newline)
    pos, window = 0, len(lines)  # the window [pos, pos + window) failed with `error`
    while pos < len(lines):
        end = min(pos + window, len(lines))
        if error is None:
            rows, error = _try_parse(newline.join(lines[pos:end]), fmt, keys)
            if error is None:
                if rows:
                    yield rows
                pos, window = end, 2 * window
                continue
        blamed = pos + min(max(error.lineno or 1, 1), end - pos) - 1
        if blamed > pos:  # the lines before the blamed one may all be good
            window, error = blamed - pos, None
            continue
        if end - pos > 1:  # judge the blamed first line alone
            rows, error = _try_parse(lines[pos], fmt, keys)
        if error is not None:
            yield BadLine(first_line + pos, _describe(error))
        elif rows:
            yield rows
        pos, window, error = pos + 1, max(1, window // 2), None


def _line_batches(f: GuardedReader, fmt: ox.RdfFormat, keys: KeyFunction, stats: ReadStats
                  ) -> Iterator[list[tuple[str, ...]] | BadLine]:
    """Parse a line-based file in blocks of whole lines of about CHUNK_BYTES.

    Where the file breaks off, the unfinished line is not parsed: it is lost,
    with the rest of the file (`GuardedReader.end` reports it). A line over
    `MAX_LINE_BYTES` is a bad line, dropped as it is read.
    """
    line = 1  # number of the first line of the next block
    carry = b""  # the unfinished last line of the previous read
    overlong = False  # the unfinished line is over the limit (carry is dropped)
    # A line inside one block is never over the limit: only the first and
    # last lines of a block, which span blocks, need measuring.
    size = min(CHUNK_BYTES, input_limits.MAX_LINE_BYTES)
    while True:
        block = f.read(size)
        stats.bytes_read += len(block)
        if not block:
            if f.broken is None:  # a last line without its newline
                if overlong:
                    yield overlong_line(line)
                elif carry:
                    yield from _parse_lines(carry, fmt, keys, line)
            return
        first_end = block.find(b"\n") + 1
        if not first_end:  # a line longer than a block: keep reading it
            if not overlong:
                carry += block
                overlong = len(carry) > input_limits.MAX_LINE_BYTES
                carry = b"" if overlong else carry
            continue
        if overlong or len(carry) + first_end > input_limits.MAX_LINE_BYTES:
            yield overlong_line(line)
            line += 1
            carry, block, overlong = b"", block[first_end:], False
        cut = block.rfind(b"\n") + 1
        data, carry = carry + block[:cut], block[cut:]
        overlong = len(carry) > input_limits.MAX_LINE_BYTES
        carry = b"" if overlong else carry
        if data:
            yield from _parse_lines(data, fmt, keys, line)
            line += data.count(b"\n")


def _stream_batches(f: GuardedReader, fmt: ox.RdfFormat, keys: KeyFunction, stats: ReadStats,
                    source: str = "<stream>") -> Iterator[list[tuple[str, ...]] | BadLine]:
    """Stream a file through pyoxigraph, which resumes after each error.

    Once the file has broken off, the parser's errors are those of the cut
    statement: they are not reported, the break is (`GuardedReader.end`). A
    term over pyoxigraph's 16 MiB buffer ends the file there as a break: the
    parser cannot go on after it. An RDF/XML DTD is refused (`RefuseDtd`);
    the terms made are counted against the document's `ExpansionBudget`.
    """
    row = ExpansionBudget(source, _ONE_KEY[keys], lambda: f.bytes_read).row
    guard = RefuseDtd(f, source) if fmt == ox.RdfFormat.RDF_XML else None
    quads = ox.parse(guard or f, fmt)
    while True:
        batch: list[tuple[str, ...]] = []
        bad = None
        try:
            for quad in quads:
                batch.append(row(quad))
                if len(batch) == _STREAM_BATCH:
                    break
        except SyntaxError as error:
            if f.broken is None:
                bad = BadLine(error.lineno, _describe(error), guard and guard.refuse_further)
        except MemoryError as error:
            f.broken = overlong_term(error)
        if batch:
            yield batch
        if bad:
            yield bad
        elif len(batch) < _STREAM_BATCH and f.broken is None or not batch:
            break  # the parser is exhausted
    stats.bytes_read += f.bytes_read


# ------------------------------------------------------------------- Turtle

#: Turtle's tokens, as far as finding where statements end needs: strings
#: (long ones first; a short one stops at its line's end when unterminated),
#: IRIs, comments, a dot before a space (a statement's end: a dot inside a
#: number or a name is followed by more of it), and runs of anything else.
_TURTLE_TOKEN = re.compile(rb"""
    \"\"\"(?:[^"\\]|\\.|"(?!""))*(?:\"\"\")?
  | '\'\'(?:[^'\\]|\\.|'(?!''))*(?:\'\'\')?
  | "(?:[^"\\\n]|\\.)*"?
  | '(?:[^'\\\n]|\\.)*'?
  | <[^<>"\s]*>
  | \#[^\n]*
  | \.(?=\s|\#|$)
  | [^\s"'<\#.]+
  | \S
""", re.VERBOSE | re.DOTALL)


class _Statement(NamedTuple):
    line: int
    text: bytes
    directive: bool


def _turtle_statements(data: bytes) -> Iterator[_Statement]:
    """Cut Turtle text into statements (and directives) by its tokens.

    A statement ends at a dot followed by a space, a SPARQL-style ``PREFIX``
    or ``BASE`` after its IRI, and an unterminated short string at the end of
    its line, so that a broken statement takes no good one with it.
    """
    start = None
    first = b""
    line = 1
    pos = 0
    for token in _TURTLE_TOKEN.finditer(data):
        text = token.group()
        if text.startswith(b"#"):
            continue
        if start is None:
            start, first = token.start(), text.lower()
            line += data.count(b"\n", pos, start)
            pos = start
        quote = text[:1]
        ends = (text == b"." and token.group() == b"."
                or first in (b"prefix", b"base") and text.startswith(b"<")
                or quote in (b'"', b"'") and text[:3] != quote * 3
                and (len(text) == 1 or not text.endswith(quote) or text.endswith(b"\\" + quote)))
        if ends:
            yield _Statement(line, data[start:token.end()], first in (b"@prefix", b"@base", b"prefix", b"base"))
            start = None
    if start is not None:
        yield _Statement(line, data[start:], False)


def _turtle_batches(f: GuardedReader, fmt: ox.RdfFormat, keys: KeyFunction, stats: ReadStats,
                    source: str = "<stream>") -> Iterator[list[tuple[str, ...]] | BadLine]:
    """Parse a Turtle file, read whole, in one call; only if that fails, by statement.

    pyoxigraph's own recovery after an error may drop the next statement or
    everything after an unterminated string; parsed alone, with the
    directives before it, a statement is bad only for its own fault. The
    terms made are counted against the document's `ExpansionBudget`.
    """
    data = f.read()
    stats.bytes_read += len(data)
    budget = ExpansionBudget(source, _ONE_KEY[keys], data.__len__)
    rows, error = _try_parse(data, fmt, budget.keys)
    if error is None:
        yield rows
        return
    budget.used = 0  # the rows of the failed parse were dropped
    header = b""  # the directives so far, on one line: the first of each parse
    last_bad = None
    for statement in _turtle_statements(data):
        rows, error = _parse_recovering(header + b"\n" + statement.text, fmt, budget.row)
        if rows:
            yield rows
        if error is not None:
            bad = BadLine(statement.line + max((error.lineno or 2) - 2, 0), _describe(error))
            if bad.line != last_bad:  # one line, one loss, however many pieces it broke into
                yield bad
            last_bad = bad.line
        elif statement.directive:
            header += b" " + b" ".join(statement.text.split())


def _parse_recovering(data: bytes, fmt: ox.RdfFormat, row: Callable[[ox.Quad], tuple[str, ...]],
                      max_errors: int = 100) -> tuple[list[tuple[str, ...]], SyntaxError | None]:
    """All the rows (`row` of each quad) pyoxigraph makes of `data` going on
    after errors, and its first error.

    Used on one statement at a time, where its recovery cannot reach into the
    next statement: a statement missing its final dot still gives its triples.
    """
    quads = ox.parse(data, fmt)
    got: list[tuple[str, ...]] = []
    first = None
    for _ in range(max_errors):
        try:
            got.extend(map(row, quads))
            break
        except SyntaxError as error:
            first = first or error
        except MemoryError as error:  # the parser cannot go on after it
            first = first or overlong_term(error)
            break
    return got, first


# ------------------------------------------------------------------ grouping


def _rows(batches: Iterable[list[tuple[str, ...]] | BadLine | Break],
          on_bad: Callable[[BadLine | Break], None], stats: ReadStats
          ) -> Iterator[tuple[str, ...]]:
    """The key rows of `batches`, one by one; bad lines and breaks go to `on_bad`."""
    for batch in batches:
        if isinstance(batch, (BadLine, Break)):
            on_bad(batch)
        else:
            stats.triples += len(batch)
            yield from batch


def _graph_key(row: tuple[str, str, str, str]) -> str | tuple[str, str]:
    # A default-graph triple has no graph to name its publication: it is
    # grouped by subject. The tuple cannot equal a graph's key, even when the
    # subject is that graph's IRI.
    return row[3] if row[3] != _DEFAULT_GRAPH else ("", row[0])


def _group(rows: Iterator[tuple[str, ...]], by_graph: bool, stats: ReadStats
           ) -> Iterator[Publication]:
    """Cut a row stream into publications at each change of subject or graph."""
    for key, run in groupby(rows, _graph_key if by_graph else itemgetter(0)):
        # pyoxigraph made the keys: canonical already, not checked again
        publication = Publication.from_canonical(display_iri(key if isinstance(key, str) else key[1]),
                                                 (row[:3] for row in run) if by_graph else run)
        stats.publications += 1
        yield publication


#: What `read_publications` reads: a path, or RDF held in memory (`rtf.io.memory`).
Source = str | os.PathLike | bytes | IO[bytes] | IO[str]


def read_publications(paths: Source | Iterable[Source],
                      group_by: str = "subject", skip_invalid: bool = False,
                      stats: ReadStats | None = None,
                      format: str | ox.RdfFormat | None = None, follow: bool = False,
                      idle_timeout: float | None = None, flush_after: float | None = None) -> Iterator[Publication]:
    """Publications of the RDF files `paths` (one path or several), in order.

    Each of `paths` is a file path or RDF held in memory: bytes, a string of
    RDF, or an open binary or text stream (read as stdin is; a ``str`` is a
    path unless it is plainly RDF text, see `rtf.io.memory`). Files are read
    lazily, a block at a time. ``group_by="subject"`` makes a
    publication of each run of triples with the same subject (its id is the
    subject without angle brackets), ``group_by="graph"`` of each run of
    quads in the same named graph (id: the graph IRI). A malformed line raises
    `PublicationError` with the file and line, after the publications before
    it; with ``skip_invalid=True`` it is skipped and counted in `stats`.
    `format` overrides the format told by the file suffix (see
    `detect_format`). Arguments are checked now, files are opened when the
    iteration reaches them.

    Live input: stdin (``-``) is read as bytes arrive, so each publication
    comes out as soon as it is complete (when the next subject starts, or the
    input ends); gzip or bzip2 is recognised by its first bytes when the name
    does not say (stdin, ``dump.nt``). With ``follow=True`` each file is
    followed by name as it grows, like ``tail -F`` (it may not exist yet, and
    may be rotated or truncated: `rtf.io.sources.FollowedFile`), until
    `idle_timeout` seconds pass without new bytes (None: forever); `flush_after`: `rtf.io.idle`.
    A file that cannot be opened is a `PublicationError` ("cannot read publications file F: ...").
    """
    if group_by not in ("subject", "graph"):
        raise ValueError(f"group_by must be 'subject' or 'graph', not {group_by!r}")
    if isinstance(paths, (str, os.PathLike, bytes, bytearray, memoryview)) or hasattr(paths, "read"):
        paths = [paths]
    sources = []
    for p in paths:
        memory = in_memory(p)
        sources.append((memory or str(p), *detect_format(STDIN if memory else p, format)))
    return _read(sources, group_by == "graph", skip_invalid,
                 stats if stats is not None else ReadStats(), follow, idle_timeout, flush_after)


def _read(sources: list[tuple[str | MemorySource, ox.RdfFormat, str | None]], by_graph: bool,
          skip_invalid: bool, stats: ReadStats, follow: bool = False,
          idle_timeout: float | None = None, flush_after: float | None = None) -> Iterator[Publication]:
    for source, fmt, compression in sources:
        if isinstance(source, MemorySource):
            source, label = source
        else:
            label = "<stdin>" if source == STDIN else source
        with ExitStack() as opened:
            try:
                raw = opened.enter_context(open_binary(source, compression, follow, idle_timeout))
            except OSError as e:
                raise PublicationError(f"cannot read publications file {source}: "
                                       f"{e.strerror or e}") from None
            yield from _read_file(raw, label, fmt, by_graph, skip_invalid, stats, follow or source == STDIN,
                                  flush_after if follow or source == STDIN else None)


def _read_file(raw: IO[bytes], label: str, fmt: ox.RdfFormat, by_graph: bool, skip_invalid: bool,
               stats: ReadStats, eager: bool = False, flush_after: float | None = None) -> Iterator[Publication]:
    """The publications of one open binary file `raw`, named `label` in errors."""
    keys = _quad_keys if by_graph else _triple_keys

    def on_bad(bad: BadLine | Break) -> None:
        if isinstance(bad, Break):
            if not skip_invalid:
                raise bad.error()
            stats.breaks.append(bad)
            return
        error = PublicationError(bad.message, source=label, line=bad.line)
        if not skip_invalid:
            if bad.before_refusing is not None:
                bad.before_refusing()
            raise error
        stats.skipped_lines += 1
        if len(stats.errors) < MAX_KEPT_ERRORS:
            stats.errors.append(error)

    stats.files += 1
    f = GuardedReader(raw, eager=eager)
    if fmt in _LINE_FORMATS:
        batches = _line_batches(f, fmt, keys, stats)
    else:
        batches = (_turtle_batches if fmt == ox.RdfFormat.TURTLE
                   else _stream_batches)(f, fmt, keys, stats, source=label)
    # The break, if any, comes after the last batch read before it, and
    # before the publication it cut short is handed on (`flush_after`: `rtf.io.idle`).
    yield from grouped_when_idle(chain(batches, f.end(label)), flush_after,
                                 lambda batches: _group(_rows(batches, on_bad, stats), by_graph, stats))


def publications_from_bytes(data: bytes, format: str | ox.RdfFormat | None = None,
                            group_by: str = "subject", source: str = "<bytes>",
                            skip_invalid: bool = False, stats: ReadStats | None = None
                            ) -> list[Publication]:
    """The publications of the RDF document `data` (an HTTP body, say), all at once.

    As `read_publications` reads a file, with the same grouping and format
    names (``"nt"``, ``"ttl"``, ``"nq"``, ``"trig"``, ...); without `format`
    the syntax is told by the name `source` (``"drop-1.nq.gz"``), and so is
    the compression: with a `source` (or `format`) ending in ``.gz`` or
    ``.bz2``, `data` is decompressed.
    Strict by default: the first malformed line or statement raises
    `PublicationError` naming `source` and the line, and nothing is
    returned; with ``skip_invalid=True`` bad lines are skipped and a broken
    archive is read up to its break, as ``rtf match --skip-invalid`` reads
    the same bytes from a file, counted in `stats`.
    """
    if group_by not in ("subject", "graph"):
        raise ValueError(f"group_by must be 'subject' or 'graph', not {group_by!r}")
    fmt, compression = detect_format(source, format)
    raw: IO[bytes] = io.BytesIO(data)
    if compression:
        raw = _OPENERS[compression](raw)
    return list(_read_file(raw, source, fmt, group_by == "graph", skip_invalid,
                           stats if stats is not None else ReadStats()))


def parse_ntriples_lines(lines: Iterable[str], source: str = "<lines>"
                         ) -> tuple[list[Triple], int]:
    """Key triples of a batch of N-Triples lines, and how many lines were bad.

    The batch is parsed in one pyoxigraph call; only a batch with bad lines is
    taken apart to skip them (see `_parse_lines`). A bad line never raises:
    it is counted, and the first one is logged with `source`; a line over
    `MAX_LINE_BYTES` is bad without being parsed. Lines may keep their
    newline or not.
    """
    lines = list(lines)
    triples: list[Triple] = []
    bad: list[BadLine] = []
    limit = input_limits.MAX_LINE_BYTES
    for i, line in enumerate(lines):  # a term pyoxigraph may not hold: never parsed
        if len(line) > limit // 4 and len(line.encode("utf-8", "replace")) > limit:
            lines[i] = ""
            bad.append(overlong_line(i + 1))
    for item in _parse_lines("\n".join(lines), ox.RdfFormat.N_TRIPLES, _triple_keys):
        if isinstance(item, BadLine):
            bad.append(item)
        else:
            triples.extend(item)
    bad.sort(key=lambda b: b.line)
    if bad:
        log.warning("%s: skipped %d malformed N-Triples line(s); first, line %s: %s",
                    source, len(bad), bad[0].line, bad[0].message)
    return triples, len(bad)
