"""Branches that join alike, answered a group at a time (issue 43).

Queries users write repeat few join structures -- chains ``?x dbp:stadium ?y . ?y
rdfs:label ?v``, stars with a ``?o != C`` or a ``?a < ?b`` -- and differ in their
FILTERs and projections, or not at all. A publication's join of such a branch depends
only on its *join key* (its shapes, their columns and variable names: the
`rtf.matching.solutions.SharedJoin` made once per publication), and its answer only on
its *answer key*: the join key, its residual filters (`ResidualPlan.key`) and its
projection. Each answer key gets a small code, and each branch of a query with one
branch the code of its key (`JoinGroups.codes`, found on the branch's first complete
publication and kept until the query goes); a publication answers each code once and
hands its answer to all the code's branches at once, as the stars on ``?s`` are handed
theirs (`rtf.filter.IndexedQueries.solution_groups`), with no Python step per query.
Each code has an `rtf.matching.row_masks.AnswerPlan`, and a publication's codes are
answered together (`JoinGroups.answers`): their rows are ANDs of row masks in numpy, with
no Python step per code either.
"""

from __future__ import annotations

import numpy as np

from rtf.matching.query_table import QueryTable, RegisteredBranch
from rtf.matching.row_masks import AnswerPlan
from rtf.matching.solutions import EMPTY, JoinSpec, PublicationSolver, join_spec
from rtf.matching.structures import grown

#: In `JoinGroups.slot_code`: not known yet, and answered one by one (not in a group).
UNKNOWN, ALONE = -1, -2
#: Distinct codes of a publication from which `JoinGroups.answers` answers them in numpy (fewer:
#: one by one); a list, so that the tests can run either path.
VECTOR_CODES = [32]
#: The rows of a wide join whose masks `JoinGroups.answers` keeps in one uint64, and all of them.
_WORD = 64
_ALL = np.uint64(2**64 - 1)


class JoinGroups:
    """Slot -> the code of its answer key (`UNKNOWN`, `ALONE`), and each code's `JoinSpec`
    (a code goes with its last branch). Made from the registered branches as they are
    first complete, so never saved."""

    def __init__(self) -> None:
        self.slot_code = np.full(64, UNKNOWN, dtype=np.int32)
        #: code -> how its branches are answered (`PublicationSolver.answer`)
        self.spec: dict[int, JoinSpec] = {}
        #: code -> its `AnswerPlan` (`PublicationSolver.planned`)
        self.plan: dict[int, AnswerPlan] = {}
        #: code -> its plan's wide join's serial, projection's number, tests' serials (-1 pads)
        self.code_wide = np.full(64, -1, dtype=np.int64)
        self.code_projection = np.full(64, -1, dtype=np.int64)
        self.code_tests = np.full((64, 2), -1, dtype=np.int64)
        self._projections: dict[tuple[str, ...], int] = {}
        self._codes: dict[tuple, int] = {}
        self._count: dict[int, int] = {}
        self._free: list[int] = []

    def __reduce__(self):
        # Pickled empty (a saved index, an engine shipped to Spark): the codes are found
        # again on the branches' next complete publication, and the plans' serials
        # (`rtf.matching.row_masks`) are this process's, not to be mixed with another's.
        return JoinGroups, ()

    def codes(self, slots: np.ndarray, table: QueryTable) -> np.ndarray:
        """The codes of `slots` (`ALONE` for a branch answered one by one), found the first
        time a slot is asked."""
        if len(self.slot_code) < len(table.branches):
            self.slot_code = grown(self.slot_code, len(table.branches), UNKNOWN)
        codes = self.slot_code[slots]
        unknown = codes == UNKNOWN
        if unknown.any():
            for slot in slots[unknown].tolist():
                self.slot_code[slot] = self._code(table.branches[slot], table)
            codes = self.slot_code[slots]
        return codes

    def _code(self, rb: RegisteredBranch, table: QueryTable) -> int:
        if (rb.star is not None or rb.optional is not None or rb.algebra is not None
                or len(table.queries[rb.query_id]) != 1):
            return ALONE  # (a star is intersected; a query of several branches merges them)
        spec = join_spec(rb)
        key = spec.key
        code = self._codes.get(key)
        if code is None:
            code = self._free.pop() if self._free else len(self._codes)
            self._codes[key] = code
            self.spec[code] = spec
            self._planned(code, AnswerPlan(spec))
            self._count[code] = 0
        self._count[code] += 1
        return code

    def _planned(self, code: int, plan: AnswerPlan) -> None:
        self.plan[code] = plan
        if code >= len(self.code_wide):
            self.code_wide = grown(self.code_wide, code + 1, -1)
            self.code_projection = grown(self.code_projection, code + 1, -1)
        if code >= len(self.code_tests) or len(plan.tests) > self.code_tests.shape[1]:
            tests = np.full((max(code + 1, 2 * len(self.code_tests)), max(len(plan.tests), self.code_tests.shape[1])),
                            -1, dtype=np.int64)
            tests[:len(self.code_tests), :self.code_tests.shape[1]] = self.code_tests
            self.code_tests = tests
        self.code_wide[code] = plan.wide.serial
        self.code_projection[code] = self._projections.setdefault(plan.projection, len(self._projections))
        self.code_tests[code] = -1
        self.code_tests[code, :len(plan.tests)] = [t.serial for t in plan.tests]

    def answers(self, present: np.ndarray, solver: PublicationSolver, limit: int
                ) -> tuple[np.ndarray, np.ndarray]:
        """The answers of the codes `present` (sorted, distinct) and whether each is usable
        (not cut by `limit`). From `VECTOR_CODES` codes on, set-at-a-time: a Python step per
        distinct wide join, per distinct (wide join, test) mask and per distinct (wide join,
        projection, rows kept), none per code. A wide join of at most 64 rows has its masks
        in one uint64 each, and a code's rows are the AND of its tests' masks (numpy); the
        codes of a wider or cut join, or of fewer codes, are answered one by one
        (`PublicationSolver.planned`)."""
        n = len(present)
        answers = np.empty(n, dtype=object)
        usable = np.ones(n, dtype=bool)
        plans = self.plan
        if n < VECTOR_CODES[0]:  # (a few: numpy's calls would cost more than they save)
            given = [solver.planned(plans[code], limit) for code in present.tolist()]
            answers[:] = [a for a, _ in given]
            usable[:] = [not cut for _, cut in given]
            return answers, usable
        answers[:] = [EMPTY] * n
        wides, first, at = np.unique(self.code_wide[present], return_index=True, return_inverse=True)
        at = at.reshape(-1)
        masks = [solver.row_masks(plans[c].wide, limit) for c in present[first].tolist()]
        small = np.fromiter((m is not None and len(m.rows) <= _WORD for m in masks), bool, len(masks))
        full = np.fromiter((m.full if m is not None and len(m.rows) <= _WORD else 0 for m in masks),
                           np.uint64, len(masks))
        for j in np.flatnonzero(~small[at]).tolist():  # (wide or cut joins)
            answers[j], cut = solver.planned(plans[int(present[j])], limit)
            usable[j] = not cut
        live = np.flatnonzero(small[at] & (full[at] != 0))
        if not len(live):
            return answers, usable
        codes, wide_of = present[live], at[live]
        tests = self.code_tests[codes]
        has = tests >= 0
        kept = full[wide_of]
        if has.any():
            # One mask per distinct (wide join, test), ANDed per code along its row.
            rows_of, cols_of = np.nonzero(has)
            pairs = wide_of[rows_of] * (int(tests.max()) + 1) + tests[has]
            distinct, one, back = np.unique(pairs, return_index=True, return_inverse=True)
            made = np.fromiter(
                (masks[wide_of[r]].mask(plans[int(codes[r])].tests[c], solver)
                 for r, c in zip(rows_of[one].tolist(), cols_of[one].tolist())), np.uint64, len(distinct))
            grid = np.full(tests.shape, _ALL, dtype=np.uint64)
            grid[has] = made[back.reshape(-1)]
            kept = kept & np.bitwise_and.reduce(grid, axis=1)
        some = np.flatnonzero(kept)
        if not len(some):
            return answers, usable
        one, back = _distinct_rows(wide_of[some], self.code_projection[codes[some]], kept[some])
        given = [masks[w].kept(plans[int(c)].projection, k, limit) for w, c, k in
                 zip(wide_of[some][one].tolist(), codes[some][one].tolist(), kept[some][one].tolist())]
        got = np.empty(len(given), dtype=object)
        got[:] = [a for a, _ in given]
        where = live[some]
        answers[where] = got[back]
        usable[where] = np.fromiter((not cut for _, cut in given), bool, len(given))[back]
        return answers, usable

    def release(self, rb: RegisteredBranch) -> None:
        """Before `rb` leaves the table: its slot forgets its code, a code its last branch."""
        slot = rb.slot
        if slot >= len(self.slot_code):
            return
        code = int(self.slot_code[slot])
        self.slot_code[slot] = UNKNOWN
        if code < 0:
            return
        self._count[code] -= 1
        if not self._count[code]:
            del self._codes[self.spec.pop(code).key], self._count[code], self.plan[code]
            self._free.append(code)

    def __len__(self) -> int:
        return len(self._codes)


def _distinct_rows(*columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows of `columns` (equal lengths), each distinct row once: the index of its first
    occurrence, and every row's distinct row (as ``np.unique(..., axis=0, return_index=True,
    return_inverse=True)`` gives them, which views the rows as bytes and is several times
    slower). One stable lexicographic sort."""
    order = np.lexsort(columns[::-1])
    start = np.zeros(len(order), dtype=bool)
    start[:1] = True
    for column in columns:
        ranked = column[order]
        start[1:] |= ranked[1:] != ranked[:-1]
    back = np.empty(len(order), dtype=np.intp)
    back[order] = np.cumsum(start) - 1
    return order[start], back
