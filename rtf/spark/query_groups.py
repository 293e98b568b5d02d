"""The replay with the queries split into K groups (``--query-partitions K``, `rtf.spark.partition`).

Each group's engine is pickled and broadcast on its own. Every
publication goes, keyed ``(group, subject)``, to each group its routing
keys can touch (`Router`); a shuffle puts group g's publications in
filter partitions ``g * partitions ... (g + 1) * partitions - 1``, so each
filter task unpickles only its group's engine. The matches leave as the
lines of ``rtf match`` (an RDD), which the replay writes as JSON Lines or
reads back as rows for Parquet.
"""

from __future__ import annotations

import itertools
import os
import platform
import time
import uuid

from rtf.spark.dataframe import ListParam
from rtf.spark.engines import engine_for
from rtf.spark.workers import (
    _ROUTERS,
    engine_memory,
    filter_records,
    max_rss,
    pickle_blob,
    subject_partition,
    unpickle_blob,
    worker_rss_mb,
)


def grouped_records(triples):
    """The publications of a triples DataFrame as ``(subject, [(p, o), ...])`` records (an RDD)."""
    from pyspark.sql import functions as F

    grouped = triples.groupBy("subject").agg(F.collect_list(F.struct("predicate", "object")).alias("po"))
    return grouped.rdd.map(lambda row: (row[0], [(pair[0], pair[1]) for pair in row[1]]))



def filter_groups(sc, config, grouped, partitions, groups, matchers, taxonomy, partition_stats,
                  materialize, stages, log):
    """Broadcast the group engines, route, filter (module doc).

    Returns the lines RDD, the engines' bytes in all, the seconds to pickle
    and to broadcast, a function that drops the broadcasts, and one that
    makes the per-group metrics from the filter partitions' figures."""
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
            engine, load_s = engine_for(tokens[g], lambda: group_bcs[g].value, unpickle_blob)
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
                "filter_s": round(filter_s, 4),
                "engine_loads": sum(1 for p in mine if p["load_s"] > 0),
                "worker_rss_mb_max": max_rss(p for p in mine if p["publications"]),
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
            "route_s": round(sum(r["route_s"] for r in routes), 4),
            "publications_per_group_max": max((g["publications_routed"] for g in per_group), default=0),
            "groups": per_group,
        }

    return matches, blob_bytes, serialize_s, broadcast_call_s, unpersist, grouping
