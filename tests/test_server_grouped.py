"""Grouped events (rtf.server.events): a publication's matches for a subscriber as one
line, expanded back into exactly the `rtf match` lines, split at any id, stored in the
outbox next to an older rtf's rows, and read by the client (docs/server.md, "Grouped
events"). In process, a few hundred milliseconds."""

from __future__ import annotations

import json

import pytest

from rtf import Engine
from rtf.io.output import match_bytes
from rtf.io.reader import publications_from_bytes
from rtf.server import events
from rtf.server.client_stream import MatchesEvent
from rtf.server.events import (Chunk, _runs_one_by_one, expanded, grouped_lines, grouped_of,
                               grouped_runs, row_chunk, row_data)
from rtf.server.outbox import Outbox

P = "<http://ex.org/g/p>"


def _select(word: str, variables: str = "?s") -> str:
    return f'SELECT {variables} WHERE {{ ?s {P} ?t FILTER ftcontains(?t, "{word}") }}'


#: ids that JSON escapes (a quote, a backslash, the separator of ids itself), one not
#: ASCII, subscribers with the same, and queries whose answers differ (ASK, CONSTRUCT,
#: another projection), interleaved in id order with those that share one.
QUERIES = [
    ("a1", _select("rio"), "alice"),
    ('a"2', _select("rio"), "alice"),
    ('a", "3', _select("games"), "alice"),
    ("a\\4", _select("rio"), 'bob "b"'),
    ("a5", f'ASK {{ ?s {P} ?t FILTER ftcontains(?t, "rio") }}', "alice"),
    ("a6", _select("rio"), "alice"),
    ("a7", _select("rio", "?s ?t"), "alice"),
    ("a8", f'CONSTRUCT {{ ?s <http://ex.org/g/q> ?t }} WHERE {{ ?s {P} ?t FILTER ftcontains(?t, "rio") }}',
     "carol"),
    ("é9", _select("rio"), None),
    ("b10", _select("rio"), "dave"),
    ("b11", _select("rio"), 'bob "b"'),
]
RDF = (f'<http://ex.org/g/Río> {P} "Rio games" .\n<http://ex.org/g/x> {P} "rio" .\n'
       f'<http://ex.org/g/y> {P} "nothing" .\n').encode()


@pytest.fixture(scope="module")
def engine_and_pubs():
    engine = Engine()
    for qid, text, subscriber in QUERIES:
        engine.register(text, qid, subscriber)
    return engine, publications_from_bytes(RDF, "nt")


def _per_subscriber(runs):
    out: dict = {}
    for subscriber, n, line in runs:
        out.setdefault(subscriber, []).append((n, line))
    return out


@pytest.mark.parametrize("one_answer", [False, True])
def test_grouped_lines_expand_to_the_match_lines(engine_and_pubs, one_answer):
    """Each subscriber's grouped lines expand to its `rtf match` lines, byte for byte and in
    order; each is the JSON of its matches; consecutive matches with one answer share a
    line. With every answer alike the query table's columns give the ids (no step per match),
    and the lines are those made match by match."""
    engine, pubs = engine_and_pubs
    if one_answer:  # the queries that share the subject's answer
        engine = Engine()
        for qid, text, subscriber in QUERIES:
            if "SELECT ?s WHERE" in text:
                engine.register(text, qid, subscriber)
    for pub in pubs:
        found = engine.match(pub)
        for _ in range(2):  # (the columns are made once about as many ids were read as lists)
            runs = grouped_runs(pub.id, found)
        assert (found.id_columns() is not None) == one_answer or not found
        lines = match_bytes(pub.id, found).split(b"\n")[:-1]
        by_subscriber = _per_subscriber(runs)
        assert sum(n for _, n, _ in runs) == len(found)
        for subscriber, mine in by_subscriber.items():
            want = [line for line in lines if json.loads(line)["subscriber"] == subscriber]
            assert expanded([line for _, line in mine]) == want
            for n, line in mine:
                group = json.loads(line)
                assert list(group) == ["publication", "subscriber", "queries",
                                       "triples" if subscriber == "carol" else "bindings"]
                assert len(group["queries"]) == n and group["subscriber"] == subscriber
                assert line.decode() == json.dumps(group, ensure_ascii=False)
        slow = _per_subscriber(_runs_one_by_one(b'{"publication": ' + json.dumps(
            pub.id, ensure_ascii=False).encode(), found))
        assert slow == by_subscriber
    if not one_answer:  # alice's rio, rio, ASK, rio, other projection: 4 runs
        found = engine.match(pubs[1])
        assert [n for n, _ in _per_subscriber(grouped_runs(pubs[1].id, found))["alice"]] == [2, 1, 1, 1]


@pytest.mark.parametrize("one_answer, long_ids, keys", [
    (False, False, None), (True, False, None), (True, True, None), (True, False, 8), (True, False, 2)])
def test_the_grouped_lines_of_many_publications_are_each_ones_in_turn(engine_and_pubs, monkeypatch,
                                                                      one_answer, long_ids, keys):
    """`grouped_lines` of a request's publications (their ids gathered at once when every
    match of each shares one answer; else publication by publication, the two ways
    interleaved) are each publication's `grouped_runs`, in order: the same lines, each
    publication's subscribers in the same order. Also with ids too long for the
    fixed-width column of ids (an Arrow one), and with more subscribers than one sort
    takes for all the publications (`keys`: a few publications at a time, or one at a
    time sorted by a wider key)."""
    if keys is not None:
        monkeypatch.setattr(events, "_KEYS", keys)
    engine, pubs = engine_and_pubs
    if one_answer:
        engine = Engine()
        for qid, text, subscriber in QUERIES:
            if "SELECT ?s WHERE" in text:
                engine.register(text, qid + ("x" * 120 if long_ids and qid != "a1" else ""), subscriber)
    # the usual publications several times in a row, and the one without a match between
    pubs = [pubs[0], pubs[1], pubs[2], pubs[1], pubs[0]]
    found = [(pub.id, engine.match(pub)) for pub in pubs]
    for _ in range(3):  # (the columns are made once about as many ids were read as lists)
        got = grouped_lines(found)
    assert (found[0][1].id_columns() is not None) == one_answer
    want = [run for pub_id, matches in found for run in grouped_runs(pub_id, matches)]
    assert got == want
    slow = [run for pub_id, matches in found for run in _runs_one_by_one(
        b'{"publication": ' + json.dumps(pub_id, ensure_ascii=False).encode(), matches)]
    assert sorted(got, key=repr) == sorted(slow, key=repr) and len(got) > len(pubs)


def test_a_grouped_chunk_splits_at_every_id(engine_and_pubs):
    engine, pubs = engine_and_pubs
    runs = [r for pub in pubs for r in grouped_runs(pub.id, engine.match(pub)) if r[0] == "alice"]
    counts, lines = [n for _, n, _ in runs], [line for _, _, line in runs]
    chunk = Chunk(10, counts, lines)
    singles = expanded(lines)
    assert chunk.size == len(singles) == sum(counts) and chunk.last_id == 9 + len(singles)
    assert chunk.data == Chunk(10, None, singles).data
    ids = _ids(chunk.grouped)
    assert ids == [9 + sum(counts[:k + 1]) for k in range(len(counts))]
    for after in range(9, chunk.last_id + 1):
        part = chunk.after(after)
        if after == chunk.last_id:
            assert part is None
            continue
        assert part.first_id == after + 1 and part.match_lines() == singles[after - 9:]
        # a split group holds the rest of its queries; its id is still its last match's
        assert _ids(part.grouped) == [i for i in ids if i > after]
        assert row_chunk(part.first_id, row_data(part.counts, part.lines)).match_lines() == \
            part.match_lines()


def _ids(sse: bytes) -> list[int]:
    return [int(line[4:]) for line in sse.split(b"\n") if line.startswith(b"id: ")]


def test_the_outbox_keeps_grouped_rows_and_older_rows_alike(tmp_path, engine_and_pubs):
    engine, pubs = engine_and_pubs
    found = engine.match(pubs[0])
    alice = [(n, line) for s, n, line in grouped_runs(pubs[0].id, found) if s == "alice"]
    singles = expanded([line for _, line in alice])
    box = Outbox(tmp_path)
    try:
        # a new outbox has pages of 64 KiB (a commit writes a WAL frame per page)
        assert box._db.execute("PRAGMA page_size").fetchone() == (65536,)
        box.append([("alice", [line.decode() for line in singles])])  # an older rtf's row (text)
        box.append([("alice", ([n for n, _ in alice], [line for _, line in alice]))])
        every = singles + singles
        assert [line for _, line in box.since("alice", 0, 100)] == [x.decode() for x in every]
        for after in range(len(every)):
            chunks = box.chunks_since("alice", after, 100)
            assert [x for c in chunks for x in c.match_lines()] == every[after:]
            groups = [json.loads(line.split(b"data: ", 1)[1]) for c in chunks
                      for line in c.grouped.split(b"\n\n") if line]
            assert [q for g in groups for q in g["queries"]] == [
                json.loads(x)["query"] for x in every[after:]]
        for single in singles:  # an older row's line as a grouped line of one
            m = json.loads(single)
            assert grouped_of(single).decode() == json.dumps(
                {"publication": m["publication"], "subscriber": m["subscriber"],
                 "queries": [m["query"]], "bindings": m["bindings"]}, ensure_ascii=False)
    finally:
        box.close()


def test_the_client_lists_a_grouped_events_matches():
    event = MatchesEvent(12, {"publication": "p", "subscriber": "a", "queries": ["q1", "q2"],
                              "bindings": []})
    assert event.first_id == 11
    assert [(m.id, m.match) for m in event.matches] == [
        (11, {"publication": "p", "query": "q1", "subscriber": "a", "bindings": []}),
        (12, {"publication": "p", "query": "q2", "subscriber": "a", "bindings": []})]


def test_a_grouped_stream_is_bounded_in_events_not_matches():
    import asyncio

    from rtf.server.metrics import Metrics
    from rtf.server.streams import Hub

    async def run():
        hub = Hub(Metrics(), queue_size=3)
        hub.bind(asyncio.get_running_loop())
        single, grouped = hub.open("a"), hub.open("a", grouped=True)
        line = b'{"publication": "p", "subscriber": "a", "queries": ["q1", "q2", "q3", "q4"], "bindings": []}'
        hub.deliver([("a", Chunk(1, [4], [line]))])  # 4 matches, one grouped event
        assert single.cut and not grouped.cut
        [chunk] = await grouped.next_chunks()
        assert _ids(chunk.sse(True)) == [4] and _ids(chunk.sse(False)) == [1, 2, 3, 4]
    asyncio.run(run())
