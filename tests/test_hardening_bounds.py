"""Engine bounds that other layers trust (issue 21 item 6).

`Engine(max_solutions=N)` refuses an N its joins cannot use (it raised
ValueError from `islice` in `match`), and `Engine.stats()` walks the index
under the engine's lock (iBroker's raised "dictionary changed size" while
another thread registered).
"""

from __future__ import annotations

import sys
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rtf.engine import ALGORITHMS, MAX_SOLUTIONS_BOUND, Engine

EX = "http://ex/"
JOIN = f"SELECT ?s ?o ?x WHERE {{ ?s <{EX}p> ?o . ?s <{EX}q> ?x }}"
PUB = [(f"<{EX}s>", f"<{EX}p>", f'"{i}"') for i in range(3)] + [(f"<{EX}s>", f"<{EX}q>", '"x"')]


def test_a_cap_past_the_bound_is_refused_at_construction():
    """The issue's probe: Engine(max_solutions=10**18), then match raised ValueError."""
    with pytest.raises(ValueError, match=f"max_solutions must be from 1 to {MAX_SOLUTIONS_BOUND:_}"):
        Engine("rtfs", max_solutions=10**18)


@settings(max_examples=40, deadline=None)
@given(cap=st.one_of(st.integers(-5, 5), st.integers(1, 2**70),
                     st.sampled_from([MAX_SOLUTIONS_BOUND, MAX_SOLUTIONS_BOUND + 1, sys.maxsize,
                                      sys.maxsize // 10 + 1])),
       algorithm=st.sampled_from(ALGORITHMS))
def test_fuzz_any_cap_is_refused_or_matches(cap, algorithm):
    """Every cap is refused at once, or every engine answers a join with it."""
    try:
        engine = Engine(algorithm, max_solutions=cap)
    except ValueError as e:
        assert not 1 <= cap <= MAX_SOLUTIONS_BOUND and "max_solutions" in str(e)
        return
    assert 1 <= cap <= MAX_SOLUTIONS_BOUND
    engine.register(JOIN, "j")
    (match,) = engine.match(PUB)
    assert len(match.solutions) == min(cap, 3) and match.truncated is (cap < 3)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_stats_while_another_thread_registers(algorithm):
    engine = Engine(algorithm)
    stop = threading.Event()
    errors: list[BaseException] = []

    def churn():
        i = 0
        while not stop.is_set():
            engine.register(f"ASK {{ ?s <{EX}p{i}> ?o }}", f"q{i}")
            if i % 3 == 0:
                engine.unregister(f"q{i}")
            i += 1

    def read_stats():
        try:
            for _ in range(300):
                engine.stats()
        except BaseException as e:  # noqa: BLE001 - the test reports it
            errors.append(e)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        writer = threading.Thread(target=churn)
        readers = [threading.Thread(target=read_stats) for _ in range(2)]
        writer.start()
        for r in readers:
            r.start()
        for r in readers:
            r.join()
    finally:
        stop.set()
        writer.join()
        sys.setswitchinterval(interval)
    assert errors == []
    assert engine.stats()["queries"] == len(engine)
