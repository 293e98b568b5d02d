"""The result path: `Matches` (Engine.match's lazy sequence) and `match_lines`.

`Engine.match` returns parallel lists instead of one `Match` per match; it
must read exactly as the list of `Match` records did, and `rtf match`'s
writer (`match_lines`) must write exactly the lines of `match_line`, which
is itself exactly `json.dumps` (tests/test_cli.py).
"""

from __future__ import annotations

import json
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rtf import Engine, Publication
from rtf.engine import Match, RegisteredQuery
from rtf.io.output import match_line, match_lines
from rtf.matching.results import Matches
from rtf.query.model import Query

_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)
_solutions = st.frozensets(st.dictionaries(_text, _text, max_size=3).map(lambda d: tuple(d.items())),
                           max_size=3)
_QUERY = Query("SELECT", ("s",), False, (), (), ())
_ASK = Query("ASK", (), False, (), (), ())


@st.composite
def matches(draw):
    """Matches of distinct query ids in order, some sharing solutions, subscribers, ASK."""
    ids = sorted(draw(st.sets(_text.filter(bool), max_size=8)))
    pool = draw(st.lists(_solutions, min_size=1, max_size=3))
    subscribers = draw(st.lists(st.none() | _text, min_size=1, max_size=3))
    sols, registered = [], []
    for qid in ids:
        ask = draw(st.booleans())
        registered.append(RegisteredQuery(qid, _ASK if ask else _QUERY,
                                          draw(st.sampled_from(subscribers)), ask))
        sols.append(draw(st.sampled_from(pool)))
    truncated = frozenset(draw(st.sets(st.sampled_from(ids)))) if ids else frozenset()
    return Matches(ids, sols, registered, truncated, draw(st.booleans()) or any(
        r.is_ask for r in registered))


def as_list(m: Matches) -> list[Match]:
    return [Match(q, r.subscriber, s, r.is_ask, q in m.truncated)
            for q, s, r in zip(m.query_ids, m.solutions, m.registered)]


@settings(max_examples=300, deadline=None)
@given(pub=_text, found=matches())
def test_match_lines_are_the_lines_of_match_line(pub, found):
    expected = "".join(match_line(pub, m) + "\n" for m in as_list(found))
    assert match_lines(pub, found) == expected
    assert match_lines(pub, found) == expected  # again, from the caches


@settings(max_examples=200, deadline=None)
@given(found=matches())
def test_matches_read_as_the_list_of_match_records(found):
    expected = as_list(found)
    assert found == expected and expected == found
    assert len(found) == len(expected) and bool(found) == bool(expected)
    assert list(found) == expected and [found[i] for i in range(len(found))] == expected
    assert found[::-1] == expected[::-1]
    assert all(m in found for m in expected)
    assert found + [] == expected and [] + found == expected
    assert pickle.loads(pickle.dumps(found)) == expected
    assert repr(found) == repr(expected)


def test_matches_keep_what_matched_after_the_query_is_unregistered():
    engine = Engine("rtfs")
    engine.register('SELECT ?s WHERE { ?s <http://ex/p> ?o FILTER ftcontains(?o, "rio") }', "q1",
                    subscriber="alice")
    engine.register('ASK { ?s <http://ex/p> ?o }', "q0")
    pub = Publication("http://ex/a", [("<http://ex/a>", "<http://ex/p>", '"Games in Rio"')])
    found = engine.match(pub)
    engine.unregister("q1")
    assert [(m.query_id, m.subscriber, m.bindings) for m in found] == [
        ("q0", None, []), ("q1", "alice", [{"s": "<http://ex/a>"}])]
    lines = [json.loads(line) for line in match_lines(pub.id, found).splitlines()]
    assert lines == [{"publication": "http://ex/a", "query": "q0", "subscriber": None, "bindings": []},
                     {"publication": "http://ex/a", "query": "q1", "subscriber": "alice",
                      "bindings": [{"s": "<http://ex/a>"}]}]
    assert engine.match(pub) == [Match("q0", None, frozenset({()}), True)]


@pytest.mark.parametrize("algorithm", ["naive", "rtfs", "rtfm", "ibroker"])
def test_records_read_late_are_those_of_the_queries_that_matched(algorithm):
    """`Matches.registered` is read from the engine only when asked for: a list read after
    its queries were unregistered, and their ids taken by other queries, still gives the
    records that matched. Lists nobody holds any more are not kept by the engine."""
    engine = Engine(algorithm)
    star = 'SELECT ?s WHERE { ?s <http://ex/p> ?o }'
    joined = 'SELECT ?s ?t WHERE { ?s <http://ex/p> ?o . ?t <http://ex/q> ?o }'
    for qid, sub in (("a", "alice"), ("b", None), ("c", "carol")):
        engine.register(star, qid, subscriber=sub)
    engine.register(joined, "j", subscriber="jo")
    engine.register("ASK { ?s <http://ex/q> ?o }", "k")
    pub = Publication("http://ex/x", [("<http://ex/x>", "<http://ex/p>", "<http://ex/o>"),
                                      ("<http://ex/y>", "<http://ex/q>", "<http://ex/o>")])
    before = {qid: engine.get(qid) for qid in "abcjk"}
    first, second = engine.match(pub), engine.match(pub)
    gone = engine.match(pub)
    del gone
    assert len(engine._unsettled) == 2
    for qid in "acj":
        engine.unregister(qid)
    engine.register("ASK { ?s <http://ex/p> ?o }", "a", subscriber="mallory")
    engine.register(star, "c")
    for found in (first, second):
        assert found.query_ids == ["a", "b", "c", "j", "k"]
        assert all(r is before[q] for q, r in zip(found.query_ids, found.registered))
        assert [(m.subscriber, m.is_ask) for m in found] == [
            ("alice", False), (None, False), ("carol", False), ("jo", False), (None, True)]
    assert not engine._unsettled
    later = engine.match(pub)
    assert [(m.query_id, m.subscriber, m.is_ask) for m in later] == [
        ("a", "mallory", True), ("b", None, False), ("c", None, False), ("k", None, True)]
