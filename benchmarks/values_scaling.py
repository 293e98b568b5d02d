"""How the cost of a publication grows with the stored value queries (issue 24).

Generates the values workload (``rtf gen-queries --mix values``: typed
publications, queries whose selectivity lies in FILTER comparisons) at
several sizes, each size's first FILTER letting through a share of the
values that shrinks as the size grows (``--scale-pass``: a size n keeps
about the matches per publication of the smallest size, as real
subscriptions do), and runs ``rtf match --stats`` of each given rtf
command on the files. Without the value index, the time per publication
follows the queries whose *structure* holds; with it, the matches::

    python benchmarks/values_scaling.py --sizes 1000,10000,100000 --out /tmp/vs
    python benchmarks/values_scaling.py --sizes 10000 --out /tmp/vs \\
        --rtf .venv/bin/rtf --rtf ../other-checkout/.venv/bin/rtf --publications 200

One JSON line per (command, size) on stdout: the size, the pass share,
matches per publication, ms per publication (filter_s), microseconds per
match, registration queries/s, index RSS and the machine load. The outputs
of the commands are compared byte for byte (a difference fails the run).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rtf.bench.values_workload import FILTER_PASS, values_publications, values_queries  # noqa: E402


def workload(folder: Path, n: int, publications: int, scale_pass: bool, smallest: int) -> tuple[Path, Path, float]:
    share = FILTER_PASS * min(1.0, smallest / n) if scale_pass else FILTER_PASS
    queries = folder / f"values-{n}-{share:.4g}.jsonl"
    pubs = folder / f"values-pubs-{publications}.nt"
    if not queries.exists():
        with open(queries, "w", encoding="utf-8") as out:
            for record in values_queries(n, seed=0, pass_share=share):
                out.write(json.dumps(record) + "\n")
    if not pubs.exists():
        with open(pubs, "w", encoding="utf-8") as out:
            for pub in values_publications(publications, seed=0):  # as rtf gen-queries writes them
                out.writelines(f"{s} {p} {o} .\n" for s, p, o in pub.triples)
    return queries, pubs, share


def run(rtf: str, queries: Path, pubs: Path) -> tuple[dict, str]:
    done = subprocess.run([rtf, "match", "--algorithm", "rtfs", "--queries", str(queries), "--stats", "--publications", str(pubs)],
                          capture_output=True, text=True, check=True)
    stats = json.loads(done.stderr.strip().splitlines()[-1])
    return stats, hashlib.sha256(done.stdout.encode()).hexdigest()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="1000,10000,100000", help="query counts, comma-separated")
    p.add_argument("--publications", type=int, default=500, help="publications per run (default 500)")
    p.add_argument("--out", type=Path, required=True, help="folder for the generated files")
    p.add_argument("--rtf", action="append", help="an rtf command to measure (repeatable; default: this checkout's)")
    p.add_argument("--no-scale-pass", dest="scale_pass", action="store_false",
                   help="the same pass share at every size (the matches grow with the size)")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    sizes = [int(s) for s in args.sizes.split(",")]
    commands = args.rtf or [str(Path(sys.executable).with_name("rtf"))]
    for n in sizes:
        queries, pubs, share = workload(args.out, n, args.publications, args.scale_pass, min(sizes))
        digests = set()
        for rtf in commands:
            stats, digest = run(rtf, queries, pubs)
            digests.add(digest)
            per_pub = stats["matches"] / stats["publications"]
            print(json.dumps({
                "rtf": rtf, "queries": n, "pass_share": round(share, 5), "publications": stats["publications"],
                "matches_per_publication": round(per_pub, 1),
                "ms_per_publication": stats["filter_ms_per_publication"],
                "us_per_match": round(1000 * stats["filter_ms_per_publication"] / per_pub, 2) if per_pub else None,
                "register_queries_per_s": stats["register_queries_per_s"], "index_rss_mb": stats["index_rss_mb"],
                "load": round(os.getloadavg()[0], 2)}), flush=True)
        if len(digests) > 1:
            print(f"values_scaling: the outputs differ at {n} queries", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
