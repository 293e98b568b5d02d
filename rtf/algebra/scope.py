"""Which variables a pattern binds (SPARQL 1.1, section 18.2.1, "Variable Scope").

`in_scope(pattern)` lists a pattern's in-scope variables in order of first
appearance, without the hidden ones (blank nodes, the translation's own):
what ``SELECT *`` projects, and what ``BIND`` and ``(expr AS ?v)`` may not bind
again.
"""

from __future__ import annotations

from rtf.algebra.model import (
    BGP,
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
from rtf.query.terms import Variable


def in_scope(pattern) -> list[str]:
    out: dict[str, None] = {}
    _collect(pattern, out)
    return [name for name in out if name[0] not in "_."]


def _collect(pattern, out: dict[str, None]) -> None:
    kind = type(pattern)
    if kind is BGP:
        for t in pattern.triples:
            for term in t.terms:
                if isinstance(term, Variable):
                    out.setdefault(term.name)
    elif kind is PathPattern:
        for term in (pattern.subject, pattern.object):
            if isinstance(term, Variable):
                out.setdefault(term.name)
    elif kind in (Join, LeftJoin, Union):
        _collect(pattern.left, out)
        _collect(pattern.right, out)
    elif kind is Minus:
        _collect(pattern.left, out)
    elif kind is Extend:
        _collect(pattern.pattern, out)
        out.setdefault(pattern.var)
    elif kind is Values:
        for name in pattern.vars:
            out.setdefault(name)
    elif kind is Project:
        for name in pattern.vars:
            out.setdefault(name)
    elif kind is Group:
        for _, name in pattern.keys:
            if name is not None:
                out.setdefault(name)
        for name, _ in pattern.aggregates:
            out.setdefault(name)
    elif kind in (Filter, OrderBy, Distinct, Reduced, Slice):
        _collect(pattern.pattern, out)
    else:
        raise TypeError(f"not a pattern: {pattern!r}")
