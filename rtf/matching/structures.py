"""Structures: the distinct shape sets of the branches with value tests, counted once each.

A branch is complete when all its distinct shapes are satisfied and, if it
has value tests, all its conjunctions hold (`QueryTable.complete_slots`).
Counting a mark for every branch that uses a satisfied shape makes the cost
of a publication follow the branches whose *structure* holds; with value
queries that is many more than match (at 100,000 value queries, ~64,000
marks for ~350 matches), because the value tests, not the structure, are
selective.

Value queries repeat few structures (``?s a dbo:Film ; dbo:runtime ?v``
with different FILTERs): here each distinct shape set of a branch with value
tests is a *structure*, counted once for all its branches, and such a branch
is counted by its conjunctions only. It is complete when its conjunctions
all hold and its structure is complete: one lookup per candidate, and the
marks follow the structures and the tests that hold, not the queries
stored. Branches without value tests are counted by their shapes as before.

Each shape keeps the ids of the structures it is in (``TupleShape.structures``,
a `SlotList`, None when none): a shape is in use while a branch counts it
(its pivot in ``QueryTable.pivots``) or a structure holds it.
"""

from __future__ import annotations

import sys

from array import array

import numpy as np


class SlotList:
    """The branch slots (or structure ids) that use a shape: a growable int32 numpy array.

    Four bytes a slot and no Python int objects (a shape such as
    ``?x a dbo:Person`` is used by tens of thousands of branches); `array`
    is a view that the query table concatenates without a Python loop.
    Removal swaps the last slot into the hole (order does not matter).
    """

    __slots__ = ("_data", "_n")

    def __init__(self):
        self._data = np.empty(2, dtype=np.int32)
        self._n = 0

    def add(self, slot: int) -> None:
        if self._n == len(self._data):
            grown = np.empty(2 * self._n, dtype=np.int32)
            grown[: self._n] = self._data
            self._data = grown
        self._data[self._n] = slot
        self._n += 1

    def discard(self, slot: int) -> None:
        where = np.flatnonzero(self._data[: self._n] == slot)
        if len(where):
            self._n -= 1
            self._data[where[0]] = self._data[self._n]
            if 8 <= len(self._data) > 4 * self._n:  # give memory back after many removals
                self._data = self._data[: 2 * self._n].copy()

    @property
    def array(self) -> np.ndarray:
        return self._data[: self._n]

    def __len__(self) -> int:
        return self._n

    def __iter__(self):
        return iter(self.array.tolist())


def shrunk(container):
    """`container` (a dict or set), rebuilt if removals left it over 4x larger than needed.

    Python's dicts and sets never give memory back when entries are deleted;
    a continuous engine that registers and unregisters all day would keep
    the high-water mark of every table. Rebuilding costs O(n) only after
    3/4 of the entries have gone, so it is amortised over the removals.
    """
    size = sys.getsizeof(container)
    # A freshly built set takes ~32 bytes an entry, a dict ~50: over 4x that is waste.
    if size > 4096 and len(container) * (128 if isinstance(container, set) else 256) < size:
        return type(container)(container)
    return container


def sorted_unique(a: np.ndarray, kind: str | None = None) -> np.ndarray:
    """``np.unique(a)`` of integers by sorting: numpy 2's hashing ``unique`` is 3-5x slower
    on the few hundred to few thousand codes of a publication. `kind`: ``np.sort``'s
    (``"stable"``, timsort for int64, for an array of a few long ascending runs: a loaded
    table's millions of (slot, shape) pairs, sorted ~3x faster than by quicksort)."""
    a = np.sort(a, kind=kind)
    keep = np.empty(len(a), dtype=bool)
    keep[:1] = True
    np.not_equal(a[1:], a[:-1], out=keep[1:])
    return a[keep]


def grown(a: np.ndarray, size: int, empty) -> np.ndarray:
    """`a` copied into an array of at least `size` entries (twice its length at least), the
    new ones `empty`: the query table's per-slot and per-id arrays grow by doubling."""
    grown = np.full(max(size, 2 * len(a)), empty, dtype=a.dtype)
    grown[: len(a)] = a
    return grown


class Structures:
    """The structures of the branches with value tests, and each such branch's structure by slot."""

    def __init__(self):
        #: sorted shape ids -> structure id
        self.ids: dict[tuple[int, ...], int] = {}
        #: structure id -> its distinct shapes (None: free)
        self.shapes: list[tuple | None] = []
        #: structure id -> number of distinct shapes (-1: free)
        self.need = np.full(16, -1, dtype=np.int64)
        #: structure id -> number of branches in it
        self.users = np.zeros(16, dtype=np.int64)
        #: slot -> its structure id (-1: the slot's branch is counted by its shapes, or free)
        self.of_slot = np.full(64, -1, dtype=np.int32)
        self._free: array = array("l")

    def __bool__(self) -> bool:
        return bool(self.ids)

    def join(self, slot: int, shapes: set) -> None:
        """The branch at `slot` (with value tests) has the distinct `shapes`."""
        key = tuple(sorted(shape.id for shape in shapes))
        sid = self.ids.get(key)
        if sid is None:
            sid = self._free.pop() if self._free else len(self.shapes)
            if sid == len(self.shapes):
                self.shapes.append(None)
            if sid >= len(self.need):
                self.need = grown(self.need, sid + 1, -1)
                self.users = grown(self.users, sid + 1, 0)
            self.ids[key] = sid
            self.shapes[sid] = tuple(shapes)
            self.need[sid] = len(shapes)
            for shape in shapes:
                if shape.structures is None:
                    shape.structures = SlotList()
                shape.structures.add(sid)
        self.users[sid] += 1
        if slot >= len(self.of_slot):
            self.of_slot = grown(self.of_slot, slot + 1, -1)
        self.of_slot[slot] = sid

    def leave(self, slot: int) -> bool:
        """Forget the branch at `slot`; False if it was not in a structure."""
        if slot >= len(self.of_slot) or self.of_slot[slot] < 0:
            return False
        sid = int(self.of_slot[slot])
        self.of_slot[slot] = -1
        self.users[sid] -= 1
        if self.users[sid] == 0:  # the last branch of its structure: the structure goes
            shapes = self.shapes[sid]
            del self.ids[tuple(sorted(shape.id for shape in shapes))]
            self.shapes[sid] = None
            self.need[sid] = -1
            self._free.append(sid)
            for shape in shapes:
                shape.structures.discard(sid)
                if not shape.structures:
                    shape.structures = None
        return True

    def complete(self, satisfied) -> np.ndarray | None:
        """Structure id -> all its shapes are among `satisfied` (a bool array), or None if none is."""
        arrays = [shape.structures.array for shape in satisfied if shape.structures is not None]
        if not arrays:
            return None
        marks = np.concatenate(arrays) if len(arrays) > 1 else arrays[0]
        done = np.bincount(marks, minlength=len(self.need)) == self.need
        return done if done.any() else None

    def holding(self, slots: np.ndarray, done: np.ndarray) -> np.ndarray:
        """The `slots` (branches whose conjunctions all hold) whose structure is `done`."""
        return slots[done[self.of_slot[slots]]]
