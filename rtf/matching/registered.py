"""What an engine keeps of each registered query (`RegisteredQuery`, public as `rtf.engine.RegisteredQuery`).

A query loaded from a saved index of format 4 gets a `_LoadedQuery`: the
same record, its model decoded only when first read (`rtf.matching.restoring`).
A query registered as text in an engine without text analysis gets a `TextRecord`:
its text alone, its model parsed again whenever it is read (`text_record`). Matching
reads neither's model: the query table holds what it needs.
"""

from __future__ import annotations

from collections.abc import Callable
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


class _LazyQuery(RegisteredQuery):
    """A record whose model is read from elsewhere: equal to the plain record it stands for."""

    __slots__ = ()

    def __eq__(self, other):
        if not isinstance(other, RegisteredQuery):
            return NotImplemented
        return (self.id, self.query, self.subscriber, self.is_ask) == (other.id, other.query, other.subscriber,
                                                                       other.is_ask)

    __hash__ = RegisteredQuery.__hash__


_TEXT = RegisteredQuery.query.__get__  # (a `TextRecord` keeps its text where the model would be)


class TextRecord(_LazyQuery):
    """A query registered as text in an engine without text analysis: its text alone, the
    model parsed again from it each time it is read (`Engine.get`, explanations, a save),
    which gives a model equal to the one registered. At 100K full-text queries the models
    were a fifth of the engine's memory; an engine that reads every model (an index
    builder) keeps them (`Engine(keep_models=True)`)."""

    __slots__ = ()

    @property
    def query(self) -> Query:  # type: ignore[override]
        from rtf.parser import parse_query
        from rtf.query.text import analysed
        with analysed(None):  # (read where another engine's analysis may be in effect)
            return parse_query(_TEXT(self))

    @property
    def text(self) -> str:  # type: ignore[override]
        return _TEXT(self)

    def __reduce__(self):  # (pickled as its text: a copy is lean too)
        return text_record, (self.id, _TEXT(self), self.subscriber, self.is_ask, self.metadata)


def text_record(query_id: str, text: str, subscriber: str | None, is_ask: bool,
                metadata: Metadata = _NO_METADATA) -> TextRecord:
    """The record of a query registered as `text` (see `TextRecord`)."""
    made = object.__new__(TextRecord)
    _SET_ID(made, query_id)
    _SET_QUERY(made, text)
    _SET_SUBSCRIBER(made, subscriber)
    _SET_ASK(made, is_ask)
    _SET_METADATA(made, metadata)
    return made


def parsed_once(records: list) -> list:
    """`records` with each `TextRecord` parsed once, as the plain record it stands for: what a
    save reads (it reads each model twice: for the body and for the models' section)."""
    return [RegisteredQuery(rq.id, rq.query, rq.subscriber, rq.is_ask, rq.metadata) if type(rq) is TextRecord
            else rq for rq in records]


class _LoadedQuery(_LazyQuery):
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

    def __reduce__(self):  # (pickled, as Spark ships engines, as the record it stands for)
        return RegisteredQuery, (self.id, self.query, self.subscriber, self.is_ask, self.metadata)


_SET_ID, _SET_SUBSCRIBER, _SET_ASK = (RegisteredQuery.id.__set__, RegisteredQuery.subscriber.__set__,
                                      RegisteredQuery.is_ask.__set__)
_SET_QUERY, _SET_METADATA = RegisteredQuery.query.__set__, RegisteredQuery.metadata.__set__
_SET_K = _LoadedQuery._k.__set__


def loaded_records(models, ids: list[str], subscribers: list, asks: list, metadata: dict
                   ) -> Callable[[int], RegisteredQuery]:
    """What makes the record of query k of a loaded file (`rtf.matching.loaded_ids`, when
    first read): ids, subscribers and ASK flags by query number, `metadata` by number for
    those with some, models read from `models` (`rtf.matching.restoring.Models`) when first asked for."""
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

    return record
