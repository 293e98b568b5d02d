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
    """A query of a saved index, its model decoded when first read (`rtf.matching.restoring`).

    Each load makes a subclass of its own (`loaded_records`) holding the file's models
    and metadata, so that a record sets three fields, not six: a million are made at load.
    """

    __slots__ = ("_k",)
    _models = None  # (the load's subclass: the file's `rtf.matching.restoring.Models`)
    _metadata: dict = {}  # (query number -> metadata, the queries with some)
    query = property(lambda self: self._models.query(self._k))  # type: ignore[assignment]
    text = property(lambda self: self._models.text(self._k))  # type: ignore[assignment]
    metadata = property(lambda self: self._metadata.get(self._k, _NO_METADATA))  # type: ignore[assignment]

    def __eq__(self, other):
        if not isinstance(other, RegisteredQuery):
            return NotImplemented
        return (self.id, self.query, self.subscriber, self.is_ask) == (other.id, other.query, other.subscriber,
                                                                       other.is_ask)

    __hash__ = RegisteredQuery.__hash__

    def __reduce__(self):  # (pickled, as Spark ships engines, as the record it stands for)
        return RegisteredQuery, (self.id, self.query, self.subscriber, self.is_ask, self.metadata)


_SET_ID, _SET_SUBSCRIBER, _SET_ASK = (RegisteredQuery.id.__set__, RegisteredQuery.subscriber.__set__,
                                      RegisteredQuery.is_ask.__set__)
_SET_K = _LoadedQuery._k.__set__


def loaded_records(models, ids: list[str], numbers: list[int], subscribers: list, asks: list,
                   metadata: dict) -> dict[str, RegisteredQuery]:
    """The records of queries `numbers` of a loaded file (id -> record, in that order): ids,
    subscribers and ASK flags by query number, `metadata` by number for those with some,
    models read from `models` (`rtf.matching.restoring.Models`) when first asked for."""
    cls = type("_LoadedQuery", (_LoadedQuery,), {"__slots__": (), "_models": models,
                                                  "_metadata": metadata})
    new = object.__new__

    def record(k: int) -> RegisteredQuery:
        made = new(cls)
        _SET_ID(made, ids[k])
        _SET_SUBSCRIBER(made, subscribers[k])
        _SET_ASK(made, asks[k])
        _SET_K(made, k)
        return made

    return dict(zip(map(ids.__getitem__, numbers), map(record, numbers)))
