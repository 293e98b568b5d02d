"""Timing an engine: registration in steps, every publication matched once and timed, answers digested.
"""


from __future__ import annotations

import gc
import hashlib
import time
import traceback
from contextlib import nullcontext
from collections.abc import Callable, Sequence
from pathlib import Path

from rtf.bench.confirm_census import ConfirmCensus
from rtf.bench.inputs import Workload, chunks
from rtf.bench.memory import peak_rss_mb
from rtf.io.progress import progress
from rtf.errors import RtfError


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    if not sorted_values:
        return float("nan")
    k = (len(sorted_values) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (k - lo)


def answer_digest(found) -> bytes:
    """A digest of one publication's matches: query ids and their solutions."""
    h = hashlib.blake2b(digest_size=8)
    for m in found:
        h.update(repr((m.query_id, sorted(m.solutions))).encode())
        h.update(b"\0")
    return h.digest()


def combined_digest(digests: Sequence[bytes]) -> str:
    h = hashlib.blake2b(digest_size=8)
    for d in digests:
        h.update(d)
    return h.hexdigest()


def register_range(engine, wl: Workload, start: int, end: int) -> None:
    ids, queries, subs = wl.ids, wl.queries, wl.subscribers
    for i in range(start, end):
        engine.register(queries[i], ids[i], subs[i])


class GcClock:
    """A `gc.callbacks` hook: time spent in cyclic garbage collections, while running."""

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        self.seconds, self._start, self._paused = 0.0, None, False

    def pause(self) -> None:
        self._paused = True

    def resume(self) -> None:
        self._paused = False

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._start = None if self._paused else time.perf_counter()
        elif self._start is not None:
            self.seconds += time.perf_counter() - self._start
            self._start = None


gc_clock = GcClock()


def cached_index_path(cache_dir, algorithm: str, wl: Workload, end: int, taxonomy) -> Path:
    """Where `--index-cache` keeps the engine of `algorithm` holding the first `end`
    queries of `wl`: named by a digest of those queries, so another workload never
    reuses it."""
    h = hashlib.sha256(f"{algorithm}\n{end}\n".encode())
    for qid, text, sub in zip(wl.ids[:end], wl.texts[:end], wl.subscribers[:end]):
        h.update(f"{qid}\t{sub}\t{text}\n".encode())
    if taxonomy is not None:
        h.update(repr(sorted(taxonomy.parent_table().items())).encode())
    return Path(cache_dir) / f"{algorithm}-{end}-{h.hexdigest()[:16]}.rtfidx"


def time_algorithm(algorithm: str, wl: Workload, pubs: list, db: Sequence[int], step: int,
                   taxonomy, cache_dir=None) -> list[dict]:
    """Insert in steps and filter `pubs` at each DB size; one dict per DB size.

    With `cache_dir`, the engine at a DB size is loaded from there when a
    previous run saved it (its insert time is then the load: ``loaded``), and
    saved there (untimed) otherwise.
    """
    from rtf.engine import Engine, freeze_long_lived
    from rtf.query.text import text_index

    freeze_long_lived()  # the harness's objects are not the engine's to scan
    engine = Engine(algorithm, taxonomy=taxonomy)
    sizes = [p.size_bytes for p in pubs]
    rows, plan = [], chunks(db, step)
    inserted_at, steps_s, loaded = 0, [], False
    batch = max(1, min(step, 1000))
    for start, end in plan:
        target = min(d for d in db if d >= end)  # the DB size this step leads to
        cached = cached_index_path(cache_dir, algorithm, wl, target, taxonomy) if cache_dir else None
        if cached is not None and cached.exists():
            if end == target:  # the steps up to here were skipped: load instead
                t = time.perf_counter()
                engine = Engine.load(cached)
                steps_s, loaded = [time.perf_counter() - t], True
        else:
            t_step = 0.0
            bar = progress(range(start, end, batch), f"{algorithm} FT{wl.ft_pr} insert {end:,}",
                           unit="kq" if batch == 1000 else "batch")
            for b in bar:
                t = time.perf_counter()
                register_range(engine, wl, b, min(b + batch, end))
                t_step += time.perf_counter() - t
            steps_s.append(t_step)
            if cached is not None and end == target:
                cached.parent.mkdir(parents=True, exist_ok=True)
                engine.save(cached)
        if end not in db:
            continue
        insert_s = sum(steps_s)
        inserted = end - inserted_at
        inserted_at, steps_s = end, []
        was_loaded, loaded = loaded, False

        text_index.cache_clear()
        freeze_long_lived()  # what a long-running matcher does after loading its queries
        times, digests, counts = [], [], []
        gc_clock.reset()
        gc.callbacks.append(gc_clock)
        # version-3 queries: their candidates, matches and confirmation time (rtf.bench.confirm_census)
        census = ConfirmCensus() if any(q.algebra is not None for q in wl.queries[:end]) else None
        try:
            with census or nullcontext():
                for pub in progress(pubs, f"{algorithm} FT{wl.ft_pr} filter DB={end:,}", unit="pub"):
                    t = time.perf_counter()
                    found = engine.match(pub)
                    times.append(time.perf_counter() - t)
                    gc_clock.pause()  # the digest's garbage is the harness's, not the engine's
                    digests.append(answer_digest(found))
                    counts.append(len(found))
                    gc_clock.resume()
        finally:
            gc.callbacks.remove(gc_clock)
        total = sum(times)
        ordered = sorted(times)
        rows.append({
            "algorithm": algorithm, "ft_pr": wl.ft_pr, "db": end, "publications": len(pubs),
            "inserted": inserted, "insert_s": insert_s, "loaded": was_loaded,
            "insert_ms_per_query": 1000 * insert_s / inserted if inserted else None,
            "filter_ms_mean": 1000 * total / len(pubs) if pubs else float("nan"),
            "filter_ms_p50": 1000 * percentile(ordered, 0.50),
            "filter_ms_p99": 1000 * percentile(ordered, 0.99),
            "pubs_per_s": len(pubs) / total if total else float("inf"),
            "kb_per_s": sum(sizes) / 1024 / total if total else float("inf"),
            "gc_pct": round(100 * gc_clock.seconds / total, 1) if total else None,
            "matches": sum(counts),
            "matches_per_pub": sum(counts) / len(pubs) if pubs else float("nan"),
            "digest": combined_digest(digests),
            "peak_rss_mb": round(peak_rss_mb(), 1),
            **(_census_figures(census, len(pubs), total) if census is not None else {}),
            # kept out of the JSON: per-publication figures for the comparison and plots
            "_digests": digests, "_counts": counts, "_times": times,
        })
    gc.unfreeze()
    return rows


def _census_figures(census: ConfirmCensus, publications: int, total: float) -> dict:
    """Version 3's share of the filtering: candidates confirmed and matches per publication,
    the share of the filter time spent confirming them."""
    return {"v3_candidates_per_pub": census.candidates / publications if publications else None,
            "v3_matches_per_pub": census.matches / publications if publications else None,
            "confirm_pct": round(100 * census.seconds / total, 1) if total else None}


def run_isolated(isolate: bool, fn: Callable, *args):
    """`fn(*args)` in a forked child process (its result pickled back), or here."""
    import multiprocessing as mp

    if not isolate or "fork" not in mp.get_all_start_methods():
        return fn(*args)
    ctx = mp.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)

    def child():
        try:
            result = ("ok", fn(*args))
        except BaseException as e:  # report any failure to the parent, then exit
            result = ("error", f"{type(e).__name__}: {e}", traceback.format_exc())
        send.send(result)
        send.close()

    proc = ctx.Process(target=child, daemon=True)
    proc.start()
    send.close()
    try:
        result = receive.recv()
    except EOFError:
        proc.join()
        raise RtfError(f"the benchmark process died (exit code {proc.exitcode})") from None
    finally:
        proc.join()
    if result[0] == "error":
        raise RtfError(f"benchmark process failed: {result[1]}\n{result[2]}")
    return result[1]
