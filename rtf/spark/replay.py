"""Replaying RDF dumps through an engine on Spark.

This is the library behind ``rtf spark replay`` (`rtf.spark.replay_command`; see ``docs/spark.md``).
The job has three stages, each timed on its own:

1. **read+parse.** Spark's ``text`` source reads each dump file (Hadoop
   decompresses ``.gz``, one partition a file, and ``.bz2``, which splits);
   the Python workers parse every partition's lines, about 1 MiB per
   pyoxigraph call, into rows of triples (`rtf.spark.dump_triples`). Bad
   lines are skipped and counted, never a failed task.
2. **match.** `rtf.spark.dataframe.match_publications` groups the triples by
   subject over *all* files (a resource whose types, abstract and
   properties come in different files, as DBpedia ships them, becomes one
   publication) and matches each publication in the Python workers
   through ``mapInArrow``. The engine travels as saved-index bytes: the
   file given with ``--index`` as it is, or the engine built on the driver
   from ``--queries``, saved to bytes (`rtf.engine.Engine.to_bytes`); each
   Python worker builds it once and keeps it (`rtf.spark.engines`).
3. **write.** Parquet (publication, query, subscriber, bindings as
   ``array<map<string,string>>``) or, with ``output_format="jsonl"``, the
   lines of ``rtf match`` byte for byte; ``_metrics.json`` beside them holds
   the counts, stage times and throughputs.

With ``timed=False`` the three run as one Spark job without caching (for
dumps too large to persist); then only the executor-side times (parse,
match) and the total are known. With query groups (``query_partitions``)
the match stage is `rtf.spark.query_groups` instead.
"""

from __future__ import annotations

import json
import os
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from operator import itemgetter
from pathlib import Path

from rtf.bench.machine import machine_info
from rtf.spark.dataframe import (
    LINES_SCHEMA,
    MATCH_SCHEMA,
    IndexBytes,
    ListParam,
    collected,
    index_bytes,
    input_shape,
    map_matches,
    match_publications,
    task_metrics,
)
from rtf.spark.dump_triples import read_triples
from rtf.spark.dumps import ReplayError, dump_files
from rtf.spark.daemon import share_index
from rtf.spark.hadoopfs import HadoopFS, prepare_output
from rtf.spark.session import use_worker_python
from rtf.spark.workers import BATCH_CHARS, MAX_EXAMPLES, build_group_engines, max_rss

#: The output formats: Parquet rows, or the JSON Lines of ``rtf match``.
OUTPUT_FORMATS = ("parquet", "jsonl", "delta")
#: The figures of a run, beside the matches (a name every Parquet reader skips).
METRICS = "_metrics.json"


@dataclass
class ReplayConfig:
    """What `run_replay` needs; mirrors the options of ``rtf spark replay``."""

    dumps: list[str]
    queries: str | None  # the queries file, or None with `index`
    output: str
    algorithm: str | None = None  # None: rtfs with `queries`, the index's algorithm with `index`
    taxonomy: str | None = None
    index: str | None = None  # a saved index (`rtf index build`) instead of `queries`
    partitions: int | None = None  # publications' partitions (default: 2 x default parallelism)
    timed: bool = True
    overwrite: bool = False
    output_format: str = "parquet"  # OUTPUT_FORMATS
    batch_chars: int = BATCH_CHARS
    query_partitions: int | None = None  # K groups of queries (None: one engine for all)
    query_partitioning: str = "hash"  # rtf.spark.partition.STRATEGIES
    parts_folder: str | None = None  # with index and query_partitions: where the part files are kept
    measure_memory: bool = False  # unpickle each group's engine on the driver under tracemalloc
    text_analysis: str | None = None  # with `queries`: --text-analysis (`rtf.io.analysis_file`)
    shared_index: bool = False  # with `index`: each executor's daemon maps it once (`rtf.spark.daemon`)


def _round(x: float, n: int = 4) -> float:
    return round(x, n)


def run_replay(spark, config: ReplayConfig, log: Callable[[str], None] = lambda s: None) -> dict:
    """Run the job on `spark` (a SparkSession); write the matches and their metrics; return the metrics."""
    sc = spark.sparkContext
    use_worker_python(sc)
    fs = HadoopFS(sc)
    t_start = time.perf_counter()
    if config.output_format not in OUTPUT_FORMATS:
        raise ReplayError(f"--output-format must be one of {', '.join(OUTPUT_FORMATS)}")
    files = dump_files(config.dumps, list_dir=fs.list_dir, warn=log)
    table = None
    if config.output_format == "delta":  # one transaction, idempotent by the job's inputs
        from rtf.spark.delta_output import JobTable, job_id

        table = JobTable(config.output, job_id(files, config.index or config.queries or "", [
            config.taxonomy or "", str(config.algorithm), str(config.query_partitions),
            config.query_partitioning]), config.overwrite)
        done = table.committed()
        if done is not None:
            log(f"{config.output}: this job ({table.app_id}) is already committed; nothing to do")
            return {**done, "already_committed": True}
        table.prepare()
    else:
        prepare_output(fs, config.output, config.overwrite)
    if config.partitions is not None and config.partitions < 1:
        raise ReplayError("--partitions must be at least 1")
    if config.parts_folder is not None and (config.index is None or config.query_partitions is None):
        raise ReplayError("--parts-folder holds the part files of --index with --query-partitions: give both")
    if config.shared_index and config.index is None:
        raise ReplayError("--shared-index shares the saved index of --index: give it")
    partitions = config.partitions or 2 * sc.defaultParallelism

    if config.index is None:
        if config.queries is None:
            raise ReplayError("give the queries: --queries Q.jsonl or --index IDX")
        config = replace(config, algorithm=config.algorithm or "rtfs")

    # The engine (or one per query group), built once on the driver; or the
    # bytes of a saved index, checked on the driver and loaded by the workers.
    t = time.perf_counter()
    k = config.query_partitions
    index_blob = index_data = None
    if config.index is not None:
        index_blob, index_stats = index_for_broadcast(config)
        # (read, checked and hashed once: 1.88 GB at 10M queries took ~20 s a pass on the driver)
        index_data = IndexBytes(index_blob, config.index, index_stats, index_stats["sha256"])
        config = replace(config, algorithm=index_stats["algorithm"])
        n_queries = index_stats["queries"]
    elif k is not None:
        if k < 1:
            raise ReplayError("--query-partitions must be at least 1")
        if config.text_analysis is not None:  # (a publication's words route it: default words only)
            raise ReplayError("--text-analysis cannot be used with --query-partitions yet")
        groups, matchers, taxonomy = build_group_engines(
            config.algorithm, config.queries, k, config.query_partitioning, config.taxonomy)
        n_queries = sum(len(g.query_ids) for g in groups)
        index_stats = {"algorithm": config.algorithm, "queries": n_queries}
    else:
        from rtf.engine import Engine
        from rtf.io.queries import load_queries, register_all

        from rtf.io.analysis_file import read_text_analysis

        # (every model is read for the bytes the workers build from: kept)
        engine = Engine(config.algorithm, taxonomy=config.taxonomy, text_analysis=(
            None if config.text_analysis is None else read_text_analysis(config.text_analysis)), keep_models=True)
        register_all(engine, load_queries(config.queries), str(config.queries))
        n_queries = len(engine)
        index_stats = engine.stats()
    build_s = time.perf_counter() - t
    serialize_s = 0.0
    split_early = None
    if config.shared_index:  # (before the job's first Python task starts the executors' daemons)
        if k is not None and config.index is not None:  # (their part files must be there by then)
            from rtf.spark.index_parts import partitioned_plans

            split_early = partitioned_plans(sc, index_data, k, config.parts_folder)
        share_index(sc, [config.index] if split_early is None else split_early[1]["paths"])
    if index_blob is not None:
        log(f"read the {config.algorithm} index {config.index}: {n_queries} queries, "
            f"{len(index_blob):,} bytes in {build_s:.2f} s")
    else:
        log(f"built the {config.algorithm} engine{'s' if k else ''}: {n_queries} queries in {build_s:.2f} s"
            + (f", {k} groups by {config.query_partitioning}" if k else ""))
        if k is None:
            t = time.perf_counter()
            index_blob = engine.to_bytes()  # what the workers build from: never a pickle
            serialize_s = time.perf_counter() - t
            del engine

    # One record per task, tagged with what it read or matched: the driver keeps
    # one per split and per partition, so that a task Spark runs again (a
    # retry, a lost cached block) is not counted twice.
    split_stats = sc.accumulator([], ListParam())
    stages: dict[str, float] = {}
    previous_conf = {key: spark.conf.get(key, None) for key in _SHUFFLE_CONF}
    # Exactly `partitions` match tasks: adaptive execution would merge a small dump's
    # shuffle partitions into one task on one core.
    spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
    spark.conf.set("spark.sql.adaptive.coalescePartitions.enabled", "false")
    t_spark = time.perf_counter()
    try:
        def materialize(frame, stage: str, done: str, previous=None) -> None:
            """Timed runs: compute and persist `frame` (an RDD or DataFrame) as a job of its own."""
            if not config.timed:
                return
            from pyspark import StorageLevel

            t = time.perf_counter()
            frame.persist(StorageLevel.MEMORY_AND_DISK).count()
            stages[stage] = time.perf_counter() - t
            if previous is not None:
                previous.unpersist()
            log(f"{done} in {stages[stage]:.2f} s")

        # 1. read+parse, in the executors.
        triples = read_triples(spark, files, split_stats, config.batch_chars)
        read_partitions = triples.rdd.getNumPartitions()
        materialize(triples, "read_parse_s", f"read and parsed {len(files)} file(s)")

        # 2. match (group by subject, filter).
        if k is not None and config.index is not None:  # the index's K part files, mapped
            from rtf.spark.index_parts import partitioned_plans

            task_acc = task_metrics(sc)
            t = time.perf_counter()
            plans, split = split_early or partitioned_plans(sc, index_data, k,
                                                            config.parts_folder)
            log(f"split the index into {k} partitions by query id in {split['split_s']:.2f} s"
                + ("" if split["written"] else f" (found in {config.parts_folder})"))
            matches = map_matches(triples, plans, input_shape(triples), lines=config.output_format == "jsonl",
                                  metrics=task_acc)
            broadcast_call_s = time.perf_counter() - t
            stages["broadcast_s"] = broadcast_call_s
            blob_bytes, unpersist = max(split["bytes"]), lambda: None
            grouping = lambda parts: index_partitions(split, parts)  # noqa: E731
            materialize(matches, "match_s", f"grouped and matched in {partitions} partitions x {k}",
                        previous=triples)
            parts_of = lambda: [_partition_figures(t) for t in collected(task_acc)]  # noqa: E731
        elif k is not None:
            from rtf.spark.query_groups import filter_groups, grouped_records

            partition_stats = sc.accumulator([], ListParam())
            grouped = grouped_records(triples)
            materialize(grouped, "group_s", f"grouped into {partitions} partitions", previous=triples)
            lines, blob_bytes, group_serialize_s, broadcast_call_s, unpersist, grouping = filter_groups(
                sc, config, grouped, partitions, groups, matchers, taxonomy, partition_stats,
                materialize, stages, log)
            serialize_s += group_serialize_s
            matches = (spark.createDataFrame(lines.map(lambda line: (line,)), LINES_SCHEMA)
                       if config.output_format == "jsonl" else spark.read.json(lines, schema=MATCH_SCHEMA))
            parts_of = lambda: sorted({p["partition"]: p for p in partition_stats.value}.values(),  # noqa: E731
                                      key=itemgetter("partition"))
        else:
            task_acc = task_metrics(sc)
            t = time.perf_counter()
            matches = match_publications(triples, index_data or index_blob, lines=config.output_format == "jsonl",
                                         metrics=task_acc)
            broadcast_call_s = time.perf_counter() - t
            stages["broadcast_s"] = serialize_s + broadcast_call_s
            blob_bytes, unpersist, grouping = len(index_blob), lambda: None, None
            materialize(matches, "match_s", f"grouped and matched in {partitions} partitions",
                        previous=triples)
            parts_of = lambda: [_partition_figures(t) for t in collected(task_acc)]  # noqa: E731

        # 3. write the matches.
        t = time.perf_counter()
        if table is not None:
            from rtf.spark.stream import crash_point

            written = table.write(matches)
            crash_point("written", "job")  # (the crash tests: files written, not committed)
        else:
            writer = matches.write
            (writer.text if config.output_format == "jsonl" else writer.parquet)(config.output)
        stages["write_s" if config.timed else "pipeline_s"] = time.perf_counter() - t
        if config.timed:
            matches.unpersist()
        spark_s = time.perf_counter() - t_spark
        total_s = time.perf_counter() - t_start
        unpersist()
    finally:
        for key, value in previous_conf.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)

    parts = parts_of()
    splits = sorted({(s["source"], s["split"]): s for s in split_stats.value}.items())
    count: dict = {}
    bad_by_file: dict[str, int] = {}
    bad_examples: list[str] = []
    for (source, _), s in splits:
        for key, value in s.items():
            if isinstance(value, (int, float)) and key != "split":
                count[key] = count.get(key, 0) + value
        if s.get("bad_lines"):
            bad_by_file[source] = bad_by_file.get(source, 0) + s["bad_lines"]
            bad_examples += s.get("bad_examples", [])
    query_groups = grouping(parts) if grouping is not None else None
    metrics = _metrics(config, files, sc, spark, partitions, read_partitions, build_s,
                       index_stats, blob_bytes, serialize_s, broadcast_call_s, stages,
                       spark_s, total_s, parts, count, bad_by_file, bad_examples, n_queries,
                       publications=query_groups["publications"] if query_groups else None)
    if query_groups is not None:
        metrics["query_partitions"] = query_groups
    if table is not None:
        table.commit(written, metrics)  # the commit: the matches and their metrics, at once
    else:
        fs.write_text(config.output.rstrip("/") + "/" + METRICS, json.dumps(metrics, indent=2) + "\n")
    return metrics


def index_for_broadcast(config: ReplayConfig) -> tuple[bytes, dict]:
    """(the bytes of the saved index `config.index`, its stats), checked on the driver.

    The header, checksum and body are verified here (`index_bytes`), so a
    bad file fails before any Spark work, and the options the index fixes
    are refused as ``rtf match --index`` refuses them. The engine itself is
    built only in the workers, from these bytes."""
    if config.queries is not None:
        raise ReplayError("--index and --queries exclude each other: the index holds the queries")
    if config.query_partitions is not None and config.query_partitioning != "hash":
        raise ReplayError(f"--query-partitioning {config.query_partitioning} needs the queries' text "
                          "(--queries): with --index the partitions are by a hash of the query ids")
    if config.query_partitions is not None and config.query_partitions < 1:
        raise ReplayError("--query-partitions must be at least 1")
    if config.taxonomy:
        raise ReplayError("--taxonomy cannot be used with --index: the index holds its taxonomy "
                          "(rebuild it with `rtf index build --taxonomy`)")
    if config.text_analysis is not None:
        raise ReplayError("--text-analysis cannot be used with --index: the index holds its text analysis "
                          "(rebuild it with `rtf index build --text-analysis`)")
    data = index_bytes(config.index)
    algorithm = data.info["algorithm"]
    if config.algorithm and config.algorithm != algorithm:
        raise ReplayError(f"--algorithm {config.algorithm} but the index {config.index} is {algorithm}: "
                          "leave --algorithm out, or rebuild the index")
    return data.data, {**data.info, "index_file": str(config.index), "sha256": data.sha256}


_SHUFFLE_CONF = ("spark.sql.shuffle.partitions", "spark.sql.adaptive.coalescePartitions.enabled")


def index_partitions(split: dict, parts: list[dict]) -> dict:
    """``query_partitions`` of the metrics for an index's partitions (`rtf.spark.index_parts`)."""
    pubs = sum(p["publications"] for p in parts)  # (partition 0's tasks count the input)
    return {**split, "publications": pubs, "contained_queries": 0, "index_bytes_max": max(split["bytes"]),
            "index_bytes_total": sum(split["bytes"]), "pairs_routed": split["k"] * pubs, "pairs_skipped": 0,
            "engine_loads": sum(1 for p in parts if p["load_s"] > 0)}


def _partition_figures(task: dict) -> dict:
    """A match task's figures under the names the metrics use."""
    return {**task, "filter_s": task["match_s"]}


def _metrics(config, files, sc, spark, partitions, read_partitions, build_s, index_stats,
             index_bytes, serialize_s, broadcast_call_s, stages, spark_s, total_s, parts,
             count, bad_by_file, bad_examples, queries, publications=None) -> dict:
    # With query groups a partition's publications are (group, publication) pairs.
    pubs = sum(p["publications"] for p in parts) if publications is None else publications
    matches = sum(p["matches"] for p in parts)
    filter_cpu = sum(p["filter_s"] for p in parts)
    loads = [p["load_s"] for p in parts if p["load_s"] > 0]
    filter_wall = stages.get("match_s", stages.get("filter_s"))
    per_partition = []
    for p in parts:
        per_partition.append({
            "partition": p["partition"], "publications": p["publications"],
            "triples": p["triples"], "matches": p["matches"],
            "filter_s": _round(p["filter_s"]), "task_s": _round(p["task_s"]),
            "engine_load_s": _round(p["load_s"]), "engine_shared": bool(p.get("shared")), "worker": p["worker"],
            "worker_rss_mb": _round(p["rss_mb"], 1) if p.get("rss_mb") is not None else None,
            "publications_per_s": round(p["publications"] / p["filter_s"], 1) if p["filter_s"] else None,
        })
    busy = [p["filter_s"] for p in parts if p["publications"]]
    return {
        "algorithm": config.algorithm,
        "queries": queries,
        "dumps": files,
        "output": config.output,
        "timed_stages": config.timed,
        "spark": {"version": spark.version, "master": sc.master,
                  "default_parallelism": sc.defaultParallelism,
                  "read_partitions": read_partitions, "partitions": partitions},
        "machine": machine_info(),
        "publications": pubs,
        "matches": matches,
        "lines": count.get("lines", 0),
        "triples": count.get("triples", 0),
        "bytes": count.get("bytes", 0),
        "bad_lines_skipped": count.get("bad_lines", 0),
        "bad_lines_by_file": bad_by_file,
        "bad_line_examples": bad_examples[:MAX_EXAMPLES],
        "lines_with_replacement_char": count.get("replacement_char_lines", 0),
        "index": {
            "bytes": index_bytes,
            "build_s": _round(build_s),
            "serialize_s": _round(serialize_s),
            "broadcast_call_s": _round(broadcast_call_s),
            "loads": len(loads),
            "shared": sum(1 for p in parts if p.get("shared")),  # tasks on their daemon's engine
            "load_s_total": _round(sum(loads)),
            "load_s_max": _round(max(loads, default=0.0)),
            "stats": index_stats,
        },
        "stages_s": {k: _round(v) for k, v in stages.items()},
        # Peak resident memory of a Python worker seen after a filter task: engine and all.
        "worker_rss_mb_max": max_rss(parts),
        "executor_s": {"parse": _round(count.get("parse_s", 0.0)), "filter": _round(filter_cpu)},
        "spark_s": _round(spark_s),
        "total_s": _round(total_s),
        "throughput": {
            "publications_per_s": round(pubs / spark_s, 1) if spark_s else None,
            "filter_publications_per_s": round(pubs / filter_wall, 1) if filter_wall else None,
            "triples_per_s": round(count.get("triples", 0) / spark_s, 1) if spark_s else None,
            "mb_per_s": round(count.get("bytes", 0) / 2**20 / spark_s, 3) if spark_s else None,
            "per_core_filter_publications_per_s": round(pubs / filter_cpu, 1) if filter_cpu else None,
            "partition_filter_s_max_over_mean":
                round(max(busy) / (sum(busy) / len(busy)), 3) if busy and sum(busy) else None,
        },
        "partitions": per_partition,
    }


# ------------------------------------------------------------------ cluster


def package_zip(directory: str | os.PathLike) -> str:
    """Zip the installed ``rtf`` package (grammar included) for ``sc.addPyFile``.

    On a cluster the executors must import the same ``rtf`` as the driver; its
    compiled dependencies (pyoxigraph, marisa-trie) must be installed on the
    workers (see docs/spark.md). A folder of modules without ``__init__.py``
    (a namespace package, as ``rtf/algebra`` is) gets an empty one: Python's
    zip importer finds no namespace package, and every task failed with
    "No module named 'rtf.algebra'".
    """
    import importlib.resources

    import rtf

    root = Path(rtf.__file__).resolve().parent
    target = Path(directory) / "rtf.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as z:
        for path in sorted(root.rglob("*")):
            rel = path.relative_to(root)
            if path.is_file() and "__pycache__" not in rel.parts and rel.parts[0] != "grammar":
                z.write(path, f"rtf/{rel.as_posix()}")
            elif (path.is_dir() and "__pycache__" not in rel.parts and any(path.glob("*.py"))
                  and not (path / "__init__.py").exists()):
                z.writestr(f"rtf/{rel.as_posix()}/__init__.py", "")
        grammar = importlib.resources.files("rtf.grammar")
        for item in grammar.iterdir():
            if item.is_file() and item.name.endswith((".py", ".lark")):
                z.writestr(f"rtf/grammar/{item.name}", item.read_bytes())
    return str(target)
