"""The query table (QT) and tuple shapes shared by the indexed engines.

Registration turns each branch of a query into tuple conjuncts with
globally unique tuple ids; the query table maps a query id to its branches
and each branch to its tuple ids (section 3.1, step 2 of the RTF paper).

A *tuple shape* is what an index stores: the tuple with its variables
renamed by position inside the tuple (``(?x, p, ?y)`` and ``(?a, p, ?b)``
both become ``(?1, p, ?2)``, as G-ToPSS labels variables ``*1, *2``), plus
its full-text constraint. Equal shapes from different queries are stored
once and share every node of the index; the shape keeps the ids of the
tuples that have it. When a publication triple satisfies a shape, it yields
one binding row: the values of ``?1, ?2, ...``.

Marking is proportional to what a publication touches: for each satisfied
shape, each of its tuple ids is marked for its branch, and a branch whose
tuples are all marked is complete. Nothing scans the registered queries.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rtf.model import Branch, FTExpr, Query, TupleConjunct
from rtf.terms import TypePath, Wildcard, is_variable
from rtf.text import is_plain_conjunction, required_words

WILDCARD_CONTENT = "*"


def var_content(k: int) -> str:
    """Node content of the k-th variable of a tuple (1-based): ``?1``, ``?2``..."""
    return f"?{k}"


def is_var_content(content: str) -> bool:
    return content[0] == "?"


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
            contents.append(term.key)
    return (contents[0], contents[1], contents[2], t.fulltext), tuple(names)


class TupleShape:
    """One distinct (S, P, O, F) with variables renamed by position."""

    __slots__ = ("id", "key", "subject", "predicate", "object", "fulltext", "words", "prefixes",
                 "needs_check", "tids", "is_type_path", "row_positions")

    def __init__(self, id: int, key):
        self.id = id
        self.key = key
        self.subject, self.predicate, self.object, self.fulltext = key
        if self.fulltext is not None:
            ws, ps = required_words(self.fulltext)
            self.words = tuple(sorted(ws))
            self.prefixes = tuple(sorted(ps))
            self.needs_check = not is_plain_conjunction(self.fulltext)
        else:
            self.words = self.prefixes = ()
            self.needs_check = False
        self.tids: set[int] = set()
        self.is_type_path = self.predicate == TypePath().key
        # Where a triple's binding row comes from: the first position of ?1, ?2, ...
        firsts = {}
        for i, c in enumerate(self.structure):
            if is_var_content(c):
                firsts.setdefault(c, i)
        self.row_positions = tuple(firsts[c] for c in sorted(firsts, key=lambda c: int(c[1:])))

    @property
    def structure(self) -> tuple[str, str, str]:
        return (self.subject, self.predicate, self.object)

    def __repr__(self) -> str:
        ft = f", FT {self.fulltext}" if self.fulltext is not None else ""
        return f"TupleShape({self.subject}, {self.predicate}, {self.object}{ft})"


@dataclass(eq=False)
class RegisteredBranch:
    """A branch of a registered query, with the tuple ids of its conjuncts."""

    query_id: str
    branch: Branch
    tids: tuple[int, ...] = ()
    shapes: tuple[TupleShape, ...] = ()
    #: Per tuple: the row columns the join needs, and their variable names.
    #: A variable that only one tuple mentions and that is neither projected
    #: nor used by a residual filter is existential: its column is dropped
    #: (and the rows deduplicated) before the join, which keeps star queries
    #: over many-valued properties from multiplying out.
    keep: tuple[tuple[int, ...], ...] = ()
    keep_names: tuple[tuple[str, ...], ...] = ()


def needed_outside(query: Query, branch: Branch) -> set[str]:
    """Variables a branch needs beyond its tuples: projected or filtered on."""
    from rtf.model import operand_variables
    out = set(query.projection)
    for r in branch.residual:
        out |= operand_variables(r)
    return out


def needed_columns(names: list[tuple[str, ...]], outside: set[str]):
    """For each tuple, the positions of its variables that the join needs."""
    count: dict[str, int] = {}
    for ns in names:
        for n in ns:
            count[n] = count.get(n, 0) + 1
    keep, keep_names = [], []
    for ns in names:
        idx = tuple(i for i, n in enumerate(ns) if count[n] > 1 or n in outside)
        keep.append(idx)
        keep_names.append(tuple(ns[i] for i in idx))
    return tuple(keep), tuple(keep_names)


@dataclass
class TupleRef:
    """What a tuple id stands for: a branch and the tuple's position in it."""

    branch: RegisteredBranch
    position: int


@dataclass
class QueryTable:
    """Query id -> branches -> tuple ids, and the shapes they share.

    With ``share_shapes=False`` every tuple gets a shape of its own: an index
    that must not cluster equal tuples of different queries (the iBroker
    baseline) sees each of them.
    """

    share_shapes: bool = True
    queries: dict[str, list[RegisteredBranch]] = field(default_factory=dict)
    tuples: dict[int, TupleRef] = field(default_factory=dict)
    shapes: dict[tuple, TupleShape] = field(default_factory=dict)
    _next_tid: int = 0
    _next_shape: int = 0

    def add(self, query_id: str, query: Query) -> tuple[list[TupleShape], list[RegisteredBranch]]:
        """Register a query; return the shapes that are new (to be indexed) and its branches."""
        new_shapes: list[TupleShape] = []
        branches = []
        for b in query.branches:
            rb = RegisteredBranch(query_id, b)
            tids, names, shapes = [], [], []
            for pos, t in enumerate(b.tuples):
                key, vars_ = shape_of(t)
                tid = self._next_tid
                table_key = key if self.share_shapes else (key, tid)
                shape = self.shapes.get(table_key)
                if shape is None:
                    shape = self.shapes[table_key] = TupleShape(self._next_shape, key)
                    self._next_shape += 1
                    new_shapes.append(shape)
                self._next_tid += 1
                self.tuples[tid] = TupleRef(rb, pos)
                shape.tids.add(tid)
                tids.append(tid)
                names.append(vars_)
                shapes.append(shape)
            rb.tids, rb.shapes = tuple(tids), tuple(shapes)
            rb.keep, rb.keep_names = needed_columns(names, needed_outside(query, b))
            branches.append(rb)
        self.queries[query_id] = branches
        return new_shapes, branches

    def remove(self, query_id: str) -> list[TupleShape]:
        """Unregister a query; return the shapes no tuple uses any more (to prune)."""
        emptied = []
        for rb in self.queries.pop(query_id):
            for tid, shape in zip(rb.tids, rb.shapes):
                del self.tuples[tid]
                shape.tids.discard(tid)
                if not shape.tids:
                    del self.shapes[shape.key if self.share_shapes else (shape.key, tid)]
                    emptied.append(shape)
        return emptied

    def complete_branches(self, satisfied) -> list[RegisteredBranch]:
        """Branches all of whose tuples are among the satisfied shapes' tuple ids."""
        marked: dict[int, set[int]] = {}
        branches: dict[int, RegisteredBranch] = {}
        for shape in satisfied:
            for tid in shape.tids:
                ref = self.tuples[tid]
                key = id(ref.branch)
                marked.setdefault(key, set()).add(ref.position)
                branches[key] = ref.branch
        return [branches[k] for k, pos in marked.items() if len(pos) == len(branches[k].tids)]

    def __len__(self) -> int:
        return len(self.queries)
