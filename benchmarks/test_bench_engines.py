"""pytest-benchmark cases: registration and filtering, per engine.

A slice of ``rtf bench``'s workload (10,000 generated queries, 100 DBpedia
publications; see conftest.py to change the sizes), every engine including
the naive reference, in a few minutes::

    pytest benchmarks/ --benchmark-enable
    pytest benchmarks/ --benchmark-enable --benchmark-autosave   # then --benchmark-compare

Times are per round: registering all the queries into a fresh engine, or
filtering all the publications through a loaded one. ``extra_info`` keeps
the sizes and the number of matches, which must be equal across engines.
"""

from __future__ import annotations

import pytest

from rtf.engine import ALGORITHMS, Engine


def register_all(engine, workload):
    for qid, query, sub in zip(workload.ids, workload.queries, workload.subscribers):
        engine.register(query, qid, sub)
    return engine


def match_all(engine, publications):
    return sum(len(engine.match(p)) for p in publications)


@pytest.fixture(scope="module")
def loaded_engines():
    """Engines loaded with the workload, built once each (and the first match count)."""
    return {}


def loaded(cache, algorithm, workload):
    if algorithm not in cache:
        cache[algorithm] = register_all(Engine(algorithm), workload)
    return cache[algorithm]


@pytest.mark.benchmark(group="register")
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_register(benchmark, workload, algorithm):
    engine = benchmark.pedantic(register_all, setup=lambda: ((Engine(algorithm), workload), {}),
                                rounds=5, iterations=1)
    benchmark.extra_info.update(queries=len(workload.ids))
    assert len(engine) == len(workload.ids)


@pytest.mark.benchmark(group="filter")
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_filter(benchmark, workload, filtered_publications, loaded_engines, algorithm):
    engine = loaded(loaded_engines, algorithm, workload)
    matches = benchmark.pedantic(match_all, args=(engine, filtered_publications),
                                 rounds=3, iterations=1, warmup_rounds=0)
    benchmark.extra_info.update(queries=len(workload.ids), publications=len(filtered_publications),
                                matches=matches)
    reference = loaded_engines.setdefault("_matches", matches)
    assert matches == reference, f"{algorithm} finds {matches} matches, another engine {reference}"


@pytest.mark.benchmark(group="parse")
def test_parse(benchmark, query_records):
    import rtf.parser
    from rtf.parser import parse_query

    texts = [r["query"] for r in query_records[:1000]]

    def forget():  # parse_query caches by text: time the parser, not the cache
        cache_clear = getattr(getattr(rtf.parser, "_parse", None), "cache_clear", None)
        if cache_clear:
            cache_clear()

    parsed = benchmark.pedantic(lambda: [parse_query(t) for t in texts], setup=forget,
                                rounds=3, iterations=1)
    benchmark.extra_info.update(queries=len(texts))
    assert len(parsed) == len(texts)
