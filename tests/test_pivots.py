"""`rtf.matching.pivots.Pivots`: the complete branches, each branch seen through one shape.

Any sequence of branches placed and removed, re-pivoted at any time, with
any number of shapes per branch (past `MAX_WIDTH`, into `extra`), gives for
any set of satisfied shapes exactly the branches all of whose shapes are
satisfied -- what a plain dict of sets says -- each once; `used` says which
shapes some branch has; a pickled copy answers the same."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rtf.matching import pivots as pivots_module
from rtf.matching.pivots import Pivots

SHAPES = 30
# (op, slot, shapes): place a branch in a free slot, remove the slot's branch, or re-pivot.
ops = st.lists(st.tuples(st.sampled_from(["add", "add", "add", "remove", "repivot"]),
                         st.integers(0, 40),
                         st.lists(st.integers(0, SHAPES - 1), min_size=1, max_size=11, unique=True)),
               max_size=80)


@settings(max_examples=300, deadline=None)
@given(ops, st.lists(st.sets(st.integers(0, SHAPES - 1)), min_size=1, max_size=4),
       st.sampled_from([0, 3, 1024]))
def test_complete_branches_follow_a_plain_dict(steps, publications, min_repivot):
    saved = pivots_module._MIN_REPIVOT
    pivots_module._MIN_REPIVOT = min_repivot
    try:
        table, model = Pivots(), {}
        for sid in range(SHAPES):
            table.reserve(sid)
        for op, slot, shapes in steps:
            if op == "add" and slot not in model:
                table.add(slot, shapes)
                model[slot] = set(shapes)
            elif op == "remove" and slot in model:
                assert sorted(table.remove(slot)) == sorted(model.pop(slot))
            elif op == "repivot":
                table.repivot()
        for slot, shapes in model.items():
            assert sorted(table.shapes(slot)) == sorted(shapes)
        for sid in range(SHAPES):
            assert table.used(sid) == any(sid in shapes for shapes in model.values())
        copy = pickle.loads(pickle.dumps(table))
        for satisfied in publications:
            ids = np.array(sorted(satisfied), dtype=np.int64)
            expected = sorted(slot for slot, shapes in model.items() if shapes <= satisfied)
            for t in (table, copy, restored(table)):
                got = t.complete(ids).tolist()
                assert sorted(got) == expected and len(set(got)) == len(got)
            assert not table.mark[1:].any()  # the marks are cleared after each publication
    finally:
        pivots_module._MIN_REPIVOT = saved


def restored(table: Pivots) -> Pivots:
    """A fresh `Pivots` given `table`'s state as a saved index gives it (`Pivots.restore`)."""
    live = table.pivot >= 0
    fresh = Pivots()
    fresh.restore(table.pivot.copy(), table.others.copy(), {s: e.copy() for s, e in table.extra.items()},
                  np.frombuffer(table.uses, dtype=np.int32)[:SHAPES].copy(), live, SHAPES)
    return fresh


def test_branches_of_one_shape_are_listed_apart():
    """A branch of one shape is complete when its shape is satisfied: it is listed in
    `alone`, which no row of `others` is read for, and goes back with its removal."""
    table = Pivots()
    for sid in range(3):
        table.reserve(sid)
    table.add(0, [0])
    table.add(1, [0, 1])
    table.add(2, [2])
    assert sorted(table.alone.gather(np.arange(3)).tolist()) == [0, 2]
    assert table.rows.gather(np.arange(3)).tolist() == [1]
    assert sorted(table.complete(np.array([0, 2])).tolist()) == [0, 2]
    table.repivot()
    assert sorted(restored(table).alone.gather(np.arange(3)).tolist()) == [0, 2]
    table.remove(0)
    assert table.alone.gather(np.arange(3)).tolist() == [2]
    assert table.complete(np.array([0, 1])).tolist() == [1]


def test_a_pickle_of_an_older_rtf_answers_the_same():
    """Pickled before `alone` existed, every branch was in `rows`: unpickled, the
    branches of one shape move to `alone` and the answers do not change."""
    table = Pivots()
    for sid in range(4):
        table.reserve(sid)
    for slot, shapes in enumerate([[0], [0, 1], [2], [1, 2, 3], [3]]):
        table.add(slot, shapes)
    live = np.flatnonzero(table.pivot >= 0)
    state = {name: getattr(table, name) for name in Pivots.__slots__ if name != "alone"}
    state["rows"] = pivots_module._rebuilt(table.rows, table.pivot[live], live)  # the old layout
    old = Pivots.__new__(Pivots)
    old.__setstate__((None, state))
    assert sorted(old.alone.gather(np.arange(4)).tolist()) == [0, 2, 4]
    for satisfied in ([0], [0, 1], [1, 2, 3], [0, 1, 2, 3]):
        ids = np.array(satisfied)
        assert sorted(old.complete(ids).tolist()) == sorted(table.complete(ids).tolist())


def test_a_branch_is_pivoted_on_its_rarest_shape():
    """Placed on the shape fewest branches use; re-pivoted as uses change."""
    table = Pivots()
    for sid in range(3):
        table.reserve(sid)
    for slot in range(5):
        table.add(slot, [0])  # shape 0 is common
    table.add(5, [0, 1])
    assert table.shapes(5)[0] == 1
    for slot in range(6, 12):
        table.add(slot, [1])  # now shape 1 is the common one
    table.add(12, [1, 2])
    table.add(13, [1, 0, 2])
    assert table.shapes(13)[0] == 2
    table.repivot()
    assert table.shapes(5)[0] == 0  # 0: 7 uses, 1: 9
    assert table.shapes(13)[0] == 2
    for satisfied, expected in (({0, 1}, {0, 1, 2, 3, 4, 5, *range(6, 12)}), ({1, 2}, {*range(6, 13)}),
                                ({0, 1, 2}, set(range(14)))):
        assert set(table.complete(np.array(sorted(satisfied))).tolist()) == expected


def test_a_counted_branch_has_a_shape():
    table = Pivots()
    with pytest.raises(ValueError):
        table.add(0, [])
