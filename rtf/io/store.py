"""The on-disk query index: save an `Engine`, load it back without the parser.

The layout is documented in docs/index-format.md. In short: a fixed
64-byte header (magic ``RTFINDEX``, format version, flags, body length as
stored and once decompressed, SHA-256 of the body), then a zlib-compressed
UTF-8 JSON body holding the algorithm, the solution cap, the taxonomy's
edges and every registered query -- its id, subscriber, and its parsed
`rtf.query.model.Query` as a table of type-tagged values.

Why a model table: parsing is ~70% of registration (Lark), so a load that
re-parsed could never be much faster than registering again. Each distinct
model value (an IRI, a word, a pattern, a query) is stored once, children
before parents, as ``[class, field, ...]``, where a field is a JSON scalar
or ``[i]``, a reference to the i-th value. Loading rebuilds the values in
one pass through an explicit whitelist of model classes (`MODEL_CLASSES`:
a value of any other class is refused), checks every field as the parser
would have made it (`rtf.io.model_checks`), decomposes each query's branches
again from its patterns and filters (they are not in the file, so they
cannot disagree with them), then indexes the queries as `Engine.register`
does for a parsed query. Nothing in the file is ever executed: no pickle,
no eval, only JSON and the whitelisted constructors. Decompression is
capped by the header's length, itself capped (`MAX_BODY_BYTES`,
`MAX_RATIO`): a zlib bomb is an `IndexFileError`, never a MemoryError.

This module knows the file, not the engine: `encode_index` writes a
`SavedIndex` (algorithm, solution cap, taxonomy, parsed queries) and
`decode_index` reads one back; `rtf.engine.Engine.save`, `load`,
`to_bytes` and `from_bytes` turn an engine into one and back.

Loading is all-or-nothing: the header, checksum and version are verified,
the whole body is decoded and a new `Engine` is built; any problem raises
`IndexFileError` and nothing is returned. Saving is atomic: a temporary
file beside the target, fsync, rename, fsync of the folder
(`rtf.io.files.write_atomically`).
"""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import json
import os
import re
import struct
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path

from rtf.errors import IndexFileError, RtfError
from rtf.io.files import write_atomically
from rtf.io.model_checks import FIELD_CHECKS, check_fields, check_value, query_with_branches
from rtf.io.taxonomy import Taxonomy
from rtf.query import model, terms
from rtf.query.analysis import TextAnalysis, TextAnalysisError
from rtf.query.terms import shared

#: File signature, first 8 bytes of every index file.
MAGIC = b"RTFINDEX"
#: Version of the layout; a file of any other version is refused.
FORMAT_VERSION = 2
#: magic and version: the start of every version's header.
PREAMBLE = struct.Struct("<8sI")
#: magic, version (uint32), flags (uint32), body length as stored (uint64), body length
#: once decompressed (uint64), SHA-256 of the body as stored.
HEADER = struct.Struct("<8sIIQQ32s")
#: Flag bit: the body is zlib-compressed (always set by this version).
FLAG_ZLIB = 1
#: Most bytes a body may decompress to, whatever its header claims ...
MAX_BODY_BYTES = 4 << 30
#: ... and at most this many times its stored size, plus `BODY_SLACK` (a saved index
#: compresses 6-8x; zlib can reach 1,000x, which is what a bomb uses).
MAX_RATIO = 64
BODY_SLACK = 16 << 20


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

#: The only classes a file may build (name in the file -> class): those whose
#: fields `rtf.io.model_checks.FIELD_CHECKS` knows how to check. Generic over
#: their fields (`dataclasses.fields`), so a model class added later is
#: handled by adding its checks there. ``tuple`` stands for a tuple of values.
MODEL_CLASSES: dict[str, type] = {cls.__name__: cls for cls in FIELD_CHECKS}
MODEL_CLASSES["tuple"] = tuple

#: Leaf values the parser shares between queries (`rtf.query.terms.shared`); loading
#: shares them too, so that queries registered later reuse them. Composite
#: values (patterns, conjuncts, branches) are already stored once each in
#: the file; sharing them again would hash them recursively for nothing.
_SHARED_CLASSES = frozenset((terms.IRI, terms.Variable, model.FTWord))
#: Classes with a field left out of equality (Query.text): deduplicated by identity.
_BY_IDENTITY = frozenset(cls for cls in MODEL_CLASSES.values() if dataclasses.is_dataclass(cls)
                         and any(not f.compare for f in dataclasses.fields(cls)))
#: The fields stored of each class: all its dataclass fields, but a query's branches,
#: which loading decomposes again from its patterns and filters.
_FIELDS = {cls: tuple(f.name for f in dataclasses.fields(cls) if (cls, f.name) != (model.Query, "branches"))
           for cls in MODEL_CLASSES.values() if dataclasses.is_dataclass(cls)}
_SCALARS = (str, int, float, bool, type(None))


# ------------------------------------------------------------------ encoding


class _ValueTable:
    """Model values numbered once each, children first (the body's "values")."""

    def __init__(self):
        self.classes: dict[type, int] = {}
        self.entries: list[list] = []
        self._seen: dict = {}  # value (or id, see _BY_IDENTITY) -> its number

    def ref(self, value) -> int:
        cls = type(value)
        key = (cls, id(value)) if cls in _BY_IDENTITY else (cls, value)
        found = self._seen.get(key)
        if found is not None:
            return found
        if cls is tuple:
            fields = value
        elif cls in _FIELDS:
            fields = [getattr(value, name) for name in _FIELDS[cls]]
        else:
            raise TypeError(f"cannot save a value of type {cls.__name__} in an index")
        entry = [self.classes.setdefault(cls, len(self.classes))]
        for f in fields:
            entry.append(f if type(f) in _SCALARS else [self.ref(f)])
        n = self._seen[key] = len(self.entries)
        self.entries.append(entry)
        if cls in _BY_IDENTITY:
            self._seen[("keep", id(value))] = value  # keep the id valid while encoding
        return n

    def class_names(self) -> list[str]:
        return [cls.__name__ for cls in self.classes]


def encode_index(saved: SavedIndex) -> bytes:
    """The whole file for `saved`: header and compressed body."""
    table = _ValueTable()
    queries = [[qid, subscriber, table.ref(query)] + ([dict(metadata)] if metadata else [])
               for query, qid, subscriber, metadata in saved.queries]
    body = {
        "algorithm": saved.algorithm,
        "max_solutions": saved.max_solutions,
        "next_id": saved.next_id,
        "taxonomy": {c: list(ps) for c, ps in saved.taxonomy.parent_table().items()},
        "classes": table.class_names(),
        "values": table.entries,
        "queries": queries,
    }
    if saved.text_analysis is not None:  # absent: the spec's default words (files before it too)
        body["text_analysis"] = saved.text_analysis
    raw = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    packed = zlib.compress(raw, 6)
    return HEADER.pack(MAGIC, FORMAT_VERSION, FLAG_ZLIB, len(packed), len(raw),
                       hashlib.sha256(packed).digest()) + packed


# ------------------------------------------------------------------ decoding


def read_body(path: str | os.PathLike) -> dict:
    """The verified, decoded JSON body of index file `path` (`IndexFileError` if it is not one)."""
    return decode_body(read_index_bytes(path), str(path))


def decode_body(data: bytes, source: str = "<bytes>") -> dict:
    """The JSON body of the index file bytes `data`, after every check of the header.

    Decompression is capped: at the length the header gives, which may be at
    most `MAX_BODY_BYTES` and `MAX_RATIO` times the stored body (a zlib bomb
    is refused before it takes the memory); a body that decompresses to
    another length is refused.
    """
    if len(data) < PREAMBLE.size or not data.startswith(MAGIC):
        raise IndexFileError(f"{source}: not an rtf index file (no {MAGIC.decode()} header)")
    _, version = PREAMBLE.unpack_from(data)
    if version != FORMAT_VERSION:
        raise IndexFileError(f"{source}: index format version {version}, but this rtf reads "
                             f"version {FORMAT_VERSION}; rebuild it with `rtf index build`")
    if len(data) < HEADER.size:
        raise IndexFileError(f"{source}: the index is truncated (its header is cut short)")
    _, _, flags, length, raw_length, digest = HEADER.unpack_from(data)
    body = data[HEADER.size:]
    if len(body) != length:
        raise IndexFileError(f"{source}: the index is truncated or has trailing bytes "
                             f"({len(body)} body bytes, the header says {length})")
    if hashlib.sha256(body).digest() != digest:
        raise IndexFileError(f"{source}: the index is corrupt (checksum mismatch)")
    if flags != FLAG_ZLIB:
        raise IndexFileError(f"{source}: unknown flags {flags:#x} in the index header")
    if raw_length > min(MAX_BODY_BYTES, MAX_RATIO * length + BODY_SLACK):
        raise IndexFileError(f"{source}: the index body claims {raw_length} bytes once "
                             f"decompressed, more than this rtf accepts from {length} stored bytes")
    try:
        inflate = zlib.decompressobj()
        raw = inflate.decompress(body, raw_length)
        if len(raw) != raw_length or not inflate.eof or inflate.unused_data or inflate.unconsumed_tail:
            raise IndexFileError(f"{source}: the index body does not decompress to the "
                                 f"{raw_length} bytes its header gives")
        text = raw.decode("utf-8")
        del raw
        if "\\u" in text and _ESCAPED_SURROGATE.search(text):  # this writer escapes controls only
            raise IndexFileError(f"{source}: the index holds a lone surrogate, which is not a character")
        content = json.loads(text)
    except (zlib.error, UnicodeDecodeError, ValueError, RecursionError) as e:
        raise IndexFileError(f"{source}: the index body cannot be decoded: {e}") from None
    except MemoryError:
        raise IndexFileError(f"{source}: the index body is too large for this machine's memory") from None
    if not isinstance(content, dict):
        raise IndexFileError(f"{source}: the index body is not an object")
    return content


#: A JSON escape of a UTF-16 surrogate (not preceded by an escaping backslash): JSON
#: can spell lone surrogates, which no UTF-8 text, RDF term or query holds. This
#: writer never escapes characters beyond the control ones.
_ESCAPED_SURROGATE = re.compile(r"(?<!\\)(?:\\\\)*\\u[dD][89a-fA-F]")


def decode_values(class_names: list, entries: list) -> list:
    """Rebuild the model values of the table `entries` (see the module doc).

    Only classes of `MODEL_CLASSES` are built, and a reference must point
    to an earlier value; anything else raises `IndexFileError`. Each entry
    is dropped from `entries` once built (set to None), so that the JSON
    lists are freed while the values are made: a lower peak, and less
    memory kept by the allocator afterwards.
    """
    try:
        classes = [MODEL_CLASSES[name] for name in class_names]
    except (KeyError, TypeError):
        raise IndexFileError(f"the index uses a class this rtf does not know: "
                             f"{sorted(set(map(str, class_names)) - set(MODEL_CLASSES))}") from None
    share = [cls in _SHARED_CLASSES for cls in classes]
    memo: dict = {}  # branches by (patterns, filters, group), see query_with_branches
    values: list = []
    append = values.append
    for n, entry in enumerate(entries):
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
            else:
                check_fields(cls, args)
                value = query_with_branches(args, memo) if cls is model.Query else cls(*args)
                check_value(value)
            entries[n] = None
        except (IndexError, TypeError, KeyError, ValueError, RtfError, RecursionError) as e:
            raise IndexFileError(f"the index's model value {n} is malformed: {e}") from None
        append(shared(value) if share[c] else value)
    return values


def decode_content(content: dict, source: str = "<bytes>") -> SavedIndex:
    """The `SavedIndex` of a decoded body; `IndexFileError` on any problem."""
    def bad(what: str) -> IndexFileError:
        return IndexFileError(f"{source}: {what}")

    algorithm = content.get("algorithm")
    if not isinstance(algorithm, str):
        raise bad(f"unknown algorithm {algorithm!r}")
    max_solutions = content.get("max_solutions")
    if type(max_solutions) is not int or not 1 <= max_solutions <= sys.maxsize:
        raise bad("max_solutions is not a positive integer (at most 2**63 - 1)")
    next_id = content.get("next_id")
    if type(next_id) is not int or not 1 <= next_id <= sys.maxsize:
        raise bad("next_id is not a positive integer (at most 2**63 - 1)")
    try:
        edges = content["taxonomy"]
        if type(edges) is not dict or not all(
                type(ps) is list and all(type(p) is str for p in ps) for ps in edges.values()):
            raise bad("the taxonomy is not an object of class -> list of classes")
        taxonomy = Taxonomy(edges)
        if type(content["classes"]) is not list or type(content["values"]) is not list:
            raise bad("classes and values are not lists")
        values = decode_values(content["classes"], content["values"])
        content["values"] = None  # emptied by decode_values
        records = []
        queries = content["queries"]
        if type(queries) is not list:
            raise bad("queries is not a list")
        for entry in queries:
            if type(entry) is not list or len(entry) not in (3, 4):
                raise bad(f"a query entry is not [id, subscriber, query(, metadata)]: {str(entry)[:60]}")
            qid, subscriber, ref, *extra = entry  # [id, subscriber, query, metadata if any]
            if type(qid) is not str or not qid:
                raise bad(f"a query id is not a non-empty string: {qid!r}")
            if subscriber is not None and type(subscriber) is not str:
                raise bad(f"query {qid!r}: the subscriber is not a string or null")
            query = values[ref] if type(ref) is int and ref >= 0 else None
            if not isinstance(query, model.Query):
                raise bad(f"query {qid!r} does not refer to a query")
            metadata = extra[0] if extra else None
            if metadata is not None and type(metadata) is not dict:
                raise bad(f"query {qid!r}: metadata is not a JSON object")
            records.append((query, qid, subscriber, metadata))
    except IndexFileError as e:
        if str(e).startswith(source):
            raise
        raise bad(str(e)) from None
    except (RtfError, KeyError, TypeError, ValueError, IndexError, AttributeError,
            RecursionError) as e:
        raise bad(f"the index content is malformed: {type(e).__name__}: {e}") from None
    text_analysis = content.get("text_analysis")
    if text_analysis is not None:
        try:
            TextAnalysis.from_dict(text_analysis)  # checked as Engine will take it
        except (TextAnalysisError, TypeError) as e:
            raise bad(f"text_analysis: {e}") from None
    return SavedIndex(algorithm, max_solutions, taxonomy, records, next_id, text_analysis)


def decode_index(data: bytes, source: str = "<bytes>") -> SavedIndex:
    """The `SavedIndex` in the index file bytes `data`, after every check (`IndexFileError`).

    The cyclic garbage collector is paused meanwhile: loading makes millions
    of long-lived objects and no garbage cycles, and the collections that
    their allocation triggers would rescan them all, again and again
    (measured: 2-3x the load time at 100K queries).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return decode_content(decode_body(data, source), source)
    finally:
        if was_enabled:
            gc.enable()


def write_index(saved: SavedIndex, path: str | os.PathLike) -> int:
    """Write `saved` to `path` atomically; return the file's size in bytes."""
    data = encode_index(saved)
    write_atomically(path, data)
    return len(data)


def read_index_bytes(path: str | os.PathLike) -> bytes:
    """The bytes of index file `path`, unchecked (`IndexFileError` if it cannot be read)."""
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise IndexFileError(f"cannot read the index {path}: {e.strerror or e}") from None


def file_info(path: str | os.PathLike) -> dict:
    """What `rtf index info` shows without building the index: header and body counts."""
    content = read_body(path)
    size = os.path.getsize(path)
    taxonomy = content.get("taxonomy") or {}
    return {"path": str(path), "format_version": FORMAT_VERSION, "bytes": size,
            "algorithm": content.get("algorithm"), "max_solutions": content.get("max_solutions"),
            "queries": len(content.get("queries") or ()),
            "model_values": len(content.get("values") or ()),
            "taxonomy_classes": len(taxonomy),
            "taxonomy_edges": sum(len(ps) for ps in taxonomy.values()),
            "text_analysis": content.get("text_analysis")}
