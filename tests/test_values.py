"""SPARQL 1.1 value semantics (`rtf.query.values`): comparisons and effective boolean value.

Each table row is a hand-checked case with the reason its answer is right.
Terms are written in Turtle shorthand (``'"1"^^xsd:integer'``, ``'"chat"@fr'``,
``'<http://a>'``) and turned into canonical keys by `key`. The answers are
SPARQL 1.1's: §17.3 (operator mapping), §17.4.1.7 (RDFterm-equal), §17.2.2
(effective boolean value), and XPath Functions and Operators for the
numeric and date/time operators they map to.
"""

from __future__ import annotations

import copy
import itertools
import operator
import pickle
import re
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings, strategies as st

from rtf.query.terms import XSD, literal_key
from rtf.query.values import ERROR, compare, comparator, effective_boolean, typed_value

OPS = ("=", "!=", "<", "<=", ">", ">=")
_SHORTHAND = re.compile(r'"(.*)"(?:\^\^xsd:(\w+)|\^\^<([^>]*)>|@([\w-]+))?', re.S)


def key(term: str) -> str:
    """Canonical key of a term written in Turtle shorthand (xsd: prefix allowed)."""
    if term[0] in "<_":
        return term
    m = _SHORTHAND.fullmatch(term)
    lexical, xsd_name, datatype, lang = m.groups()
    return literal_key(lexical, XSD + xsd_name if xsd_name else datatype, lang)


def case_id(case) -> str:
    return f"{case[0]} {case[1]} {case[2]}"


def check(case):
    left, op, right, expected, _why = case
    assert compare(op, key(left), key(right)) is expected


# ------------------------------------------------------------------ ERROR


def test_error_is_a_readable_singleton():
    assert repr(ERROR) == "ERROR"
    assert type(ERROR)() is ERROR
    assert pickle.loads(pickle.dumps(ERROR)) is ERROR
    assert copy.deepcopy(ERROR) is ERROR


def test_error_refuses_to_be_read_as_a_boolean():
    # `if compare(...)` would silently turn an error into true or false.
    with pytest.raises(TypeError):
        bool(ERROR)


def test_unknown_operator_is_rejected():
    with pytest.raises(ValueError):
        comparator("<>")


# ------------------------------------------------------------------ numbers

NUMERIC_CASES = [
    ('"1"^^xsd:integer', "=", '"1.0"^^xsd:decimal', True, "integer promoted to decimal: 1 = 1.0"),
    ('"01"^^xsd:integer', "=", '"1"^^xsd:integer', True, "values compare, not lexical forms"),
    ('"+1"^^xsd:integer', "=", '"1"^^xsd:integer', True, "a leading + is part of the lexical space"),
    ('"-0"^^xsd:integer', "=", '"0"^^xsd:integer', True, "integers have one zero"),
    ('"1"^^xsd:integer', "=", '"1.0E0"^^xsd:double', True, "integer promoted to double"),
    ('"1"^^xsd:integer', "=", '"1"^^xsd:float', True, "integer promoted to float"),
    ('".5"^^xsd:decimal', "=", '"0.5E0"^^xsd:double', True, "0.5 is exact in binary"),
    ('"0.0E0"^^xsd:double', "=", '"-0.0E0"^^xsd:double', True, "IEEE 754: -0 equals +0"),
    ('"1"^^xsd:integer', "<", '"2"^^xsd:integer', True, "1 < 2"),
    ('"10"^^xsd:integer', ">", '"9"^^xsd:integer', True, "by value, although '10' < '9' as strings"),
    ('"1.5"^^xsd:decimal', "<", '"2"^^xsd:integer', True, "mixed integer/decimal by value"),
    ('"2"^^xsd:integer', "<=", '"2.0E0"^^xsd:double', True, "equal after promotion"),
    ('"2"^^xsd:integer', ">", '"2.0E0"^^xsd:double', False, "equal after promotion"),
    ('"5"^^xsd:byte', "=", '"5"^^xsd:integer', True, "types derived from integer are numbers"),
    ('"-6"^^xsd:negativeInteger', "<", '"5"^^xsd:unsignedLong', True, "derived types compare by value"),
    ('"0.30000000000000000001"^^xsd:decimal', ">", '"0.3"^^xsd:decimal', True,
     "decimals are exact: no double rounding between two decimals"),
    ('"9007199254740993"^^xsd:integer', ">", '"9007199254740992"^^xsd:integer', True,
     "integers are exact beyond 2^53"),
    ('"9007199254740993"^^xsd:integer', "=", '"9007199254740992"^^xsd:double', True,
     "promotion to double rounds 2^53 + 1 to 2^53 (XPath §1.2; rdflib compares exactly)"),
    ('"0.1"^^xsd:decimal', "=", '"0.1"^^xsd:double', True,
     "decimal 0.1 promoted to double is the double 0.1 (rdflib compares exactly)"),
    ('"1.1"^^xsd:decimal', "=", '"1.1"^^xsd:float', True,
     "decimal promoted to float: both are the float nearest 1.1 (rdflib compares exactly)"),
    ('"1.1"^^xsd:float', "=", '"1.1"^^xsd:double', False,
     "the float 1.1 is 1.10000002384..., promoted to double exactly (rdflib reads floats as doubles)"),
    ('"NaN"^^xsd:double', "=", '"NaN"^^xsd:double', False, "NaN equals nothing, itself included"),
    ('"NaN"^^xsd:double', "!=", '"NaN"^^xsd:double', True, "!= is the negation of ="),
    ('"NaN"^^xsd:float', "<", '"1"^^xsd:integer', False, "NaN is unordered (rdflib says true)"),
    ('"1"^^xsd:integer', "<=", '"NaN"^^xsd:double', False, "NaN is unordered (rdflib says true)"),
    ('"NaN"^^xsd:double', ">=", '"NaN"^^xsd:double', False, "NaN is unordered, even against itself"),
    ('"INF"^^xsd:double', ">", '"1E308"^^xsd:double', True, "INF is above every finite double"),
    ('"+INF"^^xsd:double', "=", '"INF"^^xsd:double', True, "XSD 1.1 allows +INF"),
    ('"1E400"^^xsd:double', "=", '"INF"^^xsd:double', True, "out-of-range doubles round to INF"),
    ('"-INF"^^xsd:float', "<", '"-3.4E38"^^xsd:float', True, "-INF is below every finite float"),
    ('"3.5E38"^^xsd:float', "=", '"INF"^^xsd:float', True, "beyond the largest float: INF"),
]


@pytest.mark.parametrize("case", NUMERIC_CASES, ids=case_id)
def test_numbers_compare_by_value_with_type_promotion(case):
    check(case)


ILL_TYPED = [
    ('"abc"^^xsd:integer', "not digits"),
    ('"1.5"^^xsd:integer', "integers have no fraction"),
    ('" 1"^^xsd:integer', "no whitespace around the lexical form"),
    ('"1_000"^^xsd:integer', "Python's int() accepts underscores, XSD does not"),
    ('"\u0663"^^xsd:integer', "Arabic-Indic digit three: int() accepts it, XSD does not"),
    ('"300"^^xsd:byte', "byte is -128..127"),
    ('"-1"^^xsd:nonNegativeInteger', "must be >= 0"),
    ('"0"^^xsd:positiveInteger', "must be >= 1"),
    ('"18446744073709551616"^^xsd:unsignedLong', "2^64 is one too many"),
    ('"1e5"^^xsd:decimal', "decimals have no exponent"),
    ('"inf"^^xsd:double', "infinity is spelled INF"),
    ('"Infinity"^^xsd:double', "infinity is spelled INF"),
    ('"nan"^^xsd:float', "NaN is case-sensitive"),
    ('"TRUE"^^xsd:boolean', "booleans are true, false, 1 or 0"),
    ('"2019-02-29T00:00:00Z"^^xsd:dateTime', "2019 is not a leap year"),
    ('"2020-01-01T24:00:01Z"^^xsd:dateTime', "only 24:00:00 may use hour 24"),
    ('"2020-01-01T00:00:60Z"^^xsd:dateTime', "XSD has no leap seconds"),
    ('"2020-01-01T00:00:00+15:00"^^xsd:dateTime', "timezones stop at 14:00"),
    ('"2020-1-01"^^xsd:date', "months have two digits"),
    ('"02020-01-01"^^xsd:date', "years of more than four digits have no leading zero"),
]


@pytest.mark.parametrize("term, why", ILL_TYPED, ids=[t for t, _ in ILL_TYPED])
def test_lexical_forms_outside_the_datatype_have_no_value(term, why):
    assert typed_value(key(term)) is None


WELL_TYPED = [
    ('"1."^^xsd:decimal', "a decimal may end with its point"),
    ('"-.5"^^xsd:decimal', "or start with it"),
    ('"1.e5"^^xsd:double', "mantissa with an empty fraction"),
    ('"-INF"^^xsd:float', "negative infinity"),
    ('"127"^^xsd:byte', "the largest byte"),
    ('"0"^^xsd:nonPositiveInteger', "zero is not positive"),
    ('"2020-02-29T00:00:00Z"^^xsd:dateTime', "2020 is a leap year"),
    ('"2000-02-29"^^xsd:date', "2000 is a leap year (divisible by 400)"),
    ('"0000-01-01T00:00:00Z"^^xsd:dateTime', "XSD 1.1 has a year zero (1 BCE)"),
    ('"2020-01-01T00:00:00.123456789-14:00"^^xsd:dateTime', "any number of fraction digits"),
]


@pytest.mark.parametrize("term, why", WELL_TYPED, ids=[t for t, _ in WELL_TYPED])
def test_lexical_forms_inside_the_datatype_have_a_value(term, why):
    assert typed_value(key(term)) is not None


# ------------------------------------------------------------------ strings

STRING_CASES = [
    ('"abc"', "<", '"abd"', True, "first difference decides"),
    ('"ab"', "<", '"abc"', True, "a proper prefix comes first"),
    ('""', "<", '"a"', True, "the empty string comes first"),
    ('"B"', "<", '"a"', True, "code points, not case-insensitive: U+0042 < U+0061"),
    ('"z"', "<", '"é"', True, "code points, not a locale: U+007A < U+00E9"),
    ('"\ufffd"', "<", '"\U0001F600"', True, "code points, not UTF-16 units (a surrogate D83D < FFFD)"),
    ('"abc"', "=", '"abc"^^xsd:string', True, "in RDF 1.1 a simple literal is an xsd:string"),
    ('"abc"', "=", '"abd"', False, "two strings are compared, not an error"),
    ('"abc"', "!=", '"abd"', True, "two strings are compared, not an error"),
    ('"abc"', ">=", '"abc"', True, "equal strings"),
    ('"1"', "=", '"1"^^xsd:integer', ERROR, "a string is not a number: different literals, no operator"),
    ('"1"', "<", '"1"^^xsd:integer', ERROR, "no ordering between a string and a number"),
]


@pytest.mark.parametrize("case", STRING_CASES, ids=case_id)
def test_strings_compare_by_code_point(case):
    check(case)


LANG_CASES = [
    ('"chat"@fr', "=", '"chat"@fr', True, "the same term"),
    ('"chat"@FR', "=", '"chat"@fr', True, "tags are case-insensitive: the keys are canonical"),
    ('"chat"@fr', "=", '"chat"@en', ERROR, "different literals without an operator (§17.4.1.7)"),
    ('"chat"@fr', "!=", '"chat"@en', ERROR, "!= has the same errors as ="),
    ('"chat"@fr', "=", '"chat"', ERROR, "a tagged string is not a simple literal"),
    ('"chat"@fr', "!=", '"chien"@fr', ERROR, "SPARQL 1.1 has no value comparison for tagged strings"),
    ('"chat"@fr', "<", '"chien"@fr', ERROR, "nor an ordering"),
]


@pytest.mark.parametrize("case", LANG_CASES, ids=case_id)
def test_language_tagged_strings_are_equal_only_as_the_same_term(case):
    check(case)


BOOLEAN_CASES = [
    ('"true"^^xsd:boolean', "=", '"1"^^xsd:boolean', True, "1 is a lexical form of true"),
    ('"0"^^xsd:boolean', "=", '"false"^^xsd:boolean', True, "0 is a lexical form of false"),
    ('"false"^^xsd:boolean', "<", '"true"^^xsd:boolean', True, "false < true (XPath op:boolean-less-than)"),
    ('"true"^^xsd:boolean', "<=", '"false"^^xsd:boolean', False, "false < true"),
    ('"true"^^xsd:boolean', "=", '"1"^^xsd:integer', ERROR, "booleans are not numbers"),
    ('"true"^^xsd:boolean', ">", '"0"^^xsd:integer', ERROR, "booleans are not numbers"),
    ('"yes"^^xsd:boolean', "=", '"true"^^xsd:boolean', ERROR, "an ill-typed literal has no value"),
]


@pytest.mark.parametrize("case", BOOLEAN_CASES, ids=case_id)
def test_booleans_order_false_before_true(case):
    check(case)


TIME_CASES = [
    ('"2020-01-01T01:00:00+01:00"^^xsd:dateTime', "=", '"2020-01-01T00:00:00Z"^^xsd:dateTime', True,
     "the same instant in two timezones"),
    ('"2019-12-31T23:59:59-05:00"^^xsd:dateTime', ">", '"2020-01-01T00:00:00Z"^^xsd:dateTime', True,
     "the left side is 2020-01-01T04:59:59Z"),
    ('"2020-01-01T00:00:00Z"^^xsd:dateTime', "<", '"2020-01-01T00:00:00.5Z"^^xsd:dateTime', True,
     "fractional seconds count"),
    ('"2020-01-01T00:00:00Z"^^xsd:dateTime', "=", '"2020-01-01T00:00:00.000Z"^^xsd:dateTime', True,
     "trailing zero fraction digits do not"),
    ('"2020-01-01T00:00:00.1234567890123456789012345678901Z"^^xsd:dateTime', "<",
     '"2020-01-01T00:00:00.1234567890123456789012345678902Z"^^xsd:dateTime', True,
     "every fraction digit counts, beyond Decimal's default 28 digits"),
    ('"2020-01-01T24:00:00Z"^^xsd:dateTime', "=", '"2020-01-02T00:00:00Z"^^xsd:dateTime', True,
     "24:00:00 is the next day's midnight (rdflib rejects hour 24)"),
    ('"-0001-01-01T00:00:00Z"^^xsd:dateTime', "<", '"0001-01-01T00:00:00Z"^^xsd:dateTime', True,
     "negative years are BCE (rdflib rejects them)"),
    ('"10000-01-01T00:00:00Z"^^xsd:dateTime', ">", '"9999-12-31T23:59:59Z"^^xsd:dateTime', True,
     "years go past 9999"),
    ('"2020-02-29T00:00:00Z"^^xsd:dateTime', "<", '"2020-03-01T00:00:00Z"^^xsd:dateTime', True,
     "a leap day is a day"),
    ('"2020-01-01T00:00:00"^^xsd:dateTime', "=", '"2020-01-01T00:00:00Z"^^xsd:dateTime', True,
     "no timezone: the implicit timezone, UTC"),
    ('"2020-01-01T00:00:00"^^xsd:dateTime', "<", '"2020-01-01T00:30:00+01:00"^^xsd:dateTime', False,
     "the right side is 2019-12-31T23:30:00Z, before midnight UTC"),
    ('"2020-01-01T00:00:00"^^xsd:dateTime', ">", '"2020-01-01T00:30:00+01:00"^^xsd:dateTime', True,
     "the right side is 2019-12-31T23:30:00Z, before midnight UTC"),
    ('"2020-01-01"^^xsd:date', "<", '"2020-01-02"^^xsd:date', True, "one day later"),
    ('"2020-01-01"^^xsd:date', "=", '"2020-01-01Z"^^xsd:date', True, "no timezone: UTC"),
    ('"2020-01-01+01:00"^^xsd:date', "<", '"2020-01-01Z"^^xsd:date', True,
     "the left day starts at 2019-12-31T23:00:00Z"),
    ('"2020-01-01"^^xsd:date', "=", '"2020-01-01T00:00:00Z"^^xsd:dateTime', ERROR,
     "a date is not a dateTime: no operator"),
    ('"2020-01-01"^^xsd:date', "<", '"2020-01-01T00:00:00Z"^^xsd:dateTime', ERROR,
     "a date is not a dateTime: no operator"),
    ('"2020-01-01T00:00:00Z"^^xsd:dateTime', "=", '"2020-01-01T00:00:00Z"', ERROR,
     "a dateTime is not a string"),
    ('"2020-02-30T00:00:00Z"^^xsd:dateTime', "<", '"2020-03-01T00:00:00Z"^^xsd:dateTime', ERROR,
     "February 30th is ill-typed"),
]


@pytest.mark.parametrize("case", TIME_CASES, ids=case_id)
def test_dates_and_datetimes_compare_as_time(case):
    check(case)


TERM_CASES = [
    ("<http://a>", "=", "<http://a>", True, "the same IRI"),
    ("<http://a>", "=", "<http://b>", False, "different IRIs are different terms"),
    ("<http://a>", "!=", "<http://b>", True, "different IRIs are different terms"),
    ("<http://a>", "<", "<http://b>", ERROR, "IRIs have no order in FILTER"),
    ("_:x", "=", "_:x", True, "the same blank node"),
    ("_:x", "=", "_:y", False, "different blank nodes"),
    ("_:x", "=", "<http://a>", False, "a blank node is not an IRI"),
    ("<http://a>", "=", '"http://a"', False, "an IRI is never a literal: false, not an error"),
    ("<http://a>", "!=", '"a"', True, "an IRI is never a literal"),
    ("<http://a>", ">", '"a"', ERROR, "no ordering between an IRI and a literal"),
    ('"x"^^<http://ex/dt>', "=", '"x"^^<http://ex/dt>', True, "an unknown datatype: the same term"),
    ('"x"^^<http://ex/dt>', "=", '"y"^^<http://ex/dt>', ERROR, "unknown datatype: cannot tell the values"),
    ('"x"^^<http://ex/dt>', "<=", '"x"^^<http://ex/dt>', ERROR, "unknown datatype: no ordering"),
    ('"abc"^^xsd:integer', "=", '"abc"^^xsd:integer', True, "an ill-typed literal is still itself"),
    ('"abc"^^xsd:integer', "=", '"1"^^xsd:integer', ERROR, "an ill-typed literal has no value"),
    ('"abc"^^xsd:integer', "!=", '"abd"^^xsd:integer', ERROR, "!= has the same errors as ="),
    ('"abc"^^xsd:integer', "<=", '"abc"^^xsd:integer', ERROR, "ordering needs values"),
]


@pytest.mark.parametrize("case", TERM_CASES, ids=case_id)
def test_other_terms_fall_back_to_rdfterm_equal(case):
    check(case)


# ----------------------------------------------------------- operator laws

POOL = [key(t) for t in [
    "<http://a>", "_:x", '"abc"', '"abd"', '""', '"chat"@fr', '"chat"@en',
    '"1"^^xsd:integer', '"1.0"^^xsd:decimal', '"1.5E0"^^xsd:double', '"NaN"^^xsd:double',
    '"2"^^xsd:float', '"true"^^xsd:boolean', '"false"^^xsd:boolean', '"abc"^^xsd:integer',
    '"2020-01-01T00:00:00Z"^^xsd:dateTime', '"2020-01-01"^^xsd:date', '"x"^^<http://ex/dt>',
]]
PAIRS = list(itertools.product(POOL, repeat=2))


def test_not_equal_is_the_negation_of_equal_with_the_same_errors():
    for a, b in PAIRS:
        eq = compare("=", a, b)
        assert compare("!=", a, b) is (ERROR if eq is ERROR else not eq), (a, b)


def test_orderings_are_mirror_images():
    for a, b in PAIRS:
        assert compare("<", a, b) is compare(">", b, a), (a, b)
        assert compare("<=", a, b) is compare(">=", b, a), (a, b)


def test_less_or_equal_is_less_or_equal_where_ordered():
    for a, b in PAIRS:
        lt = compare("<", a, b)
        if lt is not ERROR:
            assert compare("<=", a, b) is (lt or compare("=", a, b)), (a, b)


# ------------------------------------------------------------ random numbers

_PY = {"=": operator.eq, "!=": operator.ne, "<": operator.lt,
       "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def _double_lexical(x: float) -> str:
    return {"inf": "INF", "-inf": "-INF"}.get(repr(x), repr(x))


# (key, Python value, exact?) for integers, decimals and doubles.
numbers = st.one_of(
    st.integers(-10**30, 10**30).map(lambda n: (key(f'"{n}"^^xsd:integer'), n, True)),
    st.decimals(allow_nan=False, allow_infinity=False).map(
        lambda d: (key(f'"{d:f}"^^xsd:decimal'), d, True)),
    st.floats(allow_nan=False).map(
        lambda x: (key(f'"{_double_lexical(x)}"^^xsd:double'), x, False)),
)


@settings(max_examples=300, deadline=None)
@given(numbers, numbers, st.sampled_from(OPS))
def test_numbers_agree_with_python_after_promotion(a, b, op):
    (ka, va, exact_a), (kb, vb, exact_b) = a, b
    # XPath promotion: two exact numbers compare exactly, otherwise both as doubles.
    expected = _PY[op](va, vb) if exact_a and exact_b else _PY[op](float(va), float(vb))
    assert compare(op, ka, kb) is expected


@settings(max_examples=300, deadline=None)
@given(numbers, numbers)
def test_each_ordering_is_the_negation_of_its_opposite(a, b):
    ka, kb = a[0], b[0]
    assert compare("<", ka, kb) is not compare(">=", ka, kb)
    assert compare(">", ka, kb) is not compare("<=", ka, kb)
    assert compare("=", ka, kb) is not compare("!=", ka, kb)


offsets = st.integers(-14 * 60, 14 * 60).map(lambda m: timezone(timedelta(minutes=m)))
instants = st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30),
                        timezones=offsets)


@settings(max_examples=200, deadline=None)
@given(instants, instants, st.sampled_from(OPS))
def test_datetimes_with_timezones_agree_with_python(a, b, op):
    ka, kb = (key(f'"{t.isoformat()}"^^xsd:dateTime') for t in (a, b))
    assert compare(op, ka, kb) is _PY[op](a, b)


# --------------------------------------------------- cross-check with rdflib

# Pools in which SPARQL 1.1 is unambiguous and the pairs are of one kind.
# Pairs across kinds (a string and a number, a boolean and a dateTime, ...)
# are left out: SPARQL 1.1 has no operator for them (§17.3), so `=`/`!=`
# fall to RDFterm-equal and give a type error (§17.4.1.7), as do the
# orderings -- while rdflib orders literals of different types and answers
# `!=` true. The hand-checked tables above cover those pairs.
CROSS_CHECK_POOLS = {
    "numbers": ['"1"^^xsd:integer', '"01"^^xsd:integer', '"-0"^^xsd:integer', '"2"^^xsd:integer',
                '"-5"^^xsd:integer', '"1.0"^^xsd:decimal', '"1.5"^^xsd:decimal', '"-0.0"^^xsd:decimal',
                '"1.0E0"^^xsd:double', '"1.5e0"^^xsd:double', '"-0.0E0"^^xsd:double', '"2E0"^^xsd:double',
                '"INF"^^xsd:double', '"-INF"^^xsd:double', '"NaN"^^xsd:double', '"1.5"^^xsd:float',
                '"2"^^xsd:float', '"5"^^xsd:byte', '"5"^^xsd:nonNegativeInteger', '"1"^^xsd:long'],
    "strings": ['"abc"', '"abd"', '"ab"', '""', '"B"', '"a"', '"é"', '"z"', '"\ufffd"', '"\U0001F600"'],
    "booleans": ['"true"^^xsd:boolean', '"false"^^xsd:boolean', '"1"^^xsd:boolean', '"0"^^xsd:boolean'],
    "dateTimes": ['"2020-01-01T00:00:00Z"^^xsd:dateTime', '"2020-01-01T01:00:00+01:00"^^xsd:dateTime',
                  '"2020-01-01T00:00:00.5Z"^^xsd:dateTime', '"2019-12-31T23:59:59-05:00"^^xsd:dateTime',
                  '"2020-01-01T00:00:00.000Z"^^xsd:dateTime', '"1999-05-31T13:20:00-05:00"^^xsd:dateTime'],
}


def _rdflib_disagrees_with_sparql(left: str, op: str, right: str) -> bool:
    """Cases left out of the cross-check because rdflib answers them wrongly.

    NaN under an ordering: SPARQL 1.1 §17.3 maps ``<`` and friends to XPath
    op:numeric-less-than / -greater-than, which are false when either side
    is NaN (F&O §6.3); rdflib derives ``<`` as "not > and not =" and so
    answers ``1 < NaN`` and ``NaN < 1`` true. Hand-checked in NUMERIC_CASES.
    """
    return op not in ("=", "!=") and "NaN" in (left + right)


def _rdflib_keeps(op: str, rows: list[tuple[int, str, str]]) -> set[int]:
    """Indices of the rows for which rdflib's ``FILTER(?a op ?b)`` is true.

    One query per operator, ``VALUES (?i ?a ?b)``, rows told apart by ?i. A
    query in which rdflib raises is split in halves until the failing row
    stands alone; that row counts as an error, i.e. filtered out.
    """
    from rdflib import Graph

    values = " ".join(f"({i} {a} {b})" for i, a, b in rows)
    query = f"SELECT ?i WHERE {{ VALUES (?i ?a ?b) {{ {values} }} FILTER(?a {op} ?b) }}"
    try:
        return {int(row[0]) for row in Graph().query(query)}
    except Exception:
        if len(rows) == 1:
            return set()
        half = len(rows) // 2
        return _rdflib_keeps(op, rows[:half]) | _rdflib_keeps(op, rows[half:])


@pytest.mark.slow
@pytest.mark.parametrize("op", OPS)
def test_filters_agree_with_rdflib_where_sparql_is_unambiguous(op):
    pairs = [(key(a), key(b)) for pool in CROSS_CHECK_POOLS.values()
             for a, b in itertools.product(pool, repeat=2)
             if not _rdflib_disagrees_with_sparql(a, op, b)]
    kept = _rdflib_keeps(op, [(i, a, b) for i, (a, b) in enumerate(pairs)])
    # A filter that errors is false, so rdflib's error and false are alike.
    disagreements = [(a, op, b) for i, (a, b) in enumerate(pairs)
                     if (compare(op, a, b) is True) != (i in kept)]
    assert disagreements == []


# ---------------------------------------------------- effective boolean value

EBV_CASES = [
    ('"true"^^xsd:boolean', True, "a boolean is its value"),
    ('"0"^^xsd:boolean', False, "0 is a lexical form of false"),
    ('"yes"^^xsd:boolean', False, "a boolean with an invalid lexical form is false"),
    ('"5"^^xsd:integer', True, "a non-zero number"),
    ('"0"^^xsd:integer', False, "zero"),
    ('"0.0"^^xsd:decimal', False, "zero"),
    ('"-0.0E0"^^xsd:double', False, "negative zero is zero"),
    ('"NaN"^^xsd:double', False, "NaN is false"),
    ('"INF"^^xsd:float', True, "infinity is not zero"),
    ('"abc"^^xsd:integer', False, "a number with an invalid lexical form is false"),
    ('"300"^^xsd:byte', False, "out of the derived type's range: an invalid lexical form"),
    ('""', False, "the empty string"),
    ('"a"', True, "a non-empty string"),
    ('"false"', True, "a non-empty string, not a boolean"),
    ('""@en', False, "an empty tagged string"),
    ('"chat"@fr', True, "a non-empty tagged string"),
    ("<http://a>", ERROR, "IRIs have no EBV"),
    ("_:b", ERROR, "blank nodes have no EBV"),
    ('"2020-01-01"^^xsd:date', ERROR, "dates have no EBV"),
    ('"x"^^<http://ex/dt>', ERROR, "unknown datatypes have no EBV"),
]


@pytest.mark.parametrize("term, expected, why", EBV_CASES, ids=[t for t, _, _ in EBV_CASES])
def test_effective_boolean_value(term, expected, why):
    assert effective_boolean(key(term)) is expected
