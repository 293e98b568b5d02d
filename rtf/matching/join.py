"""G-ToPSS binding tables and their natural join.

When every tuple of a branch has matched some triple, each tuple brings a
binding table: one row per distinct way it matched, a value for each of its
variables. A solution of the branch is a row of the natural join of these
tables (an equality join on shared variable names), as in section 4.2 of
the G-ToPSS paper. The join starts from the smallest table and always
takes next a table that shares variables with what is joined so far, so
that it never builds a cross product it does not need.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Iterable, Sequence
from operator import itemgetter

BindingTable = tuple[tuple[str, ...], Sequence[tuple[str, ...]]]  # (variable names, rows)


def _normalise(names: tuple[str, ...], rows) -> tuple[tuple[str, ...], Collection[tuple]]:
    """Drop duplicate columns: a tuple like (?x p ?x) already checked equality."""
    if len(set(names)) == len(names):
        return names, rows
    keep = [i for i, n in enumerate(names) if names.index(n) == i]
    return tuple(names[i] for i in keep), [tuple(r[i] for i in keep) for r in rows]


def join_rows(tables: Iterable[BindingTable], limit: int | None = None, buckets: dict | None = None
              ) -> tuple[list[str], list[tuple[str, ...]], bool]:
    """The natural join of `tables` as (column names, rows, truncated).

    With a `limit`, no step of the join holds more than `limit` rows: a
    step that would make more keeps the first `limit`, the join goes on with
    those, and says ``truncated=True`` (the rows it returns are genuine rows
    of the join, possibly not all of them).

    `buckets`, when given, keeps each table's hash buckets (its rows by the
    values of its join columns) across calls, by the table's identity: the
    caller keeps those tables alive and unchanged while it keeps the dict
    (`rtf.matching.solutions.PublicationSolver`: one publication's tables, which
    the joins of many branches read).
    """
    pending = [_normalise(n, r) for n, r in tables]
    if not pending:
        return [], [()], False
    if any(not rows for _, rows in pending):
        return [], [], False
    pending.sort(key=lambda t: len(t[1]))
    names, rows = pending.pop(0)
    cols = list(names)
    current = list(rows if isinstance(rows, (set, frozenset)) else set(rows))
    truncated = False
    while pending:
        bound = set(cols)
        # Next: a table sharing variables with the joined part, smallest first.
        idx = next((i for i, (n, _) in enumerate(pending) if not bound.isdisjoint(n)), 0)
        tnames, trows = pending.pop(idx)
        new = [i for i, n in enumerate(tnames) if n not in bound]
        shared = [n for n in tnames if n in bound]
        if shared:
            # Each row of the joined part meets the table's rows of its key (a hash join).
            get = _buckets(trows, [tnames.index(n) for n in shared], new, buckets).get
            key_of = _key([cols.index(n) for n in shared])
            met = [(row, b) for row in current if (b := get(key_of(row)))]
        else:
            tail = _columns(new)
            tails = [tail(r) for r in (trows if isinstance(trows, (set, frozenset)) else set(trows))]
            met = [(row, tails) for row in current]
        joined, cut = _met(met, limit)
        truncated = truncated or cut
        cols += [tnames[i] for i in new]
        current = joined
        if not current:
            return cols, [], truncated
    return cols, current, truncated


def extend(cols: list[str], rows: list[tuple], names: tuple[str, ...], table: Collection[tuple],
           limit: int | None = None, buckets: dict | None = None
           ) -> tuple[list[str], list[tuple[str, ...]], bool] | None:
    """One more step of a join: the joined part (`cols`, `rows`) joined with `table` (rows for
    the variables `names`), as `join_rows` would join it (at most `limit` rows, `buckets`
    shared), so that joins of several tables can share their first tables' join. None when
    the table names a variable twice or shares none with `cols` (`join_rows` then)."""
    if len(set(names)) != len(names):
        return None
    at = {n: i for i, n in enumerate(cols)}
    shared = [n for n in names if n in at]
    if not shared:
        return None
    new = [i for i, n in enumerate(names) if n not in at]
    if not rows or not table:
        return cols + [names[i] for i in new], [], False
    get = _buckets(table, [names.index(n) for n in shared], new, buckets).get
    key_of = _key([at[n] for n in shared])
    joined, cut = _met([(row, b) for row in rows if (b := get(key_of(row)))], limit)
    return cols + [names[i] for i in new], joined, cut


def _key(positions: list[int]) -> Callable[[tuple], object]:
    """A row's join key at `positions`: the value itself for one position, else a tuple."""
    return itemgetter(*positions)


def _buckets(table: Collection[tuple], positions: list[int], new: list[int], cache: dict | None) -> dict:
    """`table`'s rows by their key at `positions` (`_key`), each as its values at `new`;
    kept in `cache` by the table's identity (with the table, so that its id is not reused)."""
    cache_key = (id(table), tuple(positions), tuple(new))
    held = None if cache is None else cache.get(cache_key)
    if held is not None:
        return held[1]
    key_of, tail = _key(positions), _columns(new)
    bucket: dict = {}
    for r in (table if isinstance(table, (set, frozenset)) else set(table)):
        k = key_of(r)
        found = bucket.get(k)
        if found is None:
            bucket[k] = [tail(r)]
        else:
            found.append(tail(r))
    if cache is not None:
        cache[cache_key] = (table, bucket)
    return bucket


def _met(met: list, limit: int | None) -> tuple[list[tuple], bool]:
    """The rows of a join step from its (row, matching tails) pairs, at most `limit` (and
    whether it cut them)."""
    if limit is not None and sum(len(b) for _, b in met) > limit:
        # (the caller goes on joining the rows kept, so that every row has every column)
        return list(itertools.islice((row + t for row, b in met for t in b), limit)), True
    return [row + t for row, b in met for t in b], False


def _columns(positions: list[int]) -> Callable[[tuple], tuple]:
    """A row's values at `positions`, as a tuple (an empty one for no positions)."""
    if not positions:
        return lambda r: ()
    if len(positions) == 1:
        p = positions[0]
        return lambda r: (r[p],)
    return itemgetter(*positions)


def project(solution: dict[str, str], projection: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """A solution restricted to the projected variables that it binds."""
    return tuple((v, solution[v]) for v in projection if v in solution)
