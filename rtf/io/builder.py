"""`IndexBuilder`: an index file built from many queries with the memory of a few.

`rtf index build` registers a query file of any size through it: the
queries are indexed a chunk at a time by an empty `rtf.engine.Engine`
handed in, with every check of `Engine.register_many`, and each chunk is
handed to an `rtf.io.store.IndexWriter` and freed before the next one is
indexed (docs/index-format.md). With ``table=True`` (an RTFs or RTFm index)
each chunk's query table is merged into the file's too
(`rtf.matching.table_merge`), and the file loads mapped back.

>>> from rtf import Engine
>>> builder = IndexBuilder(Engine("rtfs"), chunk=2, table=True)
>>> builder.register_many((f'ASK {{ ?s <http://ex/p> "{k}" }}', None) for k in range(5))
5
>>> loaded = Engine.from_bytes(builder.to_bytes())
>>> loaded.queries()[-1].id, loaded._index.table.mapped is not None
('q5', True)
"""

from __future__ import annotations

import gc
import itertools
from collections.abc import Callable, Iterable, Iterator
from os import PathLike
from typing import TYPE_CHECKING

from rtf.io import store
from rtf.io.files import atomic_output
from rtf.io.parse_ahead import parsed_ahead
from rtf.io.query_columns import QueryColumnsWriter
from rtf.io.query_models import ModelWriter, record_of

if TYPE_CHECKING:  # the engine is handed in: rtf.engine sits a layer above rtf.io
    from rtf.engine import Engine

#: Queries `IndexBuilder` indexes at a time before writing them out.
BUILD_CHUNK = 20_000


class IndexBuilder:
    """An index file built from many queries with the memory of a few (`rtf index build`).

    `engine` is an empty `rtf.engine.Engine` of the index's algorithm,
    taxonomy, solution cap and text analysis; the builder owns it from then
    on. Registers like `Engine.register_many` -- the same checks and errors,
    duplicate ids refused across the whole build, automatic ids ``q<n>``
    numbered as one engine would -- but indexes `chunk` queries at a time
    (default `BUILD_CHUNK`) and hands each chunk to an `rtf.io.store.IndexWriter` before indexing
    the next, so a million queries never stand indexed at once (the engine
    and the save's tables together took 3.1 GB at 1M). `save` writes the
    same index `Engine.save` writes after registering them all (the same
    body, line for line; with `table`, the same sections but the pivots,
    chosen for all at the end, and a query counted by value tests or
    answered by a projected star outside the first chunk left to register
    at load: `rtf.matching.table_merge`). After a refused record (without `on_error`) the
    builder is left unusable: build again. `on_registered` is called with
    each query registered (its `RegisteredQuery`) before its chunk is freed.
    """

    def __init__(self, engine: Engine, chunk: int | None = None,
                 on_registered: Callable[[object], None] | None = None, table: bool = False):
        if len(engine):
            raise ValueError("IndexBuilder takes an empty engine")
        self._engine = engine
        engine.keep_models = True  # (each chunk's models are read for the file)
        self._writer = store.IndexWriter()
        self._chunk = BUILD_CHUNK if chunk is None else chunk
        self._on_registered = on_registered
        # With the query table: each chunk's table merged (`rtf.matching.table_merge`), its
        # queries' columns and model records written on, for a file that loads mapped.
        self._tables = engine._table_merger() if table else None
        if self._tables is not None:
            self._models, self._columns = ModelWriter(), QueryColumnsWriter()
        self._first = True  # (no chunk indexed yet)
        self._whole = False  # the first chunk had what the merge does not carry: one engine

    def register_many(self, records: Iterable[tuple],
                      on_error: Callable[[int, tuple, Exception], None] | None = None,
                      workers: int = 1) -> int:
        """Register the records (as `Engine.register_many` takes them, `workers` too); return
        how many were.

        `on_error` positions count from the first record of this call."""
        engine, done, start, taken = self._engine, 0, 0, 0
        # One pool of parsers for the whole build, ahead of the chunks (rtf.io.parse_ahead).
        ahead = parsed_ahead(records, workers, engine.text_analysis)
        records = iter(records) if ahead is None else ahead

        def shifted(position: int, record: tuple, e: Exception) -> None:
            on_error(start + position, record, e)

        def chunk() -> Iterator[tuple]:
            nonlocal taken
            for record in itertools.islice(records, self._chunk):
                taken += 1
                yield record

        # The collector is paused throughout, as `Engine.register_many` pauses it: the
        # writer's table grows by millions of tuples, and each full collection would
        # rescan them all. A chunk's own cycles (the iBroker index has some) are freed
        # by collecting the youngest generation, which holds just that chunk's objects.
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            while True:
                taken = 0
                ids = engine.register_many(chunk(), None if on_error is None else shifted)
                done += len(ids)
                self._written(ids)
                if taken < self._chunk:
                    return done
                start += taken
        finally:
            if ahead is not None:
                ahead.close()
            if was_enabled:
                gc.enable()

    def _written(self, ids: list[str]) -> None:
        """The chunk of `ids` written out and freed (or kept in the engine, built whole)."""
        engine, tables = self._engine, self._tables
        arrays = None if tables is None or self._whole else tables.chunk(engine._index, ids)
        if self._first:
            self._first = False
            self._whole = arrays is not None and tables.loses(arrays)
        if self._whole:
            if self._on_registered is not None:
                for query_id in ids:
                    self._on_registered(engine._queries[query_id])
            return
        records = engine._spill(ids)
        for rq in records:
            self._writer.add(rq.query, rq.id, rq.subscriber, rq.metadata)
            if tables is not None:  # (its record read from the values the body just numbered)
                self._models.add(record_of(self._writer._table, rq.query))
            if self._on_registered is not None:
                self._on_registered(rq)
        if tables is not None:
            self._columns.add([(rq.id, rq.subscriber, rq.is_ask, rq.metadata, rq.text) for rq in records])
            tables.add(arrays)
        self._writer.forget_identities()  # the chunk's queries are freed now
        if tables is None:  # (an RTFs or RTFm engine leaves no cycles: 0 found at 100K, 0.15 s a chunk)
            gc.collect(0)

    def __len__(self) -> int:
        return len(self._engine) if self._whole else self._writer.count

    def save(self, path: str | PathLike) -> int:
        """Write the index to `path` atomically (as `Engine.save`); return its size in bytes.
        The file's sections are written as they are, not joined into one copy first."""
        if self._whole:
            return self._engine.save(path)
        parts = self._parts()
        with atomic_output(path, encoding=None, durable=True) as f:
            for part in parts:
                f.write(part)
        return sum(len(part) for part in parts)

    def to_bytes(self) -> bytes:
        return self._engine.to_bytes() if self._whole else b"".join(self._parts())

    def _parts(self) -> list:
        e = self._engine
        extra = None
        if self._tables is not None:
            extra = {**self._tables.sections(), **self._columns.sections(), **self._models.sections()}
            self._tables = self._columns = self._models = None  # (their arrays are in the parts)
        return self._writer.parts(e.algorithm, e.max_solutions, e.taxonomy, e._next_id,
                                  None if e.text_analysis is None else e.text_analysis.as_dict(), extra)
