"""XSD casts (SPARQL 1.1 §17.5): ``xsd:integer(?x)`` and the other constructor functions.

SPARQL imports XPath's casting rules. What may be cast to what is the table
of §17.5 (Y always, M depending on the lexical form, N never):

==========  ===  ===  ===  ===  ===  ===  ====
from \\ to   str  flt  dbl  dec  int  dT   bool
==========  ===  ===  ===  ===  ===  ===  ====
str, ltrl   Y    M    M    M    M    M    M
flt, dbl    Y    Y    Y    M    M    N    Y
dec, int    Y    Y    Y    Y    Y    N    Y
dT          Y    N    N    N    N    Y    N
bool        Y    Y    Y    Y    Y    N    Y
IRI         Y    N    N    N    N    N    N
==========  ===  ===  ===  ===  ===  ===  ====

and, beyond the table, as Oxigraph does and XPath allows, ``xsd:date``:
from a string, a date or a dateTime (its day, with its timezone); and
``xsd:dateTime`` from a date (its midnight). Any other source --
language-tagged strings, literals of other datatypes, ill-typed literals
such as ``"abc"^^xsd:integer``, blank nodes -- is an error.

A cast yields a *value*, so its result is written in the canonical form of
the target type: ``xsd:double("1")`` is ``"1.0E0"^^xsd:double`` and
``xsd:string(1.0)`` is ``"1"`` (XPath's string of a number: an integral
decimal or a double between 1e-6 and 1e6 has no exponent and no ``.0``).
Casting a string collapses its surrounding whitespace first (XPath), so
``xsd:integer(" 12 ")`` is 12. Float and double cast to integer by
truncation toward zero, and to decimal exactly (``xsd:decimal(0.1e0)`` is
the double's exact value); NaN and the infinities cast to neither.

>>> XSD_CASTS["http://www.w3.org/2001/XMLSchema#string"]('"1.50"^^<http://www.w3.org/2001/XMLSchema#decimal>')
'"1.5"'
"""

from __future__ import annotations

from decimal import Decimal

from rtf.query.datetimes import canonical_date, canonical_date_time
from rtf.query.literals import (
    XSD_BOOLEAN,
    XSD_DATE,
    XSD_DATETIME,
    XSD_DECIMAL,
    XSD_DOUBLE,
    XSD_FLOAT,
    XSD_INTEGER,
    XSD_STRING,
    boolean_key,
    string_key,
    typed_key,
)
from rtf.query.numerics import DECIMAL, DOUBLE, FLOAT, number_key, numeric, xpath_number_string
from rtf.query.terms import literal_parts
from rtf.query.values import (
    _INF,
    _PARSERS,
    BOOLEAN,
    ERROR,
    _to_double,
    _to_float32,
    typed_value,
)

__all__ = ["XSD_CASTS"]

#: XML Schema whitespace, which casting from a string collapses.
_WHITESPACE = " \t\r\n"


def _number_from(kind: int, value, target: str):
    """A number of `kind` cast to the numeric or boolean `target`, as a key (or `ERROR`)."""
    if target == XSD_BOOLEAN:
        return boolean_key(not (value == 0 or value != value))
    if target in (XSD_INTEGER, XSD_DECIMAL):
        if kind != DECIMAL and (value != value or value in (_INF, -_INF)):
            return ERROR
        exact = Decimal(value)
        if target == XSD_INTEGER:
            return number_key(DECIMAL, int(exact), True)  # int() truncates toward zero
        return number_key(DECIMAL, exact, False)
    as_double = _to_double(value) if kind == DECIMAL else value
    if target == XSD_FLOAT:
        return number_key(FLOAT, _to_float32(as_double), False)
    return number_key(DOUBLE, as_double, False)


_NUMERIC_TARGETS = (XSD_INTEGER, XSD_DECIMAL, XSD_FLOAT, XSD_DOUBLE, XSD_BOOLEAN)


def _from_string(lexical: str, target: str):
    """A string cast to `target`: its lexical form read in the target's lexical space."""
    if target == XSD_STRING:
        return string_key(lexical)
    lexical = lexical.strip(_WHITESPACE)
    if target == XSD_DATETIME:
        canonical = canonical_date_time(lexical)
        return ERROR if canonical is None else typed_key(canonical, XSD_DATETIME)
    if target == XSD_DATE:
        canonical = canonical_date(lexical)
        return ERROR if canonical is None else typed_key(canonical, XSD_DATE)
    parsed = _PARSERS[target](lexical, target)
    if parsed is None:
        return ERROR
    kind, value = parsed
    if target == XSD_BOOLEAN:
        return boolean_key(value)
    return number_key(kind, value, target == XSD_INTEGER)


def _from_literal(key: str, parts, target: str):
    """A typed literal (not a string) cast to `target`."""
    source = parts.datatype
    if source in (XSD_DATETIME, XSD_DATE):
        if target == XSD_STRING:
            canonical = (canonical_date_time if source == XSD_DATETIME else canonical_date)(
                parts.lexical, source)
            return ERROR if canonical is None else string_key(canonical)
        if target == XSD_DATETIME:
            canonical = canonical_date_time(parts.lexical, source)
        elif target == XSD_DATE:
            canonical = canonical_date(parts.lexical, source)
        else:
            return ERROR
        return ERROR if canonical is None else typed_key(canonical, target)
    n = numeric(key)
    if n is not None:
        kind, value, integer = n
        if target == XSD_STRING:
            return string_key(xpath_number_string(kind, value, integer))
        return _number_from(kind, value, target) if target in _NUMERIC_TARGETS else ERROR
    value = typed_value(key)
    if value is None or value[0] != BOOLEAN:
        return ERROR  # an ill-typed literal, or a datatype no cast reads
    if target == XSD_STRING:
        return string_key("true" if value[1] else "false")
    return _number_from(DECIMAL, int(value[1]), target) if target in _NUMERIC_TARGETS else ERROR


def _cast_to(target: str):
    def cast(key):
        if key[0] == "<":
            return string_key(key[1:-1]) if target == XSD_STRING else ERROR
        if key[0] != '"':
            return ERROR
        parts = literal_parts(key)
        if parts.lang is not None:
            return ERROR
        if key[-1] == '"':
            return _from_string(parts.lexical, target)
        return _from_literal(key, parts, target)
    cast.__name__ = cast.__qualname__ = "cast_to_" + target.rpartition("#")[2]
    return cast


#: The XSD casts of SPARQL 1.1 §17.5 (and xsd:date), by target datatype IRI.
XSD_CASTS = {t: _cast_to(t) for t in (XSD_STRING, XSD_INTEGER, XSD_DECIMAL, XSD_FLOAT, XSD_DOUBLE,
                                      XSD_BOOLEAN, XSD_DATETIME, XSD_DATE)}
