"""Registering ``a/rdfs:subClassOf*`` where there is no taxonomy warns (issue 40, item 8).

Without a taxonomy ``?x a/rdfs:subClassOf* C`` holds only for resources typed
C itself: a query written for C's subclasses silently matches less. One
function decides it (`rtf.matching.explain.taxonomy_warnings`) and every
place that registers or checks a query says it: ``rtf check``, ``rtf index
build``/``add``, ``rtf match`` and the server's registration responses.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from rtf.cli import main as rtf_main
from rtf.engine import Engine
from rtf.io.taxonomy import Taxonomy
from rtf.matching.explain import NO_TAXONOMY, TaxonomyReport, taxonomy_warnings
from rtf.parser import parse_query

EX = "http://ex.org/tax/"
TYPED = f"SELECT ?x WHERE {{ ?x a/rdfs:subClassOf* <{EX}Report> }}"
PLAIN = f"SELECT ?x WHERE {{ ?x a <{EX}Report> }}"
TAXONOMY = Taxonomy.from_edges([(f"<{EX}MatchReport>", f"<{EX}Report>")])
PUBLICATION = f"<{EX}r1> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <{EX}MatchReport> .\n"


def test_the_warning_says_what_the_query_then_matches():
    """The trap itself: without a taxonomy the subclass's resource is not matched."""
    from rtf.io.reader import publications_from_bytes

    [pub] = publications_from_bytes(PUBLICATION.encode(), "nt")
    for taxonomy, matched, warned in [(None, 0, [NO_TAXONOMY]), (TAXONOMY, 1, [])]:
        engine = Engine("rtfs", taxonomy=taxonomy)
        engine.register(TYPED, "q")
        assert len(engine.match(pub)) == matched
        assert taxonomy_warnings(engine.get("q").query, engine.taxonomy) == warned
    assert taxonomy_warnings(parse_query(PLAIN)) == []


#: Places a type path can hide in a language-3 query (the walk must find each).
WRAPPERS = [
    "SELECT ?x WHERE {{ {p} }}",
    "SELECT ?x WHERE {{ ?x <{ex}p> ?t OPTIONAL {{ {p} }} }}",
    "SELECT ?x WHERE {{ {{ ?x <{ex}p> ?t }} UNION {{ {p} }} }}",
    "SELECT ?x WHERE {{ ?x <{ex}p> ?t FILTER EXISTS {{ {p} }} }}",
    "SELECT ?x WHERE {{ ?x <{ex}p> ?t MINUS {{ {p} }} }}",
    "SELECT ?x WHERE {{ {{ SELECT ?x WHERE {{ {p} }} }} }}",
    "ASK {{ ?x <{ex}p> ?t FILTER (?t = \"a\" || NOT EXISTS {{ {p} }}) }}",
]


@settings(max_examples=60, deadline=None)
@given(wrapper=st.sampled_from(WRAPPERS), typed=st.booleans(), with_taxonomy=st.booleans(),
       known=st.booleans())
def test_a_type_path_anywhere_in_the_query_is_found(wrapper, typed, with_taxonomy, known):
    cls = f"<{EX}Report>" if known else f"<{EX}Reprot>"
    pattern = f"?x a/rdfs:subClassOf* {cls}" if typed else f"?x a {cls}"
    query = parse_query(wrapper.format(p=pattern, ex=EX))
    warnings = taxonomy_warnings(query, TAXONOMY if with_taxonomy else None)
    if not typed or (with_taxonomy and known):
        assert warnings == []
    elif not with_taxonomy:
        assert warnings == [NO_TAXONOMY]
    else:
        assert len(warnings) == 1 and warnings[0].startswith(f"{cls} is not a class of the taxonomy")


def test_the_report_counts_and_names_the_first_queries():
    report = TaxonomyReport(None, shown=2)
    for n in range(5):
        report.add(f"q{n}", parse_query(TYPED))
    report.add("plain", parse_query(PLAIN))
    assert report.lines() == [f"5 queries ('q0', 'q1' and 3 more): {NO_TAXONOMY}"]


# ------------------------------------------------------------ the command line


@pytest.fixture
def files(tmp_path):
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": "typed", "query": TYPED}) + "\n"
                       + json.dumps({"id": "plain", "query": PLAIN}) + "\n")
    onto = tmp_path / "onto.nt"
    onto.write_text(f"<{EX}MatchReport> <http://www.w3.org/2000/01/rdf-schema#subClassOf> <{EX}Report> .\n")
    return queries, onto


def test_rtf_check_warns_without_a_taxonomy_and_not_with_it(files, capsys):
    queries, onto = files
    assert rtf_main(["check", TYPED]) == 0
    assert capsys.readouterr().err == f"warning: {NO_TAXONOMY}\n"
    assert rtf_main(["check", TYPED, "--taxonomy", str(onto)]) == 0
    assert capsys.readouterr().err == ""
    assert rtf_main(["check", "-f", str(queries)]) == 0
    err = capsys.readouterr().err
    assert err == f"{queries}:1: query 'typed': warning: {NO_TAXONOMY}\n"
    assert rtf_main(["check", "-f", str(queries), "--taxonomy", str(onto)]) == 0
    assert capsys.readouterr().err == ""


def test_rtf_index_build_and_add_warn(files, tmp_path, capsys):
    queries, onto = files
    index = tmp_path / "q.idx"
    assert rtf_main(["index", "build", "--queries", str(queries), "--output", str(index)]) == 0
    err = capsys.readouterr().err
    assert f"rtf index: warning: 1 query ('typed'): {NO_TAXONOMY}\n" in err
    assert rtf_main(["index", "build", "--queries", str(queries), "--taxonomy", str(onto),
                     "--output", str(tmp_path / "t.idx")]) == 0
    assert "warning" not in capsys.readouterr().err
    more = tmp_path / "more.jsonl"
    more.write_text(json.dumps({"id": "typed2", "query": TYPED}) + "\n")
    assert rtf_main(["index", "add", str(index), "--queries", str(more)]) == 0
    err = capsys.readouterr().err
    assert f"rtf index: warning: 1 query ('typed2'): {NO_TAXONOMY}\n" in err  # the new one only


def test_rtf_match_warns_once(files, tmp_path, capsys):
    queries, _ = files
    pubs = tmp_path / "p.nt"
    pubs.write_text(PUBLICATION)
    assert rtf_main(["match", "--queries", str(queries), "--publications", str(pubs)]) == 0
    assert capsys.readouterr().err.count("a/rdfs:subClassOf* without a taxonomy") == 1


# ------------------------------------------------------------ the server


def test_the_servers_registration_responses_warn(tmp_path):
    pytest.importorskip("httpx")
    from tests.test_server_api import in_process

    async def check(client, broker):
        r = await client.put("/queries/typed", json={"query": TYPED})
        assert r.status_code == 201 and r.json()["warnings"] == [NO_TAXONOMY]
        r = await client.put("/queries/plain", json={"query": PLAIN})
        assert r.status_code == 201 and "warnings" not in r.json()
        body = (json.dumps({"id": "t2", "query": TYPED}) + "\n").encode()
        ndjson = {"Content-Type": "application/x-ndjson"}
        r = await client.post("/queries", content=body, headers=ndjson)
        assert r.json()["warnings"] == [f"<body>:1: query 't2': warning: {NO_TAXONOMY}"]
        r = await client.post("/queries?atomic=false", content=body, headers=ndjson)
        assert json.loads(r.text.splitlines()[0])["warnings"] == [NO_TAXONOMY]
        r = await client.post("/check", json={"query": TYPED})
        assert NO_TAXONOMY in r.json()["warnings"]

    in_process(tmp_path, check)
