#!/usr/bin/env python
"""Measure --query-partitions: K groups x strategies against `rtf match`.

Runs `rtf match` once (the reference), then spark/dbpedia_eval.py once per
(K, strategy), each in its own JVM (K=1 once: every strategy is one group
then), checks that every run's sorted lines equal `rtf match`'s, and prints
the Markdown table of docs/spark.md: index bytes per group, peak memory of a
Python worker, (publication, group) pairs skipped, filter seconds and
throughput. Results go to WORK/results.json.

example (the table in docs/spark.md):
  rtf gen-queries --publications ../shared/data/dbpedia/*.nt.gz -n 3000 --seed 5 --selective \\
      -o /tmp/q3k-sel.jsonl
  python spark/query_partitions.py --queries /tmp/q3k-sel.jsonl --master 'local-cluster[2,1,2048]' \\
      --ks 1 2 4 --work /tmp/rtf-qp
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from scaling import run_match, run_spark, sorted_lines


def main(argv=None) -> int:
    from rtf.io import datasets

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dump", nargs="+", default=[str(datasets.dbpedia_dir())], metavar="FILE_OR_DIR")
    p.add_argument("--queries", required=True)
    p.add_argument("--taxonomy", default=str(datasets.dbpedia_ontology()),
                   help="ontology (default: the sample's 2015-10 ontology; '' for none)")
    p.add_argument("--algorithm", default="rtfs", choices=["naive", "rtfm", "rtfs", "ibroker"])
    p.add_argument("--master", default="local-cluster[2,1,2048]")
    p.add_argument("--ks", nargs="+", type=int, default=[1, 2, 4])
    p.add_argument("--strategies", nargs="+", default=["hash", "containment", "merging"])
    p.add_argument("--partitions", type=int, default=4, help="publication partitions (per group)")
    p.add_argument("--work", default="/tmp/rtf-qp")
    args = p.parse_args(argv)

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    taxonomy = args.taxonomy or None
    ref_out = work / "match.jsonl"
    stats = run_match(args.dump, args.queries, taxonomy, args.algorithm, ref_out)
    ref = sorted_lines([ref_out])
    print(f"rtf match: {json.dumps({k: stats[k] for k in ('publications', 'matches', 'filter_s')})}",
          file=sys.stderr)
    results = [{"runner": "rtf match", "k": None, "strategy": None, **{
        k: stats[k] for k in ("publications", "matches", "filter_s", "wall_s", "index_rss_mb")
        if k in stats}}]
    runs = [(k, s) for k in args.ks for s in (args.strategies[:1] if k == 1 else args.strategies)]
    for k, strategy in runs:
        out = work / f"k{k}-{strategy}"
        m = run_spark(args.dump, args.queries, taxonomy, args.algorithm, args.master, out,
                      args.partitions, ["--query-partitions", str(k), "--query-partitioning", strategy,
                                        "--measure-index-memory"])
        qp = m["query_partitions"]
        got = sorted_lines(sorted(out.glob("part-*")))
        row = {"runner": m["spark"]["master"], "k": k, "strategy": strategy if k > 1 else "(one group)",
               "publications": m["publications"], "matches": m["matches"],
               "equals_rtf_match": got == ref, "index_bytes_total": qp["index_bytes_total"],
               "index_bytes_max": qp["index_bytes_max"],
               "index_memory_bytes_max": qp["index_memory_bytes_max"], "contained_queries": qp["contained_queries"],
               "pairs_routed": qp["pairs_routed"], "pairs_skipped": qp["pairs_skipped"],
               "worker_rss_mb_max": m["worker_rss_mb_max"], "stages_s": m["stages_s"],
               "executor_filter_s": m["executor_s"]["filter"], "spark_s": m["spark_s"],
               "wall_s": m["wall_s"], "throughput": m["throughput"], "groups": qp["groups"]}
        if not row["equals_rtf_match"]:
            print(f"MISMATCH k={k} {strategy}: spark {len(got)} lines, rtf match {len(ref)}",
                  file=sys.stderr)
        results.append(row)
        print(f"k={k} {strategy}: {json.dumps({x: row[x] for x in row if x != 'groups'})}",
              file=sys.stderr)
        shutil.rmtree(out, ignore_errors=True)  # the part files; metrics are in results.json
    (work / "results.json").write_text(json.dumps(results, indent=2) + "\n")

    print("| K | strategy | contained | pickle MB (all groups) | pickle MB (largest group) "
          "| in memory MB (largest group) "
          "| worker RSS MB (max) | pairs routed | pairs skipped | route s | filter s (stage) "
          "| filter s (in engine.match, summed) | Spark total s | pubs/s (total) | equal |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in results[1:]:
        s = r["stages_s"]
        considered = r["pairs_routed"] + r["pairs_skipped"]
        print(f"| {r['k']} | {r['strategy']} | {r['contained_queries']} "
              f"| {r['index_bytes_total'] / 2**20:.2f} | {r['index_bytes_max'] / 2**20:.2f} "
              f"| {r['index_memory_bytes_max'] / 2**20:.1f} "
              f"| {r['worker_rss_mb_max'] or 0:.0f} | {r['pairs_routed']} "
              f"| {r['pairs_skipped']} ({100 * r['pairs_skipped'] / considered:.0f}%) "
              f"| {s.get('route_s', 0):.2f} | {s.get('filter_s', 0):.2f} | {r['executor_filter_s']:.2f} "
              f"| {r['spark_s']:.2f} | {r['throughput']['publications_per_s']:.0f} "
              f"| {'yes' if r['equals_rtf_match'] else 'NO'} |")
    return 0 if all(r["equals_rtf_match"] for r in results[1:]) else 1


if __name__ == "__main__":
    sys.exit(main())
