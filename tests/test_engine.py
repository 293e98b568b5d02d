"""The Python API of spec section 4: register, unregister, match."""

from __future__ import annotations

import pytest
from rdflib import Graph

from rtf import ALGORITHMS, Engine, Publication, QuerySyntaxError, UnsupportedQueryError

EX = "http://ex.org/"
DBO = "http://dbpedia.org/ontology/"
TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"

RUNNING_EXAMPLE = """
PREFIX dbo: <http://dbpedia.org/ontology/>
SELECT ?article WHERE {
  ?article a dbo:Article ;
           dbo:title ?title ;
           dbo:abstract ?body .
  FILTER ftcontains(?title, "olympic" ftand "games")
  FILTER ftcontains(?body, "olympic" ftand ("games" ftnear(0, 2) "rio"))
}"""


def article(iri, title, body):
    s = f"<{EX}{iri}>"
    return Publication(EX + iri, [(s, TYPE, f"<{DBO}Article>"),
                                  (s, f"<{DBO}title>", f'"{title}"@en'),
                                  (s, f"<{DBO}abstract>", f'"{body}"@en')])


@pytest.fixture(params=ALGORITHMS)
def engine(request):
    return Engine(request.param)


def test_running_example_matches_by_hand(engine):
    engine.register(RUNNING_EXAMPLE, "q", subscriber="alice")
    # title has both words; body: olympic, and rio 1 word after games
    hit = article("a1", "Olympic Games open", "The Olympic games in Rio opened.")
    [m] = engine.match(hit)
    assert (m.query_id, m.subscriber, m.bindings) == ("q", "alice", [{"article": f"<{EX}a1>"}])
    # rio comes before games: the ordered ftnear fails
    assert engine.match(article("a2", "Olympic Games", "Rio games: the Olympic flame")) == []
    # games and rio 3 words apart
    assert engine.match(article("a3", "Olympic Games", "olympic games a b c rio")) == []
    # the title lacks "games"
    assert engine.match(article("a4", "Olympic flame", "olympic games in rio")) == []


def test_register_generates_ids_and_keeps_given_ones(engine):
    assert engine.register("ASK { ?s ?p ?o }") == "q1"
    assert engine.register("ASK { ?s ?p ?o }", "mine") == "mine"
    assert engine.register("ASK { ?s ?p ?o }") == "q2"
    assert len(engine) == 3


def test_a_bad_query_leaves_the_engine_unchanged(engine):
    engine.register(f"ASK {{ ?s <{EX}p> ?o }}", "good")
    pub = Publication(EX + "a", [(f"<{EX}a>", f"<{EX}p>", f"<{EX}b>")])
    before = engine.match(pub)
    with pytest.raises(QuerySyntaxError):
        engine.register("SELECT ?x WHERE { ?x ", "bad")
    with pytest.raises(UnsupportedQueryError):
        engine.register("SELECT ?x WHERE { GRAPH ?g { ?x ?q ?r } }", "bad")
    with pytest.raises(QuerySyntaxError):  # BIND of a variable already bound
        engine.register("SELECT ?x WHERE { ?x ?p ?o BIND(1 AS ?o) }", "bad")
    assert len(engine) == 1 and "bad" not in engine
    assert engine.match(pub) == before


def test_a_taken_id_is_refused_and_the_first_query_stays(engine):
    engine.register(f"ASK {{ ?s <{EX}p> ?o }}", "q")
    with pytest.raises(ValueError, match="already registered"):
        engine.register(f"ASK {{ ?s <{EX}other> ?o }}", "q")
    pub = Publication(EX + "a", [(f"<{EX}a>", f"<{EX}p>", f"<{EX}b>")])
    assert [m.query_id for m in engine.match(pub)] == ["q"]


def test_a_removed_query_never_matches_again(engine):
    engine.register(f"ASK {{ ?s <{EX}p> ?o }}", "q")
    pub = Publication(EX + "a", [(f"<{EX}a>", f"<{EX}p>", f"<{EX}b>")])
    assert engine.match(pub)
    engine.unregister("q")
    assert engine.match(pub) == [] and len(engine) == 0
    with pytest.raises(KeyError):
        engine.unregister("q")


def test_select_reports_distinct_projected_solutions_and_ask_none(engine):
    engine.register(f"SELECT ?s WHERE {{ ?s <{EX}p> ?o }}", "sel")
    engine.register(f"ASK {{ ?s <{EX}p> ?o }}", "ask")
    s = f"<{EX}a>"
    pub = Publication(EX + "a", [(s, f"<{EX}p>", f"<{EX}b>"), (s, f"<{EX}p>", f"<{EX}c>")])
    by_id = {m.query_id: m for m in engine.match(pub)}
    assert by_id["sel"].bindings == [{"s": s}]  # two solutions, one after projection
    assert by_id["ask"].bindings == []


def test_unbound_projected_variables_are_left_out(engine):
    engine.register(f"SELECT ?s ?nowhere WHERE {{ ?s <{EX}p> ?o }}", "q")
    pub = Publication(EX + "a", [(f"<{EX}a>", f"<{EX}p>", f"<{EX}b>")])
    assert engine.match(pub)[0].bindings == [{"s": f"<{EX}a>"}]


def test_match_accepts_an_rdflib_graph(engine):
    engine.register(f'SELECT ?s WHERE {{ ?s <{EX}p> ?o FILTER ftcontains(?o, "rio") }}', "q")
    g = Graph().parse(data=f'<{EX}a> <{EX}p> "Games in RIO"@EN .', format="nt")
    [m] = engine.match(g)
    assert m.bindings == [{"s": f"<{EX}a>"}]


def test_language_tags_are_compared_case_insensitively(engine):
    engine.register(f'SELECT ?s WHERE {{ ?s <{EX}p> "chat"@FR }}', "q")
    pub = Publication(EX + "a", [(f"<{EX}a>", f"<{EX}p>", '"chat"@fr')])
    assert [m.query_id for m in engine.match(pub)] == ["q"]


def test_unknown_algorithm_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown algorithm"):
        Engine("fastest")


def test_taxonomy_from_an_ontology_file(tmp_path, engine):
    onto = tmp_path / "onto.nt"
    onto.write_text(f"<{EX}Sprinter> <http://www.w3.org/2000/01/rdf-schema#subClassOf> <{EX}Athlete> .\n")
    e = Engine(engine.algorithm, taxonomy=onto)
    e.register(f"SELECT ?x WHERE {{ ?x a/<http://www.w3.org/2000/01/rdf-schema#subClassOf>* <{EX}Athlete> }}", "q")
    pub = Publication(EX + "bolt", [(f"<{EX}bolt>", TYPE, f"<{EX}Sprinter>")])
    assert e.match(pub)[0].bindings == [{"x": f"<{EX}bolt>"}]


@pytest.mark.parametrize("algorithm", ["rtfs", "rtfm", "ibroker"])
def test_matches_stay_in_query_id_order_as_queries_come_and_go(algorithm):
    """Matches are listed by query id: sorted by id until the engine ranks the ids
    (`rtf.matching.id_order`), by rank after, and sorted again after a registration
    until ranked again; removals keep the ranks. Every step equals the reference."""
    import random
    rng = random.Random(3)
    ex = "http://ex/"
    star = "SELECT ?s WHERE {{ ?s <{p}> ?o }}"
    ids = [f"q{n}" for n in range(300)] + ["a", "Z", "q", "q10x", "é", "q 1"]
    rng.shuffle(ids)
    engine, naive = Engine(algorithm), Engine("naive")
    for qid in ids[:200]:
        for e in (engine, naive):
            e.register(star.format(p=f"{ex}p{rng.randrange(3)}"), qid)
    pub = Publication(f"{ex}a", [(f"<{ex}a>", f"<{ex}p{k}>", f'"{k}"') for k in range(3)])
    ranked = set()
    for step in range(40):
        if step % 10 == 9:  # a registration drops the ranks, a removal keeps them
            qid = ids[200 + step // 10]
            for e in (engine, naive):
                e.register(star.format(p=f"{ex}p{rng.randrange(3)}"), qid)
                e.unregister(ids[step])
        ranked.add(engine._index.table.id_order.ranks is not None)  # how this match orders
        got = [m.query_id for m in engine.match(pub)]
        assert got == sorted(got) == [m.query_id for m in naive.match(pub)], step
    assert ranked == {True, False}  # both ways were taken


@pytest.mark.parametrize("algorithm", ["rtfs", "rtfm"])  # (the engines whose index file keeps their table)
def test_a_loaded_engine_has_its_ids_ranked_before_its_first_publication(tmp_path, algorithm):
    """A load is followed by a stream of publications: the ids are ranked as the index is
    loaded, so that the first publications do not sort their matches' ids (they used to,
    until their sorting had cost what ranking does). The matches stay in id order."""
    ex = "http://ex/"
    engine = Engine(algorithm)
    for n in range(50):
        engine.register(f"SELECT ?s WHERE {{ ?s <{ex}p{n % 3}> ?o }}", f"q{(n * 37) % 50}-{n}")
    engine.save(tmp_path / "i.idx")
    loaded = Engine.load(tmp_path / "i.idx")
    assert loaded._index.table.id_order.ranks is not None
    pub = Publication(f"{ex}a", [(f"<{ex}a>", f"<{ex}p{k}>", f'"{k}"') for k in range(3)])
    got = [m.query_id for m in loaded.match(pub)]
    assert got == sorted(got) == [m.query_id for m in engine.match(pub)] and len(got) == 50


@pytest.mark.parametrize("algorithm", ["naive", "rtfm", "rtfs", "ibroker"])
def test_star_answers_of_several_variables_on_one_subject(algorithm):
    """A one-subject publication completes star queries answered without a join, by
    projected variable ("s", "x") or as ASK: each group gets its own answer."""
    engine = Engine(algorithm)
    for i, q in enumerate(['SELECT ?s WHERE { ?s <http://ex/p> ?o }', 'ASK { ?s <http://ex/p> ?o }',
                           'SELECT ?x WHERE { ?x <http://ex/p> ?o }', 'SELECT ?s WHERE { ?s <http://ex/q> ?o }',
                           'ASK { ?s <http://ex/q> ?o }', 'SELECT ?s WHERE { ?s <http://ex/r> ?o }']):
        engine.register(q, f"q{i}")
    pub = Publication("http://ex/a", [("<http://ex/a>", "<http://ex/p>", '"1"'),
                                      ("<http://ex/a>", "<http://ex/q>", '"2"')])
    assert [(m.query_id, m.is_ask, m.bindings) for m in engine.match(pub)] == [
        ("q0", False, [{"s": "<http://ex/a>"}]), ("q1", True, []), ("q2", False, [{"x": "<http://ex/a>"}]),
        ("q3", False, [{"s": "<http://ex/a>"}]), ("q4", True, [])]
