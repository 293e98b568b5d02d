"""Whether a loaded snapshot's queries are the query table's rows, compared in bulk.

At start `rtf serve` keeps a query of its snapshot only if the table's row of
that id, at or below the note's `through`, has the same text and subscriber
(`rtf.server.registry`). Reading every row and every text as Python strings
and comparing them one by one took ~6 s of a million-query restart; here the
same comparison is made column by column: SQLite concatenates a range of
rows' ids, subscribers and texts (and their lengths in bytes), which are
compared with the snapshot's mapped columns (`rtf.io.query_columns`: ids
and texts as UTF-8 bytes with offsets, subscribers numbered), a range at a
time, without a Python object per query.

`compare` answers only when the comparison is plain: the table's rows at or
below `through` are, in `seq` order, the snapshot's queries in file order
less some removed since (a query replaced since has a row above `through`);
no such row was written by hand (a value that is not text); every query of
the file has its text. Anything else (a row that differs, is not the
snapshot's, or comes in another order) is None, and the caller compares row
by row as before: the answer is the same, only slower.

`file_digest` is what a snapshot's note records of its file: the SHA-256 of
everything after its header, which the header holds and a load verifies
(`rtf.io.sections`). Equal digests mean the very file the note was written
for, so its queries are the ones the note describes.
"""

from __future__ import annotations

import sqlite3
import threading
from contextlib import suppress

import numpy as np

from rtf.io import sections
from rtf.io.query_columns import PREFIX, inflated_texts
from rtf.matching.restoring import loaded_sections

#: Row numbers (`seq`) compared at a time (SQLite makes one string of each column's values per range).
RANGE = 50_000


def file_digest(data) -> str:
    """The body digest an index file's header holds (hex; `data`: its first bytes at least)."""
    return sections.HEADER.unpack_from(data)[4].hex()


def written_digest(path) -> str:
    """`file_digest` of the index file at `path`."""
    with open(path, "rb") as f:
        return file_digest(f.read(sections.HEADER_SIZE))


#: A range of rows as `TableScan` reads it: how many, how many hold a value that is not
#: text, then each column's values joined and their lengths in bytes joined by commas.
_RANGE_SQL = (
    "SELECT count(*),"
    " sum(typeof(id) != 'text' OR typeof(query) != 'text'"
    "     OR (subscriber IS NOT NULL AND typeof(subscriber) != 'text')),"
    " group_concat(id, ''), group_concat(length(CAST(id AS BLOB))),"
    " group_concat(subscriber, ''), group_concat(coalesce(length(CAST(subscriber AS BLOB)), -1)),"
    " group_concat(query, ''), group_concat(length(CAST(query AS BLOB)))"
    " FROM queries WHERE seq > ? AND seq <= ?")  # (in seq order: the table's own)


class TableScan(threading.Thread):
    """The query table's rows at or below `through`, read range by range (`RANGE` seqs) in a
    thread while the snapshot loads (SQLite lets go of the GIL while it joins them): for each
    range, its rows, how many hold a value that is not text, and per column (id, subscriber,
    text) the values' UTF-8 bytes joined and their lengths. `cancel` stops it."""

    def __init__(self, store, through: int):
        super().__init__(name="rtf-snapshot-rows", daemon=True)
        self.store, self.through = store, through
        self.ranges: list[tuple] | None = []  # (None: a row could not be read: not UTF-8)
        self._cancelled = False

    def run(self) -> None:
        try:
            with self.store.reading() as db:
                for after in range(0, self.through, RANGE):
                    if self._cancelled:
                        return
                    count, problems, *columns = db.execute(
                        _RANGE_SQL, (after, min(after + RANGE, self.through))).fetchone()
                    if count:
                        self.ranges.append((count, problems, *[
                            (value or "").encode() if k % 2 == 0
                            else None if value is None else np.fromstring(value, dtype=np.int64, sep=",")
                            for k, value in enumerate(columns)]))
        except sqlite3.Error:  # (text that is not UTF-8: a row written by hand)
            self.ranges = None

    def cancel(self) -> None:
        self._cancelled = True
        self.join()

    def result(self) -> list[tuple] | None:
        self.join()
        return self.ranges


def compare(store, engine, scan: TableScan) -> list[str] | None:
    """The ids of the snapshot's queries whose rows are gone (removed or replaced after
    it), if every other query of the freshly loaded `engine` equals its row of the query
    table `store` (`scan`: its rows at or below the note's `through`) and no row there is
    not the snapshot's; None when that cannot be told in bulk (see the module)."""
    ranges, scan.ranges = scan.result(), None  # (held here alone: let go when compared)
    arrays = loaded_sections(engine)
    if ranges is None or arrays is None:
        return None
    held = _Held(arrays)
    if not held.usable:
        return None
    numbers = np.arange(held.count, dtype=np.int64)  # the snapshot's query of each row, in order
    if sum(found[0] for found in ranges) != held.count:
        try:
            with store.reading() as db:
                ids = [qid for (qid,) in db.execute("SELECT id FROM queries WHERE seq <= ? ORDER BY seq",
                                                    (scan.through,))]
        except sqlite3.Error:
            return None
        numbers = held.numbers(ids)
        if numbers is None:
            return None
    texts = held.inflating()
    try:
        if not _ranges_equal(ranges, held, numbers, texts):
            return None
    finally:
        texts.join()
    kept = np.zeros(held.count, dtype=bool)
    kept[numbers] = True
    return [held.id(k) for k in np.flatnonzero(~kept).tolist()]


def _ranges_equal(ranges: list[tuple], held: "_Held", numbers: np.ndarray, texts: "_Inflated") -> bool:
    """Whether the table's rows (`ranges`, as `TableScan` read them) are the snapshot's
    queries `numbers` (ids, subscribers, texts), in order."""
    done = 0
    for count, problems, ids, id_lengths, subscribers, subscriber_lengths, text, text_lengths in ranges:
        if problems or done + count > len(numbers):
            return False
        part = numbers[done:done + count]
        done += count
        if not (_equal(held.id_bytes, held.id_offsets, part, ids, id_lengths)
                and _subscribers_equal(held, part, subscribers, subscriber_lengths)
                and _equal(texts.result(), held.text_offsets, part, text, text_lengths)):
            return False
    return done == len(numbers)


def _equal(blob: np.ndarray, offsets: np.ndarray, part: np.ndarray, joined: bytes,
           lengths: np.ndarray | None) -> bool:
    """Whether the strings `part` of (`blob`, `offsets`) are, in order, those SQLite joined
    (`joined`, with their `lengths` in bytes)."""
    starts, ends = offsets[part], offsets[part + 1]
    return (lengths is not None and np.array_equal(lengths, ends - starts)
            and _gathered(blob, starts, ends) == joined)


def _gathered(blob: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> bytes:
    """The bytes ``blob[starts[k]:ends[k]]`` of every k, joined (a run of consecutive
    strings as one slice)."""
    if not len(starts):
        return b""
    breaks = np.flatnonzero(starts[1:] != ends[:-1]) + 1
    firsts = np.concatenate(([0], breaks)).tolist()
    lasts = np.concatenate((breaks - 1, [len(starts) - 1])).tolist()
    return b"".join(blob[starts[a]:ends[b]].tobytes() for a, b in zip(firsts, lasts))


def _subscribers_equal(held: "_Held", part: np.ndarray, joined: bytes, lengths: np.ndarray | None) -> bool:
    codes = held.subscriber_codes[part] + 1  # (0: none)
    return (lengths is not None and np.array_equal(lengths, held.subscriber_lengths[codes])
            and b"".join(map(held.subscriber_names.__getitem__, codes.tolist())) == joined)


class _Held:
    """The snapshot's query columns as its file holds them (`usable` False if they are not
    all there or not well formed, or a query lacks its text)."""

    def __init__(self, arrays: dict):
        a = {name[len(PREFIX):]: array for name, array in arrays.items() if name.startswith(PREFIX)}
        self.usable = False
        wanted = ("ids", "id_offsets", "subscriber", "subscribers", "subscriber_offsets", "texts",
                  "text_offsets", "has_text")
        if not all(name in a for name in wanted) or not bool(np.all(a["has_text"])):
            return
        self.id_bytes, self.id_offsets = a["ids"], a["id_offsets"].astype(np.int64)
        self.text_offsets = a["text_offsets"].astype(np.int64)
        self.count = len(self.id_offsets) - 1
        self.subscriber_codes = a["subscriber"].astype(np.int64)
        if (len(self.text_offsets) != self.count + 1 or len(self.subscriber_codes) != self.count
                or not sections.ascending(self.id_offsets, len(self.id_bytes))
                or not sections.ascending(self.text_offsets, int(self.text_offsets[-1]))):
            return
        names = sections.read_strings(a["subscriber_offsets"], a["subscribers"], "the subscribers")
        codes = self.subscriber_codes
        if self.count and not -1 <= int(codes.min()) <= int(codes.max()) < len(names):
            return
        self.subscriber_names = [b""] + [name.encode() for name in names]  # (code -1: none)
        self.subscriber_lengths = np.array([-1] + [len(b) for b in self.subscriber_names[1:]], dtype=np.int64)
        self.compressed = a["texts"]
        self.usable = True

    def id(self, k: int) -> str:
        return self.id_bytes[self.id_offsets[k]:self.id_offsets[k + 1]].tobytes().decode()

    def numbers(self, ids: list[str]) -> np.ndarray | None:
        """The snapshot's number of each of `ids`, if each is one of its queries and they
        come in its order; else None."""
        held = sections.read_strings(self.id_offsets, self.id_bytes, "the query ids")
        number = dict(zip(held, range(self.count)))
        numbers = np.array([number.get(qid, -1) for qid in ids], dtype=np.int64)
        if len(numbers) and (numbers.min() < 0 or not bool(np.all(numbers[1:] > numbers[:-1]))):
            return None
        return numbers

    def inflating(self) -> "_Inflated":
        """The texts' bytes, inflated in a thread (zlib lets go of the GIL) while SQLite reads."""
        pending = _Inflated(self.compressed, int(self.text_offsets[-1]))
        pending.start()
        return pending


class _Inflated(threading.Thread):
    def __init__(self, compressed: np.ndarray, size: int):
        super().__init__(name="rtf-snapshot-texts", daemon=True)
        self.compressed, self.size, self.raw = compressed, size, None

    def run(self) -> None:
        with suppress(ValueError):  # (malformed: no text, so nothing compares equal)
            self.raw = inflated_texts(self.compressed, self.size)
        self.compressed = None

    def result(self) -> np.ndarray:
        self.join()
        return self.raw if self.raw is not None else np.zeros(0, dtype=np.uint8)
