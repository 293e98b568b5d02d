"""The on-disk query index: save an `Engine`, load it back without the parser.

The layout is documented in docs/index-format.md. In short: a fixed
48-byte header (magic ``RTFINDEX``, format version, flags, body length,
SHA-256 of the body), then a zlib-compressed UTF-8 JSON body holding the
algorithm, the solution cap, the taxonomy's edges and every registered
query -- its id, subscriber, and its parsed `rtf.query.model.Query` as a table of
type-tagged values.

Why a model table: parsing is ~70% of registration (Lark), so a load that
re-parsed could never be much faster than registering again. Each distinct
model value (an IRI, a word, a pattern, a branch, a query) is stored once,
children before parents, as ``[class, field, ...]``, where a field is a
JSON scalar or ``[i]``, a reference to the i-th value. Loading rebuilds the
values in one pass through an explicit whitelist of model classes
(`MODEL_CLASSES`: a value of any other class is refused), then indexes the
queries as `Engine.register` does for a parsed query. Nothing in the file is
ever executed: no pickle, no eval, only JSON and the whitelisted
constructors.

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
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

from rtf.errors import IndexFileError, RtfError
from rtf.io.files import write_atomically
from rtf.io.taxonomy import Taxonomy
from rtf.query import model, terms
from rtf.query.terms import shared

#: File signature, first 8 bytes of every index file.
MAGIC = b"RTFINDEX"
#: Version of the layout; a file of any other version is refused.
FORMAT_VERSION = 1
#: magic, version (uint32), flags (uint32), body length (uint64), SHA-256 of the body.
HEADER = struct.Struct("<8sIIQ32s")
#: Flag bit: the body is zlib-compressed.
FLAG_ZLIB = 1


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

#: The only classes a file may build (name in the file -> class). Generic
#: over their fields (`dataclasses.fields`), so a model class added later is
#: handled by adding it here. ``tuple`` stands for a tuple of values.
MODEL_CLASSES: dict[str, type] = {cls.__name__: cls for cls in (
    terms.IRI, terms.Literal, terms.Variable, terms.BlankNode, terms.Wildcard, terms.TypePath,
    model.FTWord, model.FTTerm, model.FTAnd, model.FTOr, model.FTNot, model.FTNear,
    model.Lang, model.Compare, model.FtContains, model.Regex, model.Contains,
    model.LangMatches, model.EffectiveBoolean, model.And, model.Or, model.Not,
    model.Call, model.Arithmetic, model.In, model.GroupPattern,
    model.TriplePattern, model.TupleConjunct, model.Branch, model.Query)}
MODEL_CLASSES["tuple"] = tuple

#: Leaf values the parser shares between queries (`rtf.query.terms.shared`); loading
#: shares them too, so that queries registered later reuse them. Composite
#: values (patterns, conjuncts, branches) are already stored once each in
#: the file; sharing them again would hash them recursively for nothing.
_SHARED_CLASSES = frozenset((terms.IRI, terms.Variable, model.FTWord))
#: Classes with a field left out of equality (Query.text): deduplicated by identity.
_BY_IDENTITY = frozenset(cls for cls in MODEL_CLASSES.values() if dataclasses.is_dataclass(cls)
                         and any(not f.compare for f in dataclasses.fields(cls)))
_FIELDS = {cls: tuple(f.name for f in dataclasses.fields(cls))
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
    raw = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    packed = zlib.compress(raw, 6)
    return HEADER.pack(MAGIC, FORMAT_VERSION, FLAG_ZLIB, len(packed),
                       hashlib.sha256(packed).digest()) + packed


# ------------------------------------------------------------------ decoding


def read_body(path: str | os.PathLike) -> dict:
    """The verified, decoded JSON body of index file `path` (`IndexFileError` if it is not one)."""
    return decode_body(read_index_bytes(path), str(path))


def decode_body(data: bytes, source: str = "<bytes>") -> dict:
    """The JSON body of the index file bytes `data`, after every check of the header."""
    if len(data) < HEADER.size or not data.startswith(MAGIC):
        raise IndexFileError(f"{source}: not an rtf index file (no {MAGIC.decode()} header)")
    magic, version, flags, length, digest = HEADER.unpack_from(data)
    if version != FORMAT_VERSION:
        raise IndexFileError(f"{source}: index format version {version}, but this rtf reads "
                             f"version {FORMAT_VERSION}; rebuild it with `rtf index build`")
    body = data[HEADER.size:]
    if len(body) != length:
        raise IndexFileError(f"{source}: the index is truncated or has trailing bytes "
                             f"({len(body)} body bytes, the header says {length})")
    if hashlib.sha256(body).digest() != digest:
        raise IndexFileError(f"{source}: the index is corrupt (checksum mismatch)")
    try:
        if flags & FLAG_ZLIB:
            body = zlib.decompress(body)
        content = json.loads(body.decode("utf-8"))
    except (zlib.error, UnicodeDecodeError, ValueError, RecursionError) as e:
        raise IndexFileError(f"{source}: the index body cannot be decoded: {e}") from None
    if not isinstance(content, dict):
        raise IndexFileError(f"{source}: the index body is not an object")
    return content


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
    values: list = []
    append = values.append
    for n, entry in enumerate(entries):
        try:
            c = entry[0]
            if type(c) is not int or c < 0:
                raise IndexError
            cls = classes[c]
            args = []
            for f in entry[1:]:
                if f.__class__ is list:
                    r = f[0]
                    if type(r) is not int or not 0 <= r < n or len(f) != 1:
                        raise IndexError
                    args.append(values[r])
                else:
                    args.append(f)
            value = tuple(args) if cls is tuple else cls(*args)
            entries[n] = None
        except (IndexError, TypeError, KeyError, ValueError):
            raise IndexFileError(f"the index's model value {n} is malformed") from None
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
    if type(max_solutions) is not int or max_solutions < 1:
        raise bad("max_solutions is not a positive integer")
    try:
        taxonomy = Taxonomy({str(c): [str(p) for p in ps]
                             for c, ps in content["taxonomy"].items()})
        values = decode_values(content["classes"], content["values"])
        content["values"] = None  # emptied by decode_values
        records = []
        for entry in content["queries"]:
            qid, subscriber, ref, *extra = entry  # [id, subscriber, query, metadata if any]
            query = values[ref] if type(ref) is int and ref >= 0 else None
            if not isinstance(query, model.Query):
                raise bad(f"query {qid!r} does not refer to a query")
            metadata = extra[0] if extra else None
            if len(extra) > 1 or (metadata is not None and not isinstance(metadata, dict)):
                raise bad(f"query {qid!r}: metadata is not a JSON object")
            records.append((query, qid, subscriber, metadata))
        next_id = content.get("next_id", 1)
        next_id = next_id if type(next_id) is int and next_id >= 1 else 1
    except IndexFileError as e:
        if str(e).startswith(source):
            raise
        raise bad(str(e)) from None
    except (RtfError, KeyError, TypeError, ValueError, IndexError, AttributeError,
            RecursionError) as e:
        raise bad(f"the index content is malformed: {type(e).__name__}: {e}") from None
    return SavedIndex(algorithm, max_solutions, taxonomy, records, next_id)


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
            "taxonomy_edges": sum(len(ps) for ps in taxonomy.values())}
