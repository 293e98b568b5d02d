"""The Delta Lake output of the stream and the batch job (rtf.spark.delta_output), on disk and on S3.

S3 is moto's server mode on 127.0.0.1 (a test extra), reached through the
standard ``AWS_*`` variables as a user's deployment would set them. Every
batch of the table must hold exactly the matches of its files as
``rtf match`` writes them (`expected_lines`, with the queries log's
operations up to the batch's pin), each once, whatever the kills: the
driver is SIGKILLed (with its JVM) after a batch's files are written into
the table's folder but before its commit, and after its commit but before
Spark records it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.test_spark import NO_SPARK, local_session, spark_test
from tests.test_spark_stream import _drop, check_manifests, drops, expected_lines  # noqa: F401 (drops: a fixture)

ROOT = Path(__file__).resolve().parents[1]
BUCKET = "rtf-delta-tests"

#: Spark and a local S3 server: out of the quick subset (pytest -m 'not slow').
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """moto's S3 server on a free port of 127.0.0.1; this process's AWS_* variables point at it
    (the Spark session and the jobs' processes inherit them). Yields the bucket's URI."""
    if NO_SPARK:
        pytest.skip(NO_SPARK)
    pytest.importorskip("deltalake")
    pytest.importorskip("moto")
    import boto3

    from rtf.spark.cluster import free_port

    port = free_port()
    log = open(tmp_path_factory.mktemp("moto") / "moto.log", "wb")
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    settings = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1",
                "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ALLOW_HTTP": "true"}
    kept = {key: os.environ.get(key) for key in settings}
    os.environ.update(settings)
    try:
        deadline = time.time() + 60
        while True:
            try:
                boto3.client("s3").create_bucket(Bucket=BUCKET)
                break
            except Exception:  # noqa: BLE001 (not listening yet)
                if time.time() > deadline or server.poll() is not None:
                    raise
                time.sleep(0.3)
        yield f"s3://{BUCKET}"
    finally:
        server.kill()
        server.wait()
        log.close()
        for key, value in kept.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="module")
def spark(s3):
    session = local_session("local[2,2]", "rtf delta tests",
                            **{"spark.sql.execution.arrow.maxRecordsPerBatch": "4"})
    yield session
    session.stop()


def check_delta_batches(location: str, index: Path, ops=()) -> Counter:
    """Every batch committed in the table holds exactly the matches of its files at its pin
    (`rtf match`'s lines); the count of each line over the whole table."""
    from deltalake import DeltaTable

    from rtf.spark.delta_output import DeltaOutput

    manifests = DeltaOutput(location).manifests()
    assert sorted(m["batch"] for m in manifests) == sorted({m["batch"] for m in manifests})  # each once
    return check_manifests(DeltaTable(location).to_pyarrow_table().to_pylist(), manifests, index, ops)


def run_stream(root: Path, output: str, *extra, env=None, timeout=300):
    """``python -m rtf.spark stream --output-format delta`` in a process group of its own."""
    argv = [sys.executable, "-m", "rtf.spark", "stream", "--input", str(root / "in"), "--output", output,
            "--output-format", "delta", "--checkpoint", str(root / "ckpt"), "--max-files-per-trigger", "1",
            "--trigger-seconds", "0.5", "--stop-when-idle", "2", "--no-warm-up",
            "--conf", "spark.ui.enabled=false", *map(str, extra)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, start_new_session=True,
                          env={**os.environ, **(env or {})})


def _table_files(location: str) -> tuple[set[str], set[str]]:
    """(the data files in the table's folder, those its log names)."""
    import pyarrow.fs as pafs
    from deltalake import DeltaTable

    fs, root = pafs.FileSystem.from_uri(location)
    present = {info.base_name for info in fs.get_file_info(pafs.FileSelector(root))
               if info.base_name.endswith(".parquet")}
    return present, {uri.rsplit("/", 1)[-1] for uri in DeltaTable(location).file_uris()}


@spark_test
def test_stream_on_s3_killed_mid_commit_commits_each_batch_once(s3, drops, tmp_path):
    from rtf.spark.stream import CRASH_ENV

    files, index = drops
    (tmp_path / "in").mkdir()
    for name in ("nordlys.nt.gz", "esbm.nt", "db8k.nt.bz2"):
        _drop(tmp_path / "in", files[name])
    table = f"{s3}/{tmp_path.name}/matches"
    # Killed after batch 1's files are in the table's folder, before its commit: the table has
    # batch 0 only, and a file that no reader sees.
    run = run_stream(tmp_path, table, "--index", index, env={CRASH_ENV: "written:1"})
    assert run.returncode == -signal.SIGKILL, run.stderr[-3000:]
    present, named = _table_files(table)
    assert named < present and len(present - named) == 1
    from rtf.spark.delta_output import DeltaOutput

    assert DeltaOutput(table).batch_ids() == [0]
    # Killed after batch 1's commit, before Spark recorded it: the restart skips it.
    run = run_stream(tmp_path, table, env={CRASH_ENV: "committed:1"})
    assert run.returncode == -signal.SIGKILL, run.stderr[-3000:]
    final = run_stream(tmp_path, table, "--metrics", tmp_path / "metrics.jsonl")
    assert final.returncode == 0, final.stderr[-3000:]
    assert "batch 1: already committed" in final.stderr
    counts = check_delta_batches(table, index)
    assert set(counts.values()) == {1}  # nothing twice
    assert counts == Counter(expected_lines(index, [files[n] for n in ("nordlys.nt.gz", "esbm.nt",
                                                                        "db8k.nt.bz2")]))  # nothing lost
    assert DeltaOutput(table).batch_ids() == [0, 1, 2]
    assert [json.loads(line)["batch"] for line in (tmp_path / "metrics.jsonl").read_text().splitlines()] == [2]
    # A table, for any Delta reader: pandas through deltalake, and the log's transactions.
    from deltalake import DeltaTable

    dt = DeltaTable(table)
    assert len(dt.to_pandas()) == sum(counts.values())
    stream = json.loads(dt.history(1)[0]["rtf"])["stream"]
    assert dt.transaction_version(stream) == 2


@spark_test
def test_stream_with_a_queries_log_into_a_local_table(spark, drops, tmp_path):
    """In-process, on a local table: batches pinned to the log's operations, as with Parquet."""
    import threading

    from rtf.spark.delta_output import DeltaOutput
    from rtf.spark.oplog import QueriesLog
    from rtf.spark.stream import StreamConfig, StreamJob
    from tests.test_spark_stream import EVERY_TYPED, _wait_for

    files, index = drops
    inbox, table = tmp_path / "in", str(tmp_path / "table")
    inbox.mkdir()
    qlog = QueriesLog(tmp_path / "qlog", create=True)
    config = StreamConfig(input=str(inbox), output=table, checkpoint=str(tmp_path / "ckpt"), index=str(index),
                          queries_log=str(qlog.path), trigger_seconds=0.5, max_files_per_trigger=1,
                          stop_when_idle=3, output_format="delta")

    def feed():
        _drop(inbox, files["nordlys.nt.gz"])
        _wait_for(lambda: DeltaOutput(table).batch_ids() == [0])
        qlog.register(EVERY_TYPED, "typed")
        _drop(inbox, files["db8k.nt.bz2"])

    feeder = threading.Thread(target=feed)
    feeder.start()
    result = StreamJob(spark, config).run()
    feeder.join()
    assert result["committed"] == [0, 1]
    counts = check_delta_batches(table, index, qlog.read())
    assert set(counts.values()) == {1}
    assert [m["op"] for m in DeltaOutput(table).manifests()] == [0, 1]
    assert any(json.loads(line)["query"] == "typed" for line in counts)
    # The same stream's restart beside another stream's table is refused in one line.
    from rtf.spark.dumps import ReplayError
    from rtf.spark.stream import check_config, check_checkpoint

    other = StreamConfig(input=str(inbox), output=table, checkpoint=str(tmp_path / "new-ckpt"),
                         index=str(index), output_format="delta")
    with pytest.raises(ReplayError, match="is new: restart with the --checkpoint that wrote them"):
        check_checkpoint(other, *check_config(other))


@spark_test
def test_replay_into_a_delta_table_on_s3_once_per_job(spark, s3, drops, tmp_path, capsys):
    from deltalake import DeltaTable

    from rtf.spark.arrow_matches import row_line
    from rtf.spark.replay_command import main as replay_main

    files, index = drops
    dumps = [files[name] for name in ("nordlys.nt.gz", "esbm.nt", "db8k.nt.bz2")]
    table = f"{s3}/{tmp_path.name}/replay"
    argv = ["--dump", *map(str, dumps), "--index", str(index), "--output", table, "--output-format", "delta",
            "--partitions", "3", "--quiet"]
    assert replay_main(argv, spark=spark) == 0
    dt = DeltaTable(table)
    assert sorted(row_line(r) for r in dt.to_pyarrow_table().to_pylist()) == sorted(expected_lines(index, dumps))
    assert dt.version() == 1 and json.loads(dt.history(1)[0]["rtf"])["metrics"]["matches"] > 100
    assert replay_main(argv, spark=spark) == 0  # the same job again: already committed, nothing written
    assert DeltaTable(table).version() == 1
    other = [*argv[:argv.index("--index")], "--queries", str(tmp_path / "none.jsonl"), *argv[argv.index("--output"):]]
    (tmp_path / "none.jsonl").write_text("")
    capsys.readouterr()
    assert replay_main([*other, "--algorithm", "rtfs"], spark=spark) == 1  # another job: refused
    assert "holds the matches of another run; choose a new --output or pass --overwrite" in capsys.readouterr().err


@spark_test
def test_the_batch_job_killed_mid_commit_on_s3_commits_once_when_run_again(s3, drops, tmp_path):
    """Killed (driver and JVM) after its tasks wrote the files, before the commit: no reader sees
    a match; the same job run again commits every match once."""
    from deltalake import DeltaTable

    from rtf.spark.arrow_matches import row_line
    from rtf.spark.stream import CRASH_ENV

    files, index = drops
    dumps = [files[name] for name in ("nordlys.nt.gz", "esbm.nt", "db8k.nt.bz2")]
    table = f"{s3}/{tmp_path.name}/job"
    argv = [sys.executable, "-m", "rtf.spark", "replay", "--dump", *map(str, dumps), "--index", str(index),
            "--output", table, "--output-format", "delta", "--master", "local[2,2]", "--partitions", "3",
            "--conf", "spark.ui.enabled=false", "--quiet"]
    killed = subprocess.run(argv, capture_output=True, text=True, timeout=300, start_new_session=True,
                            env={**os.environ, CRASH_ENV: "written:job"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    present, named = _table_files(table)
    assert present and not named and DeltaTable(table).to_pyarrow_table().num_rows == 0
    again = subprocess.run(argv, capture_output=True, text=True, timeout=300, start_new_session=True)
    assert again.returncode == 0, again.stderr[-3000:]
    dt = DeltaTable(table)
    assert sorted(row_line(r) for r in dt.to_pyarrow_table().to_pylist()) == sorted(expected_lines(index, dumps))
    assert dt.version() == 1  # the table's creation, then the one commit
