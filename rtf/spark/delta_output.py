"""Matches as one Delta Lake table, exactly once through the table's transaction log.

The output of ``rtf spark stream --output-format delta`` and ``rtf spark
replay --output-format delta`` (docs/spark.md), written with delta-rs (the
``deltalake`` package: no JVM connector), on a local disk or an object store
(``s3://bucket/path``, configured by the standard ``AWS_*`` variables)::

    TABLE/_delta_log/00000000000000000000.json   the table's creation
    TABLE/_delta_log/00000000000000000001.json   batch 0: its data files, its manifest, txn (stream, 0)
    TABLE/part-00000-<batch>-<uuid>.snappy.parquet

A batch is committed as Spark's own Delta sink commits one: the tasks write
their Parquet files into the table's folder (`write`; files that no log entry
names are invisible to every Delta reader), then the driver adds them in
one transaction that also records the *application transaction*
``(app_id = the stream's id, version = the batch id)`` -- the commit. A
batch that Spark replays after a crash finds its transaction in the log
(`DeltaTable.transaction_version`) and writes nothing; a batch killed
before its commit left only unnamed files (``DeltaTable.vacuum`` removes
them), and its replay writes and commits it anew. The batch's manifest
(pin, files, counts, seconds, latencies: `rtf.spark.stream.batch_manifest`)
is the commit's metadata (``rtf`` in ``DeltaTable.history()``).

Readers see committed batches only, each once: ``deltalake.DeltaTable(uri)
.to_pandas()``, DuckDB's ``delta_scan``, Polars' ``read_delta``, Spark with
the Delta connector. `DeltaOutput` has the methods of
`rtf.spark.batch_output.BatchOutput` that the stream uses, so the stream
commits through either.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from rtf.spark.batch_output import FILES_SCHEMA, check_writer, part_writer
from rtf.spark.dumps import ReplayError, has_scheme, local_path

#: The commit metadata key holding a batch's manifest.
METADATA_KEY = "rtf"
#: Delta tables are written only where delta-rs and pyarrow both reach them.
SCHEMES = ("s3", "s3a", "file")


def missing_deltalake() -> str | None:
    """What to install for a Delta output (None: it is there)."""
    import importlib.util

    if importlib.util.find_spec("deltalake") is None:
        return "the Delta output needs the deltalake package: pip install 'rtf[delta]'"
    return None


def table_uri(location: str) -> str:
    """The table's URI as delta-rs and pyarrow take it: an absolute local path, or ``s3://...``
    (``s3a://`` is Hadoop's name for the same store)."""
    if not has_scheme(location):
        return str(Path(local_path(location)).resolve())
    scheme, _, rest = location.partition("://")
    if scheme not in SCHEMES:
        raise ReplayError(f"--output {location}: a Delta table is written on a local disk or on S3 "
                          f"(s3://bucket/path), not on {scheme}://")
    return f"s3://{rest}" if scheme == "s3a" else location


def match_table_schema():
    """The table's columns: the matches of `match_publications`, and the batch that committed them."""
    import pyarrow as pa

    from rtf.io.arrow_matches import arrow_match_schema

    return arrow_match_schema().append(pa.field("batch_id", pa.int64()))


def _file_writer(uri: str, batch_id: int):
    """mapInArrow: write a task's matches as one Parquet file of the table's folder (no log entry,
    a name of its own for every attempt); yield its name, size and row count (`part_writer`)."""
    return part_writer(uri, match_table_schema, lambda _: f"part-{batch_id:05d}-{uuid.uuid4()}.snappy.parquet",
                       batch_id)


class DeltaOutput:
    """A Delta table of matches, committed batch by batch (module doc)."""

    def __init__(self, location: str | os.PathLike):
        self.location = table_uri(str(location))
        self.folder = self.location  # (what the messages name)
        self.committed_here: int | None = None  # the last batch this process committed

    # ---------------------------------------------------------------- reading

    def _table(self):
        from deltalake import DeltaTable

        if not DeltaTable.is_deltatable(self.location):
            return None
        return DeltaTable(self.location)

    def _commits(self, limit: int | None = None) -> list[dict]:
        """The manifests in the table's log (its newest `limit` commits), oldest first."""
        table = self._table()
        if table is None:
            return []
        records = []
        for entry in table.history(limit):
            value = entry.get(METADATA_KEY)
            if value is not None:
                try:
                    record = json.loads(value)
                except (TypeError, ValueError):
                    raise ReplayError(f"{self.location}: version {entry.get('version')} of the table has "
                                      f"damaged rtf metadata ({str(value)[:60]!r})") from None
                if isinstance(record, dict) and "batch" in record:
                    records.append(record)
        return records[::-1]

    def version(self, stream: str) -> int | None:
        """The newest batch the stream committed (its application transaction), or None."""
        table = self._table()
        return None if table is None else table.transaction_version(stream)

    def batch_ids(self) -> list[int]:
        """The committed batches (of every stream that wrote the table), in order."""
        return sorted({r["batch"] for r in self._commits()})

    def manifest(self, batch_id: int, stream: str | None = None) -> dict | None:
        """The manifest of committed batch `batch_id` (of `stream`, if given); None if there is none.
        The newest commits first: a stream asks for the batch it has just committed."""
        for limit in (4, None):
            for record in reversed(self._commits(limit)):
                if record["batch"] == batch_id and stream in (None, record.get("stream")):
                    return record
        return None

    def manifests(self) -> list[dict]:
        return self._commits()

    def missing(self, batch_ids: list[int], stream: str) -> list[int]:
        """Those of `batch_ids` that the stream has not committed."""
        version = self.version(stream)
        return [b for b in sorted(batch_ids) if version is None or b > version]

    def describe(self, batch_id: int) -> str:
        return f"batch {batch_id}"

    # --------------------------------------------------------------- checking

    def check_writer(self, stream: str | None, checkpoint: str) -> None:
        """As `BatchOutput.check_writer`: refuse a table whose newest rtf commit another stream
        made; with `stream` None (a new checkpoint), a table that holds a stream's batches."""
        records = [r for r in self._commits() if "stream" in r]
        if not records:
            return
        newest = records[-1]
        check_writer(stream, newest["stream"], len(records), self.location,
                     f"{self.location}: batch {newest['batch']}", f"batch {newest['batch']}", checkpoint)

    def holds(self, batch_id: int, stream: str) -> bool:
        """Whether the stream may have committed batch `batch_id` already (`replayed` tells, from the
        batch's files). Not a batch after the last one this process committed: one driver holds the
        checkpoint, so the table's log need not be read again for every batch."""
        if self.committed_here is not None and batch_id > self.committed_here:
            return False
        version = self.version(stream)
        return version is not None and version >= batch_id

    def replayed(self, batch_id: int, stream: str, files: list[tuple], checkpoint: str) -> bool:
        """Whether the stream already committed batch `batch_id` (its transaction is in the log);
        `ReplayError` if it did so from other files than Spark replays."""
        version = self.version(stream)
        if version is None or version < batch_id:
            return False
        record = self.manifest(batch_id, stream)
        if record is not None:
            done = sorted((f["path"], f["bytes"]) for f in record.get("files", ()))
            if done != sorted((path, size) for path, _, size in files):
                raise ReplayError(
                    f"{self.location}: batch {batch_id} holds the matches of {len(done)} file(s), not of the "
                    f"{len(files)} file(s) of Spark's batch {batch_id}: Spark's part of the checkpoint "
                    f"{checkpoint} was lost or replaced by an older one; restore the whole checkpoint "
                    "from its backup, or start a new stream: a new --checkpoint and a new --output")
        return True

    # ---------------------------------------------------------------- writing

    def prepare(self) -> None:
        """Create the table if it is not there (an empty table of the matches' columns)."""
        from deltalake import DeltaTable

        if not DeltaTable.is_deltatable(self.location):
            if not has_scheme(self.location):
                Path(self.location).mkdir(parents=True, exist_ok=True)
            DeltaTable.create(self.location, match_table_schema(), mode="ignore", name="rtf matches")

    def write(self, matches, batch_id: int) -> list[dict]:
        """Write the matches into the table's folder, a file per task (not yet in the log): the
        files' ``path``, ``size``, ``rows``. `matches` is a DataFrame, or a function
        ``matches(then)`` that gives the matches followed by ``then`` in the same Python worker
        (`rtf.spark.dataframe.map_matches`): written where they are made."""
        writer = (_file_writer(self.location, batch_id), FILES_SCHEMA)
        frame = matches(then=writer) if callable(matches) else matches.mapInArrow(*writer)
        return [r.asDict() for r in frame.collect()]

    def commit(self, batch_id: int, write: Callable[[int], list[dict]], manifest: Callable[[], dict],
               mode: str = "append") -> bool:
        """Write batch `batch_id` (``write(batch_id)``: its files) and commit them with the
        manifest and the application transaction (the manifest's ``stream``, `batch_id`).

        The caller checked `replayed` first (one driver holds the checkpoint): returns True."""
        files = write(batch_id)
        record = manifest()
        record["committed_at"] = time.time()
        commit_files(self.location, files, record, record["stream"], batch_id, mode)
        self.committed_here = batch_id
        return True


def commit_files(location: str, files: list[dict], record: dict, app_id: str, version: int,
                 mode: str = "append") -> None:
    """One transaction: add `files` (written by `_file_writer`), with `record` as the commit's
    metadata and the application transaction (`app_id`, `version`)."""
    from deltalake import CommitProperties, DeltaTable, Transaction
    from deltalake.transaction import AddAction

    now = int(time.time() * 1000)
    actions = [AddAction(f["path"], f["size"], {}, now, True, json.dumps({"numRecords": f["rows"]}))
               for f in files]
    table = DeltaTable(location)
    table.create_write_transaction(actions, mode, match_table_schema(), commit_properties=CommitProperties(
        custom_metadata={METADATA_KEY: json.dumps(record)},
        app_transactions=[Transaction(app_id, version)]))


def read_delta(location: str, columns: list[str] | None = None):
    """The committed matches of a Delta output as a pyarrow Table."""
    from deltalake import DeltaTable

    return DeltaTable(table_uri(location)).to_pyarrow_table(columns=columns)


def job_id(dumps: list[str], queries: str, options: list[str]) -> str:
    """An id for a batch job from what determines its answer: its dump files (path, size and
    modification time), the bytes of its queries or index file, its options. The application
    id of its commit, so that a rerun of the same job commits once."""
    import hashlib

    digest = hashlib.sha256()
    for part in dumps:
        path = Path(local_path(part))
        stat = path.stat() if not has_scheme(part) and path.is_file() else None
        digest.update((f"{part}\0{stat.st_size}\0{stat.st_mtime_ns}\0" if stat else f"{part}\0").encode())
    path = Path(local_path(queries))
    if not has_scheme(queries) and path.is_file():
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    else:
        digest.update(queries.encode())
    digest.update("\0".join(options).encode())
    return "rtf-job-" + digest.hexdigest()[:32]


class JobTable:
    """A batch job's matches (``rtf spark replay --output-format delta``): one transaction, with
    the job's metrics as its metadata and the application transaction (`job_id`, 0)."""

    def __init__(self, location: str, app_id: str, overwrite: bool = False):
        missing = missing_deltalake()
        if missing:
            raise ReplayError(missing)
        self.output = DeltaOutput(location)
        self.app_id = app_id
        self.overwrite = overwrite

    def committed(self) -> dict | None:
        """The metrics of this job's commit, if an earlier run made it (nothing to do); None."""
        if self.output.version(self.app_id) is None:
            return None
        record = self.output.manifest(0, self.app_id) or {}
        return record.get("metrics") or {}

    def prepare(self) -> None:
        """Refuse a table holding other matches (unless overwriting); create it if missing."""
        table = self.output._table()
        if table is not None and not self.overwrite and table.get_add_actions().num_rows:
            raise ReplayError(f"{self.output.location} is a Delta table that holds the matches of another "
                              "run; choose a new --output or pass --overwrite")
        self.output.prepare()

    def write(self, matches) -> list[dict]:
        return self.output.write(matches, 0)

    def commit(self, files: list[dict], metrics: dict) -> None:
        record = {"batch": 0, "stream": self.app_id, "job": self.app_id, "metrics": metrics,
                  "committed_at": time.time()}
        commit_files(self.output.location, files, record, self.app_id, 0,
                     "overwrite" if self.overwrite else "append")
