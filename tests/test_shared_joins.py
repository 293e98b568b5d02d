"""Joins shared by the branches of one structure (issue 43).

Queries that join the same shapes on the same variables -- chains ``?x p ?y . ?y q ?v``,
stars whose FILTER compares two of their variables, multi-valued stars with a ``!=``
-- differ only in their FILTERs and projections. The indexed engines join such a
structure once per publication (`rtf.matching.solutions.SharedJoin`) and answer once
per (join, residual filters, projection); these tests register many queries of few
structures in one engine, so that they do share, with FILTERs and projections that
tell them apart, and check every engine against the reference engine.
"""

from __future__ import annotations

from unittest.mock import patch

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rtf import ALGORITHMS, Engine
from rtf.io.publication import Publication
from rtf.matching import join_groups
from tests.test_differential import register_everywhere
from tests.worlds import CLASSES, EX, PREFIX, SUBJECTS, TYPE, XSD

INDEXED = [a for a in ALGORITHMS if a != "naive"]
PREDICATES = [f"<{EX}{n}>" for n in ("p", "q")]


def _int(i: int) -> str:
    return f'"{i}"^^<{XSD}integer>'


objects = st.one_of(st.integers(0, 3).map(_int), st.sampled_from(SUBJECTS[1:] + CLASSES[:2]))


#: Values of more kinds, so that a publication's join can pass 64 rows (`JoinGroups.answers`
#: keeps a join of at most 64 rows in one machine word, and answers wider ones one by one).
many_objects = st.one_of(st.integers(0, 14).map(_int), st.sampled_from(SUBJECTS[1:] + CLASSES[:2]))


@st.composite
def publications(draw, values=objects, most: int = 3) -> Publication:
    """A resource, the resources it names and their values: chains, several values each."""
    triples = []
    for s in SUBJECTS:
        if draw(st.booleans()):
            triples.append((s, TYPE, draw(st.sampled_from(CLASSES[:2]))))
        for p in PREDICATES:
            for o in draw(st.sets(values, max_size=most)):
                triples.append((s, p, o))
    if not triples:
        triples.append((SUBJECTS[0], PREDICATES[0], SUBJECTS[1]))
    return Publication(SUBJECTS[0][1:-1], triples)


#: The few structures (so that many queries share each), with the variables they bind.
STRUCTURES = [
    ("?x ex:p ?y . ?y ex:q ?v", ["?x", "?y", "?v"]),                    # a chain
    ("?x ex:p ?y . ?y ex:q ?v . ?y a ex:C1", ["?x", "?y", "?v"]),       # a chain with a class
    ("?x ex:p ?v0 . ?x ex:q ?v1", ["?x", "?v0", "?v1"]),                # two values of one star
    ("?x a ex:C1 . ?x ex:p ?o", ["?x", "?o"]),                          # a multi-valued star
    ("?x ex:p ?y . ?y ex:q ?v . ?x ex:q ?w", ["?x", "?y", "?v", "?w"]),  # a chain and a value
]
FILTERS = ["?{a} != ?{b}", "?{a} < ?{b}", "str(?{a}) = str(?{b})", "?{a} != ex:a", "?{a} != ex:C1",
           "isLiteral(?{a})", "?{a} <= 1", "sameTerm(?{a}, ?{b}) || ?{a} = 2"]


@st.composite
def shared_structure_queries(draw) -> str:
    pattern, names = draw(st.sampled_from(STRUCTURES))
    projected = draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
    filters = []
    for _ in range(draw(st.integers(0, 2))):
        a, b = draw(st.sampled_from(names)), draw(st.sampled_from(names))
        filters.append("FILTER(" + draw(st.sampled_from(FILTERS)).format(a=a[1:], b=b[1:]) + ")")
    distinct = draw(st.sampled_from(["", "DISTINCT "]))
    return (PREFIX + f"SELECT {distinct}{' '.join(projected)} WHERE {{ {pattern} "
            + " ".join(filters) + " }")


def answers(engine: Engine, pub) -> set:
    return {(m.query_id, m.subscriber, m.solutions) for m in engine.match(pub)}


def assert_reference(engines: dict, pub) -> None:
    """Every engine gives the reference's answers, its joined branches answered one by one
    and set-at-a-time (`JoinGroups.answers` from any number of codes)."""
    expected = answers(engines["naive"], pub)
    for vector_codes in (0, 10**9):
        with patch.object(join_groups, "VECTOR_CODES", [vector_codes]):
            for name in INDEXED:
                assert answers(engines[name], pub) == expected, (name, vector_codes)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(qs=st.lists(shared_structure_queries(), min_size=2, max_size=12),
       pubs=st.lists(publications(), min_size=1, max_size=3), limit=st.sampled_from([None, 1, 2]))
def test_queries_sharing_a_join_equal_the_reference(qs, pubs, limit):
    engines = {a: Engine(a, max_solutions=limit) if limit else Engine(a) for a in ALGORITHMS}
    register_everywhere(engines, qs)
    for pub in pubs:
        if limit is None:
            assert_reference(engines, pub)
            continue
        expected = answers(engines["naive"], pub)
        for name, vector_codes in ((n, v) for n in INDEXED for v in (0, 10**9)):
            with patch.object(join_groups, "VECTOR_CODES", [vector_codes]):
                got = answers(engines[name], pub)  # (a cut query keeps `limit` of its solutions, any)
            assert {q for q, _, _ in got} == {q for q, _, _ in expected}, name
            assert all(len(s) <= limit for _, _, s in got), name


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(qs=st.lists(shared_structure_queries(), min_size=2, max_size=12),
       pubs=st.lists(publications(many_objects, 12), min_size=1, max_size=2))
def test_joins_of_more_rows_than_a_word_equal_the_reference(qs, pubs):
    # Joins of up to 12 x 12 rows: past 64, a join's branches are answered one by one
    # (`PublicationSolver.planned`), below it by machine-word masks; both give the reference's.
    engines = {a: Engine(a) for a in ALGORITHMS}
    register_everywhere(engines, qs)
    for pub in pubs:
        assert_reference(engines, pub)


@pytest.mark.parametrize("algorithm", INDEXED)
@pytest.mark.parametrize("values", [3, 31, 32, 33, 70])
def test_masks_of_one_join_keep_each_querys_class_filter_and_projection(algorithm, values):
    # One star of `values` x 2 rows (in one word of masks, 64 rows exactly, or past it), filtered by a class on
    # a joined variable, a FILTER on one variable, one between two, or none; two queries of
    # the same filters keep the same rows, and a third table extends the join of the first two.
    a, b = SUBJECTS[0], SUBJECTS[1]
    triples = [(a, PREDICATES[0], _int(i)) for i in range(values)] + [
        (a, PREDICATES[1], _int(1)), (a, PREDICATES[1], b), (b, TYPE, CLASSES[0]), (b, PREDICATES[1], _int(2))]
    pub = Publication(a[1:-1], triples)
    base = PREDICATES[0] + " ?v0 . ?x " + PREDICATES[1] + " ?v1 "
    texts = {
        "all": "SELECT ?x ?v0 ?v1 WHERE { ?x " + base + "}",
        "low": "SELECT ?x ?v0 ?v1 WHERE { ?x " + base + "FILTER(?v0 < 2) }",
        "less": "SELECT ?x ?v0 WHERE { ?x " + base + "FILTER(?v0 < ?v1) }",
        "less2": "SELECT ?x ?v0 WHERE { ?x " + base + "FILTER(?v0 < ?v1) }",
        "typed": "SELECT ?v0 ?v1 WHERE { ?x " + base + ". ?v1 a " + CLASSES[0] + " }",
        "chain": "SELECT ?v0 ?w WHERE { ?x " + base + ". ?v1 " + PREDICATES[1] + " ?w }",
        "none": "SELECT ?x WHERE { ?x " + base + ". ?v1 a " + CLASSES[1] + " }",
    }
    one, two = _int(1), _int(2)
    every = {(("x", a), ("v0", _int(i)), ("v1", v)) for i in range(values) for v in (one, b)}
    expected = {
        "all": every,
        "low": {s for s in every if s[1][1] in (_int(0), one)},
        "less": {(("x", a), ("v0", _int(0)))},
        "less2": {(("x", a), ("v0", _int(0)))},
        "typed": {(("v0", _int(i)), ("v1", b)) for i in range(values)},
        "chain": {(("v0", _int(i)), ("w", two)) for i in range(values)},
    }
    for name, vector_codes in ((algorithm, 0), (algorithm, 10**9), ("naive", 0)):
        e = Engine(name)
        ids = {key: e.register(text) for key, text in texts.items()}
        with patch.object(join_groups, "VECTOR_CODES", [vector_codes]):
            found = {m.query_id: m.solutions for m in e.match(pub)}
        assert {key: found[q] for key, q in ids.items() if q in found} == expected, (name, vector_codes)


_LOADED = """
import pickle, sys
from rtf.io.publication import Publication
from rtf.matching import join_groups
engine, pub, text = pickle.load(open(sys.argv[1], "rb"))
engine.register(text, "q1")
print(sorted((m.query_id, sorted(m.solutions)) for m in engine.match(pub)))
"""


@pytest.mark.parametrize("algorithm", INDEXED)
def test_an_engine_pickled_after_matching_answers_as_before(algorithm, tmp_path):
    # The answer plans' numbers are one process's: an engine pickled after matching (a
    # saved index, Spark) and loaded in another process makes its codes again, so that
    # the plans of queries registered after loading never share a number with loaded ones.
    import pickle
    import subprocess
    import sys

    a, b, c = SUBJECTS
    pub = Publication(a[1:-1], [(a, PREDICATES[0], b), (b, PREDICATES[1], _int(1)),
                                (a, PREDICATES[1], c), (c, PREDICATES[0], _int(2))])
    texts = [PREFIX + "SELECT ?x ?v WHERE { ?x ex:p ?y . ?y ex:q ?v }",
             PREFIX + "SELECT ?x ?v WHERE { ?x ex:q ?y . ?y ex:p ?v }"]
    engine, naive = Engine(algorithm), Engine("naive")
    for e in (engine, naive):
        e.register(texts[0], "q0")
    assert answers(engine, pub) == answers(naive, pub)
    (tmp_path / "engine.pickle").write_bytes(pickle.dumps((engine, pub, texts[1])))
    naive.register(texts[1], "q1")
    expected = sorted((m.query_id, sorted(m.solutions)) for m in naive.match(pub))
    assert len(expected) == 2
    run = subprocess.run([sys.executable, "-c", _LOADED, str(tmp_path / "engine.pickle")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == str(expected)


@pytest.mark.parametrize("algorithm", INDEXED)
def test_one_join_keeps_each_querys_filter_and_projection(algorithm):
    # Three queries of one chain: one join, three answers.
    e = Engine(algorithm)
    base = PREFIX + "SELECT {} WHERE {{ ?x ex:p ?y . ?y ex:q ?v {} }}"
    every = e.register(base.format("?x ?v", ""))
    low = e.register(base.format("?x ?v", "FILTER(?v <= 1)"))
    only_y = e.register(base.format("?y", ""))
    a, b, c = SUBJECTS
    pub = Publication(a[1:-1], [(a, PREDICATES[0], b), (a, PREDICATES[0], c),
                                (b, PREDICATES[1], _int(1)), (c, PREDICATES[1], _int(3))])
    found = {m.query_id: m.solutions for m in e.match(pub)}
    assert found[every] == {(("x", a), ("v", _int(1))), (("x", a), ("v", _int(3)))}
    assert found[low] == {(("x", a), ("v", _int(1)))}
    assert found[only_y] == {(("y", b),), (("y", c),)}


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(qs=st.lists(shared_structure_queries(), min_size=2, max_size=10),
       later=st.lists(shared_structure_queries(), min_size=1, max_size=4),
       removed=st.sets(st.integers(0, 9)), pubs=st.lists(publications(), min_size=2, max_size=3))
def test_groups_follow_queries_removed_and_added(qs, later, removed, pubs):
    # A code leaves with its last branch and a freed slot or code is taken again by another
    # structure: answers stay the reference's before and after.
    engines = {a: Engine(a) for a in ALGORITHMS}
    ids = register_everywhere(engines, qs)
    assert_reference(engines, pubs[0])
    for k in sorted(removed):
        if f"q{k}" in ids:
            for e in engines.values():
                e.unregister(f"q{k}")
    register_everywhere(engines, later, prefix="r")
    for pub in pubs[1:]:
        assert_reference(engines, pub)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_a_join_cut_by_the_solution_cap_is_joined_further_when_its_rows_fail_the_filters(algorithm):
    # max_solutions=1 caps the join at a few rows; of 61 x 61 (?a, ?b) rows one passes
    # FILTER(?a = ?b): the query matches, whichever rows the cut kept (it used to be
    # dropped when they all failed, depending on the order of a set).
    a = SUBJECTS[0]
    triples = [(a, f"<{EX}p>", _int(i)) for i in range(1, 61)] + [(a, f"<{EX}q>", _int(i)) for i in range(61, 121)]
    triples += [(a, f"<{EX}p>", _int(999)), (a, f"<{EX}q>", _int(999))]
    pub = Publication(a[1:-1], triples)
    text = PREFIX + "SELECT ?x ?a WHERE { ?x ex:p ?a . ?x ex:q ?b FILTER(?a = ?b) }"
    optional = PREFIX + "SELECT ?x ?a WHERE { ?x ex:p ?a . ?x ex:q ?b FILTER(?a = ?b) OPTIONAL { ?x ex:r ?c } }"
    for max_solutions in (1, 2):
        e = Engine(algorithm, max_solutions=max_solutions)
        q, o = e.register(text), e.register(optional)
        found = {m.query_id: m.solutions for m in e.match(pub)}
        expected = frozenset({(("x", a), ("a", _int(999)))})
        assert found == {q: expected, o: expected}
