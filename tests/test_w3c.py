"""The W3C SPARQL evaluation tests (issue 38), for every rtf engine, read from the shared suite.

One test per (engine, W3C test) that an engine is held to (`W3CTest.check`): its
answer, or its refusal of a query outside the contract. The tests an engine
does not pass yet are listed in ``tests/w3c_expected.txt`` and marked
``xfail(strict=True)``: one that starts to pass must leave the list
(``python benchmarks/w3c_report.py --write-expected``), one that breaks fails.
The harness is checked too: its comparison by hand, its reading of the
result formats against the files, and pyoxigraph through the same code.
Without the suite (``../shared/w3c-sparql-tests``, ``RTF_W3C_TESTS``) they skip.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rtf.bench import w3c
from rtf.bench.w3c_run import ENGINES, PASSED, check, read_expectations, run

EXPECTED_FILE = Path(__file__).with_name("w3c_expected.txt")
TESTS = w3c.load_tests() if w3c.available() else ()
BY_ID = {t.id: t for t in TESTS}
EXPECTED = read_expectations(EXPECTED_FILE.read_text(encoding="utf-8")) if EXPECTED_FILE.exists() else {}
XSD = "http://www.w3.org/2001/XMLSchema#"

needs_suite = pytest.mark.skipif(not TESTS, reason=w3c.missing_message())


def _cases():
    if not TESTS:
        return [pytest.param(None, None, marks=pytest.mark.skip(reason=w3c.missing_message()))]
    cases = []
    for engine in ENGINES:
        for t in TESTS:
            if t.check is None:
                continue
            reason = EXPECTED.get((engine, t.id))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason is not None else []
            cases.append(pytest.param(engine, t, id=f"{engine}:{t.id}", marks=marks))
    return cases


@pytest.mark.parametrize("engine, test", _cases())
def test_w3c(engine, test):
    outcome = check(test, engine)
    assert outcome.status == PASSED, f"{test.id} on {engine}: {outcome}"


@needs_suite
def test_expectations_name_tests_of_the_suite():
    stale = sorted({test_id for _, test_id in EXPECTED if test_id not in BY_ID or BY_ID[test_id].check is None})
    assert not stale, f"tests/w3c_expected.txt names tests that are not run: {stale[:5]}"


@needs_suite
def test_the_suite_is_counted_as_the_issue_counts_it():
    """592 evaluation tests; the issue's 456 default-graph SELECT/ASK tests are the in-contract
    ones and the 8 with mf:requires (counted beforehand with rdflib and the query files)."""
    assert len(TESTS) == 592
    counts = Counter((t.category, t.form) for t in TESTS)
    assert counts["in contract", "SELECT"] + counts["in contract", "ASK"] == 448
    assert counts["requires", "SELECT"] + counts["requires", "ASK"] == 8
    assert counts["in contract", "CONSTRUCT"] == 11
    reasons = Counter(t.out_of_contract for t in TESTS if t.out_of_contract)
    assert reasons == {"entailment regime": 70, "GRAPH": 33, "FROM / FROM NAMED": 13, "SERVICE": 7,
                       "qt:graphData (named graphs)": 2}
    assert sum(t.check == "refusal" for t in TESTS) == 53


@needs_suite
def test_pyoxigraph_passes_the_harness():
    """An independent engine through the same reading and comparison: if it fails much, the
    harness is wrong. (Its failures, with the reason, are in benchmarks/w3c_report.py --failures.)"""
    answered = [t for t in TESTS if t.check == "answer" and t.category == w3c.IN_CONTRACT]
    passed = sum(run(t, "pyoxigraph").status == PASSED for t in answered)
    assert passed >= 400, f"pyoxigraph passes {passed} of {len(answered)}"


# --- the harness's reading of the suite, checked against the files by hand ----------------------

@needs_suite
def test_result_sets_written_as_rdf_keep_their_order():
    rows = w3c.expected_answer(BY_ID["sparql10/sort/dawg-sort-1"])  # result-sort-1.rdf: rs:index 1..4
    assert rows == tuple((("name", f'"{n}"'),) for n in ("Alice", "Bob", "Eve", "Fred"))
    assert BY_ID["sparql10/sort/dawg-sort-1"].shape.ordered


@needs_suite
@pytest.mark.parametrize("test_id", ["sparql11/json-res/jsonres01", "sparql11/csv-tsv-res/tsv01"])
def test_json_and_tsv_results_are_rtf_terms(test_id):
    rows = w3c.expected_answer(BY_ID[test_id])
    assert len(rows) == 6
    s2 = (("o", '"foo"'), ("p", "<http://example.org/p2>"), ("s", "<http://example.org/s2>"))
    s4 = (("o", f'"4"^^<{XSD}integer>'), ("p", "<http://example.org/p4>"), ("s", "<http://example.org/s4>"))
    assert s2 in rows and s4 in rows
    assert any(term.startswith("_:") for row in rows for _, term in row)


@needs_suite
def test_a_construct_result_is_a_graph_with_blank_nodes():
    graph = w3c.expected_answer(BY_ID["sparql10/construct/construct-1"])  # result-ident.ttl
    assert isinstance(graph, frozenset) and len(graph) == 9  # Alice 4 triples, Bob 5
    assert sum(p == "<http://xmlns.com/foaf/0.1/knows>" for _, p, _ in graph) == 2


@needs_suite
def test_relative_iris_resolve_against_the_files_own_iris():
    t = BY_ID["sparql10/basic/base-prefix-3"]
    assert t.query_iri == "http://www.w3.org/2001/sw/DataAccess/tests/data-r2/basic/base-prefix-3.rq"
    assert t.query_text().startswith(f"BASE <{t.query_iri}>\n")
    assert BY_ID["sparql10/basic/base-prefix-1"].query_text() == \
        BY_ID["sparql10/basic/base-prefix-1"].query_file.read_text(encoding="utf-8")  # it has its BASE
    s11 = BY_ID["sparql11/bind/bind01"]
    assert s11.file_iri(s11.data_files[0]) == "http://www.w3.org/2009/sparql/docs/tests/data-sparql11/bind/data.ttl"


@pytest.mark.parametrize("text, form, keywords, ordered", [
    ("SELECT * { ?s ?p ?o } ORDER BY ?s", "SELECT", set(), True),
    ("SELECT * { { SELECT ?s { ?s ?p ?o } ORDER BY ?s LIMIT 1 } }", "SELECT", set(), False),
    ("ASK { ?graph <http://x/from> 'GRAPH' } # SERVICE", "ASK", set(), False),
    ("PREFIX : <http://x/>\nCONSTRUCT { ?s :graph ?o } FROM <g> WHERE { GRAPH ?g { ?s :from ?o } }",
     "CONSTRUCT", {"FROM", "GRAPH"}, False),
    ("BASE <http://x/> DESCRIBE <a>", "DESCRIBE", {"BASE"}, False),
    ('SELECT ?x { ?x ?p """a { b""" } order  by ?x', "SELECT", set(), True),
])
def test_query_shape(text, form, keywords, ordered):
    assert w3c.query_shape(text) == w3c.QueryShape(form, frozenset(keywords), ordered)


# --- the comparison ----------------------------------------------------------------------------

def row(**terms):
    return w3c.as_row(terms.items())


def test_rows_compare_as_sets_of_distinct_rows():
    a, b = row(x="<http://x/a>"), row(x='"b"', y="<http://x/y>")
    assert w3c.compare([a, b, a], [b, a]) is None
    assert w3c.compare([a, b], [a]) == "expected 2 rows, got 1; missing: {?x=\"b\" ?y=<http://x/y>}"
    assert w3c.compare([row()], []) is not None            # one empty solution is not no solution
    assert w3c.compare([a], [w3c.as_row([("x", '"a"')])]) is not None


def test_ordered_rows_compare_in_the_order_of_first_occurrence():
    a, b, c = row(v='"1"'), row(v='"2"'), row(v='"3"')
    assert w3c.compare([a, a, b, c], [a, b, c], ordered=True) is None
    assert w3c.compare([a, b, c], [a, c, b], ordered=True).startswith("the same rows in another order")
    assert w3c.compare([a, b, c], [a, c, b]) is None


def test_blank_nodes_are_renamed_once_for_the_whole_answer():
    expected = [row(x="_:a", y="_:a"), row(x="_:a", y="_:b")]
    assert w3c.compare(expected, [row(x="_:p", y="_:p"), row(x="_:p", y="_:q")]) is None
    # each row alone matches, but _:a would have to be both _:p and _:r
    assert w3c.compare(expected, [row(x="_:p", y="_:p"), row(x="_:r", y="_:q")]) is not None
    assert w3c.compare([row(x="_:a"), row(x="_:b")], [row(x="_:c")]) is not None


def test_graphs_compare_up_to_blank_node_renaming():
    p = "<http://x/p>"
    cycle = frozenset({("_:a", p, "_:b"), ("_:b", p, "_:a")})
    assert w3c.compare(cycle, frozenset({("_:m", p, "_:n"), ("_:n", p, "_:m")})) is None
    assert w3c.compare(cycle, frozenset({("_:m", p, "_:n"), ("_:n", p, "_:o")})) is not None
    assert w3c.compare(cycle, [row(x="_:a")]) == "expected 2 triples, got 1 rows"


def test_booleans():
    assert w3c.compare(True, True) is None and w3c.compare(False, False) is None
    assert w3c.compare(True, False) == "expected true, got false"
    assert w3c.compare(False, []) == "expected false, got 0 rows"


TERMS = st.sampled_from(["<http://x/a>", "<http://x/b>", '"a"', '"a"@en', f'"1"^^<{XSD}integer>',
                         "_:b1", "_:b2", "_:b3"])
ROWS = st.lists(st.dictionaries(st.sampled_from("xyz"), TERMS, max_size=3).map(lambda d: w3c.as_row(d.items())),
                max_size=6)


@settings(max_examples=150, deadline=None)
@given(rows=ROWS, data=st.data())
def test_an_answer_equals_itself_renamed_and_shuffled_and_not_once_changed(rows, data):
    labels = ["_:b1", "_:b2", "_:b3"]
    renaming = dict(zip(labels, data.draw(st.permutations(["_:n7", "_:n8", "_:n9"]))))
    renamed = [w3c.as_row((v, renaming.get(t, t)) for v, t in r) for r in rows]
    shuffled = data.draw(st.permutations(renamed))
    assert w3c.compare(rows, shuffled) is None
    assert w3c.compare(rows, renamed, ordered=True) is None
    triples = frozenset((r[0][1], "<http://x/p>", r[-1][1]) for r in rows if r and not r[0][1].startswith('"'))
    assert w3c.compare(triples, frozenset((renaming.get(s, s), p, renaming.get(o, o)) for s, p, o in triples)) is None
    distinct = w3c.distinct(rows)
    if distinct:
        i = data.draw(st.integers(0, len(distinct) - 1))
        changed = list(distinct)
        changed[i] = w3c.as_row([*changed[i][1:], ("zz", "<http://x/new>")])  # a term no row has
        assert w3c.compare(rows, changed) is not None


@needs_suite
def test_an_empty_solution_counts_for_the_anchors_too():
    """`SELECT (IF(1/0, false, true) AS ?error) {}` has one solution, with nothing bound: rdflib
    skips it when its result is iterated, so the harness reads its bindings instead."""
    t = BY_ID["sparql11/functions/if02"]
    assert w3c.expected_answer(t) == ((),)
    assert run(t, "rdflib").status == run(t, "pyoxigraph").status == PASSED
