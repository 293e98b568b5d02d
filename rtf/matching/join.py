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
from collections.abc import Iterable, Sequence

BindingTable = tuple[tuple[str, ...], Sequence[tuple[str, ...]]]  # (variable names, rows)


def _normalise(names: tuple[str, ...], rows) -> tuple[tuple[str, ...], list[tuple]]:
    """Drop duplicate columns: a tuple like (?x p ?x) already checked equality."""
    if len(set(names)) == len(names):
        return names, list(rows)
    keep = [i for i, n in enumerate(names) if names.index(n) == i]
    return tuple(names[i] for i in keep), [tuple(r[i] for i in keep) for r in rows]


def join_rows(tables: Iterable[BindingTable], limit: int | None = None
              ) -> tuple[list[str], list[list[str]], bool]:
    """The natural join of `tables` as (column names, rows, truncated).

    With a `limit`, no step of the join holds more than `limit` rows: a
    step that would make more keeps the first `limit`, the join goes on with
    those, and says ``truncated=True`` (the rows it returns are genuine rows
    of the join, possibly not all of them).
    """
    pending = [_normalise(n, r) for n, r in tables]
    if not pending:
        return [], [[]], False
    if any(not rows for _, rows in pending):
        return [], [], False
    pending.sort(key=lambda t: len(t[1]))
    names, rows = pending.pop(0)
    cols = list(names)
    current = [list(r) for r in set(rows)]
    truncated = False
    while pending:
        bound = set(cols)
        # Next: a table sharing variables with the joined part, smallest first.
        idx = next((i for i, (n, _) in enumerate(pending) if bound.intersection(n)), 0)
        tnames, trows = pending.pop(idx)
        shared = [n for n in tnames if n in bound]
        new = [i for i, n in enumerate(tnames) if n not in bound]
        if shared:
            left_pos = [cols.index(n) for n in shared]
            right_pos = [tnames.index(n) for n in shared]
            buckets: dict[tuple, list[tuple]] = {}
            for r in set(trows):
                buckets.setdefault(tuple(r[i] for i in right_pos), []).append(r)
            pairs = ((row, r) for row in current for r in buckets.get(tuple(row[i] for i in left_pos), ()))
        else:
            distinct = set(trows)
            pairs = ((row, r) for row in current for r in distinct)
        joined = [row + [r[i] for i in new] for row, r in itertools.islice(pairs, limit)]
        cols += [tnames[i] for i in new]
        current = joined
        if not current:
            return cols, [], truncated
        if limit is not None and len(joined) == limit and next(pairs, None) is not None:
            truncated = True  # go on joining the rows kept, so that every row has every column
    return cols, current, truncated


def project(solution: dict[str, str], projection: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """A solution restricted to the projected variables that it binds."""
    return tuple((v, solution[v]) for v in projection if v in solution)
