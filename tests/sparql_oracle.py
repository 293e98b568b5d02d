"""Shared by the value-layer tests: terms in Turtle shorthand, terms to generate, and pyoxigraph's answer.

pyoxigraph (Oxigraph's ``spareval``) is the oracle of the property tests
where its reading agrees with SPARQL 1.1. Two things stand between a term
and Oxigraph's answer, and both are taken care of here:

- Oxigraph evaluates a literal of a known datatype as its *value*: the
  constant ``"01"^^xsd:integer`` is ``"1"`` to it, and so is what STR
  returns. `as_oxigraph_sees` gives the term Oxigraph works on, and the
  tests hand that same term to our functions.
- numeric results are written in other lexical forms (``"3"^^xsd:decimal``
  where we write ``"3.0"``): `same_result` compares numbers by datatype and
  value, everything else as terms.
"""

from __future__ import annotations

import re
from decimal import Decimal
from functools import lru_cache

import pyoxigraph as ox
from hypothesis import strategies as st

from rtf.query.terms import XSD, literal_key
from rtf.query.values import ERROR, typed_value

STORE = ox.Store()
PREFIXES = ("PREFIX xsd: <http://www.w3.org/2001/XMLSchema#> "
            "PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> ")

_SHORTHAND = re.compile(r'"(.*)"(?:\^\^xsd:(\w+)|\^\^<([^>]*)>|@([\w-]+))?', re.S)
_BARE = [(re.compile(r"[+-]?[0-9]+"), "integer"),
         (re.compile(r"[+-]?[0-9]*\.[0-9]+"), "decimal"),
         (re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)[eE][+-]?[0-9]+"), "double")]


def key(term: str) -> str:
    """The canonical key of a term in Turtle shorthand: ``"a"@en``, ``"1"^^xsd:byte``,
    ``<http://x>``, ``_:b``, and bare ``1``, ``1.5``, ``1e0``, ``true`` as SPARQL reads them."""
    if term[0] in "<_":
        return term
    if term in ("true", "false"):
        return literal_key(term, XSD + "boolean")
    for pattern, datatype in _BARE:
        if pattern.fullmatch(term):
            return literal_key(term, XSD + datatype)
    m = _SHORTHAND.fullmatch(term)
    lexical, xsd_name, datatype, lang = m.groups()
    return literal_key(lexical, XSD + xsd_name if xsd_name else datatype, lang)


def sparql_term(k: str) -> str:
    """A key written as a SPARQL expression (a blank node as ``BNODE("label")``)."""
    return f'BNODE("{k[2:]}")' if k.startswith("_:") else k


def oxigraph(expression: str, prefix: str = ""):
    """Oxigraph's value of ``SELECT (expression AS ?r) {}`` as a key, None when unbound."""
    rows = list(STORE.query(f"{PREFIXES}{prefix} SELECT ({expression} AS ?r) {{}}"))
    value = rows[0][0]
    return None if value is None else str(value)


@lru_cache(maxsize=None)
def as_oxigraph_sees(k: str) -> str:
    """The term Oxigraph evaluates for the constant `k` (its value's canonical term)."""
    if k.startswith("_:"):
        return k
    seen = oxigraph(k)
    return k if seen is None else seen


#: Datatypes whose literals Oxigraph turns into values (and writes back canonically).
_BY_VALUE = {XSD + t for t in ("integer", "decimal", "float", "double", "boolean", "dateTime", "date")}


def _datatype(k: str):
    m = re.search(r"\^\^<([^>]*)>$", k)
    return m.group(1) if m else None


def same_result(ours, theirs) -> bool:
    """Our result (a key or ERROR) against Oxigraph's (a key or None).

    Literals of the datatypes Oxigraph reads as values compare by value
    (``"1"^^xsd:boolean`` is its ``"true"``); other terms as terms.
    """
    if ours is ERROR or theirs is None:
        return ours is ERROR and theirs is None
    if _datatype(ours) in _BY_VALUE and _datatype(ours) == _datatype(theirs):
        a, b = typed_value(ours), typed_value(theirs)
        if a is not None and b is not None:  # valid literals: compare values
            a, b = a[1], b[1]
            return a == b or (a != a and b != b)
    if theirs.startswith("_:"):
        return ours.startswith("_:")
    return ours == theirs


def in_oxigraphs_range(k: str) -> bool:
    """Oxigraph's integers are 64-bit (and its decimals 128-bit): a bigger one is no number to it."""
    value = typed_value(k) if k[0] == '"' else None
    return value is None or value[0] != 0 or abs(value[1]) < 2 ** 62


def oxigraphs_division_overflows(a: str, b: str) -> bool:
    """Oxigraph divides two decimals in 128 bits of 18 fraction digits, scaling the dividend by
    the divisor's fraction digits first: `a / b` is an error to it when ``|a| * 10**digits(b)``
    is past that range (17014118346046924 / 0.0037 is; XPath's quotient is a decimal), found
    by bisecting pyoxigraph 0.5's answers."""
    va = typed_value(a) if a[0] == '"' else None
    vb = typed_value(b) if b[0] == '"' else None
    if va is None or vb is None or va[0] != 0 or vb[0] != 0:
        return False
    digits = max(0, -Decimal(vb[1]).normalize().as_tuple().exponent)
    return abs(Decimal(va[1])) * 10 ** digits * 10 ** 18 >= 2 ** 127


def decimal_close(ours: str, theirs: str, digits: int = 17) -> bool:
    """Two decimal keys equal to `digits` places (Oxigraph keeps 18 fraction digits)."""
    a, b = typed_value(ours)[1], typed_value(theirs)[1]
    return abs(Decimal(a) - Decimal(b)) <= Decimal(10) ** -digits * max(1, abs(Decimal(a)))


# ------------------------------------------------------------------- strategies

_SPECIAL = list("aAbBzZ09 ßİéÉ\u0301\u0308👨\u200d👩𝔸%/?#&=-_.~!*'()\"\\\t\n")
characters = st.one_of(st.sampled_from(_SPECIAL),
                       st.characters(blacklist_categories=("Cs",), max_codepoint=0x2FFFF))
texts = st.text(characters, max_size=8)
languages = st.sampled_from(["en", "en-us", "fr", "fr-be", "de-ch", "ja"])

simple_literals = texts.map(literal_key)
tagged_literals = st.builds(lambda t, lang: literal_key(t, lang=lang), texts, languages)
string_literals = st.one_of(simple_literals, tagged_literals)

integers = st.integers(-10**20, 10**20).map(lambda n: literal_key(str(n), XSD + "integer"))
decimals = st.decimals(min_value=-10**9, max_value=10**9, places=4, allow_nan=False).map(
    lambda d: literal_key(str(d), XSD + "decimal"))
doubles = st.floats().map(lambda x: literal_key(
    "NaN" if x != x else ("INF" if x > 0 else "-INF") if x in (float("inf"), float("-inf"))
    else repr(x), XSD + "double"))
floats32 = st.floats(width=32).map(lambda x: literal_key(
    "NaN" if x != x else ("INF" if x > 0 else "-INF") if x in (float("inf"), float("-inf"))
    else repr(x), XSD + "float"))
halves = st.integers(-40, 40).map(lambda n: literal_key(f"{n / 4}", XSD + "decimal"))
numbers = st.one_of(integers, decimals, doubles, floats32, halves)


def _date_time(year, month, day, hour, minute, second, fraction, tz):
    return (f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}"
            + (f".{fraction}" if fraction else "") + tz)


timezones = st.sampled_from(["", "Z", "+00:00", "-05:00", "+05:30", "+14:00", "-14:00"])
date_times = st.builds(_date_time, st.integers(1, 9999), st.integers(1, 12), st.integers(1, 28),
                       st.integers(0, 23), st.integers(0, 59), st.integers(0, 59),
                       st.sampled_from(["", "5", "815", "000", "25"]), timezones).map(
    lambda lexical: literal_key(lexical, XSD + "dateTime"))
dates = st.builds(lambda y, m, d, tz: f"{y:04d}-{m:02d}-{d:02d}{tz}", st.integers(1, 9999),
                  st.integers(1, 12), st.integers(1, 28), timezones).map(
    lambda lexical: literal_key(lexical, XSD + "date"))
booleans = st.sampled_from(["true", "false", "1", "0"]).map(
    lambda b: literal_key(b, XSD + "boolean"))
iris = st.sampled_from(["<http://example/>", "<http://example/a?b#c>", "<urn:x:y>",
                        "<http://ex/é%20>", "<mailto:alice@work.example>"])
blank_nodes = st.sampled_from(["_:b1", "_:other"])
other_literals = st.sampled_from([
    '"x"^^<http://example/type>', '"abc"^^<http://www.w3.org/2001/XMLSchema#integer>',
    '"1"^^<http://www.w3.org/2001/XMLSchema#gYear>', '"P1D"^^<http://www.w3.org/2001/XMLSchema#duration>'])
terms = st.one_of(string_literals, numbers, date_times, dates, booleans, iris, blank_nodes,
                  other_literals)
