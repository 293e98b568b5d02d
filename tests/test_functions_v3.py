"""SPARQL 1.1's functions (§17.4) and casts (§17.5) as functions of term keys: every example
table of the spec, the W3C tests' cases, XPath's rules where SPARQL defers to them, and
pyoxigraph as the oracle over generated arguments where its reading agrees with the spec.

Terms are Turtle shorthand (`tests.sparql_oracle.key`); ``"error"`` is `ERROR`.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, assume, example, given, settings, strategies as st

from rtf.query.functions import (
    FUNCTION_ARITIES,
    FUNCTION_ARITY,
    FUNCTIONS,
    XSD_CASTS,
    iri_function,
    now_key,
    rand_key,
    struuid_key,
    uuid_key,
)
from rtf.query.literals import string_parts
from rtf.query.strings import xpath_replacement
from rtf.query.terms import XSD, literal_key, literal_parts
from rtf.query.values import ERROR, typed_value
from tests import sparql_oracle as oracle
from tests.sparql_oracle import key

# ------------------------------------------------------------ the spec's example tables

SPEC_EXAMPLES = [
    # 17.4.1.8 sameTerm, 17.4.2.1-3 isIRI, isBlank, isLiteral (the examples' terms)
    ("sameterm", ["<mailto:alice@work.example>", "<mailto:alice@work.example>"], "true"),
    ("sameterm", ['"Alice"', '"Ms A."'], "false"),
    ("sameterm", ['"100"^^<http://example.org/types#kilos>', '"100"^^<http://example.org/types#kilos>'], "true"),
    ("sameterm", ['"100"^^<http://example.org/types#kilos>', '"85"^^<http://example.org/types#kilos>'], "false"),
    ("sameterm", ["1", '"01"^^xsd:integer'], "false"),
    ("isiri", ["<mailto:alice@work.example>"], "true"),
    ("isuri", ['"bob@work.example"'], "false"),
    ("isblank", ["_:c"], "true"),
    ("isblank", ['"Alice B. Toeclips"'], "false"),
    ("isliteral", ['"bob@work.example"'], "true"),
    ("isliteral", ["<mailto:alice@work.example>"], "false"),
    # 17.4.2.4 isNumeric
    ("isnumeric", ["12"], "true"),
    ("isnumeric", ['"12"'], "false"),
    ("isnumeric", ['"12"^^xsd:nonNegativeInteger'], "true"),
    ("isnumeric", ['"1200"^^xsd:byte'], "false"),
    ("isnumeric", ["<http://example/>"], "false"),
    # 17.4.2.5-7 str, lang, datatype
    ("str", ["<mailto:alice@work.example>"], '"mailto:alice@work.example"'),
    ("str", ['"Alice"'], '"Alice"'),
    ("str", ['"1.50"^^xsd:decimal'], '"1.50"'),  # the lexical form, not the value's
    ("str", ["_:b"], "error"),
    ("lang", ['"Roberto"@es'], '"es"'),
    ("lang", ['"Robert"'], '""'),
    ("lang", ["<http://x>"], "error"),
    ("datatype", ['"42"^^xsd:integer'], "<http://www.w3.org/2001/XMLSchema#integer>"),
    ("datatype", ['"9.5"^^xsd:float'], "<http://www.w3.org/2001/XMLSchema#float>"),
    ("datatype", ['"Alice"'], "<http://www.w3.org/2001/XMLSchema#string>"),
    ("datatype", ['"chat"@fr'], "<http://www.w3.org/1999/02/22-rdf-syntax-ns#langString>"),
    ("datatype", ["<http://x>"], "error"),
    # 17.4.2.10-11 STRDT, STRLANG
    ("strdt", ['"123"', "<http://www.w3.org/2001/XMLSchema#integer>"], '"123"^^xsd:integer'),
    ("strdt", ['"iiii"', "<http://example/romanNumeral>"], '"iiii"^^<http://example/romanNumeral>'),
    ("strlang", ['"chat"', '"en"'], '"chat"@en'),
    # 17.4.3.2 STRLEN
    ("strlen", ['"chat"'], "4"),
    ("strlen", ['"chat"@en'], "4"),
    ("strlen", ['"chat"^^xsd:string'], "4"),
    # 17.4.3.3 SUBSTR
    ("substr", ['"foobar"', "4"], '"bar"'),
    ("substr", ['"foobar"@en', "4"], '"bar"@en'),
    ("substr", ['"foobar"^^xsd:string', "4"], '"bar"^^xsd:string'),
    ("substr", ['"foobar"', "4", "1"], '"b"'),
    ("substr", ['"foobar"@en', "4", "1"], '"b"@en'),
    ("substr", ['"foobar"^^xsd:string', "4", "1"], '"b"^^xsd:string'),
    # 17.4.3.4-5 UCASE, LCASE
    ("ucase", ['"foo"'], '"FOO"'),
    ("ucase", ['"foo"@en'], '"FOO"@en'),
    ("ucase", ['"foo"^^xsd:string'], '"FOO"^^xsd:string'),
    ("lcase", ['"BAR"'], '"bar"'),
    ("lcase", ['"BAR"@en'], '"bar"@en'),
    ("lcase", ['"BAR"^^xsd:string'], '"bar"^^xsd:string'),
    # 17.4.3.6-8 STRSTARTS, STRENDS, CONTAINS
    *[(f, [a, b], "true") for f, pairs in {
        "strstarts": [("foobar", "foo")], "strends": [("foobar", "bar")],
        "contains": [("foobar", "bar"), ("foobar", "foo")]}.items()
      for whole, part in pairs
      for a, b in [(f'"{whole}"', f'"{part}"'), (f'"{whole}"@en', f'"{part}"@en'),
                   (f'"{whole}"^^xsd:string', f'"{part}"^^xsd:string'),
                   (f'"{whole}"^^xsd:string', f'"{part}"'), (f'"{whole}"', f'"{part}"^^xsd:string'),
                   (f'"{whole}"@en', f'"{part}"'), (f'"{whole}"@en', f'"{part}"^^xsd:string')]],
    # 17.4.3.9 STRBEFORE
    ("strbefore", ['"abc"', '"b"'], '"a"'),
    ("strbefore", ['"abc"@en', '"bc"'], '"a"@en'),
    ("strbefore", ['"abc"@en', '"b"@cy'], "error"),
    ("strbefore", ['"abc"^^xsd:string', '""'], '""^^xsd:string'),
    ("strbefore", ['"abc"', '"xyz"'], '""'),
    ("strbefore", ['"abc"@en', '"z"@en'], '""'),
    ("strbefore", ['"abc"@en', '"z"'], '""'),
    ("strbefore", ['"abc"@en', '""@en'], '""@en'),
    ("strbefore", ['"abc"@en', '""'], '""@en'),
    # 17.4.3.10 STRAFTER
    ("strafter", ['"abc"', '"b"'], '"c"'),
    ("strafter", ['"abc"@en', '"ab"'], '"c"@en'),
    ("strafter", ['"abc"@en', '"b"@cy'], "error"),
    ("strafter", ['"abc"^^xsd:string', '""'], '"abc"^^xsd:string'),
    ("strafter", ['"abc"', '"xyz"'], '""'),
    ("strafter", ['"abc"@en', '"z"@en'], '""'),
    ("strafter", ['"abc"@en', '"z"'], '""'),
    ("strafter", ['"abc"@en', '""@en'], '"abc"@en'),
    ("strafter", ['"abc"@en', '""'], '"abc"@en'),
    # 17.4.3.11 ENCODE_FOR_URI
    ("encode_for_uri", ['"Los Angeles"'], '"Los%20Angeles"'),
    ("encode_for_uri", ['"Los Angeles"@en'], '"Los%20Angeles"'),
    ("encode_for_uri", ['"Los Angeles"^^xsd:string'], '"Los%20Angeles"'),
    # 17.4.3.12 CONCAT
    ("concat", ['"foo"', '"bar"'], '"foobar"'),
    ("concat", ['"foo"@en', '"bar"@en'], '"foobar"@en'),
    ("concat", ['"foo"^^xsd:string', '"bar"^^xsd:string'], '"foobar"^^xsd:string'),
    ("concat", ['"foo"', '"bar"^^xsd:string'], '"foobar"'),
    ("concat", ['"foo"@en', '"bar"'], '"foobar"'),
    ("concat", ['"foo"@en', '"bar"^^xsd:string'], '"foobar"'),
    # 17.4.3.13 langMatches (the example's titles, and "*")
    ("langmatches", ['"fr"', '"FR"'], "true"),
    ("langmatches", ['"fr-be"', '"FR"'], "true"),
    ("langmatches", ['"en"', '"FR"'], "false"),
    ("langmatches", ['""', '"*"'], "false"),
    ("langmatches", ['"en"', '"*"'], "true"),
    # 17.4.3.14-15 REGEX, REPLACE
    ("regex", ['"Alice"', '"^ali"', '"i"'], "true"),
    ("regex", ['"Bob"', '"^ali"', '"i"'], "false"),
    ("replace", ['"abcd"', '"b"', '"Z"'], '"aZcd"'),
    ("replace", ['"abab"', '"B"', '"Z"', '"i"'], '"aZaZ"'),
    ("replace", ['"abab"', '"B."', '"Z"', '"i"'], '"aZb"'),
    # 17.4.4 ABS, ROUND, CEIL, FLOOR
    ("abs", ["1"], "1"),
    ("abs", ["-1.5"], "1.5"),
    ("round", ["2.4999"], '"2"^^xsd:decimal'),
    ("round", ["2.5"], '"3"^^xsd:decimal'),
    ("round", ["-2.5"], '"-2"^^xsd:decimal'),
    ("ceil", ["10.5"], '"11"^^xsd:decimal'),
    ("ceil", ["-10.5"], '"-10"^^xsd:decimal'),
    ("floor", ["10.5"], '"10"^^xsd:decimal'),
    ("floor", ["-10.5"], '"-11"^^xsd:decimal'),
    # 17.4.5 YEAR ... TZ, on the spec's one dateTime
    *[(f, ['"2011-01-10T14:45:13.815-05:00"^^xsd:dateTime'], expected) for f, expected in [
        ("year", "2011"), ("month", "1"), ("day", "10"), ("hours", "14"), ("minutes", "45"),
        ("seconds", "13.815"), ("timezone", '"-PT5H"^^xsd:dayTimeDuration'), ("tz", '"-05:00"')]],
    ("timezone", ['"2011-01-10T14:45:13.815Z"^^xsd:dateTime'], '"PT0S"^^xsd:dayTimeDuration'),
    ("timezone", ['"2011-01-10T14:45:13.815"^^xsd:dateTime'], "error"),
    ("tz", ['"2011-01-10T14:45:13.815Z"^^xsd:dateTime'], '"Z"'),
    ("tz", ['"2011-01-10T14:45:13.815"^^xsd:dateTime'], '""'),
    # 17.4.6 hash functions
    *[(f, [arg], f'"{digest}"') for f, digest in [
        ("md5", "900150983cd24fb0d6963f7d28e17f72"),
        ("sha1", "a9993e364706816aba3e25717850c26c9cd0d89d"),
        ("sha256", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("sha384", "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed"
                   "8086072ba1e7cc2358baeca134c825a7"),
        ("sha512", "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
                   "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f")]
      for arg in ('"abc"', '"abc"^^xsd:string')],
]

#: 17.4.3.1.2: the argument-compatibility table, through STRSTARTS (an error when incompatible).
COMPATIBILITY = [
    ('"abc"', '"b"', True), ('"abc"', '"b"^^xsd:string', True), ('"abc"^^xsd:string', '"b"', True),
    ('"abc"^^xsd:string', '"b"^^xsd:string', True), ('"abc"@en', '"b"', True),
    ('"abc"@en', '"b"^^xsd:string', True), ('"abc"@en', '"b"@en', True), ('"abc"@fr', '"b"@ja', False),
    ('"abc"', '"b"@ja', False), ('"abc"', '"b"@en', False), ('"abc"^^xsd:string', '"b"@en', False),
]


def call(name: str, args: list[str]):
    return FUNCTIONS[name](*[key(a) for a in args])


def expect(expected: str):
    return ERROR if expected == "error" else key(expected)


@pytest.mark.parametrize("name, args, expected", SPEC_EXAMPLES,
                         ids=[f"{n}({', '.join(a)})" for n, a, _ in SPEC_EXAMPLES])
def test_the_spec_example_tables(name, args, expected):
    assert call(name, args) == expect(expected)


@pytest.mark.parametrize("first, second, compatible", COMPATIBILITY)
def test_argument_compatibility_table(first, second, compatible):
    for name in ("strstarts", "strends", "contains", "strbefore", "strafter"):
        assert (call(name, [first, second]) is not ERROR) == compatible, name


def test_iri_examples_and_base_resolution():
    assert iri_function(key('"http://example/"'), None) == "<http://example/>"
    assert iri_function("<http://example/>", None) == "<http://example/>"
    # W3C iri01: BASE <http://example.org/> ... URI("uri"), IRI("iri")
    assert iri_function(key('"uri"'), "http://example.org/") == "<http://example.org/uri>"
    assert iri_function(key('"iri"^^xsd:string'), "http://example.org/") == "<http://example.org/iri>"
    assert iri_function(key('"../c"'), "http://ex/a/b") == "<http://ex/c>"
    assert iri_function(key('"c"'), None) is ERROR           # relative, and no base
    assert iri_function(key('"a b"'), "http://ex/") is ERROR  # not an IRI reference
    assert iri_function(key('"x> <p> <o> . <y"'), "http://ex/") is ERROR
    for other in ('"x"@en', "1", "_:b"):
        assert iri_function(key(other), "http://ex/") is ERROR


def test_the_functions_with_context_make_fresh_terms_of_their_type():
    uuids = {uuid_key() for _ in range(50)}
    assert len(uuids) == 50 and all(re.fullmatch(r"<urn:uuid:[0-9a-f-]{36}>", u) for u in uuids)
    assert re.fullmatch(r'"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}"', struuid_key())
    for _ in range(200):
        kind, value = typed_value(rand_key())
        assert rand_key().endswith(f"^^<{XSD}double>") and 0 <= value < 1


@pytest.mark.parametrize("instant, expected", [
    (datetime(2011, 1, 10, 14, 45, 13, 815000, timezone(timedelta(hours=-5))), "2011-01-10T14:45:13.815-05:00"),
    (datetime(2011, 1, 10, 14, 45, 13, tzinfo=timezone.utc), "2011-01-10T14:45:13Z"),
    (datetime(5, 1, 1), "0005-01-01T00:00:00Z"),                          # naive: UTC; 4-digit year
    (datetime(2020, 1, 1, 0, 0, 0, 1, timezone(timedelta(minutes=330))), "2020-01-01T00:00:00.000001+05:30"),
])
def test_now_is_the_given_instant_as_an_xsd_datetime(instant, expected):
    assert now_key(instant) == key(f'"{expected}"^^xsd:dateTime')
    assert FUNCTIONS["tz"](now_key(instant)) is not ERROR


def test_arities():
    assert FUNCTION_ARITIES["concat"] == (0, None)
    assert FUNCTION_ARITIES["substr"] == (2, 3) and FUNCTION_ARITIES["replace"] == (3, 4)
    assert FUNCTION_ARITIES["regex"] == (2, 3) and FUNCTION_ARITIES["rand"] == (0, 0)
    assert set(FUNCTIONS) - {"+", "-"} <= set(FUNCTION_ARITIES)
    # version 2's table keeps its names and ints, for the version 2 parser
    assert FUNCTION_ARITY["contains"] == 2 and FUNCTION_ARITY["bound"] == 1
    assert "concat" not in FUNCTION_ARITY


def test_every_function_takes_its_number_of_arguments_and_never_raises():
    samples = [key(t) for t in ('"a"', '"a"@en', "1", "1.5", "1e0", "true", "<http://x>", "_:b",
                                '"2011-01-10T14:45:13Z"^^xsd:dateTime', '"x"^^<http://e/t>')]
    for name, function in FUNCTIONS.items():
        low, high = FUNCTION_ARITIES.get(name, (1, 1))
        for n in range(low, min(high if high is not None else 3, 4) + 1):
            for i in range(len(samples)):
                args = [samples[(i + j) % len(samples)] for j in range(n)]
                result = function(*args)
                assert result is ERROR or isinstance(result, str), (name, args)


# ------------------------------------------------------------ the W3C tests' cases

W3C_CASES = [
    # functions/replace01 (data3.ttl), replace02, replace03
    ("replace", ['"English"@en', '"[^a-z0-9]"', '"-"'], '"-nglish"@en'),
    ("replace", ['"Français"@fr', '"[^a-z0-9]"', '"-"'], '"-ran-ais"@fr'),
    ("replace", ['"日本語"@ja', '"[^a-z0-9]"', '"-"'], '"---"@ja'),
    ("replace", ['"abc"^^xsd:string', '"[^a-z0-9]"', '"-"'], '"abc"'),
    ("replace", ["7", '"[^a-z0-9]"', '"-"'], "error"),
    ("replace", ['"banana"', '"ana"', '"*"'], '"b*na"'),            # non-overlapping, from the left
    ("replace", ['"abcd"', '"(ab)|(a)"', '"[1=$1][2=$2]"'], '"[1=ab][2=]cd"'),
    ("replace", ['"ABAB"', '"b"', '"Z"', '"i"'], '"AZAZ"'),         # replace-case-insensitive
    # functions/strbefore02, strafter02 (data4.ttl)
    ("strbefore", ['"abc"@en', '"b"'], '"a"@en'),
    ("strbefore", ['"abc"@en', '"b"@cy'], "error"),
    ("strbefore", ['"abc"', '""@en'], "error"),
    ("strbefore", ['"abc"@en', '"xyz"^^xsd:string'], '""'),
    ("strafter", ['"abc"', '"b"^^xsd:string'], '"c"'),
    ("strafter", ['"abc"@en', '""@en'], '"abc"@en'),
    # functions/substring01-non-bmp, substring02-non-bmp, length01-non-bmp, encode01-non-bmp
    ("substr", ['"👪"', "1", "1"], '"👪"'),
    ("substr", ['"👨\u200d👩\u200d👧\u200d👦"', "1", "1"], '"👨"'),
    ("substr", ['"👪"', "2"], '""'),
    ("substr", ['"👨\u200d👩\u200d👧\u200d👦"', "2"], '"\u200d👩\u200d👧\u200d👦"'),
    ("strlen", ['"👨\u200d👩\u200d👧\u200d👦"'], "7"),
    ("encode_for_uri", ['"👪"'], '"%F0%9F%91%AA"'),
    ("encode_for_uri", ['"食べ物"'], '"%E9%A3%9F%E3%81%B9%E7%89%A9"'),
    ("encode_for_uri", ['"100%"'], '"100%25"'),
    ("ucase", ['"𐐨"'], '"𐐀"'),                                   # ucase01-non-bmp (Deseret)
    # functions/concat-empty, concat-single
    ("concat", [], '""'),
    ("concat", ['"foo"@en'], '"foo"@en'),
    # functions/timezone-01, tz-01, seconds-01, hours-01 (data.ttl's dates)
    ("timezone", ['"2010-12-21T15:38:02-08:00"^^xsd:dateTime'], '"-PT8H"^^xsd:dayTimeDuration'),
    ("timezone", ['"2011-02-01T01:02:03"^^xsd:dateTime'], "error"),
    ("tz", ['"2010-12-21T15:38:02-08:00"^^xsd:dateTime'], '"-08:00"'),
    ("seconds", ['"2010-06-21T11:28:01Z"^^xsd:dateTime'], '"1"^^xsd:decimal'),
    ("hours", ['"2008-06-20T23:59:00Z"^^xsd:dateTime'], "23"),
    # functions/round01, ceil01, floor01, abs01 (data.ttl's numbers)
    ("round", ["-1.6"], '"-2"^^xsd:decimal'), ("round", ["1.1"], '"1"^^xsd:decimal'), ("round", ["-1"], "-1"),
    ("ceil", ["-1.6"], '"-1"^^xsd:decimal'), ("ceil", ["1.1"], '"2"^^xsd:decimal'), ("ceil", ["-2"], "-2"),
    ("floor", ["-1.6"], '"-2"^^xsd:decimal'), ("floor", ["2.5"], '"2"^^xsd:decimal'),
    ("abs", ["-2"], "2"), ("abs", ["-1.6"], "1.6"),
    # functions/strlang03-rdf11, strdt03-rdf11: only simple literals (and xsd:string) are lexical forms
    ("strlang", ['"foo"', '"en-US"'], '"foo"@en-us'),
    ("strlang", ['"bar"@en', '"en-US"'], "error"),
    ("strlang", ["-1", '"en-US"'], "error"),
    ("strdt", ['"foo"', "<http://www.w3.org/2001/XMLSchema#string>"], '"foo"'),
    ("strdt", ['"bar"@en', "<http://www.w3.org/2001/XMLSchema#string>"], "error"),
    ("strdt", ['"2010-06-21T11:28:01Z"^^xsd:dateTime', "<http://www.w3.org/2001/XMLSchema#string>"], "error"),
    # functions/md5-02, sha1-02 ...: a tagged literal is not hashed
    ("md5", ['"食べ物"'], f'"{hashlib.md5("食べ物".encode()).hexdigest()}"'),
    ("md5", ['"abc"@en'], "error"),
    ("sha256", ["1"], "error"),
    # functions/isnumeric01
    ("isnumeric", ['"1"^^xsd:byte'], "true"),
    ("isnumeric", ['"abc"^^xsd:integer'], "false"),
]


@pytest.mark.parametrize("name, args, expected", W3C_CASES,
                         ids=[f"{n}({', '.join(a)})" for n, a, _ in W3C_CASES])
def test_the_w3c_function_tests(name, args, expected):
    assert call(name, args) == expect(expected)


# ------------------------------------------------------------ XPath's rules, and fixes

XPATH_CASES = [
    # fn:replace: an empty match is FORX0003, a bad replacement FORX0004
    ("replace", ['"abc"', '"b*"', '"x"'], "error"),
    ("replace", ['"abc"', '"x?"', '"x"'], "error"),
    ("replace", ['"abc"', '"^"', '"x"', '"m"'], "error"),
    ("replace", ['"abc"', '"b"', '"$"'], "error"),
    # (shorthand lexical forms are taken as written: '"a\\b"' is a, backslash, b)
    ("replace", ['"abc"', '"b"', '"a\\b"'], "error"),                # a backslash before "b"
    ("replace", ['"abc"', '"b"', '"\\$"'], '"a$c"'),
    ("replace", ['"abc"', '"b"', '"\\\\"'], '"a\\c"'),              # two backslashes are one
    ("replace", ['"abc"', '"b"', '"$0$0"'], '"abbc"'),
    ("replace", ['"abc"', '"(b)"', '"$10"'], '"ab0c"'),              # $1 then "0"
    ("replace", ['"abc"', '"(b)"', '"$2"'], '"ac"'),                 # no group 2, N <= 9: empty
    ("replace", ['"a.b"', '"."', '"$1"', '"q"'], '"a$1b"'),          # q: pattern and replacement literal
    ("replace", ['"abc"', '"("', '"x"'], "error"),                   # invalid pattern
    ("replace", ['"abc"', '"b"', '"x"', '"k"'], "error"),            # unknown flag
    ("replace", ['"abc"', '"b"@en', '"x"'], "error"),                # the pattern is a simple literal
    ("replace", ['"abc"', '"b"', '"x"@en'], "error"),
    ("regex", ['"abc"@en', '"B"', '"i"'], "true"),
    ("regex", ["<http://abc>", '"b"'], "error"),
    # fn:substring: positions counted from 1, everything before 1 dropped; integers only
    ("substr", ['"foobar"', "0"], '"foobar"'),
    ("substr", ['"foobar"', "-1", "3"], '"f"'),
    ("substr", ['"foobar"', "5", "-1"], '""'),
    ("substr", ['"foobar"', "2", "100"], '"oobar"'),
    ("substr", ['"foobar"', '"2"^^xsd:byte'], '"oobar"'),
    ("substr", ['"foobar"', "1.5"], "error"),
    ("substr", ['"foobar"', "2", "1e0"], "error"),
    # upper-case / lower-case are Unicode's full mappings
    ("ucase", ['"straße"@de'], '"STRASSE"@de'),
    ("lcase", ['"İ"'], '"i\u0307"'),
    ("encode_for_uri", ['"a~b_c.d-e!*()/?#"'], '"a~b_c.d-e%21%2A%28%29%2F%3F%23"'),
    # rounding: ties toward +INF, -0 kept for doubles, NaN and INF unchanged, types kept
    ("round", ["-0.5e0"], '"-0.0E0"^^xsd:double'),
    ("round", ["0.49999999999999994e0"], '"0.0E0"^^xsd:double'),
    ("round", ['"2.5"^^xsd:float'], '"3.0E0"^^xsd:float'),
    ("round", ['"NaN"^^xsd:double'], '"NaN"^^xsd:double'),
    ("ceil", ["-0.5e0"], '"-0.0E0"^^xsd:double'),
    ("floor", ['"-INF"^^xsd:double'], '"-INF"^^xsd:double'),
    ("round", ['"12345678901234567890123456789.5"^^xsd:decimal'],
     '"12345678901234567890123456790"^^xsd:decimal'),
    ("abs", ['"-5"^^xsd:byte'], "5"),
    ("abs", ['"x"'], "error"),
    # dates: the end of a day is the next day (fn:year-from-dateTime of its value; regression:
    # year("2011-12-31T24:00:00") was 2011, read from the lexical form)
    ("year", ['"2011-12-31T24:00:00"^^xsd:dateTime'], "2012"),
    ("day", ['"2011-12-31T24:00:00"^^xsd:dateTime'], "1"),
    ("hours", ['"2011-12-31T24:00:00"^^xsd:dateTime'], "0"),
    ("year", ['"-0044-03-15T12:00:00Z"^^xsd:dateTime'], "-44"),
    ("year", ['"12345-01-01T00:00:00Z"^^xsd:dateTime'], "12345"),
    ("year", ['"2011-01-10"^^xsd:date'], "2011"),                     # an extension, as Oxigraph
    ("hours", ['"2011-01-10"^^xsd:date'], "error"),
    ("month", ['"2011-02-30T00:00:00"^^xsd:dateTime'], "error"),      # ill-typed
    ("timezone", ['"2011-01-10T00:00:00+05:30"^^xsd:dateTime'], '"PT5H30M"^^xsd:dayTimeDuration'),
    ("timezone", ['"2011-01-10T00:00:00-00:00"^^xsd:dateTime'], '"PT0S"^^xsd:dayTimeDuration'),
    ("timezone", ['"2011-01-10-03:00"^^xsd:date'], '"-PT3H"^^xsd:dayTimeDuration'),
    ("seconds", ['"2011-01-10T00:00:05.250Z"^^xsd:dateTime'], "5.25"),
    # term constructors
    ("strlang", ['"a"', '""'], "error"),
    ("strlang", ['"a"', '"en-"'], "error"),
    ("strdt", ['"a"', '"b"'], "error"),
    ("strdt", ['"1"', "<http://www.w3.org/1999/02/22-rdf-syntax-ns#langString>"], "error"),
    ("strdt", ['"01"', "<http://www.w3.org/2001/XMLSchema#integer>"], '"01"^^xsd:integer'),
]


@pytest.mark.parametrize("name, args, expected", XPATH_CASES,
                         ids=[f"{n}({', '.join(a)})" for n, a, _ in XPATH_CASES])
def test_xpath_rules(name, args, expected):
    assert call(name, args) == expect(expected)


@pytest.mark.parametrize("replacement, groups, parts", [
    ("[1=$1][2=$2]", 2, ("[1=", 1, "][2=", 2, "]")),
    ("$123", 12, (12, "3")), ("$123", 0, ("23",)), ("$05", 1, ()), ("$012", 1, (1, "2")),
    ("\\$$0\\\\", 0, ("$", 0, "\\")), ("plain", 3, ("plain",)),
    ("$", 1, ERROR), ("x\\n", 1, ERROR), ("\\", 0, ERROR),
])
def test_replacement_strings(replacement, groups, parts):
    assert xpath_replacement(replacement, groups) == parts


def test_float_results_are_written_with_a_floats_shortest_digits():
    # Regression: a float result was written with the digits of the double holding it,
    # "1.0000000149011612E-1"^^xsd:float for 0.1.
    from rtf.query.functions import arithmetic
    assert arithmetic("+", key('"0.1"^^xsd:float'), key("0")) == key('"1.0E-1"^^xsd:float')
    assert FUNCTIONS["abs"](key('"-3.4028235E38"^^xsd:float')) == key('"3.4028235E38"^^xsd:float')
    assert FUNCTIONS["-"](key('"1.0E-45"^^xsd:float')) == key('"-1.0E-45"^^xsd:float')


# ------------------------------------------------------------------------ casts (§17.5)

def cast(target: str, term: str):
    return XSD_CASTS[XSD + target](key(term))


#: The W3C cast tests' data (cast/data.ttl) and what each cast gives ("error": no binding).
W3C_CAST_DATA = ["<http://example.org/z>", '"string"', '"-10.2E3"', '"+33.3300"', '"0.0"', '"0"',
                 '"0E1"', '"1.5"', '"1"', '"1E0"', '"13"', '"2002-10-10T17:00:00Z"', '"false"', '"true"',
                 "true", "false", '"0"^^xsd:boolean', "0", "1", "-1", "0.0", "1.0", "-1.0", "0E1", "1E0",
                 '"0E1"^^xsd:float', '"1E0"^^xsd:float', '"1.25"^^xsd:float', '"-7.875"^^xsd:float',
                 "2.5", "-2.5"]
W3C_CASTS = {
    "string": ['"http://example.org/z"', '"string"', '"-10.2E3"', '"+33.3300"', '"0.0"', '"0"', '"0E1"',
               '"1.5"', '"1"', '"1E0"', '"13"', '"2002-10-10T17:00:00Z"', '"false"', '"true"', '"true"',
               '"false"', '"false"', '"0"', '"1"', '"-1"', '"0"', '"1"', '"-1"', '"0"', '"1"', '"0"', '"1"',
               '"1.25"', '"-7.875"', '"2.5"', '"-2.5"'],
    "double": ["error", "error", "-1.02E4", "3.333E1", "0E0", "0E0", "0E0", "1.5E0", "1E0", "1E0", "13E0",
               "error", "error", "error", "1.0E0", "0E0", "0E0", "0E0", "1E0", "-1E0", "0E0", "1E0", "-1E0",
               "0E0", "1E0", "0E0", "1E0", "1.25E0", "-7.875E0", "2.5E0", "-2.5E0"],
    "decimal": ["error", "error", "error", "33.33", "0.0", "0.0", "error", "1.5", "1.0", "error", "13.0",
                "error", "error", "error", "1.0", "0.0", "0.0", "0.0", "1.0", "-1.0", "0.0", "1.0", "-1.0",
                "0.0", "1.0", "0.0", "1.0", "1.25", "-7.875", "2.5", "-2.5"],
    "integer": ["error", "error", "error", "error", "error", "0", "error", "error", "1", "error", "13",
                "error", "error", "error", "1", "0", "0", "0", "1", "-1", "0", "1", "-1", "0", "1", "0", "1",
                "1", "-7", "2", "-2"],
    "boolean": ["error", "error", "error", "error", "error", "false", "error", "error", "true", "error",
                "error", "error", "false", "true", "true", "false", "false", "false", "true", "true", "false",
                "true", "true", "false", "true", "false", "true", "true", "true", "true", "true"],
}


@pytest.mark.parametrize("target", sorted(W3C_CASTS))
def test_the_w3c_cast_tests(target):
    # Regression: xsd:string of a number was its lexical form ("1.0" for 1.0, "0" for
    # "0"^^xsd:boolean), where XPath's cast (and cast-string.srx) gives "1" and "false".
    for term, expected in zip(W3C_CAST_DATA, W3C_CASTS[target], strict=True):
        result = cast(target, term)
        if target == "double" and expected != "error":
            expected = f'"{expected}"^^xsd:double'
        assert oracle.same_result(result, None if expected == "error" else key(expected)), (term, result)


#: §17.5's table: from each type (a sample) to each of str flt dbl dec int dT bool.
CAST_TABLE = {
    '"1"':                                   "YMMMMMM",  # str and simple literal
    '"1.5"^^xsd:float':                      "YYYMMNY",
    "1.5e0":                                 "YYYMMNY",
    "1.5":                                   "YYYYYNY",
    "1":                                     "YYYYYNY",
    '"2011-01-10T14:45:13Z"^^xsd:dateTime':  "YNNNNYN",
    "true":                                  "YYYYYNY",
    "<http://example/>":                     "YNNNNNN",
}
TARGETS = ("string", "float", "double", "decimal", "integer", "dateTime", "boolean")
#: For "M": a value of the source type that casts, and one that does not.
MAYBE = {("string", t): (good, bad) for t, good, bad in [
    ("float", '"1e3"', '"x"'), ("double", '" INF "', '"1,5"'), ("decimal", '"-.5"', '"1e3"'),
    ("integer", '"+012"', '"1.0"'), ("dateTime", '"2011-01-10T24:00:00"', '"2011-01-10"'),
    ("boolean", '"0"', '"yes"')]}
MAYBE |= {(src, t): (good, bad) for src in ("float", "double") for t, good, bad in [
    ("decimal", "1.5e0", '"NaN"^^xsd:double'), ("integer", "-1.5e0", '"INF"^^xsd:double')]}


@pytest.mark.parametrize("source", sorted(CAST_TABLE))
def test_the_cast_table(source):
    row = CAST_TABLE[source]
    kind = {"1.5e0": "double", '"1.5"^^xsd:float': "float"}.get(source, "string")
    for target, allowed in zip(TARGETS, row, strict=True):
        if allowed == "M":
            good, bad = MAYBE[(kind, target)]
            if kind == "float":
                good, bad = (t.replace("e0", "").join(['"', '"^^xsd:float']) if t[0] != '"' else
                             t.replace("xsd:double", "xsd:float") for t in (good, bad))
            assert cast(target, good) is not ERROR and cast(target, bad) is ERROR, (source, target)
        else:
            assert (cast(target, source) is not ERROR) == (allowed == "Y"), (source, target)


@pytest.mark.parametrize("target, term, expected", [
    ("integer", "-1.9e0", "-1"),                             # truncation toward zero
    ("integer", '"1.9"^^xsd:float', "1"),
    ("integer", "1e30", "1000000000000000019884624838656"),  # the double's exact value
    ("decimal", "0.1e0", "0.1000000000000000055511151231257827021181583404541015625"),
    ("integer", '"  12\n"', "12"),                          # a string's whitespace is collapsed
    ("boolean", '" true "', "true"),
    ("boolean", '"TRUE"', "error"),
    ("double", '"1"', "1.0E0"),                             # results are canonical values
    ("float", "1e40", '"INF"^^xsd:float'),
    ("string", "1e7", '"1.0E7"'),
    ("string", "1e-7", '"1.0E-7"'),
    ("string", "123456.5e0", '"123456.5"'),
    ("string", "-0.0e0", '"-0"'),
    ("string", '"0.1"^^xsd:float', '"0.1"'),
    ("string", '"01"^^xsd:integer', '"1"'),
    ("string", '"5"^^xsd:byte', '"5"'),
    ("string", '"1.50"^^xsd:decimal', '"1.5"'),
    ("string", '"2002-10-10T17:00:00.500+00:00"^^xsd:dateTime', '"2002-10-10T17:00:00.5Z"'),
    ("string", '"2011-12-31T24:00:00"^^xsd:dateTime', '"2012-01-01T00:00:00"'),
    ("string", '"a"@en', "error"),                          # no rdf:langString row in the table
    ("string", '"x"^^<http://example/t>', "error"),
    ("string", '"abc"^^xsd:integer', "error"),               # ill-typed
    ("string", "_:b", "error"),
    ("dateTime", '"2011-01-10T10:00:00.500+00:00"', '"2011-01-10T10:00:00.5Z"^^xsd:dateTime'),
    ("dateTime", '"2011-01-10-05:00"^^xsd:date', '"2011-01-10T00:00:00-05:00"^^xsd:dateTime'),
    # xsd:date, beyond §17.5, as Oxigraph casts
    ("date", '"2011-01-10"', '"2011-01-10"^^xsd:date'),
    ("date", '"2011-02-30"', "error"),
    ("date", '"2011-01-10T10:00:00+02:00"^^xsd:dateTime', '"2011-01-10+02:00"^^xsd:date'),
    ("date", '"2011-12-31T24:00:00Z"^^xsd:dateTime', '"2012-01-01Z"^^xsd:date'),
    ("date", '"2011-01-10+00:00"^^xsd:date', '"2011-01-10Z"^^xsd:date'),
    ("date", "1", "error"),
])
def test_casts_by_hand(target, term, expected):
    result = cast(target, term)
    if expected == "error":
        assert result is ERROR
    elif target in ("integer", "decimal", "double", "boolean") and expected[0] != '"':
        assert result == key(expected if target != "double" else f'"{expected}"^^xsd:double')
    else:
        assert result == key(expected)


def test_decimal_results_keep_every_digit():
    # Regression: decimals were written through Decimal.normalize(), which rounds to the
    # context's 28 digits: xsd:decimal("0.12345678901234567890123456789012") lost its tail.
    digits = "0.12345678901234567890123456789012"
    assert cast("decimal", f'"{digits}"') == key(f'"{digits}"^^xsd:decimal')
    assert FUNCTIONS["abs"](key(f'"-{digits}"^^xsd:decimal')) == key(f'"{digits}"^^xsd:decimal')
    assert cast("string", f'"{digits}000"^^xsd:decimal') == key(f'"{digits}"')
    assert FUNCTIONS["-"](key(f'"{digits}"^^xsd:decimal')) == key(f'"-{digits}"^^xsd:decimal')


# --------------------------------------------- pyoxigraph as the oracle, over generated terms

ORACLE = settings(max_examples=int(__import__("os").environ.get("ORACLE_EXAMPLES", 150)), deadline=None, suppress_health_check=[HealthCheck.too_slow])
_in_oxigraphs_range = oracle.in_oxigraphs_range


def assert_canonical(result):
    """A literal result is the key the canonicaliser writes for it (one term, one key)."""
    if result is not ERROR and result[0] == '"':
        parts = literal_parts(result)
        datatype = None if parts.lang else parts.datatype
        assert result == literal_key(parts.lexical, datatype, parts.lang), result


#: The functions whose answer depends on the Unicode version's case mappings.
_CASE_MAPPING = frozenset({"ucase", "lcase"})


def _assigned_here(key: str) -> bool:
    """Every character of `key` is assigned in this Python's Unicode database (3.11: 14.0):
    Oxigraph's Rust knows newer ones (UCASE(U+A7CD) is U+A7CC in Unicode 16), whose case
    rtf maps as this Python does: as themselves."""
    return all(unicodedata.category(c) != "Cn" for c in key)


def check_against_oxigraph(name: str, args: list[str], *, close_decimals: bool = False):
    args = [oracle.as_oxigraph_sees(a) for a in args]
    assume(all(_in_oxigraphs_range(a) for a in args))
    if name in _CASE_MAPPING:
        assume(all(_assigned_here(a) for a in args))
    theirs = oracle.oxigraph(f"{name}({', '.join(oracle.sparql_term(a) for a in args)})")
    ours = FUNCTIONS[name](*args)
    assert_canonical(ours)
    if close_decimals and ours is not ERROR and theirs is not None and ours.endswith("decimal>"):
        assert oracle.decimal_close(ours, theirs), (name, args, ours, theirs)
    else:
        assert oracle.same_result(ours, theirs), (name, args, ours, theirs)


UNARY = ["str", "lang", "datatype", "isiri", "isblank", "isliteral", "isnumeric", "strlen",
         "ucase", "lcase", "encode_for_uri", "abs", "round", "ceil", "floor", "year", "month",
         "day", "hours", "minutes", "seconds", "timezone", "tz", "md5", "sha1", "sha256",
         "sha384", "sha512"]


@pytest.mark.parametrize("name", UNARY)
@ORACLE
@given(term=oracle.terms)
def test_unary_functions_agree_with_oxigraph(name, term):
    check_against_oxigraph(name, [term])


@pytest.mark.parametrize("name", ["strstarts", "strends", "contains", "strbefore", "strafter"])
@ORACLE
@given(data=st.data())
def test_string_pairs_agree_with_oxigraph(name, data):
    first = data.draw(st.one_of(oracle.string_literals, oracle.terms))
    text = (string_parts(first) or ("x",))[0]
    # the second argument is often a piece of the first, so that matches happen
    piece = data.draw(st.one_of(oracle.texts, st.just(text[: len(text) // 2]),
                                st.just(text[len(text) // 3:])))
    second = data.draw(st.one_of(st.just(literal_key(piece)), oracle.terms,
                                 oracle.languages.map(lambda lang: literal_key(piece, lang=lang))))
    check_against_oxigraph(name, [first, second])


@ORACLE
@given(args=st.lists(st.one_of(oracle.string_literals, oracle.terms), max_size=3))
def test_concat_agrees_with_oxigraph(args):
    check_against_oxigraph("concat", args)


@ORACLE
@given(source=st.one_of(oracle.string_literals, oracle.terms),
       start=st.one_of(st.integers(-3, 10).map(str), st.sampled_from(["1.5", "1e0", '"2"'])),
       length=st.one_of(st.none(), st.integers(-3, 10).map(str)))
def test_substr_agrees_with_oxigraph(source, start, length):
    check_against_oxigraph("substr", [source, key(start)] + ([] if length is None else [key(length)]))


_TAGS = st.sampled_from(["en", "EN", "en-US", "fr", "*", "", "en-", "de-CH-1996", "x y", "1"])


@pytest.mark.parametrize("name", ["langmatches", "strlang"])
@ORACLE
@given(first=st.one_of(_TAGS.map(lambda t: key(f'"{t}"')), oracle.string_literals, oracle.terms),
       second=st.one_of(_TAGS.map(lambda t: key(f'"{t}"')), oracle.terms))
def test_language_functions_agree_with_oxigraph(name, first, second):
    check_against_oxigraph(name, [first, second])


_DATATYPES = st.sampled_from([f"<{XSD}{t}>" for t in ("integer", "decimal", "double", "boolean",
                                                     "string", "dateTime", "date")]
                             + ["<http://example/romanNumeral>", '"http://x"'])


@ORACLE
@given(lexical=st.one_of(oracle.simple_literals, oracle.terms,
                         st.sampled_from(['"1"', '"01"', '"true"', '"2011-01-10"', '"abc"'])),
       datatype=_DATATYPES)
def test_strdt_agrees_with_oxigraph(lexical, datatype):
    check_against_oxigraph("strdt", [lexical, datatype])


@ORACLE
@given(a=oracle.terms.filter(lambda t: not t.startswith("_:")),
       b=oracle.terms.filter(lambda t: not t.startswith("_:")))
def test_same_term_agrees_with_oxigraph(a, b):
    check_against_oxigraph("sameterm", [a, a])
    check_against_oxigraph("sameterm", [a, b])


# Patterns on which RE2 under XPath's rules and Oxigraph's Rust regex agree, none matching "".
_PATTERNS = st.sampled_from(["a", "b.", "[a-c]+", "(a)(b)?", "^a", "c$", "é", "A|B", "x+y?",
                             "[^a-z0-9]", "👨", "(ab)|(a)"])
_REPLACEMENTS = st.sampled_from(["", "Z", "-", "[$1]", "$0$0", "<$2>", "é👨"])
_FLAGS = st.sampled_from([None, "", "i", "s", "m", "q", "ix"])


@ORACLE
@given(text=st.one_of(oracle.string_literals, oracle.terms), pattern=_PATTERNS,
       replacement=_REPLACEMENTS, flags=_FLAGS)
def test_regex_and_replace_agree_with_oxigraph(text, pattern, replacement, flags):
    tail = [] if flags is None else [key(f'"{flags}"')]
    assume(not (flags and "q" in flags and "$" in replacement))  # XPath 3: q makes $ literal
    check_against_oxigraph("regex", [text, key(f'"{pattern}"'), *tail])
    check_against_oxigraph("replace", [text, key(f'"{pattern}"'), key(f'"{replacement}"'), *tail])


@pytest.mark.parametrize("op", ["+", "-", "*", "/"])
@ORACLE
@given(a=st.one_of(oracle.numbers, oracle.terms), b=st.one_of(oracle.numbers, oracle.terms))
@example(a=literal_key("17014118346046924", XSD + "integer"), b=literal_key("0.0037", XSD + "decimal"))
def test_arithmetic_agrees_with_oxigraph(op, a, b):
    from rtf.query.functions import arithmetic
    a, b = oracle.as_oxigraph_sees(a), oracle.as_oxigraph_sees(b)
    assume(_in_oxigraphs_range(a) and _in_oxigraphs_range(b))
    # Oxigraph also adds durations and dates (SEP-0002), beyond SPARQL 1.1
    assume(not any(re.search(r"#(duration|date|dateTime)>$", t) for t in (a, b)))
    ours = arithmetic(op, a, b)
    assert_canonical(ours)
    # Oxigraph: 0 divided by a decimal that is not an integer is an error (0 / 0.5); XPath: 0.
    assume(not (op == "/" and ours is not ERROR and ours.endswith("decimal>")
                and typed_value(ours)[1] == 0))
    assume(ours is ERROR or _in_oxigraphs_range(ours))
    theirs = oracle.oxigraph(f"({oracle.sparql_term(a)}) {op} ({oracle.sparql_term(b)})")
    # Oxigraph errs where its 128-bit division overflows before the quotient is made.
    assume(not (op == "/" and theirs is None and ours is not ERROR
                and oracle.oxigraphs_division_overflows(a, b)))
    if ours is not ERROR and theirs is not None and op == "/" and ours.endswith("decimal>"):
        assert oracle.decimal_close(ours, theirs), (a, b, ours, theirs)
    else:
        assert oracle.same_result(ours, theirs), (a, b, ours, theirs)


_CASTABLE_TEXTS = st.sampled_from([
    "1", "+1", "-0", "0012", "1.5", ".5", "1.", "-1.50", "1e3", "1E-7", "INF", "-INF", "NaN", "true",
    "false", "TRUE", "0", "2011-01-10T10:00:00Z", "2011-01-10T24:00:00", "2011-01-10", "2011-01-10Z",
    "2011-02-30", "-0044-03-15", "12:00:00", "abc", ""]).map(literal_key)


@pytest.mark.parametrize("target", ["string", "integer", "decimal", "float", "double", "boolean",
                                    "dateTime", "date"])
@ORACLE
@given(term=st.one_of(oracle.terms, _CASTABLE_TEXTS))
def test_casts_agree_with_oxigraph(target, term):
    term = oracle.as_oxigraph_sees(term)
    assume(_in_oxigraphs_range(term))
    value = typed_value(term)
    # an ill-typed literal ("abc"^^xsd:integer) has no value to cast; Oxigraph casts its text
    assume(not (value is None and re.search(r"\^\^<http://www.w3.org/2001/XMLSchema#"
                                            r"(integer|decimal|double|float|boolean|date|dateTime)>$",
                                            term)))
    # Oxigraph 0.5 casts doubles to integers and decimals inexactly (3765e0 to 3764): see
    # test_float_and_double_cast_exactly for these casts
    assume(not (target in ("integer", "decimal") and value and value[0] in (1, 2)))
    if target == "string":
        # Oxigraph casts any literal to a string; §17.5 has no row for rdf:langString or
        # datatypes outside XSD's (an error here)
        assume(not re.search(r'(@[a-z-]+|#(gYear|duration)>|^"x"\^\^<http://example/type>)$', term))
        # and it writes large and small doubles without an exponent, where XPath has one
        assume(not (value and value[0] in (1, 2) and value[1] == value[1]
                    and not 1e-6 <= abs(value[1]) < 1e6 and value[1] != 0))
    else:
        # XPath collapses a string's whitespace before casting it; Oxigraph does not
        text = string_parts(term)
        assume(text is None or text[0] == text[0].strip(" \t\r\n"))
        # and reads "nan", "Infinity"... as Rust does; XSD's lexical space has NaN, INF, -INF, +INF
        assume(text is None or text[0] in ("NaN", "INF", "-INF", "+INF")
               or not re.fullmatch(r"[+-]?(inf|infinity|nan)", text[0], re.I))
    ours = XSD_CASTS[XSD + target](term)
    assert_canonical(ours)
    theirs = oracle.oxigraph(f"xsd:{target}({oracle.sparql_term(term)})")
    assert oracle.same_result(ours, theirs), (term, ours, theirs)


@settings(max_examples=500)
@given(x=st.floats(), width=st.sampled_from([32, 64]))
def test_float_and_double_cast_exactly(x, width):
    from decimal import Decimal
    from rtf.query.values import _to_float32
    if width == 32:
        x = _to_float32(x)
    source = literal_key(repr(x) if x == x and abs(x) != float("inf") else
                         {True: "NaN"}.get(x != x, "INF" if x > 0 else "-INF"),
                         XSD + ("float" if width == 32 else "double"))
    as_integer, as_decimal = XSD_CASTS[XSD + "integer"](source), XSD_CASTS[XSD + "decimal"](source)
    if x != x or abs(x) == float("inf"):
        assert as_integer is ERROR and as_decimal is ERROR
    else:
        assert typed_value(as_integer)[1] == int(x)           # truncated toward zero
        assert typed_value(as_decimal)[1] == Decimal(x)       # the binary value, exactly


_REFERENCES = st.one_of(st.sampled_from(["", "c", "../c", "./a/../b?x#y", "//host/p", "?q", "#f", "g:h",
                                         "http://a/b/../c", "http://[x", "a b", "é/ü", "%41", "a>b",
                                         "x\\u0041", "urn:x"]),
                        oracle.texts)
_BASES = st.sampled_from([None, "http://example.org/a/b", "urn:x:y", "http://ex/a?q#f", "file:///tmp/x"])


@ORACLE
@given(reference=_REFERENCES, base=_BASES, as_iri=st.booleans())
def test_iri_agrees_with_oxigraph(reference, base, as_iri):
    argument = literal_key(reference)
    if as_iri:
        assume(iri_function(argument, base) is not ERROR)
        argument = iri_function(argument, base)  # an IRI is returned as it is
    ours = iri_function(argument, base)
    assert ours is ERROR or (ours[0] == "<" and ours == str(__import__("pyoxigraph").NamedNode(ours[1:-1])))
    theirs = oracle.oxigraph(f"IRI({argument})", prefix=f"BASE <{base}>" if base else "")
    assert oracle.same_result(ours, theirs), (reference, base, ours, theirs)


@pytest.mark.parametrize("name", ["functions", "strings", "numerics", "datetimes", "hashes", "casts",
                                  "literals", "aggregates", "ordering"])
def test_the_docstring_examples_run(name):
    import doctest
    import importlib
    result = doctest.testmod(importlib.import_module(f"rtf.query.{name}"),
                             optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0
