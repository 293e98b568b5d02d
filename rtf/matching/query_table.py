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

import sys
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
from rtf.matching.star import ProjectedStars, StarPlan, projected_star, star_plan
from rtf.matching.structures import SlotList, Structures, grown, shrunk
from rtf.matching.value_tests import ValueTests, exact_star
from rtf.query.model import Branch, FTExpr, Query, TupleConjunct

if TYPE_CHECKING:  # rtf.matching.optional is imported where used: it imports the evaluator
    from rtf.matching.optional import OptionalPart
from rtf.query.terms import TypePath, Wildcard, is_variable
from rtf.query.text import compile_ft, index_alternatives, is_plain_disjunction, required_words

WILDCARD_CONTENT = "*"
_NO_SLOTS = np.zeros(0, dtype=np.int32)


_VAR_CONTENTS = tuple(f"?{k}" for k in range(4))  # one string each, for every shape


def var_content(k: int) -> str:
    """Node content of the k-th variable of a tuple (1-based): ``?1``, ``?2``..."""
    return _VAR_CONTENTS[k] if k < 4 else f"?{k}"


def is_var_content(content: str) -> bool:
    return content[0] == "?"


def _var_number(content: str) -> int:
    return int(content[1:])


_TYPE_PATH = TypePath().key


def shape_of(t: TupleConjunct) -> tuple[tuple[str, str, str, FTExpr | None], tuple[str, ...]]:
    """(shape key, variable names by position) of a tuple conjunct."""
    names: list[str] = []
    contents = []
    for term in t.terms:
        if is_variable(term):
            if term.name not in names:
                names.append(term.name)
            contents.append(var_content(names.index(term.name) + 1))
        elif isinstance(term, Wildcard):
            contents.append(WILDCARD_CONTENT)
        else:  # IRI, Literal, TypePath
            contents.append(sys.intern(term.key))  # one copy per IRI across all shapes
    return (contents[0], contents[1], contents[2], t.fulltext), tuple(names)


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


class TupleShape:
    """One distinct (S, P, O, F) with variables renamed by position.

    The branches that count the shape are kept by its `id` in the query
    table (`QueryTable.pivots`); a branch with value tests is counted by them
    instead, and its shapes through its structure (`structures`: the ids of
    the structures holding the shape, a `SlotList`, None when none; see
    `rtf.matching.structures`).
    `alternatives` are the word keys of its full-text constraint: sorted
    (words, prefixes) tuples, one per ``ftor`` alternative, of which a
    literal must hold all of at least one (empty when nothing is certain:
    the shape is then verified on every literal reaching its structure).
    `needs_check` says the expression says more than its keys; `checker()` then
    decides it on a text (`rtf.query.text.compile_ft`, compiled at the first
    check). Most shapes have one alternative of words only: those are kept as
    the words alone (`_keys`), two tuples fewer a shape.
    """

    __slots__ = ("id", "key", "subject", "predicate", "object", "fulltext", "_keys",
                 "needs_check", "check", "structures", "is_type_path", "row_positions")

    def __init__(self, id: int, key):
        self.id = id
        self.key = key
        self.subject, self.predicate, self.object, self.fulltext = key
        if self.fulltext is not None:
            alternatives, self.needs_check = index_keys(self.fulltext)
            one = len(alternatives) == 1 and not alternatives[0][1]
            self._keys = alternatives[0][0] if one else alternatives
        else:
            self._keys = ()
            self.needs_check = False
        #: the whole full-text constraint as a function of a TextIndex: made when first
        #: needed (`checker`), as most shapes are never checked
        self.check = None
        self.structures: SlotList | None = None
        self.is_type_path = self.predicate == _TYPE_PATH
        # Where a triple's binding row comes from: the first position of ?1, ?2, ...
        firsts: dict[str, int] = {}
        for i, c in enumerate(self.structure):
            if is_var_content(c) and c not in firsts:
                firsts[c] = i
        self.row_positions = _shared(tuple(firsts[c] for c in sorted(firsts, key=_var_number)))

    def checker(self):
        """The whole full-text constraint as a function of a `TextIndex` (made once)."""
        check = self.check
        if check is None:
            check = self.check = compile_ft(self.fulltext)
        return check

    def __getstate__(self):
        # `check` is a closure, which cannot be pickled (Spark ships engines): made again.
        return None, {name: getattr(self, name) for name in self.__slots__ if name != "check"}

    def __setstate__(self, state) -> None:
        for name, value in state[1].items():
            setattr(self, "_keys" if name == "alternatives" else name, value)  # an older rtf's name
        self.check = None

    @property
    def structure(self) -> tuple[str, str, str]:
        return (self.subject, self.predicate, self.object)

    @property
    def alternatives(self) -> tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]:
        """The (words, prefixes) keys, one per ``ftor`` alternative (see the class)."""
        keys = self._keys
        return ((keys, ()),) if keys and type(keys[0]) is str else keys

    @property
    def has_words(self) -> bool:
        """The shape has word keys (an index finds it by them)."""
        return bool(self._keys)

    @property
    def words(self) -> tuple[str, ...]:
        """The words of the shape's only key (empty unless it has exactly one)."""
        return self.alternatives[0][0] if len(self.alternatives) == 1 else ()

    @property
    def prefixes(self) -> tuple[str, ...]:
        """The prefixes of the shape's only key (empty unless it has exactly one)."""
        return self.alternatives[0][1] if len(self.alternatives) == 1 else ()

    def __repr__(self) -> str:
        ft = f", FT {self.fulltext}" if self.fulltext is not None else ""
        return f"TupleShape({self.subject}, {self.predicate}, {self.object}{ft})"


def index_keys(fulltext: FTExpr) -> tuple[tuple[tuple[tuple[str, ...], tuple[str, ...]], ...], bool]:
    """(alternatives, needs_check) of a full-text constraint (see `TupleShape`).

    Every ``ftor`` alternative is a key (`rtf.query.text.index_alternatives`: words,
    prefixes, and the bigrams of phrases, looked up in `TextIndex.keys`); when
    there are too many, or one requires no word, the shape keys on the
    words certain in all of them (`required_words`), maybe none. The keys
    alone decide the expression only when it is whole words under ftand
    and ftor and each alternative is a key.
    """
    alternatives = index_alternatives(fulltext)
    if alternatives is None:
        ws, ps = required_words(fulltext)
        keys = ((tuple(sorted(ws)), tuple(sorted(ps))),) if ws or ps else ()
        return keys, True
    keys = tuple((tuple(sorted(ws)), tuple(sorted(ps))) for ws, ps in alternatives)
    return keys, not is_plain_disjunction(fulltext)


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


_SMALL_TUPLES: dict[tuple, tuple] = {}


def _shared(t: tuple) -> tuple:
    """One copy of each small tuple (``(0,)``, ``("s",)``...) for all branches: 100K
    queries repeat a handful of them."""
    return _SMALL_TUPLES.setdefault(t, t)


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
    projected: ProjectedStars = field(default_factory=ProjectedStars)
    #: slot -> True for a branch of a version-3 query (its algebra answers it)
    slot_confirm: np.ndarray = field(default_factory=lambda: np.zeros(64, dtype=bool))
    slot_ask: np.ndarray = field(default_factory=lambda: np.zeros(64, dtype=bool))  # an ASK query's
    #: version-3 queries that require no triple, evaluated on every publication: id -> algebra
    always: dict = field(default_factory=dict)

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
        planned = []
        for b in query.branches:
            per_tuple = [shape_of_shared(t) for t in b.tuples]
            names = [vars_ for _, vars_ in per_tuple]
            keep, keep_names = needed_columns_shared(names, needed_outside(query, b))
            planned.append((b, [key for key, _ in per_tuple], keep, keep_names, names))
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
            self.slot_answer[branches[0].slot] = self._answer_code(star.var if star.projected else "")
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
        self.queries[query_id] = tuple(branches)
        self.id_column.changed()
        return new_shapes, branches

    def _place(self, shape: TupleShape) -> None:
        """Make a new shape known by its id."""
        sid = shape.id
        self.pivots.reserve(sid)
        if sid >= len(self.shape_at):
            self.shape_at = grown(self.shape_at, sid + 1, None)
            self.shape_check = grown(self.shape_check, sid + 1, False)
        self.shape_at[sid] = shape
        self.shape_check[sid] = shape.needs_check

    def _answer_code(self, var: str) -> int:
        if var not in self.answer_vars:
            self.answer_vars.append(var)
        return self.answer_vars.index(var)

    def by_id(self, slots: np.ndarray, answers: np.ndarray | None = None) -> tuple[np.ndarray, list | None]:
        """(`slots`, `answers` beside them or None) in query-id order, one slot per query."""
        order = self.id_order.order(self.slot_id, slots, len(self.queries))
        return slots[order], (answers[order].tolist() if answers is not None else None)

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
        for rb in self.queries.pop(query_id):
            if not self.structures.leave(rb.slot):  # counted by its shapes
                self.pivots.remove(rb.slot)
            for shape in set(rb.shapes):
                if shape.structures is None and not self.pivots.used(shape.id):
                    del self.shapes[shape.key]
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
            self.slot_answer[rb.slot] = -1
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
                conjunctions = self.values.satisfied_slots(satisfied, memo)
                if conjunctions:
                    parts.append(self.structures.holding(self._counted(conjunctions[0]), done))
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
