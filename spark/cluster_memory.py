#!/usr/bin/env python
"""A large index across executors: ``rtf spark replay`` on a standalone cluster, memory per executor.

Starts a standalone cluster on this machine (`rtf.spark.cluster.StandaloneCluster`:
a master and ``--workers`` workers of one core), runs ``rtf spark replay --index IDX``
on it with the options after ``--`` (e.g. ``--query-partitions 2 --parts-folder DIR
--shared-index``), and samples every 0.5 s the proportional set size (PSS: a shared
page divided among the processes that map it; psutil's ``memory_full_info``) of each
executor -- its JVM and the Python processes under it -- of the cluster's own daemons
and of the driver (the command and its JVM), keeping each one's peak. Then, with
``--reference FILE`` (the lines of ``rtf match --index IDX``, JSON Lines), compares
the job's lines with it on a sample of query ids (``--sample N`` ids of the
reference drawn with a fixed seed, every line of the job whose query is one of
them against every line of the reference whose query is): equal or not, and counts.

example (docs/spark.md, "Ten million queries across executors"):
  rtf match --index q10m.idx --publications ../shared/data/dbpedia/db8k28*.nt.gz \\
      --skip-invalid --output /tmp/m10/match.jsonl
  python spark/cluster_memory.py --index q10m.idx --work /tmp/m10/run --reference /tmp/m10/match.jsonl \\
      -- --query-partitions 2 --parts-folder /tmp/m10/parts --shared-index
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path


def _pss(p) -> int:
    try:
        return p.memory_full_info().pss
    except Exception:  # noqa: BLE001 (gone, or not ours to read)
        return 0


def sample(driver_pid: int, cluster, stop: threading.Event, peak: dict) -> None:
    """Peak PSS of each executor (JVM + Python), of the cluster's daemons, of the driver, and of
    the cluster and the driver together (the peak of their sum: not the sum of their peaks)."""
    import psutil

    daemons = [psutil.Process(p.pid) for p in [cluster.master, *cluster.workers] if p is not None]
    driver = psutil.Process(driver_pid)
    while not stop.is_set():
        now = {}
        for i, worker in enumerate(daemons[1:]):
            try:
                executors = [c for c in worker.children(recursive=True)
                             if c.name() == "java" and "Executor" in " ".join(c.cmdline())]
            except psutil.Error:
                continue
            for e in executors:
                try:
                    pythons = [c for c in e.children(recursive=True) if c.name().startswith("python")]
                except psutil.Error:
                    continue
                now[f"executor {i} JVM"] = _pss(e)
                now[f"executor {i} Python"] = sum(_pss(c) for c in pythons)
                now[f"executor {i}"] = now[f"executor {i} JVM"] + now[f"executor {i} Python"]
                peak[f"executor {i} Python processes"] = max(peak.get(f"executor {i} Python processes", 0),
                                                             len(pythons))
        now["master and worker daemons"] = sum(_pss(d) for d in daemons)
        try:
            now["driver (Python + JVM)"] = _pss(driver) + sum(_pss(c) for c in driver.children(recursive=True))
        except psutil.Error:
            pass
        total = sum(v for k, v in now.items() if k.startswith("executor") and k[-1].isdigit()) + \
            now["master and worker daemons"]
        now["cluster (executors + daemons)"] = total
        now["cluster and driver, at once"] = total + now.get("driver (Python + JVM)", 0)
        for k, v in now.items():
            peak[k] = max(peak.get(k, 0), v)
        stop.wait(0.5)


def lines_of(paths, wanted: set[str]) -> list[str]:
    out = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for line in f:
                start = line.find('"query": "') + 10
                if line[start:line.index('"', start)] in wanted:
                    out.append(line.rstrip("\n"))
    return sorted(out)


def main(argv=None) -> int:
    from rtf.io import datasets
    from rtf.spark.cluster import StandaloneCluster

    argv = sys.argv[1:] if argv is None else argv
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dump", nargs="+", default=[str(next(
        f for f in datasets.dbpedia_files() if f.name.startswith("db8k28")))], metavar="FILE")
    p.add_argument("--index", required=True)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--worker-memory", default="2g")
    p.add_argument("--executor-memory", default="1g")
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--reference", metavar="FILE", help="rtf match's lines (JSON Lines) to compare a sample with")
    p.add_argument("--sample", type=int, default=1000)
    p.add_argument("--work", default="/tmp/rtf-cluster-memory")
    args = p.parse_args(argv)

    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    out = work / "out"
    with StandaloneCluster(workers=args.workers, cores=1, memory=args.worker_memory, folder=work / "cluster") as c:
        command = [sys.executable, "-m", "rtf.spark", "replay", "--dump", *args.dump, "--index", args.index,
                   "--master", c.master_url, "--partitions", str(args.partitions), "--output-format", "jsonl",
                   "--output", str(out), "--conf", f"spark.executor.memory={args.executor_memory}",
                   "--conf", "spark.ui.enabled=false", *extra]
        print(" ".join(command), file=sys.stderr)
        t = time.perf_counter()
        with open(work / "replay.err", "w") as err:
            proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err)
            stop, peak = threading.Event(), {}
            sampler = threading.Thread(target=sample, args=(proc.pid, c, stop, peak), daemon=True)
            sampler.start()
            code = proc.wait()
            stop.set()
            sampler.join()
        wall = time.perf_counter() - t
    if code != 0:
        print((work / "replay.err").read_text()[-3000:], file=sys.stderr)
        return 1
    m = json.loads((out / "_metrics.json").read_text())
    result = {"wall_s": round(wall, 1), "spark_s": m["spark_s"], "stages_s": m["stages_s"],
              "publications": m["publications"], "matches": m["matches"], "throughput": m["throughput"],
              "engine_loads": m["index"]["loads"], "tasks_on_the_daemons_engine": m["index"].get("shared"),
              "peak_pss_mb": {k: v if k.endswith("processes") else round(v / 2**20) for k, v in sorted(peak.items())}}
    if args.reference:
        ids = set()
        with open(args.reference, encoding="utf-8") as f:
            for line in f:
                ids.add(json.loads(line)["query"])
        wanted = set(random.Random(42).sample(sorted(ids), min(args.sample, len(ids))))
        ref = lines_of([args.reference], wanted)
        got = lines_of(sorted(out.glob("part-*")), wanted)
        result["sample"] = {"query_ids": len(wanted), "reference_lines": len(ref), "job_lines": len(got),
                            "equal": got == ref}
    (work / "result.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0 if result.get("sample", {}).get("equal", True) else 1


if __name__ == "__main__":
    sys.exit(main())
