"""The filtering algorithm shared by the indexed engines (RTF paper, 3.2).

An index (RTFm's or RTFs's trie forest, or the iBroker inverted index)
stores tuple shapes (see `rtf.matching.query_table`). For a publication it collects,
per shape, the triples that satisfy the shape's structure -- constants,
variables, wildcards -- and contain its required words. Everything after
that is common to all indexes, so that only the indexing differs between
them:

1. phrase, proximity, prefix and ``ftnot`` constraints are checked on the
   triple's text (the side structure checked after traversal);
2. the query table counts, set-at-a-time, which branches have all their
   shapes satisfied (`rtf.matching.query_table.QueryTable.complete_slots`);
3. each complete branch is answered by `rtf.matching.solutions`: star branches by
   intersecting one variable's values, the others by the G-ToPSS join,
   residual filters and projection.
"""

from __future__ import annotations

import sys
from abc import ABC, abstractmethod
from collections.abc import Iterator
from operator import attrgetter
from typing import Any, NamedTuple, Required, TypedDict

import numpy as np

from rtf.query.model import Query
from rtf.matching.confirm import Confirmation
from rtf.matching.hits import Hits
from rtf.matching.join_groups import JoinGroups
from rtf.matching.projected_answers import answer_projected, answer_projected_parts, answered_by_codes
from rtf.matching.query_table import QueryTable, RegisteredBranch, TupleShape
from rtf.matching.shared_predicates import EvaluationMemo
from rtf.matching.solutions import JOIN_ROWS_PER_SOLUTION, UNIT, PublicationSolver  # noqa: F401 (re-exported)
from rtf.query.terms import is_literal
from rtf.query.text import literal_text_index

Triple = tuple[str, str, str]
_NEEDS_CHECK = attrgetter("needs_check")


class EngineStats(TypedDict, total=False):
    """What `rtf.engine.Engine.stats` returns: the engine's settings and counters (always
    there) and its index's sizes and counters (those its algorithm has: `QueryIndex.stats`)."""

    algorithm: Required[str]
    queries: Required[int]
    max_solutions: Required[int]
    truncated_matches: Required[int]  # matches cut at max_solutions
    text_analysis: Required[dict[str, Any] | None]  # its options (rtf.query.analysis), or None
    tuples: int  # tuple conjuncts indexed (rtfs, rtfm, ibroker)
    shapes: int
    value_tests: int  # indexed FILTER value tests
    filter_evaluations: int  # residual predicate evaluations made, and saved by sharing
    filter_evaluations_shared: int
    trie_nodes: int  # rtfs, rtfm
    word_nodes: int
    buckets: int  # ibroker
    entries: int
    chains: int
    index_bytes_estimate: int
    evaluation_errors: int  # naive: filters that failed on a solution (false for it)


class Group(NamedTuple):
    """Queries that share one set of solutions (`QueryIndex.solution_groups`), in query-id
    order: their slots in the query table (`table`), whose ids and subscribers (the
    records' ``subscriber``) the table gives by slot, without reading the records."""

    slots: np.ndarray
    table: QueryTable
    #: one set of solutions for all, or a list of them beside `slots`
    solutions: frozenset | list

    @property
    def ids(self) -> list[str]:
        return self.table.ids_of(self.slots)

    @property
    def subscribers(self) -> list:
        return self.table.subscribers_of(self.slots)

    def per_id(self) -> list:
        """The solutions beside `slots`, one per query."""
        found = self.solutions
        return found if type(found) is list else [found] * len(self.slots)

    def pairs(self):
        """(id, solutions) pairs."""
        found = self.solutions
        return zip(self.ids, found) if type(found) is list else dict.fromkeys(self.ids, found).items()


Solutions = dict[str, set | frozenset]



class QueryIndex(ABC):
    """What an engine algorithm implements: registered queries -> solutions."""

    name: str = ""

    @abstractmethod
    def add(self, query_id: str, query: Query, record=None) -> None:
        """Index a query; on any exception the index must be left unchanged.

        `record` is what the caller keeps for the query (an engine's
        registration record; it has the query's ``id``): an index that
        answers queries in groups (`solution_groups`) may hand it back."""

    @abstractmethod
    def remove(self, query_id: str) -> None:
        """Forget a query."""

    @abstractmethod
    def solutions(self, triples: list[Triple], virtual: list[Triple],
                  limit: int | None = None, now: str | None = None) -> tuple[Solutions, set[str]]:
        """(query id -> distinct projected solutions, ids of the truncated queries).

        Only the queries that match are in the dict. `triples` are the
        publication's triples, `virtual` the taxonomy's ``(s,
        a/rdfs:subClassOf*, class)`` triples, which only patterns with that
        path may match. With a `limit`, a query holds at most `limit`
        solutions and its work is bounded accordingly; a query cut short
        (more solutions than `limit`, or its join bound reached) is in the set.
        `now` is the publication's instant (``NOW()``, an xsd:dateTime key).

        A version-3 query's answer is what `rtf.algebra.results.run` gives: a
        frozenset of rows, the `OrderedRows` of an ORDER BY query, or the `Triples`
        of a CONSTRUCT.
        """

    def solution_groups(self, triples: list[Triple], virtual: list[Triple], limit: int | None = None,
                        now: str | None = None) -> tuple[list[Group], Solutions, set[str]]:
        """`solutions` as (groups, rest, truncated): each group a `Group`, queries
        that share one set of solutions, their ids and subscribers in query-id
        order (no query in two groups or in `rest`); `rest` the other queries'
        solutions by id. An index that answers many queries alike (star queries
        about the publication's subject) hands them over without a dict entry
        each; this default puts everything in `rest`."""
        found, truncated = self.solutions(triples, virtual, limit, now)
        return [], found, truncated

    def compact(self) -> None:
        """After many changes at once (`Engine.register_many`): lay out what matching
        reads compactly now rather than piecemeal later (default: nothing)."""

    def stats(self) -> dict:
        return {}


class ShapeIndex(ABC):
    """An index of tuple shapes: the part that differs between RTFm, RTFs and iBroker."""

    @abstractmethod
    def add(self, shape: TupleShape) -> None: ...

    @abstractmethod
    def remove(self, shape: TupleShape) -> None: ...

    def candidates(self, triples: list[Triple], virtual: list[Triple]) -> Iterator[tuple[TupleShape, Triple]]:
        """(shape, triple) pairs where the triple satisfies the shape's structure
        and holds its required words; full-text checks beyond that come later.

        An index implements this (`collect` then gathers it) or overrides `collect`.
        """
        raise NotImplementedError(f"{type(self).__name__} overrides collect, not candidates")

    def collect(self, triples: list[Triple], virtual: list[Triple], hits: Hits) -> None:
        """Add to `hits` every shape's satisfying triples (each pair once): shapes found
        one by one as dict entries, shapes found set-at-a-time by id (`Hits.add_chunk`).

        The default gathers `candidates`; an index that can produce whole
        sets of shapes at once overrides it.
        """
        for shape, triple in self.candidates(triples, virtual):
            found = hits.get(shape)
            if found is None:
                hits[shape] = [triple]
            else:
                found.append(triple)

    def add_branch(self, branch: RegisteredBranch) -> None:
        """Called after a query's shapes are added, once per branch (default: nothing)."""

    def remove_branch(self, branch: RegisteredBranch) -> None:
        """Called before a query's shapes are removed, once per branch (default: nothing)."""

    def stats(self) -> dict:
        return {}


def fulltext_holds(shape: TupleShape, obj: str, texts: dict | None = None) -> bool:
    """The shape's whole full-text constraint on the triple's object (`texts`: the
    publication's literals' word indexes so far, filled as they are made)."""
    if not is_literal(obj):
        return False
    check = shape.checker()
    if texts is None:
        return check(literal_text_index(obj))
    text = texts.get(obj)
    if text is None:
        text = texts[obj] = literal_text_index(obj)
    return check(text)


def only_subject(triples: list[Triple]) -> str | None:
    """The publication's subject when all its triples share one, else None."""
    if not triples:
        return None
    s = triples[0][0]
    for t in triples:
        if t[0] != s:
            return None
    return s


class IndexedQueries(QueryIndex):
    """A `QueryIndex` made of a query table and a shape index."""

    def __init__(self, index: ShapeIndex, name: str, share_shapes: bool = True):
        self.index = index
        self.name = name
        self.table = QueryTable(share_shapes=share_shapes)
        self._join_groups: JoinGroups | None = None
        #: Residual predicate evaluations made, and those saved by sharing one answer (seed 002).
        self.filter_evaluations = 0
        self.filter_evaluations_shared = 0
        #: Version-3 queries whose evaluation failed on a publication (they did not match).
        self.evaluation_errors = 0

    @property
    def join_groups(self) -> JoinGroups:
        """The joined branches by answer key (made on first use: an index pickled by an
        older rtf has none)."""
        groups = self.__dict__.get("_join_groups")
        if groups is None:
            groups = self._join_groups = JoinGroups()
        return groups

    def add(self, query_id: str, query: Query, record=None) -> None:
        new_shapes, branches = self.table.add(query_id, query, record)
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

    def remove(self, query_id: str) -> None:
        for rb in self.table.branches_of(query_id, model=False):  # (their slots are what goes)
            self.index.remove_branch(rb)
            self.join_groups.release(rb)
        for shape in self.table.remove(query_id):
            self.index.remove(shape)

    def satisfied(self, triples: list[Triple], virtual: list[Triple]) -> Hits:
        """Shape -> the triples that satisfy it, full text included (`Hits`: some shapes
        may be held by id, in chunks)."""
        table = self.table
        hits = Hits(table)
        self.index.collect(triples, virtual, hits)
        checked: dict[tuple[int, str], bool] = {}
        texts: dict = {}

        def holds(shape: TupleShape, literal: str) -> bool:  # once per (shape, literal)
            key = (shape.id, literal)
            ok = checked.get(key)
            if ok is None:
                ok = checked[key] = fulltext_holds(shape, literal, texts)
            return ok

        failed = []
        for shape in list(filter(_NEEDS_CHECK, hits)):  # no Python step for the others
            kept = [t for t in hits[shape] if holds(shape, t[2])]
            if kept:
                hits[shape] = kept
            else:
                failed.append(shape)
        for shape in failed:
            del hits[shape]
        chunks = hits.chunks
        for k, (ids, t) in enumerate(chunks):
            flags = table.shape_check[ids]
            flagged = ids[flags]  # no Python step for the others
            if not len(flagged):
                continue
            wrong = [n for n, shape in enumerate(table.shapes_of(flagged)) if not holds(shape, t[2])]
            if wrong:
                chunks[k] = (np.delete(ids, np.flatnonzero(flags)[wrong]), t)
        return hits

    def solutions(self, triples: list[Triple], virtual: list[Triple],
                  limit: int | None = None, now: str | None = None) -> tuple[Solutions, set[str]]:
        groups, out, truncated = self.solution_groups(triples, virtual, limit, now)
        for group in groups:
            out.update(group.pairs())
        return out, truncated

    def solution_groups(self, triples: list[Triple], virtual: list[Triple], limit: int | None = None,
                        now: str | None = None) -> tuple[list[Group], Solutions, set[str]]:
        if limit is None:
            limit = sys.maxsize
        hits = self.satisfied(triples, virtual)
        always = self.table.always
        if not hits:
            if not always:
                return [], {}, set()
            out: Solutions = {}
            truncated: set[str] = set()
            self._confirm(always.items(), triples, virtual, now, limit, out, truncated)
            return [], out, truncated
        subject = only_subject(triples)
        memo = EvaluationMemo()  # the publication's shared predicate answers (seed 002)
        solver = PublicationSolver(hits, subject, triples, virtual, memo)
        table = self.table
        slots = table.complete_slots(hits, memo)
        parts: list[tuple[np.ndarray, object]] = []  # (slots, their answers): one group
        if subject is not None and len(slots):
            # Most complete branches are a query's only branch, a star about the one
            # subject: their answer ({var: subject}, or the unit solution) is known
            # without looking, and is given to all of them at once; so is the answer of
            # the stars that project their objects, one per ProjectedStar. All of them
            # are put in query-id order at once.
            code = table.one_answer()
            codes = table.slot_answer[slots] if code < 0 else None
            if code < 0 and codes.min() == codes.max() >= 0:
                code = int(codes[0])
            if code >= 0:  # all known, one answer (a paper-style mix): no mask
                var = table.answer_vars[code]
                parts.append((slots, solver.subject_solutions(var) if var else UNIT))
                slots = slots[:0]
            elif codes.max() >= 0:
                known = codes >= 0
                known_slots, known_codes = slots[known], codes[known]
                present = np.flatnonzero(np.bincount(known_codes))  # a few codes: no sort
                if len(present) == 1:
                    var = table.answer_vars[int(present[0])]
                    parts.append((known_slots, solver.subject_solutions(var) if var else UNIT))
                else:
                    answers = np.empty(int(present[-1]) + 1, dtype=object)
                    for code in present.tolist():
                        var = table.answer_vars[code]
                        answers[code] = solver.subject_solutions(var) if var else UNIT
                    parts.append((known_slots, answers[known_codes]))
                slots = slots[~known]
        out: Solutions = {}
        truncated: set[str] = set()
        if subject is not None and len(slots) and table.projected.by_code:
            slots = answer_projected(self.table, slots, solver, hits, limit, parts, self.join_groups)
            if len(slots):
                slots = answer_projected_parts(self.table, slots, solver, hits, limit, out, truncated,
                                               parts)
        if always or (len(slots) and table.slot_confirm[slots].any()):
            # Version-3 candidates: each query's algebra, evaluated once (rtf.matching.confirm).
            confirm = table.slot_confirm[slots]
            candidates = dict(always)
            for slot in np.sort(slots[confirm]).tolist():
                rb = table.branches[slot]
                candidates.setdefault(rb.query_id, rb.algebra)
            self._confirm(candidates.items(), triples, virtual, now, limit, out, truncated)
            slots = slots[~confirm]
        if len(slots):
            hits.settle()  # the other branches read their shapes' triples
            slots = self._joined(slots, solver, limit, parts)
        groups = [self._group(parts)] if parts else []
        branches = table.branches
        solve = solver.solve
        for slot in np.sort(slots).tolist():  # (in slot order: the same answers run to run)
            rb = branches[slot]
            found, cut = solve(rb, limit)
            if not found:
                continue
            qid = rb.query_id
            before = out.get(qid)
            if before is not None:
                found = before | found
            out[qid] = found if type(found) is frozenset else frozenset(found)
            if cut or len(found) > limit:
                truncated.add(qid)
        for qid in truncated:
            out[qid] = frozenset(list(out[qid])[:limit])
        self.filter_evaluations += solver.memo.evaluations
        self.filter_evaluations_shared += solver.memo.shared
        return groups, out, truncated

    def _joined(self, slots, solver: PublicationSolver, limit: int, parts: list) -> np.ndarray:
        """The joined branches of one answer key (`rtf.matching.join_groups`) answered once
        per key, into `parts`; the slots left to answer one by one (those of queries of
        several branches, stars, and answers `limit` cut: answered again, from the cache)."""
        groups = self.join_groups
        codes = groups.codes(slots, self.table)
        return answered_by_codes(slots, codes, lambda present: groups.answers(present, solver, limit), parts)

    def _group(self, parts: list) -> Group:
        """One `Group` of every answered slot, in query-id order: its solutions one set for
        all when the parts share one, else a list beside the ids."""
        if len(parts) == 1 and not isinstance(parts[0][1], np.ndarray):
            slots, found = parts[0]
            return Group(self.table.by_id(slots)[0], self.table, found)
        slots = np.concatenate([p[0] for p in parts])
        answers = np.empty(len(slots), dtype=object)
        at = 0
        for part_slots, found in parts:
            if isinstance(found, np.ndarray):
                answers[at:at + len(part_slots)] = found
            else:
                answers[at:at + len(part_slots)] = [found] * len(part_slots)
            at += len(part_slots)
        ordered, solutions = self.table.by_id(slots, answers)
        return Group(ordered, self.table, solutions)

    def _confirm(self, candidates, triples, virtual, now, limit, out, truncated) -> None:
        confirmation = Confirmation(triples, virtual, now)
        confirmation.answers(candidates, limit, out, truncated)
        self.evaluation_errors += confirmation.errors

    def compact(self) -> None:
        self.table.compact()

    def stats(self) -> dict:
        s = {"queries": len(self.table), "tuples": self.table.tuple_count,
             "shapes": self.table.shape_count(), "value_tests": len(self.table.values),
             "filter_evaluations": self.filter_evaluations,
             "filter_evaluations_shared": self.filter_evaluations_shared}
        s.update(self.index.stats())
        return s
