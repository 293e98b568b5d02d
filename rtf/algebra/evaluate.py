"""Evaluating the algebra over a publication (SPARQL 1.1, section 18.5).

`evaluate(pattern, dataset)` is the multiset of solutions of a graph
pattern: a list of dicts, variable name -> term key, in a fixed order (the
same in every engine and process: see `rtf.algebra.graph`). Each operator is
the function of section 18.5 that bears its name; `run` evaluates a whole
query and gives what a match reports (`rtf.algebra.results`).

Substitution. ``EXISTS`` evaluates its pattern with the current solution's
bindings substituted (section 18.6): every leaf of the pattern (a basic
graph pattern, a path, ``VALUES``, the empty group) starts from `bound`
instead of the empty solution, so a variable bound outside is a constant
inside, and the filters within see it.

Names. Blank nodes of a pattern are variables named ``_:label`` (a label
stays inside its basic graph pattern, as the parser checks), and the
translation's own variables (an aggregate's value) start with ``.``: neither
can be written as a variable, so neither is ever projected or reported,
but both keep their solutions apart, so counts are those of SPARQL
(a basic graph pattern has one solution per distinct blank-node mapping).
"""

from __future__ import annotations

from rtf.algebra.graph import Dataset
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
from rtf.algebra.bgp import ALL, basic_solutions
from rtf.algebra.needs import Needs
from rtf.algebra.paths import path_solutions
from rtf.query.context import CONTEXT
from rtf.query.expressions import compiled_filter, compiled_operand
from rtf.query.values import ERROR

Solution = dict[str, str]
_EMPTY: Solution = {}
_NO_NEEDS: Needs = {}


def is_hidden(name: str) -> bool:
    """A variable that no query can name: a blank node's or the translation's own."""
    return name[0] in "_."


def evaluate(pattern, dataset: Dataset, bound: Solution = _EMPTY,
             needs: Needs = _NO_NEEDS) -> list[Solution]:
    """The solutions of `pattern` over `dataset`, with `bound` substituted (see the module).
    `needs` says what each pattern's consumers read (`rtf.algebra.needs`).

    A pattern evaluated without substitution is evaluated once per publication for every
    query that holds the same pattern object with the same needs (the parser shares equal
    patterns; `Dataset.memo`): the lists are never changed afterwards, only read. Patterns
    with ``BNODE``, ``RAND``, ``UUID`` or ``STRUUID`` are evaluated each time."""
    need = needs.get(id(pattern), ALL)
    if bound or not need[2]:
        return _OPERATORS[type(pattern)](pattern, dataset, bound, needs)
    key = (id(pattern), need)
    memo = dataset.memo
    found = memo.get(key)
    if found is None:
        found = memo[key] = _OPERATORS[type(pattern)](pattern, dataset, bound, needs)
    return found


def compatible(a: Solution, b: Solution) -> bool:
    """The two solutions agree on every variable both bind."""
    if len(b) < len(a):
        a, b = b, a
    for name, value in a.items():
        other = b.get(name)
        if other is not None and other != value:
            return False
    return True


# ------------------------------------------------------------- basic patterns


def _bgp(pattern: BGP, dataset: Dataset, bound: Solution, needs: Needs) -> list[Solution]:
    return basic_solutions(pattern, dataset, bound, needs.get(id(pattern), ALL))


def _path(pattern: PathPattern, dataset: Dataset, bound: Solution, needs: Needs) -> list[Solution]:
    return path_solutions(pattern, dataset.graph, bound)


def _values(pattern: Values, dataset: Dataset, bound: Solution, needs: Needs) -> list[Solution]:
    out = []
    for row in pattern.rows:
        solution = {name: key for name, key in zip(pattern.vars, row) if key is not None}
        if compatible(solution, bound):
            out.append({**bound, **solution})
    return out


# ---------------------------------------------------------------- combining


def join(left: list[Solution], right: list[Solution]) -> list[Solution]:
    """Join(Ω1, Ω2): every merge of compatible solutions, left order first."""
    if not left or not right:
        return []
    certain = set(left[0]).intersection(right[0])
    for s in left:
        certain.intersection_update(s)
    for s in right:
        certain.intersection_update(s)
    shared = _mentioned(left) & _mentioned(right)
    if not shared:
        return [{**a, **b} for a in left for b in right]
    keys = sorted(certain)
    if not keys:
        return [{**a, **b} for a in left for b in right if compatible(a, b)]
    table: dict[tuple, list[Solution]] = {}
    for b in right:
        table.setdefault(tuple(b[k] for k in keys), []).append(b)
    rest = shared - certain
    out = []
    for a in left:
        for b in table.get(tuple(a[k] for k in keys), ()):
            if not rest or compatible(a, b):
                out.append({**a, **b})
    return out


def _mentioned(solutions: list[Solution]) -> set[str]:
    names: set[str] = set()
    for s in solutions:
        names.update(s)
    return names


def _join(pattern: Join, dataset: Dataset, bound: Solution, needs: Needs) -> list[Solution]:
    left = evaluate(pattern.left, dataset, bound, needs)
    if not left:
        return []
    return join(left, evaluate(pattern.right, dataset, bound, needs))


def _left_join(pattern: LeftJoin, dataset: Dataset, bound: Solution, needs: Needs) -> list[Solution]:
    left = evaluate(pattern.left, dataset, bound, needs)
    if not left:
        return []
    right = evaluate(pattern.right, dataset, bound, needs)
    test = compiled_filter(pattern.expr) if pattern.expr is not None else None
    out = []
    for a in left:
        extended = False
        for b in right:
            if compatible(a, b):
                merged = {**a, **b}
                if test is None or test(merged) is True:
                    out.append(merged)
                    extended = True
        if not extended:
            out.append(a)
    return out


def _filter(pattern: Filter, dataset: Dataset, bound: Solution, needs) -> list[Solution]:
    if type(pattern.pattern) is BGP:  # each conjunct as soon as its variables are bound
        return basic_solutions(pattern, dataset, bound, needs.get(id(pattern), ALL))
    test = compiled_filter(pattern.expr)
    return [s for s in evaluate(pattern.pattern, dataset, bound, needs) if test(s) is True]


def _union(pattern: Union, dataset: Dataset, bound: Solution, needs: Needs) -> list[Solution]:
    left = evaluate(pattern.left, dataset, bound, needs)
    return left + evaluate(pattern.right, dataset, bound, needs)


def _minus(pattern: Minus, dataset: Dataset, bound: Solution, needs: Needs) -> list[Solution]:
    left = evaluate(pattern.left, dataset, bound, needs)
    if not left:
        return []
    right = evaluate(pattern.right, dataset, bound, needs)
    if not right:
        return left
    return [a for a in left
            if not any(compatible(a, b) and not a.keys().isdisjoint(b) for b in right)]


def _extend_op(pattern: Extend, dataset: Dataset, bound: Solution, needs: Needs) -> list[Solution]:
    value = compiled_operand(pattern.expr)
    name = pattern.var
    context = CONTEXT.get() if _makes_blank_nodes(pattern) else None
    out = []
    for s in evaluate(pattern.pattern, dataset, bound, needs):
        if name not in s:
            key = value(s)
            if key is not ERROR:
                extended = {**s, name: key}
                if context is not None:
                    context.extended(extended, s)
                s = extended
        out.append(s)
    return out


_BLANK_NODE_EXTENDS: dict[int, tuple[Extend, bool]] = {}  # id -> (the Extend, its answer)


def _makes_blank_nodes(pattern: Extend) -> bool:
    """Whether BNODE may be called at or below this Extend (its rows are then followed);
    known by identity once asked (the entry keeps the pattern, so its id stays its own)."""
    found = _BLANK_NODE_EXTENDS.get(id(pattern))
    if found is not None and found[0] is pattern:
        return found[1]
    inner, answer = pattern, False
    while isinstance(inner, Extend):
        if "bnode(" in str(inner.expr).lower():
            answer = True
            break
        inner = inner.pattern
    if len(_BLANK_NODE_EXTENDS) > 8192:
        _BLANK_NODE_EXTENDS.clear()
    _BLANK_NODE_EXTENDS[id(pattern)] = (pattern, answer)
    return answer


# -------------------------------------------------------- solution modifiers


def _group(pattern: Group, dataset: Dataset, bound: Solution, needs: Needs) -> list[Solution]:
    from rtf.algebra.grouping import group_solutions
    return group_solutions(pattern, evaluate(pattern.pattern, dataset, bound, needs))


def _order_by(pattern: OrderBy, dataset: Dataset, bound: Solution, needs: Needs) -> list[Solution]:
    from rtf.query.ordering import order_key
    solutions = list(evaluate(pattern.pattern, dataset, bound, needs))  # (a copy: sorted here)
    for expr, descending in reversed(pattern.conditions):  # stable: least significant first
        value = compiled_operand(expr)

        def key(s, value=value):
            k = value(s)
            return order_key(None if k is ERROR else k)
        solutions.sort(key=key, reverse=descending)
    return solutions


def _project(pattern: Project, dataset: Dataset, bound: Solution, needs: Needs) -> list[Solution]:
    names = pattern.vars
    # Only the projected variables are substituted from outside: the others are the
    # sub-query's own (SPARQL's variable scope).
    inner = {k: v for k, v in bound.items() if k in names} if bound else bound
    solutions = evaluate(pattern.pattern, dataset, inner, needs)
    return [{n: s[n] for n in names if n in s} for s in solutions]


def distinct(solutions: list[Solution]) -> list[Solution]:
    """The solutions without repeats, each where it first occurs."""
    seen: set = set()
    out = []
    for s in solutions:
        key = frozenset(s.items())
        if key not in seen:
            seen.add(key)
            out.append(s)
    return out


def _distinct(pattern: Distinct, dataset: Dataset, bound: Solution, needs: Needs) -> list[Solution]:
    return distinct(evaluate(pattern.pattern, dataset, bound, needs))


def _reduced(pattern: Reduced, dataset: Dataset, bound: Solution, needs: Needs) -> list[Solution]:
    # REDUCED permits removing any duplicates; rtf removes none (docs/language.md).
    return evaluate(pattern.pattern, dataset, bound, needs)


def _slice(pattern: Slice, dataset: Dataset, bound: Solution, needs: Needs) -> list[Solution]:
    solutions = evaluate(pattern.pattern, dataset, bound, needs)
    end = None if pattern.length is None else pattern.start + pattern.length
    return solutions[pattern.start:end]


_OPERATORS = {
    BGP: _bgp, PathPattern: _path, Values: _values, Join: _join, LeftJoin: _left_join,
    Filter: _filter, Union: _union, Minus: _minus, Extend: _extend_op, Group: _group,
    OrderBy: _order_by, Project: _project, Distinct: _distinct, Reduced: _reduced, Slice: _slice,
}
