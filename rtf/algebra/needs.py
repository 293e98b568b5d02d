"""What each basic graph pattern of a query must give its consumers.

A match reports a query's *distinct* rows (spec section 5), so most of its
algebra may work on sets: a solution that differs from another only in a
variable nothing reads can be dropped. Not everywhere: ``COUNT``, ``SUM``,
``AVG`` and ``GROUP_CONCAT`` count duplicates, ``LIMIT``/``OFFSET`` keep a
number of rows, a ``CONSTRUCT`` template's blank nodes are fresh per
solution, and ``BNODE()``/``RAND()`` differ per row. `needs_of` walks a
query's algebra from its result down and gives each basic graph pattern (and
each FILTER over one) a pair: the variables its consumers read (None: all),
and whether its duplicates may be dropped (`rtf.algebra.bgp` then drops the
variables nothing reads as soon as they are bound).

The walk follows SPARQL's operators: a join reads its operands' shared
variables, a FILTER or a projection expression its expression's (and, for
``EXISTS``, the variables its pattern names, substituted from the solution),
ORDER BY its conditions', a GROUP its keys' and aggregates', a projection
only what it keeps.
"""

from __future__ import annotations

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
from rtf.query.expressions import _volatile
from rtf.query.model import Exists, operand_variables
from rtf.query.terms import BlankNode, Variable

#: id(pattern) -> (the variables its consumers read or None; whether its duplicates may be
#: dropped; whether its solutions may be shared between queries on one publication)
Needs = dict[int, tuple]
#: Aggregates whose value does not change when duplicates are dropped (with DISTINCT, all).
_SET_AGGREGATES = frozenset({"min", "max", "sample"})

def needs_of(query: AlgebraQuery) -> Needs:
    """id(pattern) -> (variables read or None, dedupe, shareable), for every pattern of
    `query`, its EXISTS patterns included (see `Needs`)."""
    out: Needs = {}
    volatile: set[int] = set()
    _volatile_nodes(query.pattern, volatile)
    if query.form == "CONSTRUCT":
        names = frozenset(t.name for p in query.template for t in p.terms if isinstance(t, Variable))
        fresh = any(isinstance(t, BlankNode) for p in query.template for t in p.terms)
        _walk(query.pattern, names, not fresh, out)
    else:
        _walk(query.pattern, frozenset(query.projection), True, out)
    for key, (needed, dedupe) in out.items():
        out[key] = (needed, dedupe, key not in volatile)
    return out


def _volatile_nodes(pattern, out: set[int]) -> bool:
    """Put in `out` the ids of the patterns under which BNODE, RAND, UUID or STRUUID is
    called (their solutions differ each time: never shared); whether `pattern` is one."""
    found = False
    for name in getattr(type(pattern), "__slots__", ()):
        value = getattr(pattern, name, None)
        for part in (value if isinstance(value, tuple) else (value,)):
            if isinstance(part, tuple):  # (expression, name) pairs of Group and OrderBy
                found |= any(_volatile(x) for x in part if x is not None and not isinstance(x, (str, bool)))
            elif type(part).__module__ == __name__.rpartition(".")[0] + ".model" and hasattr(part, "__slots__"):
                found |= _volatile_nodes(part, out)
            elif part is not None and not isinstance(part, (str, int, bool, float)):
                found |= _volatile(part)
    if found:
        out.add(id(pattern))
    return found


def _record(pattern, needed: frozenset | None, dedupe: bool, out: Needs) -> None:
    """The pattern's needs; a pattern object met twice (the parser shares equal ones) gets
    what both places need: every variable either reads, duplicates kept if either keeps them."""
    before = out.get(id(pattern))
    if before is not None:
        other, other_dedupe = before
        needed = None if needed is None or other is None else needed | other
        dedupe = dedupe and other_dedupe
    out[id(pattern)] = (needed, dedupe)


def _walk(pattern, needed: frozenset | None, dedupe: bool, out: Needs) -> None:
    _record(pattern, needed, dedupe, out)
    kind = type(pattern)
    if kind is BGP:
        pass
    elif kind is Filter:
        _exists(pattern.expr, out)
        inner = _more(needed, _reads(pattern.expr))
        _walk(pattern.pattern, inner, dedupe, out)
    elif kind in (Join, Union):
        shared = mentions(pattern.left) & mentions(pattern.right)
        _walk(pattern.left, _more(needed, shared), dedupe, out)
        _walk(pattern.right, _more(needed, shared), dedupe, out)
    elif kind is LeftJoin:
        reads = mentions(pattern.left) & mentions(pattern.right)
        if pattern.expr is not None:
            _exists(pattern.expr, out)
            reads |= _reads(pattern.expr)
        _walk(pattern.left, _more(needed, reads), dedupe, out)
        _walk(pattern.right, _more(needed, reads), dedupe, out)
    elif kind is Minus:
        shared = mentions(pattern.left) & mentions(pattern.right)
        _walk(pattern.left, _more(needed, shared), dedupe, out)
        _walk(pattern.right, frozenset(shared), True, out)
    elif kind is Extend:
        _exists(pattern.expr, out)
        inner = None if needed is None else (needed - {pattern.var}) | _reads(pattern.expr)
        _walk(pattern.pattern, inner, dedupe and not _volatile(pattern.expr), out)
    elif kind is Group:
        reads: set[str] = set()
        exact = True
        for expr, _ in pattern.keys:
            _exists(expr, out)
            reads |= _reads(expr)
        for _, agg in pattern.aggregates:
            if agg.arg is None:  # COUNT(*): duplicates count; COUNT(DISTINCT *) reads all
                exact = False
                if agg.distinct:
                    _walk(pattern.pattern, None, False, out)
                    return
                continue
            _exists(agg.arg, out)
            reads |= _reads(agg.arg)
            if not agg.distinct and agg.name not in _SET_AGGREGATES:
                exact = False
            if _volatile(agg.arg):
                exact = False
        _walk(pattern.pattern, frozenset(reads), exact, out)
    elif kind is OrderBy:
        reads = set()
        for expr, _ in pattern.conditions:
            _exists(expr, out)
            reads |= _reads(expr)
        _walk(pattern.pattern, _more(needed, reads), dedupe, out)
    elif kind is Project:
        keep = frozenset(pattern.vars) if needed is None else frozenset(pattern.vars) & needed
        _walk(pattern.pattern, keep, dedupe, out)
    elif kind is Distinct:
        _walk(pattern.pattern, needed, True, out)
    elif kind is Reduced:
        _walk(pattern.pattern, needed, dedupe, out)
    elif kind is Slice:
        _walk(pattern.pattern, needed, False, out)
    elif kind not in (PathPattern, Values):
        raise TypeError(f"not a pattern: {pattern!r}")


def _more(needed: frozenset | None, names) -> frozenset | None:
    return None if needed is None else needed | frozenset(names)


def _reads(expr) -> set[str]:
    """The variables an expression reads: its own, and those its EXISTS patterns name
    (they are substituted from the solution)."""
    names = set(operand_variables(expr))
    for exists in _exists_in(expr):
        names |= mentions(exists.pattern)
    return names


def _exists(expr, out: Needs) -> None:
    """The EXISTS patterns of `expr` walked too: each only needs a solution, any."""
    for exists in _exists_in(expr):
        _walk(exists.pattern, frozenset(), True, out)


def _exists_in(expr) -> list[Exists]:
    found = []
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, Exists):
            found.append(e)
            continue
        if isinstance(e, tuple):
            stack.extend(v for v in e if not isinstance(v, (str, int, bool, float)))
            continue
        for name in getattr(type(e), "__slots__", ()):
            value = getattr(e, name, None)
            if isinstance(value, tuple):
                stack.extend(v for v in value if not isinstance(v, (str, int, bool, float)))
            elif value is not None and not isinstance(value, (str, int, bool, float)):
                stack.append(value)
    return found


def mentions(pattern) -> set[str]:
    """Every variable name a pattern mentions anywhere (blank nodes' too)."""
    names: set[str] = set()
    stack = [pattern]
    while stack:
        p = stack.pop()
        if isinstance(p, (Variable, BlankNode)):
            names.add(p.name)
            continue
        if isinstance(p, tuple):
            stack.extend(v for v in p if not isinstance(v, (str, int, bool, float)))
            continue
        if isinstance(p, Group):
            names.update(n for _, n in p.keys if n is not None)
            names.update(n for n, _ in p.aggregates)
        if isinstance(p, Values):
            names.update(p.vars)
        elif isinstance(p, Project):
            names.update(p.vars)
        elif isinstance(p, Extend):
            names.add(p.var)
        for name in getattr(type(p), "__slots__", ()):
            value = getattr(p, name, None)
            if isinstance(value, tuple):
                stack.extend(v for v in value if not isinstance(v, (str, int, bool, float)))
            elif value is not None and not isinstance(value, (str, int, bool, float)):
                stack.append(value)
    return names
