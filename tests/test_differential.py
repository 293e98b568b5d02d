"""Every engine gives exactly the reference engine's answers (spec section 4).

Hypothesis draws small worlds -- queries with every operator, publications
over a tiny vocabulary so that matches are frequent -- and registers the
same queries in every engine. Any difference is a bug in one of them.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from rtf import ALGORITHMS, Engine, QueryError
from tests import worlds

INDEXED = [a for a in ALGORITHMS if a != "naive"]


def answers(engine: Engine, pub) -> set:
    return {(m.query_id, m.subscriber, m.solutions, m.is_ask) for m in engine.match(pub)}


def engines(taxonomy):
    return {a: Engine(a, taxonomy=taxonomy) for a in ALGORITHMS}


def register_everywhere(all_engines, texts, prefix: str = "q") -> list[str]:
    ids = []
    for i, text in enumerate(texts):
        try:
            for e in all_engines.values():
                e.register(text, f"{prefix}{i}", subscriber=f"s{i % 3}")
        except QueryError:
            continue  # e.g. over the branch cap: rejected by every engine alike
        ids.append(f"{prefix}{i}")
    return ids


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(qs=st.lists(worlds.queries(), min_size=1, max_size=6),
       pubs=st.lists(worlds.publications(), min_size=1, max_size=3))
def test_indexed_engines_equal_reference_on_random_worlds(qs, pubs):
    all_engines = engines(worlds.taxonomy())
    ids = register_everywhere(all_engines, qs)
    assume(ids)
    for pub in pubs:
        expected = answers(all_engines["naive"], pub)
        for name in INDEXED:
            assert answers(all_engines[name], pub) == expected, name


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(qs=st.lists(worlds.queries(), min_size=2, max_size=6),
       pubs=st.lists(worlds.publications(), min_size=2, max_size=4),
       removals=st.lists(st.integers(0, 5), max_size=4))
def test_engines_agree_when_queries_are_removed_between_publications(qs, pubs, removals):
    all_engines = engines(worlds.taxonomy())
    ids = register_everywhere(all_engines, qs)
    assume(ids)
    for step, pub in enumerate(pubs):
        if step < len(removals) and ids:
            victim = ids.pop(removals[step] % len(ids))
            for e in all_engines.values():
                e.unregister(victim)
        expected = answers(all_engines["naive"], pub)
        assert all(m[0] in ids for m in expected)  # a removed query never matches again
        for name in INDEXED:
            assert answers(all_engines[name], pub) == expected, name


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_no_taxonomy_means_zero_length_path_only(algorithm):
    engine = Engine(algorithm)
    engine.register(worlds.PREFIX + "ASK { ?x a/rdfs:subClassOf* ex:C4 }", "q")
    sub = worlds.Publication("http://ex.org/a", [(worlds.SUBJECTS[0], worlds.TYPE, worlds.CLASSES[0])])
    assert engine.match(sub) == []
    direct = worlds.Publication("http://ex.org/a", [(worlds.SUBJECTS[0], worlds.TYPE, worlds.CLASSES[3])])
    assert [m.query_id for m in engine.match(direct)] == ["q"]
