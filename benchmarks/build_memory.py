"""Peak memory and CPU of building an index file: a chunk at a time, or one whole engine.

Issue 22, target 2: `rtf index build` of one million queries at a peak RSS
of at most 1.5 GB. `rtf index build` registers 20,000 queries at a time
(`rtf.io.builder.IndexBuilder`) and writes them out before the next chunk;
before, it registered every query in one engine and then saved it (the
engine and the save's tables together: 2.34 GB at 1M). Each way runs in a
child process of its own, so that each peak is its own; the two files'
bodies are compared (they must be equal, line for line)::

    rtf gen-queries --publications ../shared/data/dbpedia/*.nt.gz -n 1000000 --selective -o sel1m.jsonl
    python benchmarks/build_memory.py sel1m.jsonl                 # both ways
    python benchmarks/build_memory.py sel1m.jsonl --ways chunked  # the chunked one only

Not a test: a measurement (the numbers are in docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import tempfile
import time
from pathlib import Path


def build(way: str, queries: str, output: str, algorithm: str, result) -> None:
    from rtf.engine import Engine
    from rtf.io.builder import IndexBuilder
    from rtf.io.queries import iter_queries, register_all

    start = time.process_time()
    target = IndexBuilder(Engine(algorithm)) if way == "chunked" else Engine(algorithm)
    register_all(target, iter_queries(queries), queries)
    size = target.save(output)
    result.put({"way": way, "queries": len(target), "bytes": size,
                "cpu_s": round(time.process_time() - start, 1),
                "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)})


def body(path: str) -> bytes:
    from rtf.io import store
    return b"\n".join(store.body_lines(Path(path).read_bytes(), path))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("queries", help="a JSON Lines query file (rtf gen-queries)")
    parser.add_argument("--algorithm", default="rtfs")
    parser.add_argument("--ways", nargs="+", choices=["chunked", "whole"], default=["chunked", "whole"])
    args = parser.parse_args()
    context = multiprocessing.get_context("spawn")  # a fresh process each: its own peak
    with tempfile.TemporaryDirectory() as folder:
        outputs = []
        for way in args.ways:
            output = str(Path(folder) / f"{way}.idx")
            result = context.Queue()
            child = context.Process(target=build, args=(way, args.queries, output, args.algorithm, result))
            child.start()
            print(json.dumps(result.get()), flush=True)
            child.join()
            outputs.append(output)
        if len(outputs) == 2:
            print(json.dumps({"same_body": body(outputs[0]) == body(outputs[1])}))


if __name__ == "__main__":
    main()
