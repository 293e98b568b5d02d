"""Queries that differ only in their basic graph patterns share their answers, publication by publication.

A continuous workload repeats a few query *shapes* with other constants: ``SELECT ?s
(COUNT(?o) AS ?n) { ?s a C ; p ?o } GROUP BY ?s`` for a thousand classes C. On one
publication, the candidates of such a shape find the same solutions in their basic
graph patterns (the class is the publication's: that is why they are candidates), and
everything above the patterns is the same function of those solutions. So a query is
split into its *skeleton* -- its algebra with each leaf (a basic graph pattern, with the
FILTER over it; a path; VALUES) replaced by a numbered hole -- and its leaves. The
skeletons are shared values (`rtf.query.terms.shared`): equal skeletons are one object.
On a publication (`rtf.algebra.results.run`), a query's leaves are evaluated (once for
all the queries that hold them, `rtf.algebra.evaluate`), each list of solutions made
the one object of its value, and the answer is kept under (skeleton, leaf solutions):
another query of the same skeleton whose leaves found the same solutions takes it
without evaluating anything. Exact: the skeleton is every operator, expression and
constant but the leaves', and its answer is a function of the leaves' solutions (its
``EXISTS`` read the same publication). Queries whose answers are not functions of
their inputs (``BNODE()``, ``RAND()``, ``UUID()``, ``STRUUID()``) are never shared.
"""

from __future__ import annotations

from dataclasses import dataclass

from rtf.algebra.model import (
    BGP,
    AlgebraQuery,
    Distinct,
    Extend,
    Filter,
    Group,
    Join,
    LeftJoin,
    Minus,
    OrderBy,
    PathPattern,
    Project,
    Reduced,
    Slice,
    Union,
    Values,
)
from rtf.query.terms import shared

_INNER = (Join, LeftJoin, Filter, Union, Minus, Extend, Group, OrderBy, Project, Distinct,
          Reduced, Slice)
_VOLATILE_CALLS = ("bnode(", "rand(", "uuid(", "struuid(")


@dataclass(frozen=True, slots=True)
class Hole:
    """The place of a query's k-th leaf in its skeleton."""

    index: int


def skeleton(query: AlgebraQuery) -> tuple[object, tuple] | None:
    """(the query's shared skeleton, with its form, projection, template and order; its
    leaves in order), or None when its answers may not be shared."""
    text = str(query).lower()
    if any(call in text for call in _VOLATILE_CALLS):
        return None
    leaves: list = []
    shape = _holed(query.pattern, leaves)
    key = shared((query.form, query.projection, query.template, query.ordered, shape))
    return key, tuple(leaves)


def _holed(pattern, leaves: list):
    if type(pattern) in (BGP, PathPattern, Values) or (
            type(pattern) is Filter and type(pattern.pattern) is BGP):
        leaves.append(pattern)
        return Hole(len(leaves) - 1)
    if not isinstance(pattern, _INNER):
        raise TypeError(f"not a pattern: {pattern!r}")
    fields = [getattr(pattern, name) for name in type(pattern).__slots__]
    return shared(type(pattern)(*[_holed(f, leaves) if isinstance(f, (*_INNER, BGP, PathPattern, Values))
                                  else f for f in fields]))


def canonical(solutions: list, dataset) -> int:
    """The identity of `solutions` by value on this publication: equal lists of solutions
    (the same solutions in the same order) are one list (`Dataset.canon`)."""
    by_id = dataset.canon_ids
    found = by_id.get(id(solutions))
    if found is not None and found[0] is solutions:
        return found[1]
    value = tuple(tuple(s.items()) for s in solutions)
    same = dataset.canon.setdefault(value, solutions)
    by_id[id(solutions)] = (solutions, id(same))  # (the entry keeps the list: its id stays its own)
    return id(same)
