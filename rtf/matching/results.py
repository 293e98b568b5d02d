"""What `Engine.match` returns: `Match` records, and `Matches`, one publication's.

A publication can match thousands of queries. `Matches` holds them as
parallel lists -- the query ids in order, each query's solutions, each
query's registration record -- and makes a `Match` only when one is looked
at, so a writer that reads the lists (`rtf.io.output.match_lines`) renders
a publication without one Python object per match. Read as a sequence it
is the list of `Match` records, by query id, it always was.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from itertools import repeat
from operator import attrgetter, itemgetter
from typing import TYPE_CHECKING

import numpy as np

from rtf.algebra.results import OrderedRows, Triples

if TYPE_CHECKING:  # (for the type checker only: the engine is a later stage)
    from rtf.engine import Engine, RegisteredQuery
    from rtf.io.publication import Publication
    from rtf.matching.explain import Explanation
    from rtf.matching.id_column import IdColumns
    from rtf.matching.query_table import QueryTable
    from rtf.query.model import Query


class Match(tuple):
    """A query that a publication satisfies, and with which bindings.

    `solutions` is the set of distinct projected solutions, each a tuple
    of (variable, N-Triples term) pairs in projection order; `bindings`
    shows them as dicts in a stable order. An ASK query has no bindings.

    `truncated` is True when the engine stopped before it had every
    solution: the query had more than the engine's `max_solutions`, or its
    join reached its work bound. `solutions` then holds at most
    `max_solutions` of them (all genuine; which ones is unspecified).

    An immutable record, compared and hashed by its five fields. It is a
    tuple underneath so that the thousands of matches of one publication
    are built in C (``tuple.__new__``), without a Python call per match;
    ``query_id, subscriber, bindings = match`` unpacks the three that a
    user reads.

    >>> m = Match("q1", "alice", frozenset({(("s", "<http://ex/a>"),)}))
    >>> m.query_id, m.bindings, m.truncated
    ('q1', [{'s': '<http://ex/a>'}], False)
    >>> qid, subscriber, bindings = m
    """

    __slots__ = ()

    def __new__(cls, query_id: str, subscriber: str | None,
                solutions: frozenset[tuple[tuple[str, str], ...]], is_ask: bool = False,
                truncated: bool = False):
        return tuple.__new__(cls, (query_id, subscriber, solutions, is_ask, truncated))

    query_id = property(itemgetter(0), doc="The id of the query that matched.")
    subscriber = property(itemgetter(1), doc="The query's subscriber (None if it has none).")
    solutions = property(itemgetter(2), doc="The distinct projected solutions (a frozenset).")
    is_ask = property(itemgetter(3), doc="An ASK query: it has no bindings.")
    truncated = property(itemgetter(4), doc="The solutions were cut at the engine's cap.")

    def __repr__(self) -> str:
        return (f"Match(query_id={self[0]!r}, subscriber={self[1]!r}, "
                f"solutions={set(self[2])!r}, is_ask={self[3]}, truncated={self[4]})")

    def __reduce__(self):
        return (Match, (self[0], self[1], self[2], self[3], self[4]))

    @property
    def bindings(self) -> list[dict[str, str]]:
        """The solutions as {variable: N-Triples term} dicts: in the query's order for an
        ORDER BY query (version 3), else sorted; [] for ASK and CONSTRUCT."""
        solutions = self[2]
        if self[3] or isinstance(solutions, Triples):
            return []
        if isinstance(solutions, OrderedRows):
            return [dict(s) for s in solutions]
        return [dict(s) for s in sorted(solutions)]

    @property
    def triples(self) -> list[tuple[str, str, str]] | None:
        """A CONSTRUCT match's triples, (subject, predicate, object) N-Triples terms, sorted;
        None for a SELECT or ASK match."""
        solutions = self[2]
        return sorted(solutions) if isinstance(solutions, Triples) else None

    def explain(self, publication: Publication, source: Engine | RegisteredQuery | Query) -> list[Explanation]:
        """Why this match: per solution, the branch that matched and each
        satisfied ``ftcontains`` with its variable, literal, character spans
        and words (see `rtf.matching.explain`).

        Computed now, from `publication` (the one matched) and `source` (the
        `Engine` that matched it, a `RegisteredQuery` or a `Query`): matching
        keeps nothing for it, so it costs nothing unless asked for.
        """
        from rtf.matching.explain import explain_match
        return explain_match(self, publication, source)

    def __iter__(self):
        """``query_id, subscriber, bindings = match``."""
        return iter((self[0], self[1], self.bindings))


_new_match = tuple.__new__
_subscriber = attrgetter("subscriber")
_is_ask = attrgetter("is_ask")


class Matches(Sequence[Match]):
    """One publication's matches: a read-only sequence of `Match`, by query id.

    `query_ids` (increasing), `solutions` and `registered` (each query's
    registration record: it has ``subscriber`` and ``is_ask``) are parallel
    lists; `truncated` holds the ids of the queries cut at the solution cap.
    A `Match` is made only when one is read; equal to a list of the same
    matches.

    The engine's lists are made when first read. A list may be given as the
    query table's `slots` of the matches, in query-id order, with the `table`
    (`rtf.matching.query_table.QueryTable`): `query_ids` and `subscribers` are
    then read from the table by slot the first time they are read, and a
    writer that has no use for Python strings takes them from the table's
    columns of them instead (`id_columns`: reading each id string after
    matching was a cache miss per match, the first cost of the output at
    100,000 queries). The records may be left to `records_of` (a function of
    the ids), called the first time `registered` is read: at a million
    queries, gathering them was a fifth of a publication's time. The engine
    makes every such list take its ids, subscribers and records before its
    query set changes (`settle`), so the matches stay what they were if a
    query is unregistered afterwards, and its slot given to another.
    """

    __slots__ = ("_query_ids", "solutions", "_registered", "truncated", "_maybe_ask", "_items",
                 "_subscribers", "_records_of", "slots", "_table", "__weakref__")

    def __init__(self, query_ids: list[str] | None, solutions: list, registered: list | None,
                 truncated: frozenset[str] | set[str] = frozenset(), maybe_ask: bool = True,
                 subscribers: list | None = None, records_of: Callable[[list[str]], list] | None = None,
                 slots: np.ndarray | None = None, table: QueryTable | None = None):
        if registered is None and records_of is None:
            raise TypeError("Matches needs its records or a records_of function")
        if query_ids is None and (slots is None or table is None):
            raise TypeError("Matches needs its query ids or their slots and table")
        self._query_ids = query_ids
        self.solutions = solutions
        self._registered = registered
        self._records_of = records_of
        self.truncated = truncated
        #: False when the engine holds no ASK query at all (then none is looked for)
        self._maybe_ask = maybe_ask
        self._items: list[Match] | None = None
        #: the records' subscribers when the caller has them already (else read when asked)
        self._subscribers = subscribers
        #: the matches' slots in `table`, in query-id order (None: made of lists)
        self.slots = slots
        self._table = table if query_ids is None else None  # (None once settled)

    @property
    def query_ids(self) -> list[str]:
        """The matching queries' ids, increasing."""
        ids = self._query_ids
        if ids is None:
            table = self._table
            ids = self._query_ids = table.ids_of(self.slots) if table is not None else self._query_ids
        return ids

    def id_columns(self) -> IdColumns | None:
        """The table's columns of every slot's id and subscriber (`rtf.matching.id_column`),
        of which `slots` are these matches', or None: read `query_ids` and `subscribers`."""
        table = self._table
        if table is None:
            return None
        columns = table.id_column.columns(table, len(self.slots))
        # (settled meanwhile: its slots may no longer be its queries' in those columns)
        return columns if self._table is not None else None

    @property
    def registered(self) -> list:
        """Each match's registration record, in order (taken now if it was left to `records_of`)."""
        if self._registered is None:
            self.settle()
        return self._registered

    def settle(self) -> None:
        """Take the ids, subscribers and records now (the engine calls it before its query
        set changes)."""
        table = self._table
        if table is not None:
            if self._query_ids is None:
                self._query_ids = table.ids_of(self.slots)
            if self._subscribers is None:
                self._subscribers = table.subscribers_of(self.slots)
            self._table = None
        if self._registered is None:
            self._registered = self._records_of(self.query_ids)
            self._records_of = None

    @property
    def subscribers(self) -> list[str | None]:
        """Each match's subscriber, in order."""
        subscribers = self._subscribers
        if subscribers is None:
            table = self._table
            if table is not None:
                subscribers = table.subscribers_of(self.slots)
            else:  # (settled meanwhile, or made of lists)
                subscribers = self._subscribers
                if subscribers is None:
                    subscribers = list(map(_subscriber, self.registered))
            self._subscribers = subscribers
        return subscribers

    def has_ask(self) -> bool:
        """Whether an ASK query is among the matches."""
        if not self._maybe_ask:
            return False
        table = self._table
        if table is not None and self._registered is None:  # (by slot: no record read)
            asks = bool(table.slot_ask[self.slots].any())
            if self._table is not None:  # (else settled meanwhile: its records say)
                return asks
        return any(map(_is_ask, self.registered))

    def _list(self) -> list[Match]:
        items = self._items
        if items is None:
            truncated = self.truncated
            flags = [q in truncated for q in self.query_ids] if truncated else repeat(False)
            # Built in C: no Python call per match.
            asks = map(_is_ask, self.registered) if self._maybe_ask else repeat(False)
            items = self._items = list(map(_new_match, repeat(Match), zip(
                self.query_ids, self.subscribers, self.solutions, asks, flags)))
        return items

    def __len__(self) -> int:
        ids = self._query_ids
        return len(ids if ids is not None else self.slots)

    def __bool__(self) -> bool:
        return len(self) > 0

    def __getitem__(self, i):
        return self._list()[i]

    def __iter__(self) -> Iterator[Match]:
        return iter(self._list())

    def __contains__(self, item) -> bool:
        return item in self._list()

    def __eq__(self, other) -> bool:
        if isinstance(other, Matches):
            other = other._list()
        if isinstance(other, (list, tuple)):
            return self._list() == list(other)
        return NotImplemented

    __hash__ = None  # a sequence that compares equal to lists

    def __add__(self, other) -> list[Match]:
        return self._list() + list(other)

    def __radd__(self, other) -> list[Match]:
        return list(other) + self._list()

    def __repr__(self) -> str:
        return repr(self._list())

    def __reduce__(self):  # pickled (Spark, --workers) as the plain list it reads as
        return (list, (self._list(),))


NO_MATCHES = Matches([], [], [])


def matches_of(groups: list, found: dict, truncated: set[str], maybe_ask: bool, queries: dict,
               records_of: Callable[[list[str]], list]) -> Matches:
    """One publication's `Matches` from what the index answered (`rtf.filter.QueryIndex.
    solution_groups`): its `groups` (each: slots with their answers, in query-id order)
    and the queries answered one by one (`found`: id -> solutions). `queries` are the
    engine's records by id (the subscribers of `found`'s), `records_of` reads them later.

    Parallel lists, built in C: no Python object per match until one is read. The
    groups hold the queries' slots (the index keeps their ids and subscribers by slot,
    read when asked for: `Matches.slots`); the records are read only if asked for: at a
    million queries, gathering them was a fifth of a publication's time."""
    if len(groups) == 1 and not found:  # the common case: one answer shared by all
        group = groups[0]  # in id order, as slots: their ids are read when asked for
        return Matches(None, group.per_id(), None, truncated, maybe_ask, None, records_of, group.slots,
                       group.table)
    if len(groups) == 1 and len(found) * 8 < len(groups[0].slots):
        # One large group and a few other answers (version-3 queries confirmed, say):
        # those put in their places in the group's id order, not everything sorted again.
        ids, solutions, subscribers = _merged(groups[0], found, queries)
        return Matches(ids, solutions, None, truncated, maybe_ask, subscribers, records_of)
    subscribers = {}
    for group in groups:
        ids = group.ids  # (read from the table once: pairs() would read them again)
        found.update(zip(ids, group.per_id()))
        subscribers.update(zip(ids, group.subscribers))
    qids = sorted(found)
    subscribers.update((q, queries[q].subscriber) for q in found.keys() - subscribers.keys())
    return Matches(qids, list(map(found.__getitem__, qids)), None, truncated, maybe_ask,
                   list(map(subscribers.__getitem__, qids)), records_of)


def _merged(group, found: dict, queries) -> tuple[list, list, list]:
    """The group's ids, solutions and subscribers with `found`'s queries inserted in
    query-id order (the group's ids are in that order already)."""
    group_ids, subscribers_of, solutions_of = group.ids, group.subscribers, group.per_id()
    ids: list = []
    solutions: list = []
    subscribers: list = []
    start = 0
    for qid in sorted(found):
        cut = bisect_left(group_ids, qid, start)
        ids += group_ids[start:cut]
        solutions += solutions_of[start:cut]
        subscribers += subscribers_of[start:cut]
        ids.append(qid)
        solutions.append(found[qid])
        subscribers.append(queries[qid].subscriber)
        start = cut
    ids += group_ids[start:]
    solutions += solutions_of[start:]
    subscribers += subscribers_of[start:]
    return ids, solutions, subscribers
