"""Shared fixtures: the DBpedia sample (skipped cleanly when absent); a heartbeat for long tests."""

from __future__ import annotations

import compileall
import gc
import itertools
import os
from pathlib import Path

import pytest

import rtf
from rtf.io import datasets
from tests import module_order, spark_jvm, warm_server
from tests.heartbeat import Heartbeat, period_from_environment


def compile_the_package(config) -> None:
    """Write rtf's bytecode once, before the workers start, even where Python is told not to
    (``PYTHONDONTWRITEBYTECODE``, ``-B``, as on this project's machines): the suite starts
    hundreds of Python processes -- ``rtf serve``, the CLI, Spark's Python workers -- and
    each one would otherwise compile every module it imports (0.15 s of CPU for the
    server's; tests/test_server_damaged_files.py took 47 s of CPU instead of 37). The files
    are Python's own (``rtf/**/__pycache__``, ignored by git), checked against their source
    by every import; up-to-date ones are left as they are. An xdist worker leaves it to the
    controller."""
    if not hasattr(config, "workerinput"):
        compileall.compile_dir(Path(rtf.__file__).parent, quiet=2)  # a read-only tree: no harm, no noise


def compile_the_tests(config) -> None:
    """Under xdist, write the test modules' bytecode once in the controller, before the workers
    start: each worker collects the whole suite, and under ``PYTHONDONTWRITEBYTECODE`` pytest
    keeps no rewritten test module, so every worker parsed, rewrote and compiled all of them
    again (collection: 7.0 s of CPU per worker, 3.4 s with the bytecode there). The rewritten
    modules are pytest's own (``tests/__pycache__/*-pytest-*.pyc``, checked against their
    source's hash by every import), made by pytest's own functions, as its import hook makes
    them; the helper modules (not rewritten) get Python's bytecode. Nothing is done if those
    functions are not there (another pytest) or assertions are not rewritten."""
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
        return
    folder = Path(__file__).parent
    for helper in folder.glob("*.py"):
        if not helper.name.startswith("test_") and helper.name != "conftest.py":
            compileall.compile_file(helper, quiet=2)
    try:
        from _pytest.assertion import rewrite
        state = config.stash[rewrite.assertstate_key]
        if state.mode != "rewrite":
            return
        for module in sorted(folder.glob("test_*.py")):
            pyc = rewrite.get_cache_dir(module) / (module.name[:-3] + rewrite.PYC_TAIL)
            if rewrite._read_pyc(module, pyc, state.trace) is None and rewrite.try_makedirs(pyc.parent):
                source_hash, code = rewrite._rewrite_test(module, config)
                rewrite._write_pyc(state, code, source_hash, pyc)
    except (ImportError, AttributeError, KeyError, OSError, SyntaxError):
        return  # the workers rewrite them, as pytest does by itself


#: The test processes' garbage collector thresholds (Python's are 700, 10, 10): the suite holds
#: big fixtures (engines, workloads, the DBpedia sample) that every full collection walks again,
#: and most of its garbage is freed by reference counts. Five heavy modules (test_dbpedia,
#: test_shapes, test_store, test_first_chars, test_projected_stars) took 42.0-43.9 s of CPU
#: instead of 45.8-47.6. Only the tests' own processes: the servers, CLI commands and Spark
#: workers they start run on Python's defaults. ``RTF_TEST_DEFAULT_GC=1`` keeps Python's here too.
GC_THRESHOLDS = (100_000, 50, 1_000)


def pytest_configure(config):
    """Start the heartbeat (tests/heartbeat.py): a line on the terminal every 30 s while a test
    runs; the collector's `GC_THRESHOLDS`; quick-starting Spark JVMs (tests/spark_jvm.py); rtf's and the tests' bytecode written
    once (`compile_the_package`, `compile_the_tests`); servers forked from a warm interpreter
    (tests/warm_server.py)."""
    if not os.environ.get("RTF_TEST_DEFAULT_GC"):
        gc.set_threshold(*GC_THRESHOLDS)
    archive = None
    if getattr(config, "cache", None) is not None:  # (none under -p no:cacheprovider)
        archive = spark_jvm.archive_path(config.cache.mkdir("spark-class-archive"))
    spark_jvm.set_options(archive)  # an xdist worker inherits the controller's, and keeps them
    if not hasattr(config, "workerinput") and spark_jvm.may_hold_spark_tests(config.args):
        # the controller (or a run without xdist), at once: the archive's JVM starts before collecting
        config.stash[SPARK_ARCHIVING] = spark_jvm.start_archive(archive)
    compile_the_package(config)
    compile_the_tests(config)
    if warm_server.enabled():
        from rtf.server.process import ServerProcess
        ServerProcess.launch = staticmethod(warm_server.popen)
    if os.environ.get("RTF_TEST_RECORD_COSTS") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(module_order.CostRecorder(), "rtf-module-costs")
    every = period_from_environment()
    if every > 0:
        config.stash[HEARTBEAT] = beat = Heartbeat.on_stderr(every)
        beat.start()


def pytest_unconfigure(config):
    making = config.stash.get(SPARK_ARCHIVING, None)
    if making is not None:
        making.join(timeout=300)  # a short run does not leave the archive's JVM behind
    beat = config.stash.get(HEARTBEAT, None)
    if beat is not None:
        beat.stop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if spark_jvm.archive_pending() and spark_jvm.is_spark_module(item.nodeid):
        spark_jvm.wait_for_archive()  # (at once once made: its JVMs map it from the start)
    beat = item.config.stash.get(HEARTBEAT, None)
    if beat is None:
        return (yield)
    beat.begin(item.nodeid)
    try:
        return (yield)
    finally:
        beat.end()


HEARTBEAT = pytest.StashKey[Heartbeat]()
SPARK_ARCHIVING = pytest.StashKey["threading.Thread | None"]()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Soak tests are slow too. Under pytest-xdist (``--dist loadscope``: a module's tests run on
    one worker, so that its module-scoped fixtures -- a Spark session, a server, a browser, a
    big workload -- are built once, as in a serial run), the modules are handed out from the
    longest (tests/module_order.py: the seconds each took in a recorded run), so that the
    quick ones fill the workers at the end instead of a long one running on alone."""
    for item in items:
        if item.get_closest_marker("soak") and not item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.slow)
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return  # a serial run keeps the files' order
    if spark_jvm.archive_pending():  # (the same in every worker: the controller set it before they started)
        workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
        module_order.order_by_cost(items, module_order.load_costs(), held_back=spark_jvm.is_spark_module,
                                   ahead=workers)
    else:
        module_order.order_by_cost(items, module_order.load_costs())


def pytest_xdist_auto_num_workers(config):
    """``-n auto``: two workers per core (``RTF_TEST_WORKERS=N`` says otherwise). Many of the
    slow tests mostly wait -- for a server to start or stop, a JVM, a subprocess, a timeout:
    test_server_stop.py used 26 s of CPU in its 209 s on a busy machine -- so one worker per
    core leaves the cores idle much of the time."""
    wanted = os.environ.get("RTF_TEST_WORKERS", "").strip()
    if wanted.isdigit():
        return int(wanted)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return 2 * cores


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
