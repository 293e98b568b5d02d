"""`Engine.register_many`: a batch registered as `register` would, one by one, or not at all."""

from __future__ import annotations

import gc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rtf import Engine, QueryError
from rtf.engine import ALGORITHMS
from tests import worlds

P = "<http://ex/p>"
GOOD = [f'SELECT ?s WHERE {{ ?s {P} ?o FILTER ftcontains(?o, "w{i}") }}' for i in range(5)]


def test_a_batch_answers_as_queries_registered_one_by_one():
    one, many = Engine("rtfs"), Engine("rtfs")
    for i, text in enumerate(GOOD):
        one.register(text, f"q{i}", "alice", {"n": i})
    assert many.register_many((text, f"q{i}", "alice", {"n": i}) for i, text in enumerate(GOOD)) == [
        f"q{i}" for i in range(5)]
    assert [(rq.id, rq.query, rq.subscriber, rq.metadata) for rq in many.queries()] == [
        (rq.id, rq.query, rq.subscriber, rq.metadata) for rq in one.queries()]
    assert many.to_bytes() == one.to_bytes()


def test_records_may_leave_out_id_subscriber_and_metadata():
    engine = Engine()
    assert engine.register_many([(GOOD[0],), (GOOD[1], None), (GOOD[2], "x", None, None)]) == [
        "q1", "q2", "x"]


@pytest.mark.parametrize("bad, error", [
    ((f"SELECT ?s WHERE {{ ?s {P} ?o", "b"), QueryError),
    ((GOOD[0], "q1"), ValueError),                 # an id taken in the same batch
    ((GOOD[0], "b", 7), TypeError),                # a subscriber that is not a str
    ((GOOD[0], "b", None, {"x": object()}), TypeError),
])
def test_the_first_refused_record_undoes_the_whole_batch(bad, error):
    engine = Engine()
    engine.register(GOOD[4], "kept")
    with pytest.raises(error):
        engine.register_many([(GOOD[0], "q1"), (GOOD[1], "q2"), bad, (GOOD[3], "q3")])
    assert [rq.id for rq in engine.queries()] == ["kept"]
    assert len(engine.match([("<http://ex/a>", P, '"w1 w4"')])) == 1


def test_with_on_error_a_refused_record_is_reported_and_left_out():
    engine = Engine()
    seen = []
    ids = engine.register_many([(GOOD[0], "a"), ("SELECT nonsense", "b"), (GOOD[1], "a"), (GOOD[2], "c")],
                               lambda position, record, e: seen.append((position, record[1], type(e))))
    assert ids == ["a", "c"]
    assert [(p, r, issubclass(t, QueryError)) for p, r, t in seen] == [(1, "b", True), (2, "a", False)]


def test_an_error_raised_by_on_error_undoes_the_batch():
    engine = Engine()

    def stop(position, record, e):
        raise RuntimeError("stop")
    with pytest.raises(RuntimeError):
        engine.register_many([(GOOD[0], "a"), ("SELECT nonsense", "b")], stop)
    assert len(engine) == 0


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_left_as_it_was(enabled):
    (gc.enable if enabled else gc.disable)()
    try:
        Engine().register_many([(GOOD[0],)])
        with pytest.raises(QueryError):
            Engine().register_many([("nonsense",)])
        assert gc.isenabled() == enabled
    finally:
        gc.enable()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(worlds.queries(), min_size=1, max_size=8), pubs=st.lists(worlds.publications(),
                                                                                 min_size=1, max_size=3),
       algorithm=st.sampled_from(ALGORITHMS))
def test_a_batch_with_refused_records_matches_as_the_reference(texts, pubs, algorithm):
    engine = Engine(algorithm, taxonomy=worlds.taxonomy())
    engine.register_many([(t, f"q{i}") for i, t in enumerate(texts)], lambda *_: None)
    reference = Engine("naive", taxonomy=worlds.taxonomy())
    for i, t in enumerate(texts):
        try:
            reference.register(t, f"q{i}")
        except QueryError:
            pass
    assert [rq.id for rq in engine.queries()] == [rq.id for rq in reference.queries()]
    for pub in pubs:
        assert engine.match(pub) == reference.match(pub)
