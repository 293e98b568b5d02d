"""Query partitions of a saved index: ``--query-partitions K`` with ``--index``, and in the stream.

Query *q* is in partition ``crc32(q's id) % K`` (`part_of`: the ``hash``
strategy of `rtf.spark.partition`, which needs only the id), so a query of
the index and a later operation of the queries log on the same id
(`part_ops`) always land in the same partition, and a query is in exactly
one partition at every operation number.

The driver writes the K part files of an index once (`split_index`: each a
saved index of its partition's queries, taxonomy and options, named by the
index's SHA-256, so a second run finds them), and ships each to every
executor once (``SparkContext.addFile``). A task of partition g maps its
part file (`rtf.engine.Engine.load`: ``mmap``), so the Python workers of one
executor share the file's pages, and builds nothing it does not need: a
worker holds one partition's engine at a time (`rtf.spark.engines`).

The publications are crossed with the K partitions (`rtf.spark.dataframe.map_matches`):
the input is matched K times, once per partition's plan, and the K results
are one union -- each task matches one partition only. The union of the
partitions' matches is the matches of the whole index: a publication
matches a query, whichever engine holds it.
"""

from __future__ import annotations

import atexit
import gc
import os
import shutil
import tempfile
import time
from pathlib import Path

from rtf.matching.query_table import bulk_memos
from rtf.spark.engines import EnginePlan

#: The files added to each SparkContext (application id -> names), so that none is added twice.
_SHIPPED: dict[str, set[str]] = {}
_TEMP: list[str] = []


def part_of(query_id: str, k: int) -> int:
    """The partition (0 .. k-1) of the query with id `query_id`."""
    from rtf.spark.partition import hash_group

    return hash_group(query_id, k)


def part_ops(ops: tuple, g: int, k: int) -> tuple:
    """The operations ``(n, op)`` of the queries log that concern partition `g` of `k`
    (those on a query id of that partition; an operation without an id goes nowhere)."""
    return tuple((n, op) for n, op in ops if isinstance(op.get("id"), str) and part_of(op["id"], k) == g)


def part_names(name: str, k: int) -> list[str]:
    """The file names of the `k` parts of the index named `name` (its SHA-256, in short)."""
    return [f"{name}.part{g}of{k}.idx" for g in range(k)]


def split_engine(engine, k: int) -> list:
    """`k` engines of `engine`'s algorithm, taxonomy and options, partition g holding the
    queries ``part_of(id, k) == g`` in `engine`'s registration order."""
    from rtf.engine import Engine

    records: list[list] = [[] for _ in range(k)]
    for r in engine.queries():
        records[part_of(r.id, k)].append((r.query, r.id, r.subscriber, r.metadata))
    parts = []
    was_enabled = gc.isenabled()
    gc.disable()  # millions of long-lived objects, no cycles (as `Engine.from_bytes`)
    try:
        for mine in records:
            part = Engine(engine.algorithm, taxonomy=engine.taxonomy, max_solutions=engine.max_solutions,
                          text_analysis=engine.text_analysis)
            with bulk_memos():  # equal tuples of the file one value: each shape computed once
                part.register_parsed(mine)
            parts.append(part)
    finally:
        if was_enabled:
            gc.enable()
    return parts


def split_index(data, paths: list[Path], source: str = "<index>") -> dict:
    """Write the ``len(paths)`` part files of the index bytes `data` to `paths` (partition g
    to ``paths[g]``) unless all are there already; what it took (``split_s``, ``written``,
    the parts' ``queries`` when written, and ``bytes``)."""
    from rtf.engine import Engine

    t = time.perf_counter()
    written = not all(p.is_file() for p in paths)
    queries = None
    if written:
        for folder in {p.parent for p in paths}:
            folder.mkdir(parents=True, exist_ok=True)
        if len(paths) == 1:  # the index itself, as it is
            from rtf.io.files import write_atomically

            from rtf.io import store

            write_atomically(paths[0], bytes(data))
            queries = [store.summary(bytes(data), source)["queries"]]
        else:
            parts = split_engine(Engine.from_bytes(data, source), len(paths))
            queries = [len(p) for p in parts]
            for part, path in zip(parts, paths):
                part.save(path)  # (atomic: a reader sees a whole file or none)
    return {"k": len(paths), "strategy": "hash", "split_s": round(time.perf_counter() - t, 4),
            "written": written, "queries": queries, "bytes": [p.stat().st_size for p in paths]}


def part_paths(sha256: str, k: int, folder: str | os.PathLike | None = None) -> list[Path]:
    """Where `partitioned_plans` keeps the `k` part files of the index of SHA-256 `sha256`."""
    return [Path(temp_folder() if folder is None else folder) / n for n in part_names(sha256[:16], k)]


def temp_folder() -> Path:
    """A folder for this driver's part files, removed when it exits."""
    if not _TEMP:
        _TEMP.append(tempfile.mkdtemp(prefix="rtf-index-parts-"))
        atexit.register(shutil.rmtree, _TEMP[0], True)
    return Path(_TEMP[0])


class PartFile:
    """A base whose ``.value`` is the executor's local copy of a file shipped by `ship`."""

    def __init__(self, name: str):
        self.name = name

    @property
    def value(self) -> str:
        from pyspark import SparkFiles

        return SparkFiles.get(self.name)

    def unpersist(self) -> None:
        """As a broadcast's, when the stream drops an old base (`rtf.spark.stream`): nothing
        to free, a file shipped stays with the executors."""


def load_file(path: str, source: str):
    """The engine of the saved index at `path`, mapped (`Engine.load`)."""
    from rtf.engine import Engine

    return Engine.load(path)


def ship(sc, paths: list[Path]) -> list[PartFile]:
    """Each file of `paths` shipped to every executor once per SparkContext (``addFile``)."""
    shipped = _SHIPPED.setdefault(sc.applicationId, set())
    for old in [a for a in _SHIPPED if a != sc.applicationId]:
        del _SHIPPED[old]
    for path in paths:
        if path.name not in shipped:
            sc.addFile(str(path))
            shipped.add(path.name)
    return [PartFile(p.name) for p in paths]


def shipped(sc) -> set[str]:
    """The names of the files `ship` added to this SparkContext (an executor that starts later
    fetches them all: they must stay)."""
    return set(_SHIPPED.get(sc.applicationId, ()))


def part_plans(lineage: str, bases: list, base_op: int, ops: tuple, pin: int, source: str,
               paths: list[Path] | None = None) -> list[EnginePlan]:
    """One plan per partition (`bases[g]` its base at operation `base_op`, a `PartFile`):
    partition g's engine at `pin` is its base and its share of `ops` (`part_ops`); `paths`, the
    part files here, give each plan its file's key (`rtf.spark.engines.EnginePlan.key`)."""
    from rtf.spark.engines import file_key

    k = len(bases)
    keys = [file_key(p) for p in paths] if paths is not None else [None] * k
    return [EnginePlan(f"{lineage}#{g}/{k}", base, base_op, part_ops(ops, g, k), pin,
                       source=f"{source} (part {g} of {k})", load=load_file, key=keys[g])
            for g, base in enumerate(bases)]


def partitioned_plans(sc, data, k: int, folder: str | os.PathLike | None = None) -> tuple[list[EnginePlan], dict]:
    """The plans of the `k` partitions of index `data` (`rtf.spark.dataframe.IndexBytes`),
    their files written into `folder` (default: a temporary folder of this driver) and
    shipped; and `split_index`'s figures, with the files' ``paths``."""
    if k < 1:
        raise ValueError("the number of query partitions must be at least 1")
    paths = part_paths(data.sha256, k, folder)
    info = split_index(data.data, paths, data.source)
    plans = part_plans(data.sha256, ship(sc, paths), 0, (), 0, os.path.basename(data.source), paths)
    return plans, {**info, "paths": [str(p) for p in paths]}
