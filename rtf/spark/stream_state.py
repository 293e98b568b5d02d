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
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

from rtf.spark.dumps import ReplayError, has_scheme, local_path
from rtf.spark.durable import FileLock, publish_new

_PIN_DIGITS = 12
_BASE_DIGITS = 20


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

    def identity(self, current: dict) -> dict:
        """The stream's identity: `current` on the first run; on later runs the recorded one,
        after checking that `current` agrees with it on every key it has."""
        path = self.folder / "stream.json"
        if publish_new(self.folder, "stream.json", json.dumps(current, indent=1) + "\n"):
            return current
        recorded = json.loads(path.read_text(encoding="utf-8"))
        for key, value in current.items():
            if value is not None and recorded.get(key) is not None and recorded[key] != value:
                raise StreamStateError(
                    f"the checkpoint {self.checkpoint} belongs to a stream with {key} "
                    f"{recorded[key]!r}, not {value!r}: restart with the same options, or use a new "
                    "--checkpoint (and --output) for a new stream")
        return recorded

    # ------------------------------------------------------------------- pins

    def pin(self, batch_id: int, current: Callable[[], int]) -> int:
        """The operation number batch `batch_id` is pinned to: the recorded one, or
        ``current()`` recorded now (before the batch runs, never changed after)."""
        name = f"{batch_id:0{_PIN_DIGITS}d}.json"
        path = self.pins / name
        if not path.exists():
            op = current()
            publish_new(self.pins, name, json.dumps({"batch": batch_id, "op": op,
                                                     "pinned_at": time.time()}) + "\n")
        return json.loads(path.read_text(encoding="utf-8"))["op"]

    def prune_pins(self, below: int) -> None:
        """Forget the pins of batches before `below` (committed long ago: never replayed)."""
        for name in os.listdir(self.pins):
            if name.endswith(".json") and name[:-5].isdigit() and int(name[:-5]) < below:
                (self.pins / name).unlink(missing_ok=True)

    # ------------------------------------------------------------------ bases

    def base_ops(self) -> list[int]:
        return sorted(int(n[:-4]) for n in os.listdir(self.bases)
                      if n.endswith(".idx") and n[:-4].isdigit())

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
