"""A forked worker that ends abruptly (``--workers``; the system's OOM killer, a SIGKILL)
never leaves the command waiting for it forever.

`multiprocessing.Pool` replaced a dead worker but never reported its lost task:
`rtf match --workers` then waited forever (and `ProcessPoolExecutor` hangs
too when a worker dies while writing a large result: 1 kill in 6 here). The
pools (`rtf.io.processes`) give each worker pipes of its own: matching stops
with `WorkerLostError`, after the output of the publications before; parsing
ahead goes on in this process, registering the same queries.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

import rtf.io.parse_ahead as parse_ahead_module
from rtf import Engine
from rtf.errors import WorkerLostError
from rtf.io.parse_ahead import parse_ahead
from rtf.io.processes import forked_pool

RIO = 'SELECT ?s WHERE {{ ?s <http://ex/p> ?o FILTER ftcontains(?o, "{}") }}'
DOOMED = RIO.format("doomed")


def _killed_on_doomed(texts: list) -> list:
    """`_parse_chunk`, but the worker that receives the doomed text is killed."""
    if DOOMED in texts:
        os.kill(os.getpid(), signal.SIGKILL)
    return _PARSE_CHUNK(texts)


_PARSE_CHUNK = parse_ahead_module._parse_chunk


def _square(n: int) -> int:
    if n == 13:
        os.kill(os.getpid(), signal.SIGKILL)
    return n * n


def test_a_parse_worker_killed_leaves_the_rest_parsed_here(monkeypatch):
    monkeypatch.setattr(parse_ahead_module, "CHUNK", 4)
    monkeypatch.setattr(parse_ahead_module, "IN_FLIGHT", 2)
    monkeypatch.setattr(parse_ahead_module, "_parse_chunk", _killed_on_doomed)
    records = [(RIO.format(f"w{k}"), f"q{k}") for k in range(40)]
    records.insert(17, (DOOMED, "doomed"))
    out = list(parse_ahead(iter(records), 2))
    assert [parse_ahead_module.original(r) for r in out] == records
    one, many = Engine(), Engine()
    one.register_many(records)
    many.register_many(records, workers=2)
    assert many.to_bytes() == one.to_bytes()
    assert len(many) == 41


def _results_before(error, match: str, fn, n: int) -> list:
    """The results `ordered_map` gives over range(n) before it raises `error`."""
    got = []
    with forked_pool(2) as pool, pytest.raises(error, match=match):
        for _, value in pool.ordered_map(fn, range(n), 4):
            got.append(value)
    return got


def test_a_killed_worker_stops_ordered_map_with_worker_lost():
    got = _results_before(WorkerLostError, "ended abruptly", _square, 40)
    assert got == [n * n for n in range(len(got))] and len(got) <= 13


def test_ordered_map_reads_ahead_only_so_far_and_raises_an_input_error_in_turn():
    read = []

    def items():
        for n in range(30):
            read.append(n)
            if n == 20:
                raise ValueError("bad item 20")
            yield n

    with forked_pool(2) as pool:
        results = pool.ordered_map(abs, items(), 3)
        assert next(results) == (0, 0) and len(read) <= 4
        rest = []
        with pytest.raises(ValueError, match="bad item 20"):
            for item, value in results:
                rest.append(value)
    assert rest == list(range(1, 20))


SCRIPT = textwrap.dedent("""
    import os, signal, sys
    from rtf import Engine
    from rtf.cli.match import match_in_processes
    from rtf.io.publication import Publication

    def render(pub, found):
        if pub.id == "p37":
            os.kill(os.getpid(), signal.SIGKILL)
        return (pub.id + "\\n").encode()

    engine = Engine()
    engine.register('SELECT ?s WHERE { ?s <http://ex/p> ?o }', "q")
    pubs = (Publication(f"p{k}", [(f"<http://ex/s{k}>", "<http://ex/p>", '"x"')]) for k in range(200))
    try:
        for text, n, seconds in match_in_processes(engine, render, pubs, 2):
            sys.stdout.write(text.decode())
    except Exception as e:
        print(type(e).__name__, e, file=sys.stderr)
        sys.exit(3)
""")


def test_rtf_match_workers_stops_when_a_worker_is_killed():
    result = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60)
    assert result.returncode == 3, result.stderr[-2000:]
    assert "WorkerLostError" in result.stderr and "ended abruptly" in result.stderr
    # The publications before the lost batch were written, in order, and none after it.
    lines = result.stdout.split()
    assert lines == [f"p{k}" for k in range(len(lines))] and len(lines) < 37


def _fails_on_three(n: int) -> int:
    if n == 3:
        raise KeyError(f"no {n}")
    return n


def test_a_task_error_is_raised_as_it_is_in_turn_and_a_fallback_takes_its_place():
    assert _results_before(KeyError, "no 3", _fails_on_three, 10) == [0, 1, 2]
    with forked_pool(2) as pool:
        out = list(pool.ordered_map(_fails_on_three, range(6), 4, fallback=lambda n: -n))
    assert out == [(0, 0), (1, 1), (2, 2), (3, -3), (4, 4), (5, 5)]


def _huge_then_killed(n: int) -> bytes:
    """A result of 64 MB, while a thread kills the worker (mostly while it writes it)."""
    import threading
    threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGKILL)).start()
    return bytes(64 << 20)


def test_a_worker_killed_while_writing_a_large_result_never_hangs():
    with forked_pool(2) as pool:
        with pytest.raises(WorkerLostError):
            list(pool.ordered_map(_huge_then_killed, range(4), 2))


INTERRUPTED = textwrap.dedent("""
    import signal, sys, time
    # As a command started in a terminal's foreground: SIGINT at its default. A test run
    # started in the background of a non-interactive shell (`pytest ... &`) ignores SIGINT,
    # every child inherits that and Python keeps an ignored SIGINT ignored: the Ctrl-C below
    # then reached nobody and this test hung (in full CI runs only: those were started so).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from rtf import Engine
    from rtf.cli.match import match_in_processes
    from rtf.io.publication import Publication

    def render(pub, found):
        time.sleep(0.005)
        return (pub.id + "\\n").encode()

    engine = Engine()
    engine.register('SELECT ?s WHERE { ?s <http://ex/p> ?o }', "q")
    pubs = (Publication(f"p{k}", [(f"<http://ex/s{k}>", "<http://ex/p>", '"x"')]) for k in range(100000))
    try:
        for n, (text, _, _) in enumerate(match_in_processes(engine, render, pubs, 2)):
            if n == 100:
                print("started", flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        sys.exit(130)
""")


def test_ctrl_c_stops_the_workers_at_once_without_tracebacks():
    # Ctrl-C reaches the whole process group: before, the pool's workers each
    # printed a traceback and the command waited for them (30 s and more here).
    proc = subprocess.Popen([sys.executable, "-c", INTERRUPTED], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert proc.stdout.readline().strip() == "started"
        os.killpg(proc.pid, signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=120)  # (a bound on a hang, not a speed)
        except subprocess.TimeoutExpired:
            pytest.fail("the interrupted command did not end in 120 s")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130 and out.strip() == "interrupted", err[-2000:]
    assert "Traceback" not in err, err[-2000:]
