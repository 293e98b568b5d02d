"""The batch job and the stream on a real Spark standalone cluster, a worker killed under each.

One cluster serves the module (`rtf.spark.cluster.StandaloneCluster`: a
master and two workers of one core, started from the PySpark installation
on 127.0.0.1, as ``rtf spark cluster`` starts them). The jobs run as a user
runs them, ``python -m rtf.spark ... --master spark://...``, each in a
process of its own. A worker is killed with its executor and Python workers
(SIGKILL) while a task of the job runs -- the first Python worker to start
matching a partition kills the worker it runs under (`RTF_SPARK_FAULT_FILE`
holding ``worker``) -- and the answer must be that of ``rtf match``, line
for line, nothing lost or twice.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest

from tests import spark_jvm
from tests.test_spark import NO_SPARK, spark_test
from tests.test_spark_stream import _drop, _wait_for, drops, expected_lines  # noqa: F401 (drops: a fixture)

#: Spark daemons and jobs: out of the quick subset (pytest -m 'not slow').
pytestmark = pytest.mark.slow
DUMPS = ("nordlys.nt.gz", "esbm.nt", "db8k.nt.bz2")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    if NO_SPARK:
        pytest.skip(NO_SPARK)
    from rtf.spark.cluster import StandaloneCluster

    with StandaloneCluster(workers=2, cores=1, memory="1g", folder=tmp_path_factory.mktemp("cluster")) as c:
        yield c


def run_job(cluster, fault: Path, *argv, timeout=600):
    """``python -m rtf.spark ARGV --master spark://...`` with small executors; a worker dies when
    `fault` exists."""
    command = [sys.executable, "-m", "rtf.spark", *map(str, argv), "--master", cluster.master_url,
               "--conf", "spark.executor.memory=512m", "--conf", "spark.ui.enabled=false",
               "--conf", f"spark.executorEnv.RTF_SPARK_FAULT_FILE={fault}",
               # the executors' JVMs start as quickly as the driver's (tests/conftest.py)
               "--conf", f"spark.executor.extraJavaOptions={spark_jvm.jvm_options()}"]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, start_new_session=True)


def _kill_a_worker_when_matching(fault: Path) -> None:
    fault.write_text("worker\n")


# (first: it runs before the module's cluster starts)
def test_rtf_spark_cluster_starts_and_stops_a_cluster(tmp_path):
    """The command a user runs for a trial: the master's URL on stdout, all stopped on SIGTERM."""
    if NO_SPARK:
        pytest.skip(NO_SPARK)
    import signal

    import psutil

    from rtf.spark.cluster import free_port

    proc = subprocess.Popen([sys.executable, "-m", "rtf.spark", "cluster", "--workers", "1", "--port",
                             str(free_port()), "--ui-port", str(free_port()), "--folder", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("spark://127.0.0.1:"), proc.stderr.read() if proc.poll() is not None else url
        daemons = psutil.Process(proc.pid).children(recursive=True)
        assert len(daemons) >= 2  # a master, a worker
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    assert not [d for d in daemons if d.is_running() and d.status() != psutil.STATUS_ZOMBIE]
    assert (tmp_path / "master.log").exists()


@spark_test
def test_the_batch_job_on_the_cluster_survives_a_killed_worker(cluster, drops, tmp_path):
    """With ``--shared-index`` (one job for both, to keep the suite's cost): each executor's daemon
    (`rtf.spark.daemon`) maps the index before it forks, and every task's engine is its daemon's,
    none loaded -- also the tasks run again on the executor that is left."""
    import json

    files, index = drops
    dumps = [files[name] for name in DUMPS]
    fault = tmp_path / "fault"
    _kill_a_worker_when_matching(fault)
    out = tmp_path / "out"
    run = run_job(cluster, fault, "replay", "--dump", *dumps, "--index", index, "--output-format", "jsonl",
                  "--partitions", "4", "--output", out, "--shared-index")
    assert run.returncode == 0, run.stderr[-3000:]
    assert not fault.exists()  # a worker was killed mid-batch
    assert sum(proc.poll() is not None for proc in cluster.workers) == 1  # and stays dead
    assert f"master {cluster.master_url}" in run.stderr
    metrics = json.loads((out / "_metrics.json").read_text())
    tasks = metrics["partitions"]
    assert len(tasks) == 4 and all(t["engine_shared"] and t["engine_load_s"] == 0 for t in tasks)
    assert metrics["index"]["shared"] == 4 and metrics["index"]["loads"] == 0
    lines = sorted(line for part in sorted(out.glob("part-*")) for line in part.read_text().splitlines())
    assert len(lines) > 100 and lines == sorted(expected_lines(index, dumps))  # rtf match's lines
    assert cluster.revive() == 1


@spark_test
def test_the_stream_on_the_cluster_survives_a_killed_worker(cluster, drops, tmp_path):
    """Mid-stream: batch 0 committed, then a worker dies under batch 1; into a Delta table. With
    ``--shared-index``: the starting base reaches each executor as a file of its own (``addFile``,
    named by its content), not as a broadcast through the JVMs (a 1.88 GB one ran the driver's
    out of heap), and the warm-up says that no worker had to build."""
    pytest.importorskip("deltalake")
    from rtf.spark.delta_output import DeltaOutput
    from tests.test_spark_delta import check_delta_batches

    files, index = drops
    inbox, table, fault = tmp_path / "in", str(tmp_path / "table"), tmp_path / "fault"
    inbox.mkdir()
    _drop(inbox, files[DUMPS[0]])

    def feed():
        _wait_for(lambda: DeltaOutput(table).batch_ids() == [0], timeout=300)
        _kill_a_worker_when_matching(fault)
        for name in DUMPS[1:]:
            _drop(inbox, files[name])

    feeder = threading.Thread(target=feed)
    feeder.start()
    run = run_job(cluster, fault, "stream", "--input", inbox, "--output", table, "--output-format", "delta",
                  "--checkpoint", tmp_path / "ckpt", "--index", index, "--max-files-per-trigger", "1",
                  "--trigger-seconds", "0.5", "--stop-when-idle", "3", "--shared-index")
    feeder.join()
    assert run.returncode == 0, run.stderr[-3000:]
    assert "warm-up: 0 Python worker(s) built the engine" in run.stderr
    assert len({f.name for f in cluster.folder.rglob("stream-base-*.idx")}) == 1  # in the executors' folders
    assert not fault.exists()  # a worker was killed mid-stream
    assert "task(s) ran again after a failed attempt" in run.stderr
    counts = check_delta_batches(table, index)
    assert set(counts.values()) == {1}  # nothing twice
    assert counts == Counter(expected_lines(index, [files[name] for name in DUMPS]))  # nothing lost
    assert DeltaOutput(table).batch_ids() == [0, 1, 2]
    assert cluster.revive() == 1


@pytest.mark.soak  # deselected by default (pyproject.toml): pytest -m soak; its own cluster, minutes
def test_the_cluster_quick_start_of_the_docs_runs_as_written(tmp_path):
    """docs/spark.md's lead quick start, its /tmp paths and its ports moved to the test's own."""
    if NO_SPARK:
        pytest.skip(NO_SPARK)
    pytest.importorskip("deltalake")
    import os

    from rtf.spark.cluster import free_port

    root = Path(__file__).resolve().parents[1]
    text = (root / "docs" / "spark.md").read_text()
    section = text[text.index("**Quick start: a standalone cluster and a Delta table.**"):]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0].replace("/tmp/", f"{tmp_path}/")
    block = block.replace("7077", str(free_port())).replace("8080", str(free_port()))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    run = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=root, env=env, capture_output=True,
                         text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.splitlines()[-2:] == [f"{tmp_path}/news-table 3", f"{tmp_path}/news-stream 3"]
