"""The on-disk query index: save an `Engine`, load it back without the parser.

The layout is documented in docs/index-format.md. A file (format 4) is a
table of numpy sections (`rtf.io.sections`); this module writes and reads
its ``body``: a zlib stream of UTF-8 JSON lines, a head line (the algorithm,
the solution cap, the taxonomy's edges, the model classes), then lines of
model values and lines of queries -- each query its id, subscriber, metadata
and parsed `rtf.query.model.Query` as a reference into the table of values.
(The query table's sections, which let this installation's files load
without registering anything, are `rtf.matching.table_snapshot`'s.)

Why a model table: parsing is most of registration (Lark). Each distinct
model value (an IRI, a word, a pattern, a query) is stored once, children
before parents, as ``[class, field, ...]``, a field a JSON scalar or ``[i]``,
a reference to the i-th value. Decoding rebuilds the values in one pass
through an explicit whitelist of model classes (`MODEL_CLASSES`), checks
every field as the parser would have made it (`rtf.io.model_checks`) and
each query's full-text words against its text (`rtf.io.term_checks`), and
decomposes each query's branches again from its patterns and filters (they
are not in the file, so they cannot disagree with them). Nothing in the
file is ever executed: no pickle, no eval. Decompression is capped
(`MAX_BODY_BYTES`, `MAX_RATIO`): a zlib bomb is an `IndexFileError`.

Both ways stream: the writer (`IndexWriter`) encodes and compresses a few
thousand values at a time and puts the head line in front at the end (so
`rtf index build` writes queries as it registers them, learning `next_id`
last), and the reader decodes one line at a time. A save after a load
writes the loaded file's value lines again as they are (`OldValues`).
Saving is atomic (`rtf.io.files.write_atomically`).
"""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import json
import mmap
import os
import re
import stat
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rtf.errors import IndexFileError, RtfError
from rtf.io import sections
from rtf.io.files import STDIO, write_atomically
from rtf.io.sections import MAGIC  # noqa: F401 (the file's signature, rtf.io.store.MAGIC)
from rtf.io.model_checks import (
    TEXT_RULE,
    FIELD_CHECKS,
    check_fields,
    check_head,
    check_query_record,
    check_value,
    query_with_branches,
)
from rtf.io.term_checks import TermChecker
from rtf.io.taxonomy import Taxonomy
from rtf.query import model, terms
from rtf.query.analysis import TextAnalysis
from rtf.query.terms import shared

#: Version of the layout; a file of any other version is refused.
FORMAT_VERSION = 4
#: Most bytes a body may decompress to, whatever its header claims ...
MAX_BODY_BYTES = 4 << 30
#: ... and at most this many times its stored size, plus `BODY_SLACK` (a saved index
#: compresses 6-8x; zlib can reach 1,000x, which is what a bomb uses).
MAX_RATIO = 64
BODY_SLACK = 16 << 20
#: Values (or queries) the writer puts on one line of the body.
LINE_ENTRIES = 4096
#: Bytes the reader inflates at a time.
_INFLATE_STEP = 1 << 20


@dataclass
class SavedIndex:
    """What an index file holds: everything needed to build the engine again, parsing nothing.

    `queries` are ``(query, query_id, subscriber, metadata or None)`` in
    registration order, as `rtf.engine.Engine.register_parsed` takes them.
    """

    algorithm: str
    max_solutions: int
    taxonomy: Taxonomy
    queries: list[tuple]
    next_id: int = 1
    #: The engine's text analysis options (`rtf.query.analysis.TextAnalysis.as_dict`), or None.
    text_analysis: dict | None = None
    reuse: OldValues | None = None  # the loaded file's values (a query as an int: its value there)


@dataclass
class OldValues:
    """A saved body's value lines (raw), their number of values, each query's Query value:
    what a save after a load writes again as it is, decoding no model (`old_values`)."""

    lines: list[bytes]
    count: int
    refs: dict[str, int]

#: The only classes a file may build (name in the file -> class): those whose
#: fields `rtf.io.model_checks.FIELD_CHECKS` knows how to check. Generic over
#: their fields (`dataclasses.fields`), so a model class added later is
#: handled by adding its checks there. ``tuple`` stands for a tuple of values.
MODEL_CLASSES: dict[str, type] = {cls.__name__: cls for cls in FIELD_CHECKS}
MODEL_CLASSES["tuple"] = tuple
#: The head line's "classes": every class of the whitelist, in a fixed order.
CLASS_NAMES: list[str] = list(MODEL_CLASSES)

#: Leaf values the parser shares between queries (`rtf.query.terms.shared`); loading
#: shares them too, so that queries registered later reuse them. Composite
#: values (patterns, conjuncts, branches) are already stored once each in
#: the file; sharing them again would hash them recursively for nothing.
_SHARED_CLASSES = frozenset((terms.IRI, terms.Variable, model.FTWord))
#: The fields stored of each class: all its dataclass fields, but a query's branches (loading
#: decomposes them again) and algebra (a version-3 query is stored as its text, parsed on load).
_NOT_STORED = {(model.Query, "branches"), (model.Query, "algebra")}
_FIELDS = {cls: tuple(f.name for f in dataclasses.fields(cls) if (cls, f.name) not in _NOT_STORED)
           for cls in MODEL_CLASSES.values() if dataclasses.is_dataclass(cls)}
_SCALARS = (str, int, float, bool, type(None))


# ------------------------------------------------------------------ encoding


class _ValueTable:
    """Model values numbered once each, children first (the body's value lines).

    A value seen before is found by identity (queries share most of theirs), a
    new object by its entry -- class and fields, children as their numbers --
    so equal values are stored once without hashing whole trees. `entries` are
    the values numbered since the last `take`. The identities are a shortcut
    kept while the objects are alive (`forget_identities`); an entry's key is its class
    code, then per field its str (a query's: its digest), ``(type, scalar)`` for other
    scalars (True and 1 are equal keys, not equal fields) or a child's number."""

    def __init__(self):
        self.codes = {MODEL_CLASSES[name]: k for k, name in enumerate(CLASS_NAMES)}
        self.count, self.entries = 0, []
        self._by_id: dict[int, int] = {}  # id -> number, while `_alive` keeps the value
        self._alive: list = []
        self._by_entry: dict[tuple, int] = {}
        self.keys: list[tuple] = []  # number -> its key (`rtf.io.query_models.record_of`)

    def ref(self, value) -> int:
        found = self._by_id.get(id(value))
        if found is not None:
            return found
        cls = type(value)
        if cls is tuple:
            fields = value
        elif cls in _FIELDS:
            fields = [getattr(value, name) for name in _FIELDS[cls]]
        else:
            raise TypeError(f"cannot save a value of type {cls.__name__} in an index")
        entry: list = [self.codes[cls]]
        key: list = [entry[0]]
        for f in fields:
            kind = type(f)
            if kind is str:
                entry.append(f)
                key.append(f)
            elif kind in _SCALARS:
                entry.append(f)
                key.append((kind, f))
            else:
                n = self.ref(f)
                entry.append([n])
                key.append(n)
        if cls is model.Query:  # (its text by digest: a key would keep every text to a build's end)
            key = [hashlib.blake2b(f.encode("utf-8"), digest_size=16).digest() if type(f) is str else f for f in key]
        n = self._by_entry.setdefault(key := tuple(key), self.count)
        if n == self.count:
            self.count += 1
            self.keys.append(key)
            self.entries.append(entry)
        self._by_id[id(value)] = n
        self._alive.append(value)
        return n

    def take(self) -> list[list]:
        entries, self.entries = self.entries, []
        return entries

    def forget_identities(self) -> None:
        """Forget the values by identity (they may be freed now); they are still found by entry."""
        self._by_id, self._alive = {}, []


#: The 2-byte zlib header the body starts with (deflate, 32 KiB window, default level).
_ZLIB_HEADER = b"\x78\x9c"
_ADLER_BASE = 65521


def adler32_combine(first: int, second: int, second_length: int) -> int:
    """The Adler-32 of two byte strings one after the other, from their own Adler-32s
    and the second's length (zlib's ``adler32_combine``, which Python's zlib lacks)."""
    rem = second_length % _ADLER_BASE
    sum1 = ((first & 0xFFFF) + (second & 0xFFFF) + _ADLER_BASE - 1) % _ADLER_BASE
    sum2 = (rem * (first & 0xFFFF) + (first >> 16) + (second >> 16) + _ADLER_BASE - rem) % _ADLER_BASE
    return sum1 | (sum2 << 16)


class _Body:
    """The body as it is written: lines of JSON after the head, compressed as they come.

    The head line goes in front at the end (`file`), once it is known (an
    index built a chunk at a time knows its `next_id` last): the lines after
    it are one raw deflate stream, the head a deflate segment of its own
    ended by a sync flush, and the two together, inside the zlib header and
    the Adler-32 of the whole body, are one zlib stream, as a reader expects.
    """

    def __init__(self):
        self._zip = zlib.compressobj(6, zlib.DEFLATED, -15)
        self._adler = 1  # of the lines so far
        self.parts: list[bytes] = []
        self.raw_length = 0

    def line(self, obj) -> None:
        self.raw(json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n")

    def raw(self, raw: bytes) -> None:
        """A line as it is (JSON ending with a line end)."""
        self.raw_length += len(raw)
        self._adler = zlib.adler32(raw, self._adler)
        packed = self._zip.compress(raw)
        if packed:
            self.parts.append(packed)

    def file(self, head: dict) -> tuple[bytes, int]:
        """(the body as stored, its length once decompressed), the head line in front."""
        raw = json.dumps(head, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
        front = zlib.compressobj(6, zlib.DEFLATED, -15)
        adler = adler32_combine(zlib.adler32(raw), self._adler, self.raw_length)
        packed = b"".join([_ZLIB_HEADER, front.compress(raw), front.flush(zlib.Z_SYNC_FLUSH),
                           *self.parts, self._zip.flush(), adler.to_bytes(4, "big")])
        self.parts = []
        return packed, self.raw_length + len(raw)


def body_sections(packed: bytes, raw_length: int) -> dict[str, np.ndarray]:
    """The sections that hold a body (`packed`, `raw_length` bytes once decompressed)."""
    return {"body": np.frombuffer(packed, dtype=np.uint8), "body_length": np.array([raw_length], dtype=np.int64)}


class IndexWriter:
    """An index file made a query at a time, its head given last (`parts`).

    `add` takes the queries in registration order; values and queries go out
    a line of `LINE_ENTRIES` at a time, a query line after the value lines
    its queries refer to, compressed as they come, so that only the
    compressed body and the table of distinct values are held. A writer
    whose caller frees the queries it gave (`rtf index build` registers a
    chunk at a time) calls `forget_identities` before they are freed.
    """

    def __init__(self, reuse: OldValues | None = None):
        self._body = _Body()
        self._table = _ValueTable()
        self._queries: list[list] = []
        self.count = 0
        self._file: list | None = None
        if reuse is not None:  # the old values first, as they are; the new ones numbered after them
            for raw in reuse.lines:
                self._body.raw(raw + b"\n")
            self._table.count = reuse.count

    def add(self, query, query_id: str, subscriber: str | None, metadata=None) -> None:
        if self._file is not None:
            raise ValueError("the index file is written: a writer takes no more queries")
        table = self._table
        ref = query if type(query) is int else table.ref(query)  # (an int: an old value, `OldValues`)
        self._queries.append([query_id, subscriber, ref] + ([dict(metadata)] if metadata else []))
        self.count += 1
        if len(table.entries) >= LINE_ENTRIES:
            self._body.line({"values": table.take()})
        if len(self._queries) >= LINE_ENTRIES:
            self._flush_queries()

    def _flush_queries(self) -> None:
        if self._table.entries:
            self._body.line({"values": self._table.take()})
        if self._queries:
            self._body.line({"queries": self._queries})
            self._queries = []

    def forget_identities(self) -> None:
        self._table.forget_identities()

    def parts(self, algorithm: str, max_solutions: int, taxonomy: Taxonomy, next_id: int,
              text_analysis: dict | None = None, extra: dict | None = None) -> list:
        """The file's parts (`rtf.io.sections.packed`: header, body, the `extra` sections), once."""
        if self._file is not None:
            return self._file
        self._flush_queries()
        head = {"algorithm": algorithm, "max_solutions": max_solutions, "next_id": next_id,
                "text_rule": TEXT_RULE,
                "taxonomy": {c: list(ps) for c, ps in taxonomy.parent_table().items()},
                "classes": CLASS_NAMES, "value_count": self._table.count}
        if text_analysis is not None:  # absent: the spec's default words
            head["text_analysis"] = text_analysis
        self._table = None  # (its distinct values: no more are added)
        self._file = sections.packed(FORMAT_VERSION, {**body_sections(*self._body.file(head)), **(extra or {})},
                                     sign=bool(extra))
        return self._file


def encode_index(saved: SavedIndex, extra: dict | None = None) -> bytes:
    """The whole file for `saved`: header and compressed body.

    Values and queries are written a line of `LINE_ENTRIES` at a time, a
    query line after the value lines its queries refer to. The cyclic
    garbage collector is paused meanwhile, as for loading (`decode_index`):
    the table's entries are many and acyclic.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _encode(saved, extra)
    finally:
        if was_enabled:
            gc.enable()


def _encode(saved: SavedIndex, extra: dict | None) -> bytes:
    writer = IndexWriter(saved.reuse)
    for query, qid, subscriber, metadata in saved.queries:
        writer.add(query, qid, subscriber, metadata)
    return b"".join(writer.parts(saved.algorithm, saved.max_solutions, saved.taxonomy, saved.next_id,
                                 saved.text_analysis, extra))


# ------------------------------------------------------------------ decoding


def body_lines(data, source: str = "<bytes>") -> Iterator[bytes]:
    """The lines of the body of the index file bytes `data`, after every check of the file."""
    return inflated_lines(sections.unpack(data, FORMAT_VERSION, source), source)


def inflated_lines(found: sections.Sections, source: str = "<bytes>") -> Iterator[bytes]:
    """The lines of the body of a file's sections (`rtf.io.sections.unpack`).

    Decompression is capped and streamed: the body may decompress to the
    length its ``body_length`` section gives and no more, which may be at most
    `MAX_BODY_BYTES` and `MAX_RATIO` times the stored body (a zlib bomb is
    refused before it takes the memory); a body that decompresses to
    another length, or has bytes after its end, is refused. One line is
    held at a time.
    """
    body, raw_length = found.arrays.get("body"), found.arrays.get("body_length")
    if body is None or raw_length is None or body.ndim != 1 or raw_length.shape != (1,):
        raise IndexFileError(f"{source}: the index has no body")
    body, raw_length, length = memoryview(body), int(raw_length[0]), len(body)
    if not 0 <= raw_length <= min(MAX_BODY_BYTES, MAX_RATIO * length + BODY_SLACK):
        raise IndexFileError(f"{source}: the index body claims {raw_length} bytes once "
                             f"decompressed, more than this rtf accepts from {length} stored bytes")
    wrong_length = IndexFileError(f"{source}: the index body does not decompress to the "
                                  f"{raw_length} bytes its header gives")
    inflate = zlib.decompressobj()
    total, pos, rest = 0, 0, b""
    try:
        while not inflate.eof:
            if inflate.unconsumed_tail:
                chunk = inflate.decompress(inflate.unconsumed_tail, _INFLATE_STEP)
            elif pos < len(body):
                chunk = inflate.decompress(body[pos:pos + _INFLATE_STEP], _INFLATE_STEP)
                pos += _INFLATE_STEP
            else:
                break
            total += len(chunk)
            if total > raw_length:
                raise wrong_length
            if b"\n" in chunk:
                lines = (rest + chunk).split(b"\n")
                rest = lines.pop()
                yield from lines
            elif chunk:
                rest += chunk
    except zlib.error as e:
        raise IndexFileError(f"{source}: the index body cannot be decoded: {e}") from None
    except MemoryError:
        raise IndexFileError(f"{source}: the index body is too large for this machine's memory") from None
    if total != raw_length or not inflate.eof or inflate.unused_data or pos < len(body):
        raise wrong_length
    if rest:
        raise IndexFileError(f"{source}: the index body does not end with a whole line")


#: A JSON escape of a UTF-16 surrogate (not preceded by an escaping backslash): JSON
#: can spell lone surrogates, which no UTF-8 text, RDF term or query holds. This
#: writer never escapes characters beyond the control ones.
_ESCAPED_SURROGATE = re.compile(rb"(?<!\\)(?:\\\\)*\\u[dD][89a-fA-F]")


def json_lines(data, source: str = "<bytes>") -> Iterator:
    """The body's lines (`body_lines`; `data` the file's bytes or its `sections.Sections`), each
    decoded from JSON."""
    lines = inflated_lines(data, source) if isinstance(data, sections.Sections) else body_lines(data, source)
    for line in lines:
        try:
            if b"\\u" in line and _ESCAPED_SURROGATE.search(line):  # this writer escapes controls only
                raise IndexFileError(f"{source}: the index holds a lone surrogate, which is not a character")
            yield json.loads(line)
        except (UnicodeDecodeError, ValueError, RecursionError) as e:
            if isinstance(e, IndexFileError):
                raise
            raise IndexFileError(f"{source}: the index body cannot be decoded: {e}") from None
        except MemoryError:
            raise IndexFileError(f"{source}: the index body is too large for this machine's memory") from None


class _ValueBuilder:
    """Model values rebuilt from value entries, numbered in order across the lines; the queries'
    full-text terms checked under the file's text `analysis` (`rtf.io.term_checks`)."""

    def __init__(self, class_names: list, analysis: TextAnalysis | None = None):
        try:
            self.classes = [MODEL_CLASSES[name] for name in class_names]
        except (KeyError, TypeError):
            raise IndexFileError(f"the index uses a class this rtf does not know: "
                                 f"{sorted(set(map(str, class_names)) - set(MODEL_CLASSES))}") from None
        self.share = [cls in _SHARED_CLASSES for cls in self.classes]
        self.memo: dict = {}  # branches by (patterns, filters, group), see query_with_branches
        self.values: list = []
        self.terms = TermChecker(analysis)

    def add(self, entries: list) -> None:
        """Build each entry (see the module doc): only classes of `MODEL_CLASSES`, and a
        reference must point to an earlier value; anything else raises `IndexFileError`."""
        classes, share, values, memo = self.classes, self.share, self.values, self.memo
        append = values.append
        n = len(values)
        for entry in entries:
            try:
                if entry.__class__ is not list or not entry:
                    raise ValueError("not a list")
                c = entry[0]
                if type(c) is not int or c < 0:
                    raise ValueError("no class")
                cls = classes[c]
                args = []
                for f in entry[1:]:
                    if f.__class__ is list:
                        r = f[0] if len(f) == 1 else None
                        if type(r) is not int or not 0 <= r < n:
                            raise ValueError("a reference that is not to an earlier value")
                        args.append(values[r])
                    elif f.__class__ in _SCALARS:
                        args.append(f)
                    else:
                        raise ValueError("a field that is neither a value nor a reference")
                if cls is tuple:
                    value = tuple(args)
                elif cls is model.Query:
                    check_fields(cls, args)
                    self.terms.check(value := query_with_branches(args, memo))
                else:
                    check_fields(cls, args)
                    value = cls(*args)
                    check_value(value)
                    if cls is model.FTWord:
                        self.terms.note_word(value)
            except (IndexError, TypeError, KeyError, ValueError, RtfError, RecursionError) as e:
                raise IndexFileError(f"the index's model value {n} is malformed: {e}") from None
            append(shared(value) if share[c] else value)
            n += 1


def decode_lines(lines: Iterator, source: str = "<bytes>") -> SavedIndex:
    """The `SavedIndex` of a body's decoded lines (`json_lines`); `IndexFileError` on any problem."""
    def bad(what: str) -> IndexFileError:
        return IndexFileError(f"{source}: {what}")

    try:
        head = next(lines, None)
        head = check_head(head, source)
        values, records = _ValueBuilder(head.classes, head.analysis), []
        for line in lines:
            kind, entries = next(iter(line.items())) if type(line) is dict and len(line) == 1 else (0, 0)
            if kind == "values" and type(entries) is list:
                values.add(entries)
            elif kind == "queries" and type(entries) is list:
                records += [check_query_record(entry, values.values, bad) for entry in entries]
            else:
                raise bad("a line of the index is not {\"values\": [...]} or {\"queries\": [...]}")
    except IndexFileError as e:
        if str(e).startswith(source):
            raise
        raise bad(str(e)) from None
    except (RtfError, KeyError, TypeError, ValueError, IndexError, AttributeError,
            RecursionError) as e:
        raise bad(f"the index content is malformed: {type(e).__name__}: {e}") from None
    return SavedIndex(head.algorithm, head.max_solutions, head.taxonomy, records, head.next_id,
                      head.text_analysis)


def old_values(found: sections.Sections, source: str = "<bytes>") -> OldValues | None:
    """The `OldValues` of a file's body, or None if its classes are not this writer's."""
    lines = inflated_lines(found, source)
    head = json.loads(next(lines, b"null"))
    if type(head) is not dict or head.get("classes") != CLASS_NAMES:
        return None
    kept, count, refs = [], head.get("value_count"), {}
    counted = type(count) is int and count >= 0  # (else counted here)
    count = count if counted else 0
    for line in lines:
        if line.startswith(b'{"values":'):
            kept.append(line)
            count += 0 if counted else len(json.loads(line)["values"])
        else:
            refs.update((entry[0], entry[2]) for entry in json.loads(line)["queries"])
    return OldValues(kept, count, refs)


def decode_index(data, source: str = "<bytes>", found: sections.Sections | None = None) -> SavedIndex:
    """The `SavedIndex` in the index file bytes `data`, after every check (`IndexFileError`).

    The cyclic garbage collector is paused meanwhile: loading makes millions
    of long-lived objects and no garbage cycles, and the collections that
    their allocation triggers would rescan them all, again and again
    (measured: 2-3x the load time at 100K queries).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        if found is None:
            found = sections.unpack(data, FORMAT_VERSION, source)
        return decode_lines(json_lines(found, source), source)
    finally:
        if was_enabled:
            gc.enable()


def summary(data: bytes, source: str = "<bytes>") -> dict:
    """What an index holds, without building it: the head's fields and the numbers of
    model values and queries (every check of the header and the body's JSON; the
    values themselves are not checked)."""
    lines = json_lines(data, source)
    head = next(lines, None)
    check_head(head, source)
    counts = {"values": 0, "queries": 0}
    for line in lines:
        if type(line) is not dict or len(line) != 1 or not set(line) <= set(counts):
            raise IndexFileError(f"{source}: a line of the index is not values or queries")
        (kind, entries), = line.items()
        counts[kind] += len(entries) if type(entries) is list else 0
    taxonomy = head["taxonomy"]
    return {"format_version": FORMAT_VERSION, "algorithm": head["algorithm"],
            "max_solutions": head["max_solutions"], "queries": counts["queries"],
            "model_values": counts["values"], "taxonomy_classes": len(taxonomy),
            "taxonomy_edges": sum(len(ps) for ps in taxonomy.values()),
            "text_analysis": head.get("text_analysis")}


def write_index(saved: SavedIndex, path: str | os.PathLike, extra: dict | None = None) -> int:
    """Write `saved` (and the `extra` sections) to `path` atomically; return the file's size in bytes."""
    data = encode_index(saved, extra)
    write_atomically(path, data)
    return len(data)


def read_index_bytes(path: str | os.PathLike) -> bytes:
    """The bytes of index file `path` (``-``: stdin), unchecked (`IndexFileError` if unreadable)."""
    try:
        return sys.stdin.buffer.read() if str(path) == STDIO else Path(path).read_bytes()
    except OSError as e:
        raise IndexFileError(f"cannot read the index {path}: {e.strerror or e}") from None


def map_index(path: str | os.PathLike):
    """The bytes of index file `path` mapped read-only into memory (`mmap`: the sections are
    read in place, their pages shared by every process that maps the file), or read when
    `path` is stdin, a pipe or a device (`IndexFileError` if unreadable)."""
    if str(path) == STDIO:
        return read_index_bytes(path)
    try:
        with open(path, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode) or os.fstat(f.fileno()).st_size == 0:
                return f.read()
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as e:
        raise IndexFileError(f"cannot read the index {path}: {e.strerror or e}") from None


def file_info(path: str | os.PathLike, data: bytes | None = None) -> dict:
    """What `rtf index info` shows without building the index: header and body counts (of
    `data`, the file's bytes if read already: a pipe or stdin can be read only once)."""
    data = read_index_bytes(path) if data is None else data
    return {"path": str(path), "bytes": len(data), **summary(data, str(path))}
