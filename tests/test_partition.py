"""Query partitions (rtf/spark/partition.py) without Spark: containment, groups, routing.

The property: for every strategy and K, filtering a publication against only
the groups its routing keys select, and unioning their matches, gives exactly
what one engine with all the queries gives -- routing never skips a group with
a matching query, and a contained query is never hidden by its container.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rtf.io.queries import register_all
from rtf.engine import Engine
from rtf.parser import parse_query
from rtf.spark.partition import (ALWAYS, STRATEGIES, Router, build_group_matchers, contains,
                           partition_queries, publication_keys, query_anchors, route)
from rtf.io.publication import Publication
from rtf.io.taxonomy import Taxonomy

EX = "http://ex.org/"
TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"


def q(body: str, select: str = "?s") -> object:
    return parse_query(f"SELECT {select} WHERE {{ {body} }}")


# ------------------------------------------------------------- containment


def test_a_query_with_more_words_is_contained_in_one_with_fewer():
    container = q(f'?s <{EX}p> ?o FILTER ftcontains(?o, "rio")')
    assert contains(container, q(f'?s <{EX}p> ?x FILTER ftcontains(?x, "rio" ftand "games")'))
    # Another tuple, another variable name, a phrase holding the word: still contained.
    assert contains(container, q(f'?s <{EX}p> ?o . ?s <{EX}q> ?y FILTER ftcontains(?o, "games in rio")'))
    # Every branch of an ftor must hold the word.
    assert contains(container, q(f'?s <{EX}p> ?o FILTER ftcontains(?o, "rio" ftand ("a" ftor "b"))'))
    assert contains(q(f"?s <{EX}p> ?o"), q(f'?s <{EX}p> "x"'))
    assert contains(q("?s ?p ?o"), q(f'?s <{EX}p> ?o'))


def test_what_is_not_known_to_be_contained():
    container = q(f'?s <{EX}p> ?o FILTER ftcontains(?o, "rio")')
    assert not contains(container, q(f'?s <{EX}q> ?o FILTER ftcontains(?o, "rio")'))  # predicate
    assert not contains(container, q(f'?s <{EX}p> ?o FILTER ftcontains(?o, "games")'))  # word
    assert not contains(container, q(f'?s <{EX}p> ?o FILTER ftcontains(?o, "rio*")'))  # prefix
    assert not contains(container, q(f'?s <{EX}p> ?o FILTER ftcontains(?o, "rio" ftor "x")'))
    assert not contains(container, q(f'?s <{EX}p> ?o FILTER ftcontains(?o, ftnot "rio")'))
    assert not contains(container, q(f"?s <{EX}p> ?o"))  # no full-text constraint at all
    # Containers are one tuple, no residual filter, no repeated variable.
    assert not contains(q(f'?s <{EX}p> ?o . ?s <{EX}q> ?y'), q(f'?s <{EX}p> ?o . ?s <{EX}q> ?y'))
    assert not contains(q(f'?s <{EX}p> ?o FILTER (?o > 3)'), q(f'?s <{EX}p> ?o FILTER (?o > 3)'))
    assert not contains(q("?s ?p ?s"), q(f"?s <{EX}p> ?s"))
    assert not contains(q(f"?s <{EX}p> <{EX}a>"), q(f"?s <{EX}p> ?o"))  # constant vs variable


def test_anchors_prefer_words_then_classes_then_predicates():
    assert query_anchors(q(f'?s <{EX}p> ?o . ?s a <{EX}C> FILTER ftcontains(?o, "a" ftand "rio")')) \
        == {("w", "rio")}
    assert query_anchors(q(f"?s <{EX}p> ?o . ?s a <{EX}C>")) == {("po", TYPE, f"<{EX}C>")}
    assert query_anchors(q(f"?s <{EX}p> ?o")) == {("p", f"<{EX}p>")}
    assert query_anchors(q("?s ?p ?o")) == {ALWAYS}
    assert query_anchors(q(f'?s <{EX}p> ?o FILTER ftcontains(?o, "x" ftor "y")')) == {("w", "x"), ("w", "y")}


# ------------------------------------------------------------------ groups


QUERIES = [
    f'?s <{EX}p> ?o FILTER ftcontains(?o, "rio")',
    f'?s <{EX}p> ?o FILTER ftcontains(?o, "rio" ftand "games")',
    f'?s <{EX}p> ?o . ?s a <{EX}City> FILTER ftcontains(?o, "rio" ftand "beach")',
    f"?s a <{EX}City>",
    "?s ?p ?o",
]


def test_every_query_lands_in_one_group_and_k_may_exceed_the_queries():
    parsed = [(f"q{i}", q(b)) for i, b in enumerate(QUERIES)]
    for strategy in STRATEGIES:
        for k in (1, 2, 3, 7):
            groups = partition_queries(parsed, k, strategy)
            assert len(groups) == k
            ids = [qid for g in groups for qid in g.query_ids]
            assert sorted(ids) == sorted(qid for qid, _ in parsed)
            assert sum(1 for g in groups if not g.query_ids) >= k - len(parsed)
            for g in groups:
                assert set(g.contained.values()) <= set(g.query_ids) - set(g.contained)
            if strategy != "hash":  # q1, q2 in q0; all of them in q4 (?s ?p ?o)
                assert {qid for g in groups for qid in g.contained} == {"q0", "q1", "q2", "q3"}
                assert len({g.index for g in groups if g.query_ids}) == 1


def test_routing_skips_groups_no_triple_can_touch():
    parsed = [(f"q{i}", q(b)) for i, b in enumerate(QUERIES[:4])]
    groups = partition_queries(parsed, 3, "merging")
    nothing = publication_keys([(f"<{EX}x>", f"<{EX}other>", '"nothing here"')])
    assert route(groups, nothing) == []
    city = publication_keys([(f"<{EX}x>", TYPE, f"<{EX}City>")])
    assert len(route(groups, city)) == 1


# -------------------------------------------------------- random worlds


PREDICATES = [f"<{EX}p{i}>" for i in range(3)]
CLASSES = [f"<{EX}C{i}>" for i in range(3)]
WORDS = ["rio", "games", "beach", "city", "old"]
TAXONOMY = Taxonomy.from_edges([(CLASSES[0], CLASSES[1])])  # C0 rdfs:subClassOf C1


def _ft(words: list[str], mode: int) -> str:
    quoted = [f'"{w}"' for w in words]
    if mode == 1 and len(words) > 1:
        return " ftor ".join(quoted)
    if mode == 2:
        return f'"{words[0]}*"'
    if mode == 3 and len(words) > 1:
        return f'"{words[0]} {words[1]}"'  # a phrase
    return " ftand ".join(quoted)


@st.composite
def query_bodies(draw):
    tuples, filters = [], []
    for j in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["pred", "pred", "class", "tclass", "var"]))
        if kind == "class":
            tuples.append(f"?s a {draw(st.sampled_from(CLASSES))}")
        elif kind == "tclass":
            tuples.append(f"?s a/rdfs:subClassOf* {draw(st.sampled_from(CLASSES))}")
        elif kind == "var":
            tuples.append(f"?s ?p{j} ?o{j}")
        else:
            tuples.append(f"?s {draw(st.sampled_from(PREDICATES))} ?o{j}")
        if kind in ("pred", "var") and draw(st.booleans()):
            words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3, unique=True))
            filters.append(f"ftcontains(?o{j}, {_ft(words, draw(st.integers(0, 4)))})")
    body = " . ".join(tuples)
    if filters:
        body += " FILTER (" + " && ".join(filters) + ")"
    return body


@st.composite
def publications(draw):
    triples = []
    for _ in range(draw(st.integers(1, 6))):
        if draw(st.integers(0, 3)) == 0:
            triples.append((f"<{EX}s>", TYPE, draw(st.sampled_from(CLASSES))))
        else:
            text = " ".join(draw(st.lists(st.sampled_from(WORDS + ["x"]), min_size=1, max_size=4)))
            triples.append((f"<{EX}s>", draw(st.sampled_from(PREDICATES)), f'"{text}"'))
    return Publication(f"{EX}s", list(dict.fromkeys(triples)))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bodies=st.lists(query_bodies(), min_size=1, max_size=10),
       pubs=st.lists(publications(), min_size=1, max_size=4),
       k=st.integers(1, 5), strategy=st.sampled_from(STRATEGIES))
def test_routed_groups_give_exactly_the_matches_of_one_engine(bodies, pubs, k, strategy):
    records = [{"id": f"q{i}", "query": q(b), "subscriber": None, "line": i + 1}
               for i, b in enumerate(bodies)]
    full = Engine("rtfs", taxonomy=TAXONOMY)
    register_all(full, records, "test")
    groups = partition_queries([(r["id"], r["query"]) for r in records], k, strategy)
    matchers = build_group_matchers(groups, records, lambda: Engine("rtfs", taxonomy=TAXONOMY),
                                    register_all, "test")
    router = Router(groups, TAXONOMY)
    for pub in pubs:
        want = full.match(pub)
        targets = router.groups_for(list(pub.triples))
        # Routing never drops a group that holds a matching query.
        owners = {qid: g.index for g in groups for qid in g.query_ids}
        assert {owners[m.query_id] for m in want} <= set(targets)
        got = sorted((m for g in targets for m in matchers[g].match(pub)), key=lambda m: m.query_id)
        assert got == want


def test_a_contained_query_is_reported_when_it_matches_and_only_then():
    records = [{"id": "general", "query": q(f'?s <{EX}p> ?o FILTER ftcontains(?o, "rio")'),
                "subscriber": None, "line": 1},
               {"id": "special", "query": q(f'?s <{EX}p> ?o FILTER ftcontains(?o, "rio" ftand "games")'),
                "subscriber": "u", "line": 2}]
    for strategy in ("containment", "merging"):
        groups = partition_queries([(r["id"], r["query"]) for r in records], 2, strategy)
        assert [g.contained for g in groups if g.query_ids] == [{"special": "general"}]
        matchers = build_group_matchers(groups, records, lambda: Engine("rtfs"), register_all, "t")
        (matcher,) = [m for m in matchers if m is not None]

        def ids(text):
            return [m.query_id for m in matcher.match(Publication(f"{EX}s", [(f"<{EX}s>", f"<{EX}p>", text)]))]

        assert ids('"games in rio"') == ["general", "special"]
        assert ids('"rio"') == ["general"]
        assert ids('"games"') == []  # the container did not match: the contained one is not run
        assert matcher.contained_runs == 2  # "games in rio" and "rio", not "games"
