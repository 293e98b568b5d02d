"""The stream's query partitions (``rtf spark stream --query-partitions K``, `rtf.spark.index_parts`).

Partition g of a batch pinned at operation *pin* is the partition's share
of the stream's base at or below the pin, and the queries log's operations
after that base on query ids of the partition (`rtf.spark.index_parts.part_ops`):
a query is in exactly one partition at every pin, and a registration or
removal goes to the partition that holds (or will hold) its id.

The partitions' bases are files beside the stream's own bases, in
``CHECKPOINT/rtf/parts/``: the K parts of a base of the stream (its starting
index, a compaction without partitions), split once by the driver, and the
K engines of a compaction with partitions (each saved by a task holding it:
no process ever holds the whole index). They are derived files: one that is
lost or damaged is made again from the stream's bases and the log, which
give the same queries at the same operation; they never decide an answer.
Each is shipped to every executor once and mapped by the tasks of its
partition.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import time
from pathlib import Path

from rtf.errors import IndexFileError
from rtf.io.files import write_atomically
from rtf.spark.engines import engine_at, file_key, load_index
from rtf.spark.index_parts import load_file, part_plans, ship, shipped, split_index, temp_folder

log = logging.getLogger("rtf.spark")


def stream_base(sc, path: Path, as_file: bool) -> tuple[object, object]:
    """A stream's base index at `path` for its plans (`rtf.spark.engines.EnginePlan`): its
    ``base`` and ``load``. A broadcast of its bytes, or with `as_file` (every base with
    ``shared_index``: the executors' daemons map the one of the stream's start) the file shipped to every executor
    (``addFile``: streamed to disk, not through the JVMs' heaps -- a broadcast of the 1.88 GB
    10M index ran the driver's JVM out of memory) under a name of its content (a hard link, or
    a copy, in this driver's temporary folder), mapped by a worker that must build."""
    if not as_file:
        return sc.broadcast(path.read_bytes()), load_index
    link = temp_folder() / f"stream-base-{file_key(path).rsplit(':', 1)[1][:16]}.idx"
    if not link.exists():
        try:
            os.link(path, link)
        except OSError:  # (another file system)
            shutil.copyfile(path, link)
    return ship(sc, [link])[0], load_file


def shared_files(state, parts: StreamParts | None, pin: int) -> list[Path]:
    """What the executors' daemons map with ``--shared-index``: the base of a batch pinned at
    `pin` (the queries log's length as the stream starts; after a restart, the newest
    compaction's base, not the starting one), or its K part files with query partitions."""
    if parts is not None:
        return parts.paths(parts.split(pin))
    return [state.base_path(state.newest_base(pin))]


class StreamParts:
    """The K query partitions of a stream (`plans`, `compact`)."""

    def __init__(self, sc, state, stream: str, lineage: str, k: int):
        if k < 1:
            raise ValueError("--query-partitions must be at least 1")
        self.sc, self.state, self.k, self.lineage = sc, state, k, lineage
        self.prefix = stream[:12]
        self.folder: Path = state.folder / "parts"
        self._checked: set[int] = set()  # operations whose K files this run has checked or written
        self._pattern = re.compile(rf"^{self.prefix}-(\d+)\.part(\d+)of{k}\.idx$")

    def paths(self, op: int) -> list[Path]:
        return [self.folder / f"{self.prefix}-{op:020d}.part{g}of{self.k}.idx" for g in range(self.k)]

    def ops(self) -> list[int]:
        """The operations at which all K part files are there."""
        names = [m for m in map(self._pattern.match, _names(self.folder)) if m]
        count: dict[int, int] = {}
        for m in names:
            count[int(m.group(1))] = count.get(int(m.group(1)), 0) + 1
        return sorted(op for op, n in count.items() if n == self.k)

    def _usable(self, op: int) -> bool:
        """Whether the K part files of `op` are whole saved indexes (checked once a run)."""
        if op in self._checked:
            return True
        from rtf.io import store

        try:
            for path in self.paths(op):
                store.summary(store.read_index_bytes(path), str(path))
        except IndexFileError as e:
            log.warning("query partitions at operation %d: %s; made again", op, e)
            for path in self.paths(op):
                path.unlink(missing_ok=True)
            return False
        self._checked.add(op)
        return True

    def base_op(self, pin: int) -> int:
        """The operation of the newest partitions' base at or below `pin` (perhaps not made yet)."""
        return max([self.state.newest_base(pin), *(op for op in self.ops() if op <= pin)])

    def split(self, pin: int) -> int:
        """The operation of the partitions' base of a batch pinned at `pin` (the newest at or
        below it, no older than the stream's newest base), its K files made if need be."""
        whole = self.state.newest_base(pin)
        found = [op for op in self.ops() if whole <= op <= pin]
        base_op = next((op for op in reversed(found) if self._usable(op)), None)
        if base_op is None:
            base_op = whole
            path = self.state.base_path(whole)
            info = split_index(path.read_bytes(), self.paths(whole), str(path))
            self._checked.add(whole)
            if info["written"]:
                log.info("split the stream's index at operation %d into %d query partitions in %.2f s",
                         whole, self.k, info["split_s"])
        return base_op

    def plans(self, pin: int, log_ops) -> list:
        """The K plans of a batch pinned at `pin`: the partitions' base (`split`) and each
        partition's share of the operations after it; each plan names its file's key, so that
        a worker takes the engine its daemon mapped (``--shared-index``, `shared_files`)."""
        base_op = self.split(pin)
        ops = tuple(log_ops.read(after=base_op, upto=pin)) if log_ops is not None and pin > base_op else ()
        paths = self.paths(base_op)
        return part_plans(self.lineage, ship(self.sc, paths), base_op, ops, pin, "stream base", paths)

    def compact(self, spark, plans: list, pin: int) -> None:
        """Save each partition's engine at `pin` (one task per partition) as its new base."""
        t = time.time()
        rows = spark.range(self.k, numPartitions=self.k).mapInArrow(
            _part_compactor(plans), "part long, index binary").collect()
        for row, path in zip(sorted(rows, key=lambda r: r["part"]), self.paths(pin)):
            write_atomically(path, bytes(row["index"]))
        self._checked.add(pin)
        # The older compactions go, but for a stream base's split and the files this run has
        # shipped: an executor that starts later fetches every file the SparkContext added.
        keep = shipped(self.sc)
        for op in self.ops():
            if op < pin and op not in self.state.base_ops():
                for path in self.paths(op):
                    if path.name not in keep:
                        path.unlink(missing_ok=True)
        log.info("compacted the queries log in %d partitions: their indexes at operation %d saved "
                 "in %.2f s", self.k, pin, time.time() - t)


def _part_compactor(plans: list):
    def run(batches):
        import pyarrow as pa

        for batch in batches:
            for g in batch.column(0).to_pylist():
                engine, _ = engine_at(plans[g])
                yield pa.RecordBatch.from_arrays([pa.array([g], pa.int64()),
                                                  pa.array([engine.to_bytes()], pa.binary())],
                                                 ["part", "index"])
    return run


def _names(folder: Path) -> list[str]:
    try:
        return [p.name for p in folder.iterdir()]
    except FileNotFoundError:
        return []
