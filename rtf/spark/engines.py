"""The long-lived engine of a Python worker: built once, brought forward by query operations, reused.

A Spark executor runs Python code in worker processes that it keeps and
reuses from task to task (``spark.python.worker.reuse``, on by default).
Each worker holds one engine in `_SLOT`, built the first time a task needs
it -- from a saved index (`rtf.engine.Engine.from_bytes`; never a pickle of
an engine) or, for the query groups of the replay, from a pickle of a group
-- and kept for every later task of every later job and micro-batch.

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


@dataclass
class _Held:
    lineage: str
    op: int
    engine: object
    failed: dict = field(default_factory=dict)  # op number -> why it did not apply
    load_s: float = 0.0


#: This worker's engine (one at a time, so that memory holds one index).
_SLOT: list[_Held] = []


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
            reason = apply_operation(held.engine, op)
            if reason is not None:
                held.failed[n] = reason
                log.warning("queries log operation %d not applied: %s", n, reason)
            held.op = n
        held.op = plan.pin
    return held.engine, {"load_s": load_s, "ops_applied": plan.pin - start if start < plan.pin else 0,
                         "ops_failed": dict(held.failed), "op": held.op}


def _build(plan: EnginePlan) -> _Held:
    from rtf.engine import freeze_long_lived

    t = time.perf_counter()
    if _SLOT:  # let the previous engine (frozen out of the collector's sight) go first
        import gc

        _SLOT.clear()
        gc.unfreeze()
        gc.collect()
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
