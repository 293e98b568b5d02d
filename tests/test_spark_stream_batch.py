"""A micro-batch at engine speed: one Spark job, the Parquet files written where the matches are made.

The stream's handler used to run two Spark jobs a batch (one listing the
batch's files, one matching) and to send every match row back to the JVM to
be encoded as Parquet there. Now the matching tasks report the files they
read and write their own Parquet file, named by their partition
(`rtf.spark.batch_output.part_writer`); these tests hold the stream to that,
and to the output's equality with ``rtf match``.
"""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.test_spark import spark_test
from tests.test_spark_stream import _check_batches, _drop, drops, fault_file, spark  # noqa: F401 (fixtures)

pytestmark = pytest.mark.slow


def _rows(n: int) -> pa.RecordBatch:
    from rtf.io.arrow_matches import MatchRows
    from rtf.engine import Match

    rows = MatchRows()
    for i in range(n):
        rows.add(f"http://ex/p{i}", [Match(f"q{i}", "ann", frozenset({(("s", f"<http://ex/p{i}>"),)}))])
    return rows.flush()


def test_a_task_writes_one_file_named_by_its_partition_and_a_failed_one_leaves_it_hidden(tmp_path):
    from rtf.spark.arrow_matches import arrow_match_schema
    from rtf.spark.batch_output import BatchOutput, part_writer

    written = list(part_writer(str(tmp_path), arrow_match_schema)(iter([_rows(3), _rows(2)])))
    assert [b.to_pylist() for b in written] == [[{"path": "part-00000.snappy.parquet",
                                                  "size": os.path.getsize(tmp_path / "part-00000.snappy.parquet"),
                                                  "rows": 5, "write_s": written[0].column("write_s")[0].as_py()}]]
    assert pq.read_table(tmp_path / "part-00000.snappy.parquet").to_pylist() \
        == _rows(3).to_pylist() + _rows(2).to_pylist()

    def broken():
        yield _rows(2)
        raise RuntimeError("the Python worker dies")

    again = tmp_path / "again"
    again.mkdir()
    with pytest.raises(RuntimeError):
        list(part_writer(str(again), arrow_match_schema)(broken()))
    assert [n for n in os.listdir(again) if not n.startswith(".")] == []  # nothing a reader sees

    # The commit drops what a killed attempt left, and publishes the rest.
    out = BatchOutput(tmp_path / "out")
    out.prepare()

    def write(folder):
        os.makedirs(folder)
        for name in os.listdir(again):
            os.rename(again / name, os.path.join(folder, name))
        list(part_writer(folder, arrow_match_schema)(iter([_rows(1)])))

    assert out.commit(0, write, lambda: {"batch": 0, "stream": "s", "files": []})
    assert sorted(os.listdir(out.path(0))) == ["_rtf_batch.json", "part-00000.snappy.parquet"]


@spark_test
def test_a_batch_is_one_spark_job_whose_tasks_write_parquet_and_list_the_files(spark, drops, tmp_path):
    from rtf.spark.batch_output import BatchOutput
    from rtf.spark.stream import StreamConfig, StreamJob

    files, index = drops
    inbox, output = tmp_path / "in", tmp_path / "out"
    inbox.mkdir()
    for path in files.values():  # a backlog: one micro-batch of every file
        _drop(inbox, path)
    config = StreamConfig(input=str(inbox), output=str(output), checkpoint=str(tmp_path / "ckpt"),
                          index=str(index), trigger_seconds=0.5, stop_when_idle=3, warm_up=False,
                          keep_warm=False)
    jobs = spark.sparkContext._jsc.sc().statusStore().jobsList(None).size()
    assert StreamJob(spark, config).run()["committed"] == [0]
    assert spark.sparkContext._jsc.sc().statusStore().jobsList(None).size() - jobs == 1

    assert set(_check_batches(output, index, ()).values()) == {1}  # rtf match's, each once
    (manifest,) = BatchOutput(output).manifests()
    assert sorted((f["path"].removeprefix("file:"), f["bytes"]) for f in manifest["files"]) \
        == sorted((str(inbox / p.name), p.stat().st_size) for p in files.values())
    names = sorted(os.listdir(BatchOutput(output).path(0)))
    assert names[0] == "_rtf_batch.json" and names[1:] == [f"part-{i:05d}.snappy.parquet"
                                                           for i in range(manifest["tasks"])]
    for key in ("input_s", "read_s", "match_s", "rows_s", "write_s", "worker_cpu_s"):
        assert manifest[key] >= 0, key
    assert manifest["list_s"] == 0  # no job listed the files


@spark_test
def test_the_warm_up_runs_a_batchs_path_but_not_the_fault_point_of_the_tests(spark, drops, fault_file, tmp_path):
    """The warm-up matches a file made in memory, as a batch would; the tests' fault point (a worker
    kills itself at its first publication) is for the batches, not for it."""
    from rtf.spark.session import use_worker_python
    from rtf.spark.stream import StreamConfig, StreamJob

    files, index = drops
    (tmp_path / "in").mkdir()
    job = StreamJob(spark, StreamConfig(input=str(tmp_path / "in"), output=str(tmp_path / "out"),
                                        checkpoint=str(tmp_path / "ckpt"), index=str(index)))
    use_worker_python(spark.sparkContext)
    job.prepare()
    fault_file.write_text("")
    try:
        report = job.warm_workers()
        assert fault_file.exists()
    finally:
        fault_file.unlink(missing_ok=True)
        job.state.close()
    assert job._batch_path_warm and report["tasks"] == spark.sparkContext.defaultParallelism


def test_files_and_bytes_per_trigger_are_refused_together_before_spark_starts(tmp_path, capsys):
    from rtf.spark.stream_command import main

    (tmp_path / "in").mkdir()
    code = main(["--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"), "--checkpoint",
                 str(tmp_path / "ck"), "--queries-log", str(tmp_path / "qlog"), "--max-files-per-trigger", "2",
                 "--max-bytes-per-trigger", "1000000"], spark=object())
    assert code == 2
    assert capsys.readouterr().err.strip().endswith(
        "error: give --max-files-per-trigger or --max-bytes-per-trigger, not both")


@spark_test
def test_max_bytes_per_trigger_cuts_a_backlog_into_batches_of_about_that_size(spark, drops, tmp_path):
    from rtf.spark.batch_output import BatchOutput
    from rtf.spark.stream import StreamConfig, StreamJob

    files, index = drops
    inbox, output = tmp_path / "in", tmp_path / "out"
    inbox.mkdir()
    for path in files.values():
        _drop(inbox, path)
    config = StreamConfig(input=str(inbox), output=str(output), checkpoint=str(tmp_path / "ckpt"),
                          index=str(index), trigger_seconds=0.5, stop_when_idle=3, warm_up=False,
                          keep_warm=False, max_bytes_per_trigger=1)  # at least one file a batch
    assert StreamJob(spark, config).run()["committed"] == [0, 1, 2, 3]
    assert [len(m["files"]) for m in BatchOutput(output).manifests()] == [1, 1, 1, 1]
    assert set(_check_batches(output, index, ()).values()) == {1}
