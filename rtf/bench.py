"""``rtf bench``: the RTF paper's evaluation (section 4), side by side.

The paper filters I_pub = 5K DBpedia publications against query databases
of DB = 20K ... 100K generated queries (FT_pr = 0, 50 or 100 % of the
literal tuples with a full-text constraint), inserting the queries 20K at a
time, and reports filter time per publication, throughput, index memory and
insertion time per step (Figs. 5-7). This module does the same with any of
the engines (`rtf.engine.ALGORITHMS`)::

    rtf bench                                     # a few minutes on 2 cores
    rtf bench --db 20000,40000,60000,80000,100000 --pubs 100 \\
              --json out.json --plots out/        # the paper's DB sizes, ~17 min
    rtf bench --mix selective ...                 # ~2 % of the queries match, not ~11 %

How it measures, and why:

- One workload for all engines. The queries are generated once
  (`rtf.workload.generate_queries`, deterministic by ``--seed``; ``--mix``
  picks the paper's mix or the selective one) and parsed
  once (`rtf.parser.parse_query`); every engine registers the same parsed
  `Query` objects, so parsing is charged to no engine.
- One fresh process per algorithm (``fork`` on POSIX): an engine never
  pays for the garbage or the allocator state another one left behind. In
  the child the harness's own objects (publications, parsed queries) are
  moved out of the garbage collector's sight (`gc.freeze`), so a collection
  scans the engine's objects only.
- Insertion: queries are registered in steps of ``--step`` (default: the
  first DB size, the paper's I_p = 20K); ``insert_s`` of a DB size is the
  time to register the queries added since the previous DB size.
- Filtering: at each DB size every publication goes through
  ``Engine.match`` once, timed one by one (mean, p50, p99; throughput in
  publications/s and KB/s of N-Triples, `Publication.size_bytes`; the
  mean number of matches per publication, the workload's selectivity). The
  literal-text cache (`rtf.text.text_index`) is emptied before each pass,
  so every pass pays the tokenisation of its publications as a stream
  would.
- Memory: a second, untimed insertion in another fresh process, under
  `tracemalloc`: ``index_mb`` is the size of the live Python objects the
  engine holds, read after each DB size (after a collection). The engine
  registers fresh copies of the parsed queries there, so the figure is
  its index plus its own copy of every query -- what registering the query
  texts would keep -- and not the interpreter, the harness, the parser's
  garbage or the allocator's free lists. It is exact and the same on every
  run, where the growth of the process's RSS in Python is blurred by arena
  reuse at the scale of one step. tracemalloc slows allocation
  several-fold, hence the separate pass. (``peak_rss_mb`` of the timing
  process is reported too, for scale.)
- Answers: at each DB size the engines' matches are compared publication by
  publication (a digest of query ids and solutions) on the publications
  they all saw. Any difference is a correctness bug: the bench says so in
  capitals, looks for the smallest reproducing query and publication, and
  exits with status 3.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import random
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rtf.arguments import positive_int
from rtf.cli import load_queries, peak_rss_mb, progress
from rtf.errors import QueryError, RtfError
from rtf.machine import machine_info
from rtf.workload import MIXES

#: Defaults sized so that ``rtf bench`` alone finishes in a few minutes on 2 cores.
DEFAULT_DB = (2000, 4000, 6000, 8000, 10000)
DEFAULT_PUBS = 300
DEFAULT_ALGORITHMS = ("rtfs", "rtfm", "ibroker")
PAPER_COMMAND = ("rtf bench --db 20000,40000,60000,80000,100000 --pubs 5000 "
                 "--ft-pr 50 --algorithms rtfs,rtfm,ibroker --json paper.json --plots paper/")

#: The paper's figures (section 4.1, DB = 100K, FT_pr = 50 %; C++ on a Core i7 3.6 GHz).
PAPER_FIGURES = {
    "rtfs": {"filter_ms_mean": 36.0, "pubs_per_s": 27.0, "kb_per_s": 17.0, "index_mb": 183.0},
    # RTFs is "2.5 % faster than RTFm"
    "rtfm": {"filter_ms_mean": 36.9, "pubs_per_s": 27.0, "kb_per_s": 17.0, "index_mb": 190.0},
    # 94 times RTFs' 36 ms (the text); its 0.28 publications/s would be 3,571 ms
    "ibroker": {"filter_ms_mean": 3384.0, "pubs_per_s": 0.28, "kb_per_s": 0.18, "index_mb": 313.0},
}

EXIT_MISMATCH = 3
MEMORY_METHOD = ("tracemalloc: live bytes the engine holds after registering the queries "
                 "(its index and its copy of each parsed query; queries_mb is that copy), "
                 "in a separate untimed pass in a fresh process")


# ------------------------------------------------------------------ inputs


@dataclass
class Workload:
    """The parsed queries of one FT_pr, in registration order."""

    ft_pr: int
    ids: list[str]
    queries: list  # rtf.model.Query, parsed once
    subscribers: list[str | None]
    texts: list[str]
    rejected: int = 0  # generated queries the parser refused (replaced by others)


@dataclass
class BenchParams:
    publications: list[str]
    db: list[int] = field(default_factory=lambda: list(DEFAULT_DB))
    ft_pr: list[int] = field(default_factory=lambda: [50])
    algorithms: list[str] = field(default_factory=lambda: list(DEFAULT_ALGORITHMS))
    pubs: int = DEFAULT_PUBS
    ibroker_pubs: int | None = None
    naive_pubs: int | None = None
    seed: int = 0
    step: int | None = None
    taxonomy: str | None = None
    queries: str | None = None
    isolate: bool = True
    memory: bool = True
    mix_name: str = "paper"  # a workload of rtf.workload.MIXES: paper or selective
    index_cache: str | None = None  # a folder of saved engines reused across runs

    def step_size(self) -> int:
        return self.step or self.db[0]

    def pubs_for(self, algorithm: str) -> int:
        limit = {"ibroker": self.ibroker_pubs, "naive": self.naive_pubs}.get(algorithm)
        return min(self.pubs, limit) if limit else self.pubs


def load_publications(paths: Sequence[str]) -> list:
    from rtf.reader import read_publications
    return list(progress(read_publications(list(paths)), "reading", unit="pub"))


def sample_publications(pubs: list, n: int, seed: int) -> list:
    """`n` publications in a random order fixed by `seed`: every prefix is a random sample."""
    rng = random.Random(f"rtf-bench-publications-{seed}")
    return rng.sample(pubs, min(n, len(pubs)))


def parse_workload(records: list[dict], ft_pr: int, n: int,
                   more: Callable[[int, int], list[dict]] | None = None) -> Workload:
    """Parse `records` once; a query the parser refuses is replaced by a fresh one from `more`."""
    from rtf.parser import parse_query

    wl = Workload(ft_pr, [], [], [], [])
    batch, round_ = records, 0
    while True:
        for rec in progress(batch, f"parsing FT_pr={ft_pr}%", unit="q"):
            if len(wl.ids) == n:
                break
            try:
                q = parse_query(rec["query"])
            except QueryError:
                wl.rejected += 1
                continue
            wl.ids.append(str(rec["id"]) if rec.get("id") is not None else f"q{len(wl.ids) + 1}")
            wl.queries.append(q)
            wl.subscribers.append(rec.get("subscriber"))
            wl.texts.append(rec["query"])
        if len(wl.ids) >= n or more is None:
            return wl
        round_ += 1
        if round_ > 20:
            raise RtfError(f"could not generate {n} parseable queries "
                           f"({wl.rejected} refused by the parser)")
        batch = more(round_, n - len(wl.ids))


def bench_mix(ft_pr: int, mix_name: str = "paper"):
    """The workload `mix_name` at FT_pr = `ft_pr` %.

    ``paper`` (the default): at most 4 tuples, 1-3 conjunctive terms,
    distinct properties; about 11 % of the queries match a DBpedia
    publication. ``selective``: the same shape with a class constraint and
    informative words, about 2 % (`rtf.workload.Mix.selective`).

    Distinct predicates (rdf:type aside) keep out queries such as
    ``?s p ?o1 . ?s p ?o2 . ?s p ?o3`` whose solutions are the cube of a
    multi-valued property: on a football season with 90 ``dbp:stadium``
    values one of them alone costs seconds of join, in every engine alike.
    """
    from rtf.workload import named_mix
    return named_mix(mix_name, ft_pr / 100)


def make_workload(params: BenchParams, vocab, taxonomy, ft_pr: int) -> Workload:
    from rtf.workload import generate_queries

    n = params.db[-1]
    if params.queries:
        records = load_queries(params.queries)
        wl = parse_workload(records, ft_pr, n)
        if len(wl.ids) < n:
            raise RtfError(f"{params.queries} holds {len(wl.ids)} usable queries; "
                           f"--db asks for {n}")
        return wl
    mix = bench_mix(ft_pr, params.mix_name)

    def more(round_: int, k: int) -> list[dict]:
        return generate_queries(vocab, k, seed=params.seed + 1000 * round_, mix=mix,
                                taxonomy=taxonomy, prefix=f"g{round_}_")

    records = generate_queries(vocab, n, seed=params.seed, mix=mix, taxonomy=taxonomy)
    return parse_workload(records, ft_pr, n, more)


def chunks(db: Sequence[int], step: int) -> list[tuple[int, int]]:
    """(start, end) registration steps: every `step` queries and at every DB size."""
    cuts = set(db) | set(range(step, db[-1], step))
    out, start = [], 0
    for end in sorted(cuts):
        out.append((start, end))
        start = end
    return out


# --------------------------------------------------------------- measuring


def _percentile(sorted_values: Sequence[float], q: float) -> float:
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


def _register(engine, wl: Workload, start: int, end: int) -> None:
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
    from rtf.text import text_index

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
                _register(engine, wl, b, min(b + batch, end))
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
        try:
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
            "filter_ms_p50": 1000 * _percentile(ordered, 0.50),
            "filter_ms_p99": 1000 * _percentile(ordered, 0.99),
            "pubs_per_s": len(pubs) / total if total else float("inf"),
            "kb_per_s": sum(sizes) / 1024 / total if total else float("inf"),
            "gc_pct": round(100 * gc_clock.seconds / total, 1) if total else None,
            "matches": sum(counts),
            "matches_per_pub": sum(counts) / len(pubs) if pubs else float("nan"),
            "digest": combined_digest(digests),
            "peak_rss_mb": round(peak_rss_mb(), 1),
            # kept out of the JSON: per-publication figures for the comparison and plots
            "_digests": digests, "_counts": counts, "_times": times,
        })
    gc.unfreeze()
    return rows


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
    from rtf.text import text_index

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


def _run_isolated(isolate: bool, fn: Callable, *args):
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


# ----------------------------------------------------------------- checking


def compare_answers(rows: list[dict]) -> tuple[list[dict], list[dict]]:
    """(agreements, mismatches) per (FT_pr, DB) on the publications every algorithm saw."""
    groups: dict[tuple[int, int], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["ft_pr"], r["db"]), []).append(r)
    agreements, mismatches = [], []
    for (ft_pr, db), group in sorted(groups.items()):
        common = min(r["publications"] for r in group)
        for r in group:
            r["common_publications"] = common
            r["common_matches"] = sum(r["_counts"][:common])
            r["common_digest"] = combined_digest(r["_digests"][:common])
        ref = group[0]
        differing = [r for r in group[1:] if r["common_digest"] != ref["common_digest"]]
        if not differing:
            agreements.append({"ft_pr": ft_pr, "db": db, "publications": common,
                               "matches": ref["common_matches"], "digest": ref["common_digest"],
                               "algorithms": [r["algorithm"] for r in group]})
            continue
        for r in differing:
            first = next(i for i in range(common) if r["_digests"][i] != ref["_digests"][i])
            mismatches.append({"ft_pr": ft_pr, "db": db, "publications": common,
                               "algorithms": [ref["algorithm"], r["algorithm"]],
                               "matches": [ref["common_matches"], r["common_matches"]],
                               "first_publication_index": first})
    return agreements, mismatches


def diagnose(mismatch: dict, wl: Workload, pubs: list, taxonomy) -> dict:
    """Find the queries two engines disagree on, and the smallest reproduction."""
    from rtf.engine import Engine

    a, b = mismatch["algorithms"]
    pub = pubs[mismatch["first_publication_index"]]
    engines = {}
    for alg in (a, b):
        engines[alg] = Engine(alg, taxonomy=taxonomy)
        _register(engines[alg], wl, 0, mismatch["db"])
    answers = {alg: {m.query_id: m.solutions for m in e.match(pub)} for alg, e in engines.items()}
    ids = sorted(set(answers[a]) | set(answers[b]))
    differing = [q for q in ids if answers[a].get(q) != answers[b].get(q)]
    out = {"publication": pub.id, "differing_queries": differing[:20],
           "differing_count": len(differing)}
    position = {q: i for i, q in enumerate(wl.ids)}
    for qid in differing:
        i = position[qid]
        alone = {}
        for alg in (a, b):
            e = Engine(alg, taxonomy=taxonomy)
            e.register(wl.queries[i], qid)
            alone[alg] = sorted(sorted(m.solutions) for m in e.match(pub))
        if alone[a] != alone[b]:
            out["reproduction"] = {
                "query": wl.texts[i],
                "publication": "\n".join(f"{s} {p} {o} ." for s, p, o in pub.triples),
                a: alone[a], b: alone[b]}
            break
    else:
        out["reproduction"] = None  # each query alone agrees: it takes several to differ
    return out


# ---------------------------------------------------------------- the bench


def run_bench(params: BenchParams, log: Callable[[str], None] = lambda s: None) -> dict:
    """Run the whole evaluation; the JSON document (runs keep private ``_`` keys)."""
    from rtf.engine import ALGORITHMS
    from rtf.taxonomy import Taxonomy
    from rtf.workload import Vocabulary

    for alg in params.algorithms:
        if alg not in ALGORITHMS:
            raise RtfError(f"unknown algorithm {alg!r}; choose among {', '.join(ALGORITHMS)}")
    if params.queries and len(params.ft_pr) > 1:
        raise RtfError("--queries gives one workload: pass a single --ft-pr (its label)")
    t0 = time.perf_counter()
    taxonomy = Taxonomy.from_file(params.taxonomy) if params.taxonomy else None
    all_pubs = load_publications(params.publications)
    if not all_pubs:
        raise RtfError("no publications in " + ", ".join(params.publications))
    pubs = sample_publications(all_pubs, params.pubs, params.seed)
    vocab = None if params.queries else Vocabulary(all_pubs, taxonomy)
    step = params.step_size()
    log(f"rtf bench: {len(all_pubs):,} publications read, {len(pubs):,} filtered; "
        f"DB {', '.join(f'{d:,}' for d in params.db)} in steps of {step:,}; "
        f"FT_pr {', '.join(f'{f}%' for f in params.ft_pr)}; {', '.join(params.algorithms)}")

    rows, memory, workloads, rejected = [], {}, {}, {}
    for ft_pr in params.ft_pr:
        t = time.perf_counter()
        wl = make_workload(params, vocab, taxonomy, ft_pr)
        workloads[ft_pr] = wl
        rejected[ft_pr] = wl.rejected
        log(f"  FT_pr={ft_pr}%: {len(wl.ids):,} queries generated and parsed in "
            f"{time.perf_counter() - t:.1f} s")
        for alg in params.algorithms:
            seen = pubs[:params.pubs_for(alg)]
            t = time.perf_counter()
            alg_rows = _run_isolated(params.isolate, time_algorithm, alg, wl, seen, params.db,
                                     step, taxonomy, params.index_cache)
            if params.memory:
                mem = _run_isolated(params.isolate, memory_profile, alg, wl, params.db, step,
                                    taxonomy)
            else:
                mem = {"index_mb": {}, "queries_mb": {}, "stats": {}}
            memory[(ft_pr, alg)] = mem["stats"]
            for r in alg_rows:
                for key in ("index_mb", "queries_mb"):
                    mb = mem[key].get(r["db"])
                    r[key] = round(mb, 2) if mb is not None else None
            rows.extend(alg_rows)
            log(f"  FT_pr={ft_pr}% {alg}: done in {time.perf_counter() - t:.1f} s "
                f"({len(seen):,} publications)")

    agreements, mismatches = compare_answers(rows)
    for m in mismatches:
        m.update(diagnose(m, workloads[m["ft_pr"]], pubs, taxonomy))
    for r in rows:
        r["matches_agree"] = not any(m["ft_pr"] == r["ft_pr"] and m["db"] == r["db"]
                                     for m in mismatches)
        r["mismatch"] = next((m for m in mismatches if m["ft_pr"] == r["ft_pr"]
                              and m["db"] == r["db"] and m["algorithms"][1] == r["algorithm"]), None)
        if r["db"] == params.db[-1]:
            r["engine_stats"] = memory.get((r["ft_pr"], r["algorithm"])) or None

    params_out = asdict(params)
    # Paths as given relative to where the bench ran (``../shared/data/...`` from a
    # clone), so a saved JSON names no one machine's folders.
    for key in ("publications", "taxonomy", "queries", "index_cache"):
        value = params_out.get(key)
        if isinstance(value, list):
            params_out[key] = [os.path.relpath(v) for v in value]
        elif value:
            params_out[key] = os.path.relpath(value)
    params_out.update(step=step, publications_read=len(all_pubs), publications_filtered=len(pubs),
                      publications_per_algorithm={a: len(pubs[:params.pubs_for(a)])
                                                  for a in params.algorithms},
                      queries_rejected_by_parser=rejected, memory_method=MEMORY_METHOD,
                      mix=None if params.queries else {
                          k: v for k, v in asdict(bench_mix(0, params.mix_name)).items()
                          if k != "ft_pr"},
                      seconds=round(time.perf_counter() - t0, 1))
    return {"params": params_out, "machine": machine_info(), "runs": rows,
            "agreement": agreements, "mismatches": mismatches}


def public_json(doc: dict) -> dict:
    """The ``--json`` document: exactly {"params", "machine", "runs"}.

    Each run carries the documented fields (algorithm, db, publications,
    insert_s, filter_ms_mean/p50/p99, pubs_per_s, kb_per_s, index_mb,
    matches) and some more: ft_pr, the answers' digest, the publications and
    matches compared with the other algorithms (``common_*``),
    ``matches_agree`` and, on a disagreement, ``mismatch`` with the first
    differing publication and a one-query reproduction.
    """
    runs = [{k: v for k, v in r.items() if not k.startswith("_")} for r in doc["runs"]]
    return {"params": doc["params"], "machine": doc["machine"], "runs": runs}


# ------------------------------------------------------------------ output


_COLUMNS = [("algorithm", "algorithm", "{}"), ("ft_pr", "FT%", "{}"), ("db", "DB", "{:,}"),
            ("publications", "pubs", "{:,}"), ("insert_s", "insert s", "{:.2f}"),
            ("filter_ms_mean", "filter ms", "{:.2f}"), ("filter_ms_p50", "p50", "{:.2f}"),
            ("filter_ms_p99", "p99", "{:.2f}"), ("pubs_per_s", "pubs/s", "{:,.1f}"),
            ("kb_per_s", "KB/s", "{:,.1f}"), ("gc_pct", "GC %", "{:.0f}"),
            ("index_mb", "index MB", "{:.1f}"), ("queries_mb", "queries MB", "{:.1f}"),
            ("matches", "matches", "{:,}"), ("matches_per_pub", "matches/pub", "{:,.1f}")]


def format_table(runs: list[dict]) -> str:
    cells = [[h for _, h, _ in _COLUMNS]]
    order = {a: i for i, a in enumerate(dict.fromkeys(r["algorithm"] for r in runs))}
    for r in sorted(runs, key=lambda r: (r["ft_pr"], r["db"], order[r["algorithm"]])):
        cells.append(["-" if r.get(k) is None else f.format(r[k]) for k, _, f in _COLUMNS])
    widths = [max(len(row[i]) for row in cells) for i in range(len(_COLUMNS))]
    lines = []
    for n, row in enumerate(cells):
        lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                               for i, (c, w) in enumerate(zip(row, widths))))
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def latency_summary(runs: list[dict]) -> list[str]:
    """At the largest DB of each FT_pr: matches per publication, latencies, speed ratios."""
    out = []
    for ft_pr in sorted({r["ft_pr"] for r in runs}):
        db = max(r["db"] for r in runs if r["ft_pr"] == ft_pr)
        group = [r for r in runs if r["ft_pr"] == ft_pr and r["db"] == db]
        per_pub = group[0]["matches_per_pub"]
        out.append(f"at FT_pr={ft_pr}% DB={db:,}: {per_pub:,.1f} matches per publication "
                   f"({100 * per_pub / db:.2f} % of the queries); per-publication latency p50 / p99, "
                   f"publications/s: " + "; ".join(
                       f"{r['algorithm']} {r['filter_ms_p50']:,.2f} / {r['filter_ms_p99']:,.2f} ms, "
                       f"{r['pubs_per_s']:,.1f}" for r in group))
        base = next((r for r in group if r["algorithm"] == "rtfs"), group[0])
        others = [r for r in group if r is not base and base["filter_ms_mean"]]
        if others:
            out.append(f"  mean filter time relative to {base['algorithm']}: " + ", ".join(
                f"{r['algorithm']} {r['filter_ms_mean'] / base['filter_ms_mean']:,.2f}x"
                for r in others))
    return out


def format_report(doc: dict) -> str:
    p = doc["params"]
    out = [format_table(doc["runs"]), ""]
    seen = ", ".join(f"{a} {n:,}" for a, n in p["publications_per_algorithm"].items())
    workload = f"queries from {p['queries']}" if p.get("queries") else f"the {p['mix_name']} mix"
    out.append(f"workload: {workload}; publications filtered per algorithm: {seen} "
               f"(of {p['publications_read']:,} read); "
               f"insert s: time to register the queries added since the previous DB size; "
               f"index MB: {p['memory_method']}")
    if doc["mismatches"]:
        out.append("")
        out.append("!" * 78)
        out.append("!!! MATCH MISMATCH: the engines disagree -- a correctness bug in an engine !!!")
        for m in doc["mismatches"]:
            a, b = m["algorithms"]
            out.append(f"!!! FT_pr={m['ft_pr']}% DB={m['db']:,}, on the first {m['publications']:,} "
                       f"publications: {a} {m['matches'][0]:,} matches, {b} {m['matches'][1]:,}")
            out.append(f"!!!   first differing publication: {m.get('publication')} "
                       f"({m.get('differing_count')} queries differ: "
                       f"{', '.join(m.get('differing_queries', [])[:8])})")
            rep = m.get("reproduction")
            if rep:
                out.append(f"!!!   reproduced with that one query: {rep['query']}")
                out.append(f"!!!     {a}: {rep[a]}")
                out.append(f"!!!     {b}: {rep[b]}")
            else:
                out.append("!!!   no single query reproduces it alone")
        out.append("!" * 78)
    else:
        for g in doc["agreement"]:
            out.append(f"matches agree: FT_pr={g['ft_pr']}% DB={g['db']:,}: "
                       f"{', '.join(g['algorithms'])} give {g['matches']:,} matches on the "
                       f"{g['publications']:,} common publications (digest {g['digest']})")
    out += latency_summary(doc["runs"])
    ours = {r["algorithm"]: r for r in doc["runs"] if r["db"] == 100000 and r["ft_pr"] == 50}
    if ours:
        out.append("")
        out.append("the paper at DB=100K, FT_pr=50% (C++, Core i7 3.6 GHz) -> here:")
        for alg, fig in PAPER_FIGURES.items():
            r = ours.get(alg)
            if r is None:
                continue
            mb = "-" if r.get("index_mb") is None else f"{r['index_mb']:,.0f}"
            out.append(f"  {alg:8} {fig['filter_ms_mean']:>7,.1f} -> {r['filter_ms_mean']:,.1f} ms/pub, "
                       f"{fig['pubs_per_s']:>5} -> {r['pubs_per_s']:,.1f} pubs/s, "
                       f"{fig['kb_per_s']:>5} -> {r['kb_per_s']:,.1f} KB/s, "
                       f"{fig['index_mb']:.0f} -> {mb} MB")
    return "\n".join(out)


# ------------------------------------------------------------------- plots


_STYLE = {"rtfs": ("tab:blue", "o"), "rtfm": ("tab:green", "s"),
          "ibroker": ("tab:red", "^"), "naive": ("tab:gray", "x")}


def _series(runs, ft_pr, alg, key):
    rs = sorted((r for r in runs if r["ft_pr"] == ft_pr and r["algorithm"] == alg),
                key=lambda r: r["db"])
    return [r["db"] / 1000 for r in rs], [r.get(key) for r in rs]


def write_plots(doc: dict, directory: str | os.PathLike) -> list[Path]:
    """PNG charts in the manner of the paper's Figs. 5-7; returns the paths written."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    runs, params = doc["runs"], doc["params"]
    ft_prs = sorted({r["ft_pr"] for r in runs})
    main_ft = 50 if 50 in ft_prs else ft_prs[0]
    algs = [a for a in params["algorithms"] if any(r["algorithm"] == a for r in runs)]
    db_max = max(r["db"] for r in runs)
    written = []

    single_db = len({r["db"] for r in runs}) == 1
    slots: dict = {}  # axis -> how many series it has, for bars side by side

    def draw(ax, x, y, color=None, marker="o", label=None, linestyle="-", **kw):
        """A series against DB: a line, or a bar when a single DB size was measured."""
        if not single_db:
            ax.plot(x, y, marker=marker, color=color, label=label, linestyle=linestyle, **kw)
            return
        k = slots[ax] = slots.get(ax, -1) + 1
        if y and y[0] is not None:
            ax.bar([k], y[:1], width=0.7, color=color, label=label,
                   hatch=None if linestyle == "-" else "//",
                   fill=linestyle == "-" or kw.get("markerfacecolor") != "none",
                   edgecolor=color)

    def outside_legend(ax):
        # Beside the axes, never over the data.
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1), borderaxespad=0)

    def style(ax, ylabel, log=False):
        if single_db:
            ax.set_xticks([])
            ax.set_xlabel(f"query database DB = {db_max:,} queries")
        else:
            ax.set_xlabel("query database DB (thousands of queries)")
        ax.set_ylabel(ylabel)
        if log:
            ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            outside_legend(ax)
        else:
            ax.text(0.5, 0.5, "not measured", ha="center", va="center", transform=ax.transAxes)

    def spread(values):
        vals = [v for v in values if v]
        return vals and max(vals) / min(vals) > 20

    def save(fig, name):
        fig.tight_layout()
        fig.savefig(directory / name, dpi=90, bbox_inches="tight")  # keeps the outside legends
        plt.close(fig)
        written.append(directory / name)

    # Fig. 5: (a) filter time vs DB, (b) throughput along the publication stream at the largest DB
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
    allv = []
    for alg in algs:
        x, y = _series(runs, main_ft, alg, "filter_ms_mean")
        allv += y
        c, m = _STYLE.get(alg, (None, "o"))
        draw(ax1, x, y, color=c, marker=m, label=alg)
    ax1.set_title(f"(a) filter time per publication, FT_pr={main_ft}%", fontsize=10)
    style(ax1, "ms / publication (mean)", log=spread(allv))
    for alg in algs:
        r = next((r for r in runs if r["ft_pr"] == main_ft and r["algorithm"] == alg
                  and r["db"] == db_max), None)
        if r is None or not r.get("_times"):
            continue
        times = r["_times"]
        every = max(1, len(times) // 50)
        xs, ys, elapsed = [], [], 0.0
        for i, t in enumerate(times, 1):
            elapsed += t
            if i % every == 0 or i == len(times):
                xs.append(i)
                ys.append(i / elapsed if elapsed else float("nan"))
        c, m = _STYLE.get(alg, (None, "o"))
        ax2.plot(xs, ys, color=c, marker=m, markevery=max(1, len(xs) // 10), markersize=4,
                 label=f"{alg}: {r['pubs_per_s']:,.1f} pubs/s, {r['kb_per_s']:,.1f} KB/s")
    ax2.set_title(f"(b) throughput along the stream, DB={db_max:,}", fontsize=10)
    ax2.set_xlabel(f"publications filtered (of {max(r['publications'] for r in runs):,})")
    ax2.set_ylabel("publications / s (cumulative)")
    if spread([r["pubs_per_s"] for r in runs if r["db"] == db_max and r["ft_pr"] == main_ft]):
        ax2.set_yscale("log")
    else:
        ax2.set_ylim(bottom=0)
    ax2.grid(True, which="both", alpha=0.3)
    if ax2.get_legend_handles_labels()[0]:
        outside_legend(ax2)
    save(fig, "fig5_filtering.png")

    # Fig. 6: (a) index memory vs DB, (b) insertion time per step
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
    for alg in algs:
        c, m = _STYLE.get(alg, (None, "o"))
        x, y = _series(runs, main_ft, alg, "index_mb")
        if any(v is not None for v in y):
            draw(ax1, x, y, marker=m, color=c, label=alg)
            _, q = _series(runs, main_ft, alg, "queries_mb")
            if all(v is not None for v in y + q):
                draw(ax1, x, [a - b for a, b in zip(y, q)], marker=m, color=c, linestyle="--",
                     markerfacecolor="none", label=f"{alg} without its copy of the queries")
        x, y = _series(runs, main_ft, alg, "insert_s")
        draw(ax2, x, [1000 * v for v in y], marker=m, color=c, label=alg)
    ax1.set_title(f"(a) index memory (tracemalloc), FT_pr={main_ft}%", fontsize=10)
    style(ax1, "MB")
    ax1.set_ylim(bottom=0)
    ax2.set_title(f"(b) time to insert each step of {params['step']:,} queries", fontsize=10)
    style(ax2, "ms per step")
    ax2.set_ylim(bottom=0)
    save(fig, "fig6_memory_insertion.png")

    # Fig. 7: every measured engine when FT_pr varies (only with several FT_pr)
    if len(ft_prs) > 1:
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
        dashes = ["-", "--", ":", "-."]
        for alg in algs:
            c, m = _STYLE.get(alg, (None, "o"))
            for k, ft in enumerate(ft_prs):
                ls = dashes[k % len(dashes)]
                x, y = _series(runs, ft, alg, "filter_ms_mean")
                draw(ax1, x, y, marker=m, color=c, linestyle=ls, label=f"{alg} FT_pr={ft}%",
                     alpha=1.0 - 0.5 * k / len(ft_prs))
                x, y = _series(runs, ft, alg, "insert_s")
                draw(ax2, x, [1000 * v for v in y], marker=m, color=c, linestyle=ls,
                     label=f"{alg} FT_pr={ft}%", alpha=1.0 - 0.5 * k / len(ft_prs))
        ax1.set_title("(a) filter time when FT_pr varies", fontsize=10)
        style(ax1, "ms / publication (mean)")
        ax2.set_title("(b) insertion time per step when FT_pr varies", fontsize=10)
        style(ax2, "ms per step")
        save(fig, "fig7_ft_pr.png")
    return written


# --------------------------------------------------------------------- CLI


def _int_list(text: str) -> list[int]:
    try:
        values = sorted({int(v.replace("_", "")) for v in text.split(",") if v.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}")
    if not values:
        raise argparse.ArgumentTypeError("expected at least one value")
    return values


def _db_list(text: str) -> list[int]:
    values = _int_list(text)
    if values[0] <= 0:
        raise argparse.ArgumentTypeError("DB sizes must be positive")
    return values


def _ft_list(text: str) -> list[int]:
    values = _int_list(text)
    if values[0] < 0 or values[-1] > 100:
        raise argparse.ArgumentTypeError("FT_pr values are percentages, 0 to 100")
    return values


def _algorithms(text: str) -> list[str]:
    from rtf.engine import ALGORITHMS
    names = [a.strip() for a in text.split(",") if a.strip()]
    bad = [a for a in names if a not in ALGORITHMS]
    if bad or not names:
        raise argparse.ArgumentTypeError(
            f"unknown algorithm {', '.join(bad) or '(none)'}; choose among {', '.join(ALGORITHMS)}")
    return list(dict.fromkeys(names))


EPILOG = f"""\
what it reports, per algorithm and DB size:
  insert s          time to register the queries added since the previous DB size
                    (in steps of --step; the paper inserts 20K per step)
  filter ms         Engine.match time per publication: mean, p50, p99
  pubs/s, KB/s      throughput (KB of N-Triples, Publication.size_bytes)
  matches/pub       mean (publication, query) matches per publication: the workload's
                    selectivity (the paper mix ~11 % of the queries, --mix selective ~2 %)
  GC %              share of the filter time spent in Python's cyclic garbage collector
  index MB          live bytes the engine holds after registering: its index and its
                    copy of the parsed queries (tracemalloc, in a separate untimed pass
                    in a fresh process); queries MB is that copy of the queries
  matches           (publication, query) matches; compared across algorithms at each DB
                    size on the publications they all saw -- if they differ the bench
                    says so in capitals, names the publication and a query that
                    reproduces it, and exits with status {EXIT_MISMATCH}

the defaults are the paper's configuration at 1/10 scale, on 300 publications
sampled from the DBpedia sample: DB = 2K..10K queries in steps of 2K, FT_pr =
50 %, about 3 minutes on 2 cores. The paper's DB sizes on 100 publications
(docs/benchmarks.md; about 17 minutes, filtering takes 0.5-0.7 s per
publication at DB = 100K):
  rtf bench --db 20000,40000,60000,80000,100000 --pubs 100 --json out.json --plots out/
the paper's whole configuration (I_pub = 5K publications at each of the 5 DB
sizes) would take about 8 hours here; iBroker on the first 1,000 only, ~6 hours:
  {PAPER_COMMAND} --ibroker-pubs 1000
the selective workload (few queries match each publication, so the index decides):
  rtf bench --mix selective --db 20000,40000,60000,80000,100000 --pubs 300 --json sel.json
the three FT_pr of Fig. 7:
  rtf bench --ft-pr 0,50,100 --algorithms rtfs,rtfm --pubs 200 --plots out/
"""


def add_command(sub) -> None:
    p = sub.add_parser(
        "bench", help="the RTF paper's evaluation: filter time, throughput, memory, insertion",
        description="Reproduce the RTF paper's evaluation (section 4, Figs. 5-7) on DBpedia: "
                    "generate a query workload, insert it into each engine in steps, filter "
                    "publications at each query-database size, and compare the engines' speed, "
                    "memory and answers.",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG)
    p.add_argument("--publications", nargs="+", metavar="F",
                   help="RDF files of publications (default: the DBpedia sample, $RTF_DATA_DIR/dbpedia)")
    p.add_argument("--db", type=_db_list, default=",".join(map(str, DEFAULT_DB)), metavar="N,N,...",
                   help="query database sizes (default: %(default)s; the paper: "
                        "20000,40000,60000,80000,100000)")
    p.add_argument("--ft-pr", type=_ft_list, default="50", metavar="P[,P...]",
                   help="percent of literal tuples with a full-text constraint; several values "
                        "run several workloads (default: 50)")
    p.add_argument("--algorithms", type=_algorithms, default=",".join(DEFAULT_ALGORITHMS),
                   metavar="A,A,...", help="engines to compare (default: rtfs,rtfm,ibroker)")
    p.add_argument("--pubs", type=positive_int, default=DEFAULT_PUBS, metavar="N",
                   help=f"publications to filter, a random sample (default: {DEFAULT_PUBS:,}; "
                        f"the paper: 5000)")
    p.add_argument("--ibroker-pubs", type=positive_int, metavar="N",
                   help="filter only the first N of them with ibroker (default: all)")
    p.add_argument("--naive-pubs", type=positive_int, metavar="N",
                   help="filter only the first N of them with naive (default: all)")
    p.add_argument("--step", type=positive_int, metavar="N",
                   help="queries inserted per step (default: the first DB size)")
    p.add_argument("--seed", type=int, default=0, help="seed of the queries and the sample (default 0)")
    p.add_argument("--taxonomy", metavar="ONTO",
                   help="ontology for a/rdfs:subClassOf* (default: none, as in the paper's queries)")
    p.add_argument("--mix", choices=sorted(MIXES), default="paper", dest="mix_name",
                   help="the generated workload: paper (the RTF paper's; about 11 %% of the queries "
                        "match a DBpedia publication) or selective (about 2 %%: a class constraint "
                        "and informative words, as real subscriptions; rtf.workload.Mix.selective) "
                        "(default: paper)")
    p.add_argument("--queries", metavar="Q.jsonl",
                   help="use these queries (the first max DB of them) instead of generating")
    p.add_argument("--json", metavar="OUT.json", help="write the figures as JSON")
    p.add_argument("--plots", metavar="DIR", help="write PNG charts in the manner of Figs. 5-7")
    p.add_argument("--in-process", action="store_true",
                   help="run every algorithm in this process instead of a fresh one each "
                        "(for profiling; less isolated)")
    p.add_argument("--no-memory", action="store_true", help="skip the tracemalloc memory pass")
    p.add_argument("--index-cache", metavar="DIR",
                   help="save each engine built at a DB size in DIR, and load it on the next run with "
                        "the same queries instead of registering them (insert s is then the load)")
    p.set_defaults(func=cmd_bench)


def _default_publications() -> list[str]:
    from rtf.datasets import ENV_VAR, data_dir, dbpedia_files

    files = dbpedia_files()
    if files:
        return [str(f) for f in files]
    bundled = Path(__file__).resolve().parent / "examples" / "news.nt"
    print(f"rtf bench: the DBpedia sample was not found at {data_dir()}/dbpedia (set {ENV_VAR} "
          f"to the folder that holds dbpedia/); benchmarking the tiny bundled example "
          f"{bundled} instead", file=sys.stderr)
    return [str(bundled)]


def params_from_args(args) -> BenchParams:
    return BenchParams(
        publications=args.publications or _default_publications(), db=args.db,
        ft_pr=args.ft_pr, algorithms=args.algorithms, pubs=args.pubs,
        ibroker_pubs=args.ibroker_pubs, naive_pubs=args.naive_pubs, seed=args.seed,
        step=args.step, taxonomy=args.taxonomy, queries=args.queries,
        isolate=not args.in_process, memory=not args.no_memory, mix_name=args.mix_name,
        index_cache=args.index_cache)


def cmd_bench(args) -> int:
    if args.plots:  # fail now, not after minutes of benchmarking
        import importlib.util
        if importlib.util.find_spec("matplotlib") is None:
            raise RtfError("--plots needs matplotlib: pip install 'rtf[bench]' (or matplotlib)")
    params = params_from_args(args)
    doc = run_bench(params, log=lambda s: print(s, file=sys.stderr, flush=True))
    print(format_report(doc))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        from rtf.arguments import atomic_output
        with atomic_output(args.json) as f:
            json.dump(public_json(doc), f, indent=1, default=str)
            f.write("\n")
        print(f"rtf bench: figures written to {args.json}", file=sys.stderr)
    if args.plots:
        for path in write_plots(doc, args.plots):
            print(f"rtf bench: plot written to {path}", file=sys.stderr)
    if doc["mismatches"]:
        pairs = sorted({f"{m['algorithms'][0]} vs {m['algorithms'][1]}" for m in doc["mismatches"]})
        print(f"rtf bench: MATCH MISMATCH ({', '.join(pairs)}) at {len(doc['mismatches'])} "
              f"DB size(s): the engines disagree, see the report; exit status {EXIT_MISMATCH}",
              file=sys.stderr)
        return EXIT_MISMATCH
    return 0
