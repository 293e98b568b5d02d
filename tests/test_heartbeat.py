"""The heartbeat of long tests (tests/heartbeat.py): a running test is named on the terminal
every period, in a serial run and from pytest-xdist's workers, whatever pytest captures."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.heartbeat import Heartbeat, period_from_environment

ROOT = Path(__file__).resolve().parents[1]


def _beats(every: float, runs: list[tuple[str, float]]) -> str:
    """What a heartbeat of period `every` writes while tests run for the given seconds."""
    read, write = os.pipe()
    beat = Heartbeat(every, write, "gw7")
    beat.start()
    try:
        for test, seconds in runs:
            beat.begin(test)
            time.sleep(seconds)
            beat.end()
    finally:
        beat.stop()  # closes `write`
    with os.fdopen(read, encoding="utf-8") as f:
        return f.read()


def test_a_long_test_is_named_each_period_and_a_short_one_never():
    out = _beats(0.2, [("tests/a.py::quick", 0.05), ("tests/a.py::long", 0.75), ("tests/a.py::after", 0.05)])
    lines = [line for line in out.splitlines() if line]
    assert lines and all(line.startswith("[gw7] tests/a.py::long: still running, ") for line in lines), out
    assert 2 <= len(lines) <= 4, out  # at 0.2, 0.4, 0.6 s (a slow machine may merge two)


def test_the_period_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv("RTF_TEST_HEARTBEAT", raising=False)
    assert period_from_environment() == 30
    monkeypatch.setenv("RTF_TEST_HEARTBEAT", "0")
    assert period_from_environment() == 0
    monkeypatch.setenv("RTF_TEST_HEARTBEAT", "2.5")
    assert period_from_environment() == 2.5
    monkeypatch.setenv("RTF_TEST_HEARTBEAT", "soon")
    assert period_from_environment() == 30


@pytest.mark.slow
@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_pytest_prints_the_heartbeat_through_its_capture(tmp_path, workers):
    """A real pytest run with this suite's conftest as a plugin: the line reaches the
    terminal although pytest captures the test's output (and, with -n, runs it in a worker)."""
    (tmp_path / "test_sleepy.py").write_text("import time\n\ndef test_sleepy():\n    time.sleep(1.6)\n"
                                             "    print('captured')\n")
    env = {name: value for name, value in os.environ.items() if not name.startswith("PYTEST_XDIST")}
    env.update(RTF_TEST_HEARTBEAT="0.5", PYTHONPATH=str(ROOT))  # (not a worker's, when this suite runs under -n)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest",
                           "--rootdir", str(tmp_path), *workers, str(tmp_path / "test_sleepy.py")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "test_sleepy.py::test_sleepy: still running, 1 s" in done.stderr, done.stderr
    assert ("[gw" in done.stderr) == bool(workers) and "captured" not in done.stdout + done.stderr
