"""The publications matched lately, kept in memory to explain their pushed matches.

A pushed match (an outbox event) is the `rtf match` line: publication id,
query, subscriber, bindings. Its explanation (the branch, the literals and
the character spans that satisfied each ``ftcontains``) needs the
publication's triples, which the server does not store. `Recent` keeps the
last `RECENT_PUBLICATIONS` publications that matched at least one query,
by id (a publication posted again under the same id replaces the older one),
so that ``GET /subscribers/{name}/matches/{id}/explanation`` can explain an
event shortly after it was published; older ones, and every one after a
restart, are no longer held (a ``404`` that says so).

The publisher thread alone adds (a few dict operations per matched
publication); request threads only read, each read one step of a dict under
the GIL.
"""

from __future__ import annotations

#: Matched publications kept for explanations (a DBpedia resource is a few KB).
RECENT_PUBLICATIONS = 1000


class Recent:
    """The last `size` matched publications, by id."""

    def __init__(self, size: int = RECENT_PUBLICATIONS):
        self.size = size
        self._by_id: dict = {}

    def add(self, publication) -> None:
        by_id = self._by_id
        by_id.pop(publication.id, None)  # the newest of an id is the last one
        by_id[publication.id] = publication
        if len(by_id) > self.size:
            del by_id[next(iter(by_id))]  # the oldest (only this thread writes)

    def get(self, publication_id: str):
        """The newest matched publication of that id still held, or None."""
        return self._by_id.get(publication_id)

    def __len__(self) -> int:
        return len(self._by_id)
