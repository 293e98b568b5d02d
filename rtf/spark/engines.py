"""The long-lived engine of a Python worker: built once, brought forward by query operations, reused.

A Spark executor runs Python code in worker processes that it keeps and
reuses from task to task (``spark.python.worker.reuse``, on by default).
Each worker holds one engine in `_SLOT`, built the first time a task needs
it -- from a saved index (`rtf.engine.Engine.from_bytes`; never a pickle of
an engine) or, for the query groups of the replay, from a pickle of a group
-- and kept for every later task of every later job and micro-batch. A
worker forked by rtf's Spark daemon (`rtf.spark.daemon`, ``--shared-index``)
builds nothing when the daemon loaded the plan's index before the fork
(`preload`; `EnginePlan.key`, the file's `index_key`): it takes that engine,
whose pages every worker of the executor shares.

An `EnginePlan` says which engine a task needs: its *lineage* (where it
descends from: an index, and the queries log whose operations follow it),
the *base* it can be built from (the index bytes, standing at operation
`base_op`), the operations after the base up to the *pin*, and the pin
itself. A worker whose engine is of the same lineage and stands between
the base and the pin applies only the operations it has not seen
(`rtf.spark.oplog.apply_operation`); any other worker builds from the base.
Operations are applied in order, and one that fails (an id already taken,
an unknown id, a query the engine refuses) fails the same way in every
worker, so every worker at operation n holds the same queries.

>>> from rtf.engine import Engine
>>> plan = EnginePlan("doc", Constant(Engine().to_bytes()), base_op=0,
...                   ops=((1, {"op": "register", "id": "q1",
...                             "query": "SELECT ?s WHERE { ?s ?p ?o }"}),), pin=1)
>>> engine, info = engine_at(plan)
>>> len(engine), info["ops_applied"], engine_at(plan)[1]["load_s"]
(1, 1, 0.0)
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

log = logging.getLogger("rtf.spark")


class Constant:
    """A value with ``.value``, as a Spark broadcast has (for plans built without Spark)."""

    def __init__(self, value):
        self.value = value


def load_index(data: bytes, source: str = "<broadcast>"):
    """An engine from saved-index bytes (`rtf.engine.Engine.from_bytes`)."""
    from rtf.engine import Engine

    return Engine.from_bytes(data, source=source)


@dataclass(frozen=True)
class EnginePlan:
    """The engine a task needs: `lineage` at operation `pin`, reachable from `base`.

    `base` has ``.value``: the bytes `load` turns into the engine at
    operation `base_op` (a broadcast, read only by a worker that must build).
    `ops` are the ``(n, operation)`` pairs with ``base_op < n <= pin``, in order.
    """

    lineage: str
    base: object
    base_op: int = 0
    ops: tuple = ()
    pin: int = 0
    source: str = "<broadcast>"
    load: Callable[[bytes, str], object] = field(default=load_index, compare=False)
    #: The base's `index_key` when it is a saved index: a worker forked by rtf's daemon
    #: takes the daemon's engine of the file of that key instead of building one (`preload`).
    key: str | None = None


@dataclass
class _Held:
    lineage: str
    op: int
    engine: object
    failed: dict = field(default_factory=dict)  # op number -> why it did not apply
    load_s: float = 0.0
    shared: bool = False  # the daemon's engine (`preload`), not built here


#: This worker's engine (one at a time, so that memory holds one index).
_SLOT: list[_Held] = []

#: The engines `preload` made before this process forked (`index_key` -> engine), and
#: the pid of the process that made them (rtf's Spark daemon, `rtf.spark.daemon`).
_PRELOADED: dict[str, object] = {}
_DAEMON: list[int] = []


def engine_at(plan: EnginePlan) -> tuple[object, dict]:
    """The engine of `plan` in this worker, and what it took: ``load_s`` (0 when the
    held engine was reused), ``ops_applied``, ``ops_failed`` (op number -> reason)."""
    held = _SLOT[0] if _SLOT else None
    load_s = 0.0
    if held is None or held.lineage != plan.lineage or not plan.base_op <= held.op <= plan.pin:
        held = _build(plan)
        load_s = held.load_s
    start = held.op
    if start < plan.pin:
        from rtf.spark.oplog import apply_operation

        for n, op in plan.ops:
            if n <= start:
                continue
            if held.shared:  # (changed from here on: a later build must not take it again)
                _PRELOADED.pop(plan.key, None)
            reason = apply_operation(held.engine, op)
            if reason is not None:
                held.failed[n] = reason
                log.warning("queries log operation %d not applied: %s", n, reason)
            held.op = n
        held.op = plan.pin
    return held.engine, {"load_s": load_s, "ops_applied": plan.pin - start if start < plan.pin else 0,
                         "ops_failed": dict(held.failed), "op": held.op, "shared": held.shared}


def _build(plan: EnginePlan) -> _Held:
    from rtf.engine import freeze_long_lived

    t = time.perf_counter()
    if _SLOT:  # let the previous engine (frozen out of the collector's sight) go first
        import gc

        _SLOT.clear()
        if not _DAEMON:  # (unfrozen, the daemon's objects would be scanned: their pages copied)
            gc.unfreeze()
        gc.collect()
    if plan.key is not None and (engine := _PRELOADED.get(plan.key)) is not None:
        held = _Held(plan.lineage, plan.base_op, engine, shared=True)
        _SLOT.append(held)
        log.info("took the daemon's engine of %s (pid %d)", plan.source, os.getppid())
        return held
    engine = plan.load(plan.base.value, plan.source)
    freeze_long_lived()  # as `rtf match` does once the queries are in
    held = _Held(plan.lineage, plan.base_op, engine, load_s=time.perf_counter() - t)
    _SLOT.append(held)
    log.info("built the engine of %s at operation %d in %.2f s", plan.source, plan.base_op, held.load_s)
    return held


def held_engine() -> tuple[str, int] | None:
    """(lineage, operation) of the engine this worker holds, or None."""
    return (_SLOT[0].lineage, _SLOT[0].op) if _SLOT else None


def engine_for(token: str, blob_source: Callable[[], bytes],
               load: Callable[[bytes], object]) -> tuple[object, float]:
    """The engine of broadcast `token` (no operations), and the seconds spent loading it now.

    `load` makes the engine from the broadcast bytes (the replay's query
    groups: `rtf.spark.workers.unpickle_blob`)."""
    class _Lazy:
        @property
        def value(self):
            return blob_source()

    engine, info = engine_at(EnginePlan(token, _Lazy(), load=lambda data, source: load(data)))
    return engine, info["load_s"]


# ------------------------------------------------- engines loaded before the fork


def index_key(data) -> str:
    """What identifies a saved index's content, read from its header (the first 128 bytes
    of `data`: bytes, a map, a file's start): its length and the SHA-256 of its body, which
    a load checks; a name or a path never is."""
    from rtf.io.sections import HEADER, MAGIC

    head = bytes(memoryview(data)[:HEADER.size])
    if len(head) < HEADER.size or head[:len(MAGIC)] != MAGIC:
        raise ValueError("not a saved index")
    _, version, _, length, digest, _ = HEADER.unpack(head)
    return f"v{version}:{length}:{digest.hex()}"


def file_key(path: str | os.PathLike) -> str:
    """`index_key` of the file at `path` (its header only is read)."""
    with open(path, "rb") as f:
        return index_key(f.read(128))


def preload(paths, output: str = "arrow") -> dict[str, str]:
    """Map each saved index of `paths` that is a file here (`rtf.engine.Engine.load`), make
    what forked workers would each make for themselves (`Engine.before_fork`) and freeze
    every object out of the collector's sight: the processes this one forks next take these
    engines (`_build`, by `index_key`) and share their pages. Returns path -> key (or why
    not) for each path; a file that is absent or does not load is skipped (its workers build
    their own engines as without this)."""
    import gc

    from rtf.engine import Engine
    from rtf.io import store

    done = {}
    for path in paths:
        if not os.path.isfile(path):
            done[path] = "not a file here"
            continue
        try:
            data = store.map_index(path)  # (the key and the engine from the same bytes)
            key = index_key(data)
            engine = Engine.from_bytes(data, path)  # (its body's SHA-256 checked against the key's)
            engine.before_fork(output)
        except Exception as e:  # noqa: BLE001 (the workers load their own, as without a daemon)
            done[path] = f"not loaded: {type(e).__name__}: {e}"
            continue
        _PRELOADED[key] = engine
        done[path] = key
    if _PRELOADED:
        _DAEMON[:] = [os.getpid()]
        gc.collect()
        gc.freeze()
    return done
