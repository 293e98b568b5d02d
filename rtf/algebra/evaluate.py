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
from rtf.algebra.paths import path_solutions
from rtf.query.context import CONTEXT
from rtf.query.expressions import compile_filter, compile_operand
from rtf.query.terms import TYPE_PATH_KEY, TypePath, Wildcard, is_variable
from rtf.query.values import ERROR

Solution = dict[str, str]
_EMPTY: Solution = {}


def is_hidden(name: str) -> bool:
    """A variable that no query can name: a blank node's or the translation's own."""
    return name[0] in "_."


def evaluate(pattern, dataset: Dataset, bound: Solution = _EMPTY) -> list[Solution]:
    """The solutions of `pattern` over `dataset`, with `bound` substituted (see the module)."""
    return _OPERATORS[type(pattern)](pattern, dataset, bound)


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


def _position(term):
    """How a pattern position reads a triple: ("const", key), ("var", name) or ("any", None)."""
    if isinstance(term, (Wildcard, TypePath)):
        return ("any", None)
    if is_variable(term):
        return ("var", term.name)
    try:
        return ("const", term.key)
    except ValueError:  # not a valid term: it matches nothing
        return ("const", None)


def _bgp(pattern: BGP, dataset: Dataset, bound: Solution) -> list[Solution]:
    solutions = [dict(bound)]
    if not pattern.triples:
        return solutions
    todo = [(t, [_position(x) for x in t.terms], isinstance(t.predicate, TypePath))
            for t in pattern.triples]
    known = set(bound)
    while todo and solutions:
        # The next pattern: the one with most positions bound, then the fewest candidates.
        best = min(range(len(todo)), key=lambda i: _cost(todo[i], known, dataset))
        triple, positions, virtual = todo.pop(best)
        graph = dataset.types if virtual else dataset.graph
        if virtual:
            positions[1] = ("const", TYPE_PATH_KEY)
        solutions = _extend(solutions, positions, graph)
        known.update(name for kind, name in positions if kind == "var")
    return solutions if not todo else []


def _cost(entry, known: set, dataset: Dataset) -> tuple[int, int]:
    _, positions, virtual = entry
    free = sum(1 for kind, name in positions if kind == "any" or (kind == "var" and name not in known))
    keys = [name if kind == "const" else None for kind, name in positions]
    graph = dataset.types if virtual else dataset.graph
    if virtual:
        keys[1] = TYPE_PATH_KEY
    return free, graph.count(*keys)


def _extend(solutions: list[Solution], positions, graph) -> list[Solution]:
    out = []
    for solution in solutions:
        keys = []
        for kind, name in positions:
            if kind == "const":
                if name is None:
                    return []
                keys.append(name)
            elif kind == "var":
                keys.append(solution.get(name))
            else:
                keys.append(None)
        for triple in graph.match(*keys):
            extended = None
            for (kind, name), key in zip(positions, triple):
                if kind != "var":
                    continue
                have = solution.get(name) if extended is None else extended.get(name)
                if have is None:
                    if extended is None:
                        extended = dict(solution)
                    extended[name] = key
                elif have != key:
                    break
            else:
                out.append(solution if extended is None else extended)
    return out


def _path(pattern: PathPattern, dataset: Dataset, bound: Solution) -> list[Solution]:
    return path_solutions(pattern, dataset.graph, bound)


def _values(pattern: Values, dataset: Dataset, bound: Solution) -> list[Solution]:
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


def _join(pattern: Join, dataset: Dataset, bound: Solution) -> list[Solution]:
    left = evaluate(pattern.left, dataset, bound)
    if not left:
        return []
    return join(left, evaluate(pattern.right, dataset, bound))


def _left_join(pattern: LeftJoin, dataset: Dataset, bound: Solution) -> list[Solution]:
    left = evaluate(pattern.left, dataset, bound)
    if not left:
        return []
    right = evaluate(pattern.right, dataset, bound)
    test = compile_filter(pattern.expr) if pattern.expr is not None else None
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


def _filter(pattern: Filter, dataset: Dataset, bound: Solution) -> list[Solution]:
    test = compile_filter(pattern.expr)
    return [s for s in evaluate(pattern.pattern, dataset, bound) if test(s) is True]


def _union(pattern: Union, dataset: Dataset, bound: Solution) -> list[Solution]:
    return evaluate(pattern.left, dataset, bound) + evaluate(pattern.right, dataset, bound)


def _minus(pattern: Minus, dataset: Dataset, bound: Solution) -> list[Solution]:
    left = evaluate(pattern.left, dataset, bound)
    if not left:
        return []
    right = evaluate(pattern.right, dataset, bound)
    if not right:
        return left
    return [a for a in left
            if not any(compatible(a, b) and not a.keys().isdisjoint(b) for b in right)]


def _extend_op(pattern: Extend, dataset: Dataset, bound: Solution) -> list[Solution]:
    value = compile_operand(pattern.expr)
    name = pattern.var
    context = CONTEXT.get() if _makes_blank_nodes(pattern) else None
    out = []
    for s in evaluate(pattern.pattern, dataset, bound):
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


def _group(pattern: Group, dataset: Dataset, bound: Solution) -> list[Solution]:
    from rtf.algebra.grouping import group_solutions
    return group_solutions(pattern, evaluate(pattern.pattern, dataset, bound))


def _order_by(pattern: OrderBy, dataset: Dataset, bound: Solution) -> list[Solution]:
    from rtf.query.ordering import order_key
    solutions = evaluate(pattern.pattern, dataset, bound)
    for expr, descending in reversed(pattern.conditions):  # stable: least significant first
        value = compile_operand(expr)

        def key(s, value=value):
            k = value(s)
            return order_key(None if k is ERROR else k)
        solutions.sort(key=key, reverse=descending)
    return solutions


def _project(pattern: Project, dataset: Dataset, bound: Solution) -> list[Solution]:
    names = pattern.vars
    # Only the projected variables are substituted from outside: the others are the
    # sub-query's own (SPARQL's variable scope).
    inner = {k: v for k, v in bound.items() if k in names} if bound else bound
    return [{n: s[n] for n in names if n in s} for s in evaluate(pattern.pattern, dataset, inner)]


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


def _distinct(pattern: Distinct, dataset: Dataset, bound: Solution) -> list[Solution]:
    return distinct(evaluate(pattern.pattern, dataset, bound))


def _reduced(pattern: Reduced, dataset: Dataset, bound: Solution) -> list[Solution]:
    # REDUCED permits removing any duplicates; rtf removes none (docs/language.md).
    return evaluate(pattern.pattern, dataset, bound)


def _slice(pattern: Slice, dataset: Dataset, bound: Solution) -> list[Solution]:
    solutions = evaluate(pattern.pattern, dataset, bound)
    end = None if pattern.length is None else pattern.start + pattern.length
    return solutions[pattern.start:end]


_OPERATORS = {
    BGP: _bgp, PathPattern: _path, Values: _values, Join: _join, LeftJoin: _left_join,
    Filter: _filter, Union: _union, Minus: _minus, Extend: _extend_op, Group: _group,
    OrderBy: _order_by, Project: _project, Distinct: _distinct, Reduced: _reduced, Slice: _slice,
}
