"""Matches as Arrow record batches: one schema for ``rtf match --output-format
arrow|parquet`` and for the rows `rtf.spark.match_publications` hands back to Spark.

A publication makes thousands of matches at 100,000 queries, and most of
them share their publication and their bindings (a star query answers
``{?s: subject}`` for every query that matched). So the columns are built
by index: the distinct publications and the distinct bindings of a batch
are converted to Arrow once each and spread to the rows with ``take``;
query ids and subscribers are taken by slot from the query table's columns
of them (`rtf.matching.id_column`), or go to Arrow as the lists of the
engine's `rtf.matching.results.Matches` (no `Match` made, no Python call
per match). Building the rows one Python object at a time had cost as much
as matching (docs/spark.md).

>>> from rtf.engine import Match
>>> rows = MatchRows()
>>> rows.add("http://ex/a", [Match("q1", None, frozenset({(("s", "<http://ex/a>"),)})),
...                          Match("q2", "ann", frozenset({()}), is_ask=True)])
>>> rows.flush().to_pylist()[1]
{'publication': 'http://ex/a', 'query': 'q2', 'subscriber': 'ann', 'bindings': [], 'triples': None}
"""

from __future__ import annotations

import json
from itertools import repeat
from operator import attrgetter, itemgetter

from rtf.algebra.results import OrderedRows, Triples

_QUERY = itemgetter(0)
_SUBSCRIBER = itemgetter(1)
_SOLUTIONS = itemgetter(2)
_IS_ASK = attrgetter("is_ask")
#: The key of an ASK match's answer (no bindings): apart from every SELECT's solutions.
_ASK = object()


def arrow_match_schema():
    """The pyarrow schema of the matches (`rtf.spark.dataframe.MATCH_SCHEMA`): ``publication``,
    ``query``, ``subscriber`` (strings), ``bindings`` (each solution a map from variable to
    N-Triples term, in the order of ``rtf match``; ``[]`` for ASK and CONSTRUCT) and
    ``triples`` (a CONSTRUCT match's [subject, predicate, object] each, null otherwise)."""
    import pyarrow as pa

    return pa.schema([("publication", pa.string()), ("query", pa.string()),
                      ("subscriber", pa.string()),
                      ("bindings", pa.list_(pa.map_(pa.string(), pa.string()))),
                      # a CONSTRUCT match's triples, [subject, predicate, object] each (null otherwise)
                      ("triples", pa.list_(pa.list_(pa.string())))])


def row_line(row: dict) -> str:
    """A match row (as pyarrow reads one: bindings as (variable, term) pairs in projection
    order) as the line `rtf match` writes for it, byte for byte."""
    doc = {"publication": row["publication"], "query": row["query"], "subscriber": row["subscriber"]}
    if row.get("triples") is not None:
        doc["triples"] = [list(t) for t in row["triples"]]
    else:
        doc["bindings"] = [dict(solution) for solution in row["bindings"]]
    return json.dumps(doc, ensure_ascii=False)


class MatchRows:
    """Matches gathered column by column, flushed as one Arrow record batch at a time.

    ``lines=True`` gathers the lines of ``rtf match`` instead (one ``value`` column).

    Per publication, `add` keeps the engine's slots of its matches with the query
    table's Arrow columns of every slot's id and subscriber
    (`rtf.matching.results.Matches.id_columns`), and `flush` (in the writer's
    thread) takes the batch's ids and subscribers from them at once: no query-id
    string is read (a Python string read after matching was a cache miss each,
    25-80 ns a match at 100,000 queries). Matches given as lists (a list of
    `Match`, or the engine's while its columns are made again) have their ids
    and subscribers joined into one string each, cut again at the newlines by
    numpy; a list that cannot be joined so (a newline in an id, a query
    without a subscriber) is kept as it is, and that column of the batch is
    made by ``pa.array`` (`_strings`).
    """

    def __init__(self, lines: bool = False):
        self.lines = lines
        self._start()

    def _start(self) -> None:
        self.texts: list[str] = []  # lines=True
        self.rows = 0
        self.publications: list[str] = []  # distinct, in order
        self.counts: list[int] = []  # rows of each publication
        # each publication's query ids (subscribers) joined by newlines, or their list
        self.queries: list[str | list] = []
        self.subscribers: list[str | list] = []
        self.values: list[list] = []  # distinct bindings values
        self.triples: list[list | None] = []  # distinct triples values (None: not a CONSTRUCT)
        self.slots: dict = {}  # solutions (or _ASK) -> index into values
        # each row's index into values, as runs: slot run_slots[i], run_lengths[i] times
        self.run_slots: list[int] = []
        self.run_lengths: list[int] = []

    def __len__(self) -> int:
        return len(self.texts) if self.lines else self.rows

    def add(self, pub_id: str, found) -> None:
        """The matches `found` of publication `pub_id`: `Engine.match`'s `Matches`, or a
        list of `rtf.engine.Match` (as a pickled `Matches` arrives)."""
        if not found:
            return
        if self.lines:
            from rtf.io.output import match_line

            self.texts.extend(match_line(pub_id, m) for m in found)
            return
        n = len(found)
        self.rows += n
        self.publications.append(pub_id)
        self.counts.append(n)
        if hasattr(found, "id_columns"):  # the engine's parallel lists
            columns = found.id_columns()
            arrays = columns.arrow() if columns is not None else None
            if arrays is not None:  # the ids and subscribers taken by slot when flushed
                queries = subscribers = (arrays, found.slots)
            else:  # read as they are
                queries, subscribers = found.query_ids, found.subscribers
            keys = found.solutions
            asks = list(map(_IS_ASK, found.registered)) if found.has_ask() else None
        else:
            queries, subscribers = list(map(_QUERY, found)), list(map(_SUBSCRIBER, found))
            keys = list(map(_SOLUTIONS, found))
            asks = list(map(_IS_ASK, found))
            if not any(asks):
                asks = None
        self.queries.append(queries if type(queries) is tuple else _joined(queries))
        self.subscribers.append(subscribers if type(subscribers) is tuple else _joined(subscribers))
        if asks is not None:
            keys = [_ASK if ask else key for key, ask in zip(keys, asks)]
        slots = self.slots
        if keys.count(keys[0]) == n:  # one answer for all (identity first: in C)
            slot = slots.get(keys[0])
            if slot is None:
                slot = self._new_slot(keys[0])
            self.run_slots.append(slot)
            self.run_lengths.append(n)
            return
        for key in set(keys).difference(slots):  # in C: frozensets keep their hash
            self._new_slot(key)
        self.run_slots += map(slots.__getitem__, keys)
        self.run_lengths += repeat(1, n)

    def _new_slot(self, key) -> int:
        """The bindings and triples values of an answer not seen in this batch yet."""
        slot = self.slots[key] = len(self.values)
        if isinstance(key, Triples):
            self.values.append([])
            self.triples.append([list(t) for t in sorted(key)])
        else:
            self.triples.append(None)
            rows = () if key is _ASK else key if isinstance(key, OrderedRows) else sorted(key)
            self.values.append([list(s) for s in rows])  # (ORDER BY: in order)
        return slot

    def flush(self):
        """The gathered rows as a record batch; the gathering starts again."""
        import pyarrow as pa

        if self.lines:
            batch = pa.RecordBatch.from_arrays([pa.array(self.texts, pa.string())], ["value"])
        else:
            schema = arrow_match_schema()
            of_value = _expanded(self.run_slots, self.run_lengths)
            batch = pa.RecordBatch.from_arrays([
                pa.array(self.publications, pa.string()).take(_expanded(range(len(self.counts)),
                                                                        self.counts)),
                _strings(self.queries, self.rows, _IDS),
                _strings(self.subscribers, self.rows, _SUBSCRIBERS),
                _bindings(self.values, of_value, schema.field("bindings").type),
                (pa.nulls(self.rows, schema.field("triples").type) if not any(self.triples) else
                 pa.array(self.triples, schema.field("triples").type).take(of_value)),
            ], schema=schema)
        self._start()
        return batch


def _joined(values: list) -> str | list:
    """`values` joined by newlines, or `values` themselves when one of them is None or
    holds a newline (then it cannot be cut at the newlines again)."""
    try:
        text = "\n".join(values)
    except TypeError:  # a None (a query without a subscriber)
        return values
    return text if text.count("\n") == len(values) - 1 else values


def _strings(parts: list, rows: int, column):
    """A string column of `rows` values, from each publication's part: its values joined
    (`_joined`), their list, or ``(arrays, slots)``, to take from ``column(arrays)``
    (`rtf.matching.id_column.IdColumns.arrow`). Made in one piece from the texts when
    every part is a text, by one ``take`` when every part is of the same columns."""
    import numpy as np
    import pyarrow as pa

    if all(type(part) is str for part in parts):
        data = np.frombuffer("\n".join(parts).encode(), np.uint8)
        newlines = np.flatnonzero(data == 10)  # rows - 1 of them: one between each two values
        offsets = np.empty(rows + 1, np.int32)
        offsets[0] = 0
        offsets[1:rows] = newlines - np.arange(rows - 1)
        offsets[rows] = len(data) - (rows - 1)
        return pa.StringArray.from_buffers(rows, pa.py_buffer(offsets), pa.py_buffer(data[data != 10]))
    if all(type(part) is tuple and part[0] is parts[0][0] for part in parts):
        return _taken(column(parts[0][0]), np.concatenate([part[1] for part in parts]))
    return pa.concat_arrays([
        _taken(column(part[0]), part[1]) if type(part) is tuple else
        pa.array(part.split("\n") if type(part) is str else part, pa.string()) for part in parts])


def _taken(values, slots):
    """``values.take(slots)``; None `values` (no query has a subscriber): nulls."""
    import pyarrow as pa

    return pa.nulls(len(slots), pa.string()) if values is None else values.take(slots)


_IDS = itemgetter(0)
_SUBSCRIBERS = itemgetter(1)


def _expanded(values, lengths):
    """``numpy.repeat(values, lengths)``, as int32: each row's index of a run-length list."""
    import numpy as np

    return np.repeat(np.asarray(values, np.int32), np.asarray(lengths, np.int64))


def _bindings(values: list, of_value, list_type):
    """The bindings column: ``values[of_value[i]]`` for each row i. When every value is one
    solution of the same variables (a batch of star queries), made from the terms taken
    by index (half the time of Arrow's take of the nested lists, the other way)."""
    import numpy as np
    import pyarrow as pa

    first = values[0] if values else ()
    names = [name for name, _ in first[0]] if len(first) == 1 else None
    if not names or any(len(v) != 1 or [name for name, _ in v[0]] != names for v in values):
        return pa.array(values, list_type).take(of_value)
    rows, k = len(of_value), len(names)
    picks = (np.asarray(of_value, np.int32)[:, None] * k + np.arange(k, dtype=np.int32)).ravel()
    terms = pa.array([term for v in values for _, term in v[0]], pa.string()).take(picks)
    encoded = [name.encode() for name in names]  # the names, row after row: bytes repeated
    offsets = np.zeros(rows * k + 1, np.int32)
    np.cumsum(np.tile(np.array([len(b) for b in encoded], np.int32), rows), out=offsets[1:])
    keys = pa.StringArray.from_buffers(rows * k, pa.py_buffer(offsets),
                                       pa.py_buffer(b"".join(encoded) * rows))
    maps = pa.MapArray.from_arrays(pa.array(np.arange(rows + 1, dtype=np.int32) * k), keys, terms,
                                   type=list_type.value_type)
    return pa.ListArray.from_arrays(pa.array(np.arange(rows + 1, dtype=np.int32)), maps, type=list_type)


#: Rows of a record batch of ``--output-format arrow``: a batch holds whole publications,
#: ending with the one that reaches this many (or each publication of a live feed).
STREAM_BATCH_ROWS = 1 << 16
#: Rows of a row group of ``--output-format parquet`` (whole publications too).
PARQUET_BATCH_ROWS = 1 << 18


class MatchBatchWriter:
    """Writes the matches of ``rtf match --output-format arrow|parquet`` to `out`, a binary
    file: an Arrow IPC stream (a record batch per group of publications; readable from a
    pipe as it comes) or a Parquet file (a row group per group), in `arrow_match_schema`.

    `write` takes a publication's ``(id, matches)`` (gathered in `MatchRows` until the
    group is full), or a record batch made elsewhere (by a worker process: written as it
    is, after what was gathered). A full batch is made into Arrow arrays and written by
    a thread of its own while the next is gathered (numpy and pyarrow copy, take,
    encode and compress without the GIL: Parquet's encoding cost as much as
    gathering); one write at a time, in order, and a write's error is raised by the
    next `write` or `close`. `live` writes, and flushes, each
    publication at once, in this thread. `close` writes what is left and ends the stream
    (or the Parquet footer); the file itself is the caller's to close.
    """

    def __init__(self, out, output_format: str, live: bool = False):
        import pyarrow as pa

        self.out = out
        self.live = live
        self.broken = False  # a write failed: nothing more is written
        self.rows = MatchRows()
        schema = arrow_match_schema()
        if output_format == "parquet":
            import pyarrow.parquet as pq

            self.limit = PARQUET_BATCH_ROWS
            self.writer = pq.ParquetWriter(out, schema)
        elif output_format == "arrow":
            self.limit = STREAM_BATCH_ROWS
            self.writer = pa.ipc.new_stream(out, schema)
        else:
            raise ValueError(f"not an Arrow output format: {output_format!r}")
        self._pool = None
        if not live:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(1, thread_name_prefix="rtf-match-writer")
        self._pending = None  # the write under way in the pool

    def write(self, piece) -> None:
        """Write one publication's ``(id, matches)``, or a record batch of matches."""
        if isinstance(piece, tuple):
            self.rows.add(*piece)
            if len(self.rows) >= self.limit or self.live:
                self._write_gathered()
        else:
            self._write_gathered()
            self._write(piece)

    def _write_gathered(self) -> None:
        if len(self.rows):
            rows, self.rows = self.rows, MatchRows()
            self._write(rows)

    def _write(self, batch) -> None:
        """Write `batch`, a record batch or the `MatchRows` to make one of (in the thread)."""
        if not len(batch):
            return
        if self._pool is None:
            self._write_now(batch)
            return
        self._wait()  # (the write before: its error is raised here)
        self._pending = self._pool.submit(self._write_now, batch)

    def _write_now(self, batch) -> None:
        try:
            if isinstance(batch, MatchRows):
                batch = batch.flush()
            self.writer.write_batch(batch)
            if self.live:
                self.out.flush()
        except BaseException:
            self.broken = True
            raise

    def _wait(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def close(self) -> None:
        """Write the rows gathered so far and end the stream or file (nothing more
        after a write failed: the output is `broken`, a closed pipe for instance)."""
        try:
            if not self.broken:
                self._write_gathered()
                self._wait()
                self.writer.close()
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=True)
                self._pool = None


def batch_of(pieces: list):
    """The record batch of a list of ``(publication id, matches)``, in order (a worker's
    batch of publications, sent back to be written by `MatchBatchWriter.write`)."""
    rows = MatchRows()
    for piece in pieces:
        rows.add(*piece)
    return rows.flush()
