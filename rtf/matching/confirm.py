"""Confirming version-3 queries: their algebra, evaluated over the publication.

The indexes find a version-3 query by the triple patterns it requires
(`rtf.algebra.presearch`); a query found so is a *candidate*, and its
answer is its algebra's over the publication (`rtf.algebra.results.run`),
evaluated once per publication however many of its branches were complete.
Queries that require no triple (``ASK {}``, ``VALUES`` alone, an aggregate
without ``GROUP BY``...) are candidates for every publication. The reference
engine confirms every version-3 query it holds, the same way.

One query that fails while it is evaluated (a bug, a recursion too deep)
does not match, and the others go on, as in the reference engine.
"""

from __future__ import annotations

from collections.abc import Iterable

from rtf.algebra.graph import Dataset
from rtf.algebra.results import OrderedRows, run


class Confirmation:
    """One publication's dataset, and the answers of the candidates confirmed on it."""

    __slots__ = ("dataset", "errors")

    def __init__(self, triples, virtual, now: str | None):
        self.dataset = Dataset(triples, virtual, now)
        self.errors = 0

    def answers(self, candidates: Iterable[tuple[str, object]], limit: int,
                out: dict, truncated: set) -> None:
        """Each candidate's (query id, `AlgebraQuery`) answer into `out` when it matches;
        its id into `truncated` when it had more than `limit` rows (then `limit` are kept)."""
        dataset = self.dataset
        for qid, algebra in candidates:
            try:
                found = run(algebra, dataset)
            except Exception:
                self.errors += 1
                continue
            if found is None:
                continue
            if len(found) > limit:
                found = type(found)(list(found)[:limit]) if isinstance(found, OrderedRows) else \
                    type(found)(sorted(found)[:limit])
                truncated.add(qid)
            out[qid] = found
