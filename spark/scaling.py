#!/usr/bin/env python
"""Measure spark/dbpedia_eval.py against `rtf match`: throughput and equality.

For each algorithm, runs `rtf match` once (one process, the reference) and
the Spark job once per master (each in its own JVM, so that ``local[1]`` and
``local[2]`` really get one and two cores), checks that the sorted Spark
lines equal the sorted `rtf match` lines, and prints a Markdown table of the
figures from each run's metrics.json (the numbers in docs/spark.md).

example:
  rtf gen-queries --publications ../shared/data/dbpedia/*.nt.gz -n 10000 -o /tmp/q10k.jsonl
  python spark/scaling.py --queries /tmp/q10k.jsonl --algorithms rtfs \\
      --masters 'local[1,2]' 'local[2,2]' --work /tmp/rtf-scaling
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "dbpedia_eval.py"


def run_match(dumps: list[str], queries: str, taxonomy: str | None, algorithm: str,
              out: Path) -> dict:
    """`rtf match` over the dump files, in a process of its own; its --stats, timed."""
    from rtf.spark.replay import dump_files

    files = dump_files(dumps)
    cmd = [sys.executable, "-m", "rtf.cli", "match", "--queries", queries, "--publications", *files,
           "--algorithm", algorithm, "--skip-invalid", "--stats", "--output", str(out)]
    if taxonomy:
        cmd += ["--taxonomy", taxonomy]
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"rtf match failed:\n{proc.stderr[-3000:]}")
    stats = json.loads(proc.stderr.strip().splitlines()[-1])
    stats["wall_s"] = round(wall, 3)
    return stats


def run_spark(dumps: list[str], queries: str, taxonomy: str | None, algorithm: str, master: str,
              out: Path, partitions: int | None, extra: list[str]) -> dict:
    cmd = [sys.executable, str(SCRIPT), "--dump", *dumps, "--queries", queries,
           "--algorithm", algorithm, "--master", master, "--output", str(out), "--overwrite",
           "--output-format", "jsonl",
           "--conf", "spark.ui.enabled=false", *extra]
    if taxonomy:
        cmd += ["--taxonomy", taxonomy]
    if partitions:
        cmd += ["--partitions", str(partitions)]
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"dbpedia_eval.py failed ({master}):\n{proc.stderr[-3000:]}")
    metrics = json.loads((out / "_metrics.json").read_text())
    metrics["wall_s"] = round(wall, 3)  # with the JVM's start and stop
    return metrics


def sorted_lines(paths) -> list[str]:
    return sorted(line for p in paths for line in Path(p).read_text(encoding="utf-8").splitlines())


def main(argv=None) -> int:
    from rtf.io import datasets

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dump", nargs="+", default=[str(datasets.dbpedia_dir())], metavar="FILE_OR_DIR",
                   help="dump files or folders (default: the DBpedia sample)")
    p.add_argument("--queries", required=True)
    p.add_argument("--taxonomy", default=str(datasets.dbpedia_ontology()),
                   help="ontology (default: the sample's 2015-10 ontology; '' for none)")
    p.add_argument("--algorithms", nargs="+", default=["rtfs"],
                   choices=["naive", "rtfm", "rtfs", "ibroker"])
    p.add_argument("--masters", nargs="+", default=["local[1,2]", "local[2,2]"])
    p.add_argument("--partitions", type=int, help="as dbpedia_eval.py --partitions")
    p.add_argument("--no-match", action="store_true", help="skip rtf match and the comparison")
    p.add_argument("--work", default="/tmp/rtf-scaling", help="folder for outputs and results.json")
    p.add_argument("--spark-arg", action="append", default=[], metavar="ARG",
                   help="extra argument for dbpedia_eval.py (repeatable)")
    args = p.parse_args(argv)

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    taxonomy = args.taxonomy or None
    results = []
    for algorithm in args.algorithms:
        ref = None
        if not args.no_match:
            ref_out = work / f"match-{algorithm}.jsonl"
            stats = run_match(args.dump, args.queries, taxonomy, algorithm, ref_out)
            ref = sorted_lines([ref_out])
            results.append({"algorithm": algorithm, "runner": "rtf match", **{
                k: stats[k] for k in ("publications", "matches", "filter_s", "register_s", "wall_s")}})
            print(f"rtf match {algorithm}: {json.dumps(results[-1])}", file=sys.stderr)
        for master in args.masters:
            out = work / f"spark-{algorithm}-{master.replace('[', '').replace(']', '').replace('*', 'all')}"
            m = run_spark(args.dump, args.queries, taxonomy, algorithm, master, out, args.partitions,
                          args.spark_arg)
            row = {"algorithm": algorithm, "runner": master, "publications": m["publications"],
                   "matches": m["matches"], "stages_s": m["stages_s"], "spark_s": m["spark_s"],
                   "wall_s": m["wall_s"], "index_bytes": m["index"]["bytes"],
                   "engine_loads": m["index"]["loads"], "engine_load_s_max": m["index"]["load_s_max"],
                   "build_s": m["index"]["build_s"], "executor_s": m["executor_s"],
                   "throughput": m["throughput"], "partitions": len(m["partitions"])}
            if ref is not None:
                got = sorted_lines(sorted(out.glob("part-*")))
                row["equals_rtf_match"] = got == ref
                if got != ref:
                    print(f"MISMATCH {algorithm} {master}: spark {len(got)} lines, "
                          f"rtf match {len(ref)}", file=sys.stderr)
            results.append(row)
            print(f"{master} {algorithm}: {json.dumps(row)}", file=sys.stderr)
            shutil.rmtree(out / "_temporary", ignore_errors=True)
    (work / "results.json").write_text(json.dumps(results, indent=2) + "\n")

    print("| algorithm | runner | publications | matches | read+parse s | broadcast s "
          "| match s (group+filter) | write s | Spark total s | pubs/s (total) | pubs/s (match stage) "
          "| filter skew max/mean | equal |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        if r["runner"] == "rtf match":
            rate = r["publications"] / r["filter_s"] if r["filter_s"] else 0
            print(f"| {r['algorithm']} | rtf match (1 process) | {r['publications']} | {r['matches']} "
                  f"| | | {r['filter_s']:.2f} | | {r['wall_s']:.2f} (wall) | "
                  f"{r['publications'] / r['wall_s']:.0f} | {rate:.0f} | | |")
            continue
        s, t = r["stages_s"], r["throughput"]
        print(f"| {r['algorithm']} | {r['runner']} | {r['publications']} | {r['matches']} "
              f"| {s.get('read_parse_s', 0):.2f} "
              f"| {s.get('broadcast_s', 0):.2f} | {s.get('match_s', 0):.2f} | {s.get('write_s', 0):.2f} "
              f"| {r['spark_s']:.2f} | {t['publications_per_s']:.0f} "
              f"| {t['filter_publications_per_s'] or 0:.0f} "
              f"| {t['partition_filter_s_max_over_mean'] or 0:.2f} | {r.get('equals_rtf_match', '')} |")
    bad = [r for r in results if r.get("equals_rtf_match") is False]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
