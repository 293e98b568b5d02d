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
