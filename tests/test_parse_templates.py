"""Parse trees reused by token types (`rtf.parser.templates`) give exactly Lark's answer.

A text parsed after another of the same shape takes that one's tree with
its own tokens in the leaves: its query, or its error, must be exactly the
positioned parse's (`rtf.parser._parse_with_positions`, which never reuses
a tree). The texts below are made from a parsed one by replacing token
texts with others of the same type -- variables, strings (some that are
no full-text term), IRIs (some relative, some invalid), prefixed names
(some undefined), numbers, language tags -- so that each is parsed from
the first one's template.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rtf import parser
from rtf.parser.templates import _NO_TEMPLATE
from tests import worlds
from tests.test_parse_paths import outcome

_OTHERS = {
    "VAR1": ["?x", "?y", "?z", "?s", "?o", "?long_name"],
    "STRING": ['"rio"', '"games rio"', '"olymp*"', '"*"', '"  "', '"a*b"', "'x'", '"\\u00e9t\\u00e9"',
               '"\\uD800"', '"Río"'],
    "IRIREF": ["<http://ex.org/p>", "<http://ex.org/C1>", "<relative>", "<http://ex.org/q>",
               "<http://[::1/>", "<http://ex.org/\\u0020>"],
    "PNAME_LN": ["ex:p", "ex:q", "ex:C2", "nope:p", "xsd:integer", "rdfs:subClassOf", "ex:a\\.b"],
    "NUMBER": ["0", "1", "3", "12", "1.5", "2e3"],
    "LANGTAG": ["@en", "@fr-be", "@EN"],
}


@st.composite
def same_shape(draw):
    """A query text and another with the same token types and other token texts."""
    text = draw(worlds.queries())
    tokens = parser._templates()._tokens(text) or []
    out, at = [], 0
    for m in tokens:
        others = _OTHERS.get(m.lastgroup)
        if others and draw(st.booleans()):
            out.append(text[at:m.start()] + draw(st.sampled_from(others)))
            at = m.end()
    out.append(text[at:])
    return text, "".join(out)


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pair=same_shape())
def test_a_text_parsed_from_a_template_is_parsed_as_lark_parses_it(pair):
    first, second = pair
    assert outcome(parser._parse, first) == outcome(parser._parse_with_positions, first)
    expected = outcome(parser._parse_with_positions, second)
    got = outcome(parser._parse, second)
    assert got == expected
    if expected[0] == "query":
        assert got[1].branches == expected[1].branches and got[1].text == second


def test_the_second_text_of_a_shape_reuses_the_first_ones_tree():
    templates = parser._templates()
    templates.clear()
    a = 'SELECT ?s WHERE { ?s <http://ex/p> ?o FILTER ftcontains(?o, "rio") }'
    b = 'SELECT ?t WHERE { ?t <http://ex/q> ?v FILTER ftcontains(?v, "games in*") }'
    assert parser._parse(a).text == a and len(templates) == 1
    got = parser._parse(b)
    assert len(templates) == 1 and got == parser._parse_with_positions(b)
    assert str(got.branches[0]) == '(?t, <http://ex/q>, ?v, FT "games in*")'


def test_a_shape_whose_tokens_lark_reads_otherwise_is_never_reused():
    # After SELECT, Lark's lexer reads '*' as the projection star; the root pattern
    # alone would take it as a path modifier (it follows a letter): no template.
    templates = parser._templates()
    templates.clear()
    text = "SELECT*{ ?s <http://ex/p> ?o }"
    assert parser._parse(text) == parser._parse_with_positions(text)
    assert list(templates._templates.values()) == [_NO_TEMPLATE]
    assert parser._parse(text) == parser._parse_with_positions(text)


def test_the_cache_is_bounded_by_tokens():
    from rtf.parser.grammar import lark_parser
    from rtf.parser.templates import TemplateCache
    small = TemplateCache(lark_parser(positions=False), max_tokens=40)
    texts = [f"SELECT ?s WHERE {{ {' . '.join(['?s <http://ex/p> ?o'] * n)} }}" for n in range(1, 8)]
    for text in texts:
        query = small.build(text, lambda tree, reused: parser._build(text, tree, reused),
                            parser._parse_without_positions)
        assert query == parser._parse_with_positions(text)
    assert small.tokens <= 40 and 1 <= len(small) < len(texts)
