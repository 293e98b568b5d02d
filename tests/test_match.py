"""`Match`: an immutable record that unpacks to (query id, subscriber, bindings)."""

from __future__ import annotations

import pickle

from rtf import Engine, Publication
from rtf.engine import Match

SOLS = frozenset({(("s", "<http://ex/b>"),), (("s", "<http://ex/a>"),)})


def test_fields_and_bindings_in_sorted_order():
    m = Match("q", "alice", SOLS)
    assert (m.query_id, m.subscriber, m.solutions, m.is_ask, m.truncated) == ("q", "alice", SOLS, False, False)
    assert m.bindings == [{"s": "<http://ex/a>"}, {"s": "<http://ex/b>"}]


def test_unpacks_to_query_subscriber_bindings():
    qid, subscriber, bindings = Match("q", None, SOLS)
    assert (qid, subscriber, bindings) == ("q", None, [{"s": "<http://ex/a>"}, {"s": "<http://ex/b>"}])


def test_ask_has_no_bindings():
    assert Match("q", None, frozenset({()}), is_ask=True).bindings == []


def test_equality_and_hash_follow_all_five_fields():
    a, b = Match("q", "u", SOLS), Match("q", "u", SOLS)
    assert a == b and hash(a) == hash(b)
    assert a != Match("q", "u", SOLS, truncated=True)
    assert a != Match("q", "v", SOLS)


def test_pickles_to_an_equal_match():
    m = Match("q", "u", SOLS, False, True)
    again = pickle.loads(pickle.dumps(m))
    assert again == m and type(again) is Match and again.truncated


def test_engine_builds_the_same_matches_as_the_constructor():
    e = Engine("rtfs")
    e.register('SELECT ?s WHERE { ?s <http://ex/p> ?o }', "q1", "alice")
    e.register('ASK { ?s <http://ex/p> ?o }', "q2")
    pub = Publication("http://ex/a", [("<http://ex/a>", "<http://ex/p>", '"x"')])
    assert e.match(pub) == [Match("q1", "alice", frozenset({(("s", "<http://ex/a>"),)})),
                            Match("q2", None, frozenset({()}), is_ask=True)]
    assert all(type(m) is Match for m in e.match(pub))


def test_match_leaves_the_garbage_collector_as_it_found_it():
    import gc

    import pytest

    e = Engine("rtfs")
    e.register('SELECT ?s WHERE { ?s <http://ex/p> ?o }', "q1")
    pub = Publication("http://ex/a", [("<http://ex/a>", "<http://ex/p>", '"x"')])
    assert gc.isenabled()
    e.match(pub)
    assert gc.isenabled()
    with pytest.raises(TypeError):
        e.match(None)
    assert gc.isenabled()
    gc.disable()
    try:
        e.match(pub)
        assert not gc.isenabled()
    finally:
        gc.enable()
