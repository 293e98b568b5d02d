"""`rtf.matching.shape_slots.ShapeSlots`: per shape id, a multiset of entries kept flat.

Any sequence of additions and removals, with the rows rebuilt at any time,
gives for every shape the entries a plain dict of lists holds, and `gather`
gives the concatenation of the shapes' entries (as a multiset)."""

from __future__ import annotations

import pickle
from collections import Counter

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rtf.matching import shape_slots
from rtf.matching.shape_slots import ShapeSlots

# (op, shape id, entry): add, discard (maybe absent), or rebuild the rows now.
ops = st.lists(st.tuples(st.sampled_from(["add", "add", "discard", "compact"]),
                         st.integers(0, 40), st.integers(0, 30)), max_size=120)


@settings(max_examples=300, deadline=None)
@given(ops, st.sampled_from([0, 3, 1024]), st.lists(st.integers(0, 45), max_size=20, unique=True),
       st.sampled_from([0, 64]))
def test_entries_and_gather_follow_a_plain_dict(steps, min_changed, asked, few):
    """Both ways of gathering: rows cut out one by one (few shapes) and by one index."""
    saved = shape_slots._MIN_CHANGED, shape_slots._FEW_SHAPES
    shape_slots._MIN_CHANGED, shape_slots._FEW_SHAPES = min_changed, few
    try:
        slots, model = ShapeSlots(), {}
        for op, sid, entry in steps:
            slots.reserve(sid)
            if op == "add":
                slots.add(sid, entry)
                model.setdefault(sid, []).append(entry)
            elif op == "discard":
                slots.discard(sid, entry)
                if entry in model.get(sid, []):
                    model[sid].remove(entry)
            else:
                slots.compact()
        for sid in range(slots.ids):
            assert sorted(slots.entries(sid).tolist()) == sorted(model.get(sid, []))
            assert (sid in slots) == bool(model.get(sid))
        assert all(slots.changed.values())  # never an empty changed list
        ids = [sid for sid in asked if sid < slots.ids]
        got = slots.gather(np.array(ids, dtype=np.int64))
        assert got.dtype == np.int32
        assert Counter(got.tolist()) == Counter(e for sid in ids for e in model.get(sid, []))
        copy = pickle.loads(pickle.dumps(slots))
        assert Counter(copy.gather(np.array(ids, dtype=np.int64)).tolist()) == Counter(got.tolist())
    finally:
        shape_slots._MIN_CHANGED, shape_slots._FEW_SHAPES = saved


def test_rows_are_rebuilt_as_changes_pile_up():
    """Bulk registration: the changed lists are folded into the rows as they pile up:
    the changes held apart stay under a quarter of the ids and rows (or `_MIN_CHANGED`)."""
    slots = ShapeSlots()
    for sid in range(20_000):
        slots.reserve(sid)
        slots.add(sid, sid)
        slots.add(sid, sid + 1)
        assert len(slots.changed) <= slots.changes < max(shape_slots._MIN_CHANGED,
                                                         (slots.ids + len(slots.flat)) // 4 + 1)
    assert Counter(slots.gather(np.arange(20_000)).tolist()) == Counter(
        list(range(20_000)) + list(range(1, 20_001)))
