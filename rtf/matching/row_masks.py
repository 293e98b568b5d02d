"""A shared join's answers as row masks: no Python step per query, little per answer key (issue 43).

The joined branches of one answer key are answered once per publication
(`rtf.matching.join_groups`), but the keys are many: a chain ``?x p ?y . ?y q ?v``
differs from its neighbours in a class on ``?y``, a FILTER on ``?v`` or its
projection; a star with a FILTER over two of its variables (``?v0 < ?v1``) in its
class or its comparison. Each key used to filter its own copy of the join's rows
(`PublicationSolver._semi_joined`) and run its residual filters row by row.

Here a key is an `AnswerPlan` made once, when its code is: the *wide* join it
filters (its tables of two columns or more, `WideJoin`), and its *tests*, each a
row mask of that join made once per publication and shared by every key that has
it:

* a `SemiTest`: a one-column table (``?y a dbo:Stadium``, a word on ``?x``'s label)
  keeps the rows whose variable is among its shape's values;
* a `ConjunctTest`: a residual conjunct (a shared predicate on some of the join's
  variables, `rtf.matching.shared_predicates`) keeps the rows where it is true,
  evaluated once per distinct values through the publication's `EvaluationMemo`.

A key's answer is the AND of its tests' masks (Python ints, one bit a row: one C
operation each), projected: the rows' projected solutions are made once per
(join, projection), and the answer once per (projection, mask), so keys that keep
the same rows share one frozenset. A conjunction's value under SPARQL's
three-valued logic does not depend on the order of its conjuncts, so the masks
give the answer `ResidualPlan.kept` gives, whatever order it ranks them in.
"""

from __future__ import annotations

import weakref
from itertools import compress, count

from rtf.matching.shared_predicates import truths

_WIDE: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_TESTS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
#: Each `WideJoin` and test gets a number of its own (`rtf.matching.join_groups` keys them in numpy).
_SERIALS = count()


class WideJoin:
    """The tables of two columns or more of a join key (its shapes, columns, names): one
    object per distinct such tables while a plan holds it (hashed by identity).

    A join of several tables is its `prefix` (the join of all its tables but the last, a
    `WideJoin` too) extended by its last table, when that one shares a variable with the
    others: chains that differ in a last table (``?x p3 ?w``) share the join of the others,
    and a join whose prefix is empty is empty without looking (`PublicationSolver.wide_joined`)."""

    __slots__ = ("shapes", "keep", "keep_names", "prefix", "single", "serial", "__weakref__")

    def __init__(self, shapes: tuple, keep: tuple, keep_names: tuple):
        self.shapes, self.keep, self.keep_names = shapes, keep, keep_names
        self.serial = next(_SERIALS)
        #: one table that names no variable twice: its join is its rows
        self.single = len(shapes) == 1 and len(set(keep_names[0])) == len(keep_names[0])
        self.prefix = None
        if len(shapes) > 1 and not {v for n in keep_names[:-1] for v in n}.isdisjoint(keep_names[-1]):
            self.prefix = wide_join(shapes[:-1], keep[:-1], keep_names[:-1])


def wide_join(shapes: tuple, keep: tuple, keep_names: tuple) -> WideJoin:
    """The one `WideJoin` of these tables while a plan holds it."""
    return _interned(_WIDE, WideJoin, shapes, keep, keep_names)


class SemiTest:
    """A one-column table on a variable of the wide join: the rows whose `var` is a value
    at `position` of the triples of `shape`."""

    __slots__ = ("shape", "position", "var", "serial", "__weakref__")

    def __init__(self, shape, position: int, var: str):
        self.shape, self.position, self.var = shape, position, var
        self.serial = next(_SERIALS)

    def mask(self, rows: "RowMasks", solver) -> int:
        at = rows.at.get(self.var)
        if at is None:  # (cannot happen: the variable is the wide join's)
            return 0
        values = solver.values(self.shape, self.position)
        return _mask([r[at] in values for r in rows.rows])


class ConjunctTest:
    """A residual conjunct (`rtf.matching.shared_predicates.Conjunct`'s shared predicate and
    the variables it reads): the rows where it is true."""

    __slots__ = ("predicate", "names", "serial", "__weakref__")

    def __init__(self, predicate, names: tuple[str, ...]):
        self.predicate, self.names = predicate, names
        self.serial = next(_SERIALS)

    def mask(self, rows: "RowMasks", solver) -> int:
        where = [rows.at.get(n, -1) for n in self.names]
        return _mask(truths(self.predicate, where, rows.rows, solver.memo))


def _interned(table: weakref.WeakValueDictionary, cls, *key):
    found = table.get((cls, *key))
    if found is None:
        found = table[(cls, *key)] = cls(*key)
    return found


class AnswerPlan:
    """How one answer key (`rtf.matching.solutions.JoinSpec`) is answered from row masks:
    its `wide` join, its `tests` (semi-joins first, then its residual conjuncts), its
    projection, and the spec itself (the path taken when the wide join was cut)."""

    __slots__ = ("wide", "tests", "projection", "spec")

    def __init__(self, spec):
        shapes, keep, names = spec.shapes, spec.keep, spec.keep_names
        wide_vars = {v for n in names if len(set(n)) > 1 for v in n}
        semi = [i for i, n in enumerate(names) if len(n) == 1 and n[0] in wide_vars]
        rest = [i for i in range(len(names)) if i not in semi]
        self.wide = wide_join(tuple(shapes[i] for i in rest), tuple(keep[i] for i in rest),
                              tuple(names[i] for i in rest))
        tests = [_interned(_TESTS, SemiTest, shapes[i], shapes[i].row_positions[keep[i][0]], names[i][0])
                 for i in semi]
        if spec.residual is not None:
            tests += [_interned(_TESTS, ConjunctTest, c.predicate, c.names) for c in spec.residual.conjuncts]
        self.tests = tuple(dict.fromkeys(tests))
        self.projection = spec.projection
        self.spec = spec


class RowMasks:
    """One publication's wide join (`rtf.matching.solutions.SharedJoin`) with what its answer
    keys share: each test's mask, each projection's solutions per row, each answer."""

    __slots__ = ("join", "rows", "at", "full", "masks", "_projected", "answers")

    def __init__(self, join):
        self.join = join
        self.rows = join.rows
        self.at = {n: i for i, n in enumerate(join.cols)}
        self.full = (1 << len(self.rows)) - 1
        self.masks: dict = {}
        self._projected: dict = {}
        self.answers: dict = {}

    def projected(self, projection: tuple[str, ...]) -> list[tuple]:
        """Each row's solution restricted to `projection` (the variables the join binds)."""
        found = self._projected.get(projection)
        if found is None:
            where = [(v, self.at[v]) for v in projection if v in self.at]
            found = self._projected[projection] = [tuple([(v, row[i]) for v, i in where]) for row in self.rows]
        return found

    def mask(self, test, solver) -> int:
        """`test`'s mask of these rows, made once."""
        found = self.masks.get(test)
        if found is None:
            found = self.masks[test] = test.mask(self, solver)
        return found

    def answer(self, plan: AnswerPlan, solver, limit: int) -> tuple[frozenset, bool]:
        """The plan's distinct projected solutions and whether `limit` cut them."""
        kept = self.full
        masks = self.masks
        for test in plan.tests:
            mask = masks.get(test)
            if mask is None:
                mask = masks[test] = test.mask(self, solver)
            kept &= mask
            if not kept:
                return _EMPTY
        return self.kept(plan.projection, kept, limit)

    def kept(self, projection: tuple[str, ...], kept: int, limit: int) -> tuple[frozenset, bool]:
        """The distinct solutions of the rows of mask `kept` projected on `projection`, and
        whether `limit` cut them; made once per (projection, mask)."""
        key = (projection, kept)
        found = self.answers.get(key)
        if found is None:
            solutions = self.projected(projection)
            if kept != self.full:
                solutions = compress(solutions, map("1".__eq__, bin(kept)[:1:-1]))
            answer = frozenset(solutions)
            cut = len(answer) > limit
            if cut:
                answer = frozenset(list(answer)[:limit])
            found = self.answers[key] = (answer, cut)
        return found


_EMPTY: tuple[frozenset, bool] = (frozenset(), False)


_DIGITS = bytes.maketrans(b"\x00\x01", b"01")


def _mask(flags: list[bool]) -> int:
    """The int whose bit i is set when the i-th of `flags` is true (its binary digits
    written by C, not a Python step per flag)."""
    return int(bytes(flags).translate(_DIGITS)[::-1], 2) if flags else 0
