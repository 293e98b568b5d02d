"""ORDER BY's order of RDF terms (SPARQL 1.1 §15.1), as a sort key: `order_key`.

SPARQL orders an unbound value (or an error) before blank nodes, blank
nodes before IRIs, IRIs before literals; IRIs by their characters (code
points, as simple literals compare); and literals by the ``<`` operator
where it is defined (§17.3): numbers of every numeric type together by
value, strings (simple literals and xsd:string, one term in RDF 1.1) by
code points, booleans false before true, dateTimes as instants. Elsewhere
SPARQL leaves the order open, and sorting needs one that is *total* (no
pair unordered, never an exception) and *transitive*. `order_key` returns a
tuple that Python sorts in such an order, refining ``<`` everywhere ``<``
decides:

1. unbound and `ERROR` (ORDER BY treats an expression in error as
   unbound, as Oxigraph does); then blank nodes by label; then IRIs;
2. literals, in families, in this order: numbers, strings, language-tagged
   strings, booleans, dateTimes, dates, and last every other literal (other
   datatypes, ill-typed literals such as ``"abc"^^xsd:integer``);
3. within a family, by value: numbers by their *exact* value (a float or
   double is the binary fraction it holds; a decimal is not rounded to a
   double first, so ``0.1 < 0.1e0`` although ``0.1 = 0.1e0`` under
   promotion: ``<`` on promoted values is not transitive, exact values
   are), NaN before -INF; language-tagged strings by text then tag;
   dateTimes and dates as instants, one without a timezone read in UTC as
   `rtf.query.values` compares them; other literals by datatype IRI then
   text;
4. terms of equal value (``1``, ``1.0``, ``"01"^^xsd:integer``, ``1.0e0``)
   by datatype IRI, then lexical form: no two different terms tie.

Oxigraph (``spareval``) also puts unbound < blank < IRI < literal and
orders literals by ``<`` where defined, but falls back to comparing
lexical forms across families, which is not transitive (``10 <
"5a"`` by text, ``"5a" < 9`` by text, ``9 < 10`` by value); the families
above replace that fallback. ORDER BY DESC is the caller's reverse.

>>> sorted(['"b"', '"10"^^<http://www.w3.org/2001/XMLSchema#integer>', '<http://a>', '_:x',
...         '"9.5"^^<http://www.w3.org/2001/XMLSchema#decimal>', None], key=order_key)
[None, '_:x', '<http://a>', '"9.5"^^<http://www.w3.org/2001/XMLSchema#decimal>', '"10"^^<http://www.w3.org/2001/XMLSchema#integer>', '"b"']
"""

from __future__ import annotations

from rtf.query.memo import bounded_by_chars
from rtf.query.terms import literal_parts
from rtf.query.values import (
    _INF,
    BOOLEAN,
    DATE,
    DATETIME,
    DECIMAL,
    DOUBLE,
    ERROR,
    STRING,
    _to_double,
    typed_value,
)

__all__ = ["order_key"]

_UNBOUND = (0,)
# Ranks of the kinds of terms, and of the families of literals.
_BLANK, _IRI, _LITERAL = 1, 2, 3
_NUMBER, _STRING, _LANG_STRING, _BOOLEAN, _DATETIME, _DATE, _OTHER = range(7)
_FAMILY_OF_KIND = {STRING: _STRING, BOOLEAN: _BOOLEAN, DATETIME: _DATETIME, DATE: _DATE}


def order_key(key):
    """A sort key for a term key, None (unbound) or `ERROR`, in ORDER BY ASC order.

    Keys of different terms never compare equal; sorting with them never raises.
    """
    if key is None or key is ERROR:
        return _UNBOUND
    if key[0] == "<":
        return (_IRI, key[1:-1])  # not the key: "<a/b>" < "<a>", as "/" < ">"
    if key[0] == "_":
        return (_BLANK, key)
    return _literal_order(key)


def _number_order(kind: int, value):
    """(class, nearest double, exact value): NaN, -INF, finite numbers, +INF.

    The nearest double decides almost every comparison fast; rounding to it
    never reverses an order, so the exact value (Python compares ints,
    Decimals and floats exactly) only breaks its ties.
    """
    if kind == DECIMAL:
        approx = _to_double(value)
        return (2, approx, value)  # a decimal too large for a double is beyond every double
    if value != value:
        return (0, 0.0, 0)
    if value in (_INF, -_INF):
        return (3 if value > 0 else 1, 0.0, 0)
    return (2, value, value)  # -0.0 is 0


@bounded_by_chars(4 << 20, weight=3)
def _literal_order(key: str) -> tuple:
    parts = literal_parts(key)
    if parts.lang is not None:
        return (_LITERAL, _LANG_STRING, parts.lexical, parts.lang)
    value = typed_value(key)
    if value is None:
        return (_LITERAL, _OTHER, parts.datatype, parts.lexical)
    kind, v = value
    if kind <= DOUBLE:
        return (_LITERAL, _NUMBER, _number_order(kind, v), parts.datatype, parts.lexical)
    if kind == STRING:
        return (_LITERAL, _STRING, v)
    if kind == DATETIME:
        whole, fraction = v
        return (_LITERAL, _DATETIME, whole, fraction, parts.lexical)
    return (_LITERAL, _FAMILY_OF_KIND[kind], v, parts.lexical)
