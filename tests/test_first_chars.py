"""Lexing by first character (`rtf.parser.first_chars`, `TemplateCache._tokens`) is exact.

`first_chars` must never leave out a character a match can begin with: a
terminal left out of a character's alternation would let a later one match
there, and a template would be chosen by the wrong token types. Strings
drawn to match each expression (hypothesis' `from_regex`) must begin with
one of its first characters; and the dispatched lexer must give, on any
text, exactly the tokens of Lark's whole alternation tried at each
position (the lexer it replaced).
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rtf import parser
from rtf.parser.first_chars import first_chars
from tests import worlds


def _root_scanner():
    lexer = parser._templates().parser.parser.lexer
    return getattr(lexer, "root_lexer", lexer).scanner


TERMINALS = [(t.name, t.pattern.to_regexp()) for t in _root_scanner().terminals]
FLAGS = _root_scanner().g_regex_flags
#: Beyond the grammar's terminals: the constructs `first_chars` reads or must refuse.
OTHERS = [r"(?<=[^\s])(\*|\+(?!\.?[0-9]))", r"(?i:straße|k)", r"[^a-c\d]x", r"(?:ab)?c", r"a*+b",
          r"(?>ab|c)d", r"\bword", r"[\w.]+:", r"(?i:[^K])", r"(?i:[\u212a])", r"(x|)y", r"\W\S", r"[^\D]",
          r".", r"a?", r"(a)\1"]


_PIECES = st.sampled_from([
    " ", "\t", "\n", "# note\n", "SELECT", "select", "ASK", "WHERE", "FILTER", "ftcontains", "ftand", "ftor",
    "ftnot", "ftnear", "a", "A", "in", "IN", "not", "true", "false", "PREFIX", "ex:", "ex:p", ":p", "ex:a.b",
    "?x", "$y", "?", "*", "+", "-", "+1", "-2.5e3", ".5", "12", "1.", "<http://ex.org/p>", "<a b>", "<",
    ">", "<=", "!=", "!", "&&", "||", "^^", "^", '"rio"', '"a\\"b"', "'x'", '"""long\n"""', '"open',
    "@en", "@en-GB", "_:b1", "[]", "[ ]", "[", "]", "{", "}", "(", ")", ",", ";", ".", "/", "|", "é",
    "Río", "日本", "\u212a", "ſ", "\x00", "\\", "`", "~", "%", "=",
])


def _texts(regexp: str):
    """Texts holding matches of `regexp`: drawn to match it (hypothesis cannot draw
    look-arounds: then only the others), and texts of any characters."""
    anything = st.text(alphabet=st.characters(max_codepoint=0x2200), max_size=12)
    if any(mark in regexp for mark in ("(?<", "(?=", "(?!")):
        return st.one_of(anything, st.lists(_PIECES, max_size=6).map("".join))
    return st.one_of(st.from_regex(re.compile(regexp, FLAGS), fullmatch=True), anything)


@pytest.mark.slow
@pytest.mark.parametrize("regexp", [r for _, r in TERMINALS] + OTHERS)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_match_begins_with_one_of_the_first_chars(regexp, data):
    found = first_chars(regexp, FLAGS)
    compiled = re.compile(regexp, FLAGS)
    text = data.draw(_texts(regexp))
    for pos in range(len(text) + 1):
        m = compiled.match(text, pos)
        if m is not None and found is not None:
            assert m.end() > pos, "an expression that can match empty must say None"
            assert text[pos] in found or ord(text[pos]) >= 128


def test_what_first_chars_knows():
    assert first_chars(r"(?i:ask)") == {"a", "A"}
    assert first_chars(r"[+-]?\d+") == set("+-0123456789")
    assert first_chars(r"(?<=x)\*") == {"*"}  # a look-behind is zero width
    assert first_chars(r"[^a]") == set(chr(i) for i in range(128)) - {"a"}
    assert first_chars(r"(?i)[^K]") == set(chr(i) for i in range(128)) - {"k", "K"}
    assert first_chars(r"(a)\1") == {"a"}
    for unsure in (r"(?i)\u212a", r"(?i)[\u212a]", r".", r"a?", r"(a)?\1", r"[^x]?"):
        assert first_chars(unsure) is None, unsure


def whole_alternation_tokens(text: str):
    """The lexer `_tokens` replaced: Lark's whole root alternation at each position."""
    scan = _root_scanner()._mres[0].scanner(text).match
    matches = list(iter(scan, None))
    if (matches[-1].end() if matches else 0) != len(text):
        return None
    ignore = parser._templates()._ignore
    return [m for m in matches if m.lastgroup not in ignore]


def _seen(matches):
    return None if matches is None else [(m.lastgroup, m.group(), m.start(), m.end()) for m in matches]




@settings(max_examples=800, deadline=None)
@given(text=st.one_of(st.lists(_PIECES, max_size=30).map("".join), st.text(max_size=40), worlds.queries()))
@example(text="SELECT ?s WHERE { ?s <http://ex/p> ?o FILTER ftcontains(?o, \"rio\") }")
@example(text="?s a* ?o")
def test_dispatched_tokens_are_the_whole_alternations(text):
    assert _seen(parser._templates()._tokens(text)) == _seen(whole_alternation_tokens(text))
