"""The shape matrix (issue 43): each query shape family at 10K and 100K queries, side by side.

Every family of `rtf.bench.shapes` (the paper's mix at FT_pr 0, 50 and 100 %
as three rows) is built over the DBpedia sample and measured in a fresh
process of its own, so that no family pays for another's garbage::

    python benchmarks/shape_matrix.py                   # 10K and 100K, ~20 min on 2 cores
    python benchmarks/shape_matrix.py --sizes 2K,10K --pubs 20 --families value-star,chain
    python benchmarks/shape_matrix.py --json matrix.json --algorithm rtfm

For each family and size it reports:

- pubs/s: publications per second of *CPU time* of ``Engine.match`` (the
  machine is shared: CPU time does not count the time other processes
  took), over a sample of ``--pubs`` publications of the family's stream
  (`rtf.bench.shapes.shape_stream`), the same sample at every size,
  matched ``--rounds`` times (each round after the text cache is emptied,
  as ``rtf bench``), the best round's; and per second of wall time
  (``wall pubs/s``: below the CPU rate when the machine was busy);
- 1st ms/pub: CPU milliseconds per publication of the first round, which
  also pays what a branch makes on its first complete publication (its
  residual plan, its answer code: `rtf.matching.join_groups`);
- ms/pub: CPU milliseconds per publication (what a family with few matches
  a publication should be read by: its fixed cost divides by few matches);
- us/match: that CPU time per (publication, query) match, and the ratio to
  the best family's at the same size (``x best``: the issue's target is no
  family above 3x at 100K);
- matches/pub and solutions/match: what the family asks of the engine;
- reg q/s: queries registered per CPU second, parsing included
  (``Engine.register_many`` over the query texts, as ``rtf match`` does), the
  queries added up to that size in one step after the previous size's;
- index MB: the growth of the process's resident memory while registering
  (``rtf match --stats``' ``index_rss_mb``).

The queries are generated before the timing (deterministic for ``--seed``)
and the first ones of the largest size are the smaller sizes' queries.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rtf.bench.shapes import FAMILIES, shape_queries, shape_stream  # noqa: E402

#: The paper mix's rows: its FT_pr, in percent.
PAPER_FT = (0, 50, 100)


def rows_to_run(families: list[str]) -> list[tuple[str, int]]:
    """(family, FT_pr %) of each row: paper-dbpedia once per FT_pr of `PAPER_FT`, the others at 50."""
    return [(f, ft) for f in families for ft in (PAPER_FT if f == "paper-dbpedia" else (50,))]


def row_name(family: str, ft_pr: int) -> str:
    return f"{family} FT{ft_pr}" if family == "paper-dbpedia" else family


def measure(sources, family: str, ft_pr: int, sizes: list[int], pubs: int, seed: int,
            algorithm: str, rounds: int = 1) -> list[dict]:
    """One family at each size, in this process: see the module docstring."""
    from rtf.bench.inputs import sample_publications
    from rtf.bench.memory import current_rss_mb
    from rtf.engine import Engine, freeze_long_lived
    from rtf.query.text import text_index

    records = shape_queries(sources, family, sizes[-1], seed=seed, ft_pr=ft_pr / 100)
    sample = sample_publications(shape_stream(sources, family), pubs, seed)
    engine = Engine(algorithm)
    rows, registered, register_cpu, grown = [], 0, 0.0, 0.0
    for size in sizes:
        batch = [(r["query"], r["id"], r["subscriber"]) for r in records[registered:size]]
        gc.unfreeze()
        rss = current_rss_mb()
        cpu = time.process_time()
        engine.register_many(batch)
        register_cpu += time.process_time() - cpu
        grown += current_rss_mb() - rss
        registered = size
        del batch
        freeze_long_lived()
        rounds_cpu = []
        for _ in range(rounds):
            text_index.cache_clear()
            match_cpu, match_wall, matches, solutions = 0.0, 0.0, 0, 0
            for pub in sample:
                wall, cpu = time.perf_counter(), time.process_time()
                found = engine.match(pub)
                match_cpu += time.process_time() - cpu
                match_wall += time.perf_counter() - wall
                matches += len(found)
                solutions += sum(len(s) if s else 1 for s in found.solutions)
            rounds_cpu.append((match_cpu, match_wall))
        first_cpu = rounds_cpu[0][0]
        match_cpu, match_wall = min(rounds_cpu)
        rows.append({
            "family": row_name(family, ft_pr), "queries": size, "publications": len(sample),
            "pubs_per_s": len(sample) / match_cpu if match_cpu else None,
            "wall_pubs_per_s": len(sample) / match_wall if match_wall else None,
            "us_per_match": 1e6 * match_cpu / matches if matches else None,
            "ms_per_pub": 1000 * match_cpu / len(sample),
            "first_ms_per_pub": 1000 * first_cpu / len(sample), "rounds": rounds,
            "matches_per_pub": matches / len(sample),
            "solutions_per_match": solutions / matches if matches else None,
            "register_q_per_s": size / register_cpu if register_cpu else None,
            "index_mb": round(grown, 1)})
    gc.unfreeze()
    return rows


def _sizes(text: str) -> list[int]:
    scale = {"k": 1_000, "m": 1_000_000}
    out = []
    for part in text.split(","):
        part = part.strip().lower()
        out.append(int(part[:-1]) * scale[part[-1]] if part[-1:] in scale else int(part))
    return sorted(set(out))


def format_matrix(rows: list[dict]) -> str:
    """The matrix as a Markdown table, one block of rows per size, with each row's time per
    match against the best family's at that size."""
    head = ("| family | queries | pubs/s | wall pubs/s | ms/pub | 1st ms/pub | us/match | x best | matches/pub "
            "| solutions/match | reg q/s | index MB |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    lines = [head]
    for size in sorted({r["queries"] for r in rows}):
        block = [r for r in rows if r["queries"] == size]
        best = min((r["us_per_match"] for r in block if r["us_per_match"]), default=None)
        for r in block:
            ratio = r["us_per_match"] / best if best and r["us_per_match"] else None
            lines.append(
                f"| {r['family']} | {size:,} | {_num(r['pubs_per_s'], 1)} | {_num(r['wall_pubs_per_s'], 1)} "
                f"| {_num(r['ms_per_pub'], 1)} | {_num(r.get('first_ms_per_pub'), 1)} | {_num(r['us_per_match'], 2)} "
                f"| {_num(ratio, 1)} | {_num(r['matches_per_pub'], 1)} | {_num(r['solutions_per_match'], 2)} "
                f"| {_num(r['register_q_per_s'], 0)} | {r['index_mb']:.0f} |")
    return "\n".join(lines)


def _num(x, digits: int) -> str:
    return "-" if x is None else f"{x:,.{digits}f}"


def main(argv: list[str] | None = None) -> int:
    from rtf.bench.machine import machine_info
    from rtf.bench.shape_sources import ShapeSources
    from rtf.bench.timing import run_isolated
    from rtf.io import datasets
    from rtf.io.reader import read_publications

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", type=_sizes, default=[10_000, 100_000], help="query counts (default 10K,100K)")
    p.add_argument("--pubs", type=int, default=40, help="publications matched per family (default 40)")
    p.add_argument("--families", default=",".join(FAMILIES),
                   help=f"comma-separated, among {', '.join(FAMILIES)} (default: all)")
    p.add_argument("--algorithm", default="rtfs")
    p.add_argument("--rounds", type=int, default=3,
                   help="times the sample is matched; the rates are the best round's (default 3)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--publications", nargs="+", help="RDF files (default: the DBpedia sample)")
    p.add_argument("--json", help="also write the rows and the machine record here")
    p.add_argument("--in-process", action="store_true", help="no fresh process per family (profiling)")
    args = p.parse_args(argv)
    families = [f.strip() for f in args.families.split(",") if f.strip()]
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        p.error(f"unknown families {', '.join(unknown)}; choose among {', '.join(FAMILIES)}")
    files = args.publications or [str(f) for f in datasets.dbpedia_files()]
    if not files:
        p.error(datasets.missing_message())
    sources = ShapeSources(read_publications(files))
    rows = []
    t0 = time.perf_counter()
    for family, ft_pr in rows_to_run(families):
        t = time.perf_counter()
        got = run_isolated(not args.in_process, measure, sources, family, ft_pr, args.sizes,
                           args.pubs, args.seed, args.algorithm, args.rounds)
        rows.extend(got)
        print(f"shape_matrix: {row_name(family, ft_pr)} done in {time.perf_counter() - t:.0f} s",
              file=sys.stderr, flush=True)
    rows.sort(key=lambda r: r["queries"])
    print(format_matrix(rows))
    print(f"\n{args.algorithm}, {args.pubs} publications per family, seed {args.seed}; "
          f"{time.perf_counter() - t0:.0f} s in all", file=sys.stderr)
    if args.json:
        doc = {"params": {"sizes": args.sizes, "pubs": args.pubs, "algorithm": args.algorithm,
                          "rounds": args.rounds,
                          "seed": args.seed, "families": families},
               "machine": machine_info(), "rows": rows}
        Path(args.json).write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
