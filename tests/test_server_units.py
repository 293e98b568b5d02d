"""The pieces of `rtf serve` in-process (docs/server.md): the query table and the
registry that keeps the engine equal to it, the outbox and its retention, the
tokens file, the body limit, the live streams, and the publish path.

Hypothesis drives the registry and the outbox through random sequences of
operations against plain models (a dict, a list), failing commits included.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sqlite3
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from rtf.io.output import match_line
from rtf.engine import Engine
from rtf.errors import PublicationError, QueryError
from rtf.io.reader import publications_from_bytes
from rtf.server import outbox as outbox_module
from rtf.server.app import create_app
from rtf.server.middleware import BodyLimit
from rtf.server.auth import ANYONE, Principal, Tokens, TokensFileError
from rtf.server.broker import Broker, BrokerConfig
from rtf.server.command import _listen
from rtf.server.metrics import Metrics
from rtf.server.outbox import Outbox
from rtf.server.publisher import Job
from rtf.server.querystore import PendingWrite, QueryStore
from rtf.server.registry import BulkRefusedError, NotOwnerError, Record, Registry
from rtf.server.streams import Chunk, Hub, sse_matches

EX = "http://ex.org/"
WORDS = ["rio", "games", "gold", "chess"]


def query(word: str | None, select: bool = False) -> str:
    ft = f' FILTER ftcontains(?t, "{word}")' if word else ""
    return f"{'SELECT ?s ?t WHERE' if select else 'ASK'} {{ ?s <{EX}title> ?t{ft} }}"


def body(*titles: str) -> bytes:
    return "".join(f'<{EX}p{i}> <{EX}title> "{t}" .\n' for i, t in enumerate(titles)).encode()


BODY = body("Olympic games in Rio", "gold", "chess and games", "nothing")


@contextmanager
def folder():
    with tempfile.TemporaryDirectory() as d:
        yield Path(d)


# ------------------------------------------------------------ QueryStore


def test_querystore_rows_pages_and_settings(tmp_path):
    store = QueryStore(tmp_path)
    for i in range(5):
        pending = store.begin_put(f"q{i}", query(None), "alice" if i % 2 else None,
                                  {"i": i} if i else None)
        assert not pending.replaced
        pending.commit()
    pending = store.begin_put("q1", query("rio"), "bob", None)  # replaced: a new seq, at the end
    assert pending.replaced and pending.old_subscriber == "alice"
    pending.commit()
    assert [r.id for r in store.all()] == ["q0", "q2", "q3", "q4", "q1"]
    first = store.page(limit=2)
    assert [r.id for r in first] == ["q0", "q2"]
    assert [r.id for r in store.page(after=first[-1].seq, limit=2)] == ["q3", "q4"]
    assert [r.id for r in store.page("alice")] == ["q3"]
    assert store.get("q1").as_json() == {"id": "q1", "subscriber": "bob", "query": query("rio"),
                                         "metadata": {}}
    assert store.get("q4").metadata == {"i": 4}
    assert store.versions() == {r.id: r.seq for r in store.all()}
    # a removal, and a write rolled back, leave what they should
    store.begin_delete("q2").commit()
    pending = store.begin_put("q0", "changed", None, None)
    pending.rollback()
    pending.rollback()  # twice is harmless
    gone = store.begin_delete("nope")
    assert not gone.replaced
    gone.rollback()
    assert store.get("q0").query == query(None) and store.get("q2") is None
    assert store.count() == 4
    store.set_setting("snapshot", "x")
    store.set_setting("snapshot", "y")
    assert store.setting("snapshot") == "y" and store.setting("other") is None
    store.close()
    again = QueryStore(tmp_path)  # on disk
    assert [r.id for r in again.all()] == ["q0", "q3", "q4", "q1"] and again.setting("snapshot") == "y"
    again.close()


def test_querystore_lock_is_released_after_a_failed_begin(tmp_path):
    store = QueryStore(tmp_path)
    with pytest.raises(sqlite3.Error):
        store.begin_put("q", None, None, None)  # NOT NULL query: the insert fails
    store.begin_put("q", query(None), None, None).commit()  # not deadlocked
    assert store.count() == 1
    store.close()


# -------------------------------------------------------------- Registry


class CommitFails(Exception):
    pass


_ops = st.lists(st.one_of(
    st.tuples(st.just("put"), st.integers(0, 5), st.sampled_from([None, *WORDS]),
              st.sampled_from([None, "alice", "bob"])),
    st.tuples(st.just("delete"), st.integers(0, 5)),
    st.tuples(st.just("put-fails"), st.integers(0, 5), st.sampled_from(WORDS)),
    st.tuples(st.just("delete-fails"), st.integers(0, 5)),
    st.tuples(st.just("bad-query"), st.integers(0, 5)),
    st.tuples(st.just("not-owner"), st.integers(0, 5)),
    st.tuples(st.just("snapshot"),),
    st.tuples(st.just("reopen"),),
    # many at once: (id, word or "BAD" for an invalid query, subscriber), atomic or not,
    # as admin or as bob's token (whose records are bob's, as the API makes them)
    st.tuples(st.just("put-many"), st.lists(st.tuples(
        st.integers(0, 5), st.sampled_from([None, "BAD", *WORDS]),
        st.sampled_from([None, "alice", "bob"])), max_size=5), st.booleans(), st.booleans()),
    st.tuples(st.just("put-many-fails"), st.lists(st.tuples(
        st.integers(0, 5), st.sampled_from(WORDS)), min_size=1, max_size=4, unique_by=lambda t: t[0])),
), max_size=25)


def _check(registry: Registry, model: dict):
    engine = registry.engine
    assert sorted(q.id for q in engine.queries()) == sorted(model)
    for qid, (text, subscriber) in model.items():
        row = registry.get(qid)
        assert (row.query, row.subscriber) == (text, subscriber)
        assert engine.get(qid).subscriber == subscriber
        assert engine.get(qid).query.text == text
    assert registry.store.count() == len(model)
    # and it answers as an engine holding the model's queries
    reference = Engine()
    for qid, (text, subscriber) in model.items():
        reference.register(text, qid, subscriber)
    pubs = publications_from_bytes(BODY, "nt")
    assert [(m.query_id, m.subscriber) for p in pubs for m in engine.match(p)] == [
        (m.query_id, m.subscriber) for p in pubs for m in reference.match(p)]


def _put_many(registry: Registry, model: dict, items, atomic: bool, owner: str | None) -> None:
    """`Registry.put_many` against the model: what each record should become."""
    records = [Record(n, f"q{i}", "ASK { ?s ?p }" if word == "BAD" else query(word),
                      owner if owner is not None else sub)
               for n, (i, word, sub) in enumerate(items, 1)]
    expected: dict[str, tuple[str, str | None]] = dict(model)
    outcomes: list = []
    seen: set[str] = set()
    for r, (_, word, _) in zip(records, items):
        if r.id in seen or word == "BAD":
            outcomes.append(QueryError)
        elif owner is not None and r.id in expected and expected[r.id][1] != owner:
            outcomes.append(NotOwnerError)
        else:
            outcomes.append("replaced" if r.id in expected else "created")
            expected[r.id] = (r.query, r.subscriber)
        seen.add(r.id)
    bad = [o for o in outcomes if not isinstance(o, str)]
    if atomic and bad:
        with pytest.raises(BulkRefusedError) as caught:
            registry.put_many(records, owner, atomic=True)
        first = next(r for r, o in zip(records, outcomes) if not isinstance(o, str))
        assert caught.value.record is first and isinstance(first.outcome, (QueryError, NotOwnerError))
        return  # nothing changed
    registry.put_many(records, owner, atomic)
    for r, o in zip(records, outcomes):
        assert r.outcome == o if isinstance(o, str) else isinstance(r.outcome, o), (r, o)
    model.clear()
    model.update(expected)


def test_a_row_that_cannot_be_written_undoes_the_whole_bulk_registration():
    """`put_many` registers a record in the engine before writing its row: a row that
    cannot be written (a full disk) takes back that record's registration (here the
    replacement of a query: the old one is back) and the records before it."""
    with folder() as d:
        registry = Registry(d)
        registry.put("a", query("rio"), "alice")
        real_put, calls = PendingWrite.put, []

        def put(self, *args, **kwargs):
            calls.append(args[0])
            if len(calls) == 2:
                raise sqlite3.OperationalError("database or disk is full")
            return real_put(self, *args, **kwargs)

        records = [Record(1, "b", query("games"), "bob"), Record(2, "a", query("x", select=True), "carol"),
                   Record(3, "c", query("rio"), None)]
        with mock.patch.object(PendingWrite, "put", put):
            with pytest.raises(sqlite3.OperationalError):
                registry.put_many(records, atomic=False)
        assert calls == ["b", "a"]
        _check(registry, {"a": (query("rio"), "alice")})
        registry.close()


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(_ops)
def test_registry_follows_a_dict_model(ops):
    with folder() as d:
        registry = Registry(d)
        model: dict[str, tuple[str, str | None]] = {}
        for op in ops:
            kind, args = op[0], op[1:]
            qid = f"q{args[0]}" if args else None
            if kind == "put":
                _, word, subscriber = args
                created = registry.put(qid, query(word), subscriber, {"w": word})
                assert created == (qid not in model)
                model[qid] = (query(word), subscriber)
            elif kind == "delete":
                if qid in model:
                    registry.delete(qid)
                    del model[qid]
                else:
                    with pytest.raises(KeyError):
                        registry.delete(qid)
            elif kind in ("put-fails", "delete-fails"):
                with mock.patch.object(PendingWrite, "commit", side_effect=CommitFails):
                    with pytest.raises((CommitFails, KeyError)):
                        if kind == "put-fails":
                            registry.put(qid, query(args[1], select=True), "carol")
                        else:
                            registry.delete(qid)
            elif kind == "bad-query":
                with pytest.raises(QueryError):
                    registry.put(qid, "ASK { ?s ?p }", "alice")
            elif kind == "not-owner":
                if qid in model:  # nobody in the model is mallory
                    with pytest.raises(NotOwnerError):
                        registry.put(qid, query("x"), "mallory", owner="mallory")
                    with pytest.raises(NotOwnerError):
                        registry.delete(qid, owner="mallory")
            elif kind == "put-many":
                items, atomic, as_bob = args
                _put_many(registry, model, items, atomic, "bob" if as_bob else None)
            elif kind == "put-many-fails":
                records = [Record(n, f"q{i}", query(word, select=True), "carol")
                           for n, (i, word) in enumerate(args[0], 1)]
                with mock.patch.object(PendingWrite, "commit", side_effect=CommitFails):
                    with pytest.raises(CommitFails):
                        registry.put_many(records)
            elif kind == "snapshot":
                registry.snapshot()
                assert registry.changes_since_snapshot == 0
            elif kind == "reopen":
                registry.close()
                registry = Registry(d)
                assert registry.startup["failed"] == 0
            _check(registry, model)
        registry.close()
        again = Registry(d)  # a crash here: whatever the snapshot, the table wins
        _check(again, model)
        again.close()


def test_registry_snapshot_then_replay(tmp_path):
    registry = Registry(tmp_path)
    for i in range(6):
        registry.put(f"q{i}", query(WORDS[i % 4]), "alice")
    assert registry.changes_since_snapshot == 6
    registry.snapshot()
    registry.put("q0", query("gold"), "bob")   # replaced after the snapshot
    registry.delete("q1")                      # removed after it
    registry.put("q9", query(None), None)      # added after it
    registry.close()  # no snapshot at close: as after a crash
    again = Registry(tmp_path)
    assert again.startup == {"from": "snapshot", "replayed": 2, "removed": 2, "failed": 0,
                             "queries": 6}
    assert again.engine.get("q0").subscriber == "bob" and "q1" not in again.engine
    assert again.changes_since_snapshot == 4
    again.close()
    # another algorithm, or a snapshot whose writing never finished: rebuilt from the table
    other = Registry(tmp_path, algorithm="naive")
    assert other.startup["from"] == "rebuilt" and other.engine.algorithm == "naive"
    other.snapshot()
    other.store.set_setting("snapshot", "")  # as if the process died while writing it
    other.close()
    last = Registry(tmp_path, algorithm="naive")
    assert last.startup["from"] == "rebuilt" and len(last.engine) == 6
    last.close()


def test_a_snapshot_is_saved_by_a_forked_process_while_the_engine_goes_on(tmp_path, monkeypatch):
    """The engine is held only for the fork: a registration made while the snapshot is
    being written goes through at once, and is not in the file (the engine as it was at
    the fork), so the next start replays it."""
    registry = Registry(tmp_path)
    for i in range(4):
        registry.put(f"q{i}", query(WORDS[i % 4]), "alice")
    started, go = tmp_path / "started", tmp_path / "go"
    save = Engine.save

    def waiting_save(engine, path):  # (in the forked process) waits for the test's word
        started.touch()
        for _ in range(3000):
            if go.exists():
                break
            time.sleep(0.01)
        return save(engine, path)

    monkeypatch.setattr(Engine, "save", waiting_save)
    snapshot = threading.Thread(target=registry.snapshot)
    snapshot.start()
    for _ in range(3000):
        if started.exists():
            break
        time.sleep(0.01)
    change = threading.Thread(target=registry.put, args=("q9", query(None), None))
    change.start()
    change.join(10)
    waited = change.is_alive()  # (the engine held by the save)
    go.touch()
    snapshot.join()
    change.join()
    assert not waited
    assert len(registry.engine) == 5 and len(Engine.load(tmp_path / "snapshot.idx")) == 4
    registry.close()
    again = Registry(tmp_path)
    assert (again.startup["from"], again.startup["replayed"], len(again.engine)) == ("snapshot", 1, 5)
    again.close()


def test_a_snapshot_that_cannot_be_written_is_told_and_its_process_ends(tmp_path, monkeypatch):
    """A save that fails in the forked process (a full disk) raises its error here, and the
    process ends: it ignores stop signals only while it saves."""
    registry = Registry(tmp_path)
    registry.put("q0", query(WORDS[0]), "alice")

    def full(engine, path):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Engine, "save", full)
    errors: list = []

    def snapshot():
        try:
            registry.snapshot()
        except OSError as e:
            errors.append(e)

    attempt = threading.Thread(target=snapshot, daemon=True)
    attempt.start()
    attempt.join(60)
    assert not attempt.is_alive() and [e.errno for e in errors] == [28]
    registry.close()


def _sockets_open(_) -> int:
    """(In a forked process) how many of its file descriptors are sockets; a stop signal
    ends it again (`_keep` ignores it until the task is done, as `_save_kept` does)."""
    import signal
    import stat

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    return sum(stat.S_ISSOCK(os.fstat(int(fd)).st_mode) for fd in os.listdir("/proc/self/fd")
               if os.path.exists(f"/proc/self/fd/{fd}"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors in /proc")
def test_the_snapshot_process_holds_none_of_the_servers_sockets():
    """A snapshot's forked process closes the sockets it inherited: were the server killed
    while it saves, a server started again could not bind its port until it ended."""
    from rtf.io.processes import forked_pool
    from rtf.server.registry import _keep

    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen()
    try:
        with forked_pool(1, _keep, (Engine(),)) as saver:
            ((_, held),) = saver.ordered_map(_sockets_open, [None], 1)
        with forked_pool(1) as plain:  # (the same without `_keep`: the socket is inherited)
            ((_, inherited),) = plain.ordered_map(_sockets_open, [None], 1)
    finally:
        listening.close()
    assert held == 0 and inherited >= 1


def test_a_start_from_a_snapshot_or_an_import_decodes_no_query_model(tmp_path, monkeypatch):
    """Checking the snapshot's queries against the table, and importing an index, need
    each query's text, not its model: decoding every model took 85 s of a 1M server's
    restart and 116 s of its import."""
    from rtf.matching.restoring import Models

    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
    registry = Registry(tmp_path / "a")
    for i in range(6):
        registry.put(f"q{i}", query(WORDS[i % 4]), "alice")
    registry.snapshot()
    registry.put("q0", query("gold"), "bob")  # replaced after the snapshot
    registry.close()
    index = tmp_path / "q.idx"
    Engine.load(tmp_path / "a" / "snapshot.idx").save(index)
    decoded = []
    monkeypatch.setattr(Models, "query", lambda self, k: decoded.append(k))
    again = Registry(tmp_path / "a")
    assert again.startup == {"from": "snapshot", "replayed": 1, "removed": 1, "failed": 0,
                             "queries": 6}
    again.close()
    imported = Registry(tmp_path / "b", import_index=index)
    assert imported.startup["imported"] == 6
    assert [(r.id, r.query, r.subscriber) for r in imported.store.all()] == [
        (f"q{i}", query(WORDS[i % 4]), "alice") for i in range(6)]
    imported.close()
    assert decoded == []


def test_registry_row_that_no_longer_registers_is_skipped(tmp_path):
    registry = Registry(tmp_path)
    registry.put("good", query("rio"), None)
    registry.close()
    store = QueryStore(tmp_path)
    store.begin_put("old", "ASK { ?s ?p }", None, None).commit()  # as an older rtf might have
    store.close()
    again = Registry(tmp_path)
    assert again.startup["failed"] == 1 and list(again.engine.queries())[0].id == "good"
    again.close()


# ---------------------------------------------------------------- Outbox


_appends = st.lists(st.one_of(
    st.tuples(st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 999)),
                       max_size=12), st.booleans()),
    st.just("prune"), st.just("reopen")), max_size=20)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(_appends, st.integers(1, 8))
def test_outbox_follows_a_list_model(steps, max_events):
    """Appends of text lines (TEXT rows, as an older rtf wrote) and of UTF-8 lines
    (BLOB rows, as the publisher writes) mixed: read back as the same text."""
    with folder() as d:
        box = Outbox(d, max_events=max_events)
        appended: list[tuple[int, str, str]] = []
        for step in steps:
            if step == "prune":
                box.prune()
            elif step == "reopen":
                box.close()
                box = Outbox(d, max_events=max_events)
            else:
                # one append: each subscriber's lines, in the order they come
                step, utf8 = step
                groups: dict[str, list[str]] = {}
                for sub, n in step:
                    groups.setdefault(sub, []).append(f"{sub}-{n}-é")
                numbered = box.append([(sub, [line.encode() for line in lines]) if utf8
                                       else (sub, lines) for sub, lines in groups.items()])
                numbered = [(sub, first, [line.decode() for line in lines]) if utf8
                            else (sub, first, lines) for sub, first, lines in numbered]
                next_id = appended[-1][0] + 1 if appended else 1
                assert [(sub, lines) for sub, _, lines in numbered] == list(groups.items())
                for sub, first, lines in numbered:  # consecutive ids, group after group
                    assert first == next_id
                    appended += [(first + k, sub, line) for k, line in enumerate(lines)]
                    next_id += len(lines)
            assert box.last_id == (appended[-1][0] if appended else 0)
            for sub in "abc":
                mine = [(i, data) for i, s, data in appended if s == sub]
                kept = box.since(sub, 0, 10_000)
                # exactly the newest max_events are kept, after every append
                assert kept == mine[len(mine) - len(kept):]
                assert len(kept) == min(len(mine), max_events)
                dropped = mine[:len(mine) - len(kept)]
                assert box.pruned_through(sub) == (dropped[-1][0] if dropped else 0)
                for after in (0, *(i for i, _ in mine[::3])):
                    assert box.since(sub, after, 2) == [e for e in kept if e[0] > after][:2]
        assert box.count() == sum(len(box.since(s, 0, 10_000)) for s in "abc")
        box.close()


def test_outbox_retention_by_age_even_when_quiet(tmp_path):
    clock = mock.Mock()
    clock.time.return_value = 1000.0
    with mock.patch.object(outbox_module, "time", clock):
        box = Outbox(tmp_path, max_events=1000, max_age=100)
        box.append([("a", ["old-1"]), ("b", ["old-2"])])
        clock.time.return_value = 1050.0
        box.append([("a", ["mid"])])
        assert box.count() == 3
        clock.time.return_value = 1120.0  # 'old' is 120 s old, 'mid' 70 s; 120 s since a prune
        box.append([("a", ["new"])])
        assert [d for _, d in box.since("a", 0)] == ["mid", "new"]
        assert box.since("b", 0) == []
        assert box.pruned_through("a") == 1 and box.pruned_through("b") == 2
        box.close()


# ----------------------------------------------------------------- Tokens


def test_tokens_file_roles(tmp_path):
    f = tmp_path / "tokens"
    f.write_text("# who\n\n  admin-token-0123456789   admin  # the operator\n"
                 "pub-token-0123456789 publisher\nalice-token-0123456789 subscriber:alice\n"
                 "colon-token-0123456789 subscriber:a:b\n")
    tokens = Tokens.from_file(f)
    assert len(tokens) == 4
    admin = tokens.principal("admin-token-0123456789")
    publisher = tokens.principal("pub-token-0123456789")
    alice = tokens.principal("alice-token-0123456789")
    assert (admin, publisher, alice) == (Principal("admin"), Principal("publisher"),
                                         Principal("subscriber", "alice"))
    assert tokens.principal("subscriber:a:b") is None
    assert tokens.principal("colon-token-0123456789").subscriber == "a:b"
    assert tokens.principal("") is None and tokens.principal("admin") is None
    assert admin.is_admin and admin.may_publish() and admin.may_act_for("anyone")
    assert publisher.may_publish() and not publisher.may_act_for(None)
    assert not publisher.may_act_for("alice") and not alice.may_publish()
    assert alice.may_act_for("alice") and not alice.may_act_for("bob")
    assert not alice.may_act_for(None)
    assert str(alice) == "subscriber:alice" and str(publisher) == "publisher"
    assert ANYONE.is_admin


@pytest.mark.parametrize("text, says", [
    ("", "no tokens"),
    ("# only comments\n\n", "no tokens"),
    ("short admin\n", ":1: a token needs at least 16"),
    ("0123456789abcdef\n", ":1: expected 'TOKEN ROLE', got 1"),
    ("0123456789abcdef root\n", "unknown role 'root'"),
    ("0123456789abcdef subscriber:\n", "needs a subscriber name"),
    ("# x\n0123456789abcdef admin\n0123456789abcdef admin\n", ":3: this token is already listed"),
    (b"\xff\xfe", "cannot read the tokens file"),
])
def test_tokens_file_errors(tmp_path, text, says):
    f = tmp_path / "tokens"
    f.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(TokensFileError) as e:
        Tokens.from_file(f)
    assert says in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(TokensFileError, match="cannot read"):
        Tokens.from_file(tmp_path / "missing")


# --------------------------------------------------------------- BodyLimit


def _limited_app(limit: int):
    async def echo(request):
        data = await request.body()
        return JSONResponse({"bytes": len(data)})

    metrics = Metrics()
    app = BodyLimit(Starlette(routes=[Route("/", echo, methods=["POST"])]), limit, metrics)
    return app, metrics


@pytest.mark.parametrize("size, chunked, status", [
    (100, False, 200), (100, True, 200), (101, False, 413), (101, True, 413),
    (0, False, 200), (5000, True, 413), (5000, False, 413)])
def test_body_limit(size, chunked, status):
    app, metrics = _limited_app(100)
    data = b"x" * size

    async def pieces():
        for i in range(0, size, 7):
            yield data[i:i + 7]

    async def run():
        async with _asgi_client(app) as client:
            r = await client.post("/", content=pieces() if chunked else data)
            assert ("content-length" in r.request.headers) == (not chunked)
            assert r.status_code == status
            if status == 200:
                assert r.json() == {"bytes": size}
            else:
                assert "100 bytes" in r.json()["error"] and "--max-body" in r.json()["error"]
            assert metrics.bad_requests.labels("413")._value.get() == (status == 413)
            assert (await client.get("/")).status_code == 405  # others go through untouched

    asyncio.run(run())


def _asgi_client(app):
    """An httpx client calling `app` in-process (httpx comes with rtf.server.client's dependencies)."""
    httpx = pytest.importorskip("httpx")
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://rtf")


# ------------------------------------------------------------------ Hub


def _chunk(first: int, *lines: str) -> Chunk:
    return Chunk(first, None, [line.encode() for line in lines])


def test_sse_matches_and_chunk_slices():
    chunk = _chunk(7, '{"a": 1}', '{"b": 2}', '{"c": 3}')
    assert chunk.data == (b'id: 7\nevent: match\ndata: {"a": 1}\n\nid: 8\nevent: match\n'
                          b'data: {"b": 2}\n\nid: 9\nevent: match\ndata: {"c": 3}\n\n')
    utf8 = ['{"é": 1}'.encode(), b'{"b": 2}']  # UTF-8 lines (the publisher's) as text lines
    assert sse_matches(3, utf8) == sse_matches(3, [line.decode() for line in utf8]) == (
        'id: 3\nevent: match\ndata: {"é": 1}\n\nid: 4\nevent: match\ndata: {"b": 2}\n\n'
        .encode())
    assert sse_matches(5, []) == b""
    assert chunk.size == 3 and chunk.after(6) is chunk and chunk.after(9) is None
    assert chunk.after(7) == _chunk(8, '{"b": 2}', '{"c": 3}')
    assert chunk.after(8) == _chunk(9, '{"c": 3}')


def test_hub_delivers_cuts_and_closes():
    async def run():
        metrics = Metrics()
        hub = Hub(metrics, queue_size=3)
        hub.bind(asyncio.get_running_loop())
        a1, a2, b = hub.open("a"), hub.open("a"), hub.open("b")
        x, y, z = _chunk(1, "x"), _chunk(2, "y"), _chunk(3, "z")
        hub.deliver([("a", x), ("b", y), ("a", z)])
        assert await a1.next_chunks() == [x, z]  # all that waits, in order
        assert await b.next_chunks() == [y]
        w = _chunk(4, "w")
        hub.deliver_threadsafe([("a", w)])  # from the loop's thread too: in order
        assert await a1.next_chunks() == [w]
        hub.deliver([("a", _chunk(5, "1", "2"))])  # a2 holds 1, 3, 4: over 3 events, cut
        assert a2.cut and not a1.cut and await a2.next_chunks() is None
        assert metrics.streams_cut._value.get() == 1
        hub.close(a2)
        hub.close(a2)  # twice is harmless
        waiting = asyncio.ensure_future(b.next_chunks())
        await asyncio.sleep(0)
        hub.close_all()  # shutdown: streams end, not cut
        assert await waiting is None and b.closed and not b.cut
        late = hub.open("c")
        assert await late.next_chunks() is None and late.closed
        assert metrics.streams._value.get() == 3  # a1, b, late
    asyncio.run(run())


# ------------------------------------------------------------- publishing


def test_a_group_stores_each_subscriber_in_order_and_a_bad_job_fails_alone(tmp_path):
    """One group of three jobs, the middle one bad RDF: the other two are answered and
    their events stored, each subscriber's in the order of the jobs, ids consecutive."""
    broker = _broker(tmp_path)
    for qid, word, sub in (("rio", "rio", "alice"), ("games", "games", "bob"),
                           ("gold", "gold", "alice"), ("any", None, None)):
        broker.registry.put(qid, query(word), sub)
    pub = broker.publisher
    group = [Job(publications_from_bytes(body("rio", "games gold"), "nt")),
             Job(None, reader=lambda: broker.read(b"<a> <b> .", "nt")),
             Job(publications_from_bytes(body("gold games", "rio"), "nt"))]
    pub._store(pub._match(group))
    assert isinstance(group[1].sync_future.exception(), PublicationError)
    done = [group[0].sync_future.result(), group[2].sync_future.result()]
    lines = [json.loads(line) for d in done for line in d.text.splitlines()]
    # p0 "rio": rio, any; p1 "games gold": games, gold, any (a job: 5 matches, 3 pushed)
    assert [d.events for d in done] == [3, 3] and [d.matches for d in done] == [5, 5]
    reference = Engine()
    for q in broker.engine.queries():
        reference.register(q.query.text, q.id, q.subscriber)
    assert lines == [json.loads(match_line(p.id, m)) for b in (body("rio", "games gold"),
                                                              body("gold games", "rio"))
                     for p in publications_from_bytes(b, "nt") for m in reference.match(p)]
    for sub in ("alice", "bob"):
        stored = broker.outbox.since(sub, 0)
        assert [json.loads(line) for _, line in stored] == [x for x in lines if x["subscriber"] == sub]
        ids = [i for i, _ in stored]
        assert ids == list(range(ids[0], ids[0] + len(ids)))
    assert broker.outbox.last_id == 6
    broker.close()


def _broker(d: Path, **kw) -> Broker:
    return Broker(BrokerConfig(Path(d), **kw))


def test_publish_answers_rtf_match_lines_and_stores_subscriber_events(tmp_path):
    broker = _broker(tmp_path)
    queries = {"rio": (query("rio", True), "alice"), "games": (query("games"), "bob"),
               "any": (query(None, True), None), "gold": (query("gold"), "alice")}
    reference = Engine()
    for qid, (text, sub) in queries.items():
        broker.registry.put(qid, text, sub)
        reference.register(text, qid, sub)
    done = broker.publish(BODY, "nt")
    lines, n = done.text.splitlines(), done.publications
    expected = [match_line(p.id, m) for p in publications_from_bytes(BODY, "nt")
                for m in reference.match(p)]
    assert n == 4 and lines == expected and done.matches == len(lines)
    pushed = [line for line in lines if json.loads(line)["subscriber"]]
    assert [d for _, d in broker.outbox.since("alice", 0)] + [
        d for _, d in broker.outbox.since("bob", 0)] == sorted(
        pushed, key=lambda line: json.loads(line)["subscriber"])
    ids = [i for i, _ in broker.outbox.since("alice", 0)] + [i for i, _ in broker.outbox.since("bob", 0)]
    assert sorted(ids) == list(range(1, len(pushed) + 1))
    assert broker.metrics.publications._value.get() == 4
    assert broker.metrics.matches._value.get() == len(lines)
    assert broker.metrics.events._value.get() == len(pushed)
    # bad RDF: nothing is matched, stored or counted
    with pytest.raises(PublicationError):
        broker.publish(BODY + b"<a> <b> .\n", "nt")
    assert broker.outbox.last_id == len(pushed)
    assert broker.metrics.publications._value.get() == 4
    # a graph per publication
    nq = (f'<{EX}x> <{EX}title> "rio" <{EX}g> .\n<{EX}y> <{EX}title> "games" <{EX}g> .\n').encode()
    done = broker.publish(nq, "nq", "graph")
    lines, n = done.text.splitlines(), done.publications
    assert n == 1 and {json.loads(line)["publication"] for line in lines} == {f"{EX}g"}
    broker.close()
    assert (tmp_path / "snapshot.idx").exists()
    again = _broker(tmp_path)
    assert again.registry.startup["from"] == "snapshot" and again.outbox.last_id > len(pushed)
    again.close()


def test_app_in_process(tmp_path):
    """The routes without a server process: a quick check of the wiring."""
    broker = _broker(tmp_path)
    app = create_app(broker)

    async def run():
        async with app.router.lifespan_context(app), _asgi_client(app) as client:
            r = await client.put("/queries/a/b", json={"query": query("rio"), "subscriber": "s"})
            assert r.status_code == 201
            assert (await client.get("/queries/a/b")).json()["id"] == "a/b"  # ids hold slashes
            r = await client.post("/publications", content=BODY, headers={
                "Content-Type": "application/n-triples; charset=utf-8"})
            assert r.status_code == 200 and r.headers["X-RTF-Publications"] == "4"
            assert r.headers["X-RTF-Matches"] == "1"
            assert (await client.get("/health")).json()["last_event_id"] == 1
            assert (await client.get("/openapi.json")).status_code == 200

    asyncio.run(run())
    assert (tmp_path / "snapshot.idx").exists()  # written when the app stopped


# ------------------------------------------------------------------- socket


def test_listening_socket_gives_connections_tcp_nodelay():
    """asyncio sets TCP_NODELAY only on IPPROTO_TCP sockets: without it every response
    written in two sends waited for the client's delayed ACK (~40 ms)."""
    sock = _listen("127.0.0.1", 0)

    async def run():
        found = asyncio.get_running_loop().create_future()

        async def on_connect(reader, writer):
            s = writer.get_extra_info("socket")
            found.set_result(s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(on_connect, sock=sock)
        async with server:
            _, writer = await asyncio.open_connection(*sock.getsockname()[:2])
            value = await found
            writer.close()
        return value

    assert asyncio.run(run()) != 0


def test_queries_registered_over_http_are_frozen_like_those_of_the_start(monkeypatch):
    """A quarter of the index (at least FREEZE_EVERY) registered after start is moved out
    of the cyclic collector's sight, as the index is at start: full collections while
    publications stream no longer rescan it (measured: p99 publish-to-delivery 126 -> 52 ms
    at ~1,000 publications/s, docs/benchmarks.md)."""
    import gc

    from rtf.server import registry as registry_module

    monkeypatch.setattr(registry_module, "FREEZE_EVERY", 4)
    # Counted by calls: the frozen count itself falls whenever a frozen object of an
    # earlier test is freed, so comparing it made the test depend on the tests before it.
    freezes = []
    real_freeze = registry_module.freeze_long_lived
    monkeypatch.setattr(registry_module, "freeze_long_lived",
                        lambda: (freezes.append(1), real_freeze()))
    text = 'SELECT ?s WHERE { ?s <http://ex/p> ?o }'
    with folder() as d:
        registry = Registry(d)
        before = len(freezes)
        registry.put_many([Record(1, "a", text), Record(2, "b", text), Record(3, "c", text)])
        assert len(freezes) == before  # 3 < 4: not yet
        registry.put("d", text, None)
        assert len(freezes) == before + 1
        frozen = gc.get_freeze_count()
        assert frozen > 0
        registry.put_many([Record(n, f"m{n}", text) for n in range(4)])
        assert len(freezes) == before + 2
    gc.unfreeze()
