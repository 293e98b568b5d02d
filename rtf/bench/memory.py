"""Memory: the process's resident size, and the engine's live objects under tracemalloc."""

from __future__ import annotations

import gc
from collections.abc import Sequence

from rtf.bench.inputs import Workload, chunks
from rtf.io.progress import progress

#: How ``index_mb`` is measured (reported with the figures).
MEMORY_METHOD = ("tracemalloc: live bytes the engine holds after registering the queries "
                 "(its index and its copy of each parsed query; queries_mb is that copy), "
                 "in a separate untimed pass in a fresh process")


def peak_rss_mb() -> float:
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def current_rss_mb() -> float:
    """Resident memory now (after a collection), for the index's RSS growth."""
    import gc

    import psutil
    gc.collect()
    return psutil.Process().memory_info().rss / 2**20


def memory_profile(algorithm: str, wl: Workload, db: Sequence[int], step: int, taxonomy) -> dict:
    """MB of live objects the engine holds after registering, at each DB size (tracemalloc).

    The engine registers fresh copies of the parsed queries (unpickled under
    tracemalloc), so the figure includes the engine's own copy of every query
    -- as when it parses query texts itself -- but not the parser's garbage,
    the harness's objects or the interpreter.
    """
    import pickle
    import tracemalloc

    from rtf.engine import Engine
    from rtf.query.text import text_index

    blobs = [pickle.dumps(q, pickle.HIGHEST_PROTOCOL) for q in wl.queries]
    ids, subs = wl.ids, wl.subscribers
    text_index.cache_clear()
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        engine = Engine(algorithm, taxonomy=taxonomy)
        out, queries_out, queries_bytes = {}, {}, 0
        traced = tracemalloc.get_traced_memory
        for start, end in progress(chunks(db, step), f"{algorithm} FT{wl.ft_pr} memory", unit="step"):
            for i in range(start, end):
                before = traced()[0]
                query = pickle.loads(blobs[i])
                queries_bytes += traced()[0] - before
                engine.register(query, ids[i], subs[i])
            if end in db:
                gc.collect()
                out[end] = (traced()[0] - base) / 2**20
                queries_out[end] = queries_bytes / 2**20
    finally:
        tracemalloc.stop()
    return {"index_mb": out, "queries_mb": queries_out, "stats": engine.stats()}
