"""An engine saved with its query table (format 4) built back from the arrays, models decoded lazily.

`snapshot` is what `Engine.save` adds to the file for the indexed engines
that keep a query table (rtfs, rtfm): the table's arrays
(`rtf.matching.table_snapshot`) and the queries' ids, subscribers, ASK flags
and metadata (`rtf.io.query_columns`). `restored` makes the engine of such a
file, signed by this installation, without decoding a model: the table is
filled from the arrays, the shapes indexed again from their saved keys,
each query's record made with its model left in the file (`Models`: the
whole body decoded, with every check of a load, the first time any model is
asked for: `Engine.get`, a branch answered by a join, a removal, a save).
The queries the table does not map (version 3)
are registered from their models at load, as before.
"""

from __future__ import annotations

import gc
import threading

import numpy as np

from rtf.errors import IndexFileError, RtfError
from rtf.io import query_models, store
from rtf.io.model_checks import check_head
from rtf.io.query_columns import query_sections, read_query_sections, read_texts
from rtf.matching import table_snapshot
from rtf.matching.loaded_ids import FileIds, LoadedMap
from rtf.matching.table_merge import TableMerger, table_sections
from rtf.matching.query_table import bulk_memos

#: Held while a file's models are decoded (`Models`).
_DECODING = threading.Lock()
#: The algorithms whose engines are saved with their query table.
ALGORITHMS = ("rtfs", "rtfm")
#: The section that says a file holds a query table.
SNAPSHOT = table_snapshot.PREFIX + "head"


def snapshot(index, records: list) -> dict:
    """The sections of `index` (an `IndexedQueries`: its query table and, for RTFs, its word
    index) and of the engine's `records` (`RegisteredQuery`, in order): with each query's
    model as a record of its own (`rtf.io.query_models`), a loaded one's copied as it was read."""
    return {**table_sections(index, [rq.id for rq in records]),
            **query_sections([(rq.id, rq.subscriber, rq.is_ask, rq.metadata, rq.text) for rq in records]),
            **_model_sections(records)}


def table_merger() -> TableMerger:
    """A `rtf.matching.table_merge.TableMerger`, for a build a chunk at a time."""
    return TableMerger()


def _model_sections(records: list) -> dict:
    """The model records of `records`: a loaded query's copied from its file, as it is."""
    source = next((m for rq in records if (m := getattr(rq, "_models", None)) is not None and m.copied), None)
    if source is None:
        return query_models.model_sections(rq.query for rq in records)
    try:
        return query_models.model_sections((rq._k if getattr(rq, "_models", None) is source else rq.query
                                            for rq in records), source.records)
    except IndexFileError:
        raise
    except ValueError as e:  # (a loaded block that does not inflate as its offsets say)
        raise IndexFileError(f"{source.source}: {e}") from None


def saved_queries(records: list) -> tuple[store.OldValues | None, list[tuple]]:
    """(old values, the ``(query, id, subscriber, metadata)`` of `records`) for a save: a query
    loaded from a file whose models were never decoded is given as the number of its value
    there, written again as it is (`rtf.io.store.OldValues`), unless over half the file's
    queries are gone (then every model is decoded and encoded again, the garbage left out)."""
    models = next((m for rq in records if (m := getattr(rq, "_models", None)) is not None
                   and m.queries is None), None)
    reuse = models.old_values() if models is not None else None
    if reuse is not None:
        kept = sum(getattr(rq, "_models", None) is models for rq in records)
        if 2 * kept >= len(reuse.refs):
            return reuse, [(reuse.refs[rq.id] if getattr(rq, "_models", None) is models else rq.query,
                            rq.id, rq.subscriber, rq.metadata) for rq in records]
    return None, [(rq.query, rq.id, rq.subscriber, rq.metadata) for rq in records]


class Models:
    """The file's query models, by query number: each decoded (and checked) from its own
    record when first asked for (`rtf.io.query_models`), or, in a file without the
    records, every one from the body on the first call, with the ids the body gives
    checked against the mapped ones."""

    def __init__(self, found, source: str, ids: list[str], head):
        self.found, self.source, self.ids = found, source, ids
        self.arrays = found.arrays  # (the texts section: kept when the models are decoded)
        self.queries: list | None = None  # every model, decoded from the body
        self._old: store.OldValues | None = None
        self._texts: list | None = None
        self.records: query_models.ModelRecords | None = None
        self.decoded: dict[int, object] = {}  # query number -> model, decoded from its record
        if all(name in found.arrays for name in query_models.NAMES):
            self.records = query_models.ModelRecords(found.arrays, len(ids))
            self._decoder = store._ValueBuilder(head.classes, head.analysis)  # (the body's classes)
        #: whether the records' class numbers are this writer's (then a save copies them as they are)
        self.copied = self.records is not None and head.classes == store.CLASS_NAMES

    def old_values(self) -> store.OldValues | None:
        """The file's values to write again as they are (`rtf.io.store.old_values`; made once)."""
        with _DECODING:
            if self._old is None and self.found is not None:
                self._old = store.old_values(self.found, self.source)
            return self._old if self.queries is None else None

    def text(self, k: int) -> str | None:
        """Query k's text (the models' if decoded, else the texts section's, read once)."""
        texts = self._texts
        if texts is not None:  # (the same texts as the models': `rtf serve` reads them all at start)
            return texts[k]
        if self.queries is None and "q_texts" not in self.arrays:  # (a file without them: the models')
            found = self.query(k)
            if self.records is not None:
                return found.text
        if self.queries is not None:
            return self.queries[k].text
        with _DECODING:
            if self._texts is None:
                try:
                    self._texts = read_texts(self.arrays)
                except (ValueError, KeyError, IndexError) as e:
                    raise IndexFileError(f"{self.source}: the index content is malformed: {e}") from None
        return self._texts[k]

    def prefetch(self, count: int) -> None:
        """`count` models are about to be read: over half the file's, the body is decoded
        whole (a record decodes ~1.25x slower than its share of the body: the body
        stores the values queries share once)."""
        if 2 * count > len(self.ids) and self.queries is None:
            with _DECODING:
                self._decode()

    def query(self, k: int):
        if self.queries is not None:
            return self.queries[k]
        if self.records is not None:
            found = self.decoded.get(k)
            if found is None:
                with _DECODING:
                    found = self.decoded.get(k)
                    if found is None:
                        found = self.decoded[k] = self._decode_one(k)
            return found
        with _DECODING:  # (once, whichever thread asks first: `Engine.get` takes no lock)
            self._decode()
        return self.queries[k]

    def _decode_one(self, k: int):
        try:
            return self.records.query(k, self._decoder)
        except (ValueError, IndexError) as e:  # (an IndexFileError too: named after the file)
            raise IndexFileError(f"{self.source}: {e}") from None

    def _decode(self) -> None:
        if self.queries is None:
            was_enabled = gc.isenabled()
            gc.disable()
            try:
                saved = store.decode_index(None, self.source, self.found)
            finally:
                if was_enabled:
                    gc.enable()
            if [record[1] for record in saved.queries] != self.ids:
                raise IndexFileError(f"{self.source}: the index's queries are not those of its table")
            self.queries = [record[0] for record in saved.queries]
            self.found = self._old = self._texts = self.arrays = None


def loaded_sections(engine) -> dict | None:
    """The sections of the file `engine` was restored from (`restored`; the query columns of
    `rtf.io.query_columns` among them, the texts still compressed), if it holds that file's
    queries and no other (none registered or removed since the load) and its models were not
    decoded whole; else None. What `rtf serve` compares with its query table at start."""
    queries = engine._queries
    if not isinstance(queries, LoadedMap) or not queries.whole() or not isinstance(queries.source, Models):
        return None
    return queries.source.arrays


def head_of(found, source: str):
    """The checked head line of a file's body (only its first line inflated)."""
    lines = store.json_lines(found, source)
    try:
        return check_head(next(lines, None), source)
    finally:
        lines.close()


def restored(engine_class, lazy_records, found, source: str):
    """The engine of a signed file with a query table (`found`: its sections), or None if
    its algorithm keeps none; `lazy_records(models, ids, subscribers, asks, metadata)(k)`
    makes the record of query k, its model read from `models` when first asked for
    (`rtf.matching.registered.loaded_records`; each made when first read: `LoadedMap`)."""
    head = head_of(found, source)
    if head.algorithm not in ALGORITHMS:
        return None
    was_enabled = gc.isenabled()
    gc.disable()  # many long-lived objects, no cycles (see rtf.io.store.decode_index)
    try:
        engine = engine_class(head.algorithm, taxonomy=head.taxonomy, max_solutions=head.max_solutions,
                              text_analysis=head.text_analysis)
        columns = read_query_sections(found.arrays)
        ids = columns.ids
        models = Models(found, source, ids, head)
        index = engine._index
        file_ids = FileIds(ids)
        table = index.table
        shapes, mapped = table_snapshot.restore(table, found.arrays, file_ids, columns.subscribers,
                                                columns.subscribed, columns.asks, models.query)
        restore = getattr(index.index, "restore_saved", None)  # (RTFs: `RTFsIndex.restore_saved`)
        prefix = table_snapshot.PREFIX
        if restore is None or not restore({name[len(prefix):]: array for name, array in found.arrays.items()
                                           if name.startswith(prefix)}, shapes.structures(), shapes.structure_of,
                                          shapes.alternatives, table.shapes_of):
            table.mapped.make_all(table)  # (RTFm: every shape indexed again from its saved keys)
            for shape in table.shape_at[np.flatnonzero(shapes.structure_of >= 0)].tolist():
                index.index.add(shape)
        metadata, subscribers, asks = columns.metadata, columns.subscribers, columns.asks.tolist()
        # (each record made when first read; the queries registered below take their places)
        engine._queries = LoadedMap(file_ids, lazy_records(models, ids, subscribers, asks, metadata), mapped,
                                    models)
        rest = np.flatnonzero(~mapped).tolist()
        if rest:
            models.prefetch(len(rest))
            with bulk_memos():
                engine.register_parsed([(models.query(k), ids[k], subscribers[k], metadata.get(k))
                                        for k in rest])
        engine._asks = int(columns.asks.sum())
        engine._next_id = head.next_id
        # (a stream of publications follows a load: the ranks made now, from the ids' order)
        in_order = None if rest else index.table.mapped.slots_in_order(columns.order)
        if in_order is None:
            index.table.id_order.rank(index.table.slot_id)
        else:
            index.table.id_order.ranked(in_order, len(index.table.slot_id))
    except IndexFileError as e:
        if str(e).startswith(f"{source}: "):
            raise
        raise IndexFileError(f"{source}: {e}") from None
    except (RtfError, KeyError, TypeError, ValueError, IndexError, AttributeError, RecursionError) as e:
        raise IndexFileError(f"{source}: the index content is malformed: {type(e).__name__}: {e}") from None
    finally:
        if was_enabled:
            gc.enable()
    return engine
