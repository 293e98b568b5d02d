"""Residual filters evaluated once per distinct (predicate, values) per publication (seed 002).

Many subscriptions share an expensive predicate: ``regex(?label, "^Rio")``
in a thousand queries, ``contains(str(?abs), "olympic")``, ``langMatches``,
a function of a literal. Evaluated per solution per query, a publication
pays for it once per query that reaches its join; here a branch's residual
conjuncts are renamed canonically (``regex(?x, "^Rio")`` and
``regex(?label, "^Rio")`` are one predicate), and each is evaluated once per
distinct values of its variables per publication, its answer then shared by
every solution and every query that asks it (Hanson et al.'s shared
evaluation of overlapping subscriptions; the answer is the same, only the
number of evaluations changes). Cheap comparisons are shared too: a
dictionary lookup costs a tenth of an evaluation, and queries written alike
repeat them (issue 43: at 100K value-star queries, 7.6 evaluations of one
comparison on the same values per publication).

Each branch's conjuncts are evaluated cheapest and most selective first:
every predicate keeps statistics (evaluations, passes, and the time of a
sample of its evaluations), and a branch orders its conjuncts by
``cost / (1 - pass rate)``, the rank that minimises the expected cost of a
conjunction evaluated left to right. Reordering ``&&`` never changes the
answer of a conjunction under SPARQL's three-valued logic (a solution
passes when every conjunct is true), only the work.

>>> from rtf.parser import parse_query
>>> q = parse_query('SELECT ?s WHERE { ?s <http://ex/p> ?l FILTER(regex(?l, "^R") && ?l != "x") }')
>>> plan = residual_plan(q.branches[0].residual)
>>> memo = EvaluationMemo()
>>> plan.passes({"s": "<http://ex/a>", "l": '"Rio"'}, memo), plan.passes({"s": "<http://ex/b>", "l": '"Rio"'}, memo)
(True, True)
>>> memo.evaluations, memo.shared   # the regex and the != once each
(2, 2)
"""

from __future__ import annotations

import dataclasses
import time
from itertools import compress
import weakref
from dataclasses import dataclass
from functools import lru_cache

from rtf.query.expressions import compile_filter
from rtf.query.terms import BlankNode, Variable

#: A predicate's statistics are refreshed into the branches' order every this many evaluations.
REORDER_EVERY = 4096
#: One evaluation in this many is timed (timing each would cost more than cheap predicates).
TIME_ONE_IN = 16


@lru_cache(maxsize=65536)
def canonical(expr) -> tuple[object, tuple[str, ...]]:
    """`expr` with its variables renamed ``_0, _1, ...`` by first appearance, and their names in that order.

    Cached: the queries of a workload repeat their conjuncts (model values are shared).
    """
    names: list[str] = []

    def rename(value):
        if isinstance(value, Variable):
            if value.name not in names:
                names.append(value.name)
            return Variable(f"_{names.index(value.name)}")
        if isinstance(value, BlankNode):  # a blank node in a FILTER is a variable
            if "_:" + value.name not in names:
                names.append("_:" + value.name)
            return Variable(f"_{names.index('_:' + value.name)}")
        if isinstance(value, tuple):
            return tuple(rename(v) for v in value)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            changes = {f.name: rename(getattr(value, f.name)) for f in dataclasses.fields(value)}
            return dataclasses.replace(value, **changes)
        return value

    return rename(expr), tuple(n[2:] if n.startswith("_:") else n for n in names)


class PredicateStats:
    """What one canonical predicate has cost and let through, across every query and publication."""

    __slots__ = ("evaluations", "passes", "timed", "seconds")

    def __init__(self):
        self.evaluations = self.passes = self.timed = 0
        self.seconds = 0.0

    def rank(self) -> float:
        """Expected cost per unit of rejection: lower runs first."""
        cost = self.seconds / self.timed if self.timed else 1e-6
        rejects = 1.0 - (self.passes + 1) / (self.evaluations + 2)  # Laplace: no data, 1/2
        return cost / max(rejects, 1e-3)


class _Predicate:
    """A canonical predicate's statistics and compiled form, shared by the branches that ask it."""

    __slots__ = ("expr", "stats", "compiled", "__weakref__")

    def __init__(self, expr):
        self.expr = expr
        self.stats = PredicateStats()
        self.compiled = compile_filter(expr)

    def __reduce__(self):
        # `compiled` is a closure (not picklable; Spark ships engines): an unpickled predicate
        # is compiled again and shared through the table like any other.
        return shared_predicate, (self.expr,)


#: canonical predicate -> its `_Predicate`, while a registered branch asks it (then forgotten).
_PREDICATES: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_EPOCH = [0, 0]  # [evaluations since the last reorder, reorder epoch]


def shared_predicate(expr) -> _Predicate:
    """The one `_Predicate` of canonical predicate `expr` while anything holds it: compiled
    once, and hashed by identity where a publication's answers are keyed by it."""
    found = _PREDICATES.get(expr)
    if found is None:
        found = _PREDICATES[expr] = _Predicate(expr)
    return found


class EvaluationMemo:
    """One publication's answers of residual predicates: (predicate, values) -> result, the
    predicate its `shared_predicate` (one object per canonical predicate)."""

    __slots__ = ("answers", "evaluations", "shared", "term_masks")

    def __init__(self):
        self.answers: dict = {}
        #: (id(shape), position) of a value group with several distinct terms -> what gives
        #: each conjunction's bit mask of the terms that satisfy it whole, or None past 52
        #: terms (`rtf.matching.value_tests.ValueTests.satisfied_slots`, `masks_of`).
        self.term_masks: dict = {}
        self.evaluations = 0  # predicate evaluations made
        self.shared = 0       # evaluations saved: an answer another solution or query already had


@dataclass(eq=False)
class Conjunct:
    expr: object                 # the canonical predicate
    names: tuple[str, ...]       # the branch's variables, in the predicate's order
    predicate: _Predicate        # held: the shared entry lives while a branch asks it

    @property
    def stats(self) -> PredicateStats:
        return self.predicate.stats


class ResidualPlan:
    """A branch's residual conjuncts, evaluated in rank order, their answers shared."""

    __slots__ = ("conjuncts", "_epoch", "key")

    def __init__(self, conjuncts: list[Conjunct]):
        self.conjuncts = conjuncts
        self._epoch = -1
        #: What the plan tests, whatever its order: two branches' plans of one key keep the
        #: same solutions (the predicates are the shared ones: hashed by identity).
        self.key = frozenset((c.predicate, c.names) for c in conjuncts)

    def __setstate__(self, state) -> None:
        slots = state[1] if isinstance(state, tuple) else state
        self.__init__(slots["conjuncts"])  # (`key` is made again: a plan pickled by an older rtf has none)

    def __len__(self) -> int:
        return len(self.conjuncts)

    def _ranked(self) -> None:
        if self._epoch != _EPOCH[1] and len(self.conjuncts) > 1:
            self.conjuncts.sort(key=lambda c: c.stats.rank())
            self._epoch = _EPOCH[1]

    def kept(self, cols: list[str], rows: list, memo: EvaluationMemo) -> list:
        """The `rows` (tuples of terms for the variables `cols`; a variable not among them is
        unbound) for which every conjunct is true: each conjunct, in rank order, on the rows
        the ones before it kept (`truths`), read off the rows by column, no dict per row."""
        self._ranked()
        at = {n: i for i, n in enumerate(cols)}
        rows = list(rows)
        for c in self.conjuncts:
            if not rows:
                break
            rows = list(compress(rows, truths(c.predicate, [at.get(n, -1) for n in c.names], rows, memo)))
        return rows

    def passes(self, solution: dict, memo: EvaluationMemo) -> bool:
        """Whether every conjunct is true for `solution` (a dict variable -> term)."""
        return bool(self.kept(list(solution), [tuple(solution.values())], memo))


def truths(predicate: _Predicate, where: list[int], rows: list, memo: EvaluationMemo) -> list[bool]:
    """For each of `rows`, whether `predicate` is true of its values at `where` (-1: an
    unbound variable), each answer shared through `memo` (once per distinct values)."""
    answers = memo.answers
    out = []
    evaluations = shared = 0
    for row in rows:
        key = (predicate, tuple([None if i < 0 else row[i] for i in where]))
        result = answers.get(key)
        if result is None:
            result = answers[key] = _evaluate(predicate, key[1])
            evaluations += 1
        else:
            shared += 1
        out.append(result is True)
    memo.evaluations += evaluations
    memo.shared += shared
    return out


def _evaluate(predicate: _Predicate, values: tuple) -> object:
    stats = predicate.stats
    stats.evaluations += 1
    bound = {f"_{i}": v for i, v in enumerate(values) if v is not None}
    if stats.evaluations % TIME_ONE_IN == 1:
        t = time.perf_counter()
        result = predicate.compiled(bound)
        stats.seconds += time.perf_counter() - t
        stats.timed += 1
    else:
        result = predicate.compiled(bound)
    if result is True:
        stats.passes += 1
    _EPOCH[0] += 1
    if _EPOCH[0] >= REORDER_EVERY:
        _EPOCH[0] = 0
        _EPOCH[1] += 1
    return result


def residual_plan(residual) -> ResidualPlan:
    """The plan of a branch's residual conjuncts (duplicates dropped)."""
    conjuncts, seen = [], set()
    for expr in residual:
        form, names = canonical(expr)
        if (form, names) in seen:
            continue
        seen.add((form, names))
        conjuncts.append(Conjunct(form, names, shared_predicate(form)))
    return ResidualPlan(conjuncts)
