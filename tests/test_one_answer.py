"""`QueryTable.one_answer`: the answer code every live slot shares, kept as queries come
and go (and counted afresh for a saved index), which lets a publication's complete
slots skip the look-up of their answers. Whatever the sequence, it says what the
slots' arrays say, and the engines' matches stay the reference's (`naive`)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rtf import Engine, Publication

EX = "http://ex/"
QUERIES = [  # the answer each gets on a one-subject publication (its slot_answer's code)
    f"SELECT ?s WHERE {{ ?s <{EX}p> ?o }}",  # {s: subject}
    f"SELECT ?s WHERE {{ ?s <{EX}q> ?o . ?s <{EX}p> ?v }}",
    f"SELECT ?x WHERE {{ ?x <{EX}p> ?o }}",  # {x: subject}: another code
    f"ASK {{ ?s <{EX}q> ?o }}",  # the unit solution: another code
    f"SELECT ?s WHERE {{ {{ ?s <{EX}p> ?o }} UNION {{ ?s <{EX}q> ?o }} }}",  # two branches: no known answer
    f"SELECT ?o WHERE {{ ?s <{EX}p> ?o }}",  # its object projected: no known answer
]
PUB = Publication(EX + "a", [(f"<{EX}a>", f"<{EX}p>", '"1"'), (f"<{EX}a>", f"<{EX}q>", '"2"')])


def expected_one_answer(table) -> int:
    n = len(table.branches)
    codes = table.slot_answer[:n][table.slot_id[:n] != None]  # noqa: E711 (element-wise)
    return int(codes[0]) if len(codes) and (codes == codes[0]).all() and codes[0] >= 0 else -1


steps = st.lists(st.tuples(st.booleans(), st.integers(0, 7), st.integers(0, len(QUERIES) - 1)), max_size=25)


@settings(max_examples=60, deadline=None)
@given(steps)
def test_one_answer_follows_registrations_and_removals(sequence):
    engine, naive = Engine("rtfs"), Engine("naive")
    live: set[str] = set()
    for add, n, kind in sequence:
        qid = f"q{n}"
        if add and qid not in live:
            for e in (engine, naive):
                e.register(QUERIES[kind], qid)
            live.add(qid)
        elif not add and qid in live:
            for e in (engine, naive):
                e.unregister(qid)
            live.discard(qid)
        table = engine._index.table
        assert table.one_answer() == expected_one_answer(table)
        assert [(m.query_id, m.bindings) for m in engine.match(PUB)] == \
            [(m.query_id, m.bindings) for m in naive.match(PUB)]
    fresh = Engine.from_bytes(engine.to_bytes()) if live else None  # counted from the saved arrays
    if fresh is not None:
        table = fresh._index.table
        assert table._answer_tally is None
        assert table.one_answer() == expected_one_answer(table)
        assert [(m.query_id, m.bindings) for m in fresh.match(PUB)] == \
            [(m.query_id, m.bindings) for m in naive.match(PUB)]


def test_a_table_of_subject_stars_has_one_answer():
    engine = Engine("rtfs")
    for n in range(3):
        engine.register(QUERIES[0], f"q{n}")
    table = engine._index.table
    assert table.one_answer() == table.answer_vars.index("s")
    engine.register(QUERIES[4], "u")
    assert table.one_answer() == -1
    engine.unregister("u")
    assert table.one_answer() == table.answer_vars.index("s")
    assert np.array_equal(sorted(m.query_id for m in engine.match(PUB)), ["q0", "q1", "q2"])
