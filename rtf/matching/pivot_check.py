"""A loaded table's pivots checked against its branches' shapes, a row of numbers at a time.

A saved index lists each counted branch under its pivot, with its other shapes in a row
of `others` (and the few longer ones' `extra` shapes), and keeps each shape's `uses`
(`rtf.matching.pivots`). A load checks that these are exactly the branch's shapes, and
the uses their counts: else a removal would free a shape another branch still has.

That check used to make every (slot, shape) pair of both sides an int64 and sort them
(30M pairs at 10M queries: 3.7 s of the load under cProfile). Here a branch of at most W + 1 shapes (W the
width of `others`) -- nearly every one -- is compared as a row: its pivot and others row
against its shapes laid out as a row of the same width, both sorted across by a few
column-wise minimum/maximum steps (a sorting network), repeats blanked; only the few
other branches (with extra shapes, or more shapes than the row holds) are compared as
sorted pairs. The same answer (tests/test_pivot_check.py): 0.55-0.6 s at 10M on arrays in
memory, against 1.1-1.6 s for the pairs, sorted by timsort.
"""

from __future__ import annotations

import numpy as np

from rtf.io.sections import ranges
from rtf.matching.structures import sorted_unique

#: Rows wider than this are sorted by ``np.sort`` rather than the network.
_NETWORK = 8


def pivots_hold(pivot: np.ndarray, others: np.ndarray, extra_slots: np.ndarray, extra_offsets: np.ndarray,
                extra_shapes: np.ndarray, uses: np.ndarray, query_slots: np.ndarray,
                branch_shape_offsets: np.ndarray, branch_shapes: np.ndarray, shape_count: int) -> bool:
    """Whether the saved pivots (shape ids, -1 for a slot not counted), `others` rows and
    extra shapes (shape id + 1, 0 for none) are the shapes of each counted slot's branch
    (`branch_shapes` of entry j of `query_slots`, each slot the entry of at most one
    branch), none given to a slot not counted, and `uses` each shape's counted branches.
    Every array is already checked in range (`rtf.matching.table_snapshot.restore`)."""
    slots_count, width = len(pivot), others.shape[1] + 1
    counted = pivot >= 0
    extra_at = np.repeat(extra_slots, np.diff(extra_offsets))
    if not counted[extra_slots].all() or others[~counted].any():
        return False
    # each slot's branch, where its shapes start and how many (a counted slot has one)
    starts, lengths = np.zeros(slots_count, dtype=np.int64), np.zeros(slots_count, dtype=np.int64)
    starts[query_slots], lengths[query_slots] = branch_shape_offsets[:-1], np.diff(branch_shape_offsets)
    hard = np.zeros(slots_count, dtype=bool)
    hard[extra_slots] = True
    hard |= lengths > width
    simple = counted & ~hard
    if simple.all():  # (every slot: the columns as they are, none gathered)
        def take(column):
            return column
    else:
        simple = np.flatnonzero(simple)

        def take(column):
            return column[simple]
    mine = _unique_rows([take(pivot) + 1] + [np.array(take(others[:, c]), dtype=np.int32)
                                             for c in range(width - 1)])
    starts_of, lengths_of = take(starts), take(lengths)
    last = max(len(branch_shapes) - 1, 0)
    at, theirs = np.empty_like(starts_of), []
    for c in range(width):  # (in place where it can: a fresh array of 10M is ~10 ms of page faults)
        np.minimum(np.add(starts_of, c, out=at), last, out=at)
        column = branch_shapes[at].astype(np.int32)
        column += 1
        column *= lengths_of > c
        theirs.append(column)
    theirs = _unique_rows(theirs)
    if not all(map(np.array_equal, mine, theirs)):
        return False
    found = np.bincount(np.concatenate(mine), minlength=shape_count + 1)[1:]
    hard = np.flatnonzero(hard & counted)
    if len(hard):
        held = others[hard] > 0
        listed = sorted_unique(np.concatenate((
            pairs(hard, pivot[hard], shape_count),
            pairs(np.repeat(hard, np.count_nonzero(held, axis=1)), others[hard][held] - 1, shape_count),
            pairs(extra_at, extra_shapes - 1, shape_count))))
        n = lengths[hard]
        branch = sorted_unique(pairs(np.repeat(hard, n), branch_shapes[ranges(starts[hard], n)], shape_count))
        if not np.array_equal(listed, branch):
            return False
        found = found + np.bincount(listed % (shape_count + 1), minlength=shape_count + 1)[:shape_count]
    return np.array_equal(found[:shape_count], uses) and len(found) == shape_count


def _unique_rows(columns: list[np.ndarray]) -> list[np.ndarray]:
    """The rows of `columns` (int32, each its own: changed in place) each sorted, a repeated
    number made 0 and sorted again (0s first)."""
    columns = _sorted_rows(columns)
    repeated = [np.equal(columns[c], columns[c - 1]) for c in range(1, len(columns))]
    if any(r.any() for r in repeated):
        for r, column in zip(repeated, columns[1:]):
            column[r] = 0
        columns = _sorted_rows(columns)
    return columns


def _sorted_rows(columns: list[np.ndarray]) -> list[np.ndarray]:
    """The rows of `columns` (changed in place) each sorted, as columns: odd-even
    transposition, a column pair a step, into one spare column (no array made a step)."""
    width = len(columns)
    if width > _NETWORK:
        rows = np.sort(np.stack(columns, axis=1), axis=1)
        return [rows[:, c].copy() for c in range(width)]
    columns = list(columns)
    spare = np.empty_like(columns[0]) if columns else None
    for step in range(width):
        for c in range(step % 2, width - 1, 2):
            low, high = columns[c], columns[c + 1]
            np.minimum(low, high, out=spare)
            np.maximum(low, high, out=high)
            columns[c], spare = spare, low
    return columns


def pairs(slots: np.ndarray, shapes: np.ndarray, shape_count: int) -> np.ndarray:
    """(slot, shape id) pairs as one int64 each (`slot * (shape_count + 1) + shape`)."""
    found = np.multiply(slots, shape_count + 1, dtype=np.int64)  # (no int64 copy of either made)
    found += shapes
    return found
