"""Fixtures of the engine benchmarks: one DBpedia workload, parsed once.

The benchmarks run apart from the unit tests (the root ``pyproject.toml``
collects ``tests/`` only and disables pytest-benchmark by default)::

    pytest benchmarks/ --benchmark-enable                 # timings
    pytest benchmarks/ --benchmark-enable --benchmark-compare   # against a saved run
    RTF_BENCH_QUERIES=2000 pytest benchmarks/ --benchmark-enable   # a quicker round
    RTF_BENCH_SELECTIVE_QUERIES=100000 pytest benchmarks/test_bench_selective.py --benchmark-enable

Without the DBpedia sample (``$RTF_DATA_DIR/dbpedia``) every case is skipped.
"""

from __future__ import annotations

import os

import pytest

from rtf.io import datasets

#: Queries registered in each engine, and publications filtered per round
#: (override with RTF_BENCH_QUERIES and RTF_BENCH_PUBLICATIONS).
N_QUERIES = int(os.environ.get("RTF_BENCH_QUERIES", "10000"))
N_PUBLICATIONS = int(os.environ.get("RTF_BENCH_PUBLICATIONS", "100"))
FT_PR = 50
SEED = 0
#: The selective workload's sizes (test_bench_selective.py): RTF_BENCH_SELECTIVE_QUERIES
#: and RTF_BENCH_SELECTIVE_PUBLICATIONS (the issue's target is 100,000 queries).
N_SELECTIVE_QUERIES = int(os.environ.get("RTF_BENCH_SELECTIVE_QUERIES", "20000"))
N_SELECTIVE_PUBLICATIONS = int(os.environ.get("RTF_BENCH_SELECTIVE_PUBLICATIONS", "300"))


def _need_data():
    if not datasets.available():
        pytest.skip(datasets.missing_message())


@pytest.fixture(scope="session")
def dbpedia_publications():
    """Every publication of the sample (the queries' vocabulary)."""
    _need_data()
    from rtf.bench.inputs import load_publications
    return load_publications([str(f) for f in datasets.dbpedia_files()])


@pytest.fixture(scope="session")
def filtered_publications(dbpedia_publications):
    """A random slice of the sample, the same for every engine."""
    from rtf.bench.inputs import sample_publications
    return sample_publications(dbpedia_publications, N_PUBLICATIONS, SEED)


@pytest.fixture(scope="session")
def query_records(dbpedia_publications):
    """`rtf bench`'s workload: N_QUERIES generated queries at FT_pr = 50 %."""
    from rtf.bench.inputs import bench_mix
    from rtf.bench.workload import generate_queries
    return generate_queries(dbpedia_publications, N_QUERIES, seed=SEED, mix=bench_mix(FT_PR))


@pytest.fixture(scope="session")
def workload(query_records):
    """The same queries, parsed once: registration benchmarks do not time the parser."""
    from rtf.bench.inputs import parse_workload
    return parse_workload(query_records, FT_PR, N_QUERIES)


@pytest.fixture(scope="session")
def selective_workload(dbpedia_publications):
    """N_SELECTIVE_QUERIES queries of the selective mix (``rtf bench --mix selective``), parsed."""
    from rtf.bench.inputs import bench_mix, parse_workload
    from rtf.bench.workload import generate_queries
    records = generate_queries(dbpedia_publications, N_SELECTIVE_QUERIES, seed=SEED,
                               mix=bench_mix(FT_PR, "selective"))
    return parse_workload(records, FT_PR, N_SELECTIVE_QUERIES)


@pytest.fixture(scope="session")
def selective_publications(dbpedia_publications):
    """The publications the selective workload filters (a random slice of the sample)."""
    from rtf.bench.inputs import sample_publications
    return sample_publications(dbpedia_publications, N_SELECTIVE_PUBLICATIONS, SEED)
