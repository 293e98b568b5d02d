"""`rtf.matching.hits.Hits`: shapes held as dict entries and as chunks of ids (small
chunks put in the dict at once) read as one mapping shape -> triples (`settle`, in no
particular order of triples), and counted by id each once (`shape_ids`)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rtf.matching.hits import Hits


class Shape:
    def __init__(self, id):
        self.id = id

    def __repr__(self) -> str:
        return f"Shape({self.id})"


class Table:
    def __init__(self, n):
        self.shape_at = np.array([Shape(i) for i in range(n)] + [None], dtype=object)[:n]

    def shapes_of(self, ids) -> list:  # (as `QueryTable.shapes_of` of a table with every shape made)
        return self.shape_at[ids].tolist()


N = 12
# The dict part: some shapes, each with triples; the chunks: sets of other shapes, one triple each.
parts = st.tuples(st.dictionaries(st.integers(0, N - 1), st.lists(st.integers(0, 5), min_size=1, max_size=3),
                                  max_size=5),
                  st.lists(st.tuples(st.sets(st.integers(0, N - 1), max_size=N), st.integers(0, 5)), max_size=4))


@settings(max_examples=300, deadline=None)
@given(parts)
def test_settle_and_shape_ids_read_both_parts_as_one_mapping(part):
    keyed, chunks = part
    table = Table(N)
    hits = Hits(table)
    expected: dict = {}
    for sid, triples in keyed.items():
        hits[table.shape_at[sid]] = [("s", "p", str(t)) for t in triples]
        expected[sid] = [("s", "p", str(t)) for t in triples]
    for ids, t in chunks:
        ids = sorted(ids)
        hits.add_chunk(np.array(ids, dtype=np.int64), ("s", "p", str(t)))
        for sid in ids:
            expected.setdefault(sid, []).append(("s", "p", str(t)))
    assert bool(hits) == bool(expected)
    assert sorted(hits.shape_ids().tolist()) == sorted(expected)  # each once
    hits.settle()
    assert not hits.chunks
    assert {shape.id: sorted(found) for shape, found in hits.items()} == {k: sorted(v) for k, v in expected.items()}
    assert all(shape is table.shape_at[shape.id] for shape in hits)
