"""`rtf.matching.structures.joined`: many SlotLists' slots in one array, as concatenating
each list's `array` would give (the unused room of each buffer left out)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rtf.matching import structures
from rtf.matching.structures import SlotList, joined

# Per list: slots added, then some discarded (a list may end empty, full, or with room).
ops = st.lists(st.tuples(st.lists(st.integers(0, 50), max_size=20), st.lists(st.integers(0, 50), max_size=20)),
               max_size=8)


@settings(max_examples=300, deadline=None)
@given(ops, st.sampled_from([0, 2, 64]))
def test_joined_is_the_concatenation_of_the_arrays(per_list, few):
    """Both ways of joining: the used parts concatenated (up to `_FEW_LISTS` lists) and
    the whole buffers masked (more lists; 0 forces it)."""
    lists = []
    for added, discarded in per_list:
        sl = SlotList()
        for slot in added:
            sl.add(slot)
        for slot in discarded:
            sl.discard(slot)
        lists.append(sl)
    expected = np.concatenate([sl.array for sl in lists]) if lists else np.zeros(0, dtype=np.int32)
    saved, structures._FEW_LISTS = structures._FEW_LISTS, few
    try:
        got = joined(lists)
    finally:
        structures._FEW_LISTS = saved
    assert got.tolist() == expected.tolist()
    assert got.dtype == np.int32
