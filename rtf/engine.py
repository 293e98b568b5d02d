"""The `Engine` facade: register continuous queries, match publications.

One facade over swappable algorithms (as Lucene Monitor's ``Monitor`` over
its presearchers): ``naive`` (the brute-force reference), ``rtfm`` and
``rtfs`` (the RTF trie forests) and ``ibroker`` (the inverted-index
baseline). All give exactly the same answers; they differ in speed and
memory.

>>> engine = Engine()
>>> engine.register('SELECT ?s WHERE { ?s <http://ex/p> ?o FILTER ftcontains(?o, "rio") }', "q1")
'q1'
>>> from rtf import Publication
>>> pub = Publication("http://ex/a", [("<http://ex/a>", "<http://ex/p>", '"Games in Rio"')])
>>> [(m.query_id, m.bindings) for m in engine.match(pub)]
[('q1', [{'s': '<http://ex/a>'}])]
"""

from __future__ import annotations

import functools
import gc
import sys
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from os import PathLike
from typing import Any, Concatenate, ParamSpec, TypeVar
from typing import Literal as TypingLiteral

from rtf.errors import IndexFileError, QueryError, QueryTooComplexError, RtfError
from rtf.filter import EngineStats, QueryIndex
from rtf.io import store
from rtf.matching import restoring
from rtf.io.metadata import Metadata, frozen
from rtf.io.parse_ahead import Ahead, original, parsed_ahead
from rtf.io.publication import PublicationLike, as_publication
from rtf.io.taxonomy import Taxonomy
from rtf.matching.query_table import bulk_memos
from rtf.matching.registered import _NO_METADATA, RegisteredQuery, loaded_records, parsed_once, text_record  # noqa: F401 (rtf.engine.RegisteredQuery)
from rtf.matching.structures import shrunk
from rtf.matching.results import Match, Matches, matches_of  # noqa: F401 (Match: rtf.engine.Match, the public name)
from rtf.query.expressions import compile_filter
from rtf.query.analysis import FieldAnalysis, TextAnalysis, analysis_from_dict, normal_analysis
from rtf.query.model import Query
from rtf.query.regex import check_regexes
from rtf.query.terms import IRI, Literal
from rtf.query.text import analysed, publication_fields

#: The name of a matching algorithm (all four give the same answers).
Algorithm = TypingLiteral["naive", "rtfm", "rtfs", "ibroker"]
ALGORITHMS: tuple[Algorithm, ...] = ("naive", "rtfm", "rtfs", "ibroker")

#: The algorithm of `Engine()` and `rtf match` when none is named. Chosen by
#: measurement (docs/benchmarks.md, "Default engine"): rtfs and rtfm filter at
#: the same speed within run-to-run noise at 2K-100K queries, rtfs registers
#: as fast or faster, so the default stays rtfs.
DEFAULT_ALGORITHM: Algorithm = "rtfs"

#: Default cap on the distinct solutions one query reports for one publication.
MAX_SOLUTIONS = 10_000
#: The largest `max_solutions` an engine takes (its joins keep up to ten times as many rows).
MAX_SOLUTIONS_BOUND = 1_000_000_000


def freeze_long_lived() -> None:
    """Move every object alive now out of the cyclic garbage collector's sight.

    Call it once the queries are registered and before publications stream
    through: the index is long-lived, and a collector that rescans it on every
    full collection costs about 30% of filter time (measured at DB=20K on the
    DBpedia sample: RTFs 53.9 -> 38.2 ms/publication, iBroker 83.3 -> 55.6).
    Objects made later are collected as usual; ``gc.unfreeze()`` undoes it.
    """
    gc.collect()
    gc.freeze()


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _synchronized(method: Callable[Concatenate[Engine, _P], _R]) -> Callable[Concatenate[Engine, _P], _R]:
    """Run `method` holding the engine's lock (see `Engine`: one operation at a time).

    Typed with a ParamSpec, so that the methods keep their signatures for a
    type checker (``Engine().register(5)`` is an error to mypy).
    """
    @functools.wraps(method)
    def locked(self: Engine, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with self._lock:
            if self.text_analysis is None:
                return method(self, *args, **kwargs)
            with analysed(self.text_analysis):  # queries and publications alike
                return method(self, *args, **kwargs)
    return locked


def make_index(algorithm: Algorithm) -> QueryIndex:
    """A fresh, empty query index of the named algorithm."""
    if algorithm == "naive":
        from rtf.naive import NaiveQueries
        return NaiveQueries()
    if algorithm in ("rtfm", "rtfs"):
        from rtf.trieforest import make_rtf_index
        return make_rtf_index(algorithm)
    if algorithm == "ibroker":
        from rtf.ibroker_baseline import make_ibroker_index
        return make_ibroker_index()
    raise ValueError(f"unknown algorithm {algorithm!r}; choose one of {', '.join(ALGORITHMS)}")


class Engine:
    """Continuous full-text SPARQL queries over a stream of publications.

    `taxonomy` is a `Taxonomy` or the path of an ontology file; it answers
    ``a/rdfs:subClassOf*``. Without one, only the zero-length path holds
    (``?x a/rdfs:subClassOf* C`` is ``?x a C``).

    `algorithm` is one of `ALGORITHMS` (default ``"rtfs"``; ``"naive"`` is the
    brute-force reference, to be named explicitly).

    `max_solutions` (a positive int, default `MAX_SOLUTIONS`) caps the
    distinct solutions one query reports for one publication, and with them
    the work of its join; a capped `Match` says ``truncated=True``.

    `keep_models` (default False): keep every query's parsed model. Without it, a query
    registered as text in an engine without `text_analysis` keeps its text alone
    (`rtf.matching.registered.TextRecord`: 100K full-text queries take ~40 MB less), and
    ``get(id).query`` parses it again, an equal model, each time it is read (~60 us).
    Keep them where every model is read again and again (index builders, ``rtf check``,
    ``rtf serve``'s snapshots). The attribute ``keep_models`` may be set later (on a loaded
    engine, say): it rules the queries registered after.

    Query ids are str, and only str: `register`, `unregister` and ``in``
    raise TypeError for anything else, so that an id means the same thing
    everywhere.

    Threads: an engine may be shared. `match`, `register`, `register_many`, `register_parsed`,
    `unregister` and `save` take the engine's (re-entrant) lock, so they run one at a time: a
    match sees the query set as it was when it started, and a register or unregister waits
    for the matches in progress (and they for it). Matching is CPU-bound Python, so under the
    GIL the lock costs no parallelism, and well under a microsecond per call.
    """

    def __init__(self, algorithm: Algorithm = DEFAULT_ALGORITHM, taxonomy: Taxonomy | str | PathLike | None = None,
                 max_solutions: int = MAX_SOLUTIONS,
                 text_analysis: TextAnalysis | FieldAnalysis | Mapping[str, Any] | None = None,
                 keep_models: bool = False):
        if isinstance(max_solutions, bool) or not isinstance(max_solutions, int):
            raise TypeError(f"max_solutions must be a positive int, not {type(max_solutions).__name__}")
        if not 1 <= max_solutions <= MAX_SOLUTIONS_BOUND:
            raise ValueError(f"max_solutions must be from 1 to {MAX_SOLUTIONS_BOUND:_}, "
                             f"not {max_solutions}")
        if isinstance(text_analysis, Mapping):
            text_analysis = analysis_from_dict(dict(text_analysis))
        elif text_analysis is not None and not isinstance(text_analysis, (TextAnalysis, FieldAnalysis)):
            raise TypeError("text_analysis is a rtf.TextAnalysis, a rtf.FieldAnalysis (per predicate and "
                            "language tag), a mapping of their options, or None")
        #: Text analysis options beyond the spec's default words (`rtf.query.analysis`), for
        #: queries and publications alike, maybe per field; None when there are none.
        self.text_analysis: TextAnalysis | FieldAnalysis | None = normal_analysis(text_analysis)
        if not isinstance(keep_models, bool):
            raise TypeError(f"keep_models must be a bool, not {type(keep_models).__name__}")
        self.algorithm = algorithm
        self.max_solutions = max_solutions
        self._index = make_index(algorithm)
        if taxonomy is None:
            taxonomy = Taxonomy.empty()
        elif not isinstance(taxonomy, Taxonomy):
            taxonomy = Taxonomy.from_file(taxonomy)
        self.taxonomy = taxonomy
        self._queries: dict[str, RegisteredQuery] = {}
        self._next_id = 1
        self._truncated = 0
        self._asks = 0  # registered ASK queries (a writer looks for them only when there are)
        #: True while `register_parsed` registers queries parsed under this engine's text
        #: analysis (a saved index's): they are not parsed again.
        self._parsed_here = False
        #: Keep every query's model; else a query registered as text keeps its text alone.
        self.keep_models = keep_models
        self._lock = threading.RLock()
        #: match lists whose records are still to be read from `_queries` (`_records_of`)
        #: (by id: a match list compares as a list and has no hash)
        self._unsettled: weakref.WeakValueDictionary[int, Matches] = weakref.WeakValueDictionary()

    @_synchronized
    def register(self, query: str | Query, query_id: str | None = None, subscriber: str | None = None,
                 metadata: Mapping[str, Any] | None = None, replace: bool = False) -> str:
        """Register a continuous query and return its id.

        `query` is query text or a parsed `Query`; `query_id` a non-empty str
        (default: the next free ``q<n>``); `subscriber` a str or None;
        `metadata` a mapping of str keys to JSON values, kept with the query
        as a deep read-only copy (`rtf.io.metadata.Metadata`, a dict) for
        `get` to return.

        Atomic: on any error the engine is left exactly as it was. A wrong
        argument type is a TypeError, an empty id or an id already taken a
        ValueError, and every problem in the query itself a `QueryError`
        with line and column where known: text that does not parse, a
        construct outside the spec, a constant regex pattern that cannot run
        (`rtf.query.regex.InvalidRegexError`), a query nested too deeply.

        With `replace`, the query registered as `query_id` (if any) is replaced by this one,
        its subscriber and metadata too (an update by id, as Lucene Monitor's and
        Elasticsearch's); atomically: if this one is refused, that one stays as it was.
        """
        analysed_here = type(query) is Ahead  # parsed by a worker under this engine's analysis
        if analysed_here:
            query = query.query
        elif not isinstance(query, (str, Query)):
            raise TypeError(f"query must be a str or an rtf.query.model.Query, not {type(query).__name__}")
        if query_id is not None:
            _check_id(query_id)
        if subscriber is not None and not isinstance(subscriber, str):
            raise TypeError(f"subscriber must be a str or None, not {type(subscriber).__name__}")
        # A deep read-only copy; TypeError or ValueError (naming the value) if it is not JSON.
        kept = frozen(metadata) if metadata is not None and metadata != {} else _NO_METADATA
        if query_id is None:
            while f"q{self._next_id}" in self._queries:
                self._next_id += 1
            query_id = f"q{self._next_id}"
        old = self._queries.get(query_id)  # (None also for an id `_spill` keeps taken)
        if query_id in self._queries and (old is None or not replace):
            raise ValueError(f"a query with id {query_id!r} is already registered")
        if type(subscriber) is str:  # one copy of each subscriber's name: queries repeat a few
            subscriber = sys.intern(subscriber)
        self._put(query_id, lambda: self._index_query(query, query_id, subscriber, kept, analysed_here))
        return query_id

    def _put(self, query_id: str, make: Callable[[], RegisteredQuery]) -> None:
        """The record `make` indexes, as `query_id`, in place of the one registered (if any),
        which stays as it was if `make` raises."""
        old = self._queries.get(query_id)
        if old is not None:
            self._settle()  # (the match lists made before keep the old record)
            self._index.remove(query_id)
        try:
            record = make()
        except BaseException:
            if old is not None:
                self._index.add(query_id, old.query, old)
            raise
        self._queries[query_id] = record  # (a replaced query keeps its place in `queries()`)
        self._asks += record.is_ask - (old is not None and old.is_ask)

    def _put_back(self, query_id: str, old: RegisteredQuery | None) -> None:
        """Undo a registration of `query_id`: `old` again (the query it replaced), or none."""
        if old is None:
            return self.unregister(query_id)
        self._put(query_id, lambda: self._index.add(query_id, old.query, old) or old)

    def _index_query(self, query: str | Query, query_id: str, subscriber: str | None,
                     metadata: Metadata, analysed_here: bool = False) -> RegisteredQuery:
        """Parse, check and index a query; return its record (the index keeps it too, to
        hand back with its matches). Only `QueryError` escapes for its problems.

        `analysed_here`: the parsed `query` was parsed under this engine's text analysis."""
        from rtf.parser import parse_query  # (not imported by a load: `rtf match --index` parses nothing)
        try:
            if (isinstance(query, Query) and self.text_analysis is not None and not self._parsed_here
                    and not analysed_here):
                # Parsed elsewhere, its words are the default ones: parsed again, analysed.
                if not query.text:
                    raise QueryError("a parsed Query without its text cannot be registered in an engine "
                                     "with text analysis: register the query text")
                query = query.text
            parsed = parse_query(query) if isinstance(query, str) else query
            if parsed.algebra is None and not parsed.patterns and parsed.text:
                parsed = parse_query(parsed.text)  # a version-3 query loaded from an index
            for pattern in parsed.patterns:
                for term in pattern.terms:
                    if isinstance(term, (IRI, Literal)):
                        _ = term.key  # every index needs it; a term without one cannot match
            for f in parsed.filters:
                check_regexes(f, parsed.text)
                compile_filter(f)  # built now, so that matching never builds it
            if (self.text_analysis is None and not self.keep_models and parsed.algebra is None
                    and (isinstance(query, str) or analysed_here) and parsed.text):
                # Parsed here from its text, so parsed again alike: kept as text (`TextRecord`)
                record = text_record(query_id, parsed.text, subscriber, parsed.is_ask, metadata)
            else:
                record = RegisteredQuery(query_id, parsed, subscriber, parsed.is_ask, metadata)
            self._index.add(query_id, parsed, record)
        except QueryError:
            raise
        except RecursionError:
            raise QueryTooComplexError("the query is nested too deeply to evaluate") from None
        except Exception as e:  # a term or index that cannot take the query: say why, as a query error
            raise QueryError(f"cannot register the query: {type(e).__name__}: {e}") from e
        return record

    @_synchronized
    def unregister(self, query_id: str) -> None:
        """Remove a query; it never matches again. KeyError if it is unknown, TypeError if not a str."""
        _check_id(query_id)
        if query_id not in self._queries:
            raise KeyError(f"no registered query with id {query_id!r}")
        self._settle()  # (before its slots are freed: the match lists made before read them)
        self._index.remove(query_id)
        self._asks -= self._queries.pop(query_id).is_ask
        self._queries = shrunk(self._queries)

    @_synchronized
    def match(self, publication: PublicationLike) -> Matches:
        """The queries `publication` satisfies, by query id: a sequence of `Match`.

        The sequence (`rtf.matching.results.Matches`) reads as a list of
        `Match` records and compares equal to one; it makes each record only
        when it is read, and writers read its parallel lists directly.

        `publication` is a `Publication`, an rdflib Graph, or an iterable of
        (subject, predicate, object) N-Triples keys or pyoxigraph triples.
        Anything else -- or a triple that is not three well-formed terms --
        is a TypeError or ValueError raised before any index sees it.

        Never raises because of one query: a filter that fails on a solution
        is false for it. Each query reports at most `max_solutions`
        solutions (then ``truncated=True``).
        """
        # A publication makes thousands of short-lived, acyclic objects (matches,
        # solutions): the cyclic collector finds nothing in them, yet running it
        # in the middle cost 5-15% of match time. It is paused here, and the state
        # the caller had is restored whatever happens.
        if gc.isenabled():
            gc.disable()
            try:
                return self._match(publication)
            finally:
                gc.enable()
        return self._match(publication)

    def _match(self, publication: PublicationLike) -> Matches:
        pub = as_publication(publication)
        triples = list(pub.triples)
        virtual = self.taxonomy.expand(triples)
        with publication_fields(triples):  # (per-field analysis: the literals' predicates)
            groups, found, truncated = self._index.solution_groups(triples, virtual, self.max_solutions,
                                                                   pub.now_key())
        if truncated:
            self._truncated += len(truncated)
        matches = matches_of(groups, found, truncated, self._asks > 0, self._queries, self._records_of)
        if matches:
            self._unsettled[id(matches)] = matches
        return matches

    def _records_of(self, query_ids: list[str]) -> list[RegisteredQuery]:
        """The records of `query_ids`, for a match list that reads them (`Matches.registered`)."""
        with self._lock:
            return list(map(self._queries.__getitem__, query_ids))

    def _settle(self) -> None:
        """Before a query leaves `_queries`: every match list made earlier takes its
        records now, so that it keeps answering as it did when it was made."""
        unsettled = self._unsettled
        if unsettled:
            for matches in list(unsettled.values()):
                matches.settle()
            unsettled.clear()

    def match_many(self, publications: Iterable[PublicationLike]) -> Iterator[Matches]:
        """`match` each of `publications` in turn: an iterator of their match lists, in input order.

        Lazy: a publication is read only when its result is asked for, so a
        stream of any length runs in constant memory. Pair results with their
        publications with ``zip`` over a list, or use `match` in a loop.
        """
        for publication in publications:
            yield self.match(publication)

    def get(self, query_id: str) -> RegisteredQuery:
        """The registered query of that id (its query, subscriber and metadata).

        A query registered as text (with no text analysis) is kept as text: ``query`` is
        parsed from it again, an equal model, each time it is read (``text`` is not).

        KeyError if no query has that id, TypeError if `query_id` is not a str.
        """
        _check_id(query_id)
        try:
            return self._queries[query_id]
        except KeyError:
            raise KeyError(f"no registered query with id {query_id!r}") from None

    def __len__(self) -> int:
        """The number of registered queries."""
        return len(self._queries)

    def __getstate__(self) -> dict:
        # A lock cannot be pickled (Spark broadcasts engines): each copy gets its own.
        state = self.__dict__.copy()
        del state["_lock"]
        state.pop("_unsettled", None)  # (what a copy of the engine matched is its own)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if "_asks" not in state:  # pickled by an older rtf
            self._asks = sum(rq.is_ask for rq in self._queries.values())
        self.__dict__.setdefault("text_analysis", None)  # pickled by an older rtf
        self.__dict__.setdefault("_parsed_here", False)
        self.__dict__.setdefault("keep_models", self.__dict__.pop("_keep_models", False))  # (its old name)
        self._lock = threading.RLock()
        self._unsettled = weakref.WeakValueDictionary()

    @_synchronized
    def register_many(self, records: Iterable[tuple],
                      on_error: Callable[[int, tuple, Exception], None] | None = None,
                      workers: int = 1, replace: bool = False) -> list[str]:
        """Register many queries at once; return their ids in order.

        Each record is a tuple ``(query, query_id, subscriber, metadata)``,
        as `register` takes them (text or parsed `Query`; the last three may
        be left out or None). The records are read as they come (an iterator
        of any length is fine).

        All or none: on the first record `register` refuses, the queries this
        call registered are unregistered again and the error is raised as
        `register` raises it. With `on_error`, a refused record is handed to
        ``on_error(position, record, error)`` instead and left out (a
        `QueryError`, ValueError or TypeError: what `register` raises for
        one query); if `on_error` raises, everything is undone as above.

        Faster than `register` in a loop: the cyclic garbage collector is paused for the
        batch (its collections rescan the growing index: a third of the time at 100K), and
        each variable layout's columns are computed once (`rtf.matching.query_table.bulk_memos`).

        With `workers` > 1, that many forked processes parse the query texts
        ahead while this one indexes them (`rtf.io.parse_ahead`): the same
        queries, ids and errors, in about the time of the indexing alone when
        a core is free for the parsing. With `replace`, each record replaces the query of
        its id, as `register` does (and undoing puts the replaced queries back).
        """
        ahead = parsed_ahead(records, workers, self.text_analysis)
        done: list[tuple[str, RegisteredQuery | None]] = []  # (id, the query it replaced)
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            with bulk_memos(shapes=False):  # each variable layout's columns computed once
                for position, record in enumerate(records if ahead is None else ahead):
                    try:
                        old = self._queries.get(record[1]) if replace and len(record) > 1 else None
                        done.append((self.register(*record, replace=replace), old))
                    except (QueryError, ValueError, TypeError) as e:
                        if on_error is None:
                            raise
                        on_error(position, original(record), e)
            self._index.compact()  # (this method holds the engine's lock)
        except BaseException:
            for query_id, old in reversed(done):
                self._put_back(query_id, old)
            raise
        finally:
            if ahead is not None:
                ahead.close()  # the workers stop now, whatever happened
            if was_enabled:
                gc.enable()
        return [query_id for query_id, _ in done]

    def register_parsed(self, records: Iterable[tuple]) -> list[str]:
        """Register many parsed queries, ``(query, query_id, subscriber[, metadata])``
        each: all or none (`register_many`, refusing a query that is not parsed).

        What `Engine.load` uses (no parsing). With text analysis, the queries' words are
        taken as analysed by this engine's options already, as a saved index stores them.
        """
        def parsed(records: Iterable[tuple]) -> Iterator[tuple]:
            for record in records:
                if not isinstance(record[0], Query):
                    raise TypeError(f"expected an rtf.query.model.Query, not {type(record[0]).__name__}")
                yield record
        with self._lock:
            self._parsed_here = True
            try:
                return self.register_many(parsed(records))
            finally:
                self._parsed_here = False

    @_synchronized
    def save(self, path: str | PathLike) -> int:
        """Save the registered queries, taxonomy, algorithm and solution cap to `path`.

        Atomic: `path` is replaced only once the whole file is on disk (see
        `rtf.io.store` and docs/index-format.md). Returns the file size in bytes.
        """
        records = parsed_once(list(self._queries.values()))  # (each model read twice)
        return store.write_index(self._saved(records), path, self._snapshot(records))

    @_synchronized
    def to_bytes(self) -> bytes:
        """The bytes `save` would write: the saved-index format, to send or keep elsewhere."""
        records = parsed_once(list(self._queries.values()))
        return store.encode_index(self._saved(records), self._snapshot(records))

    def _snapshot(self, records: list[RegisteredQuery]) -> dict | None:
        """The sections a load maps back instead of registering the queries again (an
        indexed engine's query table: `rtf.matching.table_snapshot`)."""
        if self.algorithm not in restoring.ALGORITHMS:
            return None
        return restoring.snapshot(self._index, records)

    def _saved(self, records: list[RegisteredQuery] | None = None) -> store.SavedIndex:
        reuse, queries = restoring.saved_queries(  # (loaded ones as they were)
            list(self._queries.values()) if records is None else records)
        return store.SavedIndex(self.algorithm, self.max_solutions, self.taxonomy, queries, self._next_id,
                                None if self.text_analysis is None else self.text_analysis.as_dict(), reuse)

    @classmethod
    def load(cls, path: str | PathLike) -> "Engine":
        """The engine saved at `path` by `save`, built without parsing a query.

        Raises `rtf.errors.IndexFileError` for a file that is not a valid
        index of this format version (truncated, corrupt, foreign); nothing
        is loaded then.
        """
        return cls.from_bytes(store.map_index(path), str(path))

    @classmethod
    def from_bytes(cls, data: bytes, source: str = "<bytes>") -> "Engine":
        """The engine saved in the index-file bytes `data` (as `load`, without the file).

        Every check of `load` applies; `source` names the bytes in error
        messages. The Spark jobs broadcast an index file's bytes and each
        worker builds its engine here.
        """
        found = store.sections.unpack(data, store.FORMAT_VERSION, source, overlap=True)
        with found.verified():  # (its checksum computed meanwhile: `Sections.verified`)
            if found.signed and restoring.SNAPSHOT in found.arrays:  # this installation's: mapped back
                if (engine := restoring.restored(cls, loaded_records, found, source)) is not None:
                    return engine
            saved = store.decode_index(data, source, found)
            if saved.algorithm not in ALGORITHMS:
                raise IndexFileError(f"{source}: unknown algorithm {saved.algorithm!r}")
            was_enabled = gc.isenabled()
            gc.disable()  # millions of long-lived objects, no cycles (see store.decode_index)
            try:
                engine = cls(saved.algorithm, taxonomy=saved.taxonomy, max_solutions=saved.max_solutions,
                             text_analysis=saved.text_analysis)
                with bulk_memos():  # the file's equal tuples are one value: each shape computed once
                    engine.register_parsed(saved.queries)
            except (RtfError, KeyError, TypeError, ValueError, IndexError, AttributeError,
                    RecursionError) as e:
                raise IndexFileError(f"{source}: the index content is malformed: "
                                     f"{type(e).__name__}: {e}") from None
            finally:
                if was_enabled:
                    gc.enable()
            engine._next_id = saved.next_id
            return engine

    def _spill(self, ids: list[str]) -> list[RegisteredQuery]:
        """For `rtf.io.builder.IndexBuilder`: the records of `ids` -- every query of the index -- taken
        out with the index itself, their ids kept as taken (for duplicates and the
        automatic ids). The engine then answers nothing but `register` again."""
        self._settle()
        records = [self._queries[query_id] for query_id in ids]
        for query_id in ids:
            self._queries[query_id] = None  # type: ignore[assignment]
        self._index = make_index(self.algorithm)
        self._asks = 0
        return records

    def _table_merger(self):
        """For `rtf.io.builder.IndexBuilder`: what merges its chunks' tables, or None (none saved)."""
        return restoring.table_merger() if self.algorithm in restoring.ALGORITHMS else None

    def __contains__(self, query_id: str) -> bool:
        """Whether a query of that id is registered (TypeError if `query_id` is not a str)."""
        _check_id(query_id)
        return query_id in self._queries

    def queries(self) -> list[RegisteredQuery]:
        """Every registered query, in registration order."""
        return list(self._queries.values())

    def before_fork(self, output: str | None = None) -> None:
        """Make now the columns of ids that writers of `output` ("ids", "jsonl", "arrow")
        read (`rtf.matching.id_column`): once, shared by the processes forked next
        (`rtf match --workers`), not made, reading every id string, in each."""
        if (table := getattr(self._index, "table", None)) is not None:
            table.id_column.make(table, output)

    @_synchronized  # an index is walked: not while another thread changes it
    def stats(self) -> EngineStats:
        """Sizes of the index -- queries, tuples, trie nodes, word nodes, bytes
        (estimate) -- and counters: ``truncated_matches`` (matches cut at
        `max_solutions`) and, for the naive engine, ``evaluation_errors``."""
        s: EngineStats = {"algorithm": self.algorithm, "queries": len(self),
             "max_solutions": self.max_solutions, "truncated_matches": self._truncated,
             "text_analysis": None if self.text_analysis is None else self.text_analysis.as_dict()}
        s.update(self._index.stats())
        return s


def _check_id(query_id) -> None:
    if not isinstance(query_id, str):
        raise TypeError(f"a query id must be a str, not {type(query_id).__name__}")
    if not query_id:
        raise ValueError("a query id must not be empty")
