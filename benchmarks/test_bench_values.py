"""pytest-benchmark cases: filtering the values workload (issue 24, seeds 004 and 002).

``rtf gen-queries --mix values``: typed publications of ten classes and
queries whose selectivity lies in FILTER comparisons (ranges, IN, year(),
lang(), regex on labels). The indexed engines test value predicates in
value indexes and share expensive predicates; ibroker and naive check each
query's filters as written. Every engine's matches must be equal. Sizes:
RTF_BENCH_VALUES_QUERIES (default 10,000) and RTF_BENCH_VALUES_PUBLICATIONS
(default 200)::

    pytest benchmarks/test_bench_values.py --benchmark-enable
    RTF_BENCH_VALUES_QUERIES=100000 pytest benchmarks/test_bench_values.py --benchmark-enable -k rtf

``benchmarks/values_scaling.py`` gives the growth curve and compares two
checkouts.
"""

from __future__ import annotations

import os
import time

import pytest

from rtf.bench.values_workload import values_publications, values_queries
from rtf.engine import Engine, freeze_long_lived

N_QUERIES = int(os.environ.get("RTF_BENCH_VALUES_QUERIES", "10000"))
N_PUBLICATIONS = int(os.environ.get("RTF_BENCH_VALUES_PUBLICATIONS", "200"))
ALGORITHMS = ("rtfs", "rtfm", "ibroker")


@pytest.fixture(scope="module")
def workload():
    return values_queries(N_QUERIES, seed=0), values_publications(N_PUBLICATIONS, seed=0)


@pytest.fixture(scope="module")
def engines():
    return {}


@pytest.mark.benchmark(group="filter-values")
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_filter_values(benchmark, workload, engines, algorithm):
    records, publications = workload
    if algorithm not in engines:
        engine = engines[algorithm] = Engine(algorithm)
        for r in records:
            engine.register(r["query"], r["id"], r.get("subscriber"))
        freeze_long_lived()
    engine = engines[algorithm]
    pubs = publications[:20] if algorithm == "ibroker" else publications  # ibroker joins every structure

    def run() -> list:
        return [sorted(m.query_id for m in engine.match(p)) for p in pubs]

    t = time.process_time()
    found = benchmark.pedantic(run, rounds=3, iterations=1, warmup_rounds=0)
    benchmark.extra_info.update(queries=len(records), publications=len(pubs),
                                matches_per_pub=sum(map(len, found)) / len(pubs),
                                cpu_s_3_rounds=time.process_time() - t)
    expected = engines.setdefault(("found", len(pubs)), found)
    assert found == expected, f"{algorithm} disagrees with another engine"
    if ("checked", len(pubs)) not in engines:  # the reference, once per publication count
        naive = Engine("naive")
        for r in records:
            naive.register(r["query"], r["id"], r.get("subscriber"))
        assert found[:20] == [sorted(m.query_id for m in naive.match(p)) for p in pubs[:20]]
        engines[("checked", len(pubs))] = True
