"""`match_publications`: the matches of a DataFrame of publications, as a DataFrame.

Usable from any pipeline, batch or streaming::

    from rtf.spark import match_publications

    docs = spark.read.format("binaryFile").load("drops/*.nt.gz")      # path, content, ...
    matches = match_publications(docs, index="queries.idx")
    matches.write.parquet("matches")     # publication, query, subscriber, bindings

The input is either

- **documents**: a string or binary column of RDF text (`column`, default
  ``content`` as the ``binaryFile`` source names it, else ``value`` as the
  ``text`` source does), each row read as ``rtf match`` reads a file: a
  publication per run of triples with one subject (``group_by="subject"``)
  or one named graph (``"graph"``). The syntax and compression come from
  `format` (``"nt"``, ``"nq"``, ``"nt.gz"``, ...) or else from the file name
  in `path_column` (default ``path`` when there is one), else N-Triples.
  Bad lines are skipped and counted, a broken archive is read up to its
  break (``rtf match --skip-invalid``); or
- **triples**: columns ``subject``, ``predicate``, ``object`` holding
  N-Triples terms, one row per triple; each subject's triples are grouped
  (a shuffle) into one publication whose id is the subject (as ``rtf match``
  names it). Batch DataFrames only: group a stream inside ``foreachBatch``.

The output has one row per (publication, matching query): ``publication``,
``query``, ``subscriber`` (strings) and ``bindings``
(``array<map<string,string>>``: the distinct projected solutions, each a
map from variable to N-Triples term, in the order of ``rtf match``; ``[]``
for ASK). With ``lines=True`` it is one ``value`` string column instead,
each the exact line ``rtf match`` writes (`rtf.io.output.match_line`).

The work runs in the Python workers through ``mapInArrow`` (Arrow batches
in and out, no per-row pickling). `index` is a saved index (a path on the
driver, or the bytes of `rtf.engine.Engine.to_bytes`, or an `Engine`, which
is turned into those bytes -- never pickled): the driver broadcasts the
bytes once per SparkContext, and each Python worker builds its engine from
them the first time it needs it and keeps it for every later task, job and
micro-batch (`rtf.spark.engines`).

The Python workers must import rtf. Unless ``spark.pyspark.python`` or
``PYSPARK_PYTHON`` names their Python, a local master's workers run this
driver's Python, so a script started as ``.venv/bin/python script.py``
works without the virtualenv activated; a Python that cannot run rtf is
refused here, at once, in one line saying what to set
(`rtf.spark.session.use_worker_python`).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import platform
import time
from collections.abc import Iterator

from rtf.spark.arrow_matches import MatchRows
from rtf.spark.dumps import ReplayError
from rtf.spark.engines import EnginePlan, engine_at
from rtf.spark.session import use_worker_python
from rtf.spark.workers import worker_rss_mb

log = logging.getLogger("rtf.spark")

#: The output of `match_publications` (Spark DDL).
MATCH_SCHEMA = ("publication string, query string, subscriber string, "
                "bindings array<map<string,string>>, triples array<array<string>>")
#: The output with ``lines=True``: the lines of ``rtf match`` (write them with ``df.write.text``).
LINES_SCHEMA = "value string"

#: Matches per Arrow batch handed back to Spark (bounds a worker's memory).
OUTPUT_ROWS = 8192

#: Tests and the documented retry run only: when this environment variable
#: names a file that exists as a Python worker starts matching a partition,
#: the worker that deletes it kills itself (SIGKILL), as the OOM killer would;
#: a file that says ``worker`` kills the standalone worker it runs under,
#: with its executor and Python workers, as a machine that fails would.
FAULT_FILE_ENV = "RTF_SPARK_FAULT_FILE"

_BROADCASTS: dict[tuple[str, str], object] = {}  # (Spark application id, sha256) -> broadcast


class IndexBytes:
    """A saved index's bytes and what the driver knows of them: `sha256`, `source`, `info`."""

    def __init__(self, data: bytes, source: str, info: dict | None = None, sha256: str | None = None):
        self.data = data
        self.source = source
        self.sha256 = sha256 or hashlib.sha256(data).hexdigest()  # (given: known already)
        self.info = info or {}


def index_bytes(index, check: bool = True) -> IndexBytes:
    """The bytes of `index`: a path on the driver, index bytes, or an `Engine` (`to_bytes`).

    A path's file is checked (header, checksum, body: `rtf.io.store`) so that a bad
    file is an `IndexFileError` here rather than a failed task in every worker."""
    from rtf.engine import Engine
    from rtf.io import store

    if isinstance(index, IndexBytes):  # (made by this function, or from bytes it made: checked)
        return index
    if isinstance(index, Engine):
        return IndexBytes(index.to_bytes(), "<engine>", {"algorithm": index.algorithm,
                                                         "queries": len(index)})
    if isinstance(index, (bytes, bytearray, memoryview)):
        data, source = bytes(index), "<index bytes>"
    elif isinstance(index, (str, os.PathLike)):
        from rtf.spark.dumps import has_scheme, local_path

        if has_scheme(str(index)):
            raise ReplayError(f"{index}: the index must be a file on the driver's file system")
        data, source = store.read_index_bytes(local_path(str(index))), str(index)
    else:
        raise TypeError("index must be a saved index's path, its bytes (Engine.to_bytes()) "
                        f"or an Engine, not {type(index).__name__}")
    info = {}
    if check:
        content = store.summary(data, source)
        info = {"algorithm": content["algorithm"], "queries": content["queries"]}
    return IndexBytes(data, source, info)


def broadcast_index(sc, index: IndexBytes):
    """One broadcast of these index bytes per SparkContext (reused by every later call)."""
    key = (sc.applicationId, index.sha256)
    bc = _BROADCASTS.get(key)
    if bc is None:
        for old in [k for k in _BROADCASTS if k[0] != key[0]]:  # a stopped context's
            del _BROADCASTS[old]
        bc = _BROADCASTS[key] = sc.broadcast(index.data)
    return bc


def match_publications(df, index, *, column: str | None = None, path_column: str | None = None,
                       format: str | None = None, group_by: str = "subject", lines: bool = False,
                       metrics=None, query_partitions: int | None = None, shared_index: bool = False):
    """The matches of the publications of `df` against the saved index `index` (module doc).

    `metrics`: an accumulator from `task_metrics` that every task adds its
    figures to (publications, matches, bad lines, engine load and match seconds).
    `query_partitions` K: the index split into K partitions by a hash of the query ids,
    each task matching one partition's engine, mapped from a file shipped to every
    executor once (`rtf.spark.index_parts`); the same matches.
    `shared_index` (`index` a path, or its part files, on the executors' machines too): each
    executor's Python daemon maps the file once before it forks its workers, and they share
    its engine (`rtf.spark.daemon`: the session must run rtf's daemon module).
    """
    shape = input_shape(df, column, path_column, format, group_by)
    data = index_bytes(index)
    sc = df.sparkSession.sparkContext
    if shared_index and not isinstance(index, (str, os.PathLike)):
        raise ReplayError("shared_index needs the index's path (a file the executors have too)")
    if query_partitions is not None:
        from rtf.spark.index_parts import partitioned_plans

        plans, info = partitioned_plans(sc, data, query_partitions)
        if shared_index:
            from rtf.spark.daemon import share_index

            share_index(sc, info["paths"])
        return map_matches(df, plans, shape, lines=lines, metrics=metrics)
    if shared_index:
        from rtf.spark.daemon import share_index

        share_index(sc, [index])
    return map_matches(df, index_plan(sc, data), shape, lines=lines, metrics=metrics)


def index_plan(sc, data: IndexBytes) -> EnginePlan:
    """The plan of the whole index `data`: broadcast, or the engine of rtf's daemon when it
    loaded that file (`EnginePlan.key`)."""
    from rtf.spark.engines import index_key

    return EnginePlan(data.sha256, broadcast_index(sc, data), source=os.path.basename(data.source),
                      key=index_key(data.data))


def input_shape(df, column: str | None = None, path_column: str | None = None,
                format: str | None = None, group_by: str = "subject") -> dict:
    """How `match_publications` reads `df` (documents or triples), checked against its schema."""
    from pyspark.sql.types import BinaryType, StringType

    if group_by not in ("subject", "graph"):
        raise ValueError(f"group_by must be 'subject' or 'graph', not {group_by!r}")
    types = {f.name: f.dataType for f in df.schema.fields}
    if column is None and {"subject", "predicate", "object"} <= set(types):
        for name in ("subject", "predicate", "object"):
            if not isinstance(types[name], StringType):
                raise ReplayError(f"column {name!r} must hold N-Triples terms as strings, "
                                  f"not {types[name].simpleString()}")
        if df.isStreaming:
            raise ReplayError("a stream of triples cannot be grouped into publications as it "
                              "comes: use documents, or match each micro-batch in foreachBatch")
        return {"kind": "triples"}
    if column is None:
        column = next((c for c in ("content", "value") if c in types), None)
        if column is None:
            texts = [n for n, t in types.items() if isinstance(t, (StringType, BinaryType))]
            if len(texts) != 1:
                raise ReplayError("say which column holds the RDF text (column=...), or give "
                                  f"subject, predicate, object columns; the DataFrame has {sorted(types)}")
            column = texts[0]
    if column not in types:
        raise ReplayError(f"no column {column!r} in the DataFrame (it has {sorted(types)})")
    if not isinstance(types[column], (StringType, BinaryType)):
        raise ReplayError(f"column {column!r} must be string or binary RDF text, "
                          f"not {types[column].simpleString()}")
    if path_column is None and "path" in types and format is None:
        path_column = "path"
    if path_column is not None and path_column not in types:
        raise ReplayError(f"no column {path_column!r} in the DataFrame (it has {sorted(types)})")
    if format is not None:
        from rtf.io.sources import detect_format

        detect_format("<rows>", format)  # an unknown syntax fails here, not in every task
    return {"kind": "documents", "column": column, "path_column": path_column,
            "format": format, "group_by": group_by}


def map_matches(df, plan: EnginePlan, shape: dict, lines: bool = False, metrics=None, then=None):
    """`df` through ``mapInArrow``: each worker matches against the engine of `plan`.

    `then`, a pair (function, schema): the function takes the task's match batches in the same
    Python worker and yields rows of `schema` (the Delta output's file writer): the matches do not
    go back to the JVM and out to a Python worker again.

    `plan` a list (query partitions, `rtf.spark.index_parts`): the input crossed with them --
    matched once per partition's plan, each task one partition, the results one union; the
    input's counts (publications, triples, bad lines) are reported by partition 0's tasks."""
    if shape["kind"] == "triples":
        from pyspark.sql import functions as F

        df = df.groupBy("subject").agg(F.collect_list(F.struct("predicate", "object")).alias("po"))
        columns = ["subject", "po"]
    else:
        columns = [shape["column"]] + ([shape["path_column"]] if shape["path_column"] else [])
        if shape.get("files"):  # (the stream's: each task reports its files, no job to list them)
            from pyspark.sql import functions as F

            columns += [F.col("modificationTime").cast("double").alias("mtime"), "length"]
    use_worker_python(df.sparkSession.sparkContext)  # (the workers must import rtf: checked once)
    df = df.select(*columns)
    if not isinstance(plan, (list, tuple)):
        return _map(df, plan, shape, lines, metrics, then)
    parts = [_map(df, p, {**shape, "part": g}, lines, metrics, then) for g, p in enumerate(plan)]
    return functools.reduce(lambda a, b: a.union(b), parts)  # (one grouping shuffle, reused)


def _map(df, plan: EnginePlan, shape: dict, lines: bool, metrics, then):
    run = _partition_matcher(plan, shape, lines, metrics, _worker_log_level())
    if then is not None:
        follow, schema = then
        return df.mapInArrow(lambda batches: follow(run(batches)), schema)
    return df.mapInArrow(run, LINES_SCHEMA if lines else MATCH_SCHEMA)


def _worker_log_level() -> int:
    return logging.getLogger("rtf.spark").getEffectiveLevel()


class ListParam:
    """Accumulator of lists: they concatenate (duck-typed AccumulatorParam)."""

    def zero(self, value):
        return []

    def addInPlace(self, a, b):
        a.extend(b)
        return a


def task_metrics(sc):
    """An accumulator that collects one dict of figures per task (see `collected`)."""
    return sc.accumulator([], ListParam())


def collected(accumulator) -> list[dict]:
    """The tasks' figures, one per partition (a task Spark ran again is counted once)."""
    by_partition = {m["partition"]: m for m in accumulator.value}
    return [by_partition[p] for p in sorted(by_partition)]


# ----------------------------------------------------------------- workers


def _partition_matcher(plan: EnginePlan, shape: dict, lines: bool, metrics, level: int):
    """The function each task runs on its partition's Arrow batches."""

    def run(batches):
        _configure_worker_logging(level)
        stats = _new_stats()
        t0, cpu0 = time.perf_counter(), time.process_time()
        out = MatchRows(lines)
        engine = None
        clock = time.perf_counter
        batches = iter(batches)
        while True:
            t = clock()
            batch = next(batches, None)  # (Arrow from the JVM: the files' bytes)
            stats["input_s"] += clock() - t
            if batch is None:
                break
            if shape.get("files"):  # path, modification time, bytes: what the manifest lists
                stats["files"].extend(zip(*(batch.column(i).to_pylist() for i in (1, 2, 3))))
            pubs = _publications(batch, shape, stats)
            while True:
                t = clock()
                pub = next(pubs, None)
                t1 = clock()
                stats["read_s"] += t1 - t
                if pub is None:
                    break
                if engine is None:
                    engine, info = engine_at(plan)
                    stats.update(load_s=info["load_s"], ops_applied=info["ops_applied"],
                                 ops_failed=len(info["ops_failed"]), op=info["op"], shared=info["shared"])
                    t1 = clock()
                found = engine.match(pub)
                t2 = clock()
                stats["match_s"] += t2 - t1
                stats["publications"] += 1
                stats["triples"] += len(pub)
                stats["matches"] += len(found)
                out.add(pub.id, found)
                stats["rows_s"] += clock() - t2
                if stats["publications"] == 1 and not shape.get("warm_up"):
                    _fault_point()
                if len(out) >= OUTPUT_ROWS:
                    t = clock()
                    rows = out.flush()
                    stats["rows_s"] += clock() - t
                    yield rows
        if len(out):
            t = clock()
            rows = out.flush()
            stats["rows_s"] += clock() - t
            yield rows
        if "part" in shape:
            stats["part"] = shape["part"]
        if shape.get("part"):  # the input's counts are partition 0's (`map_matches`)
            stats.update(part_publications=stats["publications"], publications=0,
                         triples=0, bad_lines=0, documents=0, bad_examples=[])
        if metrics is not None:
            from pyspark import TaskContext

            ctx = TaskContext.get()
            stats.update(partition=ctx.partitionId() if ctx else 0,
                         attempt=ctx.attemptNumber() if ctx else 0,
                         task_s=time.perf_counter() - t0, cpu_s=time.process_time() - cpu0,
                         worker=f"{platform.node()}:{os.getpid()}", rss_mb=worker_rss_mb())
            metrics.add([stats])

    return run


def _new_stats() -> dict:
    return {"publications": 0, "triples": 0, "matches": 0, "bad_lines": 0, "bad_examples": [],
            "documents": 0, "match_s": 0.0, "input_s": 0.0, "read_s": 0.0, "rows_s": 0.0, "files": [], "load_s": 0.0, "ops_applied": 0, "ops_failed": 0,
            "op": None, "shared": False}


def _publications(batch, shape: dict, stats: dict) -> Iterator:
    """The publications of one Arrow batch of the input."""
    from rtf.io.publication import Publication
    from rtf.query.terms import display_iri

    if shape["kind"] == "triples":
        po = batch.column(1)
        pairs = po.flatten()
        predicates, objects = pairs.field(0).to_pylist(), pairs.field(1).to_pylist()
        offsets = po.offsets.to_pylist()
        for i, subject in enumerate(batch.column(0).to_pylist()):
            lo, hi = offsets[i], offsets[i + 1]
            yield Publication(display_iri(subject),
                              [(subject, p, o) for p, o in zip(predicates[lo:hi], objects[lo:hi])])
        return
    from rtf.errors import PublicationError
    from rtf.io.reader import ReadStats, publications_from_bytes

    texts = batch.column(0).to_pylist()
    paths = batch.column(1).to_pylist() if shape["path_column"] else [None] * len(texts)
    for i, (text, path) in enumerate(zip(texts, paths)):
        if text is None:
            continue
        data = text.encode("utf-8") if isinstance(text, str) else text
        read = ReadStats()
        source = _local_name(path) if path else "<row>"
        stats["documents"] += 1
        try:
            pubs = publications_from_bytes(data, shape["format"] or (None if path else "nt"),
                                           shape["group_by"], source, skip_invalid=True, stats=read)
        except PublicationError as e:  # a name that says no RDF syntax: the document is skipped
            pubs, first, bad = [], e, 1
        else:
            bad = read.skipped_lines + len(read.breaks)
            first = (read.errors[0] if read.errors else read.breaks[0].error()) if bad else None
        if bad:
            stats["bad_lines"] += bad
            if not shape.get("part"):  # (said once, by partition 0's task)
                log.warning("%s: skipped %d bad line(s); first: %s", source, bad, first)
            if len(stats["bad_examples"]) < 3:
                stats["bad_examples"].append(str(first))
        yield from pubs


def _local_name(path: str) -> str:
    return path[len("file:"):] if path.startswith("file:") else path


def _configure_worker_logging(level: int) -> None:
    logger = logging.getLogger("rtf.spark")
    logger.setLevel(level)
    if not logger.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter(
            f"%(asctime)s %(levelname)s rtf worker {os.getpid()}: %(message)s", "%y/%m/%d %H:%M:%S"))
        logger.addHandler(handler)


def _fault_point() -> None:
    path = os.environ.get(FAULT_FILE_ENV)
    if path:
        try:
            with open(path, encoding="utf-8") as f:
                what = f.read().strip()
            os.unlink(path)  # one worker wins
        except OSError:
            return
        import signal

        if what == "worker":
            from rtf.spark.cluster import kill_tree, spark_worker_ancestor

            worker = spark_worker_ancestor()
            if worker is not None:
                log.warning("%s: killing the Spark worker (pid %d), its executor and Python workers",
                            FAULT_FILE_ENV, worker)
                kill_tree(worker)
        log.warning("%s: killing this Python worker (pid %d) with SIGKILL", FAULT_FILE_ENV, os.getpid())
        os.kill(os.getpid(), signal.SIGKILL)


