"""`rtf.matching.id_order.IdOrder`: slots put in query-id order, by string sort until the
ids are ranked, by rank after -- an argsort when answers go beside them, else their ranks
sorted (few slots) or flagged (many) and read back as slots. Every way gives the order
of the ids themselves, after removals too (a freed slot keeps no rank that matters)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rtf.matching.id_order import IdOrder

ids = st.lists(st.text(alphabet="aZq1é ", min_size=1, max_size=4), min_size=1, max_size=60, unique=True)


@settings(max_examples=200, deadline=None)
@given(ids, st.data())
def test_slots_come_out_in_id_order_every_way(query_ids, data):
    slot_id = np.empty(len(query_ids) + 5, dtype=object)  # a few free slots (None)
    slots_of = data.draw(st.permutations(range(len(slot_id))))[:len(query_ids)]
    for slot, qid in zip(slots_of, query_ids):
        slot_id[slot] = qid
    order = IdOrder()
    live = np.array(sorted(slots_of), dtype=np.int64)
    order.ordered(slot_id, live, len(query_ids))  # a sort as long as the table: ranked after
    assert order.ranks is not None
    removed = data.draw(st.sets(st.sampled_from(live.tolist())))  # removals keep the ranks
    for slot in removed:
        slot_id[slot] = None
    left = [s for s in live.tolist() if s not in removed]
    everyone = sorted(left, key=lambda s: slot_id[s])  # (flagged when many are left)
    assert order.ordered(slot_id, np.array(left[::-1], dtype=np.int64), len(left)).tolist() == everyone
    for _ in range(3):
        picked = data.draw(st.lists(st.sampled_from(left), unique=True) if left else st.just([]))
        slots = np.array(picked, dtype=np.int64)
        expected = sorted(picked, key=lambda s: slot_id[s])
        assert order.ordered(slot_id, slots, len(left)).tolist() == expected  # sorted or flagged
        assert slots[order.order(slot_id, slots, len(left))].tolist() == expected  # argsort


def test_a_pickle_of_an_older_rtf_is_ranked_again():
    slot_id = np.array(["b", None, "a", "c"], dtype=object)
    order = IdOrder()
    order.ordered(slot_id, np.array([0, 2, 3]), 3)
    old = IdOrder.__new__(IdOrder)
    old.__setstate__((None, {"ranks": order.ranks, "debt": 0}))  # (before slot_of_rank)
    assert old.ranks is None
    assert old.ordered(slot_id, np.array([3, 0, 2]), 3).tolist() == [2, 0, 3]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.text(alphabet="aZq1é ", min_size=1, max_size=4), st.integers(1, 3)),
                min_size=1, max_size=24, unique_by=lambda t: t[0]), st.data())
def test_a_loaded_table_is_ranked_as_ranking_its_slots_ids_would(queries, data):
    """A load ranks its slots from the order its id check sorted the ids in
    (`IdOrder.ranked`): the ranks `rank` makes from the slots' ids, gaps left by removals,
    several slots a query (one branch each), slots given again out of order, all alike."""
    from rtf import Engine
    from rtf.matching.id_order import _ranks

    def text(k: int, branches: int) -> str:
        words = " || ".join(f'ftcontains(?o, "w{k % 3}{b}")' for b in range(branches))
        return f"SELECT ?s WHERE {{ ?s <http://ex/p{k % 2}> ?o FILTER ({words}) }}"

    engine = Engine("rtfs")
    for k, (qid, branches) in enumerate(queries):
        engine.register(text(k, branches), qid)
    removed = data.draw(st.sets(st.sampled_from([qid for qid, _ in queries])))
    for qid in removed:
        engine.unregister(qid)
    for k, (qid, branches) in enumerate(queries):  # (again, into freed slots: maybe out of order)
        if qid in removed and data.draw(st.booleans()):
            engine.register(text(k + 1, 4 - branches), qid)
    table = Engine.from_bytes(engine.to_bytes())._index.table

    def held(slot_id) -> dict:
        return {s: slot_id[s] for s in np.flatnonzero(slot_id != None).tolist()}  # noqa: E711

    assert held(table.slot_id) == held(engine._index.table.slot_id)  # (each query's slots, as saved)
    ranks, slot_of_rank = _ranks(table.slot_id)
    assert np.array_equal(table.id_order.ranks, ranks) and np.array_equal(table.id_order.slot_of_rank, slot_of_rank)


def test_a_loaded_table_with_gaps_puts_each_id_in_its_own_slot():
    from rtf import Engine

    engine = Engine("rtfs")
    for k in range(6):
        engine.register(f'SELECT ?s WHERE {{ ?s <http://ex/p> ?o FILTER ftcontains(?o, "w{k}") }}', f"q{5 - k}")
    engine.unregister("q4")
    engine.unregister("q2")  # (one slot a query, slots 1 and 3 free: not slot k for query k)
    table = Engine.from_bytes(engine.to_bytes())._index.table
    assert table.slot_id[:6].tolist() == ["q5", None, "q3", None, "q1", "q0"]
    assert table.id_order.slot_of_rank.tolist() == [5, 4, 2, 0]
