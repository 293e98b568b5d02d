#!/usr/bin/env python
"""Measure --query-partitions with --index: the Python workers' memory (PSS) and CPU per K.

Runs `rtf match --index` once (the reference), then `rtf spark replay --index IDX`
once per K of --ks (0: no partitions, the index broadcast; K >= 1: K part files,
mapped), each in a process of its own (its own JVM), while a sampler reads the
proportional set size (PSS: shared pages divided among the processes that map
them) and the unique set size (USS) of every Python worker under it, four times
a second, and the CPU seconds of all its processes (psutil). Checks that every run's sorted lines equal `rtf match`'s and
prints a Markdown table; the figures go to WORK/results.json.

example (the table in docs/spark-query-partitions.md):
  rtf gen-queries --publications ../shared/data/dbpedia/*.nt.gz -n 100000 --seed 5 --selective -o /tmp/q100k.jsonl
  rtf index build --queries /tmp/q100k.jsonl \\
      --taxonomy ../shared/data/dbpedia/ontology/dbpedia_2015-10.nt.gz --output /tmp/q100k.idx
  python spark/index_partitions.py --index /tmp/q100k.idx --master 'local[2]' --ks 0 1 4 --work /tmp/rtf-ip
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path


def _workers(root) -> list:
    """The Python workers under process `root` (PySpark's daemon forks them)."""
    out = []
    for p in root.children(recursive=True):
        try:
            if "pyspark.daemon" in " ".join(p.cmdline()) and p.parent().name() != p.name():
                continue  # the daemon itself (it forks the workers)
            if p.name().startswith("python"):
                out.append(p)
        except Exception:
            continue
    return out


def cpu_seen(root, cpu: dict) -> None:
    """Note in `cpu` (pid -> seconds) the CPU seconds of `root` and every process under it,
    as they are now (psutil.NoSuchProcess if `root` has ended)."""
    import psutil

    for p in [root, *root.children(recursive=True)]:
        try:
            t = p.cpu_times()
            cpu[p.pid] = t.user + t.system
        except psutil.Error:
            pass


def sample(pid: int, stop: threading.Event, peak: dict) -> None:
    import psutil

    root = psutil.Process(pid)
    cpu = peak.setdefault("cpu", {})  # pid -> its CPU seconds when last seen
    while not stop.is_set():
        pss = uss = 0
        per_worker = []
        try:
            workers = _workers(root)
            cpu_seen(root, cpu)
        except psutil.NoSuchProcess:
            break
        for w in workers:
            try:
                info = w.memory_full_info()
            except Exception:
                continue
            pss += info.pss
            uss += info.uss
            per_worker.append(info.pss)
        if pss > peak.get("pss_sum", 0):
            peak.update(pss_sum=pss, uss_sum=uss, workers=len(per_worker))
        peak["pss_max"] = max([peak.get("pss_max", 0), *per_worker])
        stop.wait(0.25)


def run(argv: list[str], cwd: Path | None = None) -> tuple[int, dict, float]:
    """Run `argv`; its exit status, the sampled peaks, and the CPU seconds of its processes
    (the command, its JVM and Python workers: each as last sampled)."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=cwd)
    stop, peak = threading.Event(), {}
    sampler = threading.Thread(target=sample, args=(proc.pid, stop, peak), daemon=True)
    sampler.start()
    _, err = proc.communicate()
    stop.set()
    sampler.join()
    cpu = sum(peak.pop("cpu", {}).values())
    if proc.returncode != 0:
        print(err[-3000:], file=sys.stderr)
    return proc.returncode, peak, cpu


def sorted_lines(files) -> list[str]:
    return sorted(line for f in files for line in Path(f).read_text(encoding="utf-8").splitlines())


def main(argv=None) -> int:
    from rtf.io import datasets

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dump", nargs="+", default=[str(next(
        f for f in datasets.dbpedia_files() if f.name.startswith("db8k28")))], metavar="FILE_OR_DIR")
    p.add_argument("--index", required=True)
    p.add_argument("--master", default="local[2]")
    p.add_argument("--ks", nargs="+", type=int, default=[0, 1, 4])
    p.add_argument("--partitions", type=int, default=2, help="publication partitions (per query partition)")
    p.add_argument("--work", default="/tmp/rtf-ip")
    args = p.parse_args(argv)

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    ref_out = work / "match.jsonl"
    t = time.perf_counter()
    code, _, cpu = run([sys.executable, "-m", "rtf", "match", "--index", args.index, "--publications",
                        *args.dump, "--skip-invalid", "--output", str(ref_out)])
    assert code == 0
    ref = sorted_lines([ref_out])
    results = [{"runner": "rtf match", "k": None, "matches": len(ref), "cpu_s": round(cpu, 2),
                "wall_s": round(time.perf_counter() - t, 2)}]
    print(f"rtf match: {len(ref)} matches, {cpu:.1f} CPU s", file=sys.stderr)
    for k in args.ks:
        out = work / f"k{k}"
        shutil.rmtree(out, ignore_errors=True)
        parts = ["--query-partitions", str(k), "--parts-folder", str(work / "parts")] if k else []
        t = time.perf_counter()
        code, peak, cpu = run([sys.executable, "-m", "rtf.spark", "replay", "--dump", *args.dump,
                               "--index", args.index, "--master", args.master, "--partitions",
                               str(args.partitions), "--output-format", "jsonl", "--output", str(out),
                               "--quiet", *parts])
        wall = time.perf_counter() - t
        m = json.loads((out / "_metrics.json").read_text())
        got = sorted_lines(sorted(out.glob("part-*")))
        row = {"runner": args.master, "k": k, "equals_rtf_match": got == ref, "matches": m["matches"],
               "publications": m["publications"], "cpu_s": round(cpu, 2), "wall_s": round(wall, 2),
               "spark_s": m["spark_s"], "pss_sum_mb": round(peak.get("pss_sum", 0) / 2**20, 1),
               "uss_sum_mb": round(peak.get("uss_sum", 0) / 2**20, 1),
               "pss_worker_max_mb": round(peak.get("pss_max", 0) / 2**20, 1),
               "workers": peak.get("workers"), "worker_rss_mb_max": m["worker_rss_mb_max"],
               "engine_loads": m["index"]["loads"], "load_s_max": m["index"]["load_s_max"],
               "query_partitions": m.get("query_partitions")}
        results.append(row)
        print(f"k={k}: {json.dumps({x: row[x] for x in row if x != 'query_partitions'})}", file=sys.stderr)
        shutil.rmtree(out, ignore_errors=True)
    (work / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    print("| K | Python workers' PSS MB (peak, summed) | USS MB (summed) | largest worker PSS MB "
          "| engine loads | load s (max) | split s | CPU s (all processes) | equal |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in results[1:]:
        qp = r["query_partitions"] or {}
        print(f"| {r['k'] or '- (broadcast)'} | {r['pss_sum_mb']} | {r['uss_sum_mb']} | {r['pss_worker_max_mb']} "
              f"| {r['engine_loads']} | {r['load_s_max']} | {qp.get('split_s', '-')} | {r['cpu_s']} "
              f"| {'yes' if r['equals_rtf_match'] else 'NO'} |")
    return 0 if all(r["equals_rtf_match"] for r in results[1:]) else 1


if __name__ == "__main__":
    sys.exit(main())
