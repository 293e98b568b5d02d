"""The bench's report: the text table, latency summary, and the JSON document's public part.
"""


from __future__ import annotations

from rtf.bench.inputs import PAPER_FIGURES

_COLUMNS = [("algorithm", "algorithm", "{}"), ("ft_pr", "FT%", "{}"), ("db", "DB", "{:,}"),
            ("publications", "pubs", "{:,}"), ("insert_s", "insert s", "{:.2f}"),
            ("filter_ms_mean", "filter ms", "{:.2f}"), ("filter_ms_p50", "p50", "{:.2f}"),
            ("filter_ms_p99", "p99", "{:.2f}"), ("pubs_per_s", "pubs/s", "{:,.1f}"),
            ("kb_per_s", "KB/s", "{:,.1f}"), ("gc_pct", "GC %", "{:.0f}"),
            ("index_mb", "index MB", "{:.1f}"), ("queries_mb", "queries MB", "{:.1f}"),
            ("matches", "matches", "{:,}"), ("matches_per_pub", "matches/pub", "{:,.1f}")]


#: Samples a percentile should rest on (publications at or beyond it) to be more than a rough figure.
PERCENTILE_SAMPLES = 20


def percentile_notes(runs: list[dict]) -> list[str]:
    """A note for each percentile of the table that rests on fewer than `PERCENTILE_SAMPLES`
    publications: p99 of n publications is decided by the slowest n/100 of them."""
    notes = []
    for name, q in (("p50", 0.50), ("p99", 0.99)):
        counts = sorted({r["publications"] for r in runs})
        few = [n for n in counts if int(n * (1 - q)) < PERCENTILE_SAMPLES]
        if few:
            needed = int(PERCENTILE_SAMPLES / (1 - q))
            notes.append(f"note: {name} rests on the slowest {int(few[0] * (1 - q))} of {few[0]:,} "
                         f"publications (fewer than {PERCENTILE_SAMPLES}): a rough figure; "
                         f"--pubs {needed:,} or more gives it {PERCENTILE_SAMPLES}")
    return notes


def format_table(runs: list[dict]) -> str:
    """The runs as a text table: the first column left-aligned, the figures right-aligned.

    Kept by hand (reviewed for issue 26): tabulate's "simple" format is the same
    table but pads every column by two more spaces (151 characters for these 15
    columns instead of 129 on a typical run), and only a change of its
    module-wide MIN_PADDING would undo that; a new dependency for a dozen lines
    that have not needed a fix is not worth it.
    """
    columns = list(_COLUMNS)
    if any(r.get("repeats") for r in runs):  # the median of repeated runs: their spread beside it
        columns.insert(columns.index(("filter_ms_mean", "filter ms", "{:.2f}")) + 1,
                       ("filter_spread_pct", "±%", "{:.0f}"))
        runs = [dict(r, filter_spread_pct=_spread_pct(r, "filter_ms_mean")) for r in runs]
    cells = [[h for _, h, _ in columns]]
    order = {a: i for i, a in enumerate(dict.fromkeys(r["algorithm"] for r in runs))}
    for r in sorted(runs, key=lambda r: (r["ft_pr"], r["db"], order[r["algorithm"]])):
        cells.append(["-" if r.get(k) is None else f.format(r[k]) for k, _, f in columns])
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    lines = []
    for n, row in enumerate(cells):
        lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                               for i, (c, w) in enumerate(zip(row, widths))))
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _spread_pct(row: dict, name: str) -> float | None:
    """Half the range of a repeated figure, in percent of its median."""
    low_high = row.get("spread", {}).get(name)
    median = row.get(name)
    return 50 * (low_high[1] - low_high[0]) / median if low_high and median else None


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
        for r in group:
            if r.get("v3_candidates_per_pub") is not None:
                candidates, matched = r["v3_candidates_per_pub"], r["v3_matches_per_pub"]
                out.append(f"  version 3, {r['algorithm']}: {candidates:,.1f} candidates confirmed per "
                           f"publication, {matched:,.1f} of them matched"
                           + (f" ({candidates / matched:,.1f} candidates per match)" if matched else "")
                           + f"; confirming took {r['confirm_pct']} % of the filter time")
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
    for ft_pr, v3 in sorted((p.get("version3_queries") or {}).items()):
        workload += (f" (FT_pr={ft_pr}%: {v3['queries']:,} version-3 queries, {v3['unindexed']:,} "
                     f"of them evaluated on every publication)")
    out.append(f"workload: {workload}; publications filtered per algorithm: {seen} "
               f"(of {p['publications_read']:,} read); "
               f"insert s: time to register the queries added since the previous DB size; "
               f"index MB: {p['memory_method']}")
    if p.get("repeat", 1) > 1:
        out.append(f"each figure: the median of {p['repeat']} runs; ±%: half the range of filter ms "
                   "across them, in percent of the median (--json: every figure's min and max)")
        out += [f"!!! the answers changed from one run to the next: {r['algorithm']} FT_pr={r['ft_pr']}% "
                f"DB={r['db']:,} (a nondeterministic engine: a bug)"
                for r in doc["runs"] if r.get("repeat_answers_agree") is False]
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
    out += percentile_notes(doc["runs"])
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
