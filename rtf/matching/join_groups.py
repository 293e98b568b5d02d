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
"""

from __future__ import annotations

import numpy as np

from rtf.matching.query_table import QueryTable, RegisteredBranch
from rtf.matching.row_masks import AnswerPlan
from rtf.matching.solutions import JoinSpec, join_spec
from rtf.matching.structures import grown

#: In `JoinGroups.slot_code`: not known yet, and answered one by one (not in a group).
UNKNOWN, ALONE = -1, -2


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
        self._codes: dict[tuple, int] = {}
        self._count: dict[int, int] = {}
        self._free: list[int] = []

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
            self.plan[code] = AnswerPlan(spec)
            self._count[code] = 0
        self._count[code] += 1
        return code

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
