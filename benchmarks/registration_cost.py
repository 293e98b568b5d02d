"""The cost of registering a query, parsing included, in instructions and CPU seconds.

Issue 22 asks for registration at >= 5,000 queries/s including parsing.
CPU time on a shared machine moves by up to 1.5x between runs a minute
apart, so this script also counts instructions with valgrind's callgrind,
which gives the same count for the same code and input whatever else the
machine is doing. The count per query is the difference between
registering `--large` and `--small` queries of the file, divided by the
difference (Python's start, the imports and Lark's grammar cancel out)::

    rtf gen-queries --publications ../shared/data/dbpedia/*.nt.gz -n 100000 --selective -o sel.jsonl
    python benchmarks/registration_cost.py sel.jsonl              # instructions, then CPU q/s
    python benchmarks/registration_cost.py sel.jsonl --no-valgrind

Run it under two checkouts (``PYTHONPATH=<other checkout>``) for a before/after.
Not a test: a measurement (the numbers are in docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time


def register(queries: str, count: int | None) -> tuple[int, float]:
    """(queries, CPU seconds) of `Engine.register_many` over the first `count` queries (all if None)."""
    import itertools

    from rtf import Engine
    from rtf.io.queries import iter_queries

    records = [(r["query"], r["id"]) for r in itertools.islice(iter_queries(queries), count)]
    engine = Engine("rtfs")
    start = time.process_time()
    if records:
        engine.register_many(records)
    return len(records), time.process_time() - start


def instructions(queries: str, count: int) -> int:
    """Instructions of a whole process registering `count` queries, by callgrind."""
    run = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                          sys.executable, __file__, queries, "--child", str(count)],
                         capture_output=True, text=True, env=os.environ, check=True)
    return int(re.search(r"Collected : (\d+)", run.stderr).group(1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("queries", help="a JSON Lines query file (rtf gen-queries)")
    ap.add_argument("--small", type=int, default=2000)
    ap.add_argument("--large", type=int, default=6000)
    ap.add_argument("--no-valgrind", action="store_true", help="only the CPU figure")
    ap.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        register(args.queries, args.child)
        return
    if not args.no_valgrind and shutil.which("valgrind"):
        small, large = instructions(args.queries, args.small), instructions(args.queries, args.large)
        print(f"{(large - small) // (args.large - args.small):,} instructions a query "
              f"(callgrind, queries {args.small:,} to {args.large:,})")
    count, seconds = register(args.queries, None)
    import rtf
    print(f"{count:,} queries: {seconds:.1f} s CPU, {count / seconds:,.0f} queries/s; "
          f"code {os.path.dirname(rtf.__file__)}")


if __name__ == "__main__":
    main()
