"""Basic graph patterns over a publication: triple patterns joined one at a time.

A basic graph pattern (with the FILTER over it, when there is one) is
compiled once into a `BasicPlan`: its triple patterns in the order they are
matched -- each next one the one with most positions fixed (constants, or
variables bound before), constants first among equals; no statistics are
needed on a publication of a few hundred triples -- and each conjunct of the
FILTER placed after the pattern that binds its last variable, so a join
never multiplies out what a FILTER drops.

What the pattern's consumers need (`rtf.algebra.needs`) makes it cheaper
still: where duplicates cannot change the query's answer, a variable that no
later pattern, FILTER or consumer reads is dropped as soon as it is bound,
and the solutions that become equal are kept once -- a star over labels in
ten languages and comments in ten more is then one solution, not a hundred.
"""

from __future__ import annotations

from rtf.algebra.model import BGP, Filter
from rtf.query.expressions import _volatile, compiled_filter
from rtf.query.model import And, operand_variables
from rtf.query.terms import TYPE_PATH_KEY, TypePath, Wildcard, is_variable

Solution = dict[str, str]
#: What a pattern's consumers need when nothing is known: every variable, every duplicate
#: (and its solutions are not shared: `rtf.algebra.needs`).
ALL = (None, False, False)


class Step:
    """One triple pattern, compiled: its constant keys (None where a variable or ``*``
    stands) and its variables by position."""

    __slots__ = ("keys", "variables", "virtual", "impossible")

    def __init__(self, pattern):
        keys: list[str | None] = [None, None, None]
        variables: list[tuple[int, str]] = []
        self.impossible = False
        for position, term in enumerate(pattern.terms):
            if isinstance(term, (Wildcard, TypePath)):
                continue
            if is_variable(term):
                variables.append((position, term.name))
                continue
            try:
                keys[position] = term.key
            except ValueError:  # not a valid term: it matches nothing
                self.impossible = True
        self.virtual = isinstance(pattern.predicate, TypePath)
        if self.virtual:
            keys[1] = TYPE_PATH_KEY
        self.keys = tuple(keys)
        self.variables = tuple(variables)

    def extend(self, solutions: list[Solution], graph) -> list[Solution]:
        """Each solution extended by every triple of `graph` this pattern matches under it."""
        out: list[Solution] = []
        keys, variables = self.keys, self.variables
        for solution in solutions:
            k = list(keys)
            free = []
            for position, name in variables:
                value = solution.get(name)
                if value is None:
                    free.append((position, name))
                elif k[position] is None:
                    k[position] = value
                elif k[position] != value:  # a variable repeated in the pattern, bound apart
                    break
            else:
                found = graph.match(k[0], k[1], k[2])
                if not free:
                    out += [solution] * len(found)  # one solution per triple (multiplicity)
                    continue
                for triple in found:
                    extended = dict(solution)
                    for position, name in free:
                        value = triple[position]
                        have = extended.get(name)
                        if have is None:
                            extended[name] = value
                        elif have != value:  # ?x p ?x: both positions must agree
                            break
                    else:
                        out.append(extended)
        return out


class BasicPlan:
    """A basic graph pattern's steps in order, the FILTER's conjuncts placed after each
    (and those tested last), and the variables read after each step."""

    __slots__ = ("steps", "checks", "late", "later")

    def __init__(self, pattern: BGP | Filter):
        bgp, expr = (pattern.pattern, pattern.expr) if isinstance(pattern, Filter) else (pattern, None)
        todo = [Step(t) for t in bgp.triples]
        known: set[str] = set()
        steps, after = [], []
        while todo:
            def fixed(step: Step) -> tuple[int, int]:
                constants = sum(k is not None for k in step.keys)
                bound = sum(1 for _, name in step.variables if name in known)
                return -(constants + bound), -constants
            step = todo.pop(min(range(len(todo)), key=lambda i: fixed(todo[i])))
            steps.append(step)
            known.update(name for _, name in step.variables)
            after.append(set(known))
        conjuncts = [] if expr is None else list(expr.operands) if isinstance(expr, And) else [expr]
        checks: list[list] = [[] for _ in steps]
        late, read_at = [], []
        for c in conjuncts:
            names = operand_variables(c)
            place = None
            if names and not _volatile(c):
                place = next((i for i, k in enumerate(after) if names <= k), None)
            (late if place is None else checks[place]).append(compiled_filter(c))
            read_at.append((len(steps) if place is None else place, names, _volatile(c)))
        self.steps = tuple(steps)
        self.checks = tuple(tuple(c) for c in checks)
        self.late = tuple(late)
        # The variables read after step i: by the later steps and the later conjuncts
        # (None: anything may be, a conjunct reads the whole solution).
        later: list[frozenset[str] | None] = []
        for i in range(len(steps)):
            names: set[str] | None = {n for step in steps[i + 1:] for _, n in step.variables}
            for place, read, volatile in read_at:
                if place > i:
                    if volatile:
                        names = None
                        break
                    names |= read
            later.append(None if names is None else frozenset(names))
        self.later = tuple(later)


_PLANS: dict[int, tuple[object, BasicPlan]] = {}


def basic_plan(pattern: BGP | Filter) -> BasicPlan:
    """The plan of a basic graph pattern (or of a FILTER over one), made once and then known
    by identity (the entry keeps the pattern, so its id stays its own)."""
    found = _PLANS.get(id(pattern))
    if found is not None and found[0] is pattern:
        return found[1]
    if len(_PLANS) > 1 << 18:  # (shared patterns: far fewer than queries)
        _PLANS.clear()
    plan = BasicPlan(pattern)
    _PLANS[id(pattern)] = (pattern, plan)
    return plan


def basic_solutions(pattern: BGP | Filter, dataset, bound: Solution, need=ALL) -> list[Solution]:
    """The solutions of a basic graph pattern (or of a FILTER over one) under `bound`.

    `need` is (the variables the consumers read, or None for all; whether duplicates
    may be dropped): see the module."""
    plan = basic_plan(pattern)
    needed, dedupe = need[0], need[1]
    trim = dedupe and needed is not None
    solutions = [dict(bound)]
    for i, step in enumerate(plan.steps):
        if step.impossible:
            return []
        solutions = step.extend(solutions, dataset.types if step.virtual else dataset.graph)
        for test in plan.checks[i]:
            solutions = [s for s in solutions if test(s) is True]
        if not solutions:
            return solutions
        if trim and len(solutions) > 1 and plan.later[i] is not None:
            keep = needed | plan.later[i]
            solutions = _trimmed(solutions, keep, bound)
    for test in plan.late:
        solutions = [s for s in solutions if test(s) is True]
    return solutions


def _trimmed(solutions: list[Solution], keep: frozenset[str], bound: Solution) -> list[Solution]:
    """The solutions without the variables outside `keep` (those of `bound` stay), each once."""
    first = solutions[0]
    if all(name in keep or name in bound for name in first):
        return solutions  # (a step binds the same variables in every solution)
    seen: dict[frozenset, Solution] = {}
    for s in solutions:
        kept = {k: v for k, v in s.items() if k in keep or k in bound}
        seen.setdefault(frozenset(kept.items()), kept)
    return list(seen.values())
