"""Micro-batch output that every reader sees exactly once: a folder per batch, published by one rename.

Spark's own file sink commits a micro-batch in a metadata log that only
Spark reads; a file it wrote before a crash stays in the folder, and any
other reader counts it. Here a batch's matches are written by Spark into a
temporary folder under ``_rtf_tmp/``, its manifest is added, and the whole
folder is renamed to ``batch_id=N`` -- one atomic step on a local or
POSIX-shared file system. So the output folder only ever holds complete
batches, each once::

    OUTPUT/batch_id=0/part-00000.snappy.parquet       the matches of batch 0 (a file per task)
    OUTPUT/batch_id=0/_rtf_batch.json                 its manifest (stream, pin, files, counts, times)
    OUTPUT/batch_id=1/...
    OUTPUT/_rtf_tmp/                                  a batch being written (or left by a crash)

The tasks write their Parquet files themselves, in the Python worker that
made the matches (`part_writer`): the matches do not go back to the JVM to
be encoded there, and the batch is one Spark job. A task's file is named by
its partition and appears by a rename, so a task that Spark runs again
replaces it whole and a killed attempt leaves at most a hidden ``.part-*``
file, which `commit` deletes before the batch is published.

Readers that skip names starting with ``_`` or ``.`` -- as pyarrow, Spark,
pandas, Hive and Trino do -- read the folder as it is::

    import pyarrow.dataset as ds
    matches = ds.dataset(OUTPUT, format="parquet", partitioning="hive").to_table()

(a reader that globs must use ``OUTPUT/batch_id=*/*.parquet``). A batch
replayed after a crash finds its folder already there and writes nothing
(`commit` is idempotent by batch id); a replayed batch that was not yet
renamed writes the same matches again, because its inputs are pinned.

Idempotent by batch id is only safe for the stream that wrote the folder,
replaying the same batch: batch ids restart at 0 with a new checkpoint.
So every manifest names the stream that committed it (its id, from
``CHECKPOINT/rtf/stream.json``) and the files it read. `check_writer`
refuses, before a run, an output whose newest batch another stream wrote
(or any committed batch, for a new checkpoint); `replayed` says a batch
is already there only when this stream committed it from the very files
Spark replays, and refuses it otherwise -- never "nothing to do" for
matches that are not in the folder.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from rtf.spark.dumps import ReplayError, has_scheme, local_path
from rtf.spark.durable import RecordError, fsync_folder, read_record, text, whole

#: What the tasks that write a batch's files hand back to the driver (`part_writer`).
FILES_SCHEMA = "path string, size long, rows long, write_s double"

PREFIX = "batch_id="
TEMPORARY = "_rtf_tmp"
MANIFEST = "_rtf_batch.json"


def _files(value: object) -> bool:
    return isinstance(value, list) and all(
        isinstance(f, dict) and text(f.get("path")) and whole(f.get("bytes")) for f in value)


#: What a manifest must hold for the stream to tell whose batch it is, and of which files.
MANIFEST_FIELDS = {"batch": (whole, "the batch number"), "stream": (text, "the id of the stream that committed it"),
                   "files": (_files, 'a list of {"path", "bytes"} objects')}
#: After a new stream is refused an output folder.
_OTHER_OUTPUT = ("restart with the --checkpoint that wrote them, or use a new --output (a new stream reads "
                 "every file of --input again)")


class BatchOutput:
    """The output folder of a stream: committed batches, each in its own folder."""

    def __init__(self, folder: str | os.PathLike):
        if has_scheme(str(folder)):
            raise ReplayError(f"--output {folder}: the output must be a local (or mounted shared) "
                              "folder, where a folder rename is atomic")
        self.folder = Path(local_path(str(folder)))
        self.temporary = self.folder / TEMPORARY

    def prepare(self) -> None:
        """Create the folder; clear what a killed run left in ``_rtf_tmp`` (never a committed batch)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        if self.temporary.exists():
            shutil.rmtree(self.temporary)
        self.temporary.mkdir()

    def path(self, batch_id: int) -> Path:
        return self.folder / f"{PREFIX}{batch_id}"

    def committed(self, batch_id: int) -> bool:
        return self.path(batch_id).is_dir()

    def batch_ids(self) -> list[int]:
        """The committed batches, in order."""
        ids = []
        for name in os.listdir(self.folder) if self.folder.is_dir() else ():
            if name.startswith(PREFIX) and name[len(PREFIX):].isdigit():
                ids.append(int(name[len(PREFIX):]))
        return sorted(ids)

    def manifest(self, batch_id: int) -> dict | None:
        """The manifest of committed batch `batch_id` (None if there is none); `RecordError`
        if it is not a JSON object."""
        path = self.path(batch_id) / MANIFEST
        if not path.exists():
            return None
        return read_record(path, {}, "restore it from a backup (docs/spark.md, Operations)")

    def manifests(self) -> list[dict]:
        return [m for m in map(self.manifest, self.batch_ids()) if m is not None]

    def record(self, batch_id: int, fix: str) -> dict:
        """The manifest of committed batch `batch_id`, with the keys that say whose batch it is
        and of which files (`RecordError` ending in `fix` otherwise)."""
        path = self.path(batch_id) / MANIFEST
        record = read_record(path, MANIFEST_FIELDS, fix)
        if record["batch"] != batch_id:
            raise RecordError(f'{path}: "batch" is {record["batch"]}, not {batch_id}; {fix}')
        return record

    def check_writer(self, stream: str | None, checkpoint: str) -> None:
        """Refuse (`ReplayError`) an output whose newest committed batch another stream wrote;
        with `stream` None (a new checkpoint), any output that holds a committed batch."""
        ids = self.batch_ids()
        if not ids:
            return
        newest = self.path(ids[-1])
        record = self.record(ids[-1], f"the stream cannot tell who wrote {newest}: restore the file from "
                                      f"a backup, or move {newest} out of {self.folder} and restart "
                                      "(docs/spark.md, Operations)")
        check_writer(stream, record["stream"], len(ids), str(self.folder), str(newest), newest.name, checkpoint)

    def holds(self, batch_id: int, stream: str) -> bool:
        """Whether batch `batch_id` has a folder (of any stream: `replayed` tells what it is)."""
        return self.committed(batch_id)

    def replayed(self, batch_id: int, stream: str, files: list[tuple], checkpoint: str) -> bool:
        """Whether batch `batch_id` is already committed, by `stream`, from `files` ((path, mtime,
        bytes) as Spark lists them): a replay, with nothing to do. False if it is not committed;
        `ReplayError` if another stream, or other files, made its folder."""
        if not self.committed(batch_id):
            return False
        folder = self.path(batch_id)
        record = self.record(batch_id, f"move {folder} out of {self.folder} and restart: Spark is "
                                       f"replaying batch {batch_id}, which is then written again")
        if record["stream"] != stream:
            raise ReplayError(f"{folder} was committed by stream {record['stream']}, not by the stream of "
                              f"the checkpoint {checkpoint} ({stream}): {_OTHER_OUTPUT}")
        done = sorted((f["path"], f["bytes"]) for f in record["files"])
        if done != sorted((path, size) for path, _, size in files):
            raise ReplayError(
                f"{folder} holds the matches of {len(done)} file(s), not of the {len(files)} file(s) "
                f"of Spark's batch {batch_id}: Spark's part of the checkpoint {checkpoint} was lost "
                "or replaced by an older one; restore the whole checkpoint from the backup that goes "
                "with the output, or start a new stream: a new --checkpoint and a new --output")
        return True

    def write(self, matches, folder: str) -> list[dict]:
        """Write `matches` into `folder`, a Parquet file per task (`part_writer`), in one Spark job:
        the files' ``path``, ``size``, ``rows``, ``write_s``. `matches` is a DataFrame, or a function
        ``matches(then)`` that gives the matches followed by ``then`` in the same Python worker
        (`rtf.spark.dataframe.map_matches`). A batch without matches gets one empty file, so that
        every committed batch has the columns."""
        from rtf.spark.arrow_matches import arrow_match_schema

        os.makedirs(folder, exist_ok=True)
        writer = (part_writer(folder, arrow_match_schema), FILES_SCHEMA)
        frame = matches(then=writer) if callable(matches) else matches.mapInArrow(*writer)
        files = [r.asDict() for r in frame.collect()]
        if not files:
            import pyarrow.parquet as pq

            pq.write_table(arrow_match_schema().empty_table(), os.path.join(folder, part_name(0)))
        return files

    def missing(self, batch_ids: list[int], stream: str) -> list[int]:
        """Those of `batch_ids` whose folder is not in the output."""
        return sorted(set(batch_ids) - set(self.batch_ids()))

    def describe(self, batch_id: int) -> str:
        return self.path(batch_id).name

    @property
    def location(self) -> str:
        return str(self.folder.resolve())

    def commit(self, batch_id: int, write: Callable[[str], None],
               manifest: Callable[[], dict]) -> bool:
        """Write batch `batch_id` with ``write(folder)`` and publish it; False if it was already there.

        `manifest` is called after the write and its dict is stored with the
        matches (``committed_at`` is added to it). The rename is the commit: before
        it, nothing of the batch is visible; after it, all of it is."""
        if self.committed(batch_id):
            return False
        tmp = self.temporary / f"{PREFIX}{batch_id}.{uuid.uuid4().hex[:12]}"
        try:
            write(str(tmp))
            for name in os.listdir(tmp):  # a killed task attempt's unfinished file
                if name.startswith("."):
                    os.unlink(tmp / name)
            record = manifest()
            record["committed_at"] = time.time()
            (tmp / MANIFEST).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
            _sync_tree(tmp)
            try:
                os.rename(tmp, self.path(batch_id))
            except OSError:
                if self.committed(batch_id):  # another run of this batch came first
                    return False
                raise
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        fsync_folder(self.folder)
        return True


def check_writer(stream: str | None, writer: str, batches: int, output: str, newest: str, newest_name: str,
                 checkpoint: str) -> None:
    """Refuse (`ReplayError`) an output of `batches` committed batches whose newest, `newest`,
    stream `writer` committed, unless `stream` (None: a new checkpoint) is that stream."""
    if stream is None:
        raise ReplayError(f"--output {output} holds {batches} committed batch(es) of stream {writer} (up to "
                          f"{newest_name}), and the checkpoint {checkpoint} is new: {_OTHER_OUTPUT}")
    if writer != stream:
        raise ReplayError(f"{newest} was committed by stream {writer}, not by the stream of the checkpoint "
                          f"{checkpoint} ({stream}): {_OTHER_OUTPUT}")


def part_name(partition: int) -> str:
    """The name of the file of a batch's task `partition` in a batch folder."""
    return f"part-{partition:05d}.snappy.parquet"


def part_writer(uri: str, schema, name=None, batch_id: int | None = None):
    """mapInArrow: write a task's matches as one Parquet file in the folder or object-store
    prefix `uri`; yield its name, size, row count and seconds spent writing (nothing for a task
    without matches). `schema()` gives the file's columns; `batch_id`, if given, fills a
    ``batch_id`` column (the Delta table's). The file is `name` (a function of the task's
    partition; default `part_name`) -- on a local disk written under a hidden name and renamed,
    so that a task run again replaces it whole; on an object store the upload is whole at close."""
    # The driver's object-store settings go with the task: an executor (another host, or a
    # JVM started before they were set) need not have them in its environment.
    settings = {k: v for k, v in os.environ.items() if k.startswith("AWS_")} if "://" in uri else {}
    name = name or part_name

    def run(batches):
        import pyarrow as pa
        import pyarrow.fs as pafs
        import pyarrow.parquet as pq
        from pyspark import TaskContext

        os.environ.update(settings)
        ctx = TaskContext.get()
        file_schema = schema()
        fs, root = pafs.FileSystem.from_uri(uri)
        final = f"{root}/{name(ctx.partitionId() if ctx else 0)}"
        local = isinstance(fs, pafs.LocalFileSystem)
        target = f"{root}/.{os.path.basename(final)}.{uuid.uuid4().hex[:8]}" if local else final
        writer, stream, rows, spent = None, None, 0, 0.0
        try:
            for batch in batches:
                if batch.num_rows == 0:
                    continue
                t = time.perf_counter()
                if writer is None:
                    stream = fs.open_output_stream(target)
                    writer = pq.ParquetWriter(stream, file_schema, compression="snappy")
                table = pa.Table.from_batches([batch])
                if batch_id is not None:
                    table = table.append_column("batch_id", pa.array([batch_id] * batch.num_rows, pa.int64()))
                writer.write_table(table.cast(file_schema) if table.schema != file_schema else table)
                rows += batch.num_rows
                spent += time.perf_counter() - t
        finally:
            t = time.perf_counter()
            if writer is not None:
                writer.close()
                stream.close()
            spent += time.perf_counter() - t
        if writer is not None:
            if local:
                fs.move(target, final)
            size = fs.get_file_info(final).size
            yield pa.RecordBatch.from_pydict({"path": [os.path.basename(final)], "size": [size],
                                              "rows": [rows], "write_s": [spent]})
    return run


def _sync_tree(folder: Path) -> None:
    """Flush every file of `folder` to disk (Spark's local writes are not), then the folder."""
    for entry in os.scandir(folder):
        if entry.is_file():
            fd = os.open(entry.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    fsync_folder(folder)


def read_matches(folder: str | os.PathLike, columns: list[str] | None = None):
    """The committed matches of a stream's output as a pyarrow Table (no Spark needed).

    Each match once, whatever crashes and restarts the stream went through;
    ``batch_id`` says which micro-batch committed it."""
    import pyarrow.dataset as ds

    folder = Path(local_path(str(folder)))
    if not any(name.startswith(PREFIX) for name in os.listdir(folder)):
        import pyarrow as pa

        from rtf.spark.arrow_matches import arrow_match_schema

        return arrow_match_schema().append(pa.field("batch_id", pa.int32())).empty_table()
    return ds.dataset(folder, format="parquet", partitioning="hive").to_table(columns=columns)
