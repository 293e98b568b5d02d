"""A long run: resident memory while one engine matches many distinct publications.

Issue 22, target 4: matching 100,000 distinct publications with 10 queries
grows RSS by at most 50 MB after warm-up. The DBpedia sample has ~10,000
publications; each pass over it renames the subjects and appends a word
to every literal (``... r3``), so that no publication, term or text
repeats across passes, as in a real stream. Prints the RSS at the warm-up
mark and every `--every` publications, and the growth::

    python benchmarks/memory_long_run.py                       # 100,000 publications, rtfs
    python benchmarks/memory_long_run.py --algorithm naive --publications 20000

Not a test: a measurement (the numbers are in docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import gc
import json
import time

import psutil

from rtf import Engine, Publication
from rtf.bench.workload import Mix, generate_queries
from rtf.io import datasets
from rtf.io.reader import read_publications


def rss_mb() -> float:
    return psutil.Process().memory_info().rss / 2**20


def distinct_stream(pubs: list[Publication], n: int):
    """`n` publications: the sample again and again, each pass with new subjects and texts."""
    for i in range(n):
        r, k = divmod(i, len(pubs))
        pub = pubs[k]
        if r == 0:
            yield pub
            continue
        suffix = f" r{r}"
        triples = []
        for s, p, o in pub.triples:
            s = s[:-1] + f"-r{r}>" if s[0] == "<" else s
            if o[0] == '"':
                end = o.rindex('"')
                o = o[:end] + suffix + o[end:]
            triples.append((s, p, o))
        yield Publication(pub.id + f"-r{r}", triples)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--algorithm", default="rtfs")
    ap.add_argument("--publications", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=10)
    ap.add_argument("--warm-up", type=int, default=10_000, help="publications before the baseline")
    ap.add_argument("--every", type=int, default=10_000)
    args = ap.parse_args()
    pubs = list(read_publications([str(f) for f in datasets.dbpedia_files()]))
    engine = Engine(args.algorithm)
    for q in generate_queries(pubs, args.queries, seed=0, mix=Mix.paper(0.5)):
        engine.register(q["query"], q["id"], q["subscriber"])
    gc.collect()
    gc.freeze()
    rows, matches, baseline = [], 0, None
    t0 = time.process_time()
    for i, pub in enumerate(distinct_stream(pubs, args.publications), 1):
        matches += len(engine.match(pub))
        if i == args.warm_up:
            baseline = rss_mb()
        if i % args.every == 0 or i == args.publications:
            rows.append({"publications": i, "rss_mb": round(rss_mb(), 1),
                         "cpu_s": round(time.process_time() - t0, 1)})
            print(json.dumps(rows[-1]), flush=True)
    end = rss_mb()
    print(json.dumps({"algorithm": args.algorithm, "queries": len(engine), "matches": matches,
                      "warm_up_rss_mb": round(baseline or 0, 1), "end_rss_mb": round(end, 1),
                      "growth_after_warm_up_mb": round(end - (baseline or end), 1)}))


if __name__ == "__main__":
    main()
