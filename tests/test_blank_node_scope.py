"""A blank node label used in two basic graph patterns is refused, as SPARQL 1.1 does
(issue 26 item 8): the W3C syntax tests, and a hypothesis family of group structures."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rtf import Engine, Publication
from rtf.errors import QueryError, QuerySyntaxError, UnsupportedQueryError
from rtf.parser import parse_query

P = "PREFIX : <http://example.org/>\nPREFIX foaf: <http://xmlns.com/foaf/0.1/>\n"

# The W3C SPARQL 1.1 test suite (syntax-sparql3, syntax-sparql4), with the position of
# the label used in a second basic graph pattern (line and column in the text below).
W3C_BAD = {
    "syn-bad-34": ("SELECT * WHERE {\n  _:a ?p ?v . { _:a ?q 1 }\n}", (4, 17)),
    "syn-bad-35": ("SELECT * WHERE {\n  { _:a ?p ?v . } _:a ?q 1\n}", (4, 19)),
    "syn-bad-36": ("SELECT * WHERE {\n  { _:a ?p ?v . } UNION { _:a ?q 1 }\n}", (4, 27)),
    "syn-bad-37": ("SELECT * WHERE {\n  { _:a ?p ?v . } _:a ?q 1\n}", (4, 19)),
    "syn-bad-38": ("SELECT * WHERE {\n  _:a ?p ?v . OPTIONAL {_:a ?q 1 }\n}", (4, 25)),
    "syn-bad-OPT-breaks-BGP": ("SELECT * WHERE {\n  _:a ?p ?v . OPTIONAL { ?s ?p ?v } _:a ?q 1\n}", (4, 37)),
    "syn-bad-UNION-breaks-BGP": (
        "SELECT * WHERE {\n  _:a ?p ?v1 { ?s <http://ex/p1> ?o } UNION { ?s <http://ex/p2> ?o } _:a ?p ?v2\n}",
        (4, 70)),
    "syn-blabel-cross-optional-bad": (
        "ASK { _:who foaf:homepage ?homepage\n      OPTIONAL { ?someone foaf:made ?homepage }\n"
        "      _:who foaf:schoolHomepage ?schoolPage }", (5, 7)),
    "syn-blabel-cross-union-bad": (
        "ASK { _:who foaf:homepage ?homepage\n      { ?someone foaf:made ?homepage }\n      UNION\n"
        "      { ?homepage foaf:maker ?someone }\n      _:who foaf:schoolHomepage ?schoolPage }", (7, 7)),
}

W3C_GOOD = {
    "syn-09": "SELECT * WHERE {\n  _:a ?p ?v .  _:a ?q 1\n}",
    "syn-10": "SELECT * WHERE {\n  { _:a ?p ?v .  _:a ?q _:a } UNION { _:b ?q _:c }\n}",
    "syn-11": "SELECT * WHERE {\n  _:a ?p ?v .  FILTER(true) . [] ?q _:a\n}",
    "syn-blabel-cross-filter": (
        'ASK { _:who foaf:homepage ?homepage\n      FILTER REGEX(?homepage, "^http://example.org/")\n'
        "      _:who foaf:schoolHomepage ?schoolPage }"),
}


@pytest.mark.parametrize("name", W3C_BAD)
def test_w3c_negative_tests_are_refused_at_the_second_use(name):
    text, (line, column) = W3C_BAD[name]
    with pytest.raises(QuerySyntaxError, match="blank node _:") as e:
        parse_query(P + text)
    assert (e.value.line, e.value.column) == (line, column)
    assert "first at" in e.value.message and e.value.text.startswith("_:")


@pytest.mark.parametrize("name", W3C_GOOD)
def test_w3c_positive_tests_parse(name):
    parse_query(P + W3C_GOOD[name])


def test_refused_atomically_by_every_engine():
    for algorithm in ("naive", "rtfm", "rtfs", "ibroker"):
        engine = Engine(algorithm)
        with pytest.raises(QuerySyntaxError):
            engine.register(P + W3C_BAD["syn-bad-36"][0], "bad")
        assert len(engine) == 0


def test_a_label_inside_one_pattern_still_joins():
    engine = Engine()
    engine.register("SELECT ?v { _:a <http://ex/p> ?v . FILTER(true) _:a <http://ex/q> 1 }", "q")
    pub = Publication("http://ex/s", [("<http://ex/s>", "<http://ex/p>", '"x"'),
                                      ("<http://ex/s>", "<http://ex/q>", '"1"^^<http://www.w3.org/2001/XMLSchema#integer>')])
    assert [m.bindings for m in engine.match(pub)] == [[{"v": '"x"'}]]


# ------------------------------------------------------------ a family of structures

LABELS = ["_:a", "_:b", "_:c"]


@st.composite
def group(draw, depth: int, top: bool = False):
    """A group's parts: ("triples", [label or None, ...]), ("filter",), ("group", parts),
    ("union", [parts, parts, ...]); OPTIONALs of triples only at the end of the top group."""
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["triples", "triples", "filter"] + (["group", "union"] if depth else [])))
        if kind == "triples":
            parts.append(("triples", draw(st.lists(st.sampled_from(LABELS + [None]), min_size=1, max_size=2))))
        elif kind == "filter":
            parts.append(("filter",))
        elif kind == "group":
            parts.append(("group", draw(group(depth - 1))))
        else:
            parts.append(("union", draw(st.lists(group(depth - 1), min_size=2, max_size=3))))
    if top:
        parts.append(("triples", ["_:z"]))  # at least one pattern in the required part
        for _ in range(draw(st.integers(0, 2))):
            parts.append(("optional", draw(st.lists(st.sampled_from(LABELS + [None]), min_size=1, max_size=2))))
    return parts


def render(parts, out: list[str], uses: list, counter: list[int]) -> None:
    """Write a group's text into `out`; record (offset, label, pattern number) in `uses`."""
    counter[0] += 1
    pattern = counter[0]
    out.append("{ ")
    for part in parts:
        if part[0] in ("triples", "optional"):
            if part[0] == "optional":
                counter[0] += 1
                out.append("OPTIONAL { ")
                pattern_here = counter[0]
            else:
                pattern_here = pattern
            for n, label in enumerate(part[1]):
                if label is None:
                    out.append(f"?v{n} <http://ex/p> ?o . ")
                else:
                    uses.append((sum(map(len, out)), label, pattern_here))
                    out.append(f"{label} <http://ex/p> ?o{n} . ")
            if part[0] == "optional":
                out.append("} ")
                counter[0] += 1
                pattern = counter[0]  # (nothing follows an OPTIONAL but another one)
        elif part[0] == "filter":
            out.append("FILTER(true) ")
        elif part[0] == "group":
            render(part[1], out, uses, counter)
            counter[0] += 1
            pattern = counter[0]
        else:
            for n, side in enumerate(part[1]):
                if n:
                    out.append("UNION ")
                render(side, out, uses, counter)
            counter[0] += 1
            pattern = counter[0]
    out.append("} ")


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(parts=group(2, top=True))
def test_refused_exactly_when_a_label_spans_two_patterns(parts):
    out: list[str] = ["SELECT * WHERE "]
    uses: list = []
    render(parts, out, uses, [0])
    text = "".join(out)
    first: dict[str, int] = {}
    expected = None
    for offset, label, pattern in uses:  # in text order
        if first.setdefault(label, pattern) != pattern:
            expected = offset
            break
    if expected is None:
        try:
            parse_query(text)
        except QueryError as e:  # other rules may refuse the structure, never for a label
            assert "blank node" not in str(e), text
            assert isinstance(e, UnsupportedQueryError), text
    else:
        with pytest.raises(QuerySyntaxError, match="blank node") as e:
            parse_query(text)
        assert (e.value.line, e.value.column) == (1, expected + 1), text
