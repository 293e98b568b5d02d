"""What tests/conftest.py sets up for the whole run, checked from inside a test.

The suite's CPU goes mostly to starting things (Spark's JVMs, Python processes), and
conftest makes both cheaper: these tests fail if that setup stops reaching what it is
for (docs/architecture.md, "Running the tests"); the Spark JVMs' options are checked in
the JVM of a session, in tests/test_spark_stream.py.
"""

from __future__ import annotations

import importlib.util
import os
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
