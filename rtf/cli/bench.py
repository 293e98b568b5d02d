"""``rtf bench``: the command line of the RTF paper's evaluation (`rtf.bench`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rtf.bench.inputs import (
    DEFAULT_ALGORITHMS,
    DEFAULT_DB,
    DEFAULT_PUBS,
    EXIT_MISMATCH,
    PAPER_COMMAND,
    BenchParams,
)
from rtf.bench.shapes import FAMILIES as SHAPES
from rtf.bench.workload import MIXES
from rtf.cli import summary
from rtf.cli.arguments import between, positive_int
from rtf.cli.logs import log
from rtf.errors import RtfError


def _int_list(text: str) -> list[int]:
    try:
        values = sorted({int(v.replace("_", "")) for v in text.split(",") if v.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}")
    if not values:
        raise argparse.ArgumentTypeError("expected at least one value")
    return values


_SCALE = {"k": 1_000, "m": 1_000_000}


def _db_list(text: str) -> list[int]:
    """DB sizes: integers, or with a K or M suffix (``10K,100K,1M``)."""
    parts = []
    for v in text.split(","):
        v = v.strip()
        scale = _SCALE.get(v[-1:].lower())
        if scale and v[:-1].replace("_", "").isdigit():
            v = str(int(v[:-1].replace("_", "")) * scale)
        parts.append(v)
    values = _int_list(",".join(parts))
    if values[0] <= 0:
        raise argparse.ArgumentTypeError("DB sizes must be positive")
    return values


def _ft_list(text: str) -> list[int]:
    values = _int_list(text)
    if values[0] < 0 or values[-1] > 100:
        raise argparse.ArgumentTypeError("FT_pr values are percentages, 0 to 100")
    return values


_probability = between(0, 1, "a share")


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
SPARQL 1.1 subscriptions (20 % version 3) and the same base queries all version 2:
  rtf bench --mix sparql11 --db 10K,100K --pubs 300 --algorithms rtfs --no-memory
  rtf bench --mix sparql11 --v3-share 0 --db 10K,100K --pubs 300 --algorithms rtfs --no-memory
one shape family (the shape matrix, benchmarks/shape_matrix.py, runs them all):
  rtf bench --mix value-star --db 10K,100K --pubs 40 --algorithms rtfs --no-memory
the three FT_pr of Fig. 7:
  rtf bench --ft-pr 0,50,100 --algorithms rtfs,rtfm --pubs 200 --plots out/
"""


def add_command(sub) -> None:
    p = sub.add_parser(
        "bench", help=summary("bench"),
        description="Reproduce the RTF paper's evaluation (section 4, Figs. 5-7) on DBpedia: "
                    "generate a query workload, insert it into each engine in steps, filter "
                    "publications at each query-database size, and compare the engines' speed, "
                    "memory and answers.",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG)
    p.add_argument("--publications", nargs="+", metavar="F",
                   help="RDF files of publications (default: the DBpedia sample, $RTF_DATA_DIR/dbpedia)")
    p.add_argument("--db", type=_db_list, default=",".join(map(str, DEFAULT_DB)), metavar="N,N,...",
                   help="query database sizes, K and M suffixes allowed (default: %(default)s; the "
                        "paper: 20000,40000,60000,80000,100000; the growth curve to a million: "
                        "10K,100K,1M with --no-memory)")
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
    p.add_argument("--mix", choices=sorted([*MIXES, "values", *SHAPES]), default="paper", dest="mix_name",
                   help="the generated workload: paper (the RTF paper's; about 11 %% of the queries "
                        "match a DBpedia publication), selective (about 2 %%: a class constraint "
                        "and informative words, as real subscriptions; rtf.bench.workload.Mix.selective) "
                        "fulltext (full-text-only queries, about 1.4 %% of them match an abstract), "
                        "values (typed publications it generates, queries whose selectivity lies "
                        "in FILTER comparisons: about 3.5 %% match; --publications is then unused) "
                        "or sparql11 (the selective queries, --v3-share of them rewritten into SPARQL "
                        "1.1 queries around the same star: aggregates, paths, MINUS, EXISTS, BIND, "
                        "VALUES, sub-queries, CONSTRUCT...; rtf.bench.sparql11_workload) "
                        "or a shape family (value-star, chain, multi-valued, ...: the shapes users write, "
                        "each filtering the publications of its kind; rtf.bench.shapes and the shape "
                        "matrix of docs/benchmarks.md) (default: paper)")
    p.add_argument("--v3-share", type=_probability, metavar="P",
                   help="the share of generated queries made SPARQL 1.1 (version 3) queries, 0 to 1 "
                        "(default: the mix's; sparql11: 0.2); 0 gives the same base queries, all "
                        "version 2, to compare with")
    p.add_argument("--queries", metavar="Q.jsonl",
                   help="use these queries (the first max DB of them) instead of generating")
    p.add_argument("--json", metavar="OUT.json", help="write the figures as JSON")
    p.add_argument("--plots", metavar="DIR", help="write PNG charts in the manner of Figs. 5-7")
    p.add_argument("--repeat", type=positive_int, default=1, metavar="N",
                   help="run every algorithm N times on the same workload and publications: each "
                        "figure is then the median of the N runs, with its spread (min and max) "
                        "in --json and the spread of filter ms in the table (default 1)")
    p.add_argument("--in-process", action="store_true",
                   help="run every algorithm in this process instead of a fresh one each "
                        "(for profiling; less isolated)")
    p.add_argument("--no-memory", action="store_true", help="skip the tracemalloc memory pass")
    p.add_argument("--index-cache", metavar="DIR",
                   help="save each engine built at a DB size in DIR, and load it on the next run with "
                        "the same queries instead of registering them (insert s is then the load)")
    p.set_defaults(func=cmd_bench)


def _default_publications() -> list[str]:
    from rtf.io.datasets import ENV_VAR, data_dir, dbpedia_files, examples_dir

    files = dbpedia_files()
    if files:
        return [str(f) for f in files]
    bundled = examples_dir() / "news.nt"
    log.warning(f"rtf bench: the DBpedia sample was not found at {data_dir()}/dbpedia (set {ENV_VAR} "
                f"to the folder that holds dbpedia/); benchmarking the tiny bundled example "
                f"{bundled} instead")
    return [str(bundled)]


def params_from_args(args) -> BenchParams:
    return BenchParams(
        publications=args.publications or _default_publications(), db=args.db,
        ft_pr=args.ft_pr, algorithms=args.algorithms, pubs=args.pubs,
        ibroker_pubs=args.ibroker_pubs, naive_pubs=args.naive_pubs, seed=args.seed,
        step=args.step, taxonomy=args.taxonomy, queries=args.queries,
        isolate=not args.in_process, memory=not args.no_memory, mix_name=args.mix_name,
        v3_share=args.v3_share, index_cache=args.index_cache)


def cmd_bench(args) -> int:
    from rtf.bench.plots import write_plots
    from rtf.bench.report import format_report, percentile_notes
    from rtf.bench.run import public_json, run_bench
    from rtf.io.files import atomic_output

    if args.plots:  # fail now, not after minutes of benchmarking
        import importlib.util
        if importlib.util.find_spec("matplotlib") is None:
            raise RtfError("--plots needs matplotlib: pip install 'rtf[bench]' (or matplotlib)")
    params = params_from_args(args)
    doc = run_bench(params, log=log.info, repeat=args.repeat)
    print(format_report(doc))
    for note in percentile_notes(doc["runs"]):
        log.warning(f"rtf bench: {note.removeprefix('note: ')}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        with atomic_output(args.json) as f:
            json.dump(public_json(doc), f, indent=1, default=str)
            f.write("\n")
        log.info(f"rtf bench: figures written to {args.json}")
    if args.plots:
        for path in write_plots(doc, args.plots):
            log.info(f"rtf bench: plot written to {path}")
    if doc["mismatches"]:
        pairs = sorted({f"{m['algorithms'][0]} vs {m['algorithms'][1]}" for m in doc["mismatches"]})
        log.error(f"rtf bench: MATCH MISMATCH ({', '.join(pairs)}) at {len(doc['mismatches'])} "
                  f"DB size(s): the engines disagree, see the report; exit status {EXIT_MISMATCH}")
        return EXIT_MISMATCH
    return 0
