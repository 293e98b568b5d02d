"""``run_bench``: every engine in its own process on one workload, side by side, answers compared.
"""


from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict

from rtf.bench.checking import compare_answers, diagnose
from rtf.bench.inputs import (
    BenchParams,
    bench_mix,
    is_shape,
    load_publications,
    make_workload,
    sample_publications,
)
from rtf.bench.machine import machine_info
from rtf.bench.memory import MEMORY_METHOD, memory_profile
from rtf.bench.timing import run_isolated, time_algorithm
from rtf.errors import RtfError


def run_bench(params: BenchParams, log: Callable[[str], None] = lambda s: None, repeat: int = 1) -> dict:
    """Run the whole evaluation; the JSON document (runs keep private ``_`` keys).

    With `repeat` > 1 every algorithm is timed `repeat` times (each time in a fresh
    process, on the same queries and publications), and each cell holds the median of
    its figures with their spread (`repeated_rows`)."""
    from rtf.bench.workload import Vocabulary
    from rtf.engine import ALGORITHMS
    from rtf.io.taxonomy import Taxonomy

    for alg in params.algorithms:
        if alg not in ALGORITHMS:
            raise RtfError(f"unknown algorithm {alg!r}; choose among {', '.join(ALGORITHMS)}")
    if params.queries and len(params.ft_pr) > 1:
        raise RtfError("--queries gives one workload: pass a single --ft-pr (its label)")
    t0 = time.perf_counter()
    taxonomy = Taxonomy.from_file(params.taxonomy) if params.taxonomy else None
    if params.mix_name == "values":  # typed publications made with the queries (rtf.bench.values_workload)
        from rtf.bench.values_workload import values_publications
        all_pubs = values_publications(max(params.pubs, 1000), params.seed)
    else:
        all_pubs = load_publications(params.publications)
    if not all_pubs:
        raise RtfError("no publications in " + ", ".join(params.publications))
    if is_shape(params.mix_name):  # a shape family: its queries, the publications of its kind
        from rtf.bench.shape_sources import ShapeSources
        from rtf.bench.shapes import shape_stream
        vocab = ShapeSources(all_pubs)
        pubs = sample_publications(shape_stream(vocab, params.mix_name), params.pubs, params.seed)
    else:
        pubs = sample_publications(all_pubs, params.pubs, params.seed)
        vocab = None if params.queries or params.mix_name == "values" else Vocabulary(all_pubs, taxonomy)
    step = params.step_size()
    log(f"rtf bench: {len(all_pubs):,} publications read, {len(pubs):,} filtered; "
        f"DB {', '.join(f'{d:,}' for d in params.db)} in steps of {step:,}; "
        f"FT_pr {', '.join(f'{f}%' for f in params.ft_pr)}; {', '.join(params.algorithms)}")

    rows, memory, workloads, rejected, version3 = [], {}, {}, {}, {}
    for ft_pr in params.ft_pr:
        t = time.perf_counter()
        wl = make_workload(params, vocab, taxonomy, ft_pr)
        workloads[ft_pr] = wl
        rejected[ft_pr] = wl.rejected
        v3 = wl.version3
        if v3:
            version3[ft_pr] = {"queries": v3, "unindexed": wl.unindexed}
        log(f"  FT_pr={ft_pr}%: {len(wl.ids):,} queries generated and parsed in "
            f"{time.perf_counter() - t:.1f} s" + (f" ({v3:,} of them version 3, {wl.unindexed:,} "
                                                 f"evaluated on every publication)" if v3 else ""))
        for alg in params.algorithms:
            seen = pubs[:params.pubs_for(alg)]
            t = time.perf_counter()
            alg_rows = repeated_rows([run_isolated(params.isolate, time_algorithm, alg, wl, seen, params.db,
                                                   step, taxonomy, params.index_cache)
                                      for _ in range(repeat)])
            if params.memory:
                mem = run_isolated(params.isolate, memory_profile, alg, wl, params.db, step,
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
                      version3_queries=version3 or None,
                      mix=None if params.queries else params.mix_name
                      if params.mix_name == "values" or is_shape(params.mix_name) else {
                          k: v for k, v in asdict(bench_mix(0, params.mix_name, params.v3_share)).items()
                          if k != "ft_pr"},
                      repeat=repeat, seconds=round(time.perf_counter() - t0, 1))
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


#: The figures of a run that vary from one run to the next: a repeated cell shows their median.
TIMED_FIGURES = ("insert_s", "insert_ms_per_query", "filter_ms_mean", "filter_ms_p50", "filter_ms_p99",
                 "pubs_per_s", "kb_per_s", "gc_pct", "confirm_pct", "peak_rss_mb")


def repeated_rows(runs: list[list[dict]]) -> list[dict]:
    """One row per DB size from the rows of `runs` (the same algorithm timed again): the first
    run's row, each of its `TIMED_FIGURES` the median of the runs', with ``repeats`` and
    ``spread`` ({figure: [min, max]}). The answers must not change from run to run: if they do,
    ``repeat_answers_agree`` is False (and the first run's answers are compared across engines).
    """
    if len(runs) == 1:
        return runs[0]
    out = []
    for cells in zip(*runs):
        row = dict(cells[0])
        row["repeats"] = len(cells)
        row["spread"] = {}
        for name in TIMED_FIGURES:
            values = [c[name] for c in cells if c.get(name) is not None]
            if values:
                row[name] = statistics.median(values)
                row["spread"][name] = [min(values), max(values)]
        row["repeat_answers_agree"] = len({c["digest"] for c in cells}) == 1
        out.append(row)
    return out
