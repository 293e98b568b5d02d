#!/usr/bin/env python
"""Measure --shared-index: the executor's Python processes' memory (PSS) against one process.

Runs, in processes of their own, interleaved (``--rounds`` times each):

- ``rtf match --index IDX`` (the reference lines, and ONE process holding the engine);
- ``rtf spark replay --index IDX`` on ``--master`` (default ``local[4]``: one executor,
  four Python workers), without ``--shared-index`` (each worker loads the broadcast
  bytes; run it from another checkout with ``--before DIR`` to measure that code), and
  with it (the executor's daemon maps the file and its workers share its engine);

while a sampler reads, every 50 ms, the proportional set size (PSS: a shared page is
divided among the processes that map it) of every process of the run (psutil's
``memory_full_info``): for the Spark runs, summed over the Python processes under the
driver's JVM (the daemon and its workers: the executor's Python processes), the peak
kept. Prints a Markdown table and checks that every run's sorted lines equal
``rtf match``'s. The index is copied first to a file of its own (PSS divides a file's
pages among every process mapping it, other users' too).

example (the figures of docs/spark.md, "One index per executor"):
  python spark/shared_index.py --index /tmp/q1m.idx --work /tmp/rtf-shared --rounds 2 \\
      --before /tmp/rtf-main
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from index_partitions import cpu_seen, sorted_lines  # (spark/, this script's folder)


def _python_under(root) -> list:
    """The Python processes under `root`'s JVM (PySpark's daemon and its workers)."""
    out = []
    for p in root.children(recursive=True):
        try:
            if p.name().startswith("python") and p.ppid() != root.pid:
                out.append(p)
        except Exception:  # noqa: BLE001 (gone meanwhile)
            continue
    return out


def sample(pid: int, spark: bool, stop: threading.Event, peak: dict) -> None:
    import psutil

    root = psutil.Process(pid)
    cpu = peak.setdefault("cpu", {})  # pid -> its CPU seconds when last seen
    while not stop.is_set():
        try:
            procs = _python_under(root) if spark else [root]
            cpu_seen(root, cpu)
        except psutil.NoSuchProcess:
            break
        pss = 0
        for p in procs:
            try:
                pss += p.memory_full_info().pss
            except psutil.Error:
                continue
        if pss > peak.get("pss", 0):
            peak.update(pss=pss, processes=len(procs))
        stop.wait(0.05)


def run(argv: list[str], spark: bool, env: dict | None = None) -> tuple[dict, float]:
    """Run `argv`; the sampled peak and the CPU seconds of it and its processes (each as last
    sampled: a process's last 50 ms may be missed)."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    stop, peak = threading.Event(), {}
    sampler = threading.Thread(target=sample, args=(proc.pid, spark, stop, peak), daemon=True)
    sampler.start()
    _, err = proc.communicate()
    stop.set()
    sampler.join()
    if proc.returncode != 0:
        sys.exit(f"{argv[:4]} failed:\n{err[-3000:]}")
    return peak, sum(peak.pop("cpu", {}).values())


#: The runs (``--runs``) and their names in the table.
RUNS = {"one": "one process", "spark": "spark", "shared": "spark --shared-index"}


def main(argv=None) -> int:
    from rtf.io import datasets

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 2)[2],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dump", nargs="+", default=[str(next(
        f for f in datasets.dbpedia_files() if f.name.startswith("db8k28")))], metavar="FILE")
    p.add_argument("--index", required=True)
    p.add_argument("--master", default="local[4]")
    p.add_argument("--partitions", type=int, default=8, help="publication partitions (tasks)")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--before", metavar="DIR", help="a checkout whose rtf runs the runs without --shared-index")
    p.add_argument("--work", default="/tmp/rtf-shared")
    p.add_argument("--runs", nargs="+", choices=RUNS, default=list(RUNS),
                   help="which runs (default all; at 10M leave out 'spark': four workers' own engines "
                        "would take ~18 GB)")
    p.add_argument("replay_args", nargs="*", metavar="-- REPLAY ARG",
                   help="more arguments of the Spark runs' rtf spark replay (e.g. -- --query-partitions 1 "
                        "--parts-folder DIR: the index as a file, not broadcast through the driver's JVM)")
    args = p.parse_args(argv)

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    index = work / "index.idx"
    shutil.copyfile(args.index, index)
    old_env = None
    if args.before:
        old_env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(Path(args.before).resolve()), *filter(None, [os.environ.get("PYTHONPATH")])])}
    ref = None
    rows = []
    for r in range(args.rounds):
        for name in (RUNS[run] for run in RUNS if run in args.runs):  # (the reference first)
            out = work / f"out-{r}-{name.replace(' ', '')}"
            shutil.rmtree(out, ignore_errors=True)
            t = time.perf_counter()
            if name == "one process":
                peak, cpu = run([sys.executable, "-m", "rtf", "match", "--index", str(index), "--publications",
                                 *args.dump, "--skip-invalid", "--output-format", "ids", "--output", str(out)],
                                spark=False)
                lines = sorted_lines([out])
                ref = ref if ref is not None else sorted_lines([out])
            else:
                shared = name.endswith("--shared-index")
                peak, cpu = run([sys.executable, "-m", "rtf.spark", "replay", "--dump", *args.dump, "--index",
                                 str(index), "--master", args.master, "--partitions", str(args.partitions),
                                 "--output-format", "jsonl", "--output", str(out), "--quiet",
                                 *(["--shared-index"] if shared else []), *args.replay_args], spark=True,
                                env=None if shared else old_env)
                m = json.loads((out / "_metrics.json").read_text())
                lines = [json.dumps({"publication": d["publication"], "queries": sorted(d["queries"])})
                         for d in _ids(sorted(out.glob("part-*")))]
            row = {"round": r, "run": name, "pss_mb": round(peak.get("pss", 0) / 2**20, 1),
                   "processes": peak.get("processes"), "cpu_s": round(cpu, 1),
                   "wall_s": round(time.perf_counter() - t, 1)}
            if name != "one process":
                row.update(loads=m["index"]["loads"], shared=m["index"].get("shared", 0),
                           load_s_max=m["index"]["load_s_max"], equal=lines == _ref_ids(ref))
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
            shutil.rmtree(out, ignore_errors=True)
    (work / "results.json").write_text(json.dumps(rows, indent=2) + "\n")
    one = min(r["pss_mb"] for r in rows if r["run"] == "one process")
    print("| run | round | PSS MB (peak, summed) | x one process | Python processes | engine loads "
          "| tasks on the daemon's engine | CPU s | equal to rtf match |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        print(f"| {r['run']} | {r['round']} | {r['pss_mb']:,} | {r['pss_mb'] / one:.2f}x | {r['processes']} "
              f"| {r.get('loads', '-')} | {r.get('shared', '-')} | {r['cpu_s']} | {_yes(r.get('equal'))} |")
    return 0 if all(r.get("equal", True) for r in rows) else 1


def _ids(files) -> list[dict]:
    """Each publication's matching query ids, from the Spark job's JSON Lines."""
    by_pub: dict[str, list[str]] = {}
    for line in sorted_lines(files):
        d = json.loads(line)
        by_pub.setdefault(d["publication"], []).append(d["query"])
    return [{"publication": k, "queries": v} for k, v in sorted(by_pub.items())]


def _ref_ids(ref: list[str]) -> list[str]:
    """`rtf match --output-format ids` lines in `_ids`'s form."""
    out = []
    for line in ref:
        d = json.loads(line)
        out.append((d["publication"], sorted(d["queries"])))
    return [json.dumps({"publication": p, "queries": q}) for p, q in sorted(out)]


def _yes(v) -> str:
    return "-" if v is None else "yes" if v else "NO"


if __name__ == "__main__":
    sys.exit(main())
