"""The filtering algorithm shared by the indexed engines (RTF paper, 3.2).

An index (RTFm's or RTFs's trie forest, or the iBroker inverted index)
stores tuple shapes (see `rtf.query_table`). For a publication it yields
every (shape, triple) pair where the triple satisfies the shape's
structure -- constants, variables, wildcards -- and contains the shape's
required words. Everything after that is common to all indexes, so that
only the indexing differs between them:

1. phrase, proximity, prefix and ``ftnot`` constraints are checked on the
   triple's text (the side structure checked after traversal);
2. each satisfied shape collects binding rows, and its tuple ids are marked
   in the query table; branches whose tuples are all marked are complete;
3. each complete branch joins its binding tables (G-ToPSS), keeps the
   solutions that pass its residual filters, and projects them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator

from rtf.expressions import passes
from rtf.join import join_rows
from rtf.model import Query
from rtf.query_table import QueryTable, RegisteredBranch, TupleShape
from rtf.terms import is_literal, lexical_form
from rtf.text import text_index

Triple = tuple[str, str, str]
Solutions = dict[str, set[tuple[tuple[str, str], ...]]]

#: A query's join holds at most this many rows per solution it may report
#: (``limit * JOIN_ROWS_PER_SOLUTION``): the work bound of `QueryIndex.solutions`.
JOIN_ROWS_PER_SOLUTION = 10


class QueryIndex(ABC):
    """What an engine algorithm implements: registered queries -> solutions."""

    name: str = ""

    @abstractmethod
    def add(self, query_id: str, query: Query) -> None:
        """Index a query; on any exception the index must be left unchanged."""

    @abstractmethod
    def remove(self, query_id: str) -> None:
        """Forget a query."""

    @abstractmethod
    def solutions(self, triples: list[Triple], virtual: list[Triple],
                  limit: int | None = None) -> tuple[Solutions, set[str]]:
        """(query id -> distinct projected solutions, ids of the truncated queries).

        Only the queries that match are in the dict. `triples` are the
        publication's triples, `virtual` the taxonomy's ``(s,
        a/rdfs:subClassOf*, class)`` triples, which only patterns with that
        path may match. With a `limit`, a query holds at most `limit`
        solutions and its work is bounded accordingly; a query cut short
        (more solutions than `limit`, or its join bound reached) is in the set.
        """

    def stats(self) -> dict:
        return {}


class ShapeIndex(ABC):
    """An index of tuple shapes: the part that differs between RTFm, RTFs and iBroker."""

    @abstractmethod
    def add(self, shape: TupleShape) -> None: ...

    @abstractmethod
    def remove(self, shape: TupleShape) -> None: ...

    @abstractmethod
    def candidates(self, triples: list[Triple], virtual: list[Triple]) -> Iterator[tuple[TupleShape, Triple]]:
        """(shape, triple) pairs where the triple satisfies the shape's structure
        and holds its required words; full-text checks beyond that come later."""

    def add_branch(self, branch: RegisteredBranch) -> None:
        """Called after a query's shapes are added, once per branch (default: nothing)."""

    def remove_branch(self, branch: RegisteredBranch) -> None:
        """Called before a query's shapes are removed, once per branch (default: nothing)."""

    def stats(self) -> dict:
        return {}


def fulltext_holds(shape: TupleShape, obj: str) -> bool:
    """The shape's whole full-text constraint on the triple's object."""
    return is_literal(obj) and text_index(lexical_form(obj)).matches(shape.fulltext)


class IndexedQueries(QueryIndex):
    """A `QueryIndex` made of a query table and a shape index."""

    def __init__(self, index: ShapeIndex, name: str, share_shapes: bool = True):
        self.index = index
        self.name = name
        self.table = QueryTable(share_shapes=share_shapes)
        self.queries: dict[str, Query] = {}

    def add(self, query_id: str, query: Query) -> None:
        new_shapes, branches = self.table.add(query_id, query)
        done, linked = [], []
        try:
            for shape in new_shapes:
                self.index.add(shape)
                done.append(shape)
            for rb in branches:
                self.index.add_branch(rb)
                linked.append(rb)
        except BaseException:
            for rb in linked:
                self.index.remove_branch(rb)
            for shape in done:
                self.index.remove(shape)
            self.table.remove(query_id)
            raise
        self.queries[query_id] = query

    def remove(self, query_id: str) -> None:
        for rb in self.table.queries[query_id]:
            self.index.remove_branch(rb)
        for shape in self.table.remove(query_id):
            self.index.remove(shape)
        del self.queries[query_id]

    def solutions(self, triples: list[Triple], virtual: list[Triple],
                  limit: int | None = None) -> tuple[Solutions, set[str]]:
        rows: dict[TupleShape, set[tuple]] = {}
        checked: dict[tuple[int, str], bool] = {}
        for shape, triple in self.index.candidates(triples, virtual):
            if shape.needs_check:
                key = (shape.id, triple[2])
                ok = checked.get(key)
                if ok is None:
                    ok = checked[key] = fulltext_holds(shape, triple[2])
                if not ok:
                    continue
            row = tuple(triple[i] for i in shape.row_positions)
            bucket = rows.get(shape)
            if bucket is None:
                rows[shape] = {row}
            else:
                bucket.add(row)
        out: Solutions = {}
        truncated: set[str] = set()
        join_limit = None if limit is None else limit * JOIN_ROWS_PER_SOLUTION
        reduced: dict[tuple, set[tuple]] = {}  # (shape, kept columns) -> rows, per publication
        for rb in self.table.complete_branches(rows):
            tables = []
            for keep, names, shape in zip(rb.keep, rb.keep_names, rb.shapes):
                if len(keep) == len(shape.row_positions):
                    tables.append((names, rows[shape]))
                    continue
                table = reduced.get((shape, keep))
                if table is None:
                    table = reduced[(shape, keep)] = {tuple(r[i] for i in keep) for r in rows[shape]}
                tables.append((names, table))
            cols, joined, cut = join_rows(tables, join_limit)
            if cut:
                truncated.add(rb.query_id)
            if not joined:
                continue
            residual = rb.branch.residual
            projection = self.queries[rb.query_id].projection
            where = [(v, cols.index(v)) for v in projection if v in cols]
            found = out.setdefault(rb.query_id, set())
            for row in joined:
                if residual and not all(passes(r, dict(zip(cols, row))) for r in residual):
                    continue
                found.add(tuple((v, row[i]) for v, i in where))
                if limit is not None and len(found) > limit:
                    found.pop()  # one too many: the query has more than `limit`
                    truncated.add(rb.query_id)
                    break
            if not found:
                del out[rb.query_id]
        return out, truncated

    def stats(self) -> dict:
        s = {"queries": len(self.queries), "tuples": len(self.table.tuples),
             "shapes": len(self.table.shapes)}
        s.update(self.index.stats())
        return s


