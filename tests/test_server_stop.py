"""Issue 37 item 4: a signal during a bulk registration (``POST /queries``).

SIGTERM during a 20,000-query registration: the server exited 0, the client
got 500 ("graceful shutdown exceeded", uvicorn's answer once it cancels the
request), although all 20,000 queries had been committed. Now the rule is
the one of `rtf.server.stopping`: committed <=> 2xx; not committed <=> 503
with Retry-After (or a connection closed before any byte of the answer);
never 500.

A real server in a child process; a hook (installed by the launcher below,
not in rtf) announces the request's phase on stderr and holds it there until
the signal has arrived (and a pause more), and the test sends the signal
then: while the body arrives, parsing, registering,
committing, answering; SIGTERM, Ctrl-C, and Ctrl-C twice; pauses shorter and
longer than uvicorn's 5 s of grace. The client's status is then checked
against the table on disk, read after the server exited, and after a restart.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from rtf.server.process import ServerProcess, serve_command
from tests.test_server import q_words

#: Spark, rtf serve processes or a browser: out of the quick subset (pytest -m 'not slow').
pytestmark = pytest.mark.slow

httpx = pytest.importorskip("httpx")

#: The launcher: installs the phase hook named by RTF_TEST_PHASE ("phase:nth:seconds":
#: at the nth call, announce the phase, wait for the stop signal, then pause that long),
#: then runs ``rtf`` as ``python -m rtf.cli`` does.
LAUNCHER = """
import os, sys, threading, time
import uvicorn.server
phase, nth, pause = os.environ["RTF_TEST_PHASE"].split(":")
nth, pause = int(nth), float(pause)
calls = [0]
signalled = threading.Event()
real_exit = uvicorn.server.Server.handle_exit

def handle_exit(self, sig, frame):
    real_exit(self, sig, frame)
    signalled.set()

uvicorn.server.Server.handle_exit = handle_exit

def hooked(real):
    def call(*args, **kwargs):
        calls[0] += 1
        if calls[0] == nth:
            print(f"rtf-test: phase {phase}", file=sys.stderr, flush=True)
            signalled.wait(30)
            time.sleep(pause)
        return real(*args, **kwargs)
    return call

from rtf.server import broker, querystore, registry
if phase == "parsing":
    registry.parse_query = hooked(registry.parse_query)
elif phase == "registering":
    querystore.PendingWrite.put = hooked(querystore.PendingWrite.put)
elif phase == "committing":
    querystore.PendingWrite.commit = hooked(querystore.PendingWrite.commit)
elif phase == "answering":
    broker.Broker.changed = hooked(broker.Broker.changed)
from rtf.cli import main
sys.exit(main(sys.argv[1:]))
"""

N = 400
NDJSON = {"Content-Type": "application/x-ndjson"}
BODY = "".join(json.dumps({"id": f"q{i}", "query": q_words("st", f"w{i}"), "subscriber": "alice"})
               + "\n" for i in range(N)).encode()
#: uvicorn's grace for requests in progress (rtf.server.command); a pause within it (long
#: enough for a second Ctrl-C to come while the request still runs) and one past it.
GRACE = 5.0
SHORT = 0.5
PAST_GRACE = GRACE + 1.5


class HookedServer(ServerProcess):
    """`rtf serve` started through LAUNCHER."""

    @property
    def command(self) -> list[str]:
        argv = serve_command(self.data, *self.args)
        return [argv[0], "-c", LAUNCHER, *argv[3:]]


def rows_on_disk(data: Path) -> int:
    db = sqlite3.connect(data / "queries.sqlite3")
    try:
        return db.execute("SELECT COUNT(*) FROM queries").fetchone()[0]
    finally:
        db.close()


def wait_for(server: ServerProcess, text: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while text not in server.stderr:
        assert time.monotonic() < deadline and server.running, server.stderr
        time.sleep(0.02)


def post_in_thread(server: ServerProcess, content, atomic: bool) -> tuple[threading.Thread, dict]:
    got: dict = {}

    def post():
        try:
            r = httpx.post(server.url + "/queries", params={"atomic": str(atomic).lower()},
                           content=content, headers=NDJSON, timeout=60)
            got["response"] = r
        except httpx.TransportError as e:  # closed before any byte of the answer
            got["error"] = e

    thread = threading.Thread(target=post)
    thread.start()
    return thread, got


def assert_outcome(got: dict, committed: bool) -> None:
    """committed <=> 2xx; not committed <=> 503 + Retry-After or no answer at all."""
    r = got.get("response")
    if committed:
        assert r is not None and r.status_code == 200, (got, r.text if r else None)
        if r.headers["content-type"].startswith("application/json"):
            assert r.json()["registered"] == N
        return
    if r is None:
        assert isinstance(got["error"], (httpx.RemoteProtocolError, httpx.ReadError,
                                         httpx.WriteError, httpx.ConnectError)), got
        return
    assert r.status_code == 503, r.text
    assert r.headers["retry-after"].isdigit() and "the server is stopping" in r.json()["error"]


def stop(server: ServerProcess, how: str) -> int:
    sig = signal.SIGTERM if how == "SIGTERM" else signal.SIGINT
    server.process.send_signal(sig)
    if how == "SIGINT twice":
        time.sleep(0.2)
        server.process.send_signal(signal.SIGINT)
    code = server.process.wait(60)
    server._finish()
    return code


EXIT = {"SIGTERM": 0, "SIGINT": 130, "SIGINT twice": 130}
#: Whether a request stopped in that phase ends committed (the others roll back).
COMMITS = {"parsing": False, "registering": False, "committing": True, "answering": True}


@pytest.mark.parametrize("phase, how, pause", [
    # every phase under SIGTERM, the issue's signal
    ("parsing", "SIGTERM", SHORT), ("registering", "SIGTERM", SHORT),
    ("committing", "SIGTERM", SHORT), ("answering", "SIGTERM", SHORT),
    # Ctrl-C
    ("parsing", "SIGINT", SHORT), ("registering", "SIGINT", SHORT),
    ("committing", "SIGINT", SHORT), ("answering", "SIGINT", SHORT),
    # a second Ctrl-C: uvicorn waits for nothing
    ("registering", "SIGINT twice", SHORT), ("committing", "SIGINT twice", SHORT),
    # past uvicorn's grace: it cancels the request (the issue's 500)
    ("parsing", "SIGTERM", PAST_GRACE), ("committing", "SIGTERM", PAST_GRACE),
])
def test_a_signal_at_each_phase_of_a_bulk_registration(tmp_path, phase, how, pause):
    atomic = len(phase + how) % 2 == 0  # both forms answer alike
    server = HookedServer(tmp_path / "b", env={"RTF_TEST_PHASE": f"{phase}:{N // 2}:{pause}"})
    if phase in ("committing", "answering"):
        server.env["RTF_TEST_PHASE"] = f"{phase}:1:{pause}"
    server.start()
    thread, got = post_in_thread(server, BODY, atomic)
    wait_for(server, f"rtf-test: phase {phase}")
    assert stop(server, how) == EXIT[how], server.stderr
    thread.join(60)
    on_disk = rows_on_disk(server.data)
    assert on_disk in (0, N)  # one transaction: all or nothing
    assert (on_disk == N) == COMMITS[phase], (on_disk, got)
    assert_outcome(got, committed=on_disk == N)
    assert "Traceback" not in server.stderr and "Exception in ASGI" not in server.stderr, server.stderr
    if how == "SIGINT twice" or pause > GRACE:  # and the restarted server agrees
        with ServerProcess(server.data) as again:
            assert again.health()["queries"] == on_disk


def test_the_issues_probe_sigterm_during_20000_queries(tmp_path):
    """The probe as it was run, without a hook: whatever the phase the signal meets,
    the client's answer and the table agree."""
    n = 20_000
    body = "".join(json.dumps({"id": f"q{i}", "query": q_words("st", f"w{i}")}) + "\n"
                   for i in range(n)).encode()
    server = ServerProcess(tmp_path / "b").start()
    thread, got = post_in_thread(server, body, atomic=True)
    time.sleep(1.0)
    assert stop(server, "SIGTERM") == 0
    thread.join(60)
    on_disk = rows_on_disk(server.data)
    assert on_disk in (0, n)
    r = got.get("response")
    if on_disk:
        assert r is not None and r.status_code == 200 and r.json()["registered"] == n
    else:
        assert r is None or (r.status_code == 503 and r.headers["retry-after"]), got
    assert "Traceback" not in server.stderr, server.stderr


@pytest.mark.parametrize("stall", [SHORT, PAST_GRACE])
def test_a_signal_while_the_body_arrives(tmp_path, stall):
    """The client is still sending when SIGTERM comes (and stays silent past the
    grace): nothing is registered, the answer is 503 or a closed connection."""
    server = ServerProcess(tmp_path / "b").start()
    half = len(BODY) // 2
    signalled = threading.Event()

    def body():
        yield BODY[:half]
        signalled.wait(30)
        time.sleep(stall)
        yield BODY[half:]

    thread, got = post_in_thread(server, body(), atomic=True)
    time.sleep(0.5)  # the first half is in
    server.process.send_signal(signal.SIGTERM)
    signalled.set()
    assert server.process.wait(60) == 0
    server._finish()
    thread.join(60)
    assert rows_on_disk(server.data) == 0
    assert_outcome(got, committed=False)
    assert "Traceback" not in server.stderr, server.stderr


def test_retry_after_the_restart_registers_everything(tmp_path):
    """The client's way forward: a 503 is sent again once the server is back."""
    server = HookedServer(tmp_path / "b", env={"RTF_TEST_PHASE": f"registering:{N // 2}:{SHORT}"})
    server.start()
    thread, got = post_in_thread(server, BODY, atomic=True)
    wait_for(server, "rtf-test: phase registering")
    assert stop(server, "SIGTERM") == 0
    thread.join(60)
    assert got["response"].status_code == 503
    time.sleep(int(got["response"].headers["retry-after"]) / 10)
    with ServerProcess(server.data) as again, again.client() as http:
        r = http.post("/queries", content=BODY, headers=NDJSON)
        assert r.status_code == 200 and r.json()["created"] == N
