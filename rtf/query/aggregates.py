"""SPARQL 1.1's aggregates (§18.5.1): COUNT, SUM, AVG, MIN, MAX, SAMPLE, GROUP_CONCAT.

`aggregate` takes the values of an aggregate's expression over the
solutions of one group -- a term key per solution, or `ERROR` where the
expression raised an error or its variable is unbound -- and returns the
aggregate's key, or `ERROR`, which leaves the aggregate's variable unbound.
``COUNT(*)`` is the caller's: ``len(group)`` (of the distinct solutions
for ``COUNT(DISTINCT *)``). With ``distinct``, repeated terms count once
(§18.5.1: Distinct(M)); terms are compared as terms, so ``1`` and ``1.0``
are two values.

The readings taken, set against the spec's text and the W3C tests
(``sparql11/aggregates``):

- COUNT counts the values that are not errors ("remove error elements").
- SUM adds with ``op:numeric-add`` (type promotion as ``+``): over no
  values it is ``0`` (xsd:integer); one non-numeric value or one error
  makes it an error (``agg-err-01``: a blank node among the numbers).
- AVG is SUM / COUNT with ``/``'s promotion (integers give a decimal:
  ``agg-avg-01``, 2.22); over no values ``0`` (``agg-avg-03``). An error
  among the values is an error, even when every value is one: §18.5.1.4
  would read COUNT (which drops errors) as 0 and give ``0``, but that
  clause is there for the empty group; Oxigraph and Jena fail the average.
- MIN and MAX take the first and last value in ORDER BY's order
  (`rtf.query.ordering`), so they work on any terms (``agg-err-01``: the
  MIN of ``1, _:b2, 3, 4`` is the blank node); over no values they are an
  error (``Min({}) = error``; ``agg-empty-group-max-2``); an error among
  the values is an error.
- SAMPLE returns the first value that is not an error; an error when
  there is none (``Sample({}) = error``).
- GROUP_CONCAT joins the lexical forms of string literals with the
  separator: ``""`` over no values. Its result is always a simple literal:
  the spec builds it with ``CONCAT(S0, sep, ...)`` and ``CONCAT("", S0)``,
  and a simple separator (or ``""``) among the arguments makes CONCAT's
  result simple, so ``"1"@en`` alone concatenates to ``"1"``
  (``agg-groupconcat-4`` and ``-6``; Oxigraph keeps a common language tag
  instead). Any other term (a number, an IRI) or an error makes it an
  error, as it does CONCAT.

>>> X = "^^<http://www.w3.org/2001/XMLSchema#integer>"
>>> aggregate("avg", ['"1"' + X, '"2"' + X])
'"1.5"^^<http://www.w3.org/2001/XMLSchema#decimal>'
>>> aggregate("sum", ['"1"' + X, ERROR]), aggregate("count", ['"1"' + X, ERROR])
(ERROR, '"1"^^<http://www.w3.org/2001/XMLSchema#integer>')
"""

from __future__ import annotations

from collections.abc import Iterable

from rtf.query.literals import integer_key, string_key, string_parts
from rtf.query.numerics import DECIMAL, number_key, numeric, numeric_op
from rtf.query.ordering import order_key
from rtf.query.values import ERROR

__all__ = ["aggregate", "AGGREGATES"]

_ZERO = (DECIMAL, 0, True)


def _count(values, separator):
    return integer_key(sum(1 for v in values if v is not ERROR))


def _sum(values):
    """(kind, value, integer) of the sum of the values, or `ERROR`."""
    total = _ZERO
    for key in values:
        n = ERROR if key is ERROR else numeric(key)
        if n is None or n is ERROR:
            return ERROR
        total = numeric_op("+", total, n)
        if total is ERROR:
            return ERROR
    return total


def _sum_key(values, separator):
    total = _sum(values)
    return ERROR if total is ERROR else number_key(*total)


def _avg(values, separator):
    if not values:
        return integer_key(0)
    total = _sum(values)
    if total is ERROR:
        return ERROR
    mean = numeric_op("/", total, (DECIMAL, len(values), True))
    return ERROR if mean is ERROR else number_key(*mean)


def _extreme(pick):
    def extreme(values, separator):
        if not values or ERROR in values:
            return ERROR
        return pick(values, key=order_key)
    return extreme


def _sample(values, separator):
    return next((v for v in values if v is not ERROR), ERROR)


def _group_concat(values, separator):
    texts = []
    for key in values:
        s = ERROR if key is ERROR else string_parts(key)
        if s is None or s is ERROR:
            return ERROR
        texts.append(s[0])
    return string_key(separator.join(texts))


#: The aggregates by name (lower case): function of (values, separator) -> key or ERROR.
AGGREGATES = {
    "count": _count, "sum": _sum_key, "avg": _avg, "min": _extreme(min), "max": _extreme(max),
    "sample": _sample, "group_concat": _group_concat,
}


def _distinct(values: Iterable) -> list:
    """The values without repeats, in first-seen order (`ERROR` kept once)."""
    return list(dict.fromkeys(values))


def aggregate(name: str, values: Iterable, *, distinct: bool = False, separator: str = " "):
    """The aggregate `name` (COUNT, SUM, AVG, MIN, MAX, SAMPLE, GROUP_CONCAT) of a group's values.

    `values` holds one entry per solution of the group: a term key, or
    `ERROR` for an error or an unbound variable. Returns a key or `ERROR`
    (never raises for a SPARQL error); an unknown `name` is a `ValueError`.
    """
    try:
        function = AGGREGATES[name.lower()]
    except KeyError:
        raise ValueError(f"not a SPARQL aggregate: {name!r}") from None
    values = _distinct(values) if distinct else list(values)
    return function(values, separator)
