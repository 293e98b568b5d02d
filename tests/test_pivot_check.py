"""`rtf.matching.pivot_check.pivots_hold`, the load's check of the saved pivots, row by row,
says exactly what comparing every (slot, shape) pair as a set says (the check it replaced,
kept here as the reference), for consistent tables and for tables with one number changed
within its range (as a re-signed file could hold)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rtf.io.sections import offsets
from rtf.matching.pivot_check import pivots_hold


def reference(pivot, others, extra_slots, eoff, eshapes, uses, qslots, boff, bshapes, shape_count) -> bool:
    counted = pivot >= 0
    if not counted[extra_slots].all():
        return False
    mine = {(s, int(pivot[s])) for s in np.flatnonzero(counted).tolist()}
    mine |= {(int(s), int(others[s, c]) - 1) for s, c in zip(*np.nonzero(others > 0))}
    mine |= {(int(s), int(e) - 1) for k, s in enumerate(extra_slots.tolist()) for e in eshapes[eoff[k]:eoff[k + 1]]}
    theirs = {(int(qslots[j]), int(x)) for j in range(len(qslots)) if counted[qslots[j]]
              for x in bshapes[boff[j]:boff[j + 1]]}
    found = np.bincount([shape for _, shape in mine], minlength=shape_count)
    return mine == theirs and np.array_equal(found, uses)


@st.composite
def tables(draw):
    shape_count, width = draw(st.integers(1, 8)), draw(st.integers(0, 3))
    slots_count = draw(st.integers(1, 12))
    branches = draw(st.lists(st.one_of(st.none(), st.tuples(st.booleans(), st.lists(
        st.integers(0, shape_count - 1), min_size=1, max_size=6))), min_size=slots_count, max_size=slots_count))
    pivot = np.full(slots_count, -1, dtype=np.int32)
    others = np.zeros((slots_count, width), dtype=np.int32)
    extras, uses = {}, np.zeros(shape_count, dtype=np.int32)
    held = [s for s, b in enumerate(branches) if b is not None]
    qslots = np.array(draw(st.permutations(held)), dtype=np.int32)
    for s in held:
        is_counted, shapes = branches[s]
        if is_counted:
            distinct = list(dict.fromkeys(shapes))
            pivot[s] = distinct[0]
            others[s, :len(distinct[1:width + 1])] = np.array(distinct[1:width + 1]) + 1
            if len(distinct) > width + 1:
                extras[s] = np.array(distinct[width + 1:], dtype=np.int32) + 1
            uses[distinct] += 1
    extra_slots = np.array(sorted(extras), dtype=np.int32)
    eoff = offsets([len(extras[s]) for s in extra_slots.tolist()])
    eshapes = np.concatenate([np.zeros(0, dtype=np.int32), *[extras[s] for s in extra_slots.tolist()]])
    bshapes = [branches[s][1] for s in qslots.tolist()]
    boff = offsets([len(b) for b in bshapes])
    bshapes = np.array([x for b in bshapes for x in b], dtype=np.int32)
    arrays = [pivot, others, extra_slots, eoff, eshapes, uses, qslots, boff, bshapes]
    if draw(st.booleans()):  # one number changed within its range
        which = draw(st.sampled_from([k for k in (0, 1, 4, 5, 8) if arrays[k].size]))
        flat = arrays[which].reshape(-1)
        low, high = {0: (-1, shape_count - 1), 1: (0, shape_count), 4: (1, shape_count),
                     5: (0, 3), 8: (0, shape_count - 1)}[which]
        flat[draw(st.integers(0, len(flat) - 1))] = draw(st.integers(low, high))
    has_branch = np.zeros(slots_count, dtype=bool)
    has_branch[qslots] = True
    return arrays + [shape_count], bool(((pivot < 0) | has_branch).all())


@settings(max_examples=200, deadline=None)
@given(tables())
def test_the_row_check_says_what_the_pair_check_says(drawn):
    arrays, restorable = drawn
    if restorable:  # (a counted slot without a branch is refused before: `table_snapshot.restore`)
        assert pivots_hold(*arrays) == reference(*arrays)
