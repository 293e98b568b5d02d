#!/usr/bin/env python
"""Measure spark/stream.py: throughput, drop-to-commit latency, and exactly-once under faults.

Cuts the DBpedia sample into files of publications, starts the stream in a
process of its own, drops the files into its input folder one at a time
(whole, by a rename) every --interval seconds, and reads what it committed:
the manifests (`_rtf_batch.json`) give each file's latency from its drop to
the commit of its batch, and the matches are read back with pyarrow alone.
Optionally it SIGKILLs the driver (and its JVM) mid-stream and restarts it,
registers a query mid-stream through the queries log, or kills one Python
worker (--fault) so that Spark retries its task. With --check every
committed batch is compared with an engine loaded from the same index (the
log's operations applied up to the batch's pin): lost and duplicated
matches are counted. With --cluster N --memory it samples the peak PSS of each
executor, the cluster and the driver (spark/cluster_memory.py), and with
--reference compares a sample of query ids with rtf match's lines (the
10M-query stream of docs/spark.md, "Ten million queries across executors").
Prints one JSON object (the figures in docs/spark.md).

example:
  rtf gen-queries --publications ../shared/data/dbpedia/*.nt.gz -n 1000 --selective -o /tmp/q1k.jsonl
  rtf index build --queries /tmp/q1k.jsonl --output /tmp/q1k.idx
  python spark/stream_bench.py --index /tmp/q1k.idx --master 'local[2,2]' --files 40 \\
      --interval 1 --kill-after 15 --register-after 10 --check --work /tmp/rtf-stream-bench
"""

from __future__ import annotations

import argparse
import atexit
import gzip
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

HERE = Path(__file__).resolve().parent
STREAM = HERE / "stream.py"
MID_QUERY = ("SELECT ?s WHERE { ?s a/<http://www.w3.org/2000/01/rdf-schema#subClassOf>* "
             "<http://dbpedia.org/ontology/Agent> }")


def stage_files(folder: Path, files: int, per_file: int, dumps: list | None = None) -> list[Path]:
    """`files` N-Triples .gz files of `per_file` publications each, from `dumps` (default: the
    whole DBpedia sample)."""
    from rtf.io import datasets
    from rtf.io.reader import read_publications

    folder.mkdir(parents=True, exist_ok=True)
    pubs = read_publications(dumps or datasets.dbpedia_files(), skip_invalid=True)
    out = []
    for i in range(files):
        path = folder / f"drop-{i:04d}.nt.gz"
        with gzip.open(path, "wt", encoding="utf-8") as f:
            for _ in range(per_file):
                pub = next(pubs, None)
                if pub is None:
                    break
                f.writelines(f"{s} {p} {o} .\n" for s, p, o in pub.triples)
        out.append(path)
    return out


class Stream:
    """spark/stream.py in a process group of its own, its stderr in a log file."""

    def __init__(self, argv: list[str], log: Path, env: dict | None = None):
        self.argv, self.log, self.env = argv, log, env
        self.proc = None

    def start(self) -> None:
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.DEVNULL,
                                     stderr=open(self.log, "a", encoding="utf-8"),
                                     start_new_session=True, env={**os.environ, **(self.env or {})})

    def kill(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def wait_for(self, text: str, timeout: float = 600) -> None:
        deadline = time.time() + timeout
        while text not in self.log.read_text(encoding="utf-8", errors="replace"):
            if self.proc.poll() is not None:
                raise SystemExit(f"stream.py exited ({self.proc.returncode}):\n"
                                 + self.log.read_text()[-3000:])
            if time.time() > deadline:
                raise SystemExit(f"stream.py did not log {text!r} in {timeout} s")
            time.sleep(0.2)


class CpuSampler:
    """The CPU seconds (user + system) of every process of a session (the stream's driver, its JVM,
    the Python workers), read from /proc every `every` seconds: `between(t0, t1)` is what they
    used in that window -- a measure the machine's other load does not inflate. (With --cluster
    the executors run under the cluster's workers, outside the session: not counted.)"""

    def __init__(self, session: int, every: float = 0.25):
        self.session, self.every = session, every
        self.samples: list[tuple[float, dict]] = []
        self.kinds: dict[str, str] = {}  # pid -> driver, jvm or workers (read while it runs)
        self.running = True
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.tick = os.sysconf("SC_CLK_TCK")

    def _run(self) -> None:
        while self.running:
            cpu = {}
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    with open(f"/proc/{pid}/stat", "rb") as f:
                        fields = f.read().rsplit(b")", 1)[1].split()
                except OSError:
                    continue
                if int(fields[3]) == self.session:  # (the fields after the name: sid is the 4th)
                    cpu[pid] = (int(fields[11]) + int(fields[12])) / self.tick
                    self.kinds[pid] = self._kind(pid)  # (again: spark-submit's script execs java)
            self.samples.append((time.time(), cpu))
            time.sleep(self.every)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.running = False
        self.thread.join()

    def between(self, t0: float, t1: float) -> dict | None:
        """CPU seconds in [t0, t1]: ``all``, and of the ``driver`` (Python), the ``jvm`` and the
        Python ``workers`` (Spark's daemon and the processes it forks)."""
        before = [cpu for t, cpu in self.samples if t <= t0]
        after = [cpu for t, cpu in self.samples if t >= t1]
        if not before or not after:
            return None
        start, end = before[-1], after[0]
        parts = {"driver": 0.0, "jvm": 0.0, "workers": 0.0}
        for pid, v in end.items():
            parts[self.kinds.get(pid, "workers")] += v - start.get(pid, 0.0)
        return {"all": round(sum(parts.values()), 2), **{k: round(v, 2) for k, v in parts.items()}}

    def _kind(self, pid: str) -> str:
        if int(pid) == self.session:
            return "driver"
        try:
            with open(f"/proc/{pid}/comm", encoding="utf-8") as f:
                return "jvm" if f.read().strip() == "java" else "workers"
        except OSError:
            return "workers"


def quantile(values: list[float], q: float) -> float | None:
    from rtf.spark.stream import quantile as nearest_rank

    return round(nearest_rank(sorted(values), q), 3) if values else None


def phases(metrics: Path) -> dict:
    """The mean seconds per micro-batch of each phase, from the stream's --metrics lines (the
    first batch, which may build engines, left out), wall clock unless said:

    - `cycle`: from one commit to the next; `spark_trigger`: the part of it outside the batch's
      handler (Spark's offsets and commits logs, planning, listing the input folder);
    - `batch`: the handler, of which `list` (a Spark job listing the batch's files: before the
      tasks reported them), `match_write` (the Spark job that matches and writes) and `commit`
      (the manifest and rename, or the Delta log's transaction);
    - in `match_write`: `task_max` the longest task, and `scheduling` the rest of the job
      (scheduling its tasks, starting them in the Python workers, collecting their results);
      the tasks' seconds summed over tasks: `input` (Arrow batches of the files' bytes from the
      JVM), `read` (parsing), `match` (Engine.match), `rows` (building the Arrow match rows),
      `write` (Parquet in the worker), `worker` (whole tasks) and `worker_cpu` (their CPU
      seconds). A figure missing from the manifests (older code) is left out."""
    lines = [json.loads(line) for line in metrics.read_text().splitlines()] if metrics.exists() else []
    lines = lines[1:] if len(lines) > 2 else lines
    if not lines:
        return {}

    def mean(key):
        values = [m[key] for m in lines if key in m]
        return round(sum(values) / len(values), 3) if values else None

    commits = [m["committed_at"] for m in lines]
    cycle = round((commits[-1] - commits[0]) / (len(commits) - 1), 3) if len(commits) > 1 else None
    result = {"batches": len(lines), "publications": round(sum(m["publications"] for m in lines) / len(lines), 1),
              "cycle": cycle, "batch": mean("batch_s"), "list": mean("list_s") or 0.0,
              "match_write": mean("match_write_s"), "task_max": mean("task_s_max"), "input": mean("input_s"),
              "read": mean("read_s"), "match": mean("match_s"), "rows": mean("rows_s"), "write": mean("write_s"),
              "worker": mean("worker_s"), "worker_cpu": mean("worker_cpu_s"), "commit": mean("commit_s")}
    if result["task_max"] is not None:
        result["scheduling"] = round(result["match_write"] - result["task_max"], 3)
    result["spark_trigger"] = round(cycle - result["batch"], 3) if cycle is not None else None
    return {k: v for k, v in result.items() if v is not None or k == "cycle"}


def check(output: Path, index: str, qlog, manifests: list[dict]) -> dict:
    """Lost and duplicated matches: every batch against an engine at the batch's pin."""
    from rtf.engine import Engine
    from rtf.io.output import match_line
    from rtf.spark.arrow_matches import row_line
    from rtf.io.reader import read_publications
    from rtf.spark.batch_output import read_matches
    from rtf.spark.oplog import apply_operation

    ops = qlog.read() if qlog else []
    engines: dict[int, object] = {}
    expected: Counter = Counter()
    for m in manifests:
        pin = m["op"]
        if pin not in engines:
            engine = Engine.load(index)
            for n, op in ops:
                if n <= pin:
                    apply_operation(engine, op)
            engines[pin] = engine
        for f in m["files"]:
            for pub in read_publications(f["path"].removeprefix("file:"), skip_invalid=True):
                expected.update(match_line(pub.id, x) for x in engines[pin].match(pub))
    if (output / "_delta_log").is_dir():
        from rtf.spark.delta_output import read_delta as read_matches  # noqa: F811 (a Delta table)
    got = Counter(row_line(r) for r in read_matches(str(output)).to_pylist())
    return {"expected": sum(expected.values()), "read_by_pyarrow": sum(got.values()),
            "lost": sum((expected - got).values()), "duplicated": sum((got - expected).values()),
            "equal": got == expected}


def compare(output: Path, reference: str, n: int) -> dict:
    """The output's lines against the reference's on `n` of its query ids (fixed seed: the
    sample of spark/cluster_memory.py), every line of those queries, sorted, byte for byte."""
    import random

    import pyarrow as pa
    import pyarrow.compute as pc

    from cluster_memory import lines_of  # (spark/, this script's folder)
    from rtf.spark.arrow_matches import arrow_match_schema, row_line
    from rtf.spark.batch_output import read_matches

    ids = set()
    with open(reference, encoding="utf-8") as f:
        for line in f:
            start = line.find('"query": "') + 10
            ids.add(line[start:line.index('"', start)])
    wanted = sorted(random.Random(42).sample(sorted(ids), min(n, len(ids))))
    ref = lines_of([reference], set(wanted))
    table = read_matches(output, arrow_match_schema().names)
    table = table.filter(pc.is_in(table["query"], value_set=pa.array(wanted)))
    got = sorted(row_line(r) for r in table.to_pylist())
    return {"query_ids": len(wanted), "reference_lines": len(ref), "output_lines": len(got), "equal": got == ref}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--index", required=True, help="the saved index the stream starts from")
    p.add_argument("--master", default="local[2,2]")
    p.add_argument("--files", type=int, default=30)
    p.add_argument("--publications-per-file", type=int, default=100)
    p.add_argument("--interval", type=float, default=1.0, help="seconds between drops (0: all at once)")
    p.add_argument("--trigger-seconds", type=float, default=0.5)
    p.add_argument("--max-files-per-trigger", type=int)
    p.add_argument("--max-bytes-per-trigger", type=int)
    p.add_argument("--kill-after", type=float, metavar="S",
                   help="SIGKILL the driver (and its JVM) S seconds after the first drop, at the next "
                        "moment a batch is being written (a folder in _rtf_tmp), then restart it")
    p.add_argument("--register-after", type=int, metavar="N",
                   help="register a query through the queries log after N drops")
    p.add_argument("--fault", action="store_true", help="one Python worker kills itself (a task retry)")
    p.add_argument("--pause-after", type=int, metavar="N", help="after N drops, pause --pause seconds")
    p.add_argument("--pause", type=float, default=0.0, metavar="S")
    p.add_argument("--stop-when-idle", type=float, default=8.0, metavar="S")
    p.add_argument("--no-warm-up", action="store_true")
    p.add_argument("--no-keep-warm", action="store_true")
    p.add_argument("--check", action="store_true", help="count lost and duplicated matches")
    p.add_argument("--output-format", choices=("parquet", "delta"), default="parquet")
    p.add_argument("--cluster", type=int, metavar="N",
                   help="start a standalone cluster of N one-core workers on 127.0.0.1 and run on it "
                        "(instead of --master); its executors take 512 MiB")
    p.add_argument("--executor-memory", default="512m", help="with --cluster: spark.executor.memory")
    p.add_argument("--shared-index", action="store_true",
                   help="each executor's daemon maps the base index once (rtf spark stream --shared-index)")
    p.add_argument("--dump", nargs="+", metavar="FILE", help="cut these files into the drops "
                   "(default: the whole DBpedia sample)")
    p.add_argument("--memory", action="store_true", help="with --cluster: the peak PSS of each executor "
                   "(JVM + Python), of the cluster and of the driver (spark/cluster_memory.py's sampler)")
    p.add_argument("--reference", metavar="FILE", help="rtf match's lines (JSON Lines) over the same "
                   "publications: compare the output's lines on --sample query ids (cluster_memory.py)")
    p.add_argument("--sample", type=int, default=1000)
    p.add_argument("--conf", action="append", default=[])
    p.add_argument("--work", default="/tmp/rtf-stream-bench")
    args = p.parse_args(argv)

    from rtf.bench.machine import machine_info
    from rtf.spark.batch_output import BatchOutput
    from rtf.spark.oplog import QueriesLog

    work = Path(args.work)
    for name in ("in", "out", "ckpt", "qlog", "stream.log", "fault", "metrics.jsonl"):
        target = work / name
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
    staged = stage_files(work / "staging", args.files, args.publications_per_file, args.dump)
    (work / "in").mkdir()
    qlog = QueriesLog(work / "qlog", create=True)
    cluster = None
    if args.cluster:
        from rtf.spark.cluster import StandaloneCluster

        cluster = StandaloneCluster(workers=args.cluster, cores=1, memory="2g")
        atexit.register(cluster.stop)  # (also when the stream fails: stop is idempotent)
        args.master = cluster.start()
        args.conf.append(f"spark.executor.memory={args.executor_memory}")
    argv = [sys.executable, str(STREAM), "--input", str(work / "in"), "--output", str(work / "out"),
            "--checkpoint", str(work / "ckpt"), "--index", args.index, "--queries-log", str(qlog.path),
            "--master", args.master, "--trigger-seconds", str(args.trigger_seconds),
            "--stop-when-idle", str(args.stop_when_idle), "--conf", "spark.ui.enabled=false",
            "--output-format", args.output_format, "--metrics", str(work / "metrics.jsonl")]
    if args.max_files_per_trigger:
        argv += ["--max-files-per-trigger", str(args.max_files_per_trigger)]
    if args.max_bytes_per_trigger:
        argv += ["--max-bytes-per-trigger", str(args.max_bytes_per_trigger)]
    argv += ["--no-warm-up"] if args.no_warm_up else []
    argv += ["--no-keep-warm"] if args.no_keep_warm else []
    argv += ["--shared-index"] if args.shared_index else []
    for c in args.conf:
        argv += ["--conf", c]
    env = {}
    if args.fault:
        (work / "fault").touch()
        env["RTF_SPARK_FAULT_FILE"] = str(work / "fault")
    stream = Stream(argv, work / "stream.log", env)
    load = os.getloadavg()
    t_start = time.time()
    stream.start()
    sampler = CpuSampler(stream.proc.pid)  # (its own session: start_new_session)
    sampler.start()
    memory: dict = {}
    if args.memory and cluster is not None:
        from cluster_memory import sample as sample_pss  # (spark/, this script's folder)

        stop_pss = threading.Event()
        pss = threading.Thread(target=sample_pss, args=(stream.proc.pid, cluster, stop_pss, memory), daemon=True)
        pss.start()
    stream.wait_for("queries log at operation")  # the session is up, the checkpoint opened
    if not args.no_warm_up:
        stream.wait_for("warm-up")
    ready_s = time.time() - t_start
    drops: dict[str, float] = {}
    registered = {}

    def drop_all():
        for i, path in enumerate(staged):
            if args.pause_after is not None and i == args.pause_after:
                time.sleep(args.pause)
            if args.register_after is not None and i == args.register_after:
                registered["op"] = qlog.register(MID_QUERY, "mid-stream", "bench")
                registered["time"] = time.time()
            shutil.copy(path, work / "in" / f".{path.name}")
            os.rename(work / "in" / f".{path.name}", work / "in" / path.name)
            drops[path.name] = time.time()
            if args.interval:
                time.sleep(args.interval)

    dropper = threading.Thread(target=drop_all)
    dropper.start()
    restarts = 0
    killed_in = None
    if args.kill_after is not None:
        time.sleep(args.kill_after)
        deadline = time.time() + 120
        while not os.listdir(work / "out" / "_rtf_tmp") and time.time() < deadline:
            time.sleep(0.01)  # mid-batch: Spark is writing its matches
        writing = os.listdir(work / "out" / "_rtf_tmp")
        stream.kill()
        killed_in = writing[0].split(".")[0] if writing else None
        restarts += 1
        stream.start()
    dropper.join()
    code = stream.proc.wait()
    sampler.stop()
    if memory:
        stop_pss.set()
        pss.join()
    if cluster is not None:
        cluster.stop()
    if code != 0:
        raise SystemExit(f"stream.py exited {code}:\n" + (work / "stream.log").read_text()[-3000:])

    if args.output_format == "delta":
        from rtf.spark.delta_output import DeltaOutput

        manifests = DeltaOutput(work / "out").manifests()
    else:
        manifests = BatchOutput(work / "out").manifests()
    latencies = [m["committed_at"] - f["mtime"] for m in manifests for f in m["files"]]
    first_drop = min(drops.values())
    last_commit = max(m["committed_at"] for m in manifests)
    pubs = sum(m["publications"] for m in manifests)
    result = {
        "index": args.index, "master": args.master, "files": len(staged),
        "publications_per_file": args.publications_per_file, "interval_s": args.interval,
        "batches": len(manifests), "publications": pubs, "matches": sum(m["matches"] for m in manifests),
        "ready_s": round(ready_s, 2),
        "throughput_publications_per_s": round(pubs / (last_commit - first_drop), 1),
        # CPU seconds of the stream's processes from the first drop to the last commit (not
        # across a restart): publications per CPU second, whatever else the machine runs
        "cpu_s": (cpu := sampler.between(first_drop, last_commit) if not restarts else None),
        "publications_per_cpu_s": round(pubs / cpu["all"], 1) if cpu else None,
        "latency_s": {"p50": quantile(latencies, 0.5), "p99": quantile(latencies, 0.99),
                      "max": quantile(latencies, 1.0)},
        "first_batch_s": manifests[0]["batch_s"] if manifests else None,
        "batch_s": {"p50": quantile([m["batch_s"] for m in manifests], 0.5),
                    "max": quantile([m["batch_s"] for m in manifests], 1.0)},
        "engine_loads_in_batches": sum(m["engine_loads"] for m in manifests),
        "engine_loads_by_batch": [m["engine_loads"] for m in manifests],
        "tasks_retried": sum(m.get("tasks_retried", 0) for m in manifests),
        "phases_s": phases(work / "metrics.jsonl"), "output_format": args.output_format,
        "peak_pss_mb": {k: v if k.endswith("processes") else round(v / 2**20) for k, v in sorted(memory.items())},
        "restarts": restarts, "killed_while_writing": killed_in, "load_average_at_start": [round(x, 2) for x in load],
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        "machine": machine_info(),
    }
    if registered:
        pinned = [m["batch"] for m in manifests if m["op"] >= registered["op"]]
        result["registered"] = {"op": registered["op"], "first_batch_pinned_after": min(pinned, default=None),
                                "batches_pinned_after": len(pinned)}
    if args.fault:
        result["fault_fired"] = not (work / "fault").exists()
    if args.reference:
        result["sample"] = compare(work / "out", args.reference, args.sample)
    if args.check:
        result["check"] = check(work / "out", args.index, qlog, manifests)
        if registered:
            from rtf.spark.batch_output import read_matches

            rows = read_matches(work / "out", ["query", "batch_id"]).to_pylist()
            batches = {r["batch_id"] for r in rows if r["query"] == "mid-stream"}
            result["registered"]["matches"] = sum(1 for r in rows if r["query"] == "mid-stream")
            result["registered"]["only_in_batches_pinned_after"] = batches <= set(pinned)
    print(json.dumps(result, indent=1))
    ok = (not args.check or result["check"]["equal"]) and result.get("sample", {}).get("equal", True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
