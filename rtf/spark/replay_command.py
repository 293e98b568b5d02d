"""``rtf spark replay``: replay RDF dumps (DBpedia's files) through an rtf engine on Spark.

Reads the dump files with Spark, parses their lines in the executors, groups
the triples by subject into publications (across all files), matches every
publication in the executors against the saved index of the queries
(rtf.spark.match_publications) and writes the matches as Parquet, or as the
exact lines of ``rtf match``, plus ``_metrics.json``. See docs/spark.md.

Also ``python -m rtf.spark replay`` and, in a checkout, ``spark/dbpedia_eval.py``
(for spark-submit); the library behind it is `rtf.spark.replay`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time

EPILOG = """\
dump files:
  N-Triples lines (.nt) or DBpedia's line-based Turtle (.ttl), plain, .gz or .bz2;
  several files (instance types, abstracts, mapping-based properties, ...) are
  grouped by subject into one publication per resource. A directory means the
  dump files in it. Paths may be hdfs:// or s3a:// URIs on a cluster. Malformed
  lines are skipped and counted (_metrics.json: bad_lines_skipped).

output (--output DIR, which must not exist unless --overwrite):
  DIR/part-*.parquet  (--output-format parquet, the default) one row per (publication,
                      matching query): publication, query, subscriber, bindings as
                      array<map<string,string>>; read with Spark, pandas, pyarrow, DuckDB
  DIR/part-*.txt      (--output-format jsonl) the lines of `rtf match`, byte for byte:
                      compare with `sort` (the order differs)
  DIR                 (--output-format delta) a Delta Lake table, local or s3://bucket/path
                      (S3 set by the AWS_* variables): the Parquet rows plus batch_id, added in
                      one transaction that records the job's id (a hash of its inputs and
                      queries: a rerun after a crash commits once, a rerun after success does
                      nothing) and holds the metrics (DeltaTable.history()[0]["rtf"])
  DIR/_metrics.json   publications, matches, bad lines, seconds per stage (read+parse,
                      match, write), index bytes and broadcast cost, throughput in total
                      and per partition

example (local mode, two cores, a failed task tried twice; needs only
`pip install 'rtf[spark]'` and Java 17):
  rtf gen-queries --publications ../shared/data/dbpedia/*.nt.gz -n 2000 -o /tmp/q.jsonl
  rtf spark replay --dump ../shared/data/dbpedia \\
      --queries /tmp/q.jsonl --taxonomy ../shared/data/dbpedia/ontology/dbpedia_2015-10.nt.gz \\
      --algorithm rtfs --master 'local[2,2]' --output-format jsonl --output /tmp/rtf-spark-out
  sort /tmp/rtf-spark-out/part-* > spark.jsonl     # equals a sorted `rtf match` output

query partitions (the index split over 4 groups; output unchanged):
  rtf spark replay --dump ../shared/data/dbpedia --queries /tmp/q.jsonl \\
      --algorithm rtfs --query-partitions 4 --query-partitioning merging --output /tmp/out-k4

a saved index (built once, loaded by each worker without parsing a query):
  rtf index build --queries /tmp/q.jsonl --algorithm rtfs \\
      --taxonomy ../shared/data/dbpedia/ontology/dbpedia_2015-10.nt.gz --output /tmp/q.idx
  rtf spark replay --dump ../shared/data/dbpedia --index /tmp/q.idx --output /tmp/out-idx

a saved index in 4 partitions (each executor maps only the part files its tasks match):
  rtf spark replay --dump ../shared/data/dbpedia --index /tmp/q.idx --query-partitions 4 \
      --parts-folder /tmp/q-parts --output /tmp/out-idx-k4

on a cluster (rtf and its dependencies installed on every node, see docs/spark.md;
spark-submit runs a file: spark/dbpedia_eval.py of a checkout is this command):
  spark-submit --master yarn spark/dbpedia_eval.py --dump hdfs:///dbpedia/2015-10/ \\
      --queries q.jsonl --algorithm rtfs --partitions 400 --output hdfs:///out/run1
"""


#: The command's name in its messages.
PROG = "rtf spark replay"


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    algorithms = ("rtfs", "rtfm", "ibroker", "naive")
    p = argparse.ArgumentParser(
        prog=prog, description=__doc__.split("\n\n")[1],
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG)
    p.add_argument("--dump", required=True, nargs="+", metavar="FILE_OR_DIR",
                   help="dump files or folders of dump files (.nt/.ttl, plain, .gz or .bz2)")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--queries", metavar="Q.jsonl",
                        help='JSON Lines of {"id", "query", "subscriber"} (as for rtf match), or a .rq file')
    source.add_argument("--index", metavar="IDX",
                        help="a saved index (`rtf index build`) instead of --queries: its bytes are "
                             "broadcast and each worker loads it once; it fixes the algorithm and "
                             "taxonomy")
    p.add_argument("--taxonomy", metavar="ONTO",
                   help="ontology whose rdfs:subClassOf answers a/rdfs:subClassOf* (read on the driver)")
    p.add_argument("--text-analysis", metavar="FILE",
                   help="text analysis options, per field too (a JSON or TOML file, or a JSON object; "
                        "as rtf index build's --text-analysis); not with --index, which holds its own")
    p.add_argument("--algorithm", choices=algorithms,
                   help="the engine to run (required with --queries; with --index, the index's)")
    p.add_argument("--master", metavar="URL",
                   help="Spark master: local[*,2] (default: every core, a failed task tried twice), "
                        "local[N,F], local-cluster[N,C,MB], spark://host:7077, yarn, ...; "
                        "under spark-submit its --master is used unless this is given")
    p.add_argument("--partitions", type=int, metavar="N",
                   help="partitions of the grouped publications, i.e. filter tasks "
                        "(default: 2 x Spark's default parallelism)")
    p.add_argument("--query-partitions", type=int, metavar="K",
                   help="split the queries into K groups, one engine each, shipped only to the tasks "
                        "that filter against it; a publication goes only to the groups its predicates, "
                        "classes and words can match (default: one engine for all queries); with "
                        "--index: K partitions by a hash of the query ids, each a part file of the index "
                        "that every executor receives once and its tasks map")
    p.add_argument("--parts-folder", metavar="DIR",
                   help="with --index and --query-partitions: where the driver writes the index's K "
                        "part files, kept for a later run of the same index and K (default: a "
                        "temporary folder, removed at exit)")
    p.add_argument("--shared-index", action="store_true",
                   help="with --index: each executor's Python daemon maps the index file (or, with "
                        "--query-partitions, the part files of --parts-folder) once, before it forks "
                        "its Python workers, and they share its engine (rtf.spark.daemon); the file must "
                        "be at the same path on every executor's machine, else its workers load their "
                        "own, as without this (docs/spark.md, \"One index per executor\")")
    p.add_argument("--query-partitioning", choices=("hash", "containment", "merging"), default="hash",
                   help="how --query-partitions splits the queries: hash of the id; containment "
                        "(a query contained in another stays with it and runs only when it matches); "
                        "merging (containment, and queries with the same routing key together) "
                        "(default: hash)")
    p.add_argument("--measure-index-memory", action="store_true",
                   help="with --query-partitions: unpickle each group's engine on the driver under "
                        "tracemalloc and report its size (_metrics.json: index_memory_bytes)")
    p.add_argument("--output", required=True, metavar="DIR", help="folder for the part files and _metrics.json")
    p.add_argument("--output-format", choices=("parquet", "jsonl", "delta"), default="parquet",
                   help="parquet (default): publication, query, subscriber, bindings "
                        "(array<map<string,string>>); jsonl: the lines of `rtf match`, byte for byte; "
                        "delta: the Parquet rows as one Delta Lake table (also s3://bucket/path), "
                        "committed once per job (pip install 'rtf[delta]')")
    p.add_argument("--overwrite", action="store_true",
                   help="replace DIR if it holds the output of an earlier run")
    p.add_argument("--pipelined", action="store_true",
                   help="run read, group, filter and write as one Spark job without caching "
                        "(for dumps too large to persist); only the total and executor-side times are known")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="extra Spark setting, repeatable (e.g. --conf spark.driver.memory=8g)")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    return p


def _log(quiet: bool, prog: str):
    def log(message: str) -> None:
        if not quiet:
            print(f"{prog}: {message}", file=sys.stderr, flush=True)
    return log


def main(argv: list[str] | None = None, spark=None, prog: str = PROG) -> int:
    """Run the job; `spark`: an existing session to use (and not stop), as the tests do."""
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    if args.queries is not None and args.algorithm is None:
        parser.error("--algorithm is required with --queries")
    log = _log(args.quiet, prog)
    from rtf.errors import RtfError
    from rtf.spark.replay import ReplayConfig, ReplayError, package_zip, run_replay
    from rtf.spark.daemon import daemon_conf
    from rtf.spark.session import active_session, failure_message, make_session

    config = ReplayConfig(dumps=args.dump, queries=args.queries, index=args.index, output=args.output,
                          algorithm=args.algorithm, taxonomy=args.taxonomy,
                          partitions=args.partitions, timed=not args.pipelined,
                          overwrite=args.overwrite, output_format=args.output_format,
                          query_partitions=args.query_partitions,
                          query_partitioning=args.query_partitioning, parts_folder=args.parts_folder,
                          measure_memory=args.measure_index_memory, text_analysis=args.text_analysis,
                          shared_index=args.shared_index)
    spark = spark or active_session()  # (in-process callers: theirs, left running)
    own = spark is None
    t = time.perf_counter()
    try:
        if own:
            spark = make_session("rtf replay", args.master, args.conf + daemon_conf(args.shared_index),
                                 prog=prog)
            spark.sparkContext.setLogLevel("WARN")
            log(f"Spark {spark.version}, master {spark.sparkContext.master}, "
                f"default parallelism {spark.sparkContext.defaultParallelism} "
                f"(session up in {time.perf_counter() - t:.1f} s)")
        sc = spark.sparkContext
        if not sc.master.startswith("local"):
            # Ship this driver's rtf to the executors (its compiled dependencies
            # must be installed there).
            sc.addPyFile(package_zip(tempfile.mkdtemp(prefix="rtf-spark-")))
        metrics = run_replay(spark, config, log=log)
    except (ReplayError, RtfError, OSError) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # a failed Spark job: one line, not a Java stack trace
        if "py4j" in type(e).__module__ or "pyspark" in type(e).__module__:
            sc = spark.sparkContext if spark is not None else None
            print(f"{prog}: error: {failure_message(e, sc, 'the replay')} "
                  "(details in the Spark log above)", file=sys.stderr)
            return 1
        raise
    finally:
        if own and spark is not None:
            spark.stop()
    summary = {k: metrics[k] for k in ("algorithm", "queries", "publications", "matches",
                                      "bad_lines_skipped", "stages_s", "total_s")}
    summary["index_bytes"] = metrics["index"]["bytes"]
    summary["throughput"] = metrics["throughput"]
    if "query_partitions" in metrics:
        qp = metrics["query_partitions"]
        summary["query_partitions"] = {key: qp[key] for key in (
            "k", "strategy", "contained_queries", "index_bytes_max", "pairs_routed", "pairs_skipped")}
    log(json.dumps(summary))
    if metrics.get("already_committed"):
        return 0  # (said by the job: nothing written)
    log(f"wrote {metrics['matches']} matches ({args.output_format}) "
        + ("in one commit" if args.output_format == "delta" else "and _metrics.json") + f" to {args.output}")
    return 0
