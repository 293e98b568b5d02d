"""What an engine keeps of each registered query (`RegisteredQuery`, public as `rtf.engine.RegisteredQuery`).

A query loaded from a saved index of format 4 gets a `_LoadedQuery`: the
same record, its model decoded only when first read (`rtf.matching.restoring`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rtf.io.metadata import Metadata
from rtf.query.model import Query

_NO_METADATA = Metadata()


@dataclass(frozen=True, slots=True)
class RegisteredQuery:
    """A query as the engine holds it: its id, parsed query, subscriber and metadata.

    `metadata` is what the caller attached at registration (for the CLI, the
    extra fields of a JSON Lines query record), as a deep read-only copy: a
    dict (`rtf.io.metadata.Metadata`) that ``json.dumps`` takes as it is.
    """

    id: str
    query: Query
    subscriber: str | None = None
    is_ask: bool = False  # the query's, kept here for the match loop
    metadata: Metadata = field(default_factory=lambda: _NO_METADATA, compare=False)

    @property
    def text(self) -> str | None:
        """The query as written (its model's ``text``), read without decoding a loaded model."""
        return self.query.text


class _LoadedQuery(RegisteredQuery):
    """A query of a saved index, its model decoded when first read (`rtf.matching.restoring`)."""

    __slots__ = ("_models", "_k")
    query = property(lambda self: self._models.query(self._k))  # type: ignore[assignment]
    text = property(lambda self: self._models.text(self._k))  # type: ignore[assignment]

    def __eq__(self, other):
        if not isinstance(other, RegisteredQuery):
            return NotImplemented
        return (self.id, self.query, self.subscriber, self.is_ask) == (other.id, other.query, other.subscriber,
                                                                       other.is_ask)

    __hash__ = RegisteredQuery.__hash__

    def __reduce__(self):  # (pickled, as Spark ships engines, as the record it stands for)
        return RegisteredQuery, (self.id, self.query, self.subscriber, self.is_ask, self.metadata)


def _loaded_record(query_id, models, k, subscriber, is_ask, metadata, _new=object.__new__,
                   _set=object.__setattr__) -> RegisteredQuery:
    record = _new(_LoadedQuery)
    _set(record, "id", query_id)
    _set(record, "subscriber", subscriber)
    _set(record, "is_ask", is_ask)
    _set(record, "metadata", metadata or _NO_METADATA)
    _set(record, "_models", models)
    _set(record, "_k", k)
    return record
