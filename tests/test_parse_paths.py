"""The parser's two paths give the same answer: the fast one (no positions in
the tree) for every query it builds, the positioned one for every error.

`rtf.parser._parse` builds without positions and, when anything fails,
parses again with them; so a query and an error must be exactly those of
the positioned parse alone, on valid texts and on damaged ones.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rtf import parser
from rtf.errors import QueryError
from tests import worlds

_NOISE = st.sampled_from(list("{}()<>\"'?*.;,|/^!=&+-") + [
    " UNION ", " OPTIONAL ", " ftand ", " ftnear(3, 1) ", " MINUS ", " ?x ", " a ", "<p>/<q>*",
    " ex:p+ ", " FILTER ", " [ ", " ] ", "\\u0000", " BIND(1 AS ?z) ", " ftcontains(1, \"x\") "])


def outcome(parse, text):
    try:
        return ("query", parse(text))
    except QueryError as e:
        return ("error", type(e).__name__, str(e), e.line, e.column)


@st.composite
def texts(draw):
    text = draw(worlds.queries())
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(text)))
        cut = draw(st.integers(0, 3))
        text = text[:at] + draw(_NOISE) + text[at + cut:]
    return text


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts())
def test_the_fast_parse_answers_as_the_positioned_parse(text):
    expected = outcome(parser._parse_with_positions, text)
    assert outcome(parser._parse, text) == expected
    if expected[0] == "query":
        assert expected[1].text == text


_P = "<http://ex/p>"
_ALTS = " . ".join(f"?s (<http://ex/a{i}>|<http://ex/b{i}>) ?o{i}" for i in range(7))


@pytest.mark.parametrize("text", [
    f"CONSTRUCT {{ ?s {_P}/<http://ex/q> ?o }} WHERE {{ ?s {_P} ?o }}",  # a path in a template
    f"SELECT * {{ ?s {_P} ?o BIND(1 AS ?o) }}",                       # BIND of a bound variable
    f"SELECT ?o (COUNT(?s) AS ?n) {{ ?s {_P} ?o }} GROUP BY ?s",      # a variable not grouped
    f"SELECT * {{ ?s {_P} ?o FILTER(COUNT(?o) > 1) }}",               # an aggregate in a FILTER
    f"SELECT * {{ ?s {_P} ?o FROM <http://ex/g> }}",                  # (a parse error)
    f"SELECT * {{ GRAPH ?g {{ ?s {_P} ?o }} }}",                       # a named graph
    f"SELECT * {{ ?s {_P} ?o FILTER({'!' * 70}?o) }}",                # nested too deeply
    f"SELECT * {{ {_ALTS} }}",                                         # over the branch cap
    f"PREFIX ex: <http://ex/> SELECT * {{ ?s ex:p ?o FILTER ftcontains(?o, \"a\" ftnear(2, 1) \"b\") }}",
])
def test_errors_positioned_by_the_tree_are_the_positioned_parse_errors(text):
    expected = outcome(parser._parse_with_positions, text)
    assert expected[0] == "error" and expected[3] is not None
    assert outcome(parser._parse, text) == expected
