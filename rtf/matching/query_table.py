"""The query table (QT) and tuple shapes shared by the indexed engines.

Registration turns each branch of a query into tuple conjuncts; the query
table maps a query id to its branches (section 3.1, step 2 of the RTF
paper). Each branch gets a small integer *slot*.

A *tuple shape* is what an index stores: the tuple with its variables
renamed by position inside the tuple (``(?x, p, ?y)`` and ``(?a, p, ?b)``
both become ``(?1, p, ?2)``, as G-ToPSS labels variables ``*1, *2``), plus
its full-text constraint. Equal shapes from different queries are stored
once and share every node of the index, known by a small integer id. When
a publication triple satisfies a shape, it yields one binding row: the
values of ``?1, ?2, ...``.

Completion is decided set-at-a-time: a branch needs its distinct shapes all
satisfied. Each branch is listed under one of them, its pivot, and only the
branches pivoted on a satisfied shape have their other shapes looked up
(`rtf.matching.pivots`); a branch with value tests is counted by its
conjunctions and its structure instead (`rtf.matching.structures`). The
cost follows the candidates, never the number of queries stored.
"""

from __future__ import annotations

from array import array
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from rtf.matching.hits import Hits
from rtf.matching.id_column import IdColumn
from rtf.matching.id_order import IdOrder
from rtf.matching.shared_predicates import ResidualPlan, residual_plan
from rtf.matching.pivots import Pivots
from rtf.matching.registered import TextRecord
from rtf.matching.star import ProjectedStars, StarPlan, projected_star, star_plan
from rtf.matching.structures import Structures, grown, shrunk
from rtf.matching.tuple_shapes import (  # noqa: F401 (re-exported: where the indexes import them)
    WILDCARD_CONTENT, TupleShape, _shared, index_keys, is_var_content, shape_of, var_content)
from rtf.matching.value_tests import ValueTests, exact_star
from rtf.query.model import Branch, Query, TupleConjunct

if TYPE_CHECKING:  # rtf.matching.optional is imported where used: it imports the evaluator
    from rtf.matching.optional import OptionalPart

_NO_SLOTS = np.zeros(0, dtype=np.int32)


#: While `bulk_memos` is active: id(tuple conjunct) -> (the conjunct, its
#: `shape_of`), and variable layout -> `needed_columns`. Tuple conjuncts are
#: shared values (`rtf.query.terms.shared`), so many queries repeat few of them.
#: None otherwise: a memo kept for good would hold removed queries' values.
_SHAPE_MEMO: dict[int, tuple] | None = None
_COLUMNS_MEMO: dict[tuple, tuple] | None = None
_BULK_DEPTH = 0


@contextmanager
def bulk_memos(shapes: bool = True):
    """Within the block, `QueryTable.add` memoises `needed_columns` and, with `shapes`,
    `shape_of` (many queries registered at once); the memos are dropped at the end,
    so nothing of the queries outlives them.

    `Engine.register_many` memoises the columns only: the shape memo's entries, made
    while the index grows and dropped after it, left the process 13 MB larger at 100K
    queries (freed memory scattered among the index's objects is not given back).
    Loading a saved index takes both (`Engine.from_bytes`)."""
    global _SHAPE_MEMO, _COLUMNS_MEMO, _BULK_DEPTH
    if _BULK_DEPTH == 0:
        _SHAPE_MEMO, _COLUMNS_MEMO = ({} if shapes else None), {}
    _BULK_DEPTH += 1
    try:
        yield
    finally:
        _BULK_DEPTH -= 1
        if _BULK_DEPTH == 0:
            _SHAPE_MEMO = _COLUMNS_MEMO = None


def shape_of_shared(t: TupleConjunct):
    """`shape_of`, memoised by identity inside `bulk_memos`. The entry keeps the
    conjunct alive, so its id cannot be reused while it is cached."""
    memo = _SHAPE_MEMO
    if memo is None:
        return shape_of(t)
    found = memo.get(id(t))
    if found is not None and found[0] is t:
        return found[1]
    shape = shape_of(t)
    memo[id(t)] = (t, shape)
    return shape


@dataclass(eq=False, slots=True)
class RegisteredBranch:
    """A branch of a registered query: its slot, shapes, and how to answer it.

    `keep` and `keep_names`, per tuple: the row columns the join needs, and
    their variable names. A variable that only one tuple mentions and that
    is neither projected nor used by a residual filter is existential: its
    column is dropped (and the rows deduplicated) before the join, which
    keeps star queries over many-valued properties from multiplying out.

    `star` is set when, after that, the branch joins on one variable only
    and has no residual filter (the common star query about ``?s``): its
    solutions are then the intersection of that variable's values over the
    tuples, with no join (see `rtf.matching.solutions`).
    """

    query_id: str
    branch: Branch
    slot: int = -1
    shapes: tuple[TupleShape, ...] = ()
    keep: tuple[tuple[int, ...], ...] = ()
    keep_names: tuple[tuple[str, ...], ...] = ()
    projection: tuple[str, ...] = ()
    star: "StarPlan | None" = None
    #: The query's OPTIONAL groups and later FILTERs (`rtf.matching.optional`), or None.
    optional: "OptionalPart | None" = None
    #: The residual filters, ordered and shared (`rtf.matching.shared_predicates`): made
    #: on first use (a branch the value index answers by itself never needs it).
    residual: "ResidualPlan | None" = None
    #: A version-3 query's algebra (`rtf.algebra.model.AlgebraQuery`): the branch only
    #: finds the query, which its algebra then answers (`rtf.matching.confirm`).
    algebra: object = None

    def residual_plan(self) -> "ResidualPlan | None":
        plan = self.residual
        if plan is None and self.branch.residual:
            plan = self.residual = residual_plan(self.branch.residual)
        return plan


_BRANCH = RegisteredBranch.branch.__get__


class _TextBranch(RegisteredBranch):
    """The one branch of a query kept as text (`rtf.matching.registered.TextRecord`)
    answered by its star plan, which reads neither the branch nor the model: it keeps the
    record instead, and its branch is made again from the model when read."""

    __slots__ = ()

    @property
    def branch(self) -> Branch:  # type: ignore[override]
        return _BRANCH(self).query.branches[0]

    def __reduce__(self):  # (its fields as stored: the record pickles as its text)
        return _text_branch, tuple(_FIELD_GET[name](self) for name in RegisteredBranch.__slots__)


_FIELD_GET = {name: getattr(RegisteredBranch, name).__get__ for name in RegisteredBranch.__slots__}


def _text_branch(*fields) -> _TextBranch:
    made = object.__new__(_TextBranch)
    for name, value in zip(RegisteredBranch.__slots__, fields):
        getattr(RegisteredBranch, name).__set__(made, value)
    return made


def needed_outside(query: Query, branch: Branch) -> set[str]:
    """Variables a branch needs beyond its tuples: projected or filtered on."""
    from rtf.query.model import operand_variables
    from rtf.matching.optional import optional_part
    out = set(query.projection)
    for r in branch.residual:
        out |= operand_variables(r)
    part = optional_part(query)
    if part is not None:  # the left joins and the later FILTERs read these
        out |= part.variables
    return out


def planned_branches(query: Query) -> list[tuple]:
    """(branch, its tuples' shape keys, keep, keep_names, variable names per tuple) of
    each branch of `query`: what `QueryTable.add` registers, and a loaded query's branches
    are made again from (`rtf.matching.table_snapshot`)."""
    planned = []
    for b in query.branches:
        per_tuple = [shape_of_shared(t) for t in b.tuples]
        names = [vars_ for _, vars_ in per_tuple]
        keep, keep_names = needed_columns_shared(names, needed_outside(query, b))
        planned.append((b, [key for key, _ in per_tuple], keep, keep_names, names))
    return planned


class _Pending(str):
    def __reduce__(self):  # (one object, unpickled too: read by identity)
        return "PENDING"


#: In `QueryTable.queries` and `branches`: a loaded query's branch not made yet.
PENDING = _Pending("pending")


def needed_columns(names: list[tuple[str, ...]], outside: set[str]):
    """For each tuple, the positions of its variables that the join needs."""
    count: dict[str, int] = {}
    for ns in names:
        for n in ns:
            count[n] = count.get(n, 0) + 1
    keep, keep_names = [], []
    for ns in names:
        idx = tuple(i for i, n in enumerate(ns) if count[n] > 1 or n in outside)
        keep.append(_shared(idx))
        keep_names.append(_shared(tuple(ns[i] for i in idx)))
    return _shared(tuple(keep)), _shared(tuple(keep_names))


def needed_columns_shared(names: list[tuple[str, ...]], outside: set[str]):
    """`needed_columns`, memoised inside `bulk_memos`: queries of one workload
    repeat a few variable layouts."""
    memo = _COLUMNS_MEMO
    if memo is None:
        return needed_columns(names, outside)
    key = (tuple(names), frozenset(outside))
    found = memo.get(key)
    if found is None:
        found = memo[key] = needed_columns(names, outside)
    return found


@dataclass
class QueryTable:
    """Query id -> branches, branch slots, and the shapes they share.

    With ``share_shapes=False`` every tuple gets a shape of its own: an index
    that must not cluster equal tuples of different queries (the iBroker
    baseline) sees each of them.
    """

    share_shapes: bool = True
    queries: dict[str, tuple[RegisteredBranch, ...]] = field(default_factory=dict)
    shapes: dict[tuple, TupleShape] = field(default_factory=dict)
    #: slot -> branch (None for a free slot)
    branches: list[RegisteredBranch | None] = field(default_factory=list)
    #: slot -> for a branch with value tests, the conjunction marks it needs (`_counted`;
    #: its shapes are its structure's); -1 for the others (counted by `pivots`) and free slots
    need: np.ndarray = field(default_factory=lambda: np.full(64, -1, dtype=np.int64))
    #: slot -> its query's id (None for a free slot), for answering slots in bulk
    slot_id: np.ndarray = field(default_factory=lambda: np.full(64, None, dtype=object))
    #: slot -> its record's ``subscriber`` (None when it has none), gathered the same way
    slot_subscriber: np.ndarray = field(default_factory=lambda: np.full(64, None, dtype=object))
    #: slots whose subscriber is not None (none: the subscribers are not gathered)
    subscribed: int = 0
    #: slot -> index in `answer_vars` of a branch whose answer on a one-subject
    #: publication is known without looking (a query's only branch, a star on the
    #: subject: {var: subject}, or the unit solution for ""); -1 for the others
    slot_answer: np.ndarray = field(default_factory=lambda: np.full(64, -1, dtype=np.int32))
    answer_vars: list[str] = field(default_factory=list)
    #: code -> the live slots whose `slot_answer` it is (None: not counted yet; counted
    #: from the arrays when first asked for, after a restore or an old pickle): `one_answer`
    _answer_tally: list | None = None
    tuple_count: int = 0
    #: The branches' FILTER comparisons on one variable, indexed (`rtf.matching.value_tests`)
    values: ValueTests = field(default_factory=ValueTests)
    #: The distinct shape sets of the branches with value tests (`rtf.matching.structures`)
    structures: Structures = field(default_factory=Structures)
    #: freed slots, reused first (an array: no int object per free slot stays alive)
    _free: array = field(default_factory=lambda: array("i"))
    #: the counted branches' shapes, each branch under its pivot (`rtf.matching.pivots`)
    pivots: Pivots = field(default_factory=Pivots)
    #: ids of removed shapes, reused first (so the per-shape arrays follow the shapes alive)
    _free_shapes: array = field(default_factory=lambda: array("i"))
    #: shape id -> the shape (None: a free id), and whether its full text needs a check:
    #: what shapes found by id (`rtf.matching.hits.Hits` chunks) are read through
    shape_at: np.ndarray = field(default_factory=lambda: np.full(64, None, dtype=object))
    shape_check: np.ndarray = field(default_factory=lambda: np.zeros(64, dtype=bool))
    _next_shape: int = 0
    _next_private: int = 0
    #: the slots' query-id ranks, for listing matches by id (`rtf.matching.id_order`)
    id_order: IdOrder = field(default_factory=IdOrder)
    #: every slot's id and subscriber as columns, for the writers (`rtf.matching.id_column`)
    id_column: IdColumn = field(default_factory=IdColumn)
    #: slot -> code of its `ProjectedStar` in `projected` (-1: none)
    slot_projected: np.ndarray = field(default_factory=lambda: np.full(64, -1, dtype=np.int32))
    #: slot -> the same for a branch of a query of several branches (answered per slot)
    slot_projected_part: np.ndarray = field(default_factory=lambda: np.full(64, -1, dtype=np.int32))
    #: slot -> for every branch of a query of several branches one of which has a code in
    #: `slot_projected_part`, its query's first slot (-1: none), so that such queries are
    #: answered a query at a time (`rtf.matching.projected_answers`); grown when written or
    #: read (`part_leads`), so a restored table (which registers these queries again) has it
    slot_part_lead: np.ndarray = field(default_factory=lambda: np.full(64, -1, dtype=np.int32))
    projected: ProjectedStars = field(default_factory=ProjectedStars)
    #: slot -> True for a branch of a version-3 query (its algebra answers it)
    slot_confirm: np.ndarray = field(default_factory=lambda: np.zeros(64, dtype=bool))
    slot_ask: np.ndarray = field(default_factory=lambda: np.zeros(64, dtype=bool))  # an ASK query's
    #: version-3 queries that require no triple, evaluated on every publication: id -> algebra
    always: dict = field(default_factory=dict)
    #: the queries restored from a saved index whose branches are made when first needed
    #: (`rtf.matching.table_snapshot.MappedQueries`), or None
    mapped: object = None

    def add(self, query_id: str, query: Query, record=None) -> tuple[list[TupleShape], list[RegisteredBranch]]:
        """Register a query; return the shapes that are new (to be indexed) and its branches.

        `record` (an engine's registration record, or None) gives the
        ``subscriber`` that the slots answered in bulk hand back (`by_id`).

        Nothing is changed until every tuple is known to be valid, so a query
        that fails leaves the table as it was.
        """
        if query_id in self.queries:
            raise ValueError(f"a query with id {query_id!r} is already registered")
        from rtf.matching.optional import optional_part
        algebra = query.algebra
        optional = optional_part(query) if algebra is None else None
        self.id_order.changed()
        self.id_column.changed()  # (before and after: see `IdColumn.columns`)
        if algebra is not None and not query.branches:
            # Nothing required: a candidate on every publication (no slot, no shape).
            self.queries[query_id] = ()
            self.always[query_id] = algebra
            return [], []
        planned = planned_branches(query)
        new_shapes: list[TupleShape] = []
        branches, plans = [], []
        for b, keys, keep, keep_names, names in planned:
            rb = RegisteredBranch(query_id, b, self._take_slot(), keep=keep, keep_names=keep_names,
                                  projection=query.projection, optional=optional, algebra=algebra)
            if algebra is not None:
                self.slot_confirm[rb.slot] = True
            self.slot_ask[rb.slot] = query.is_ask
            shapes = []
            for key in keys:
                if self.share_shapes:
                    table_key = key
                else:
                    table_key = (key, self._next_private)
                    self._next_private += 1
                shape = self.shapes.get(table_key)
                if shape is None and self.mapped is not None:  # a shape loaded, not keyed yet
                    shape = self.mapped.shape_of_key(self, table_key)
                if shape is None:
                    free = self._free_shapes
                    shape = self.shapes[table_key] = TupleShape(free[-1] if free else self._next_shape, key)
                    shape.key = table_key
                    if free:
                        free.pop()
                    else:
                        self._next_shape += 1
                    self._place(shape)
                    new_shapes.append(shape)
                shapes.append(shape)
            rb.shapes = tuple(shapes)
            tests = self.values.plan(b, shapes, names)  # counted like shapes (rtf.matching.value_tests)
            self.values.add(rb.slot, tests)
            if tests.conjunctions:  # counted by its conjunctions, its shapes by its structure
                self.structures.join(rb.slot, set(shapes))
                self.need[rb.slot] = len(tests.conjunctions)
            else:
                self.pivots.add(rb.slot, list(dict.fromkeys(shape.id for shape in shapes)))
            plans.append(tests)
            self.branches[rb.slot] = rb
            self.slot_id[rb.slot] = query_id
            subscriber = getattr(record, "subscriber", None)
            if subscriber is not None:
                self.slot_subscriber[rb.slot] = subscriber
                self.subscribed += 1
            self.tuple_count += len(shapes)
            # A star answer would skip the OPTIONAL groups: such a branch is joined; a
            # version-3 branch is answered by its algebra.
            rb.star = star_plan(rb) if optional is None and algebra is None else None
            branches.append(rb)
        # A query's only branch, a star about the subject: its answer on a one-subject
        # publication ({var: subject}, or the unit solution "") is known without looking.
        star = branches[0].star if len(branches) == 1 else None
        if star is None and len(branches) == 1 and optional is None and algebra is None:
            # A star whose residual the value index decides exactly: known once complete.
            if exact_star(plans[0], branches[0].branch, query.projection):
                star = star_plan(branches[0], plans[0].variables)
        if star is not None and (star.var is None or star.on_subject):
            code = self.slot_answer[branches[0].slot] = self._answer_code(star.var if star.projected else "")
            self._tally_answer(code, 1)
            rb = branches[0]
            if type(record) is TextRecord and rb.star is not None and not rb.branch.residual:
                rb.branch = record  # (see `_TextBranch`)
                rb.__class__ = _TextBranch
        elif optional is None and algebra is None:
            # A star that projects its objects: answered per ProjectedStar (rtf.matching.star),
            # all the branches of one at once when it is its query's only branch (the
            # branches of a query with several, as `?v < 3 || ?v > 9` makes, one by one).
            codes = self.slot_projected if len(branches) == 1 else self.slot_projected_part
            for rb, plan in zip(branches, plans):
                if rb.star is None:
                    found = projected_star(rb, plan.variables, exact_star(plan, rb.branch, ()))
                    if found is not None:
                        codes[rb.slot] = self.projected.code(found)
            if len(branches) > 1 and (codes[[rb.slot for rb in branches]] >= 0).any():
                self._grow_part_leads()
                self.slot_part_lead[[rb.slot for rb in branches]] = branches[0].slot
        self.queries[query_id] = tuple(branches)
        self.id_column.changed()
        return new_shapes, branches

    def branches_of(self, query_id: str, model: bool = True) -> tuple[RegisteredBranch, ...]:
        """The branches of a registered query (made now from its model if it was loaded
        from a saved index and is still waiting: `rtf.matching.table_snapshot`; without
        `model`, their slots and shapes only, enough to remove them)."""
        found = self.queries[query_id]
        if found and found[0] is PENDING:
            found = self.mapped.materialise(self, query_id) if model else self.mapped.shells(self, query_id)
        return found

    def shapes_of(self, ids) -> list:
        """The shapes of the shape ids `ids` (None for a free id), made now where a load left
        them to make (`rtf.matching.table_snapshot.UnmadeShapes`)."""
        found = self.shape_at[ids].tolist()
        return self.mapped.made(self, ids, found) if self.mapped is not None and None in found else found

    def __getstate__(self) -> dict:  # (a loaded table is pickled with every shape made)
        if self.mapped is not None:
            self.mapped.make_all(self)
        return self.__dict__

    def shape_count(self) -> int:
        return self._next_shape - len(self._free_shapes)

    def _place(self, shape: TupleShape) -> None:
        """Make a new shape known by its id."""
        sid = shape.id
        self.pivots.reserve(sid)
        if sid >= len(self.shape_at):
            self.shape_at = grown(self.shape_at, sid + 1, None)
            self.shape_check = grown(self.shape_check, sid + 1, False)
        self.shape_at[sid] = shape
        self.shape_check[sid] = shape.needs_check

    def _tally_answer(self, code: int, delta: int) -> None:
        tally = self._answer_tally
        if tally is not None:
            tally.extend([0] * (code + 1 - len(tally)))
            tally[code] += delta

    def one_answer(self) -> int:
        """The code in `slot_answer` of every live slot, when they all have the same one
        (a paper-style mix: stars that project their subject), else -1: complete slots
        then need no look-up of their answers."""
        tally = self._answer_tally
        if tally is None:  # (the first publication after a load: the free slots by number,
            # not by comparing every slot's id with None, which took milliseconds at 100K)
            codes = self.slot_answer[:len(self.branches)].copy()
            codes[np.frombuffer(self._free, dtype=np.int32) if self._free else []] = -1
            tally = self._answer_tally = np.bincount(codes[codes >= 0]).tolist()
        live_slots = len(self.branches) - len(self._free)
        if live_slots:
            for code, slots in enumerate(tally):
                if slots == live_slots:
                    return code
        return -1

    def _answer_code(self, var: str) -> int:
        if var not in self.answer_vars:
            self.answer_vars.append(var)
        return self.answer_vars.index(var)

    def by_id(self, slots: np.ndarray, answers: np.ndarray | None = None) -> tuple[np.ndarray, list | None]:
        """(`slots`, `answers` beside them or None) in query-id order, one slot per query."""
        if answers is None:
            return self.id_order.ordered(self.slot_id, slots, len(self.queries)), None
        order = self.id_order.order(self.slot_id, slots, len(self.queries))
        return slots[order], answers[order].tolist()

    def part_leads(self, slots) -> np.ndarray:
        """`slot_part_lead` of `slots` (see it), the array grown to every slot first."""
        self._grow_part_leads()
        return self.slot_part_lead[slots]

    def _grow_part_leads(self) -> None:
        if len(self.slot_part_lead) < len(self.branches):
            self.slot_part_lead = grown(self.slot_part_lead, len(self.branches), -1)

    def ids_of(self, slots: np.ndarray) -> list[str]:
        return self.slot_id[slots].tolist()

    def subscribers_of(self, slots: np.ndarray) -> list:
        return self.slot_subscriber[slots].tolist() if self.subscribed else [None] * len(slots)

    def _take_slot(self) -> int:
        if self._free:
            return self._free.pop()
        slot = len(self.branches)
        self.branches.append(None)
        if slot >= len(self.need):
            for name, empty in (("need", -1), ("slot_id", None), ("slot_subscriber", None),
                               ("slot_answer", -1), ("slot_confirm", False), ("slot_projected", -1),
                               ("slot_projected_part", -1), ("slot_ask", False)):
                setattr(self, name, grown(getattr(self, name), slot + 1, empty))
        return slot

    def remove(self, query_id: str) -> list[TupleShape]:
        """Unregister a query; return the shapes no branch uses any more (to prune)."""
        self.id_column.changed()  # (before and after: see `IdColumn.columns`)
        emptied = []
        self.always.pop(query_id, None)
        branches = self.branches_of(query_id, model=False)
        del self.queries[query_id]
        for rb in branches:
            if not self.structures.leave(rb.slot):  # counted by its shapes
                self.pivots.remove(rb.slot)
            for shape in set(rb.shapes):
                if shape.structures is None and not self.pivots.used(shape.id):
                    if self.mapped is None:
                        del self.shapes[shape.key]
                    else:  # (a shape loaded is keyed only once a registration looked it up)
                        self.shapes.pop(shape.key, None)
                        self.mapped.forget(shape)
                    self._free_shapes.append(shape.id)
                    self.shape_at[shape.id] = None
                    self.shape_check[shape.id] = False
                    emptied.append(shape)
            self.values.remove(rb.slot)
            self.tuple_count -= len(rb.shapes)
            self.need[rb.slot] = -1
            self.branches[rb.slot] = None
            self.slot_id[rb.slot] = None
            if self.slot_subscriber[rb.slot] is not None:
                self.slot_subscriber[rb.slot] = None
                self.subscribed -= 1
            if self.slot_answer[rb.slot] >= 0:
                self._tally_answer(int(self.slot_answer[rb.slot]), -1)
                self.slot_answer[rb.slot] = -1
            if rb.slot < len(self.slot_part_lead):
                self.slot_part_lead[rb.slot] = -1
            for codes in (self.slot_projected, self.slot_projected_part):
                if codes[rb.slot] >= 0:
                    self.projected.release(int(codes[rb.slot]))
                    codes[rb.slot] = -1
            self.slot_confirm[rb.slot] = self.slot_ask[rb.slot] = False
            self._free.append(rb.slot)
        self.shapes = shrunk(self.shapes)
        self.queries = shrunk(self.queries)
        self.id_column.changed()
        return emptied

    def complete_slots(self, satisfied: Hits, memo=None) -> np.ndarray:
        """Slots of the branches all of whose shapes are among `satisfied` (shape ->
        its triples) and all of whose value tests some value satisfies, each once, in no
        particular order. `memo` is the publication's `rtf.matching.shared_predicates.EvaluationMemo`."""
        parts = []
        if self.structures:
            satisfied.settle()  # the value tests and structures read the shapes themselves
        # The branches pivoted on the satisfied shapes, their other shapes looked up: numpy
        # calls over the candidates, no Python step per shape or branch.
        parts.append(self.pivots.complete(satisfied.shape_ids()))
        if self.structures:
            # The branches with value tests: their conjunctions counted, only where a
            # structure is complete, then each candidate's structure looked up.
            done = self.structures.complete(satisfied)
            if done is not None:
                marks, decided = self.values.satisfied_slots(satisfied, memo)
                held = self._counted(marks) if len(marks) else marks
                if len(decided):
                    held = np.concatenate((held, decided)) if len(held) else decided
                if len(held):
                    parts.append(self.structures.holding(held, done))
        parts = [p for p in parts if len(p)]
        if len(parts) < 2:
            return parts[0] if parts else _NO_SLOTS
        return np.concatenate(parts)  # two disjoint sets of slots

    def _counted(self, marks: np.ndarray) -> np.ndarray:
        """The slots whose marks in `marks` reach their `need`, ascending."""
        need = self.need
        if len(marks) * 8 < len(need):
            # Few marks among many slots: count only the slots that were marked.
            slots, counts = np.unique(marks, return_counts=True)
            return slots[counts == need[slots]]
        counts = np.bincount(marks, minlength=len(need))
        return np.flatnonzero(counts == need)

    def compact(self) -> None:
        """After many registrations at once: every branch's pivot chosen again, the rows
        laid out anew (`rtf.matching.pivots.Pivots.repivot`), the value indexes built."""
        self.pivots.repivot()
        self.values.compact()

    def __len__(self) -> int:
        return len(self.queries)
