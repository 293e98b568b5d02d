"""A line on the terminal while one test runs long, so that a slow test never looks like a hang.

pytest prints a test's dot when it ends; a Spark or server test that takes two minutes
(longer on a busy machine) would leave the terminal silent all that while. `Heartbeat`
watches the test this process runs (set up, call and tear down) from a thread of its own
and, once it has run `every` seconds, writes a line naming it, then another each `every`
seconds more, for example::

    [gw1] tests/test_spark_stream.py::test_a_killed_worker_is_retried: still running, 60 s

It writes to a copy of the standard error taken before any test runs, so pytest's capture
(which redirects file descriptor 2 while a test runs) does not swallow it. Under
pytest-xdist every worker has its own heartbeat (its name leads the line) and inherits the
terminal's standard error from the controller. ``RTF_TEST_HEARTBEAT=SECONDS`` sets the
period (default 30; 0 turns it off).
"""

from __future__ import annotations

import os
import threading
import time

ENV = "RTF_TEST_HEARTBEAT"
DEFAULT_SECONDS = 30.0


def period_from_environment() -> float:
    """The period `ENV` asks for (seconds; 0 or less: no heartbeat)."""
    value = os.environ.get(ENV, "").strip()
    try:
        return float(value) if value else DEFAULT_SECONDS
    except ValueError:
        return DEFAULT_SECONDS


class Heartbeat:
    """Tells, every `every` seconds, which test of this process is still running."""

    def __init__(self, every: float, fd: int, worker: str | None = None):
        self.every = every
        self.fd = fd
        self.prefix = f"[{worker}] " if worker else ""
        self._lock = threading.Lock()
        self._test: str | None = None
        self._started = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="test-heartbeat", daemon=True)

    @classmethod
    def on_stderr(cls, every: float) -> "Heartbeat":
        """A heartbeat writing to (a copy of) this process's standard error as it is now."""
        return cls(every, os.dup(2), os.environ.get("PYTEST_XDIST_WORKER"))

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        os.close(self.fd)

    def begin(self, nodeid: str) -> None:
        with self._lock:
            self._test, self._started = nodeid, time.monotonic()

    def end(self) -> None:
        with self._lock:
            self._test = None

    def _run(self) -> None:
        told = None  # (test, started) of the last line written, and how many periods it covered
        periods = 0
        while not self._stop.wait(min(1.0, self.every / 4)):
            with self._lock:
                test, started = self._test, self._started
            if test is None:
                continue
            if told != (test, started):
                told, periods = (test, started), 0
            ran = time.monotonic() - started
            if ran >= (periods + 1) * self.every:
                periods = int(ran // self.every)
                self._write(f"\n{self.prefix}{test}: still running, {ran:.0f} s\n")

    def _write(self, line: str) -> None:
        try:
            os.write(self.fd, line.encode("utf-8", "replace"))
        except OSError:  # the terminal went away: nothing to tell anyone
            self._stop.set()
