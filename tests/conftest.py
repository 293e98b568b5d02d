"""Shared fixtures: the DBpedia sample (skipped cleanly when absent); a heartbeat for long tests."""

from __future__ import annotations

import itertools

import pytest

from rtf.io import datasets
from tests.heartbeat import Heartbeat, period_from_environment


def pytest_configure(config):
    """Start the heartbeat (tests/heartbeat.py): a line on the terminal every 30 s while a test runs."""
    every = period_from_environment()
    if every > 0:
        config.stash[HEARTBEAT] = beat = Heartbeat.on_stderr(every)
        beat.start()


def pytest_unconfigure(config):
    beat = config.stash.get(HEARTBEAT, None)
    if beat is not None:
        beat.stop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    beat = item.config.stash.get(HEARTBEAT, None)
    if beat is None:
        return (yield)
    beat.begin(item.nodeid)
    try:
        return (yield)
    finally:
        beat.end()


HEARTBEAT = pytest.StashKey[Heartbeat]()

#: Fixture scopes built once per module or class: the tests that use one stay on one worker.
SHARED_SCOPES = {"module", "class", "package"}


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (``--dist loadgroup``), keep each module's tests that share a
    module- or class-scoped fixture (a Spark session, a server, a browser, a big workload)
    on one worker, so that it is built once, as in a serial run, not once per worker; the
    other tests are dealt to whichever worker is free. Soak tests are slow too."""
    for item in items:
        if item.get_closest_marker("soak") and not item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.slow)
        if item.get_closest_marker("xdist_group"):
            continue
        info = getattr(item, "_fixtureinfo", None)
        if info is None:
            continue
        if any(defs and defs[-1].scope in SHARED_SCOPES for defs in info.name2fixturedefs.values()):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))


def _need_data():
    if not datasets.available():
        pytest.skip(datasets.missing_message())


@pytest.fixture(scope="session")
def dbpedia_taxonomy():
    _need_data()
    from rtf.io.taxonomy import Taxonomy
    return Taxonomy.from_file(datasets.dbpedia_ontology())


def _file(name: str):
    matches = [f for f in datasets.dbpedia_files() if f.name.startswith(name)]
    return matches[0]


@pytest.fixture(scope="session")
def dbpedia_slice():
    """A mixed slice: the verbatim-format files, typed db8k resources, real abstracts."""
    _need_data()
    from rtf.io.reader import read_publications
    pubs = list(read_publications([_file("nordlys"), _file("esbm")]))
    pubs += list(itertools.islice(read_publications([_file("db8k28")]), 700))
    for name in ("renlg", "knowledgenet", "ml1m"):
        pubs += list(itertools.islice(read_publications([_file(name)]), 120))
    return pubs


@pytest.fixture(scope="session")
def dbpedia_all():
    _need_data()
    from rtf.io.reader import read_publications
    return list(read_publications(datasets.dbpedia_files()))
