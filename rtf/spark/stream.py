"""Continuous queries on Spark Structured Streaming: files in, matches out exactly once.

The library behind ``rtf spark stream`` (`rtf.spark.stream_command`, docs/spark.md). A file source
watches ``--input`` (``binaryFile``: one row per new file, its bytes unparsed); every
micro-batch goes to `StreamJob.on_batch` (``foreachBatch``), which

1. skips the batch if its output folder is already committed by this
   stream from the same files (a replay after a restart:
   `rtf.spark.batch_output` commits by batch id), and refuses it if
   another stream, or other files, made that folder;
2. pins it to the number of operations in the queries log, recorded
   before anything runs (`rtf.spark.stream_state`), so that a replay
   matches against the same queries;
3. matches its files in the Python workers (`rtf.spark.dataframe.map_matches`),
   each worker bringing its long-lived engine to the pin
   (`rtf.spark.engines`), and writes the matches as Parquet into a
   temporary folder;
4. publishes that folder as ``batch_id=N`` by one rename, with a manifest
   of the batch's pin, files, counts, times and latencies -- or, with
   ``output_format="delta"``, adds the tasks' files to a Delta table in one
   transaction idempotent by (stream id, batch id) (`rtf.spark.delta_output`);
5. now and then, compacts: a worker saves its engine at the pin as a new
   base index, so that a worker starting later (or a restart) applies few
   operations.

Only after the handler returns does Spark record the batch as done; a
driver killed anywhere in between replays the batch, and steps 1-4 make
that replay invisible to readers. Before a run, `check_checkpoint` reads
the checkpoint and the output whole: a damaged or lost file, or an output
that another stream wrote, ends the run before Spark starts, in one line
that says what to do. At start a warm-up job builds the engine in every Python worker
while the source lists its folder (``shared_index``: takes the executor's daemon's engine,
`rtf.spark.daemon`), and while the stream is idle a small job every `KEEP_WARM_S` seconds
keeps the workers (and their engines) alive -- Spark stops Python workers that have been
idle for a minute -- and brings them to the newest operation.
"""

from __future__ import annotations

import json
import logging
import os
import re
import statistics
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from rtf.errors import RtfError
from rtf.spark.batch_output import BatchOutput
from rtf.spark.dataframe import IndexBytes, collected, index_bytes, map_matches, task_metrics
from rtf.spark.daemon import share_index
from rtf.spark.dumps import ReplayError, has_scheme, local_path
from rtf.spark.durable import RecordError
from rtf.spark.engines import EnginePlan, engine_at, file_key
from rtf.spark.oplog import QueriesLog
from rtf.spark.session import use_worker_python
from rtf.spark.stream_parts import StreamParts, shared_files, stream_base
from rtf.spark.stream_state import NEW_STREAM, RESTORE, StreamState

log = logging.getLogger("rtf.spark")

#: The files the source takes: N-Triples and N-Quads, plain or compressed.
DEFAULT_GLOB = "*.{nt,nq,nt.gz,nq.gz,nt.bz2,nq.bz2}"
#: The columns of Spark's ``binaryFile`` source.
BINARY_FILE_SCHEMA = "path string, modificationTime timestamp, length long, content binary"
#: Seconds of quiet after which the workers are touched (Spark stops idle ones after 60 s).
KEEP_WARM_S = 30.0
#: What Spark's query status says once it has looked for new files and found none.
_WAITING = ("Waiting for data to arrive", "Waiting for next trigger")
#: Environment variable naming a point where the driver kills itself, for the crash tests:
#: ``POINT:BATCH`` with POINT one of `CRASH_POINTS`.
CRASH_ENV = "RTF_STREAM_CRASH_AT"
CRASH_POINTS = ("pinned", "written", "committed", "returned")


@dataclass
class StreamConfig:
    """What `StreamJob` needs; mirrors the options of ``rtf spark stream``."""

    input: str
    output: str
    checkpoint: str
    index: str | None = None
    queries_log: str | None = None
    algorithm: str | None = None  # without an index: the empty engine's
    taxonomy: str | None = None  # without an index
    text_analysis: str | None = None  # without an index: --text-analysis (`rtf.io.analysis_file`)
    trigger_seconds: float = 1.0
    max_files_per_trigger: int | None = None
    max_bytes_per_trigger: int | None = None  # Spark's maxBytesPerTrigger: files' bytes (as stored)
    stop_when_idle: float | None = None
    glob: str = DEFAULT_GLOB
    group_by: str = "subject"
    compact_every: int = 1000
    warm_up: bool = True
    keep_warm: bool = True
    metrics: str | None = None  # a JSON Lines file, one line per committed batch
    output_format: str = "parquet"  # OUTPUT_FORMATS
    query_partitions: int | None = None  # K: the queries in K partitions by id (`rtf.spark.stream_parts`)
    shared_index: bool = False  # each executor's daemon maps the base index once (`rtf.spark.daemon`)


class StreamJob:
    """One run of the stream on a SparkSession (`run`), resumable from its checkpoint."""

    def __init__(self, spark, config: StreamConfig):
        self.spark = spark
        self.sc = spark.sparkContext
        self.config = config
        self.output, self.state, self.log_ops = check_config(config)
        self.shape = {"kind": "documents", "column": "content", "path_column": "path",
                      "format": None, "group_by": config.group_by, "files": True}
        self._bases: dict[int, tuple] = {}  # base operation -> (broadcast or shipped file, load, key)
        self.parts = None  # the query partitions (`rtf.spark.stream_parts.StreamParts`), if any
        self.lineage = ""
        self.stream = ""  # the stream's id (CHECKPOINT/rtf/stream.json), written into every manifest
        self.failure: RtfError | OSError | None = None  # what ended a batch, said in one line
        self.started = time.time()
        self.last_batch_end = self.started
        self.last_python = self.started
        self.active = False
        self.batches = 0
        self._warm: threading.Thread | None = None
        self._batch_path_warm = False  # (`_warm_batch_path`)

    # ------------------------------------------------------------------ setup

    def prepare(self) -> None:
        """Take the checkpoint's lock, check the checkpoint and the output, check or record the
        stream's identity, set up the bases."""
        self.state.open()
        recorded = check_checkpoint(self.config, self.output, self.state, self.log_ops)
        self.output.prepare()
        start = starting_index(self.config, self.state, self.log_ops, recorded)
        identity = self.state.identity({
            "index_sha256": start.sha256,
            "queries_log": self.log_ops.id if self.log_ops else None,
            "output": self.output.location,
        })
        self.stream = identity["stream"]
        if not self.state.base_path(0).exists():
            self.state.add_base(0, start.data)
        self.lineage = f"{identity['index_sha256']}+{identity['queries_log'] or '-'}"
        if self.config.query_partitions is not None:
            self.parts = StreamParts(self.sc, self.state, self.stream, self.lineage, self.config.query_partitions)
        log.info("stream %s: output %s, checkpoint %s, %d committed batch(es), queries log at "
                 "operation %d", self.stream[:12], self.output.folder, self.state.checkpoint,
                 len(self.output.batch_ids()), self._log_size())

    def _log_size(self) -> int:
        return self.log_ops.size() if self.log_ops is not None else 0

    def _base(self, op: int) -> tuple:
        if op not in self._bases:  # (every base with shared_index: a daemon maps the newest at start)
            path = self.state.base_path(op)
            self._bases[op] = (*stream_base(self.sc, path, self.config.shared_index), file_key(path))
        return self._bases[op]

    def plan(self, pin: int) -> EnginePlan | list[EnginePlan]:
        """The engine of operation `pin`: the newest base at or below it, and the operations after
        (with query partitions, one plan per partition: `rtf.spark.stream_parts`)."""
        if self.parts is not None:
            return self.parts.plans(pin, self.log_ops)
        base_op = self.state.newest_base(pin)
        ops = tuple(self.log_ops.read(after=base_op, upto=pin)) if self.log_ops and pin > base_op else ()
        base, load, key = self._base(base_op)  # (the file's key read once a base, not each batch)
        return EnginePlan(self.lineage, base, base_op, ops, pin, load=load, key=key,
                          source=f"{self.state.base_path(base_op).name} (stream base)")

    def source(self):
        reader = (self.spark.readStream.format("binaryFile").schema(BINARY_FILE_SCHEMA)
                  .option("pathGlobFilter", self.config.glob))
        if self.config.max_files_per_trigger:
            reader = reader.option("maxFilesPerTrigger", self.config.max_files_per_trigger)
        if self.config.max_bytes_per_trigger:
            reader = reader.option("maxBytesPerTrigger", self.config.max_bytes_per_trigger)
        return reader.load(self.config.input)

    # ---------------------------------------------------------------- batches

    def on_batch(self, batch_df, batch_id: int) -> None:
        """foreachBatch: match and commit micro-batch `batch_id` exactly once (module doc)."""
        self.active = True
        try:
            self._batch(batch_df, batch_id)
        except (RtfError, OSError) as e:  # Spark wraps it in a Java stack: `run` raises it as it is
            self.failure = e
            raise
        finally:
            self.active = False
            self.last_batch_end = self.last_python = time.time()

    def _batch(self, batch_df, batch_id: int) -> None:
        t0 = time.time()
        timing: dict = {}
        checkpoint = str(self.state.checkpoint)
        if self.output.holds(batch_id, self.stream):  # a replay after a restart, perhaps: list its files
            files = listed_files(batch_df)
            timing["list_s"] = time.time() - t0
            if self.output.replayed(batch_id, self.stream, files, checkpoint):
                log.info("batch %d: already committed by an earlier run of this stream; nothing to do",
                         batch_id)
                return
        if self._warm is not None and self._warm.is_alive():
            self._warm.join()  # its tasks are building the engines this batch needs: no third build
        pin = self.state.pin(batch_id, self._log_size)
        crash_point("pinned", batch_id)
        plan = self.plan(pin)
        acc = task_metrics(self.sc)

        def matches(then=None):  # the matches, written where they are made (`then`: Delta's writer)
            return map_matches(batch_df, plan, self.shape, metrics=acc, then=then)

        def write(target):  # a folder (Parquet), or the batch id (Delta: the table's own folder)
            t = time.time()
            written = self.output.write(matches, target)
            timing["match_write_s"] = time.time() - t
            crash_point("written", batch_id)
            return written

        made: dict = {}

        def manifest() -> dict:
            timing["committing_at"] = time.time()
            tasks = collected(acc)
            made["files"] = sorted({tuple(f) for t in tasks for f in t["files"]})  # (the tasks listed them)
            made["record"] = batch_manifest(batch_id, self.stream, pin, plan, made["files"], tasks, t0, timing,
                                            made.get("written"))
            return made["record"]  # (the commit adds committed_at to it)

        def write_files(target):
            made["written"] = write(target)
            return made["written"]

        committed = self.output.commit(batch_id, write_files, manifest)
        commit_s = time.time() - timing.get("committing_at", time.time())
        if not committed:  # another run of this batch came first: it must be this stream's
            self.output.replayed(batch_id, self.stream, made.get("files") or listed_files(batch_df), checkpoint)
        crash_point("committed", batch_id)
        record = made.get("record", {}) if committed else {}
        if committed:
            self.batches += 1
            log.info("batch %d: %d file(s), %d publication(s), %d match(es), pinned at operation %d; "
                     "committed in %.2f s; drop-to-commit latency p50 %.2f s, max %.2f s",
                     batch_id, len(record.get("files", ())), record.get("publications", 0), record.get("matches", 0),
                     pin, record.get("batch_s", 0.0), record.get("latency_s", {}).get("p50") or 0.0,
                     record.get("latency_s", {}).get("max") or 0.0)
            if record.get("bad_lines"):
                log.warning("batch %d: skipped %d bad line(s); first: %s", batch_id,
                            record["bad_lines"], (record.get("bad_examples") or ["?"])[0])
            if record.get("tasks_retried"):
                log.warning("batch %d: %d task(s) ran again after a failed attempt (a Python worker "
                            "died?); the batch's answers are those of the successful attempts",
                            batch_id, record["tasks_retried"])
            if record.get("ops_failed"):
                log.warning("batch %d: %d operation(s) of the queries log could not be applied "
                            "(see the workers' log)", batch_id, record["ops_failed"])
            if self.config.metrics:  # (with the commit's own seconds, known once it is made)
                with open(self.config.metrics, "a", encoding="utf-8") as f:
                    f.write(json.dumps({**record, "commit_s": round(commit_s, 3)}) + "\n")
        self.state.prune_pins(batch_id - 100)
        self._maybe_compact(pin)
        crash_point("returned", batch_id)

    # ------------------------------------------------------------- compaction

    def _maybe_compact(self, pin: int) -> None:
        base_op = self.parts.base_op(pin) if self.parts is not None else self.state.newest_base(pin)
        if self.log_ops is None or pin - base_op < self.config.compact_every:
            return
        t = time.time()
        plan = self.plan(pin)
        if self.parts is not None:
            return self.parts.compact(self.spark, plan, pin)
        data = self.spark.range(1, numPartitions=1).mapInArrow(
            _compactor(plan), "index binary").collect()[0]["index"]
        self.state.add_base(pin, bytes(data))
        old = self._bases.pop(base_op, None)
        if old is not None and base_op != 0:
            old[0].unpersist()
        self.state.prune_bases(pin)
        log.info("compacted the queries log: the index at operation %d (%d operations since the "
                 "last base) saved in %.2f s, %d bytes", pin, pin - base_op, time.time() - t, len(data))

    # ------------------------------------------------------- warm and running

    def warm_workers(self) -> dict:
        """Run one task per core that brings its Python worker's engine to the log's newest
        operation (building it if the worker has none); return what the tasks reported."""
        plan = self.plan(self._log_size())
        n = self.sc.defaultParallelism
        t = time.time()
        rows = self.spark.range(n, numPartitions=n).mapInArrow(
            _warmer(plan), "worker string, load_s double, op long").collect()
        if not self._batch_path_warm:
            self._warm_batch_path(plan)
        self.last_python = time.time()
        loads = [r.load_s for r in rows if r.load_s > 0]
        report = {"tasks": n, "workers": len({r.worker for r in rows}), "loads": len(loads),
                  "load_s_max": max(loads, default=0.0), "wall_s": time.time() - t}
        if loads or self.config.shared_index and not self.batches:  # (the daemons' engines: no load)
            log.info("warm-up: %d Python worker(s) built the engine (at operation %d) in at most "
                     "%.2f s", len(loads), plan.pin, report["load_s_max"])
        return report

    def _warm_batch_path(self, plan: EnginePlan) -> None:
        """Run once what a micro-batch runs -- a row of the file source's columns through the matching
        tasks and back -- on one small file made in memory: the JVM loads and compiles that path before
        the first batch, not during it (0.5 s of a first batch of 3,000 publications, docs/spark.md)."""
        import datetime

        triple = b'<http://example.org/rtf/warm-up> <http://www.w3.org/2000/01/rdf-schema#label> "warm-up" .\n'
        df = self.spark.createDataFrame(
            [("warm-up.nt", datetime.datetime.now(), len(triple), triple)], BINARY_FILE_SCHEMA)
        map_matches(df, plan, {**self.shape, "warm_up": True}).collect()  # (no fault point: tests')
        self._batch_path_warm = True

    def _warm_in_background(self) -> None:
        def run():
            try:
                self.warm_workers()
            except Exception as e:  # the stream itself reports real failures
                log.debug("warm-up did not finish: %s", e)
        self._warm = threading.Thread(target=run, name="rtf-warm-up", daemon=True)
        self._warm.start()

    def run(self, await_seconds: float = 0.5) -> dict:
        """Start the stream; return when it stops (idle for ``stop_when_idle`` seconds, or
        interrupted: KeyboardInterrupt is re-raised after a clean stop)."""
        try:
            use_worker_python(self.sc)  # before the first Python task
            self.prepare()
            if self.config.shared_index:  # (the executors' daemons start with the first Python task)
                share_index(self.sc, shared_files(self.state, self.parts, self._log_size()))
            if self.config.warm_up:
                self._warm_in_background()  # while the source lists its folder
            query = (self.source().writeStream.foreachBatch(self.on_batch)
                     .option("checkpointLocation", str(self.state.checkpoint))
                     .trigger(processingTime=f"{self.config.trigger_seconds} seconds")
                     .queryName("rtf-stream").start())
            try:
                self._watch(query, await_seconds)
            except BaseException as e:
                query.stop()
                raise self.failure or spark_checkpoint_error(e) or e from None
            if query.exception() is not None:
                raise self.failure or spark_checkpoint_error(query.exception()) or query.exception()
        finally:
            self.state.close()
        return {"batches": self.batches, "committed": self.output.batch_ids()}

    def _watch(self, query, await_seconds: float) -> None:
        idle_limit = self.config.stop_when_idle
        waiting_since = None  # when the source was last seen waiting for data, no batch since
        message = None
        while not query.awaitTermination(await_seconds):
            now = time.time()
            status = query.status
            if status.get("message") != message:
                message = status.get("message")
                log.debug("stream status: %s", message)
            warming = self._warm is not None and self._warm.is_alive()
            if self.active or warming or status.get("isTriggerActive") or status.get("isDataAvailable") \
                    or message not in _WAITING:
                waiting_since = None  # starting up, warming up, or a batch: not idle
                continue
            if waiting_since is None or waiting_since < self.last_batch_end:
                waiting_since = max(now, self.last_batch_end)
            if idle_limit is not None and now - waiting_since >= idle_limit:
                log.info("no new file for %.0f s: stopping", now - waiting_since)
                query.stop()
                return
            if self.config.keep_warm and now - self.last_python >= KEEP_WARM_S:
                self.warm_workers()


def listed_files(batch_df) -> list[tuple]:
    """The files of a micro-batch, (path, modification time, bytes) each, by a Spark job of their
    own (a batch's tasks report them as they match: `rtf.spark.dataframe.map_matches`)."""
    from pyspark.sql import functions as F

    return sorted((r.path, r.mtime, r.length) for r in batch_df.select(
        "path", F.col("modificationTime").cast("double").alias("mtime"), "length").collect())


#: The stream's outputs: a folder of Parquet batches, or a Delta table.
OUTPUT_FORMATS = ("parquet", "delta")


def stream_output(location: str, output_format: str):
    """The stream's output: `BatchOutput` (a folder per batch) or `DeltaOutput` (one table)."""
    if output_format == "delta":
        from rtf.spark.delta_output import DeltaOutput, missing_deltalake

        missing = missing_deltalake()
        if missing:
            raise ReplayError(missing)
        return DeltaOutput(location)
    if output_format != "parquet":
        raise ReplayError(f"--output-format must be one of {', '.join(OUTPUT_FORMATS)}")
    if has_scheme(location):
        raise ReplayError(f"--output {location}: a folder of Parquet batches must be local (or a mounted "
                          "shared folder), where a folder rename is atomic; on an object store use "
                          "--output-format delta")
    return BatchOutput(location)


def check_config(config: StreamConfig) -> tuple[BatchOutput, StreamState, QueriesLog | None]:
    """The stream's output, state and queries log, after the checks that need no Spark
    (`ReplayError` or `rtf.errors.RtfError` in one line, before a JVM starts)."""
    if not Path(local_path(config.input)).is_dir():
        raise ReplayError(f"--input {config.input}: no such folder")
    output, state = stream_output(config.output, config.output_format), StreamState(config.checkpoint)
    if config.index is not None and not Path(local_path(config.index)).is_file():
        raise ReplayError(f"--index {config.index}: no such file")
    if config.index is None and config.queries_log is None and not state.identity_path.exists():
        raise ReplayError("give the queries: --index IDX, --queries-log DIR, or both")
    log_ops = QueriesLog(config.queries_log, create=True) if config.queries_log else None
    return output, state, log_ops


def check_checkpoint(config: StreamConfig, output: BatchOutput, state: StreamState,
                     log_ops: QueriesLog | None) -> dict | None:
    """Read and check the checkpoint and the output before a run (no Spark needed): every
    file of ``CHECKPOINT/rtf/`` (`StreamState.check`; a lost starting index must be given
    back, `starting_index`), and that the output is this stream's (`BatchOutput.check_writer`)
    and goes with Spark's part of the checkpoint. The recorded identity, or None for a new
    stream; `ReplayError` (one line, saying what to do) otherwise."""
    current = {"queries_log": log_ops.id if log_ops else None, "output": output.location}
    recorded = state.check(current, log_ops.size() if log_ops else 0)
    if recorded is not None and not state.base_path(0).exists():
        starting_index(config, state, log_ops, recorded)
    output.check_writer(recorded["stream"] if recorded else None, str(state.checkpoint))
    if recorded is None:
        return None
    batches = output.batch_ids()
    if batches and not state.spark_batches("offsets"):
        raise ReplayError(f"the checkpoint {state.checkpoint} has lost Spark's part (no offsets in "
                          f"{state.checkpoint / 'offsets'}), but --output {output.folder} holds "
                          f"{len(batches)} batch(es) of its stream: restore the whole checkpoint "
                          f"from a backup, or {NEW_STREAM}")
    lost = output.missing(state.spark_batches("commits"), recorded["stream"])
    if lost:
        raise ReplayError(f"--output {output.folder} has lost {len(lost)} batch(es) that the checkpoint "
                          f"{state.checkpoint} records as committed ({output.describe(lost[0])} first): "
                          f"restore the output from a backup, or {NEW_STREAM}")
    return recorded


def starting_index(config: StreamConfig, state: StreamState, log_ops: QueriesLog | None,
                   recorded: dict | None) -> IndexBytes:
    """The index the stream starts from: --index, the checkpoint's copy, or an empty engine
    for the log alone; on a restart, the one the stream started with (`recorded`), or
    `RecordError` when the checkpoint lost it and the options do not give it back."""
    base = state.base_path(0)
    if config.index is not None:
        data = index_bytes(config.index)
        if config.algorithm and data.info.get("algorithm") != config.algorithm:
            raise ReplayError(f"--algorithm {config.algorithm} but the index "
                              f"{config.index} is {data.info.get('algorithm')}")
        if config.taxonomy:
            raise ReplayError("--taxonomy cannot be used with --index: the index holds its taxonomy")
        if config.text_analysis is not None:
            raise ReplayError("--text-analysis cannot be used with --index: the index holds its text analysis")
    elif base.exists():
        return index_bytes(base, check=False)  # checked by check_checkpoint
    elif log_ops is None:
        if recorded is None:
            raise ReplayError("give the queries: --index IDX, --queries-log DIR, or both")
        data = None
    else:
        from rtf.engine import Engine

        from rtf.io.analysis_file import read_text_analysis

        data = index_bytes(Engine(config.algorithm or "rtfs", taxonomy=config.taxonomy, text_analysis=(
            None if config.text_analysis is None else read_text_analysis(config.text_analysis))))
    if recorded is not None and not base.exists() and (data is None or data.sha256 != recorded["index_sha256"]):
        given = ("" if data is None else f", not {config.index}" if config.index else
                 ", not the empty engine of --algorithm and --taxonomy")
        raise RecordError(f"{base}: missing; restart with --index IDX, the index the stream started "
                          f"with (SHA-256 {recorded['index_sha256']}{given})")
    return data


def batch_manifest(batch_id: int, stream: str, pin: int, plan: EnginePlan, files: list, tasks: list[dict],
                   t0: float, timing: dict, written: list[dict] | None = None) -> dict:
    """What a committed batch's ``_rtf_batch.json`` says: the stream that committed it, its inputs,
    counts, times and latencies."""
    now = time.time()
    latencies = sorted(now - mtime for _, mtime, _ in files if mtime is not None)
    loads = [t["load_s"] for t in tasks if t.get("load_s")]
    failed: dict = {}  # query partition -> operations its engine could not apply
    for t in tasks:
        failed[t.get("part")] = max(failed.get(t.get("part"), 0), t["ops_failed"])
    bad_examples = [e for t in tasks for e in t.get("bad_examples", ())][:3]
    return {
        "batch": batch_id,
        "stream": stream,
        "op": pin,
        "base_op": (plan[0] if isinstance(plan, list) else plan).base_op,
        "files": [{"path": p, "mtime": m, "bytes": n} for p, m, n in files],
        "publications": sum(t["publications"] for t in tasks),
        "triples": sum(t["triples"] for t in tasks),
        "matches": sum(t["matches"] for t in tasks),
        "bad_lines": sum(t["bad_lines"] for t in tasks),
        "bad_examples": bad_examples,
        "ops_failed": sum(failed.values()),
        "tasks": len(tasks),
        "tasks_retried": sum(1 for t in tasks if t.get("attempt")),
        "engine_loads": len(loads),
        "engine_load_s_max": round(max(loads, default=0.0), 3),
        "match_s": round(sum(t["match_s"] for t in tasks), 3),
        "worker_s": round(sum(t.get("task_s", 0.0) for t in tasks), 3),
        # the tasks' seconds (summed) receiving the files from the JVM, parsing them, building the
        # Arrow rows, writing Parquet; the longest task; the Python workers' CPU seconds
        "input_s": round(sum(t.get("input_s", 0.0) for t in tasks), 3),
        "read_s": round(sum(t.get("read_s", 0.0) for t in tasks), 3),
        "task_s_max": round(max((t.get("task_s", 0.0) for t in tasks), default=0.0), 3),
        "rows_s": round(sum(t.get("rows_s", 0.0) for t in tasks), 3),
        "write_s": round(sum(f.get("write_s") or 0.0 for f in written or ()), 3),
        "worker_cpu_s": round(sum(t.get("cpu_s", 0.0) for t in tasks), 3),
        "list_s": round(timing.get("list_s", 0.0), 3),
        "match_write_s": round(timing.get("match_write_s", 0.0), 3),
        "batch_s": round(now - t0, 3),
        "latency_s": _quantiles(latencies),
    }


#: How Spark names a file of its part of the checkpoint that it cannot read.
_SPARK_LOG_FILE = re.compile(r"Failed to read log file (?:file:)?(\S+?)\.?\s+(.*?)(?:\s*SQLSTATE|$)", re.MULTILINE)


def spark_checkpoint_error(error: BaseException) -> RecordError | None:
    """The one line for a Spark failure that is a damaged file of Spark's part of the
    checkpoint (its offsets, commits or sources logs); None for any other failure."""
    match = _SPARK_LOG_FILE.search(str(error))
    if match is None:
        return None
    reason = " ".join(match.group(2).split()) or "damaged"
    return RecordError(f"{match.group(1)}: Spark cannot read this file of its checkpoint ({reason}); {RESTORE}")


def _quantiles(values: list[float]) -> dict:
    if not values:
        return {"min": None, "p50": None, "p99": None, "max": None}
    return {"min": round(values[0], 3), "p50": round(statistics.median(values), 3),
            "p99": round(quantile(values, 0.99), 3), "max": round(values[-1], 3)}


def quantile(values: list[float], q: float) -> float:
    """The `q` quantile of sorted `values` (nearest rank)."""
    return values[min(len(values) - 1, max(0, int(q * len(values) + 0.999999) - 1))]


# ------------------------------------------------------------------ workers


def _warmer(plan: EnginePlan | list[EnginePlan]):
    def run(batches):
        import platform

        import pyarrow as pa
        from pyspark import TaskContext

        for _ in batches:
            pass
        engine, info = engine_at(plan[TaskContext.get().partitionId() % len(plan)]
                                 if isinstance(plan, list) else plan)
        yield pa.RecordBatch.from_arrays(
            [pa.array([f"{platform.node()}:{os.getpid()}"]), pa.array([info["load_s"]]),
             pa.array([info["op"]], pa.int64())], ["worker", "load_s", "op"])
    return run


def _compactor(plan: EnginePlan):
    def run(batches):
        import pyarrow as pa

        for _ in batches:
            pass
        engine, _ = engine_at(plan)
        yield pa.RecordBatch.from_arrays([pa.array([engine.to_bytes()], pa.binary())], ["index"])
    return run


def crash_point(point: str, batch_id: int | str) -> None:
    """Kill this driver and its JVM (SIGKILL to the process group) at `point` of a batch (the
    batch job's: ``written:job``), when `CRASH_ENV` asks for it: the crash tests' way to stop at
    an exact moment."""
    want = os.environ.get(CRASH_ENV)
    if want and want == f"{point}:{batch_id}":
        import signal

        log.warning("%s=%s: killing the driver now", CRASH_ENV, want)
        logging.shutdown()
        os.killpg(os.getpgid(0), signal.SIGKILL)

