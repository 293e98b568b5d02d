"""``rtf spark stream``: continuous queries on Spark Structured Streaming.

Watches a folder for RDF files, matches every publication in them against
the registered queries, and writes the matches as Parquet (or a Delta
table), exactly once for every reader, even across a crash of the driver
and a restart from the checkpoint. The queries can change while the stream runs, through a queries
log. See docs/spark.md.

Also ``python -m rtf.spark stream`` and, in a checkout, ``spark/stream.py``
(for spark-submit); the library behind it is `rtf.spark.stream`.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import time

EPILOG = """\
input (--input DIR):
  every new file in DIR whose name matches --glob (default: N-Triples and
  N-Quads, plain, .gz or .bz2) is read once, as `rtf match --skip-invalid`
  reads a file: a publication per run of triples with one subject (or one
  named graph with --group-by graph); bad lines are skipped and counted.
  Drop files whole: write them elsewhere (or under a name starting with '.')
  and rename them into DIR.

queries:
  --index IDX         a saved index (`rtf index build`), copied into the checkpoint
  --queries-log DIR   an append-only log of register/unregister operations, followed
                      while the stream runs; append with `rtf spark queries-log`
  Each micro-batch is pinned to the number of operations the log held when it
  began: a query registered at operation n matches the publications of every
  batch pinned at n or later, and a batch replayed after a crash gives the
  same answers.

output (--output DIR), exactly once for every reader:
  DIR/batch_id=N/part-*.parquet   publication, query, subscriber, bindings
                                  (array<map<string,string>>), one row per match
  DIR/batch_id=N/_rtf_batch.json  the batch's stream, pin, files, counts, seconds, latencies
  DIR/_rtf_tmp/                   batches being written (readers skip '_' names)
  Read it with any Parquet reader that skips '_' and '.' names, e.g.
    python -c "import pyarrow.dataset as ds; print(ds.dataset('DIR', format='parquet',
               partitioning='hive').to_table().num_rows)"
  --output-format delta: one Delta Lake table (local or s3://bucket/path, S3 set by
  the AWS_* variables), each batch one transaction recording (stream id, batch id);
  the same columns and batch_id; the manifest in the commit's metadata:
    python -c "import deltalake; print(len(deltalake.DeltaTable('DIR').to_pandas()))"

example (a local run that retries a task whose Python worker dies, and stops
when no file came for 30 s; the index holds the ontology that answers the
queries' a/rdfs:subClassOf*):
  rtf index build --queries queries.jsonl --taxonomy ontology.nt --output q.idx
  rtf spark stream --input drops/ --output matches/ --checkpoint ckpt/ \\
      --index q.idx --queries-log qlog/ --master 'local[2,2]' --stop-when-idle 30
  rtf spark queries-log qlog/ register --id new1 \\
      --query 'SELECT ?s WHERE { ?s ?p ?o FILTER ftcontains(?o, "rio") }'

query partitions (each file's publications matched against 4 partitions of the queries,
each task one partition: an executor maps only the partitions its tasks match):
  rtf spark stream --input drops/ --output matches/ --checkpoint ckpt/ \\
      --index q.idx --queries-log qlog/ --query-partitions 4 --stop-when-idle 30

restarts: with the same --checkpoint and --output. An output goes with the
checkpoint that wrote it: a lost or new checkpoint beside an output that
holds batches, a damaged file of either, is refused before Spark starts, in
one line that says what to do (docs/limits.md); a new stream needs a new
--checkpoint and a new --output.

exit status: 0 stopped cleanly (--stop-when-idle), 1 error, 130 interrupted
(Ctrl-C or SIGTERM: the stream stops; a batch in progress is replayed at the
next start).
"""


#: The command's name in its messages.
PROG = "rtf spark stream"


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    from rtf.spark.session import DEFAULT_MASTER
    from rtf.spark.stream import DEFAULT_GLOB

    p = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG)
    p.add_argument("--input", required=True, metavar="DIR", help="folder watched for new RDF files")
    p.add_argument("--output", required=True, metavar="DIR",
                   help="the matches: a folder of Parquet batches, or a Delta table (also s3://bucket/path)")
    p.add_argument("--output-format", choices=("parquet", "delta"), default="parquet",
                   help="parquet (default): a folder per committed batch; delta: one Delta Lake table, "
                        "each batch one transaction (pip install 'rtf[delta]')")
    p.add_argument("--checkpoint", required=True, metavar="DIR",
                   help="Spark's checkpoint and the stream's own state; restart with the same one")
    p.add_argument("--index", metavar="IDX", help="a saved index (rtf index build): the starting queries")
    p.add_argument("--queries-log", metavar="DIR",
                   help="an append-only log of query operations to follow (created if missing)")
    p.add_argument("--algorithm", choices=("rtfs", "rtfm", "ibroker", "naive"),
                   help="with --queries-log and no --index: the engine (default rtfs)")
    p.add_argument("--taxonomy", metavar="ONTO",
                   help="with --queries-log and no --index: ontology answering a/rdfs:subClassOf*")
    p.add_argument("--text-analysis", metavar="FILE",
                   help="text analysis options, per field too (a JSON or TOML file, or a JSON object; "
                        "as rtf index build's --text-analysis); with --queries-log and no --index")
    p.add_argument("--source", choices=("files",), default="files",
                   help="where publications come from (files; Kafka: see docs/spark.md)")
    p.add_argument("--glob", default=DEFAULT_GLOB, help=f"names of the files to read (default {DEFAULT_GLOB})")
    p.add_argument("--group-by", choices=("subject", "graph"), default="subject",
                   help="a publication is a run of triples with one subject (default) or one named graph")
    p.add_argument("--trigger-seconds", type=float, default=1.0, metavar="S",
                   help="start a micro-batch at most every S seconds (default 1)")
    p.add_argument("--max-files-per-trigger", type=int, metavar="N",
                   help="at most N new files per micro-batch (default: all that arrived)")
    p.add_argument("--max-bytes-per-trigger", type=int, metavar="BYTES",
                   help="about BYTES of new files (as stored, compressed or not) per micro-batch, at least "
                        "one file (default: all that arrived); not with --max-files-per-trigger")
    p.add_argument("--stop-when-idle", type=float, metavar="S",
                   help="stop cleanly once, started and warmed up, the stream has waited S seconds "
                        "for a new file (default: run on)")
    p.add_argument("--query-partitions", type=int, metavar="K",
                   help="split the queries into K partitions by a hash of their ids: each task matches "
                        "one partition's engine, mapped from a part file every executor receives once; "
                        "the queries log's operations go to the partition of their query id "
                        "(default: one engine for all queries)")
    p.add_argument("--shared-index", action="store_true",
                   help="each executor's Python daemon maps the stream's index (its copy in the "
                        "checkpoint) once, before it forks its Python workers, and they share its engine "
                        "(rtf.spark.daemon; with --query-partitions, its K part files; the checkpoint must "
                        "be at the same path on every executor's machine)")
    p.add_argument("--compact-every", type=int, default=1000, metavar="N",
                   help="save the index anew once N operations followed the last saved one (default 1000)")
    p.add_argument("--no-warm-up", dest="warm_up", action="store_false",
                   help="do not build the engines in the workers before the first batch")
    p.add_argument("--no-keep-warm", dest="keep_warm", action="store_false",
                   help="let Spark stop idle Python workers (their engines are built again later)")
    p.add_argument("--metrics", metavar="FILE",
                   help="append one JSON line per committed batch (the batch's manifest) to FILE")
    p.add_argument("--master", metavar="URL",
                   help=f"Spark master (default {DEFAULT_MASTER}: every core, a failed task tried "
                        "twice); under spark-submit, its --master")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="extra Spark setting, repeatable")
    p.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"),
                   help="rtf's messages, on the driver and the workers (default INFO)")
    p.add_argument("--spark-log-level", default="WARN",
                   choices=("ALL", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "OFF"),
                   help="Spark's own log4j messages (default WARN)")
    return p


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv: list[str] | None = None, spark=None, prog: str = PROG) -> int:
    """Run the stream; `spark`: an existing session to use (and not stop), as the tests do."""
    args = build_parser(prog).parse_args(argv)
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        datefmt="%y/%m/%d %H:%M:%S", level=logging.WARNING, stream=sys.stderr)
    logging.getLogger("rtf").setLevel(args.log_level)
    log = logging.getLogger("rtf.spark")
    from rtf.errors import RtfError
    from rtf.spark.dumps import ReplayError
    from rtf.spark.daemon import daemon_conf
    from rtf.spark.session import active_session, failure_message, make_session
    from rtf.spark.stream import StreamConfig, StreamJob, check_checkpoint, check_config

    for name, value in (("--trigger-seconds", args.trigger_seconds),
                        ("--max-files-per-trigger", args.max_files_per_trigger),
                        ("--max-bytes-per-trigger", args.max_bytes_per_trigger),
                        ("--stop-when-idle", args.stop_when_idle), ("--compact-every", args.compact_every),
                        ("--query-partitions", args.query_partitions)):
        if value is not None and value <= 0:
            print(f"{prog}: error: {name} must be positive", file=sys.stderr)
            return 2
    if args.max_files_per_trigger and args.max_bytes_per_trigger:
        print(f"{prog}: error: give --max-files-per-trigger or --max-bytes-per-trigger, not both", file=sys.stderr)
        return 2
    config = StreamConfig(
        input=args.input, output=args.output, checkpoint=args.checkpoint, index=args.index,
        queries_log=args.queries_log, algorithm=args.algorithm, taxonomy=args.taxonomy,
        text_analysis=args.text_analysis,
        trigger_seconds=args.trigger_seconds, max_files_per_trigger=args.max_files_per_trigger,
        max_bytes_per_trigger=args.max_bytes_per_trigger,
        stop_when_idle=args.stop_when_idle, glob=args.glob, group_by=args.group_by,
        compact_every=args.compact_every, warm_up=args.warm_up, keep_warm=args.keep_warm,
        metrics=args.metrics, output_format=args.output_format, query_partitions=args.query_partitions,
        shared_index=args.shared_index)
    try:
        output, state, log_ops = check_config(config)
        check_checkpoint(config, output, state, log_ops)  # all told before a JVM starts
    except (ReplayError, RtfError, OSError) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 1
    spark = spark or active_session()  # (in-process callers: theirs, left running)
    own = spark is None
    signal.signal(signal.SIGTERM, _interrupt)
    error = None
    try:
        if own:
            t = time.perf_counter()
            # A whole file is one row: hand the workers a few dozen at a time, not 10,000.
            conf = ["spark.sql.execution.arrow.maxRecordsPerBatch=64", *args.conf]
            spark = make_session("rtf stream", args.master, conf + daemon_conf(args.shared_index), prog=prog)
            log.info("Spark %s, master %s, default parallelism %d (session up in %.1f s)",
                     spark.version, spark.sparkContext.master, spark.sparkContext.defaultParallelism,
                     time.perf_counter() - t)
        spark.sparkContext.setLogLevel(args.spark_log_level)
        job = StreamJob(spark, config)
        result = job.run()
    except KeyboardInterrupt:
        log.warning("interrupted: the stream stopped; a batch in progress runs again at the next start")
        return 130
    except (ReplayError, RtfError, OSError) as e:
        error = str(e)
    except Exception as e:  # a failed Spark job: one line, not a Java stack trace
        if "py4j" not in type(e).__module__ and "pyspark" not in type(e).__module__:
            raise
        error = failure_message(e, spark.sparkContext if spark is not None else None, "a micro-batch")
    finally:
        if own and spark is not None:
            spark.stop()
    if error is not None:  # last, after Spark's own shutdown lines
        print(f"{prog}: error: {error}", file=sys.stderr)
        return 1
    log.info("stopped: %d batch(es) committed in this run, %d in all", result["batches"],
             len(result["committed"]))
    return 0
