"""pytest-benchmark cases: filtering under the selective workload (issue 10) and
the full-text-only workload (issue 22), and registering the latter from text.

``rtf bench --mix selective``'s queries (`rtf.bench.workload.Mix.selective`:
about 2 % of the queries match a DBpedia publication, so the index, not
the per-match work, decides the time) loaded once into rtfs, rtfm and
ibroker; each round filters the same publications through each. Sizes
come from RTF_BENCH_SELECTIVE_QUERIES (default 20,000) and
RTF_BENCH_SELECTIVE_PUBLICATIONS (default 300); see conftest.py::

    pytest benchmarks/test_bench_selective.py --benchmark-enable
    RTF_BENCH_SELECTIVE_QUERIES=100000 pytest benchmarks/test_bench_selective.py --benchmark-enable

The full-text-only workload (``rtf gen-queries --mix fulltext``, about
1.4 % of the queries match each DBpedia abstract) filters the abstracts;
RTF_BENCH_FULLTEXT_QUERIES (default 20,000) sets its size::

    RTF_BENCH_FULLTEXT_QUERIES=100000 pytest benchmarks/test_bench_selective.py -k fulltext --benchmark-enable

``extra_info`` records the sizes, the matches, the matches per
publication, publications/s and the per-publication latency p50 / p99 of
the last round; the matches must be equal across the engines.
"""

from __future__ import annotations

import os
import time

import pytest

from rtf.bench.timing import percentile
from rtf.engine import Engine, freeze_long_lived

SELECTIVE_ALGORITHMS = ("rtfs", "rtfm", "ibroker")
N_FULLTEXT_QUERIES = int(os.environ.get("RTF_BENCH_FULLTEXT_QUERIES", "20000"))


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


def record(benchmark, name, engines, algorithm, matches, n_queries, publications, times):
    n_pubs = len(publications)
    ordered = sorted(times)
    benchmark.extra_info.update(
        workload=name, queries=n_queries, publications=n_pubs, matches=matches,
        matches_per_pub=matches / n_pubs,
        matching_share_pct=100 * matches / n_pubs / n_queries,
        pubs_per_s=n_pubs / sum(times), latency_ms_p50=1000 * percentile(ordered, 0.50),
        latency_ms_p99=1000 * percentile(ordered, 0.99))
    reference = engines.setdefault("_matches", matches)
    assert matches == reference, f"{algorithm} finds {matches} matches, another engine {reference}"


@pytest.mark.benchmark(group="filter-selective")
@pytest.mark.parametrize("algorithm", SELECTIVE_ALGORITHMS)
def test_filter_selective(benchmark, selective_workload, selective_publications,
                          selective_engines, algorithm):
    engine = loaded(selective_engines, algorithm, selective_workload)
    times: list[float] = []
    matches = benchmark.pedantic(filter_timed, args=(engine, selective_publications, times),
                                 rounds=3, iterations=1, warmup_rounds=0)
    record(benchmark, "selective", selective_engines, algorithm, matches,
           len(selective_workload.ids), selective_publications, times)


@pytest.fixture(scope="module")
def abstracts(dbpedia_publications):
    """The publications that are one abstract (the full-text workload's documents)."""
    return [p for p in dbpedia_publications if p.triples[0][1].endswith("/abstract>")]


@pytest.fixture(scope="module")
def fulltext_records(abstracts):
    from rtf.bench.workload import Mix, generate_queries
    return generate_queries(abstracts, N_FULLTEXT_QUERIES, seed=0, mix=Mix.fulltext())


@pytest.fixture(scope="module")
def fulltext_workload(fulltext_records):
    from rtf.bench.inputs import parse_workload
    return parse_workload(fulltext_records, 100, N_FULLTEXT_QUERIES)


@pytest.fixture(scope="module")
def fulltext_engines():
    return {}


@pytest.mark.benchmark(group="filter-fulltext")
@pytest.mark.parametrize("algorithm", SELECTIVE_ALGORITHMS)
def test_filter_fulltext(benchmark, fulltext_workload, abstracts, fulltext_engines, algorithm):
    engine = loaded(fulltext_engines, algorithm, fulltext_workload)
    times: list[float] = []
    pubs = abstracts[:300] if algorithm == "ibroker" else abstracts
    matches = benchmark.pedantic(filter_timed, args=(engine, pubs, times),
                                 rounds=3, iterations=1, warmup_rounds=0)
    if algorithm != "ibroker":  # it sees fewer publications: compared only by the others
        record(benchmark, "fulltext", fulltext_engines, algorithm, matches,
               len(fulltext_workload.ids), pubs, times)


@pytest.mark.benchmark(group="register-fulltext")
def test_register_fulltext_from_text(benchmark, fulltext_records):
    """Registration as a user pays it: parsing included (the parse cache emptied first)."""
    from rtf.parser import PARSE_CACHE

    def register():
        PARSE_CACHE.clear()
        engine = Engine("rtfs")
        for r in fulltext_records:
            engine.register(r["query"], r["id"], r["subscriber"])
        return engine

    engine = benchmark.pedantic(register, rounds=1, iterations=1, warmup_rounds=0)
    assert len(engine) == len(fulltext_records)
    benchmark.extra_info.update(queries=len(fulltext_records))
