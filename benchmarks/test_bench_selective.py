"""pytest-benchmark cases: filtering under the selective workload (issue 10).

``rtf bench --mix selective``'s queries (`rtf.bench.workload.Mix.selective`:
about 2 % of the queries match a DBpedia publication, so the index, not
the per-match work, decides the time) loaded once into rtfs, rtfm and
ibroker; each round filters the same publications through each. Sizes
come from RTF_BENCH_SELECTIVE_QUERIES (default 20,000) and
RTF_BENCH_SELECTIVE_PUBLICATIONS (default 300); see conftest.py::

    pytest benchmarks/test_bench_selective.py --benchmark-enable
    RTF_BENCH_SELECTIVE_QUERIES=100000 pytest benchmarks/test_bench_selective.py --benchmark-enable

``extra_info`` records the sizes, the matches, the matches per
publication, publications/s and the per-publication latency p50 / p99 of
the last round; the matches must be equal across the engines.
"""

from __future__ import annotations

import time

import pytest

from rtf.bench.timing import percentile
from rtf.engine import Engine, freeze_long_lived

SELECTIVE_ALGORITHMS = ("rtfs", "rtfm", "ibroker")


@pytest.fixture(scope="module")
def selective_engines():
    """Engines loaded with the selective workload, built once each, and the first match count."""
    return {}


def loaded(cache, algorithm, workload):
    if algorithm not in cache:
        engine = Engine(algorithm)
        for qid, query, sub in zip(workload.ids, workload.queries, workload.subscribers):
            engine.register(query, qid, sub)
        freeze_long_lived()  # as rtf bench and a long-running matcher do after loading
        cache[algorithm] = engine
    return cache[algorithm]


def filter_timed(engine, publications, times: list) -> int:
    """Match every publication, each timed into `times` (replaced); the number of matches."""
    times.clear()
    matches = 0
    for pub in publications:
        t = time.perf_counter()
        found = engine.match(pub)
        times.append(time.perf_counter() - t)
        matches += len(found)
    return matches


@pytest.mark.benchmark(group="filter-selective")
@pytest.mark.parametrize("algorithm", SELECTIVE_ALGORITHMS)
def test_filter_selective(benchmark, selective_workload, selective_publications,
                          selective_engines, algorithm):
    engine = loaded(selective_engines, algorithm, selective_workload)
    times: list[float] = []
    matches = benchmark.pedantic(filter_timed, args=(engine, selective_publications, times),
                                 rounds=3, iterations=1, warmup_rounds=0)
    n_pubs, n_queries = len(selective_publications), len(selective_workload.ids)
    ordered = sorted(times)
    benchmark.extra_info.update(
        workload="selective", queries=n_queries, publications=n_pubs, matches=matches,
        matches_per_pub=matches / n_pubs,
        matching_share_pct=100 * matches / n_pubs / n_queries,
        pubs_per_s=n_pubs / sum(times), latency_ms_p50=1000 * percentile(ordered, 0.50),
        latency_ms_p99=1000 * percentile(ordered, 0.99))
    reference = selective_engines.setdefault("_matches", matches)
    assert matches == reference, f"{algorithm} finds {matches} matches, another engine {reference}"
