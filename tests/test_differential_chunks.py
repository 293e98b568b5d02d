"""Shapes found by id (`rtf.matching.hits` chunks) answer exactly as the reference:
worded shapes at several object nodes (RTFs picks a node's own by its number), chunks
of any size (small ones go into the dict at once: forced both ways here), publications
with one subject (answered by id alone) and with two (every branch reads its triples),
joins that settle the chunks, and queries removed (shape ids reused) before matching."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rtf import ALGORITHMS, Engine, Publication
from rtf.matching import hits as hits_module

WORDS = ["rio", "rioja", "games", "game", "olympic", "summer"]
EXPRS = ['"rio"', '"games"', '"rio*"', '"gam*"', '"summer games"', '("rio" ftand "games")',
         '("rio" ftor "olympic")', '("rio" ftnear(0, 2) "games")', '("games" ftand ftnot "summer")',
         '"olympic summer games"']
PREDICATES = ["<http://ex/p>", "<http://ex/q>", "?pv"]

query = st.tuples(st.sampled_from(EXPRS), st.sampled_from(PREDICATES), st.booleans()).map(
    lambda q: (f'SELECT ?s ?o2 WHERE {{ ?s {q[1]} ?o . ?s <http://ex/q> ?o2 FILTER ftcontains(?o, {q[0]}) }}'
               if q[2] else f'SELECT ?s WHERE {{ ?s {q[1]} ?o FILTER ftcontains(?o, {q[0]}) }}'))
text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)
triple = st.tuples(st.sampled_from(["<http://ex/a>", "<http://ex/b>"]),
                   st.sampled_from(["<http://ex/p>", "<http://ex/q>"]), text)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queries=st.lists(query, min_size=1, max_size=30), removed=st.sets(st.integers(0, 29), max_size=5),
       triples=st.lists(triple, min_size=1, max_size=5), one_subject=st.booleans(),
       small=st.sampled_from([0, 8]))
def test_chunked_hits_equal_the_reference(queries, removed, triples, one_subject, small):
    saved, hits_module._SMALL_CHUNK = hits_module._SMALL_CHUNK, small
    try:
        engines = {a: Engine(a) for a in ALGORITHMS}
        for engine in engines.values():
            engine.register_many((q, f"q{i}") for i, q in enumerate(queries))
            for i in sorted(removed):
                if i < len(queries):
                    engine.unregister(f"q{i}")
            engine.register_many((q, f"again{i}") for i, q in enumerate(queries[:3]))  # ids reused
        rows = [("<http://ex/a>" if one_subject else s, p, f'"{t}"') for s, p, t in triples]
        pub = Publication("http://ex/a", rows)
        expected = engines["naive"].match(pub)
        for name, engine in engines.items():
            assert engine.match(pub) == expected, name
    finally:
        hits_module._SMALL_CHUNK = saved
