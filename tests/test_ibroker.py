"""The iBroker baseline answers exactly as RTFm does, on hand-made queries.

Queries are built as `rtf.query.model.Query` values (patterns, filters and their
decomposition), not parsed, so these tests do not depend on the parser.
Every test registers the same queries in an iBroker and an RTFm index and
checks that both return the same solutions, and that these are the
expected ones.
"""

from __future__ import annotations

import pytest

from rtf.query.decompose import decompose
from rtf.ibroker_baseline import IBrokerIndex, make_ibroker_index
from rtf.query.model import (Compare, FTAnd, FTNear, FTNot, FTOr, FtContains, Or, Query, TriplePattern)
from rtf.query.terms import IRI, TYPE_PATH, TYPE_PATH_KEY, WILDCARD, Literal, Variable
from rtf.query.text import parse_ft_string
from rtf.trieforest import make_rtf_index

EX = "http://ex/"


def iri(name: str) -> IRI:
    return IRI(EX + name)


def k(name: str) -> str:
    """Key of ex:name in a publication."""
    return f"<{EX}{name}>"


def lit(text: str) -> str:
    return Literal(text).key


V = Variable
TITLE, BODY, TYPE, KNOWS = iri("title"), iri("body"), iri("type"), iri("knows")


def ft(s: str):
    return parse_ft_string(s)


def query(*patterns, filters=(), select=None, form="SELECT") -> Query:
    pats = tuple(TriplePattern(*p) for p in patterns)
    if select is None:
        names = []
        for p in pats:
            for t in p.terms:
                if isinstance(t, Variable) and t.name not in names:
                    names.append(t.name)
        select = names
    filters = tuple(filters)
    return Query(form, tuple(select) if form == "SELECT" else (), False, pats, filters,
                 decompose(pats, filters))


def engines(**queries):
    ibroker, rtfm = make_ibroker_index(), make_rtf_index("rtfm")
    for qid, q in queries.items():
        ibroker.add(qid, q)
        rtfm.add(qid, q)
    return ibroker, rtfm


def answers(engs, triples, virtual=()):
    """Solutions of both engines, as {query id: set of {var: term} items}; they must agree."""
    ibroker, rtfm = engs
    got, cut = ibroker.solutions(list(triples), list(virtual), 10_000)
    assert (got, cut) == rtfm.solutions(list(triples), list(virtual), 10_000)
    return {qid: {frozenset(sol) for sol in sols} for qid, sols in got.items()}


def sols(*dicts):
    return {frozenset(d.items()) for d in dicts}


# ------------------------------------------------------------------ structure


def test_constant_subject_and_object_must_equal_the_triple():
    engs = engines(q=query((iri("a"), TYPE, iri("Article")), select=()))
    assert answers(engs, [(k("a"), k("type"), k("Article"))]) == {"q": {frozenset()}}
    assert answers(engs, [(k("b"), k("type"), k("Article"))]) == {}
    assert answers(engs, [(k("a"), k("type"), k("Person"))]) == {}


def test_a_chain_matches_only_when_every_tuple_finds_a_triple():
    engs = engines(q=query((V("x"), TYPE, iri("Article")), (V("x"), TITLE, V("t"))))
    article = (k("a"), k("type"), k("Article"))
    titled = (k("a"), k("title"), lit("Rio"))
    assert answers(engs, [article]) == {}
    assert answers(engs, [titled]) == {}
    assert answers(engs, [article, titled]) == {"q": sols({"x": k("a"), "t": lit("Rio")})}


def test_a_chain_that_starts_on_an_attribute_absent_from_the_publication_is_not_matched():
    engs = engines(q=query((V("x"), KNOWS, V("y")), (V("x"), TITLE, V("t"))))
    assert answers(engs, [(k("a"), k("title"), lit("Rio"))]) == {}


def test_shared_variables_join_across_tuples():
    engs = engines(q=query((V("x"), KNOWS, V("y")), (V("y"), TITLE, V("t"))))
    pub = [(k("a"), k("knows"), k("b")), (k("c"), k("title"), lit("C")),
           (k("b"), k("title"), lit("B"))]
    assert answers(engs, pub) == {"q": sols({"x": k("a"), "y": k("b"), "t": lit("B")})}
    assert answers(engs, pub[:2]) == {}


def test_a_repeated_variable_within_one_tuple_needs_equal_terms():
    engs = engines(q=query((V("x"), KNOWS, V("x"))))
    assert answers(engs, [(k("a"), k("knows"), k("b"))]) == {}
    assert answers(engs, [(k("a"), k("knows"), k("a")), (k("a"), k("knows"), k("b"))]) == {
        "q": sols({"x": k("a")})}


def test_a_variable_repeated_in_subject_and_predicate_needs_equal_terms():
    engs = engines(q=query((V("x"), V("x"), V("o"))))
    assert answers(engs, [(k("p"), k("q"), k("o"))]) == {}
    assert answers(engs, [(k("p"), k("p"), k("o"))]) == {"q": sols({"x": k("p"), "o": k("o")})}


def test_a_variable_predicate_binds_and_joins():
    engs = engines(q=query((iri("a"), V("p"), V("o")), (V("o"), V("p"), iri("z"))))
    pub = [(k("a"), k("knows"), k("b")), (k("b"), k("knows"), k("z")),
           (k("a"), k("title"), k("c")), (k("c"), k("type"), k("z"))]
    assert answers(engs, pub) == {"q": sols({"p": k("knows"), "o": k("b")})}


def test_the_same_tuple_in_two_queries_is_stored_twice():
    q = query((V("x"), TYPE, iri("Article")))
    engs = engines(q1=q, q2=q)
    stats = engs[0].stats()
    assert stats["entries"] == 2 and stats["buckets"] == 1 and stats["shapes"] == 2
    assert answers(engs, [(k("a"), k("type"), k("Article"))]) == {
        "q1": sols({"x": k("a")}), "q2": sols({"x": k("a")})}


# ------------------------------------------------------------------ wildcards


@pytest.mark.parametrize("pattern, expected", [
    ((WILDCARD, TITLE, V("t")), {"t": lit("Rio")}),
    ((V("x"), WILDCARD, Literal("Rio")), {"x": k("a")}),
    ((V("x"), TITLE, WILDCARD), {"x": k("a")}),
    ((WILDCARD, WILDCARD, WILDCARD), {}),
])
def test_a_wildcard_matches_any_term_in_its_position(pattern, expected):
    engs = engines(q=query(pattern))
    assert answers(engs, [(k("a"), k("title"), lit("Rio"))]) == {"q": sols(expected)}


def test_wildcards_bind_nothing_and_do_not_join():
    engs = engines(q=query((WILDCARD, KNOWS, V("y")), (V("y"), KNOWS, WILDCARD)))
    pub = [(k("a"), k("knows"), k("b")), (k("c"), k("knows"), k("d"))]
    assert answers(engs, pub) == {}
    assert answers(engs, pub + [(k("b"), k("knows"), k("e"))]) == {"q": sols({"y": k("b")})}


def test_a_wildcard_predicate_does_not_match_an_empty_publication():
    engs = engines(q=query((WILDCARD, WILDCARD, WILDCARD)))
    assert answers(engs, []) == {}


# ------------------------------------------------------------------ full text


def ftq(expr):
    return query((V("x"), TITLE, V("t")), filters=[FtContains(V("t"), expr)], select=["x"])


PUB = [(k("a"), k("title"), lit("The Olympic Games in Rio")),
       (k("b"), k("title"), lit("Rio games olympic")),
       (k("c"), k("title"), k("olympic")),  # an IRI: never full text
       (k("d"), k("body"), lit("olympic games"))]


@pytest.mark.parametrize("name, expr, matched", [
    ("words", FTAnd((ft("olympic"), ft("games"))), {"a", "b"}),
    ("phrase", ft("olympic games"), {"a"}),
    ("prefix", ft("olymp*"), {"a", "b"}),
    ("prefix in a phrase", ft("olymp* gam*"), {"a"}),
    ("ftnot", FTAnd((ft("rio"), FTNot(ft("the")))), {"b"}),
    ("ftnot alone", FTNot(ft("the")), {"b"}),
    ("ftnear", FTNear(ft("games"), ft("rio"), 0, 2), {"a"}),
    ("ftnear unordered", FTNear(ft("rio"), ft("games"), 0, 0, ordered=False), {"b"}),
    ("ftor", FTOr((ft("the"), ft("games rio"))), {"a"}),
    ("absent word", FTAnd((ft("olympic"), ft("paris"))), set()),
])
def test_full_text_constraints_select_literals(name, expr, matched):
    engs = engines(q=ftq(expr))
    expected = {"q": sols(*({"x": k(m)} for m in sorted(matched)))} if matched else {}
    assert answers(engs, PUB) == expected


def test_full_text_on_an_iri_object_is_false():
    engs = engines(q=query((V("x"), V("p"), V("o")), filters=[FtContains(V("o"), ft("olympic"))],
                           select=["x"]))
    assert answers(engs, [(k("c"), k("title"), k("olympic"))]) == {}


def test_full_text_chains_with_structure_in_the_running_example():
    q = query((V("a"), TYPE, iri("Article")), (V("a"), TITLE, V("t")), (V("a"), BODY, V("b")),
              filters=[FtContains(V("t"), FTAnd((ft("olympic"), ft("games")))),
                       FtContains(V("b"), FTAnd((ft("olympic"),
                                                 FTNear(ft("games"), ft("rio"), 0, 2))))],
              select=["a"])
    engs = engines(q=q)
    base = [(k("p"), k("type"), k("Article")), (k("p"), k("title"), lit("Olympic Games"))]
    assert answers(engs, base + [(k("p"), k("body"), lit("olympic games in rio"))]) == {
        "q": sols({"a": k("p")})}
    assert answers(engs, base + [(k("p"), k("body"), lit("olympic rio games"))]) == {}


# ------------------------------------------------------------------ taxonomy


def test_a_type_path_pattern_matches_virtual_triples_only():
    engs = engines(q=query((V("x"), TYPE_PATH, iri("Athlete"))))
    virtual = [(k("a"), TYPE_PATH_KEY, k("Athlete"))]
    assert answers(engs, [(k("a"), k("type"), k("Athlete"))]) == {}
    assert answers(engs, [(k("a"), k("name"), lit("A"))], virtual) == {"q": sols({"x": k("a")})}


@pytest.mark.parametrize("predicate", [V("p"), WILDCARD])
def test_virtual_taxonomy_triples_never_match_a_variable_or_wildcard_predicate(predicate):
    engs = engines(q=query((V("x"), predicate, iri("Athlete")), select=["x"]))
    virtual = [(k("a"), TYPE_PATH_KEY, k("Athlete"))]
    assert answers(engs, [(k("a"), k("name"), lit("A"))], virtual) == {}
    assert answers(engs, [(k("a"), k("type"), k("Athlete"))], virtual) == {"q": sols({"x": k("a")})}


# ------------------------------------------------------------------ filters and branches


def test_residual_filters_and_disjunctive_branches_are_applied():
    q = query((V("x"), KNOWS, V("y")),
              filters=[Or((Compare("=", V("y"), iri("b")), Compare("=", V("y"), iri("c"))))])
    engs = engines(q=q)
    pub = [(k("a"), k("knows"), k("b")), (k("a"), k("knows"), k("c")), (k("a"), k("knows"), k("d"))]
    assert answers(engs, pub) == {"q": sols({"x": k("a"), "y": k("b")}, {"x": k("a"), "y": k("c")})}


# ------------------------------------------------------------------ registration


def test_a_removed_query_never_matches_again():
    q = query((V("x"), TYPE, iri("Article")), (V("x"), TITLE, V("t")))
    engs = engines(q1=q, q2=q)
    pub = [(k("a"), k("type"), k("Article")), (k("a"), k("title"), lit("T"))]
    for e in engs:
        e.remove("q1")
    assert set(answers(engs, pub)) == {"q2"}


def test_removing_every_query_empties_the_hash_table():
    engs = engines(q1=ftq(ft("olympic games")), q2=query((V("x"), V("p"), WILDCARD)))
    for e in engs:
        e.remove("q1")
        e.remove("q2")
    index = engs[0].index
    assert isinstance(index, IBrokerIndex)
    assert index.table == {} and index.stats()["entries"] == 0
    assert answers(engs, PUB) == {}


def test_stats_report_buckets_entries_and_bytes():
    engs = engines(q=query((V("x"), TYPE, iri("Article")), (V("x"), TITLE, V("t"))))
    stats = engs[0].stats()
    assert stats["buckets"] == 2 and stats["entries"] == 2
    assert stats["index_bytes_estimate"] > 0
