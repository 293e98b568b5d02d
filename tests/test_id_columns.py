"""Match lists that carry slots: `Engine.match` keeps the matches' slots and their query table,
the ids and subscribers are made as lists only when read, and the writers of ``rtf match``
take them from the table's columns (`rtf.matching.id_column`) by slot.

What is checked: the lists read exactly as before (same ids, same order, same records) also
when a query was unregistered and its slot given to another after the match; the ids,
Arrow and JSON Lines writers, reading the columns, write what they write from the lists,
for any ids (quotes, backslashes, controls, non-ASCII, long ones); the columns are made
again after the query set changes; and those writers never make the lists.
"""

from __future__ import annotations

import io
import json

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rtf import Engine, Publication
from rtf.io.arrow_matches import MatchRows, row_line
from rtf.io.output import match_bytes, match_ids_bytes, match_line
from rtf.matching.id_column import MAX_FIXED_WIDTH

STAR = 'SELECT ?s WHERE {{ ?s <http://ex/p> "{}" }}'
PUB = Publication("http://ex/x", [("<http://ex/x>", "<http://ex/p>", '"a"')])
OTHER = Publication("http://ex/y", [("<http://ex/y>", "<http://ex/p>", '"b"')])
ALGORITHMS = ("rtfs", "rtfm", "ibroker")  # (the naive engine lists ids: it has no slots)

#: Ids as users write them, and ids that JSON escapes (quotes, backslashes, controls, a
#: newline), non-ASCII, long ones (past the fixed-width rows); no lone surrogate (no UTF-8).
_ids = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12) | st.sampled_from(
    ['say "hi"', "back\\slash", "tab\there", "new\nline", "\x00nul", "é", "日本", "x" * (MAX_FIXED_WIDTH + 5)])


def _expected_lines(pub_id: str, found) -> bytes:
    return "".join(match_line(pub_id, m) + "\n" for m in list(found)).encode()


def _lists_of(found) -> list:
    """What a list-made copy of `found` reads as: its `Match` records."""
    return [(m.query_id, m.subscriber, m.solutions, m.is_ask, m.truncated) for m in found]


def _rows(pub_id: str, found) -> list[dict]:
    rows = MatchRows()
    rows.add(pub_id, found)
    return rows.flush().to_pylist()


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_a_kept_list_keeps_its_ids_when_its_slot_goes_to_another_query(algorithm):
    engine = Engine(algorithm)
    for qid, sub in (("a", "ann"), ("b", None), ("c", "cy")):
        engine.register(STAR.format("a"), qid, subscriber=sub)
    engine.register(STAR.format("b"), "o")
    found = engine.match(PUB)
    assert found.slots is not None and found._query_ids is None  # (nothing read yet)
    expected_ids = b'{"publication": "http://ex/x", "queries": ["a", "b", "c"]}\n'
    engine.unregister("b")
    engine.register(STAR.format("a"), "zz", subscriber="zed")  # takes b's slot
    assert engine._index.table.slot_id.tolist().count("zz") == 1
    assert found.query_ids == ["a", "b", "c"] and found.subscribers == ["ann", None, "cy"]
    assert [m.query_id for m in found] == ["a", "b", "c"]
    assert match_ids_bytes(PUB.id, found) == expected_ids
    assert [r["query"] for r in _rows(PUB.id, found)] == ["a", "b", "c"]
    assert [r["subscriber"] for r in _rows(PUB.id, found)] == ["ann", None, "cy"]
    again = engine.match(PUB)
    assert again.query_ids == ["a", "c", "zz"]
    assert match_ids_bytes(PUB.id, again) == b'{"publication": "http://ex/x", "queries": ["a", "c", "zz"]}\n'


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_a_list_read_by_the_writers_first_and_then_settled_reads_the_same(algorithm):
    engine = Engine(algorithm)
    for qid in ("q2", "q1", "q3"):
        engine.register(STAR.format("a"), qid, subscriber=qid.upper())
    found = engine.match(PUB)
    written = (match_ids_bytes(PUB.id, found), match_bytes(PUB.id, found), _rows(PUB.id, found))
    assert found.id_columns() is not None  # (the columns were read)
    engine.unregister("q2")
    assert found.id_columns() is None  # settled: its lists from now on
    assert (match_ids_bytes(PUB.id, found), match_bytes(PUB.id, found), _rows(PUB.id, found)) == written
    assert found.query_ids == ["q1", "q2", "q3"] and found.subscribers == ["Q1", "Q2", "Q3"]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_the_writers_take_the_ids_by_slot_without_making_the_lists(algorithm):
    engine = Engine(algorithm)
    for n in range(50):
        engine.register(STAR.format("a"), f"q{n}", subscriber=f"s{n % 3}")
    found = engine.match(PUB)
    ids, lines, rows = match_ids_bytes(PUB.id, found), match_bytes(PUB.id, found), _rows(PUB.id, found)
    assert found._query_ids is None and found._subscribers is None  # no list made
    assert ids == (json.dumps({"publication": PUB.id, "queries": sorted(f"q{n}" for n in range(50))})
                   + "\n").encode()
    assert lines == _expected_lines(PUB.id, found)
    assert "".join(row_line(r) + "\n" for r in rows).encode() == lines


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_the_columns_follow_registrations_and_removals(algorithm):
    engine = Engine(algorithm)
    expected: dict[str, str | None] = {}
    for step in range(12):
        qid = f"r{step}"
        engine.register(STAR.format("a"), qid, subscriber=None if step % 2 else f"u{step}")
        expected[qid] = None if step % 2 else f"u{step}"
        if step % 3 == 2:
            gone = sorted(expected)[step % len(expected)]
            engine.unregister(gone)
            del expected[gone]
        for _ in range(3):  # (enough reads to make the columns again)
            found = engine.match(PUB)
            assert match_ids_bytes(PUB.id, found) == (json.dumps(
                {"publication": PUB.id, "queries": sorted(expected)}) + "\n").encode()
            assert match_bytes(PUB.id, found) == _expected_lines(PUB.id, found)
            assert [(r["query"], r["subscriber"]) for r in _rows(PUB.id, found)] == sorted(expected.items())
    assert engine._index.table.id_column.built is not None


@settings(max_examples=150, deadline=None)
@given(ids=st.lists(_ids.filter(lambda qid: qid != "other"), min_size=1, max_size=8, unique=True),
       subscribers=st.lists(st.none() | _ids, min_size=1, max_size=3),
       pub_id=st.sampled_from(["http://ex/x", "http://ex/é", 'http://ex/"q"']),
       algorithm=st.sampled_from(ALGORITHMS))
def test_every_writer_reads_the_columns_as_the_lists_say(ids, subscribers, pub_id, algorithm):
    """Ids and subscribers JSON escapes, non-ASCII, too long for fixed-width rows: the ids,
    JSON Lines and Arrow writers, taking them by slot, write exactly what they write from
    the same matches as lists (`json.dumps` for the ids line)."""
    engine = Engine(algorithm)
    for n, qid in enumerate(ids):
        engine.register(STAR.format("a"), qid, subscriber=subscribers[n % len(subscribers)])
    engine.register(STAR.format("b"), "other")
    pub = Publication(pub_id, PUB.triples)
    found = engine.match(pub)
    for _ in range(len(ids) + 1):  # (made once as many ids were read as are registered)
        columns = found.id_columns()
    assert columns is not None
    as_lists = list(found)  # (a plain list: the writers read its Match records)
    assert found._query_ids is not None  # (read now)
    found = engine.match(pub)
    assert match_ids_bytes(pub_id, found) == (json.dumps(
        {"publication": pub_id, "queries": sorted(ids)}, ensure_ascii=False) + "\n").encode()
    assert match_bytes(pub_id, found) == _expected_lines(pub_id, as_lists)
    assert _rows(pub_id, found) == _rows(pub_id, as_lists)
    assert found._query_ids is None  # (the writers took the ids by slot)
    assert _lists_of(found) == _lists_of(as_lists)


def test_an_id_without_utf8_among_the_queries_leaves_the_writers_to_the_lists():
    engine = Engine("rtfs")
    engine.register(STAR.format("b"), "q\ud800")
    for qid in ("a", "b"):
        engine.register(STAR.format("a"), qid)
    found = engine.match(PUB)
    assert match_ids_bytes(PUB.id, found) == b'{"publication": "http://ex/x", "queries": ["a", "b"]}\n'
    assert match_bytes(PUB.id, found) == _expected_lines(PUB.id, found)
    assert [r["query"] for r in _rows(PUB.id, found)] == ["a", "b"]
    with pytest.raises(UnicodeEncodeError):  # (as it was: that query's own id has no UTF-8)
        match_ids_bytes(OTHER.id, engine.match(OTHER))


def test_a_pickled_engine_makes_its_own_columns():
    import pickle

    engine = Engine("rtfs")
    for qid in ("a", "b"):
        engine.register(STAR.format("a"), qid)
    match_ids_bytes(PUB.id, engine.match(PUB))
    copy = pickle.loads(pickle.dumps(engine))
    assert copy._index.table.id_column.built is None
    assert match_ids_bytes(PUB.id, copy.match(PUB)) == match_ids_bytes(PUB.id, engine.match(PUB))
    out = io.BytesIO()
    with pa.ipc.new_stream(out, pa.schema([("x", pa.int8())])):
        pass  # (pyarrow is there: the Arrow rows above were made from the columns)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_an_ask_query_is_told_by_slot(algorithm):
    """With ASK queries registered, a publication that matches none is written without its
    records or lists; one that matches one is written as its lists say."""
    engine = Engine(algorithm)
    for n in range(20):
        engine.register(STAR.format("a"), f"q{n:02}", subscriber="s")
    engine.register('ASK { ?s <http://ex/p> "b" }', "ask")
    for _ in range(3):  # (the columns made by the second)
        found = engine.match(PUB)
        ids, lines, rows = match_ids_bytes(PUB.id, found), match_bytes(PUB.id, found), _rows(PUB.id, found)
    assert not found.has_ask()
    assert found._registered is None and found._query_ids is None
    assert lines == _expected_lines(PUB.id, found)
    engine.register(STAR.format("b"), "q99")
    for _ in range(3):
        both = engine.match(OTHER)
        assert both.has_ask()
        assert both._registered is None  # (told by slot)
        lines = match_bytes(OTHER.id, both)
        assert lines == _expected_lines(OTHER.id, list(both))
        assert "".join(row_line(r) + "\n" for r in _rows(OTHER.id, both)).encode() == lines
