"""From the shapes a publication satisfies to each query's solutions.

After an index has collected, for one publication, the triples that
satisfy each tuple shape (`hits`), the query table counts which branches
are complete (`QueryTable.complete_slots`), and this module answers them:

* a *star* branch (`rtf.matching.star.StarPlan`: joined on one variable only,
  no residual filter -- the common ``?s p1 ?o1 . ?s p2 "c" ...`` query)
  is the intersection of that variable's values over its tuples, computed
  once per (shape, position) per publication and shared by every branch
  that asks for it; when the publication has a single subject and the
  variable is every tuple's subject, that intersection is known without
  looking;
* any other branch joins its binding tables (G-ToPSS, `rtf.matching.join`), keeps
  the solutions that pass its residual filters, and projects them. Queries repeat
  few join structures (issue 43: chains, multi-valued stars with a ``!=``, FILTERs
  between two variables), so a join is made once per publication for every branch
  of the same shapes and columns (`SharedJoin`; its one-column tables, a class or
  a word on a joined variable, filter the shared join of its wider tables), and an
  answer once for every branch of the same join, residual and projection
  (`JoinSpec.key`; `rtf.matching.join_groups` hands it to all of them at once),
  from bit masks of its wide join's rows that the keys share (`rtf.matching.row_masks`:
  `planned`, `row_masks`; a join of several tables extends its prefix's, `wide_joined`).

Solutions are frozensets of sorted ``(variable, term)`` tuples, shared
between the queries that have the same ones.
"""

from __future__ import annotations

from itertools import product
from operator import itemgetter
from typing import NamedTuple

from rtf.matching.join import extend, join_rows
from rtf.matching.row_masks import AnswerPlan, RowMasks, WideJoin
from rtf.matching.shared_predicates import EvaluationMemo, ResidualPlan

#: A branch's join holds at most this many rows per solution it may report
#: (``limit * JOIN_ROWS_PER_SOLUTION``): the work bound of a publication.
JOIN_ROWS_PER_SOLUTION = 10
from rtf.matching.query_table import RegisteredBranch, TupleShape
from rtf.matching.star import LAST_COLUMN_BIT, SUBJECT, ProjectedStar, star_columns

Triple = tuple[str, str, str]
Solution = tuple[tuple[str, str], ...]

#: The one solution of a branch that binds nothing it projects (ASK, or ?s not selected).
UNIT: frozenset[Solution] = frozenset({()})
EMPTY: frozenset[Solution] = frozenset()


class PublicationSolver:
    """Answers complete branches for one publication, caching what branches share."""

    __slots__ = ("hits", "subject", "_values", "_tables", "_singletons", "triples", "virtual",
                 "_publication", "memo", "_joins", "_answers", "star_answers", "_products",
                 "_subject_set", "_row_masks", "_buckets", "_wide_joins")

    def __init__(self, hits: dict[TupleShape, list[Triple]], subject: str | None,
                 triples: list[Triple] = (), virtual: list[Triple] = (),
                 memo: EvaluationMemo | None = None):
        self.hits = hits
        #: The publication's triples, for the OPTIONAL groups (`rtf.matching.optional`).
        self.triples = triples
        self.virtual = virtual
        self._publication = None
        #: The publication's only subject, or None when it has several.
        self.subject = subject
        self._values: dict[tuple[TupleShape, int], frozenset[str]] = {}
        self._tables: dict[tuple[TupleShape, tuple[int, ...]], set[tuple]] = {}
        self._singletons: dict[tuple, frozenset[Solution]] = {}
        #: join key -> `SharedJoin`: the branches of one join structure join once
        self._joins: dict[tuple, SharedJoin] = {}
        #: (join key, residual key, projection) -> (solutions, truncated): and answer once
        self._answers: dict[tuple, tuple[frozenset[Solution], bool]] = {}
        #: (ProjectedStar code, the values its tested variables keep) -> its solutions or None
        self.star_answers: dict[tuple, frozenset[Solution] | None] = {}
        #: (names, their value sets) -> the product: stars that differ only in the tuples
        #: they do not project (``?s a dbo:Person`` or ``a dbo:Place``) have one answer
        self._products: dict[tuple, frozenset[Solution]] = {}
        self._subject_set: frozenset[str] | None = None
        #: `WideJoin` -> its `RowMasks`: the answer keys that filter one join share its masks
        self._row_masks: dict = {}
        #: the tables' hash buckets, which the joins of one publication share (`join_rows`)
        self._buckets: dict = {}
        #: `WideJoin` -> its join (`wide_joined`)
        self._wide_joins: dict = {}
        #: Expensive residual predicates answered once per distinct values (seed 002).
        self.memo = memo if memo is not None else EvaluationMemo()

    def values(self, shape: TupleShape, position: int) -> frozenset[str]:
        """The terms at `position` of the triples that satisfied `shape`."""
        key = (shape, position)
        found = self._values.get(key)
        if found is None:
            found = self._values[key] = frozenset([t[position] for t in self.hits[shape]])
        return found

    def table(self, shape: TupleShape, keep: tuple[int, ...]) -> set[tuple]:
        """The shape's binding rows restricted to the `keep` columns, deduplicated."""
        key = (shape, keep)
        found = self._tables.get(key)
        if found is None:
            positions = [shape.row_positions[i] for i in keep]
            triples = self.hits[shape]
            if len(positions) == 1:
                p = positions[0]
                found = {(t[p],) for t in triples}
            elif positions:
                get = itemgetter(*positions)
                found = set(map(get, triples))
            else:
                found = {()}
            self._tables[key] = found
        return found

    def subject_solutions(self, var: str) -> frozenset[Solution]:
        """``{var: the publication's one subject}``, the answer of most star queries."""
        key = (var, None)
        found = self._singletons.get(key)
        if found is None:
            found = self._singletons[key] = frozenset((((var, self.subject),),))
        return found

    def projected_solutions(self, star: ProjectedStar, limit: int,
                            kept: dict | None = None) -> frozenset[Solution] | None:
        """The solutions of every complete branch of `star` on this publication of one subject:
        the product of its projected tuples' values (a tested variable has one value here,
        the one its complete branch's conjunction holds for); None when a tested variable
        has several (which ones a branch's FILTERs keep are its own) and `kept` does not say
        which (tested variable -> the values its conjunction holds for), or past `limit`."""
        columns = []
        size = 1
        for name, column in zip(star.names, star.columns):
            if column is SUBJECT:
                columns.append(self.subject_set)
                continue
            shape, position, tested = column
            values = self.values(shape, position)
            if tested and len(values) != 1:
                values = kept.get(name) if kept else None
                if values is None:
                    return None
            columns.append(values)  # (a set: the product is one too)
            size *= len(values)
        if size > limit:
            return None
        return self.product(star.names, columns)

    def product_columns(self, columns) -> tuple[list, int, int]:
        """A product's columns (each `SUBJECT` or (shape, position)) as value sets, the
        product's size and the bits of its columns of several values (`column_bits`)."""
        found, size, several = [], 1, 0
        known, subject = self._values, self.subject_set
        for i, column in enumerate(columns):
            if column is SUBJECT:
                found.append(subject)
                continue
            values = known.get(column)
            if values is None:
                values = self.values(*column)
            n = len(values)
            if n != 1:
                several |= 1 << min(i, LAST_COLUMN_BIT)
                size *= n
            found.append(values)
        return found, size, several

    def product(self, names: tuple[str, ...], columns: list) -> frozenset[Solution]:
        """The solutions binding `names` to every combination of the `columns`' values,
        made once per publication for every star of those names and value sets (stars that
        differ only in the tuples they do not project, ``?s a dbo:Person`` or ``a dbo:Place``)."""
        key = (names, tuple(columns))  # (frozensets: hashed once, compared by identity first)
        found = self._products.get(key)
        if found is None:
            found = self._products[key] = frozenset([tuple(zip(names, row)) for row in product(*columns)])
        return found

    @property
    def subject_set(self) -> frozenset[str]:
        """The publication's one subject, as a column of values."""
        if self._subject_set is None:
            self._subject_set = frozenset((self.subject,))
        return self._subject_set

    def solve(self, rb: RegisteredBranch, limit: int) -> tuple[frozenset[Solution] | set, bool]:
        """The branch's distinct projected solutions, and whether `limit` cut them."""
        if rb.star is not None:
            return self._star(rb), False
        if rb.optional is not None:
            return self._join_optional(rb, limit)
        return self._join(rb, limit)

    def _join_optional(self, rb: RegisteredBranch, limit: int) -> tuple[set, bool]:
        """The branch's join, each solution left-joined with the query's OPTIONAL groups."""
        from rtf.matching.optional import PublicationTriples, extend

        max_rows = limit * JOIN_ROWS_PER_SOLUTION
        join = self.joined(rb, max_rows)
        residual, memo = rb.residual_plan(), self.memo
        if self._publication is None:
            self._publication = PublicationTriples(self.triples, self.virtual)
        while True:
            rows = [dict(sol) for sol in join.dicts() if residual is None or residual.passes(sol, memo)]
            rows, cut = extend(rows, rb.optional, self._publication, max_rows)
            found: set[Solution] = set()
            for sol in rows:
                found.add(tuple([(v, sol[v]) for v in rb.projection if v in sol]))
                if len(found) > limit:
                    found.pop()
                    return found, True
            if found or not (join.truncated or cut):
                return found, join.truncated or cut
            max_rows *= 16  # (see `_answer`)
            join = self._fresh_join(rb, max_rows)

    def _star(self, rb: RegisteredBranch) -> frozenset[Solution]:
        star = rb.star
        if star.var is None:
            return UNIT
        if star.on_subject and self.subject is not None:
            # every satisfied tuple has the publication's one subject
            return self.subject_solutions(star.var) if star.projected else UNIT
        vals = None
        for shape, position in star_columns(rb):
            v = self.values(shape, position)
            vals = v if vals is None else vals & v
            if not vals:
                return EMPTY
        if not star.projected:
            return UNIT
        key = (star.var, vals)
        found = self._singletons.get(key)
        if found is None:
            found = self._singletons[key] = frozenset(((star.var, v),) for v in vals)
        return found

    def joined(self, spec: "JoinSpec | RegisteredBranch", max_rows: int) -> "SharedJoin":
        """The join of a branch (`join_rows` of its binding tables, at most `max_rows` a step),
        made once per publication for every branch of the same join key: the same shapes,
        columns and variable names (queries that differ only in their FILTERs or projection,
        or in constants the shapes share)."""
        key = (spec.shapes, spec.keep, spec.keep_names)
        found = self._joins.get(key)
        if found is None:
            found = self._joins[key] = self._semi_joined(*key, max_rows) or SharedJoin(*join_rows(
                [(names, self.table(shape, keep)) for shape, keep, names in zip(*key)], max_rows,
                self._buckets))
        return found

    def wide_joined(self, wide: WideJoin, max_rows: int) -> "SharedJoin":
        """The join of a `WideJoin`'s tables, made once per publication: its prefix's join
        (shared by every wide join of that prefix) extended by its last table, or `joined`."""
        found = self._wide_joins.get(wide)
        if found is None:
            prefix, made = wide.prefix, None
            if wide.single:  # one table of distinct variables: its rows as they are
                made = list(wide.keep_names[0]), list(self.table(wide.shapes[0], wide.keep[0])), False
            elif prefix is not None:
                left = self.wide_joined(prefix, max_rows)
                if not left.truncated:
                    shape, keep = wide.shapes[-1], wide.keep[-1]
                    made = extend(left.cols, left.rows, wide.keep_names[-1],
                                  self.table(shape, keep) if left.rows else (), max_rows, self._buckets)
            found = self._wide_joins[wide] = SharedJoin(*made) if made is not None else self.joined(
                JoinSpec(wide.shapes, wide.keep, wide.keep_names, None, ()), max_rows)
        return found

    def _semi_joined(self, shapes, keep, names, max_rows: int) -> "SharedJoin | None":
        """A join whose one-column tables (``?y a dbo:Stadium``, a word on ``?x``'s label...)
        keep a variable of its wider tables: the wider tables' join, shared by every join
        that has them, filtered by those columns' values. None when there is no such table,
        or the wider join was cut (the whole join, smallest table first, may not be)."""
        wide = {v for n in names if len(set(n)) > 1 for v in n}
        semi = [i for i, n in enumerate(names) if len(n) == 1 and n[0] in wide]
        if not semi:
            return None
        rest = [i for i in range(len(names)) if i not in semi]
        join = self.joined(JoinSpec(tuple(shapes[i] for i in rest), tuple(keep[i] for i in rest),
                                    tuple(names[i] for i in rest), None, ()), max_rows)
        if join.truncated:
            return None
        rows, cols = join.rows, join.cols
        for i in semi:
            if not rows:
                break
            values, at = self.values(shapes[i], shapes[i].row_positions[keep[i][0]]), cols.index(names[i][0])
            rows = [r for r in rows if r[at] in values]
        return SharedJoin(cols, rows, False)

    def _join(self, rb: RegisteredBranch, limit: int) -> tuple[frozenset[Solution], bool]:
        return self.answer(join_spec(rb), limit)

    def answer(self, spec: "JoinSpec", limit: int) -> tuple[frozenset[Solution], bool]:
        """A joined branch's distinct projected solutions (frozen) and whether `limit` cut
        them: its shared join, residual filters and projection, made once per publication for
        every branch of the same `JoinSpec.key`."""
        key = spec.key
        answer = self._answers.get(key)
        if answer is None:
            answer = self._answers[key] = self._answer(spec, limit)
        return answer

    def planned(self, plan: AnswerPlan, limit: int) -> tuple[frozenset[Solution], bool]:
        """`answer` of the plan's spec, from the row masks of its wide join
        (`rtf.matching.row_masks`); by `answer` itself when that join was cut."""
        rows = self.row_masks(plan.wide, limit)
        if rows is None:
            return self.answer(plan.spec, limit)
        return rows.answer(plan, self, limit)

    def row_masks(self, wide: WideJoin, limit: int) -> RowMasks | None:
        """The `RowMasks` of a wide join, made once per publication; None when it was cut."""
        try:
            return self._row_masks[wide]
        except KeyError:
            join = self.wide_joined(wide, limit * JOIN_ROWS_PER_SOLUTION)
            found = self._row_masks[wide] = None if join.truncated else RowMasks(join)
            return found

    def _answer(self, spec: "JoinSpec", limit: int) -> tuple[frozenset[Solution], bool]:
        max_rows = limit * JOIN_ROWS_PER_SOLUTION
        join = self.joined(spec, max_rows)
        while True:
            found, truncated = self._filtered(spec, join, limit)
            if found or not join.truncated:
                return found, truncated
            # The cut join's rows all failed the FILTERs: the branch may still match on the
            # rows past the cut, so it is joined further (a work bound, not an answer).
            max_rows *= 16
            join = self._fresh_join(spec, max_rows)

    def _fresh_join(self, spec: "JoinSpec | RegisteredBranch", max_rows: int) -> "SharedJoin":
        """The branch's join past a cut: not shared (its key's join stays the cut one)."""
        return SharedJoin(*join_rows([(names, self.table(shape, keep))
                                      for shape, keep, names in zip(spec.shapes, spec.keep, spec.keep_names)],
                                     max_rows))

    def _filtered(self, spec: "JoinSpec", join: "SharedJoin", limit: int) -> tuple[frozenset[Solution], bool]:
        """The join's rows that pass the residual filters, projected, at most `limit`."""
        truncated = join.truncated
        if not join.rows:
            return EMPTY, truncated
        cols = join.cols
        where = [(v, cols.index(v)) for v in spec.projection if v in cols]
        found: set[Solution] = set()
        residual = spec.residual
        if residual is None:
            rows = join.rows
        else:
            rows = residual.kept(cols, join.rows, self.memo)
        for row in rows:
            found.add(tuple([(v, row[i]) for v, i in where]))
            if len(found) > limit:
                found.pop()
                truncated = True
                break
        return frozenset(found), truncated


class JoinSpec(NamedTuple):
    """What a joined branch's answer depends on: its shapes (by identity), their columns and
    variable names (the join), its residual filters and its projection."""

    shapes: tuple
    keep: tuple
    keep_names: tuple
    residual: ResidualPlan | None
    projection: tuple[str, ...]

    @property
    def key(self) -> tuple:
        """Equal for two branches that answer alike (the residual by what it tests)."""
        residual = self.residual
        return (self.shapes, self.keep, self.keep_names,
                None if residual is None else residual.key, self.projection)


def join_spec(rb: RegisteredBranch) -> JoinSpec:
    return JoinSpec(rb.shapes, rb.keep, rb.keep_names, rb.residual_plan(), rb.projection)


class SharedJoin:
    """One join of a publication (`join_rows`' columns, rows and truncation), with its rows as
    variable -> term dicts for the residual filters, made once for the branches that share it."""

    __slots__ = ("cols", "rows", "truncated", "_dicts")

    def __init__(self, cols: list[str], rows: list[list[str]], truncated: bool):
        self.cols, self.rows, self.truncated = cols, rows, truncated
        self._dicts = None

    def dicts(self) -> list[dict[str, str]]:
        found = self._dicts
        if found is None:
            cols = self.cols
            found = self._dicts = [dict(zip(cols, row)) for row in self.rows]
        return found
