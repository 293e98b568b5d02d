"""Shape id -> a multiset of integers (the slots of the branches pivoted on it), kept flat.

Finding which branches are complete (`rtf.matching.pivots.Pivots.complete`)
starts by gathering the slots pivoted on every shape a publication
satisfies: ~600 shapes at 100,000 full-text queries. Kept as one small array per shape,
that gather reads four objects a shape scattered over the heap (the shape,
its list, the array, its buffer); the cache misses made it a quarter of a
publication's time.

Here the lists of all shapes are one array (compressed sparse rows):
shape ``i``'s entries are ``flat[start[i] : start[i] + count[i]]``, and a
publication's shapes are gathered by a handful of numpy calls over their
ids, with no Python step and no object read per shape.

A change does not rebuild the rows. A removal shrinks the shape's row in
place (its last entry takes the removed one's place); an addition moves the
shape's entries to a small growable array of its own (`changed`, ``count[i]
= -1``), where later changes go; a gather joins those in C. Once the changes
since the last rebuild reach a quarter of what a rebuild reads (the ids and
the rows), the rows are rebuilt with the changed arrays (`compact`): a
registration or a removal costs O(1) amortised, and the changed arrays
never hold more than that quarter. The rows are rebuilt too once gathers
have joined about as many changed arrays as a rebuild costs. Ids are
reused by the query table, so the arrays follow the shapes alive, not the
shapes ever made.
"""

from __future__ import annotations

from array import array
from itertools import repeat

import numpy as np

from rtf.matching.structures import grown

_EMPTY = np.zeros(0, dtype=np.int32)
#: Below this many changed shapes the rows are never rebuilt (a rebuild costs its fixed
#: numpy calls; a few hundred changed lists cost a gather almost nothing).
_MIN_CHANGED = 1024
#: Up to this many shapes, `gather` cuts their rows out one by one (fewer, longer copies).
_FEW_SHAPES = 64


class ShapeSlots:
    """Per shape id, a multiset of int32 entries; many shapes' entries gathered at once."""

    __slots__ = ("start", "count", "flat", "changed", "ids", "debt", "changes", "limit")

    def __init__(self):
        #: shape id -> first entry in `flat` (meaningful while its count is >= 0); int32
        #: while `flat` has fewer than 2**31 entries
        self.start = np.zeros(16, dtype=np.int32)
        #: shape id -> its number of entries in `flat`; -1: its entries are in `changed`
        self.count = np.full(16, -1, dtype=np.int32)
        self.flat = _EMPTY
        #: shape id -> its entries, for the shapes changed since the last rebuild (never empty)
        self.changed: dict[int, array] = {}
        #: one more than the largest id made known (`reserve`)
        self.ids = 0
        #: changed lists joined by gathers since the last rebuild
        self.debt = 0
        #: entries added or removed since the last rebuild, and how many call for a rebuild
        self.changes = 0
        self.limit = _MIN_CHANGED

    def reserve(self, shape_id: int) -> None:
        """Make `shape_id` known (with no entries): any id may then be gathered."""
        if shape_id >= len(self.count):
            self.start = grown(self.start, shape_id + 1, 0)
            self.count = grown(self.count, shape_id + 1, -1)
        if shape_id >= self.ids:
            self.ids = shape_id + 1
            self._set_limit()

    def add(self, shape_id: int, entry: int) -> None:
        own = self.changed.get(shape_id)  # a shape added to since the rebuild: no numpy read
        if own is None:  # its row (maybe empty) moves out into an array of its own
            n = max(int(self.count[shape_id]), 0)
            start = int(self.start[shape_id])
            own = self.changed[shape_id] = array("i", self.flat[start:start + n].tobytes())
            self.count[shape_id] = -1
        own.append(entry)
        self.changes += 1  # (inline: this runs once per branch and shape at registration)
        if self.changes >= self.limit:
            self.compact()

    def discard(self, shape_id: int, entry: int) -> None:
        """Remove one occurrence of `entry` from the shape (nothing if it has none)."""
        n = int(self.count[shape_id])
        if n >= 0:  # in the rows: the row's last entry takes its place, the row shrinks
            start = int(self.start[shape_id])
            row = self.flat[start:start + n]
            where = np.flatnonzero(row == entry)
            if len(where):
                row[where[0]] = row[n - 1]
                self.count[shape_id] = n - 1
                self._changed()
            return
        own = self.changed.get(shape_id)
        if own is None:
            return
        try:
            own.remove(entry)
        except ValueError:
            return
        if not own:
            del self.changed[shape_id]
            self.count[shape_id] = 0
        self._changed()

    def __contains__(self, shape_id: int) -> bool:
        """The shape has an entry."""
        if shape_id >= self.ids:
            return False
        n = self.count[shape_id]
        return n > 0 or (n < 0 and shape_id in self.changed)

    def entries(self, shape_id: int) -> np.ndarray:
        """The shape's entries (in no particular order)."""
        return self.gather(np.array([shape_id], dtype=np.int64))

    def gather(self, ids: np.ndarray) -> np.ndarray:
        """The entries of every shape in `ids` (known ids, each once), in one int32 array."""
        if len(ids) <= _FEW_SHAPES:
            return self._few(ids)
        count = self.count[ids]
        extra = None
        moved = count < 0  # changed shapes, and shapes with no entries yet
        if moved.any():
            changed = self.changed
            extra = np.frombuffer(b"".join(filter(None, map(changed.get, ids[moved].tolist()))),
                                  dtype=np.int32)
            kept = ~moved
            ids, count = ids[kept], count[kept]
            if changed:
                # Ski rental: once joining changed lists has cost about a rebuild, rebuild.
                self.debt += len(moved) - len(ids)
                if self.debt >= (self.ids + 4 * len(changed)) // 2:
                    self.compact()
        rows = _rows(self.flat, self.start[ids], count)
        if extra is None or not len(extra):
            return rows
        return np.concatenate((rows, extra)) if len(rows) else extra

    def _few(self, ids: np.ndarray) -> np.ndarray:
        """`gather` for a few shapes (a selective publication satisfies ~25, some with
        thousands of entries): their rows cut out and joined as they are."""
        if not len(ids):
            return _EMPTY
        flat, changed = self.flat, self.changed
        parts = []
        for sid, start, n in zip(ids.tolist(), self.start[ids].tolist(), self.count[ids].tolist()):
            if n > 0:
                parts.append(flat[start:start + n])
            elif n < 0 and sid in changed:
                parts.append(np.frombuffer(changed[sid], dtype=np.int32))
        if len(parts) < 2:
            return parts[0] if parts else _EMPTY
        return np.concatenate(parts)

    def fill(self, ids: np.ndarray, entries: np.ndarray) -> None:
        """Lay out every row at once: ``entries[k]`` (int32) under ``ids[k]`` (known ids),
        the table holding nothing before."""
        if self.changed or len(self.flat):
            raise ValueError("fill lays out an empty ShapeSlots")
        n = self.ids
        count = np.bincount(ids, minlength=n).astype(np.int32)
        # (ids of 16 bits sort by radix, stable and linear: ~6x faster at 10M entries)
        self.flat = entries[np.argsort(ids.astype(np.uint16) if n <= 1 << 16 else ids, kind="stable")]
        self.start = np.zeros(len(self.start), dtype=np.int32 if len(self.flat) < 2**31 else np.int64)
        self.start[:n] = np.cumsum(count) - count
        self.count[:n] = count
        self._set_limit()

    def _changed(self) -> None:
        """One entry added or removed: rebuild once the changes since the last rebuild
        reach a quarter of what a rebuild reads (so each change costs O(1) amortised)."""
        self.changes += 1
        if self.changes >= self.limit:
            self.compact()

    def _set_limit(self) -> None:
        self.limit = max(_MIN_CHANGED, (self.ids + len(self.flat) + 3) // 4)

    def compact(self) -> None:
        """Rebuild the rows with every changed shape's entries (`changed` left empty)."""
        n = self.ids
        count = self.count[:n].copy()
        moved = np.flatnonzero(count < 0)
        moved_ids = moved.tolist()
        changed = self.changed
        lengths = np.fromiter(map(len, map(changed.get, moved_ids, repeat(()))), np.int64, len(moved_ids))
        kept = np.flatnonzero(count >= 0)
        old = _rows(self.flat, self.start[kept], count[kept])
        count[moved] = lengths
        start = np.cumsum(count) - count
        flat = np.empty(int(count.sum()), dtype=np.int32)
        flat[_positions(start[kept], count[kept])] = old
        flat[_positions(start[moved], lengths)] = np.frombuffer(
            b"".join(filter(None, map(changed.get, moved_ids))), dtype=np.int32)
        self.start = np.zeros(len(self.start), dtype=np.int32 if len(flat) < 2**31 else np.int64)
        self.start[:n] = start
        self.count = np.full(len(self.count), -1, dtype=np.int32)
        self.count[:n] = count
        self.flat = flat
        self.changed = {}
        self.debt = self.changes = 0
        self._set_limit()


def _positions(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The indexes ``starts[k] .. starts[k] + counts[k] - 1`` for every k, in one array."""
    total = int(counts.sum())
    if len(counts) == 1:
        return np.arange(int(starts[0]), int(starts[0]) + total)
    ends = np.cumsum(counts)
    return np.arange(total) + np.repeat(starts - (ends - counts), counts)


def _rows(flat: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``flat``'s rows at `starts` with `counts` entries, concatenated."""
    if len(counts) == 1:
        s = int(starts[0])
        return flat[s:s + int(counts[0])]
    if not len(counts):
        return _EMPTY
    return flat[_positions(starts, counts)]
