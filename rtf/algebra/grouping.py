"""``GROUP BY`` and the aggregates (SPARQL 1.1, sections 11 and 18.5.1).

The solutions are partitioned by the values of the group keys (an unbound
key or an error is a value of its own, so such solutions form a group
too); each group becomes one solution binding the keys written as
variables or ``(expr AS ?v)`` and one variable per aggregate. An aggregate
that ends in an error leaves its variable unbound (section 11.2). Without
keys, all the solutions are one group, even none at all: ``SELECT
(COUNT(*) AS ?n) {...}`` has one solution, ?n 0, on a publication the
pattern does not match. The set functions themselves are
`rtf.query.aggregates`.
"""

from __future__ import annotations

from rtf.algebra.model import Group
from rtf.query.aggregates import aggregate
from rtf.query.expressions import compiled_operand
from rtf.query.terms import XSD, literal_key
from rtf.query.values import ERROR

_UNBOUND = object()


def group_solutions(pattern: Group, solutions: list[dict]) -> list[dict]:
    keys = [(compiled_operand(expr), name) for expr, name in pattern.keys]
    groups: dict[tuple, list[dict]] = {}
    if keys:
        for s in solutions:
            values = tuple(_value(compiled, s) for compiled, _ in keys)
            found = groups.get(values)
            if found is None:
                groups[values] = [s]
            else:
                found.append(s)
    else:
        groups[()] = solutions
    aggregates = [(name, agg, compiled_operand(agg.arg) if agg.arg is not None else None)
                  for name, agg in pattern.aggregates]
    out = []
    for values, members in groups.items():
        solution: dict[str, str] = {}
        for (_, name), value in zip(keys, values):
            if name is not None and isinstance(value, str):
                solution[name] = value
        for name, agg, arg in aggregates:
            result = _aggregate(agg, arg, members)
            if result is not ERROR:
                solution[name] = result
        out.append(solution)
    return out


def _value(compiled, solution):
    """A key's value: its term key, or a marker for unbound and for an error."""
    key = compiled(solution)
    return _UNBOUND if key is ERROR else key


def _aggregate(agg, arg, members: list[dict]):
    if arg is None:  # COUNT(*), or COUNT(DISTINCT *): the solutions as SPARQL sees them
        count = len({_visible(s) for s in members}) if agg.distinct else len(members)
        return literal_key(str(count), XSD + "integer")
    values = [arg(s) for s in members]
    return aggregate(agg.name, values, distinct=agg.distinct,
                     separator=" " if agg.separator is None else agg.separator)


def _visible(solution: dict):
    """A solution without its hidden variables (blank nodes'), as a hashable value."""
    return frozenset((k, v) for k, v in solution.items() if k[0] not in "_.")
