"""Each query's model as a record of its own in a saved index (format 4): one query decoded at a time.

The body (`rtf.io.store`) stores every model value once for the whole file,
children before parents, in one zlib stream: compact, but a reader that
needs one query's model must inflate and decode it all (seconds at 100K
queries). A mapped load (`rtf.matching.restoring`) needs models one at a
time -- a branch answered by a join, `Engine.get`, a query the table does
not map -- so a file with a query table also holds every query's model as a
record of its own: the JSON list of the value entries it reaches (the body's
encoding, references numbered within the record, the query last), in blocks
of `BLOCK_QUERIES` queries compressed one by one (zlib, from a preset
dictionary of the file's first records), with an offsets array to find each
block and each record in it. Decoding query k inflates its block (~8 KB)
and decodes its entries alone, with every check of the body's values
(`rtf.io.store._ValueBuilder`).

Sections (``m_``): ``m_block_queries`` [1] (B), ``m_dictionary`` (the preset
dictionary, at most 32 KiB; empty: none), ``m_record_offsets`` [Q+1]
(the records' offsets in the blocks' inflated bytes one after the other,
from 0, ascending), ``m_block_offsets`` [ceil(Q/B)+1] (each block's offset
in ``m_blocks``, from 0, ascending, to its length) and ``m_blocks`` (the
zlib streams). Block b holds queries [bB, min(bB+B, Q)) and inflates to
exactly the bytes their records span, no more (checked while inflating).
"""

from __future__ import annotations

import json
import zlib
from array import array
from collections.abc import Iterable

import numpy as np

from rtf.errors import IndexFileError
from rtf.io import sections
from rtf.io.store import _ESCAPED_SURROGATE, _FIELDS, _SCALARS, _ValueBuilder, _ValueTable
from rtf.query.model import Query

PREFIX = "m_"
#: Queries per compressed block: few, so that one query costs little to inflate; they
#: compress well all the same with the preset dictionary (100K selective queries: 16 a
#: block 4.3 MB, 24 us to inflate one; 64 a block without the dictionary 5.3 MB, 51 us).
BLOCK_QUERIES = 16
#: The preset dictionary (zlib's ``zdict``: the bytes every block's compression starts from)
#: is the last `DICTIONARY_BYTES` of the first `DICTIONARY_QUERIES` records: the IRIs,
#: classes and field layouts that recur in every block.
DICTIONARY_QUERIES = 256
DICTIONARY_BYTES = 32768
#: The sections a file holding the records has.
_QUERY_FIELDS = _FIELDS[Query]
NAMES = tuple(PREFIX + name for name in ("block_queries", "dictionary", "record_offsets", "block_offsets",
                                         "blocks"))


def encoded(query) -> bytes:
    """The record of `query`: the JSON list of its value entries, children first, the query last."""
    table = _ValueTable()
    table.ref(query)
    return json.dumps(table.take(), ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def record_of(table: _ValueTable, query) -> bytes:
    """`encoded(query)`, read from the keys of the body's `table` (`rtf.io.store.IndexWriter`),
    which numbered `query` last, its values still known by identity: the same bytes without
    walking the model's objects again (a build's records: ~40% of its writing). Equal values
    have one number there, so numbering them once each within the record numbers them as
    `encoded` does."""
    keys, by_id, at, entries = table.keys, table._by_id, {}, []
    if len(keys) != table.count or id(query) not in by_id:
        return encoded(query)  # (a table that took a loaded file's values first)
    try:
        root = [table.codes[Query]]
        for name in _QUERY_FIELDS:  # (the query's own key holds its text's digest: read from it)
            f = getattr(query, name)
            kind = type(f)
            root.append(f if kind in _SCALARS else [_visit(by_id[id(f)], keys, at, entries)])
    except (TypeError, KeyError):  # (a value that is not a child's number: a query within)
        return encoded(query)
    entries.append(root)
    return json.dumps(entries, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _visit(n: int, keys: list, at: dict, entries: list) -> int:
    """`record_of`'s number of the table's value n, its entry (and its children's) added."""
    found = at.get(n)
    if found is None:
        key = keys[n]
        entry = [key[0]]
        for f in key[1:]:
            kind = type(f)
            if kind is int:
                entry.append([_visit(f, keys, at, entries)])
            elif kind is str or kind is tuple:
                entry.append(f if kind is str else f[1])
            else:  # (a digest: a query within)
                raise TypeError
        found = at[n] = len(entries)
        entries.append(entry)
    return found


def model_sections(records: Iterable, source: ModelRecords | None = None) -> dict[str, np.ndarray]:
    """The sections of the queries' `records`, in registration order, each a `Query` or the
    number of a record of `source` (a loaded file's records, copied as they are: a whole
    block of them in a row, from the same dictionary, is copied still compressed, so that
    a save after a load, as `rtf index add` makes, compresses only what changed)."""
    writer = ModelWriter(source)
    for record in records:
        writer.add(record)
    return writer.sections()


class ModelWriter:
    """`model_sections` a record at a time (`add`), for a build that hands its queries over a
    chunk at a time (`rtf.io.builder`): the first `DICTIONARY_QUERIES` records are held
    until the dictionary is made of them, then a block of `BLOCK_QUERIES` at a time."""

    def __init__(self, source: ModelRecords | None = None):
        self.source = source
        self.first: list | None = []  # (None once the dictionary is made)
        self.pending: list = []
        self.lengths, self.blocks, self.block_lengths = array("q", [0]), [], []  # (no int object each)
        self.copying, self.primed, self.dictionary = False, None, b""

    def _raw(self, record) -> bytes:
        kind = type(record)
        return self.source.raw(record) if kind is int else record if kind is bytes else encoded(record)

    def add(self, record) -> None:
        """The next query's record: its `Query`, its number in `source` or the record (`record_of`)."""
        if self.first is not None:
            self.first.append(record)
            if len(self.first) == DICTIONARY_QUERIES:
                self._start()
            return
        self.pending.append(record)
        if len(self.pending) == BLOCK_QUERIES:
            self._close()

    def _start(self) -> None:
        """The dictionary made of the first records, which are then written as any others."""
        first, self.first = self.first, None
        source = self.source
        self.dictionary = dictionary = b"".join(map(self._raw, first))[-DICTIONARY_BYTES:]
        self.copying = source is not None and source.per == BLOCK_QUERIES and source.dictionary == dictionary
        self.primed = zlib.compressobj(6, zlib.DEFLATED, 15, 9, zlib.Z_DEFAULT_STRATEGY, dictionary) \
            if dictionary else zlib.compressobj(6)  # (copied for each block: the dictionary read once)
        for record in first:
            self.add(record)

    def _close(self) -> None:
        pending, source, lengths = self.pending, self.source, self.lengths
        start = pending[0]
        if (self.copying and type(start) is int and start % BLOCK_QUERIES == 0
                and pending == list(range(start, min(start + BLOCK_QUERIES, source.queries)))):
            b = start // BLOCK_QUERIES  # (source's block b, whole)
            packed = source.data[int(source.blocks[b]):int(source.blocks[b + 1])].tobytes()
            lengths.extend(np.diff(source.records[start:start + len(pending) + 1]).tolist())
        else:
            made = list(map(self._raw, pending))
            lengths.extend(map(len, made))
            deflate = self.primed.copy()
            packed = deflate.compress(b"".join(made)) + deflate.flush()
        self.blocks.append(packed)
        self.block_lengths.append(len(packed))
        pending.clear()

    def sections(self) -> dict[str, np.ndarray]:
        """The sections of the records added (no more may be added after)."""
        if self.first is not None:
            self._start()
        if self.pending:
            self._close()
        return {PREFIX + "block_queries": np.array([BLOCK_QUERIES], dtype=np.int64),
                PREFIX + "dictionary": np.frombuffer(self.dictionary, dtype=np.uint8),
                PREFIX + "record_offsets": np.cumsum(self.lengths, dtype=np.int64),
                PREFIX + "block_offsets": sections.offsets(self.block_lengths),
                PREFIX + "blocks": np.frombuffer(b"".join(self.blocks), dtype=np.uint8)}


class ModelRecords:
    """The records of a file's sections (`model_sections`'), read a block at a time.

    The offsets are checked when made (ValueError if inconsistent with `queries`),
    each block's inflated length when inflated (ValueError). The last block
    inflated is kept: saves and registrations read records in order.
    """

    def __init__(self, arrays: dict[str, np.ndarray], queries: int):
        per, dictionary, records, blocks, data = (arrays[name] for name in NAMES)
        if per.shape != (1,) or not 1 <= int(per[0]) <= 1 << 20 or len(dictionary) > DICTIONARY_BYTES:
            raise ValueError("the saved models' block size or dictionary is malformed")
        self.dictionary = dictionary.tobytes()
        self.per = per = int(per[0])
        count = (queries + per - 1) // per
        if (len(records) != queries + 1 or not sections.ascending(records, int(records[-1]))
                or not bool((np.diff(records) > 0).all())  # (no empty record: no block inflates unbounded)
                or len(blocks) != count + 1 or not sections.ascending(blocks, len(data))):
            raise ValueError("the saved models' offsets are inconsistent")
        self.records, self.blocks, self.data, self.queries = records, blocks, data, queries
        self._last: tuple[int, bytes] = (-1, b"")  # (one attribute: read by threads at once)

    def raw(self, k: int) -> bytes:
        """Query k's record (ValueError if its block does not inflate to the length it should)."""
        if not 0 <= k < self.queries:
            raise IndexError(k)
        b = k // self.per
        first = int(self.records[b * self.per])
        held, raw = self._last
        if b != held:
            length = int(self.records[min((b + 1) * self.per, self.queries)]) - first
            inflate = zlib.decompressobj(zdict=self.dictionary) if self.dictionary else zlib.decompressobj()
            try:
                raw = inflate.decompress(self.data[int(self.blocks[b]):int(self.blocks[b + 1])].tobytes(), length)
            except zlib.error as e:
                raise ValueError(f"the saved models of block {b} cannot be decoded: {e}") from None
            if len(raw) != length or not inflate.eof or inflate.unused_data or inflate.unconsumed_tail:
                raise ValueError(f"the saved models of block {b} are not the length their offsets give")
            self._last = (b, raw)
        return raw[int(self.records[k]) - first:int(self.records[k + 1]) - first]

    def query(self, k: int, decoder: _ValueBuilder) -> Query:
        """Query k's model, decoded with every check of the body's values by `decoder` (the
        file's classes and text analysis; its numbering starts again for each record);
        IndexFileError if the record is malformed."""
        try:
            raw = self.raw(k)
            if b"\\u" in raw and _ESCAPED_SURROGATE.search(raw):
                raise ValueError("a lone surrogate, which is not a character")
            entries = json.loads(raw)
            if type(entries) is not list or not entries:
                raise ValueError("not a list of values")
        except (ValueError, RecursionError) as e:  # (UnicodeDecodeError is a ValueError)
            raise IndexFileError(f"the index's model of query {k} is malformed: {e}") from None
        decoder.values, decoder.memo = [], {}
        try:
            decoder.add(entries)
            found = decoder.values[-1]
        finally:
            decoder.values, decoder.memo = [], {}
        if type(found) is not Query:
            raise IndexFileError(f"the index's model of query {k} is not a query")
        return found
