"""The DataFrame API and the streaming job on a real local Spark, against `rtf match`'s answers.

One ``local[2,2]`` SparkSession serves the module (two attempts per task,
so that a killed Python worker is retried). The inputs are small files of
the DBpedia sample as a stream would receive them: gzip, bzip2, plain
N-Triples with bad lines, and N-Quads. The expected answers are those of an
engine loaded from the same saved index, with the queries log's operations
up to each batch's pin applied, reading each file as ``rtf match`` does.
The driver-crash test runs ``spark/stream.py`` in processes of its own and
SIGKILLs them (with their JVM) at each step of a batch.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import io
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from rtf.io import datasets
from tests.test_spark import NO_SPARK, _file, local_session, spark_test
from tests.test_spark import _head_publications as _head
from tests.test_stream_checkpoint import EX, _index_bytes, argv, stream_main

ROOT = Path(__file__).resolve().parents[1]
STREAM = ROOT / "spark" / "stream.py"
TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
EVERY_TYPED = f"SELECT ?s WHERE {{ ?s {TYPE} ?c }}"


@pytest.fixture(scope="module")
def fault_file(tmp_path_factory):
    return tmp_path_factory.mktemp("fault") / "kill-one-worker"


@pytest.fixture(scope="module")
def spark(fault_file):
    session = local_session("local[2,2]", "rtf stream tests", **{
        "spark.sql.execution.arrow.maxRecordsPerBatch": "4",
        # The workers kill themselves when this file exists (see test_a_killed_worker...).
        "spark.executorEnv.RTF_SPARK_FAULT_FILE": str(fault_file)})
    yield session
    session.stop()


@pytest.fixture(scope="module")
def drops(tmp_path_factory):
    """Files as a stream receives them (name -> path), and a saved index."""
    if NO_SPARK:
        pytest.skip(NO_SPARK)
    from rtf.bench.workload import Mix, generate_queries
    from rtf.engine import Engine
    from rtf.io.reader import read_publications

    base = tmp_path_factory.mktemp("drops")
    files = {}
    files["nordlys.nt.gz"] = base / "nordlys.nt.gz"
    shutil.copy(_file("nordlys"), files["nordlys.nt.gz"])
    files["esbm.nt"] = base / "esbm.nt"
    with gzip.open(_file("esbm"), "rt", encoding="utf-8") as f:
        files["esbm.nt"].write_text(f.read() + "this line is not a triple\n", encoding="utf-8")
    files["db8k.nt.bz2"] = base / "db8k.nt.bz2"
    with bz2.open(files["db8k.nt.bz2"], "wt", encoding="utf-8") as f:
        f.writelines(_head(_file("db8k28"), 150))
    files["abstracts.nq"] = base / "abstracts.nq"
    files["abstracts.nq"].write_text(
        "".join(line.rstrip(" .\n") + " <http://ex.org/graph> .\n" for line in _head(_file("ml1m"), 40)),
        encoding="utf-8")
    pubs = [p for path in files.values() for p in read_publications(path, skip_invalid=True)]
    engine = Engine("rtfs", taxonomy=datasets.dbpedia_ontology())
    records = generate_queries(pubs, 120, seed=11, mix=Mix.all_operators(0.5), taxonomy=None)
    records += generate_queries(pubs, 40, seed=12, mix=Mix(ft_pr=0.8), prefix="h")
    for r in records:
        engine.register(r["query"], r["id"], r["subscriber"])
    index = base / "q.idx"
    engine.save(index)
    return files, index


def expected_lines(index: Path, files, ops=(), pin: int = 0) -> list[str]:
    """`rtf match --index IDX --skip-invalid FILES` with the operations up to `pin` applied."""
    from rtf.engine import Engine
    from rtf.io.output import match_line
    from rtf.io.reader import read_publications
    from rtf.spark.oplog import apply_operation

    engine = Engine.load(index)
    for n, op in ops:
        if n <= pin:
            assert apply_operation(engine, op) is None
    return [match_line(p.id, m) for f in files for p in read_publications(f, skip_invalid=True)
            for m in engine.match(p)]


from rtf.spark.arrow_matches import row_line  # noqa: E402 (the lines of match rows)

#: Spark, rtf serve processes or a browser: out of the quick subset (pytest -m 'not slow').
pytestmark = pytest.mark.slow


def _binary_files(spark, paths):
    return spark.read.format("binaryFile").load([str(p) for p in paths])


# ---------------------------------------------------------- DataFrame API


@spark_test
def test_match_publications_gives_the_matches_of_rtf_match(spark, drops):
    from rtf.spark import match_publications

    files, index = drops
    expected = sorted(expected_lines(index, files.values()))
    assert len(expected) > 200
    docs = _binary_files(spark, files.values())
    lines = [r.value for r in match_publications(docs, index, lines=True).collect()]
    assert sorted(lines) == expected  # byte for byte, as rtf match writes them
    matches = match_publications(docs, index.read_bytes())
    assert matches.schema.simpleString() == ("struct<publication:string,query:string,subscriber:string,"
                                             "bindings:array<map<string,string>>,triples:array<array<string>>>")
    # Through Arrow (as Parquet readers do): a map keeps its variables in projection order
    # (``collect()`` would make Java HashMaps of them, in hash order).
    assert sorted(map(row_line, matches.toArrow().to_pylist())) == expected
    # In 3 query partitions of the index (each task one partition's part file): the same lines.
    parted = match_publications(docs, index, lines=True, query_partitions=3)
    assert sorted(r.value for r in parted.collect()) == expected


@spark_test
def test_the_sessions_jvm_runs_with_the_suites_options(spark):
    """tests/spark_jvm.py's quick-starting options (the class archive's among them, once the
    run has made it) reach the JVM of a session a test starts; a SPARK_SUBMIT_OPTS set before
    the run is kept instead."""
    from tests import spark_jvm

    runtime = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    assert set(spark_jvm.jvm_options().split()) <= set(runtime.getInputArguments())


@spark_test
def test_match_publications_on_a_streaming_dataframe(spark, drops, tmp_path):
    """Any pipeline's stream: a file source, Spark's own Parquet sink, one trigger of what is there."""
    from rtf.spark import match_publications
    from rtf.spark.stream import BINARY_FILE_SCHEMA

    files, index = drops
    inbox = tmp_path / "in"
    inbox.mkdir()
    for name in ("nordlys.nt.gz", "abstracts.nq"):
        _drop(inbox, files[name])
    source = spark.readStream.format("binaryFile").schema(BINARY_FILE_SCHEMA).load(str(inbox))
    query = (match_publications(source, index).writeStream.format("parquet")
             .option("path", str(tmp_path / "out")).option("checkpointLocation", str(tmp_path / "ckpt"))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    rows = spark.read.parquet(str(tmp_path / "out")).toArrow().to_pylist()
    assert sorted(map(row_line, rows)) == sorted(expected_lines(index, [files["nordlys.nt.gz"],
                                                                         files["abstracts.nq"]]))


@spark_test
def test_triple_rows_are_grouped_by_subject(spark, drops):
    from rtf.io.reader import read_publications
    from rtf.spark import match_publications

    files, index = drops
    paths = [files["nordlys.nt.gz"], files["db8k.nt.bz2"]]
    triples = [t for p in paths for pub in read_publications(p) for t in pub.triples]
    df = spark.createDataFrame(triples[::-1], "subject string, predicate string, object string")
    got = sorted(r.value for r in match_publications(df, index, lines=True).collect())
    assert got == sorted(expected_lines(index, paths))


@spark_test
def test_each_worker_builds_its_engine_once_for_every_later_job(spark, drops):
    from rtf.spark.dataframe import collected, match_publications, task_metrics

    files, index = drops
    docs = _binary_files(spark, files.values()).repartition(4)
    runs = []
    for _ in range(3):
        acc = task_metrics(spark.sparkContext)
        match_publications(docs, index, metrics=acc).count()
        runs.append(collected(acc))
    workers = {t["worker"] for run in runs for t in run}
    loads = [t for run in runs for t in run if t["load_s"] > 0]
    assert len(loads) <= len(workers) <= 2  # at most once per Python worker, over three jobs
    assert all(t["load_s"] == 0 for t in runs[-1])
    assert sum(t["publications"] for t in runs[0]) == 98 + 100 + 150 + 40
    assert sum(t["bad_lines"] for t in runs[0]) == 1


@spark_test
def test_inputs_it_cannot_read_are_refused_in_one_line(spark, drops, tmp_path):
    from rtf.errors import IndexFileError, RtfError
    from rtf.spark import match_publications

    _, index = drops
    numbers = spark.range(3)
    for df, kwargs, message in [
        (numbers, {}, "say which column holds the RDF text"),
        (numbers, {"column": "id"}, "must be string or binary"),
        (numbers, {"column": "text"}, "no column 'text'"),
        (spark.createDataFrame([("x",)], "value string"), {"format": "xyz"}, "xyz"),
    ]:
        with pytest.raises(RtfError, match=message):
            match_publications(df, index, **kwargs)
    broken = tmp_path / "broken.idx"
    broken.write_bytes(index.read_bytes()[:-10])
    with pytest.raises(IndexFileError, match="truncated"):
        match_publications(spark.createDataFrame([("x",)], "value string"), broken)
    with pytest.raises(TypeError, match="Engine.to_bytes"):
        match_publications(spark.createDataFrame([("x",)], "value string"), 42)


@spark_test
def test_a_killed_worker_is_retried_and_the_answer_is_unchanged(spark, drops, fault_file):
    from rtf.spark.dataframe import collected, match_publications, task_metrics

    files, index = drops
    fault_file.touch()  # the first worker to start matching a partition SIGKILLs itself
    acc = task_metrics(spark.sparkContext)
    docs = _binary_files(spark, files.values())
    got = sorted(r.value for r in match_publications(docs, index, lines=True, metrics=acc).collect())
    assert not fault_file.exists()  # a worker did die
    assert any(t["attempt"] == 1 for t in collected(acc))  # and its task ran again
    assert got == sorted(expected_lines(index, files.values()))


# ----------------------------------------------------------------- stream


def _drop(folder: Path, source: Path, name: str | None = None) -> None:
    """Drop a file into a watched folder as a producer should: whole, by a rename."""
    name = name or source.name
    shutil.copy(source, folder / f".{name}.part")
    os.rename(folder / f".{name}.part", folder / name)


def _wait_for(condition, timeout: float = 120.0) -> None:
    deadline = time.time() + timeout
    while not condition():
        if time.time() > deadline:
            raise TimeoutError("the stream did not get there in time")
        time.sleep(0.2)


def _lines_by_batch(output: Path) -> list[tuple[str, int]]:
    from rtf.spark.batch_output import read_matches

    return [(row_line(r), r["batch_id"]) for r in read_matches(output).to_pylist()]


def _check_batches(output: Path, index: Path, ops) -> Counter:
    """Every committed batch holds exactly the matches of its files at its pin; the count of
    each match line over the whole output."""
    from rtf.spark.batch_output import BatchOutput, read_matches

    return check_manifests(read_matches(output).to_pylist(), BatchOutput(output).manifests(), index, ops)


def check_manifests(rows: list[dict], manifests: list[dict], index: Path, ops=()) -> Counter:
    """Each batch's `rows` (``batch_id``) are the matches of its files at its pin, as its manifest
    says; the count of each match line over all `rows`."""
    for manifest in manifests:
        files = [f["path"].removeprefix("file:") for f in manifest["files"]]
        expected = sorted(expected_lines(index, files, ops, manifest["op"]))
        got = sorted(row_line(r) for r in rows if r["batch_id"] == manifest["batch"])
        assert got == expected, f"batch {manifest['batch']} (pinned at {manifest['op']})"
        assert manifest["matches"] == len(expected)
    return Counter(row_line(r) for r in rows)


@spark_test
def _stream_with_a_log(tmp_path, index, **settings):
    """An inbox, an output folder, a queries log holding one registration ("airlines", of
    subscriber ann) and a stream's settings over them (one file a batch, a compaction every
    two operations), `settings` added."""
    from rtf.spark.oplog import QueriesLog
    from rtf.spark.stream import StreamConfig

    inbox, output = tmp_path / "in", tmp_path / "out"
    inbox.mkdir()
    qlog = QueriesLog(tmp_path / "qlog", create=True)
    qlog.register(EVERY_TYPED.replace("?c", "<http://dbpedia.org/ontology/Airline>"), "airlines", "ann")
    config = StreamConfig(input=str(inbox), output=str(output), checkpoint=str(tmp_path / "ckpt"),
                          index=str(index), queries_log=str(qlog.path), trigger_seconds=0.5,
                          max_files_per_trigger=1, compact_every=2, **settings)
    return inbox, output, qlog, config


def test_stream_follows_the_queries_log_from_the_batch_that_saw_it(spark, drops, tmp_path):
    from rtf.io.reader import read_publications
    from rtf.spark.batch_output import BatchOutput
    from rtf.spark.stream import StreamJob

    files, index = drops
    inbox, output, qlog, config = _stream_with_a_log(tmp_path, index, stop_when_idle=4,
                                                     metrics=str(tmp_path / "metrics.jsonl"))
    order = ["nordlys.nt.gz", "esbm.nt", "db8k.nt.bz2", "abstracts.nq"]
    late_files = [files[name] for name in order[2:]]
    # The index's query that matches most in the later files: unregistered mid-stream.
    gone = Counter(json.loads(line)["query"] for line in expected_lines(index, late_files)).most_common(1)[0][0]

    def feed():
        out = BatchOutput(output)
        for name in order[:2]:
            _drop(inbox, files[name])
            _wait_for(lambda: len(out.batch_ids()) >= order.index(name) + 1)
        # While the stream runs: a new query, and one of the index's goes.
        qlog.append([{"op": "register", "id": "typed", "query": EVERY_TYPED},
                     {"op": "unregister", "id": gone}])
        for name in order[2:]:
            _drop(inbox, files[name])

    feeder = threading.Thread(target=feed)
    feeder.start()
    result = StreamJob(spark, config).run()
    feeder.join()
    assert result["committed"] == [0, 1, 2, 3]

    ops = qlog.read()
    counts = _check_batches(output, index, ops)
    assert set(counts.values()) == {1}
    manifests = BatchOutput(output).manifests()
    pins = [m["op"] for m in manifests]
    assert pins[:2] == [1, 1] and pins[2:] == [3, 3]  # the operations count from the batch that saw them
    rows = [(json.loads(line), batch) for line, batch in _lines_by_batch(output)]
    typed = {r["publication"] for r, _ in rows if r["query"] == "typed"}
    late = {p.id for f in late_files for p in read_publications(f) if any(t[1] == TYPE for t in p.triples)}
    assert typed == late and typed  # every typed publication of the later batches, none earlier
    assert {b for r, b in rows if r["query"] == gone} == {0, 1}  # matched until it went
    # Compaction (every 2 operations): the index at operation 3 was saved as a base.
    assert (tmp_path / "ckpt" / "rtf" / "bases" / f"{3:020d}.idx").exists()
    metrics = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [m["batch"] for m in metrics] == [0, 1, 2, 3]
    assert all(m["latency_s"]["p50"] is not None and m["publications"] > 0 for m in metrics)
    assert metrics[1]["bad_lines"] == 1


@spark_test
def test_query_partitions_follow_the_queries_log_and_give_the_same_batches(spark, drops, tmp_path):
    """--query-partitions 3: each batch crossed with the partitions holds the matches of the
    whole index at its pin; the log's registration and removal reach their partitions; a
    compaction saves each partition, and a restart builds from those files."""
    from rtf.spark.batch_output import BatchOutput
    from rtf.spark.index_parts import part_of
    from rtf.spark.stream import StreamJob

    files, index = drops
    inbox, output, qlog, config = _stream_with_a_log(tmp_path, index, stop_when_idle=3, query_partitions=3)
    gone = Counter(json.loads(line)["query"]
                   for line in expected_lines(index, [files["esbm.nt"]])).most_common(1)[0][0]
    assert part_of("typed", 3) != part_of(gone, 3)  # (two partitions' logs at work)

    def feed():
        _drop(inbox, files["nordlys.nt.gz"])
        _wait_for(lambda: BatchOutput(output).batch_ids() == [0])
        qlog.append([{"op": "register", "id": "typed", "query": EVERY_TYPED}, {"op": "unregister", "id": gone}])
        _drop(inbox, files["esbm.nt"])

    feeder = threading.Thread(target=feed)
    feeder.start()
    assert StreamJob(spark, config).run()["committed"] == [0, 1]
    feeder.join()
    parts = sorted(p.name.split("-", 1)[1] for p in (tmp_path / "ckpt" / "rtf" / "parts").iterdir())
    assert parts == [f"{op:020d}.part{g}of3.idx" for op in (0, 3) for g in range(3)]  # split; compacted
    _drop(inbox, files["db8k.nt.bz2"])  # a restart: batch 2 builds from the compaction's files
    assert StreamJob(spark, config).run()["committed"] == [0, 1, 2]

    counts = _check_batches(output, index, qlog.read())
    assert set(counts.values()) == {1}
    manifests = BatchOutput(output).manifests()
    assert [(m["op"], m["base_op"]) for m in manifests] == [(1, 0), (3, 0), (3, 3)]
    assert [m["tasks"] % 3 for m in manifests] == [0, 0, 0]  # every task one partition
    assert manifests[1]["publications"] == len({p.id for p in read_publications_of(files["esbm.nt"])})
    lines = [json.loads(line) for line in counts]
    assert {line["query"] for line in lines} >= {"typed", "airlines"} and gone in {line["query"] for line in lines}


def read_publications_of(path: Path) -> list:
    from rtf.io.reader import read_publications

    return list(read_publications(path, skip_invalid=True))


def _run_stream(tmp_path, *extra, env=None, timeout=240):
    """spark/stream.py in a process group of its own (so that a SIGKILL takes its JVM too)."""
    argv = [sys.executable, str(STREAM), "--input", str(tmp_path / "in"), "--output",
            str(tmp_path / "out"), "--checkpoint", str(tmp_path / "ckpt"),
            "--queries-log", str(tmp_path / "qlog"), "--max-files-per-trigger", "1",
            "--trigger-seconds", "0.5", "--stop-when-idle", "2", "--no-warm-up",
            "--conf", "spark.ui.enabled=false", *map(str, extra)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, start_new_session=True,
                          env={**os.environ, **(env or {})})


@spark_test
def test_driver_killed_at_each_step_then_restarted_gives_each_match_once(drops, tmp_path):
    from rtf.spark.oplog import QueriesLog
    from rtf.spark.stream import CRASH_ENV

    files, index = drops
    (tmp_path / "in").mkdir()
    qlog = QueriesLog(tmp_path / "qlog", create=True)
    for name in files:
        _drop(tmp_path / "in", files[name])

    # Without task retries a worker that dies fails the batch (already pinned), in one clear line.
    fault = tmp_path / "fault"
    fault.touch()
    first = _run_stream(tmp_path, "--index", index, "--master", "local[2]",
                        env={"RTF_SPARK_FAULT_FILE": str(fault)})
    assert first.returncode == 1
    last = first.stderr.strip().splitlines()[-1]
    assert last.startswith("stream.py: error: a Python worker died while running a micro-batch")
    assert "--master 'local[2,2]'" in last
    # A query registered now is not in batch 0, which was pinned before: it is replayed as it was.
    qlog.register(EVERY_TYPED, "typed")

    # A SIGKILL of the driver (and its JVM) after a batch's matches are written, and after
    # one is committed; each time a restart from the checkpoint.
    # One engine, then 2 query partitions, then 3 (`--query-partitions`): the same answers.
    for step, parts in (("written:0", ()), ("committed:1", ("--query-partitions", 2))):
        run = _run_stream(tmp_path, "--index", index, *parts, env={CRASH_ENV: step})
        assert run.returncode == -signal.SIGKILL, (step, run.stderr[-3000:])
        assert f"{CRASH_ENV}={step}" in run.stderr
    final = _run_stream(tmp_path, "--metrics", tmp_path / "metrics.jsonl",  # the checkpoint has the index
                        "--query-partitions", 3)
    assert final.returncode == 0, final.stderr[-3000:]
    assert "no new file" in final.stderr and "batch 1: already committed" in final.stderr

    counts = _check_batches(tmp_path / "out", index, qlog.read())
    assert set(counts.values()) == {1}  # nothing twice
    base = Counter(line for line in counts if json.loads(line)["query"] != "typed")
    assert base == Counter(expected_lines(index, files.values()))  # nothing lost
    typed = {b for line, b in _lines_by_batch(tmp_path / "out") if json.loads(line)["query"] == "typed"}
    assert 0 not in typed and typed
    assert [json.loads(line)["batch"] for line in (tmp_path / "metrics.jsonl").read_text().splitlines()] == [2, 3]
    assert not os.listdir(tmp_path / "out" / "_rtf_tmp")


# ------------------------------------------- a checkpoint lost or damaged (issue 37)


def _drop_triple(folder: Path, name: str) -> None:
    """A file of one triple, whose subject is its name, dropped by a rename."""
    (folder / f".{name}").write_text(f'<{EX}{name}> <{EX}p> "{name}" .\n')
    os.rename(folder / f".{name}", folder / name)


def _publications(out: Path) -> list[str]:
    from rtf.spark.batch_output import read_matches

    return sorted(r["publication"] for r in read_matches(out).to_pylist())


@spark_test
def test_a_stream_restarted_beside_its_output_loses_nothing_or_says_why(spark, tmp_path):
    """Issue 37 item 1 as it was found (a checkpoint lost, a file dropped, a restart: exit 0 and
    the file's matches never written), the way back the refusal gives, and item 2's garbage in
    ``stream.json``; the damages themselves, every one, are tests/test_stream_checkpoint.py's."""
    from rtf.spark.oplog import QueriesLog

    root = tmp_path
    (root / "in").mkdir()
    (root / "q.idx").write_bytes(_index_bytes("q0"))
    QueriesLog(root / "qlog", create=True)

    def run(checkpoint="ck") -> tuple[int, str]:
        err = io.StringIO()
        args = [a.replace(str(root / "ck"), str(root / checkpoint)) for a in argv(root)]
        sigterm = signal.getsignal(signal.SIGTERM)
        try:
            with contextlib.redirect_stderr(err):
                status = stream_main(args + ["--trigger-seconds", "0.2", "--stop-when-idle", "1",
                                             "--no-warm-up", "--no-keep-warm", "--log-level", "WARNING"],
                                     spark=spark)
        finally:
            signal.signal(signal.SIGTERM, sigterm)
        return status, err.getvalue()

    _drop_triple(root / "in", "a.nt")
    assert run()[0] == 0
    shutil.copytree(root / "ck", root / "backup")
    # The checkpoint is lost; a file comes; the stream is restarted.
    shutil.rmtree(root / "ck")
    _drop_triple(root / "in", "b.nt")
    status, err = run()
    assert status == 1 and "is new: restart with the --checkpoint that wrote them" in err, err
    status, err = run(checkpoint="fresh")  # a new checkpoint pointed at the old output
    assert status == 1 and "is new" in err
    assert _publications(root / "out") == [f"{EX}a.nt"]
    # The way back: the checkpoint that wrote the output. Nothing lost, nothing twice.
    shutil.copytree(root / "backup", root / "ck")
    assert run()[0] == 0
    assert _publications(root / "out") == [f"{EX}a.nt", f"{EX}b.nt"]
    # A file of Spark's own part of the checkpoint, damaged: Spark's failure, said as one of ours.
    offsets = root / "ck" / "offsets" / "1"
    kept = offsets.read_bytes()
    offsets.write_text("garbage")
    status, err = run()
    assert status == 1 and err.splitlines()[-1] == (
        f"stream.py: error: {offsets}: Spark cannot read this file of its checkpoint ([MALFORMED_LOG_FILE] "
        "Log file was malformed: failed to read correct log version from garbage.); restore the "
        "checkpoint from a backup, or start a new stream: a new --checkpoint and a new --output"), err
    offsets.write_bytes(kept)
    # Garbage in the state: one line, before Spark starts (issue 37 item 2).
    identity = root / "ck" / "rtf" / "stream.json"
    kept = identity.read_bytes()
    identity.write_text("{garbage")
    status, err = run()
    assert status == 1 and err.splitlines()[-1] + "\n" == f"stream.py: error: {identity}: not JSON (Expecting property name " \
                                  "enclosed in double quotes: line 1 column 2 (char 1)); restore the " \
                                  "checkpoint from a backup, or start a new stream: a new --checkpoint " \
                                  "and a new --output\n"
    identity.write_bytes(kept)
    # A checkpoint older than its output (restored from the backup) whose next batch reads other
    # files than the batch the output holds under that id: refused as the batch comes.
    shutil.rmtree(root / "ck")
    shutil.copytree(root / "backup", root / "ck")
    _drop_triple(root / "in", "c.nt")
    status, err = run()
    last = err.strip().splitlines()[-1]
    assert status == 1 and last.startswith("stream.py: error: ") and "batch_id=1 holds the matches of 1 " \
        "file(s), not of the 2 file(s) of Spark's batch 1" in last, err[-2000:]
    assert _publications(root / "out") == [f"{EX}a.nt", f"{EX}b.nt"]


@spark_test
def test_rtf_spark_stream_runs_on_the_session_of_its_process(spark, tmp_path):
    """The installed commands (issue 40 item 8), `rtf spark queries-log` then `rtf spark
    stream`, run in a process that already runs Spark (a notebook, this test): the stream
    uses that session, follows the log, commits the file, and leaves the session running."""
    from rtf.cli import main as rtf_main
    from tests.test_stream_checkpoint import QUERY

    root = tmp_path
    (root / "in").mkdir()
    (root / "q.idx").write_bytes(_index_bytes("q0"))
    assert rtf_main(["spark", "queries-log", str(root / "qlog"), "register", "--id", "q1",
                     "--query", QUERY]) == 0
    _drop_triple(root / "in", "a.nt")
    sigterm = signal.getsignal(signal.SIGTERM)
    try:
        status = rtf_main(["spark", "stream", *argv(root), "--trigger-seconds", "0.2", "--stop-when-idle", "1",
                           "--no-warm-up", "--no-keep-warm", "--log-level", "WARNING"])
    finally:
        signal.signal(signal.SIGTERM, sigterm)
    assert status == 0
    assert _publications(root / "out") == [f"{EX}a.nt"] * 2  # q0 of the index, q1 of the log
    assert spark.range(1).count() == 1  # still running


@spark_test
@pytest.mark.slow
@pytest.mark.soak  # deselected by default (pyproject.toml): pytest -m soak
def test_driver_killed_at_random_moments_never_loses_or_repeats_a_match(drops, tmp_path):
    """SIGKILL the driver and its JVM at random moments (seeded) while it works through
    many small files, restarting it each time, until it finishes."""
    import random

    from rtf.spark.batch_output import BatchOutput

    files, index = drops
    inbox = tmp_path / "in"
    inbox.mkdir()
    paths = []
    with gzip.open(_file("db8k28"), "rt", encoding="utf-8") as f:
        runs = [list(run) for _, run in itertools.groupby(f, key=lambda line: line.split(" ", 1)[0])]
    for i in range(24):
        path = tmp_path / f"part{i:02d}.nt"
        path.write_text("".join(line for run in runs[i * 40:(i + 1) * 40] for line in run), encoding="utf-8")
        _drop(inbox, path)
        paths.append(path)
    rng = random.Random(25)
    argv = [sys.executable, str(STREAM), "--input", str(inbox), "--output", str(tmp_path / "out"),
            "--checkpoint", str(tmp_path / "ckpt"), "--index", str(index), "--max-files-per-trigger", "2",
            "--trigger-seconds", "0.2", "--stop-when-idle", "3", "--conf", "spark.ui.enabled=false"]
    out = BatchOutput(tmp_path / "out")
    kills, seen = 0, []
    while True:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        if kills < 6:  # a kill at a random moment once the batches have begun
            _wait_for(lambda: len(out.batch_ids()) > len(seen) or proc.poll() is not None)
            time.sleep(rng.uniform(0.0, 2.5))
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                kills += 1
                seen = out.batch_ids()
                continue
        assert proc.wait(timeout=300) == 0
        break
    counts = _check_batches(tmp_path / "out", index, ())
    assert set(counts.values()) == {1}
    assert counts == Counter(expected_lines(index, paths))
    assert out.batch_ids() == list(range(12)) and kills >= 4


@spark_test
@pytest.mark.slow
@pytest.mark.soak  # deselected by default (pyproject.toml): pytest -m soak
def test_the_quick_start_of_the_docs_runs_as_written(tmp_path):
    """docs/spark.md's quick start, its /tmp paths moved into a folder of the test's own."""
    text = (ROOT / "docs" / "spark.md").read_text()
    section = text[text.index("### Quick start"):text.index("### Options")]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0].replace("/tmp/", f"{tmp_path}/")
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    for name in ("examples", "spark"):
        (checkout / name).symlink_to(ROOT / name)
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "data").symlink_to(datasets.data_dir())
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    run = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=checkout, env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    rows = int(run.stdout.strip().splitlines()[-1])
    from rtf.engine import Engine
    from rtf.spark.oplog import apply_operation

    engine = Engine.load(tmp_path / "q.idx")
    apply_operation(engine, {"op": "register", "id": "airlines", "subscriber": "ann",
                             "query": "SELECT ?s WHERE { ?s a <http://dbpedia.org/ontology/Airline> }"})
    from rtf.io.reader import read_publications

    expected = sum(len(engine.match(p)) for p in read_publications(_file("nordlys")))
    without = sum(len(Engine.load(tmp_path / "q.idx").match(p)) for p in read_publications(_file("nordlys")))
    assert rows in (expected, without) and expected > without  # the query came before or after the batch
