"""What a stream keeps beside Spark's checkpoint: its identity, the batches' pins, its bases, a run lock.

Spark's checkpoint records which files each micro-batch read; this folder
(``CHECKPOINT/rtf/``) records the rest of what a replayed batch needs to give
the same answers::

    CHECKPOINT/rtf/stream.json            the index, queries log and output the stream was started with
    CHECKPOINT/rtf/pins/000000000042.json {"batch": 42, "op": 17}: batch 42 matches with operations 1..17
    CHECKPOINT/rtf/bases/00000000000000000000.idx   the starting index (operation 0)
    CHECKPOINT/rtf/bases/00000000000000000017.idx   a compaction: the index at operation 17
    CHECKPOINT/rtf/lock                   held by the running driver

A pin is written once, before its batch runs (`pin`), and never changes.
A base is a saved index standing at an operation number; the stream
builds from the newest base at or below a batch's pin and applies the
operations after it.

``stream.json`` also gives the stream an id of its own (``"stream"``),
written into the manifest of every batch it commits: an output folder
belongs to the stream that wrote it (`rtf.spark.batch_output`). `check`
reads everything here before a run, and every way a file can be damaged
or lost ends in one line naming it and saying what to do (docs/limits.md,
"The stream's checkpoint"); only what the stream rebuilds exactly is
rebuilt: a lost pin (its batch is pinned again: nothing of it was
committed), a lost compaction base (the older base and the log give the
same engine), a lost starting index (from the same --index).
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from rtf.spark.dumps import ReplayError, has_scheme, local_path
from rtf.spark.durable import FileLock, RecordError, number, publish_new, read_record, text, text_or_null, whole

_PIN_DIGITS = 12
_BASE_DIGITS = 20
_PIN_NAME = re.compile(r"^(\d{%d})\.json$" % _PIN_DIGITS)
#: What to do when the state cannot be trusted and cannot be rebuilt.
NEW_STREAM = "start a new stream: a new --checkpoint and a new --output"
RESTORE = f"restore the checkpoint from a backup, or {NEW_STREAM}"

IDENTITY_FIELDS = {
    "stream": (text, "the stream's id"),
    "index_sha256": (text, "the SHA-256 of the starting index"),
    "queries_log": (text_or_null, "the id of a queries log, or null"),
    "output": (text, "the output folder"),
}
PIN_FIELDS = {"batch": (whole, "a batch number"), "op": (whole, "an operation number"),
              "pinned_at": (number, "a time in seconds")}
#: Spark's own ``CHECKPOINT/metadata``: the query's id (Spark's message for a damaged one names no file).
SPARK_METADATA_FIELDS = {"id": (text, "the query's id")}


class StreamStateError(ReplayError):
    """A checkpoint that does not belong to these options, or is in use (one line)."""


class StreamState:
    """The folder ``rtf`` inside checkpoint `checkpoint` (a local path)."""

    def __init__(self, checkpoint: str | os.PathLike):
        if has_scheme(str(checkpoint)):
            raise StreamStateError(f"--checkpoint {checkpoint}: must be a local (or mounted shared) folder")
        self.checkpoint = Path(local_path(str(checkpoint)))
        self.folder = self.checkpoint / "rtf"
        self.pins = self.folder / "pins"
        self.bases = self.folder / "bases"
        self._lock: FileLock | None = None

    def open(self) -> None:
        """Create the folders and take the run lock (`StreamStateError` if another driver holds it)."""
        for folder in (self.folder, self.pins, self.bases):
            folder.mkdir(parents=True, exist_ok=True)
        lock = FileLock(self.folder / "lock", blocking=False)
        try:
            lock.acquire()
        except BlockingIOError:
            holder = (self.folder / "lock").read_text().strip() or "?"
            raise StreamStateError(f"another stream is running with the checkpoint {self.checkpoint} "
                                   f"(driver pid {holder}); stop it first") from None
        os.ftruncate(lock.fd, 0)
        os.write(lock.fd, f"{os.getpid()}\n".encode())
        self._lock = lock

    def close(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    # --------------------------------------------------------------- identity

    @property
    def identity_path(self) -> Path:
        return self.folder / "stream.json"

    def recorded(self) -> dict | None:
        """The identity ``stream.json`` records; None for a new checkpoint.

        `RecordError` if it is damaged, or missing from a checkpoint that
        holds a stream's state (it is written before anything else)."""
        if not self.identity_path.exists():
            held = self._held()
            if held is None:
                return None
            raise RecordError(f"{self.identity_path}: missing, but the checkpoint holds a stream's "
                              f"state ({held}); {RESTORE}")
        return read_record(self.identity_path, IDENTITY_FIELDS, RESTORE)

    def _held(self) -> str | None:
        """A file that only a started stream leaves in the checkpoint, or None."""
        for folder, pattern in ((self.pins, _PIN_NAME), (self.bases, re.compile(r"^\d+\.idx$"))):
            names = sorted(n for n in _names(folder) if pattern.match(n))
            if names:
                return str(folder / names[0])
        for name in ("metadata", "offsets", "commits"):
            if (self.checkpoint / name).exists():
                return f"Spark's {self.checkpoint / name}"
        return None

    def spark_batches(self, log: str) -> list[int]:
        """The batches in a log of Spark's part of the checkpoint: ``offsets`` (written before
        a batch runs) or ``commits`` (after it returned: committed to the output, or found there)."""
        return sorted(int(n) for n in _names(self.checkpoint / log) if n.isdigit())

    def identity(self, current: dict) -> dict:
        """The stream's identity: `current` with a new stream id on the first run; on later
        runs the recorded one, after checking that `current` agrees with it (`agree`)."""
        record = {"stream": uuid.uuid4().hex, "index_sha256": current.get("index_sha256"),
                  "queries_log": current.get("queries_log"), "output": current.get("output")}
        if publish_new(self.folder, "stream.json", json.dumps(record, indent=1) + "\n"):
            return record
        recorded = read_record(self.identity_path, IDENTITY_FIELDS, RESTORE)
        self.agree(recorded, current)
        return recorded

    def agree(self, recorded: dict, current: dict) -> None:
        """`StreamStateError` unless `current` agrees with `recorded` on every key it gives
        (a None value: not given); a stream that follows a queries log must be given it."""
        if recorded.get("queries_log") is not None and "queries_log" in current \
                and current["queries_log"] is None:
            raise StreamStateError(f"the checkpoint {self.checkpoint} belongs to a stream that follows "
                                   f"the queries log {recorded['queries_log']}: restart with "
                                   "--queries-log DIR, that log")
        for key, value in current.items():
            if value is not None and recorded.get(key) is not None and recorded[key] != value:
                raise StreamStateError(
                    f"the checkpoint {self.checkpoint} belongs to a stream with {key} "
                    f"{recorded[key]!r}, not {value!r}: restart with the same options, or use a new "
                    "--checkpoint (and --output) for a new stream")

    def check(self, current: dict, log_size: int) -> dict | None:
        """Read and check everything the checkpoint holds, before a run: the identity (and that
        `current` agrees with it), Spark's metadata and sources log beside its offsets, every pin (against the `log_size`
        operations of the queries log), every base (header and checksum; the starting one
        against the identity). The recorded identity, or None for a new checkpoint."""
        recorded = self.recorded()
        if recorded is None:
            return None
        self.agree(recorded, current)
        offsets = self.spark_batches("offsets")
        for name in ("metadata", "sources") if offsets else ():
            if not (self.checkpoint / name).exists():
                raise RecordError(f"{self.checkpoint / name}: missing, but Spark's offsets of batch "
                                  f"{offsets[-1]} are there; {RESTORE}")
        metadata = self.checkpoint / "metadata"
        if metadata.exists():
            read_record(metadata, SPARK_METADATA_FIELDS, RESTORE)
        for name in sorted(_names(self.pins)):
            match = _PIN_NAME.match(name)
            if match:
                self._read_pin(int(match.group(1)), log_size)
        for op in self.base_ops():
            check_base(self.base_path(op), recorded["index_sha256"] if op == 0 else None,
                       self.identity_path)
        return recorded

    # ------------------------------------------------------------------- pins

    def pin(self, batch_id: int, current: Callable[[], int]) -> int:
        """The operation number batch `batch_id` is pinned to: the recorded one, or
        ``current()`` recorded now (before the batch runs, never changed after)."""
        name = f"{batch_id:0{_PIN_DIGITS}d}.json"
        size = current()
        if not (self.pins / name).exists():
            publish_new(self.pins, name, json.dumps({"batch": batch_id, "op": size,
                                                     "pinned_at": time.time()}) + "\n")
        return self._read_pin(batch_id, size)

    def _read_pin(self, batch_id: int, log_size: int) -> int:
        """The operation of pin file `batch_id`, checked: its batch, and an operation the
        queries log (of `log_size` operations) holds."""
        path = self.pins / f"{batch_id:0{_PIN_DIGITS}d}.json"
        fix = (f"delete it and restart: batch {batch_id} is pinned again if it runs again "
               "(a committed batch does not)")
        record = read_record(path, PIN_FIELDS, fix)
        if record["batch"] != batch_id:
            raise RecordError(f'{path}: "batch" is {record["batch"]}, not {batch_id}; {fix}')
        if record["op"] > log_size:
            raise RecordError(f'{path}: "op" is {record["op"]}, but the queries log holds '
                              f"{log_size} operation(s); {fix}")
        return record["op"]

    def prune_pins(self, below: int) -> None:
        """Forget the pins of batches before `below` (committed long ago: never replayed)."""
        for name in _names(self.pins):
            match = _PIN_NAME.match(name)
            if match and int(match.group(1)) < below:
                (self.pins / name).unlink(missing_ok=True)

    # ------------------------------------------------------------------ bases

    def base_ops(self) -> list[int]:
        return sorted(int(n[:-4]) for n in _names(self.bases) if n.endswith(".idx") and n[:-4].isdigit())

    def base_path(self, op: int) -> Path:
        return self.bases / f"{op:0{_BASE_DIGITS}d}.idx"

    def add_base(self, op: int, data: bytes) -> Path:
        """Keep `data` as the index at operation `op` (written once, whole and on disk)."""
        publish_new(self.bases, self.base_path(op).name, data)
        return self.base_path(op)

    def newest_base(self, upto: int) -> int:
        """The operation of the newest base at or below `upto`."""
        ops = [op for op in self.base_ops() if op <= upto]
        if not ops:
            raise StreamStateError(f"{self.bases}: no index at or below operation {upto}")
        return ops[-1]

    def prune_bases(self, keep: int) -> None:
        """Remove the bases between the starting index and `keep` (superseded by it)."""
        for op in self.base_ops():
            if 0 < op < keep:
                self.base_path(op).unlink(missing_ok=True)


def check_base(path: Path, sha256: str | None, identity: Path) -> None:
    """`RecordError` unless base `path` is a whole saved index (header and checksum: the body
    is not decoded) and, for the starting index, the one whose SHA-256 the identity records."""
    import hashlib

    from rtf.errors import IndexFileError
    from rtf.io.store import body_lines

    if sha256 is None:
        fix = ("delete it and restart: the stream builds the engine from the base before it "
               "and the queries log")
    else:
        fix = f"delete it and restart with --index IDX, the index the stream started with (SHA-256 {sha256})"
    try:
        data = path.read_bytes()
        next(body_lines(data, str(path)), None)
    except IndexFileError as e:
        raise RecordError(f"{e}; {fix}") from None
    except OSError as e:
        raise RecordError(f"{path}: cannot be read ({e.strerror or e}); {fix}") from None
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
        raise RecordError(f"{path}: not the index {identity} records (SHA-256 {sha256}); "
                          f"one of them is damaged: {fix}, or {RESTORE}")


def _names(folder: Path) -> list[str]:
    """The names in `folder` (none if it does not exist)."""
    try:
        return os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return []
