"""What tests/conftest.py sets up for the whole run, checked from inside a test.

The suite's CPU goes mostly to starting things (Spark's JVMs, Python processes), and
conftest makes both cheaper: these tests fail if that setup stops reaching what it is
for (docs/architecture.md, "Running the tests"); the Spark JVMs' options are checked in
the JVM of a session, in tests/test_spark_stream.py.
"""

from __future__ import annotations

import importlib.util
import os
import time
from pathlib import Path

import pytest

import rtf

PACKAGE = Path(rtf.__file__).parent


def test_every_module_of_rtf_has_its_bytecode_before_a_test_runs():
    """Under ``PYTHONDONTWRITEBYTECODE`` too: a process the tests start (``rtf serve``, the
    CLI, a Spark Python worker) reads rtf's modules compiled, not their source."""
    stale = []
    for source in sorted(PACKAGE.rglob("*.py")):
        cached = Path(importlib.util.cache_from_source(str(source)))
        header = cached.read_bytes()[:16] if cached.exists() else b""
        stat = source.stat()
        # a timestamp pyc: magic, flags 0, the source's mtime and size (PEP 552)
        expected = (importlib.util.MAGIC_NUMBER + bytes(4) + int(stat.st_mtime).to_bytes(4, "little")
                    + (stat.st_size & 0xFFFFFFFF).to_bytes(4, "little"))
        if header != expected:
            stale.append(str(source.relative_to(PACKAGE)))
    assert not stale, stale


def test_under_xdist_every_test_module_is_rewritten_once_before_the_workers_collect():
    """tests/conftest.py's `compile_the_tests`: the controller writes pytest's rewritten
    bytecode of every test module, so the workers (each collects the whole suite) read it
    instead of rewriting all of it again, under ``PYTHONDONTWRITEBYTECODE`` too."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        pytest.skip("a serial run: its one process rewrites the modules as pytest does")
    from _pytest.assertion.rewrite import PYC_TAIL, get_cache_dir

    stale = []
    for source in sorted(Path(__file__).parent.glob("test_*.py")):
        cached = get_cache_dir(source) / (source.name[:-3] + PYC_TAIL)
        header = cached.read_bytes()[:16] if cached.exists() else b""
        # a checked-hash pyc: magic, flags 3, the source's hash (PEP 552)
        expected = (importlib.util.MAGIC_NUMBER + b"\x03\x00\x00\x00"
                    + importlib.util.source_hash(source.read_bytes())[:8])
        if header != expected:
            stale.append(source.name)
    assert not stale, stale



def test_only_a_run_that_may_have_spark_tests_makes_the_class_archive():
    from tests import spark_jvm

    assert spark_jvm.may_hold_spark_tests([])  # the testpaths
    assert spark_jvm.may_hold_spark_tests(["tests"])
    assert spark_jvm.may_hold_spark_tests(["tests/test_cli.py", "tests/test_spark_stream.py::test_y"])
    assert spark_jvm.may_hold_spark_tests(["tests/test_stream_checkpoint.py::test_z[1]"])
    assert not spark_jvm.may_hold_spark_tests(["tests/test_cli.py::test_x", "tests/test_server.py"])


def test_spark_options_set_before_the_run_are_kept(monkeypatch, tmp_path):
    from tests import spark_jvm

    monkeypatch.setenv("SPARK_SUBMIT_OPTS", "")
    monkeypatch.delenv("SPARK_DAEMON_JAVA_OPTS", raising=False)
    spark_jvm.set_options(tmp_path / "a.jsa")
    assert os.environ["SPARK_SUBMIT_OPTS"] == ""
    assert os.environ["SPARK_DAEMON_JAVA_OPTS"] == (f"{spark_jvm.SPARK_JVM_OPTIONS} {spark_jvm.UNVERIFIED_OPTIONS} "
                                                   f"-XX:SharedArchiveFile={tmp_path / 'a.jsa'} -Xlog:cds*=off")


class _Item:
    """What `order_by_cost` reads of a pytest item."""

    def __init__(self, nodeid: str, slow: bool = False):
        self.nodeid, self.slow = nodeid, slow

    def get_closest_marker(self, name):
        return object() if name == "slow" and self.slow else None


def test_modules_are_handed_out_from_the_longest_and_keep_their_tests_order():
    """tests/module_order.py: the recorded seconds order the modules; a module the record
    does not know is counted by its slow tests, so a new slow module is not left for last."""
    from tests.module_order import SECONDS_PER_SLOW_TEST, order_by_cost

    items = [_Item("tests/test_a.py::t1"), _Item("tests/test_a.py::t2"),
             _Item("tests/test_b.py::t1", slow=True), _Item("tests/test_c.py::t[1]"),
             _Item("tests/test_new.py::t1", slow=True), _Item("tests/test_new.py::t2", slow=True),
             _Item("tests/test_c.py::t[0]"), _Item("tests/test_quick.py::t")]
    costs = {"tests/test_a.py": 3 * SECONDS_PER_SLOW_TEST, "tests/test_b.py": 1.0,
             "tests/test_c.py": 100.0}
    order_by_cost(items, costs)
    assert [item.nodeid for item in items] == [
        "tests/test_c.py::t[1]", "tests/test_c.py::t[0]", "tests/test_a.py::t1", "tests/test_a.py::t2",
        "tests/test_new.py::t1", "tests/test_new.py::t2", "tests/test_b.py::t1", "tests/test_quick.py::t"]


def test_spark_modules_of_a_run_making_the_archive_come_after_the_first_others():
    """A run still making the class archive hands each worker one other module first, so that
    no Spark JVM starts before the archive exists (tests/spark_jvm.py)."""
    from tests.module_order import order_by_cost
    from tests.spark_jvm import is_spark_module

    items = [_Item(f"tests/{name}.py::t") for name in
             ("test_a", "test_spark_x", "test_b", "test_stream_checkpoint", "test_c", "test_d")]
    costs = {"tests/test_spark_x.py": 90.0, "tests/test_stream_checkpoint.py": 80.0,
             "tests/test_a.py": 50.0, "tests/test_b.py": 40.0, "tests/test_c.py": 30.0, "tests/test_d.py": 1.0}
    order_by_cost(items, costs)
    assert [item.nodeid for item in items][:2] == ["tests/test_spark_x.py::t", "tests/test_stream_checkpoint.py::t"]
    order_by_cost(items, costs, held_back=is_spark_module, ahead=2)
    assert [item.nodeid.split(".py")[0][6:] for item in items] == [
        "test_a", "test_b", "test_spark_x", "test_stream_checkpoint", "test_c", "test_d"]


def test_a_spark_module_waits_for_the_archive_until_it_exists_or_its_maker_ends(monkeypatch, tmp_path):
    import threading

    from tests import spark_jvm

    archive = tmp_path / "a.jsa"
    monkeypatch.delenv(spark_jvm.PENDING_VARIABLE, raising=False)
    assert spark_jvm.wait_for_archive(timeout=5) is False  # none being made: at once
    monkeypatch.setenv(spark_jvm.PENDING_VARIABLE, str(archive))
    marker = spark_jvm.building_marker(archive)
    marker.write_text(str(os.getpid()))
    threading.Timer(0.3, archive.write_bytes, args=(b"made",)).start()
    started = time.monotonic()
    assert spark_jvm.wait_for_archive(timeout=30, poll=0.05) is True
    assert 0.25 <= time.monotonic() - started < 30
    archive.unlink()
    threading.Timer(0.3, marker.unlink).start()  # the maker ended without it
    assert spark_jvm.wait_for_archive(timeout=30, poll=0.05) is False
    marker.write_text("999999999")  # a maker that died without removing its marker
    assert spark_jvm.wait_for_archive(timeout=30, poll=0.05) is False
    marker.write_text(str(os.getpid()))
    started = time.monotonic()
    assert spark_jvm.wait_for_archive(timeout=0.3, poll=0.05) is False  # the wait has an end
    assert time.monotonic() - started >= 0.3


def test_the_recorded_costs_are_read_back_and_a_partial_run_keeps_the_others(tmp_path):
    from types import SimpleNamespace

    from tests.module_order import CostRecorder, load_costs

    path = tmp_path / "costs.json"
    assert load_costs(path) == {}  # none yet: the slow marks order the run
    path.write_text('{"tests/test_old.py": 7.0, "tests/test_a.py": 1.0}')
    recorder = CostRecorder(path)
    for nodeid, duration in [("tests/test_a.py::t1", 2.0), ("tests/test_a.py::t1", 0.5),
                             ("tests/test_b.py::t[x::y]", 1.25)]:
        recorder.pytest_runtest_logreport(SimpleNamespace(nodeid=nodeid, duration=duration))
    recorder.pytest_sessionfinish(None)
    assert load_costs(path) == {"tests/test_old.py": 7.0, "tests/test_a.py": 2.5, "tests/test_b.py": 1.2}
    path.write_text("not json")
    assert load_costs(path) == {}


def test_a_parallel_run_orders_its_modules_by_the_recorded_costs(request):
    """The file the repository holds is read, knows the Spark modules (among the longest),
    and orders the run's collection under xdist (tests/conftest.py)."""
    from tests.module_order import COSTS_FILE, load_costs, module_of

    costs = load_costs()
    assert "tests/test_spark_stream.py" in costs and "tests/test_spark.py" in costs, COSTS_FILE
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return  # a serial run keeps the files' order
    from tests import spark_jvm

    known = [module_of(item.nodeid) for item in request.session.items if module_of(item.nodeid) in costs]
    modules = list(dict.fromkeys(known))
    if spark_jvm.archive_pending():  # (a run making the class archive: its Spark modules held back)
        workers = int(request.config.workerinput["workercount"])
        others = [m for m in modules if not spark_jvm.is_spark_module(m)]
        spark = [m for m in modules if spark_jvm.is_spark_module(m)]
        assert modules[:workers] == others[:workers] and modules[workers:workers + len(spark)] == spark
        assert [costs[m] for m in spark] == sorted((costs[m] for m in spark), reverse=True)
        modules = others
    seen = [costs[m] for m in modules]
    assert seen == sorted(seen, reverse=True)
