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
        distinct = trows if isinstance(trows, (set, frozenset)) else set(trows)
        new = [i for i, n in enumerate(tnames) if n not in bound]
        tail = _columns(new)
        shared = [n for n in tnames if n in bound]
        if shared:
            # Each row of the joined part meets the table's rows of its key (a hash join).
            if len(shared) == 1:
                right, left = tnames.index(shared[0]), cols.index(shared[0])
                key_of = itemgetter(left)
            else:
                right, left = _columns([tnames.index(n) for n in shared]), None
                key_of = _columns([cols.index(n) for n in shared])
            cache_key = (id(trows), tuple(tnames.index(n) for n in shared), tuple(new))
            held = None if buckets is None else buckets.get(cache_key)
            bucket = None if held is None else held[1]
            if bucket is None:
                bucket = {}
                for r in distinct:
                    k = r[right] if left is not None else right(r)
                    found = bucket.get(k)
                    if found is None:
                        bucket[k] = [tail(r)]
                    else:
                        found.append(tail(r))
                if buckets is not None:  # (with the table: its id is not reused while kept)
                    buckets[cache_key] = (trows, bucket)
            get = bucket.get
            met = [(row, b) for row in current if (b := get(key_of(row)))]
        else:
            tails = [tail(r) for r in distinct]
            met = [(row, tails) for row in current]
        if limit is not None and sum(len(b) for _, b in met) > limit:
            joined = list(itertools.islice((row + t for row, b in met for t in b), limit))
            truncated = True  # go on joining the rows kept, so that every row has every column
        else:
            joined = [row + t for row, b in met for t in b]
        cols += [tnames[i] for i in new]
        current = joined
        if not current:
            return cols, [], truncated
    return cols, current, truncated


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
