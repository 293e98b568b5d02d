"""Replaying RDF dumps through an engine on Spark.

This is the library behind ``spark/dbpedia_eval.py`` (see ``docs/spark.md``).
The job has five stages, each timed on its own:

1. **read+parse.** One ``sc.textFile`` per dump file: Hadoop decompresses
   ``.gz`` and ``.bz2`` (a ``.gz`` file is one partition, plain and ``.bz2``
   files are split). Each partition's lines are parsed in the executors, in
   batches of about `BATCH_CHARS` characters, by
   `rtf.io.reader.parse_ntriples_lines` (one pyoxigraph call per batch). Bad
   lines are skipped and counted in an accumulator, never a failed task.
   Consecutive triples with the same subject leave the partition as one
   record ``(subject, [(p, o), ...])`` (a sorted dump sends each resource's
   triples as one record, not one per triple).
2. **group.** ``combineByKey`` on the subject, over *all* files, into N
   partitions by CRC-32 of the subject: a resource whose types, abstract and
   properties come in different files (as DBpedia ships them) becomes one
   publication.
3. **broadcast.** The engine is built once on the driver from the queries,
   pickled (`rtf.spark.workers.pickle_blob`) and broadcast as bytes. With a saved index
   (``--index``) the driver broadcasts the index file's bytes as they are,
   checked but not loaded.
4. **filter.** ``mapPartitionsWithIndex``: each Python worker unpickles the
   engine (or loads it from the index bytes, `rtf.engine.Engine.from_bytes`)
   the first time it meets the broadcast and keeps it (`_ENGINES`), so
   a worker that runs many partitions pays it once; every publication goes
   through ``engine.match``.
5. **write.** The matches, as the lines of ``rtf match`` (`rtf.io.output.match_line`),
   go to JSON Lines part files with ``saveAsTextFile``; ``metrics.json`` beside
   them holds the counts, stage times and throughputs.

Stages run one Spark job each over persisted RDDs so that each can be timed
(``timed=True``); ``timed=False`` runs the whole pipeline as one job with no
cache, for dumps too large to persist, and then only the executor-side times
(parse, filter) and the total are known.

The functions that run in the executors are plain functions of this module
(`parse_lines`, `filter_records`), so they are tested without Spark; the
Spark part (`run_replay`) imports pyspark lazily.
"""

from __future__ import annotations

import itertools
import json
import os
import platform
import time
import uuid
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from operator import itemgetter
from pathlib import Path

from rtf.bench.machine import machine_info
from rtf.spark.dataframe import ListParam
from rtf.spark.dumps import ReplayError, dump_files
from rtf.spark.engines import engine_for
from rtf.spark.hadoopfs import HadoopFS, prepare_output
from rtf.spark.workers import (
    _ROUTERS,
    BATCH_CHARS,
    MAX_EXAMPLES,
    build_group_engines,
    engine_memory,
    filter_records,
    index_for_broadcast,
    parse_lines,
    pickle_blob,
    subject_partition,
    unpickle_blob,
    worker_rss_mb,
)

# ------------------------------------------------------------- accumulators


def _extend(acc: list, more: list) -> list:
    acc.extend(more)
    return acc


def _same(value: list) -> list:
    return value


# --------------------------------------------------------------------- Spark


@dataclass
class ReplayConfig:
    """What `run_replay` needs; mirrors the options of ``spark/dbpedia_eval.py``."""

    dumps: list[str]
    queries: str | None  # the queries file, or None with `index`
    output: str
    algorithm: str | None = None  # None: rtfs with `queries`, the index's algorithm with `index`
    taxonomy: str | None = None
    index: str | None = None  # a saved index (`rtf index build`) instead of `queries`
    partitions: int | None = None  # publications' partitions (default: 2 x default parallelism)
    timed: bool = True
    overwrite: bool = False
    batch_chars: int = BATCH_CHARS
    query_partitions: int | None = None  # K groups of queries (None: one engine for all)
    query_partitioning: str = "hash"  # rtf.spark.partition.STRATEGIES
    measure_memory: bool = False  # unpickle each group's engine on the driver under tracemalloc


def _round(x: float, n: int = 4) -> float:
    return round(x, n)


def run_replay(spark, config: ReplayConfig, log: Callable[[str], None] = lambda s: None) -> dict:
    """Run the job on `spark` (a SparkSession); write the matches and metrics.json; return the metrics."""
    from pyspark import StorageLevel

    sc = spark.sparkContext
    fs = HadoopFS(sc)
    t_start = time.perf_counter()
    files = dump_files(config.dumps, list_dir=fs.list_dir, warn=log)
    prepare_output(fs, config.output, config.overwrite)
    if config.partitions is not None and config.partitions < 1:
        raise ReplayError("--partitions must be at least 1")
    partitions = config.partitions or 2 * sc.defaultParallelism

    if config.index is None:
        if config.queries is None:
            raise ReplayError("give the queries: --queries Q.jsonl or --index IDX")
        config = replace(config, algorithm=config.algorithm or "rtfs")

    # The engine (or one per query group), built once on the driver; or the
    # bytes of a saved index, checked on the driver and loaded by the workers.
    t = time.perf_counter()
    k = config.query_partitions
    index_blob = None
    if config.index is not None:
        index_blob, index_stats = index_for_broadcast(config)
        config = replace(config, algorithm=index_stats["algorithm"])
        engine, n_queries = None, index_stats["queries"]
    elif k is not None:
        if k < 1:
            raise ReplayError("--query-partitions must be at least 1")
        groups, matchers, taxonomy = build_group_engines(
            config.algorithm, config.queries, k, config.query_partitioning, config.taxonomy)
        engine = None
        n_queries = sum(len(g.query_ids) for g in groups)
        index_stats = {"algorithm": config.algorithm, "queries": n_queries}
    else:
        from rtf.engine import Engine
        from rtf.io.queries import load_queries, register_all

        engine = Engine(config.algorithm, taxonomy=config.taxonomy)
        register_all(engine, load_queries(config.queries), str(config.queries))
        n_queries = len(engine)
        index_stats = engine.stats()
    build_s = time.perf_counter() - t
    if index_blob is not None:
        log(f"read the {config.algorithm} index {config.index}: {n_queries} queries, "
            f"{len(index_blob):,} bytes in {build_s:.2f} s")
    else:
        log(f"built the {config.algorithm} engine{'s' if k else ''}: {n_queries} queries in {build_s:.2f} s"
            + (f", {k} groups by {config.query_partitioning}" if k else ""))

    # One record per task, tagged with what it read or filtered: the driver keeps
    # one per split and per partition, so that a task Spark runs again (a
    # retry, a lost cached block) is not counted twice.
    split_stats = sc.accumulator([], ListParam())
    partition_stats = sc.accumulator([], ListParam())
    batch_chars = config.batch_chars
    keep = StorageLevel.MEMORY_AND_DISK
    stages: dict[str, float] = {}
    t_spark = time.perf_counter()

    # 1. read+parse, in the executors.
    def parse_file(source: str):
        def run(split, lines):
            local: dict = {}
            yield from parse_lines(lines, f"{source} split {split}", local, batch_chars)
            local.update(source=source, split=split)
            split_stats.add([local])
        return run

    parsed = sc.union([sc.textFile(f).mapPartitionsWithIndex(parse_file(f)) for f in files])
    read_partitions = parsed.getNumPartitions()
    def materialize(rdd, stage: str, done: str, previous=None) -> None:
        """Timed runs: compute and persist `rdd` as a job of its own, timed as `stage`."""
        if not config.timed:
            return
        t = time.perf_counter()
        rdd.persist(keep).count()
        stages[stage] = time.perf_counter() - t
        if previous is not None:
            previous.unpersist()
        log(f"{done} in {stages[stage]:.2f} s")

    materialize(parsed, "read_parse_s", f"read and parsed {len(files)} file(s)")

    # 2. group by subject across all files.
    grouped = parsed.combineByKey(_same, _extend, _extend, numPartitions=partitions,
                                  partitionFunc=subject_partition)
    materialize(grouped, "group_s", f"grouped into {partitions} partitions", previous=parsed)

    if k is not None:
        matches, blob_bytes, serialize_s, broadcast_call_s, unpersist, grouping = _filter_groups(
            sc, config, grouped, partitions, groups, matchers, taxonomy, partition_stats,
            materialize, stages, log)
    else:
        matches, blob_bytes, serialize_s, broadcast_call_s, unpersist = _filter_all(
            sc, engine, grouped, partition_stats, materialize, stages, log, index_blob, config.index)
        grouping = None
    # 5. write the matches.
    t = time.perf_counter()
    matches.saveAsTextFile(config.output)
    stages["write_s" if config.timed else "pipeline_s"] = time.perf_counter() - t
    if config.timed:
        matches.unpersist()
    spark_s = time.perf_counter() - t_spark
    total_s = time.perf_counter() - t_start
    unpersist()

    parts = sorted({p["partition"]: p for p in partition_stats.value}.values(),
                   key=itemgetter("partition"))
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
    fs.write_text(config.output.rstrip("/") + "/metrics.json", json.dumps(metrics, indent=2) + "\n")
    return metrics


def _filter_all(sc, engine, grouped, partition_stats, materialize, stages, log,
                index_blob: bytes | None = None, index_name: str | None = None):
    """Stages 3 and 4 with one engine: broadcast it; filter every partition against it.

    With `index_blob` (the bytes of the saved index `index_name`; `engine`
    is None) those bytes are broadcast as they are and every worker loads
    them with `rtf.engine.Engine.from_bytes`."""
    # 3. broadcast the serialized engine, or the index file's bytes.
    t = time.perf_counter()
    if index_blob is None:
        blob, load, how = pickle_blob(engine), unpickle_blob, "pickle"
    else:
        from rtf.engine import Engine

        blob, how = index_blob, "index file"
        load = partial(Engine.from_bytes, source=f"broadcast of {os.path.basename(index_name)}")
    serialize_s = time.perf_counter() - t
    t = time.perf_counter()
    engine_bc = sc.broadcast(blob)
    broadcast_call_s = time.perf_counter() - t
    stages["broadcast_s"] = serialize_s + broadcast_call_s
    token = uuid.uuid4().hex
    log(f"broadcast the engine: {len(blob):,} bytes ({how} {serialize_s:.3f} s, "
        f"broadcast {broadcast_call_s:.3f} s)")

    # 4. filter, in the executors: one engine per Python worker.
    def filter_partition(index, records):
        engine, load_s = engine_for(token, lambda: engine_bc.value, load)
        stats: dict = {}
        t0 = time.perf_counter()
        yield from filter_records(engine, records, stats)
        stats.update(partition=index, load_s=load_s, task_s=time.perf_counter() - t0,
                     worker=f"{platform.node()}:{os.getpid()}", rss_mb=worker_rss_mb())
        partition_stats.add([stats])

    matches = grouped.mapPartitionsWithIndex(filter_partition)
    materialize(matches, "filter_s", "filtered", previous=grouped)
    return matches, len(blob), serialize_s, broadcast_call_s, engine_bc.unpersist


def _filter_groups(sc, config, grouped, partitions, groups, matchers, taxonomy, partition_stats,
                   materialize, stages, log):
    """Stages 3 and 4 with K query groups (`rtf.spark.partition`).

    Each group's engine is pickled and broadcast on its own. Every
    publication goes, keyed ``(group, subject)``, to each group its routing
    keys can touch (`Router`); a shuffle puts group g's publications in
    filter partitions ``g * partitions ... (g + 1) * partitions - 1``, so each
    filter task unpickles only its group's engine. Returns what
    `_filter_all` returns plus a function making the per-group metrics.
    """
    from rtf.spark.partition import Router

    k = len(groups)
    t = time.perf_counter()
    blobs = [pickle_blob(m) if m is not None else None for m in matchers]
    router_blob = pickle_blob(Router(groups, taxonomy))
    serialize_s = time.perf_counter() - t
    t = time.perf_counter()
    group_bcs = [sc.broadcast(b) if b is not None else None for b in blobs]
    router_bc = sc.broadcast(router_blob)
    broadcast_call_s = time.perf_counter() - t
    stages["broadcast_s"] = serialize_s + broadcast_call_s
    tokens = [uuid.uuid4().hex for _ in groups]
    router_token = uuid.uuid4().hex
    blob_bytes = sum(len(b) for b in blobs if b is not None)
    log(f"broadcast {k} group engines: {blob_bytes:,} bytes in all, largest "
        f"{max((len(b) for b in blobs if b), default=0):,} (pickle {serialize_s:.3f} s)")
    memory = [engine_memory(b) if config.measure_memory and b is not None else None for b in blobs]
    route_stats = sc.accumulator([], ListParam())

    # Route: one record per (group, publication) pair the routing keeps.
    def route_partition(index, records):
        router = _ROUTERS.get(router_token)
        if router is None:
            _ROUTERS.clear()
            router = _ROUTERS[router_token] = unpickle_blob(router_bc.value)
        publications = pairs = 0
        t0 = time.perf_counter()
        for subject, po in records:
            publications += 1
            targets = router.groups_for([(subject, p, o) for p, o in po])
            pairs += len(targets)
            for g in targets:
                yield (g, subject), po
        route_stats.add([{"partition": index, "publications": publications, "pairs": pairs,
                          "route_s": time.perf_counter() - t0}])

    def group_partition(key) -> int:
        g, subject = key
        return g * partitions + subject_partition(subject) % partitions

    routed = grouped.mapPartitionsWithIndex(route_partition).partitionBy(
        k * partitions, group_partition)
    materialize(routed, "route_s", f"routed to {k} query groups", previous=grouped)

    def filter_partition(index, records):
        g = index // partitions
        stats: dict = {"group": g}
        t0 = time.perf_counter()
        load_s = 0.0
        records = iter(records)
        first = next(records, None)
        if first is not None:  # a task with nothing routed to it loads no engine
            engine, load_s = engine_for(tokens[g], lambda: group_bcs[g].value)
            pubs = ((s, po) for (_, s), po in itertools.chain([first], records))
            yield from filter_records(engine, pubs, stats)
        stats.update(partition=index, load_s=load_s, task_s=time.perf_counter() - t0,
                     worker=f"{platform.node()}:{os.getpid()}", rss_mb=worker_rss_mb())
        for key in ("publications", "triples", "matches", "filter_s"):
            stats.setdefault(key, 0)
        partition_stats.add([stats])

    matches = routed.mapPartitionsWithIndex(filter_partition)
    materialize(matches, "filter_s", "filtered", previous=routed)

    def unpersist():
        for bc in [router_bc, *group_bcs]:
            if bc is not None:
                bc.unpersist()

    def grouping(parts: list[dict]) -> dict:
        routes = {r["partition"]: r for r in route_stats.value}.values()
        pairs = sum(r["pairs"] for r in routes)
        routed_publications = sum(r["publications"] for r in routes)
        per_group = []
        for g, m, blob, mem in zip(groups, matchers, blobs, memory):
            mine = [p for p in parts if p["partition"] // partitions == g.index]
            filter_s = sum(p["filter_s"] for p in mine)
            per_group.append({
                "group": g.index, "queries": len(g.query_ids), "contained_queries": len(g.contained),
                "anchors": len(g.anchors), "always": g.always,
                "index_bytes": len(blob) if blob is not None else 0,
                "index_memory_bytes": mem,
                "publications_routed": sum(p["publications"] for p in mine),
                "matches": sum(p["matches"] for p in mine),
                "filter_s": _round(filter_s),
                "engine_loads": sum(1 for p in mine if p["load_s"] > 0),
                "worker_rss_mb_max": _max_rss(p for p in mine if p["publications"]),
            })
        sizes = [len(b) for b in blobs if b is not None]
        return {
            "k": k, "strategy": config.query_partitioning, "publications": routed_publications,
            "router_bytes": len(router_blob),
            "contained_queries": sum(len(g.contained) for g in groups),
            "index_bytes_total": blob_bytes, "index_bytes_max": max(sizes, default=0),
            "index_memory_bytes_max": max((x for x in memory if x is not None), default=None),
            "pairs_considered": k * routed_publications, "pairs_routed": pairs,
            "pairs_skipped": k * routed_publications - pairs,
            "route_s": _round(sum(r["route_s"] for r in routes)),
            "publications_per_group_max": max((g["publications_routed"] for g in per_group), default=0),
            "groups": per_group,
        }

    return matches, blob_bytes, serialize_s, broadcast_call_s, unpersist, grouping


def _max_rss(parts) -> float | None:
    values = [p["rss_mb"] for p in parts if p.get("rss_mb") is not None]
    return round(max(values), 1) if values else None


def _metrics(config, files, sc, spark, partitions, read_partitions, build_s, index_stats,
             index_bytes, serialize_s, broadcast_call_s, stages, spark_s, total_s, parts,
             count, bad_by_file, bad_examples, queries, publications=None) -> dict:
    # With query groups a partition's publications are (group, publication) pairs.
    pubs = sum(p["publications"] for p in parts) if publications is None else publications
    matches = sum(p["matches"] for p in parts)
    filter_cpu = sum(p["filter_s"] for p in parts)
    loads = [p["load_s"] for p in parts if p["load_s"] > 0]
    filter_wall = stages.get("filter_s")
    per_partition = []
    for p in parts:
        per_partition.append({
            "partition": p["partition"], "publications": p["publications"],
            "triples": p["triples"], "matches": p["matches"],
            "filter_s": _round(p["filter_s"]), "task_s": _round(p["task_s"]),
            "engine_load_s": _round(p["load_s"]), "worker": p["worker"],
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
            "load_s_total": _round(sum(loads)),
            "load_s_max": _round(max(loads, default=0.0)),
            "stats": index_stats,
        },
        "stages_s": {k: _round(v) for k, v in stages.items()},
        # Peak resident memory of a Python worker seen after a filter task: engine and all.
        "worker_rss_mb_max": _max_rss(parts),
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
    workers (see docs/spark.md).
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
        grammar = importlib.resources.files("rtf.grammar")
        for item in grammar.iterdir():
            if item.is_file() and item.name.endswith((".py", ".lark")):
                z.writestr(f"rtf/grammar/{item.name}", item.read_bytes())
    return str(target)
