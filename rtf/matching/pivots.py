"""Which branches a publication completes, each branch looked at through one of its shapes.

A branch is complete when a publication satisfies every one of its distinct
shapes. Counting -- every satisfied shape's branches gathered, each
branch's marks compared with its number of shapes -- costs what the
satisfied shapes' lists hold, not what completes: at a million selective
queries a DBpedia publication satisfies shapes (``?s a dbo:Person``) that
~700,000 branches use, to complete ~27,000 of them. Half of a publication's
time went to gathering and counting those marks.

Here each branch is listed under one shape only, its *pivot*: of its
shapes, the one the fewest branches use. A publication's candidates are the
branches of the pivots it satisfies (each candidate once: a branch has one
pivot), and a candidate is complete when its other shapes are satisfied
too: they are a row of `Pivots.others`, looked up all at once in a mark per
shape that the publication sets for its satisfied shapes (and clears after).
The work follows the candidates, not the branches that merely share a
common shape with the publication.

A branch of one shape has nothing to look up: it is complete when its pivot
is satisfied. Those branches are listed apart (`Pivots.alone`) and come out
as they are gathered; only the others read their row of `others`. In the
paper's mix, about half the branches are one tuple, and most of a
publication's candidates (19,900 of them at 100,000 queries, for a whole
DBpedia description): reading their rows, scattered over the slots, was
the dearest step of the look-up (~2/3 of its time).

Which shape is the rarest changes as queries come: pivots are chosen again
for every branch at once after a bulk registration (`repivot`, from
`QueryTable.compact`), and when as many branches were placed since the last
choice as there are (so a table filled one query at a time is re-pivoted
O(log n) times, at O(1) amortised a registration).
"""

from __future__ import annotations

from array import array

import numpy as np

from rtf.matching.shape_slots import ShapeSlots
from rtf.matching.structures import grown

#: Other shapes kept in a branch's row of `others` at most (the row width grows to the
#: most a branch has, up to this); a branch with more keeps the rest in `Pivots.extra`.
MAX_WIDTH = 7
#: Placements before the first re-pivoting of a table filled one query at a time.
_MIN_REPIVOT = 1024


class Pivots:
    """Slot -> its branch's pivot and other shapes; shape id -> the slots it pivots (see the module)."""

    __slots__ = ("rows", "alone", "pivot", "others", "extra", "has_extra", "uses", "mark", "live", "placed")

    def __init__(self) -> None:
        #: shape id -> the slots whose pivot it is, of branches with other shapes
        self.rows = ShapeSlots()
        #: shape id -> the slots of the branches that have only this shape
        self.alone = ShapeSlots()
        #: slot -> its pivot's shape id (-1: no counted branch in the slot)
        self.pivot = np.full(16, -1, dtype=np.int32)
        #: slot -> its branch's other shapes, as shape id + 1 (0: none), at most MAX_WIDTH
        self.others = np.zeros((16, 0), dtype=np.int32)
        #: slot -> its other shapes beyond `others`' row (shape id + 1), for the few branches
        #: that have more than MAX_WIDTH + 1 shapes; `has_extra` marks those slots
        self.extra: dict[int, np.ndarray] = {}
        self.has_extra = np.zeros(16, dtype=bool)
        #: shape id -> the counted branches that have the shape
        self.uses = array("i")
        #: shape id + 1 -> satisfied by the publication being matched; [0] (no shape) always
        self.mark = np.ones(1, dtype=bool)
        self.live = 0  # counted branches
        self.placed = 0  # branches placed since the pivots were last chosen for all

    def __setstate__(self, state) -> None:
        """Unpickle; a `Pivots` pickled by an older rtf has every branch in `rows`: its
        branches of one shape are moved to `alone`."""
        slots = state[1] if isinstance(state, tuple) else state
        for name, value in slots.items():
            setattr(self, name, value)
        if "alone" not in slots:
            self._lay_out(np.flatnonzero(self.pivot >= 0))

    def reserve(self, shape_id: int) -> None:
        """Make `shape_id` known (with no branch)."""
        self.rows.reserve(shape_id)
        self.alone.reserve(shape_id)
        if shape_id >= len(self.uses):  # by doubling, as the table's other arrays
            self.uses.frombytes(bytes(4 * (max(shape_id + 1, 2 * len(self.uses)) - len(self.uses))))
        if shape_id + 1 >= len(self.mark):
            self.mark = grown(self.mark, shape_id + 2, False)

    def add(self, slot: int, shape_ids: list[int]) -> None:
        """Count the branch in `slot`, whose distinct shapes are `shape_ids` (known, at least one)."""
        if not shape_ids:
            raise ValueError("a counted branch has at least one shape")
        uses = self.uses
        for sid in shape_ids:
            uses[sid] += 1
        pivot = min(shape_ids, key=uses.__getitem__)
        rest = [sid + 1 for sid in shape_ids if sid != pivot]
        if slot >= len(self.pivot):
            self.pivot = grown(self.pivot, slot + 1, -1)
            self.has_extra = grown(self.has_extra, slot + 1, False)
            self._widen(self.others.shape[1], len(self.pivot))
        width = self.others.shape[1]
        if len(rest) > width and width < MAX_WIDTH:
            width = min(len(rest), MAX_WIDTH)
            self._widen(width, len(self.pivot))
        if len(rest) > width:
            self.extra[slot] = np.array(rest[width:], dtype=np.int32)
            self.has_extra[slot] = True
            rest = rest[:width]
        if rest:
            self.others[slot, :len(rest)] = rest
        self.pivot[slot] = pivot
        (self.rows if rest else self.alone).add(pivot, slot)
        self.live += 1
        self.placed += 1
        if self.placed >= max(_MIN_REPIVOT, self.live):
            self.repivot()

    def _widen(self, width: int, slots: int) -> None:
        """`others` with `width` columns and room for `slots` slots (new cells 0)."""
        old = self.others
        if old.shape == (slots, width):
            return
        others = np.zeros((slots, width), dtype=np.int32)
        others[:old.shape[0], :old.shape[1]] = old
        self.others = others

    def shapes(self, slot: int) -> list[int]:
        """The distinct shape ids of the branch counted in `slot` (its pivot first)."""
        row = self.others[slot]
        found = [int(self.pivot[slot]), *(row[row > 0] - 1).tolist()]
        if self.has_extra[slot]:
            found += (self.extra[slot] - 1).tolist()
        return found

    def remove(self, slot: int) -> list[int]:
        """Stop counting the branch in `slot`; return its shape ids (see `used`)."""
        shape_ids = self.shapes(slot)
        uses = self.uses
        for sid in shape_ids:
            uses[sid] -= 1
        (self.rows if len(shape_ids) > 1 else self.alone).discard(shape_ids[0], slot)
        self.pivot[slot] = -1
        self.others[slot] = 0
        if self.has_extra[slot]:
            del self.extra[slot]
            self.has_extra[slot] = False
        self.live -= 1
        return shape_ids

    def used(self, shape_id: int) -> bool:
        """Whether some counted branch has the shape."""
        return shape_id < len(self.uses) and self.uses[shape_id] > 0

    def complete(self, shape_ids: np.ndarray) -> np.ndarray:
        """The slots of the counted branches all of whose shapes are among `shape_ids`
        (satisfied shapes, each once), in no particular order, each once."""
        alone = self.alone.gather(shape_ids)
        candidates = self.rows.gather(shape_ids)
        if not len(candidates):
            return alone
        mark = self.mark
        at = shape_ids + 1
        mark[at] = True
        try:
            # (np.take and a column at a time: ~2.6x faster than fancy indexing and .all(axis=1))
            marked = mark[np.take(self.others, candidates, axis=0)]
            holds = marked[:, 0].copy()
            for column in range(1, marked.shape[1]):
                holds &= marked[:, column]
            if self.extra:
                for i in np.flatnonzero(self.has_extra[candidates] & holds).tolist():
                    holds[i] = mark[self.extra[int(candidates[i])]].all()
        finally:
            mark[at] = False
        return np.concatenate((alone, candidates[holds])) if len(alone) else candidates[holds]

    def restore(self, pivot: np.ndarray, others: np.ndarray, extra: dict[int, np.ndarray], uses: np.ndarray,
                live: np.ndarray, shape_count: int) -> None:
        """Take the state of a saved index (`rtf.matching.table_snapshot`, checked in range
        there): each slot's `pivot` and `others` row, the `extra` shapes of the slots that
        have more, each shape's `uses`; `live` marks the slots counted."""
        slots_count = len(live)
        self.pivot = grown(pivot.copy(), max(slots_count, 16), -1)
        self.others = np.zeros((len(self.pivot), others.shape[1]), dtype=np.int32)
        self.others[:slots_count] = others
        self.has_extra = np.zeros(len(self.pivot), dtype=bool)
        self.extra = extra
        self.has_extra[list(extra)] = True
        self.uses = array("i", uses.astype(np.int32).tobytes()) if shape_count else array("i")
        self.mark = np.zeros(shape_count + 2, dtype=bool)
        self.mark[0] = True
        self.live, self.placed = int(np.count_nonzero(live)), 0
        self.rows.reserve(max(shape_count - 1, 0))
        self._lay_out(np.flatnonzero(live))

    def repivot(self) -> None:
        """Choose every counted branch's pivot again: its shape that the fewest branches use
        (among its pivot and the shapes of its `others` row), and rebuild the rows."""
        self.placed = 0
        slots = np.flatnonzero(self.pivot >= 0)
        if not len(slots):
            self._lay_out(slots)
            return
        full = np.concatenate((self.pivot[slots, None] + 1, self.others[slots]), axis=1)
        if full.shape[1] > 1:
            uses = np.frombuffer(self.uses, dtype=np.int32)
            cost = np.concatenate(([np.iinfo(np.int32).max], uses))[full]  # no shape: never chosen
            best = cost.argmin(axis=1)  # the first of the rarest: the pivot where it ties
            moved = np.flatnonzero(best)
            if len(moved):
                rows, cols = moved, best[moved]
                chosen = full[rows, cols]
                full[rows, cols] = full[rows, 0]
                full[rows, 0] = chosen
                self.pivot[slots] = full[:, 0] - 1
                self.others[slots] = full[:, 1:]
        self._lay_out(slots)

    def _lay_out(self, slots: np.ndarray) -> None:
        """`rows` and `alone` made anew for the counted `slots` (ascending), by their pivots."""
        # (a branch with `extra` shapes has a full row of `others`: not alone)
        alone = ~self.others[slots].any(axis=1) if self.others.shape[1] else np.ones(len(slots), dtype=bool)
        self.alone = _rebuilt(self.rows, self.pivot[slots[alone]], slots[alone])
        self.rows = _rebuilt(self.rows, self.pivot[slots[~alone]], slots[~alone])


def _rebuilt(rows: ShapeSlots, shape_ids: np.ndarray, entries: np.ndarray) -> ShapeSlots:
    """A `ShapeSlots` with the ids `rows` knows, holding ``entries[k]`` for ``shape_ids[k]``."""
    fresh = ShapeSlots()
    if rows.ids:
        fresh.reserve(rows.ids - 1)
    fresh.fill(shape_ids, entries.astype(np.int32))
    return fresh
