"""`rtf serve` as real processes on loopback (docs/server.md, issue 12).

Each test talks HTTP to a server started by `rtf.server.process` (httpx and
httpx-sse, not rtf.server.client): register, publish and receive; restart and
crash (SIGTERM, SIGKILL) on the same data folder; reconnecting streams;
tokens; bad input and limits; the folder lock; snapshots; metrics; and a
differential run on the DBpedia sample against `rtf match`.

Tests that need no server of their own share one per module (`server`);
each of them works in a namespace of its own (its predicates and query ids
start with the test's tag), so that their queries never match each other's
publications.
"""

from __future__ import annotations

import contextlib
import gzip
import itertools
import json
import random
import signal
import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

# httpx and httpx-sse come with rtf.server.client's dependencies (pyproject, client branch)
httpx = pytest.importorskip("httpx")
connect_sse = pytest.importorskip("httpx_sse").connect_sse

from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from rtf.cli import main as rtf_main  # noqa: E402
from rtf.io.output import match_line  # noqa: E402
from rtf.engine import Engine  # noqa: E402
from rtf.io.reader import publications_from_bytes  # noqa: E402
from rtf.server.process import ServerProcess, run_serve  # noqa: E402

NT = "application/n-triples"
MAX_BODY = 200_000

#: What uvicorn logs when a response was cut off (a stream's generator cancelled).
INCOMPLETE = "ASGI callable returned without completing response"

#: The exit status of a server stopped by SIGTERM once it shut down cleanly
#: (uvicorn raises the signal again after its shutdown, as a supervisor expects).
STOPPED = (0, -signal.SIGTERM)


# ----------------------------------------------------------------- helpers


def ns(tag: str) -> str:
    return f"http://ex.org/{tag}/"


def triple(tag: str, subject: str, text: str, pred: str = "title") -> str:
    return f'<{ns(tag)}{subject}> <{ns(tag)}{pred}> "{text}" .\n'


def q_words(tag: str, *words: str, select: bool = True) -> str:
    """A query on the test's title predicate: ftcontains all `words` (none: any title)."""
    ft = " FILTER ftcontains(?t, " + " ftand ".join(f'"{w}"' for w in words) + ")" if words else ""
    head = "SELECT ?s ?t WHERE" if select else "ASK"
    return f"{head} {{ ?s <{ns(tag)}title> ?t{ft} }}"


def expected_lines(queries: dict[str, tuple[str, str | None]], body: bytes | str,
                   algorithm: str = "rtfs", fmt: str = "nt", group_by: str = "subject") -> list[str]:
    """The `rtf match` lines of `queries` ({id: (text, subscriber)}) over RDF `body`."""
    engine = Engine(algorithm)
    for qid, (text, subscriber) in queries.items():
        engine.register(text, qid, subscriber)
    data = body.encode() if isinstance(body, str) else body
    return [match_line(pub.id, m) for pub in publications_from_bytes(data, fmt, group_by)
            for m in engine.match(pub)]


def register(http: httpx.Client, queries: dict[str, tuple[str, str | None]], status: int = 201):
    for qid, (text, subscriber) in queries.items():
        r = http.put(f"/queries/{qid}", json={"query": text, "subscriber": subscriber})
        assert r.status_code == status, r.text


def publish(http: httpx.Client, body: bytes | str, content_type: str = NT, **params) -> list[str]:
    r = http.post("/publications", content=body, headers={"Content-Type": content_type},
                  params=params)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/x-ndjson")
    lines = r.text.splitlines()
    assert int(r.headers["X-RTF-Matches"]) == len(lines)
    return lines


def all_queries(http: httpx.Client, limit: int = 1000, **params) -> list[dict]:
    """Every registered query, page by page (following `next`)."""
    out: list[dict] = []
    after = 0
    while True:
        r = http.get("/queries", params={"after": after, "limit": limit, **params})
        assert r.status_code == 200, r.text
        page = r.json()
        out += page["queries"]
        if page["next"] is None:
            return out
        after = page["next"]


@contextmanager
def stream(server: ServerProcess | httpx.Client, subscriber: str,
           last_event_id: int | str | None = None, token=..., timeout: float = 10.0):
    """An open SSE connection to `subscriber`'s matches (through a client of `server`, or
    the client given): yields an iterator of its events (the connection is open, and the
    server streaming, when this yields). The read timeout is below the 15 s between pings."""
    headers = {} if last_event_id is None else {"Last-Event-ID": str(last_event_id)}
    with contextlib.ExitStack() as stack:
        http = server if isinstance(server, httpx.Client) else stack.enter_context(
            server.client(token=token))
        source = stack.enter_context(connect_sse(
            http, "GET", f"/subscribers/{subscriber}/matches", headers=headers,
            timeout=httpx.Timeout(30.0, read=timeout)))
        assert source.response.status_code == 200, source.response.read()
        assert source.response.headers["content-type"].startswith("text/event-stream")
        events = source.iter_sse()
        # Every connection starts with an `open` event naming where it starts
        # (the Last-Event-ID given, else the newest event id): read, checked, not passed on.
        opened = next(events)
        assert opened.event == "open", opened
        assert int(opened.id) == json.loads(opened.data)["last_event_id"] >= 0
        if last_event_id is not None and str(last_event_id).isdigit():
            assert int(opened.id) == int(last_event_id)
        yield events


def take(events, n: int) -> list:
    """The next `n` events (fewer if a `cut` event or the end of the stream comes first)."""
    out = []
    for event in events:
        out.append(event)
        if len(out) == n or event.event == "cut":
            break
    return out


def take_until(events, data: str) -> list:
    """The events up to the one carrying `data`."""
    out = []
    for event in events:
        out.append(event)
        if event.data == data:
            break
    return out


def read_events(server, subscriber, n, last_event_id=None, **kw) -> list:
    with stream(server, subscriber, last_event_id, **kw) as events:
        return take(events, n)


def matches_of(lines: list[str], subscriber: str) -> list[str]:
    return [line for line in lines if json.loads(line)["subscriber"] == subscriber]


def assert_exactly_once_in_order(events, lines: list[str]):
    """`events` are `match` events carrying `lines`, in order, with increasing ids."""
    assert [e.event for e in events] == ["match"] * len(events)
    assert [e.data for e in events] == lines
    ids = [int(e.id) for e in events]
    assert ids == sorted(set(ids)), ids


def metrics(http: httpx.Client) -> dict[str, float]:
    """The samples of GET /metrics, parsed with prometheus_client: name{labels} -> value."""
    r = http.get("/metrics")
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    out = {}
    for family in text_string_to_metric_families(r.text):
        for s in family.samples:
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
            out[s.name + (f"{{{labels}}}" if labels else "")] = s.value
    return out


def settings(data: Path) -> dict[str, str]:
    with sqlite3.connect(data / "queries.sqlite3") as db:
        return dict(db.execute("SELECT key, value FROM settings").fetchall())


def assert_clean_log(server: ServerProcess):
    log = "".join(server.logs) + (server.stderr if server.running else "")
    assert INCOMPLETE not in log and "Traceback" not in log, log
    assert "ERROR" not in log, log


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One server for the tests that need no special options (--max-body lowered)."""
    proc = ServerProcess(tmp_path_factory.mktemp("shared") / "broker", "--max-body", MAX_BODY)
    with proc:
        yield proc
    assert_clean_log(proc)


# ------------------------------------------ 1. register, publish, receive


def test_register_publish_receive(server):
    tag = "t1"
    queries = {f"{tag}-rio": (q_words(tag, "rio"), f"{tag}-alice"),
               f"{tag}-games": (q_words(tag, "games", select=False), f"{tag}-alice"),
               f"{tag}-any": (q_words(tag), None),
               f"{tag}-bob": (q_words(tag, "olympic"), f"{tag}-bob"),
               f"{tag}-team": (q_words(tag, "rio"), f"{tag}/team/x")}  # a name with slashes
    body = (triple(tag, "a", "Olympic games in Rio") + triple(tag, "b", "Nothing here")
            + triple(tag, "c", "Rio, again") + triple(tag, "d", "Paralympic Games"))
    with server.client() as http:
        for qid, (text, subscriber) in queries.items():
            r = http.put(f"/queries/{qid}", json={"query": text, "subscriber": subscriber,
                                                  "metadata": {"owner": "t1", "n": 1}})
            assert r.status_code == 201, r.text
            assert r.json() == {"id": qid, "subscriber": subscriber, "created": True}
        # committed to disk: the table holds every row
        with sqlite3.connect(server.data / "queries.sqlite3") as db:
            rows = dict(db.execute("SELECT id, query FROM queries WHERE id LIKE 't1-%'").fetchall())
        assert rows == {qid: text for qid, (text, _) in queries.items()}
        r = http.get(f"/queries/{tag}-rio")
        assert r.status_code == 200 and r.json() == {
            "id": f"{tag}-rio", "subscriber": f"{tag}-alice", "query": queries[f"{tag}-rio"][0],
            "metadata": {"owner": "t1", "n": 1}}

        with stream(server, f"{tag}-alice") as alice:
            lines = publish(http, body)
            assert lines == expected_lines(queries, body) and len(lines) == 11
            events = take(alice, 4)
        assert_exactly_once_in_order(events, matches_of(lines, f"{tag}-alice"))
        team = read_events(server, f"{tag}/team/x", 2, 0)
        assert_exactly_once_in_order(team, matches_of(lines, f"{tag}/team/x"))

        # replacing answers 200, and the new text is the one matched
        r = http.put(f"/queries/{tag}-rio", json={"query": q_words(tag, "again"),
                                                 "subscriber": f"{tag}-alice"})
        assert r.status_code == 200 and r.json()["created"] is False
        queries[f"{tag}-rio"] = (q_words(tag, "again"), f"{tag}-alice")
        assert publish(http, body) == expected_lines(queries, body)
        # Turtle and N-Quads grouped by graph are read as `rtf match` reads them
        ttl = f'@prefix e: <{ns(tag)}> .\ne:x e:title "Rio games" .\n'
        assert publish(http, ttl, "text/turtle") == expected_lines(queries, ttl, fmt="ttl")
        nq = (f'<{ns(tag)}x> <{ns(tag)}title> "Rio" <{ns(tag)}g1> .\n'
              f'<{ns(tag)}y> <{ns(tag)}title> "games" <{ns(tag)}g1> .\n')
        lines = publish(http, nq, "application/n-quads", group_by="graph")
        assert lines == expected_lines(queries, nq, fmt="nq", group_by="graph")
        assert [json.loads(line)["publication"] for line in lines] == [f"{ns(tag)}g1"] * 3

        r = http.delete(f"/queries/{tag}-bob")
        assert r.status_code == 204
        assert http.get(f"/queries/{tag}-bob").status_code == 404
        assert http.delete(f"/queries/{tag}-bob").status_code == 404
        del queries[f"{tag}-bob"]
        assert publish(http, body) == expected_lines(queries, body)
        listed = [q for q in all_queries(http, limit=2) if q["id"].startswith(tag)]
        assert [q["id"] for q in listed] == [f"{tag}-games", f"{tag}-any", f"{tag}-team",
                                             f"{tag}-rio"]
        assert [q["id"] for q in all_queries(http, subscriber=f"{tag}-alice")] == [
            f"{tag}-games", f"{tag}-rio"]


# ------------------------------------------ 4. reconnect with Last-Event-ID


@pytest.mark.slow
def test_reconnecting_subscriber_gets_every_match_once_in_order(server):
    tag = "t4"
    sub = f"{tag}-sub"
    queries = {f"{tag}-all": (q_words(tag, select=False), sub)}
    with server.client() as http:
        register(http, queries)
        received = []
        seen = []  # the match lines of `sub`, in publishing order

        def pub(i: int, n: int = 1):
            body = "".join(triple(tag, f"p{i}-{k}", f"item {i} {k}") for k in range(n))
            seen.extend(matches_of(publish(http, body), sub))

        # away: connect, read, leave; publish; come back with Last-Event-ID
        last = server.health()["last_event_id"]
        with stream(server, sub, last) as events:
            pub(0, 3)
            received += take(events, 3)
        for i in range(1, 4):
            pub(i, 2)
        received += read_events(server, sub, 6, received[-1].id)
        assert_exactly_once_in_order(received, seen)
        # ?last_event_id= works as the header does
        r = http.get(f"/subscribers/{sub}/matches", params={"last_event_id": "x"})
        assert r.status_code == 400
        for bad in ("x", "-1", "1_0", ""):  # (a stream opened by mistake is not read)
            with http.stream("GET", f"/subscribers/{sub}/matches",
                             headers={"Last-Event-ID": bad}) as r:
                assert r.status_code == 400, bad
                assert "Last-Event-ID" in json.loads(r.read())["error"]
        with server.client() as h2, connect_sse(h2, "GET", f"/subscribers/{sub}/matches",
                                                params={"last_event_id": received[2].id}) as src:
            events = src.iter_sse()
            assert next(events).id == received[2].id  # the open event says where it starts
            assert [e.data for e in take(events, 6)] == seen[3:]

    # publishing while it connects and disconnects, concurrently
    done = threading.Event()
    errors = []

    def publisher():
        try:
            with server.client() as http:
                for i in range(10, 130):
                    body = "".join(triple(tag, f"p{i}-{k}", f"item {i}") for k in range(1 + i % 3))
                    seen.extend(matches_of(publish(http, body), sub))
        except Exception as e:  # reported by the main thread
            errors.append(e)
        finally:
            done.set()

    def finished():
        return done.is_set() and len(received) >= len(seen)

    thread = threading.Thread(target=publisher)
    thread.start()
    rng = random.Random(4)
    connections = 0
    try:
        with server.client() as http:
            while not finished():
                connections += 1
                k = rng.randint(1, 7)
                try:  # read a few events, leave, come back
                    with stream(http, sub, received[-1].id, timeout=2) as events:
                        for n, event in enumerate(events, 1):
                            received.append(event)
                            if n == k or finished():
                                break
                except httpx.ReadTimeout:
                    pass  # nothing published meanwhile: connect again
    finally:
        thread.join()
    assert connections >= len(seen) // 7  # each read at most 7 events
    assert not errors, errors
    assert len(seen) > 200
    assert_exactly_once_in_order(received, seen)


# ------------------------------------------ 6. bad input, limits


BAD_QUERIES = [
    "SELECT ?x WHERE {\n  ?x ?y \n}",
    'ASK { ?s <http://ex/p> ?t FILTER ftcontains(?t, "a" ftand) }',
    "SELECT ?x WHERE { ?x ?p ?o SERVICE <http://x/> { ?x ?q ?r } }",
    "not a query",
]


@pytest.mark.parametrize("text", BAD_QUERIES)
def test_bad_query_is_400_with_rtf_checks_message(server, text, capsys):
    assert rtf_main(["check", text]) == 1
    check_says = capsys.readouterr().err.splitlines()[0]
    with server.client() as http:
        before = server.health()["queries"]
        r = http.put("/queries/t6-bad", json={"query": text, "subscriber": "t6"})
        assert r.status_code == 400
        error = r.json()
        assert error["error"] == check_says
        if error.get("line") is not None:
            assert f"line {error['line']}, column {error['column']}" in check_says
        assert http.get("/queries/t6-bad").status_code == 404
        assert server.health()["queries"] == before


def test_bad_requests_are_refused_and_the_server_keeps_serving(server):
    tag = "t6"
    queries = {f"{tag}-q": (q_words(tag, "rio"), f"{tag}-alice")}
    good = triple(tag, "a", "Rio")
    with server.client() as http:
        register(http, queries)
        n_queries = server.health()["queries"]
        last_id = server.health()["last_event_id"]
        published = metrics(http)["rtf_publications_total"]

        def refused(status, r, *words):
            assert r.status_code == status, r.text
            assert r.headers["content-type"] == "application/json"
            message = r.json()["error"]
            assert "\n" not in message and all(w in message for w in words), message
            # still serving, nothing registered nor matched nor pushed
            health = server.health()
            assert health["queries"] == n_queries and health["last_event_id"] == last_id
            assert metrics(http)["rtf_publications_total"] == published

        # bad RDF: nothing of the body is matched (the good first line neither)
        refused(400, http.post("/publications", content=good + "<a> <b> .\n",
                               headers={"Content-Type": NT}), "bad N-Triples", "<body>:2:")
        refused(400, http.post("/publications", content=b"\xff\xfe" + good.encode(),
                               headers={"Content-Type": NT}), "bad N-Triples")
        refused(400, http.post("/publications", content="@prefix x: .",
                               headers={"Content-Type": "text/turtle"}), "bad Turtle")
        refused(400, http.post("/publications", params={"group_by": "predicate"}, content=good,
                               headers={"Content-Type": NT}), "group_by")
        # other content types
        refused(415, http.post("/publications", content=good,
                               headers={"Content-Type": "application/json"}), "application/json")
        refused(415, http.post("/publications", content=good.encode()), "Content-Type")
        # bodies over --max-body: said (Content-Length) or not (chunked)
        big = good * (MAX_BODY // len(good) + 1)
        refused(413, http.post("/publications", content=big, headers={"Content-Type": NT}),
                str(MAX_BODY))

        def chunks():
            for _ in range(MAX_BODY // 10_000 + 2):
                yield (good * (10_000 // len(good) + 1)).encode()

        r = http.post("/publications", content=chunks(), headers={"Content-Type": NT})
        assert "content-length" not in r.request.headers
        refused(413, r, str(MAX_BODY))
        r = http.put(f"/queries/{tag}-big", json={"query": q_words(tag, "x" * MAX_BODY)})
        refused(413, r, str(MAX_BODY))
        # bad JSON bodies
        for content in (b"{", b"[]", b'{"subscriber": "x"}', b'{"query": 5}',
                        b'{"query": "ASK { ?s ?p ?o }", "metadata": [1]}', "é".encode("latin-1")):
            r = http.put(f"/queries/{tag}-json", content=content,
                         headers={"Content-Type": "application/json"})
            refused(400, r)
        refused(400, http.get("/queries", params={"limit": 0}), "limit")
        refused(400, http.put("/queries/" + "x" * 1025, json={"query": q_words(tag)}), "1024")
        refused(404, http.get(f"/queries/{tag}-json"), f"{tag}-json")
        # and it still answers as before
        assert publish(http, good) == expected_lines(queries, good)


# ------------------------------------------ 7. one server per data folder


def test_second_server_on_the_same_data_is_refused(server):
    done = run_serve(server.data)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "serve.lock" in done.stderr, done.stderr
    assert done.stderr.startswith("rtf: error: another rtf serve uses")
    assert server.health()["status"] == "ok"


# ------------------------------------------ 9. metrics


def test_metrics_count_what_was_done(server):
    tag = "t9"
    queries = {f"{tag}-a": (q_words(tag, "rio"), f"{tag}-s"), f"{tag}-b": (q_words(tag), None)}
    with server.client() as http:
        before = metrics(http)
        register(http, queries)
        body = "".join(triple(tag, f"p{i}", "rio" if i % 2 else "games") for i in range(6))
        lines = publish(http, body)
        assert len(lines) == 9
        http.post("/publications", content=b"<a> .", headers={"Content-Type": NT})
        after = metrics(http)
        health = server.health()

    def delta(name):
        return after.get(name, 0) - before.get(name, 0)

    assert after["rtf_queries"] == health["queries"] == before["rtf_queries"] + 2
    assert delta("rtf_publications_total") == 6
    assert delta("rtf_matches_total") == 9
    assert delta("rtf_outbox_events_total") == 3
    assert delta("rtf_filter_seconds_count") == 6
    assert after["rtf_filter_seconds_sum"] >= before.get("rtf_filter_seconds_sum", 0)
    assert after['rtf_filter_seconds_bucket{le="+Inf"}'] == after["rtf_filter_seconds_count"]
    buckets = sorted((float(k.split('"')[1]), v) for k, v in after.items()
                     if k.startswith("rtf_filter_seconds_bucket"))
    assert [v for _, v in buckets] == sorted(v for _, v in buckets)  # cumulative
    assert delta('rtf_rejected_requests_total{status="400"}') == 1
    assert after["rtf_streams"] >= 0


# ------------------------------------------ 2. restart (SIGTERM)


@pytest.mark.slow
def test_restart_loses_nothing(tmp_path):
    tag = "t2"
    alice = f"{tag}-alice"
    queries = {f"{tag}-rio": (q_words(tag, "rio"), alice),
               f"{tag}-all": (q_words(tag, select=False), alice),
               f"{tag}-bob": (q_words(tag, "games"), f"{tag}-bob"),
               f"{tag}-none": (q_words(tag, "rio", "games"), None)}
    body1 = triple(tag, "a", "Olympic games in Rio") + triple(tag, "b", "Rio")
    body2 = triple(tag, "c", "Rio games") + triple(tag, "d", "chess")
    server = ServerProcess(tmp_path / "broker")
    with server:
        with server.client() as http:
            register(http, queries)
            run1 = publish(http, body1)
            assert run1 == expected_lines(queries, body1)
            # an open stream while the server stops: it ends cleanly
            with stream(server, alice, 0) as events:
                first = take(events, len(matches_of(run1, alice)))
                assert server.terminate() in STOPPED
                assert list(events) == []  # the stream ended, nothing more
        assert_exactly_once_in_order(first, matches_of(run1, alice))
        assert (server.data / "snapshot.idx").exists()

        server.start()
        health = server.health()
        assert health["startup"]["from"] == "snapshot" and health["startup"]["replayed"] == 0
        assert health["queries"] == len(queries)
        # every event of run1 was numbered (alice's and bob's, in one append: alice's need
        # not be the last ones)
        pushed = [line for line in run1 if json.loads(line)["subscriber"]]
        assert health["last_event_id"] == len(pushed) >= int(first[-1].id)
        with server.client() as http:
            assert [(q["id"], q["query"], q["subscriber"]) for q in all_queries(http)] == [
                (qid, text, sub) for qid, (text, sub) in queries.items()]
            with stream(server, alice) as live:
                run2 = publish(http, body2)
                second = take(live, len(matches_of(run2, alice)))
            assert run2 == expected_lines(queries, body2)
        assert_exactly_once_in_order(second, matches_of(run2, alice))
        assert int(second[0].id) > int(first[-1].id)
        # the outbox holds both runs' events
        every = read_events(server, alice, len(matches_of(run1 + run2, alice)), 0)
        assert_exactly_once_in_order(every, matches_of(run1 + run2, alice))
        bob = read_events(server, f"{tag}-bob", len(matches_of(run1 + run2, f"{tag}-bob")), 0)
        assert_exactly_once_in_order(bob, matches_of(run1 + run2, f"{tag}-bob"))
        assert [(e.id, e.data) for e in read_events(server, alice, len(second), first[-1].id)] == [
            (e.id, e.data) for e in second]
        assert server.terminate() in STOPPED
    assert_clean_log(server)


# ------------------------------------------ 3. crash (SIGKILL)


@pytest.mark.slow
def test_sigkill_keeps_exactly_the_acknowledged_state(tmp_path):
    tag = "t3"
    every = 20
    server = ServerProcess(tmp_path / "broker", "--snapshot-every", every)
    rng = random.Random(3)
    model: dict[str, tuple[str, str | None, dict]] = {}  # in registration order
    words = ["rio", "games", "olympic", "chess", "river", "gold"]

    def op(http, i):
        qid = rng.choice(list(model)) if model and rng.random() < 0.4 else f"{tag}-q{i}"
        if qid in model and rng.random() < 0.4:
            r = http.delete(f"/queries/{qid}")
            assert r.status_code == 204, r.text
            del model[qid]
            return
        text = q_words(tag, *rng.sample(words, rng.randint(0, 2)), select=rng.random() < 0.5)
        sub = rng.choice([None, f"{tag}-a", f"{tag}-b"])
        r = http.put(f"/queries/{qid}", json={"query": text, "subscriber": sub,
                                             "metadata": {"i": i}})
        assert r.status_code == (200 if qid in model else 201), r.text
        model.pop(qid, None)
        model[qid] = (text, sub, {"i": i})

    with server:
        with server.client() as http:
            for i in range(2 * every):
                op(http, i)
            # the snapshot the 40th change started: wait until it holds the model
            for _ in range(600):
                snap = server.data / "snapshot.idx"
                if snap.exists() and settings(server.data).get("snapshot"):
                    if sorted(q.id for q in Engine.load(snap).queries()) == sorted(model):
                        break
                time.sleep(0.05)
            else:
                pytest.fail("no snapshot of the 40 first changes was written")
            snapped = dict(model)
            for i in range(2 * every, 2 * every + every // 2):  # fewer than --snapshot-every
                op(http, i)
            pushed = matches_of(publish(http, triple(tag, "x", " ".join(words))), f"{tag}-a")
        assert server.kill() == -signal.SIGKILL

        server.start()
        startup = server.health()["startup"]
        after = {qid for qid in model if model[qid] != snapped.get(qid)}  # new or replaced
        gone = {qid for qid in snapped if model.get(qid) != snapped[qid]}  # replaced or deleted
        assert after and gone
        assert startup["from"] == "snapshot", startup
        assert (startup["replayed"], startup["removed"], startup["failed"]) == (
            len(after), len(gone), 0), startup
        assert pushed  # and the matches pushed before the crash are in the outbox
        assert_exactly_once_in_order(read_events(server, f"{tag}-a", len(pushed), 0), pushed)
        with server.client() as http:
            assert [(q["id"], q["query"], q["subscriber"], q["metadata"])
                    for q in all_queries(http, limit=7)] == [
                (qid, text, sub, meta) for qid, (text, sub, meta) in model.items()]
            body = "".join(triple(tag, f"p{i}", " ".join(rng.sample(words, 3))) for i in range(30))
            expected = expected_lines({qid: (t, s) for qid, (t, s, _) in model.items()}, body)
            assert publish(http, body) == expected and expected
        # a clean stop then writes the snapshot, and the next start replays nothing
        assert server.terminate() in STOPPED
        server.start()
        assert server.health()["startup"]["replayed"] == 0
        with server.client() as http:
            assert publish(http, body) == expected
    assert_clean_log(server)


# ------------------------------------------ 8. snapshot rebuilt from SQLite


@pytest.mark.slow
def test_corrupt_snapshot_or_other_algorithm_rebuilds(tmp_path):
    tag = "t8"
    queries = {f"{tag}-{i}": (q_words(tag, *w), s) for i, (w, s) in enumerate([
        (("rio",), "a"), (("games", "rio"), "b"), ((), None), (("gold",), "a")])}
    body = (triple(tag, "a", "Rio games") + triple(tag, "b", "gold")
            + triple(tag, "c", "nothing"))
    data = tmp_path / "broker"
    with ServerProcess(data) as server:
        with server.client() as http:
            register(http, queries)
            answers = publish(http, body)
        assert answers == expected_lines(queries, body)
        assert server.interrupt() == 130  # Ctrl-C: rtf's exit status for an interruption
    snap = data / "snapshot.idx"
    assert settings(data)["snapshot"]  # written at the stop, and trusted
    raw = bytearray(snap.read_bytes())
    raw[len(raw) // 2: len(raw) // 2 + 64] = b"\x00" * 64
    snap.write_bytes(raw)
    for args, algorithm, source in [((), "rtfs", "rebuilt"),
                                    (("--algorithm", "naive"), "naive", "rebuilt"),
                                    (("--algorithm", "naive"), "naive", "snapshot"),
                                    (("--algorithm", "rtfm"), "rtfm", "rebuilt")]:
        with ServerProcess(data, *args) as server:
            health = server.health()
            assert health["algorithm"] == algorithm
            assert health["startup"]["from"] == source, (args, health)
            assert health["queries"] == len(queries)
            with server.client() as http:
                assert publish(http, body) == answers
        assert_clean_log(server)


# ------------------------------------------ 4b. cut streams, gaps


@pytest.mark.slow
def test_slow_subscriber_is_cut_and_reads_the_rest_from_the_outbox(tmp_path):
    tag = "t4c"
    slow = f"{tag}-slow"
    queries = {f"{tag}-q": (q_words(tag), slow)}  # its bindings carry the long titles
    filler = " ".join(f"w{i}" for i in range(12_000))  # ~80 KB a match
    with ServerProcess(tmp_path / "broker", "--stream-queue", 5) as server:
        with server.client() as http:
            register(http, queries)
            start = server.health()["last_event_id"]
            lines = []
            with stream(server, slow, start) as events:
                # It reads nothing: once the sockets' buffers are full its queue fills,
                # 4 matches (fewer than --stream-queue) per publishing request.
                while metrics(http)["rtf_streams_cut_total"] == 0:
                    i = len(lines)
                    lines += publish(http, "".join(triple(tag, f"p{i + k}", f"{i + k} {filler}")
                                                   for k in range(4)))
                    assert len(lines) < 4000, "the stream was never cut"
                got = list(events)  # what it had been sent, then the cut; the stream ends
            assert got[-1].event == "cut" and all(e.event == "match" for e in got[:-1])
            cut = json.loads(got[-1].data)
            assert "behind" in cut["reason"] and "Last-Event-ID" in cut["reason"]
            assert cut["last_event_id"] == (int(got[-2].id) if len(got) > 1 else start)
            assert len(got) - 1 < len(lines)
            rest = read_events(server, slow, len(lines) - len(got) + 1, cut["last_event_id"])
            assert_exactly_once_in_order(got[:-1] + rest, matches_of(lines, slow))
            # a burst of more matches than --stream-queue in one request cuts a live stream
            # too (it may have sent some of them, read from the outbox, before the cut)
            with stream(server, slow, int(rest[-1].id)) as events:
                burst = publish(http, "".join(triple(tag, f"b{k}", "burst") for k in range(8)))
                got = list(events)
            assert got[-1].event == "cut"
            sent = got[:-1]
            last = int(sent[-1].id) if sent else int(rest[-1].id)
            assert json.loads(got[-1].data)["last_event_id"] == last
            more = read_events(server, slow, len(burst) - len(sent), last) if len(sent) < 8 else []
            assert_exactly_once_in_order(sent + more, burst)
            assert metrics(http)["rtf_streams_cut_total"] == 2
    assert_clean_log(server)


@pytest.mark.slow
def test_retention_gap_then_the_retained_events(tmp_path):
    tag = "t4g"
    queries = {f"{tag}-q": (q_words(tag, select=False), "old"),
               f"{tag}-n": (q_words(tag, "new", select=False), "new")}
    keep = 10
    with ServerProcess(tmp_path / "broker", "--outbox-max-events", keep) as server:
        with server.client() as http:
            register(http, queries)
            old = []
            for i in range(8):
                old += matches_of(publish(http, "".join(triple(tag, f"o{i}-{k}", "old")
                                                        for k in range(5))), "old")
            last = publish(http, triple(tag, "n", "new"))
            old += matches_of(last, "old")
            new = matches_of(last, "new")
        assert len(old) == 41 and len(new) == 1
        with stream(server, "old", 0) as events:
            gap = next(events)
            assert gap.event == "gap"
            span = json.loads(gap.data)
            retained = take_until(events, old[-1])
        # the newest `keep` (or a few more, between two prunings) are kept, the gap says
        # which were dropped, and they are the ones before the retained ones
        assert span["from"] == 1 and span["to"] < int(retained[0].id)
        assert keep <= len(retained) < 2 * keep
        assert_exactly_once_in_order(retained, old[-len(retained):])
        # "new" lost nothing: retention is per subscriber
        assert_exactly_once_in_order(read_events(server, "new", 1, 0), new)
        # one that read past the dropped ones sees no gap; one from inside them does
        after = read_events(server, "old", 1, int(retained[0].id))
        assert after[0].event == "match" and after[0].data == old[-len(retained) + 1]
        inside = read_events(server, "old", 2, span["to"] - 1)
        assert inside[0].event == "gap" and json.loads(inside[0].data) == {
            "from": span["to"], "to": span["to"]}
        assert inside[1].data == retained[0].data
    assert_clean_log(server)


# ------------------------------------------ 5. tokens


TOKENS = {"admin": "admin-token-0123456789", "publisher": "publisher-token-0123456789",
          "alice": "alice-token-0123456789", "bob": "bob-token-0123456789"}


@pytest.fixture(scope="module")
def auth_server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("auth")
    tokens = folder / "tokens.txt"
    tokens.write_text("# token   role\n"
                      f"{TOKENS['admin']}  admin\n{TOKENS['publisher']} publisher  # feeds\n\n"
                      f"{TOKENS['alice']} subscriber:alice\n{TOKENS['bob']} subscriber:bob\n")
    with ServerProcess(folder / "broker", "--tokens", tokens, token=TOKENS["admin"]) as proc:
        yield proc
    assert_clean_log(proc)


def test_tokens_who_may_do_what(auth_server):
    s = auth_server
    q = q_words("t5", "rio")
    body = triple("t5", "a", "Rio")

    def as_(who):
        return s.client(token=TOKENS[who] if who else None)

    with as_(None) as anon, as_("admin") as admin, as_("publisher") as pub, \
            as_("alice") as alice, as_("bob") as bob, s.client(token="not-a-known-token-xyz") as bad:
        # no token, an unknown one: 401 with WWW-Authenticate; /health is open
        for client, word in ((anon, "bearer token"), (bad, "unknown token")):
            for r in (client.get("/queries"), client.put("/queries/x", json={"query": q}),
                      client.post("/publications", content=body, headers={"Content-Type": NT}),
                      client.get("/metrics"), client.get("/subscribers/alice/matches"),
                      client.get("/queries/x"), client.delete("/queries/x")):
                assert r.status_code == 401 and r.headers["WWW-Authenticate"] == "Bearer", r.text
                assert word in r.json()["error"]
        r = anon.get("/queries", headers={"Authorization": "Basic " + TOKENS["admin"]})
        assert r.status_code == 401
        assert anon.get("/health").status_code == 200

        # a subscriber registers for itself (the subscriber defaults to its name)
        r = alice.put("/queries/t5-alice", json={"query": q})
        assert r.status_code == 201 and r.json()["subscriber"] == "alice"
        assert alice.put("/queries/t5-x", json={"query": q, "subscriber": "bob"}).status_code == 403
        assert bob.put("/queries/t5-bob", json={"query": q, "subscriber": "bob"}).status_code == 201
        assert admin.put("/queries/t5-admin", json={"query": q, "subscriber": "carol"}).status_code == 201
        # ... and nothing across subscribers
        assert bob.get("/queries/t5-alice").status_code == 403
        r = bob.put("/queries/t5-alice", json={"query": q_words("t5", "x")})
        assert r.status_code == 403
        assert bob.delete("/queries/t5-alice").status_code == 403
        assert alice.delete("/queries/t5-admin").status_code == 403
        assert bob.get("/subscribers/alice/matches").status_code == 403
        assert bob.get("/queries", params={"subscriber": "alice"}).status_code == 403
        assert admin.get("/queries/t5-alice").json()["query"] == q  # unchanged
        assert [x["id"] for x in all_queries(bob)] == ["t5-bob"]
        assert [x["id"] for x in all_queries(bob, subscriber="bob")] == ["t5-bob"]
        assert [x["id"] for x in all_queries(alice)] == ["t5-alice"]
        assert {x["id"] for x in all_queries(admin)} == {"t5-alice", "t5-bob", "t5-admin"}
        assert alice.get("/queries/t5-alice").status_code == 200
        # a publisher publishes and does nothing else
        assert pub.put("/queries/t5-p", json={"query": q}).status_code == 403
        assert pub.delete("/queries/t5-alice").status_code == 403
        assert pub.get("/queries").status_code == 403
        assert pub.get("/queries/t5-alice").status_code == 403
        assert pub.get("/metrics").status_code == 403
        assert pub.get("/subscribers/alice/matches").status_code == 403
        with stream(s, "alice", 0, token=TOKENS["alice"]) as events:
            lines = publish(pub, body)
            assert [e.data for e in take(events, 1)] == matches_of(lines, "alice")
        assert len(lines) == 3
        # a subscriber neither publishes nor reads the metrics
        for who in (alice, bob):
            assert who.post("/publications", content=body,
                            headers={"Content-Type": NT}).status_code == 403
            assert who.get("/metrics").status_code == 403
        assert admin.get("/metrics").status_code == 200
        assert publish(admin, body) == lines
        assert alice.delete("/queries/t5-alice").status_code == 204
        assert admin.delete("/queries/t5-bob").status_code == 204


@pytest.mark.parametrize("content, says", [  # every message: test_server_units
    (None, "cannot read the tokens file"),
    ("0123456789abcdef superuser\n", "unknown role"),
    ("0123456789abcdef admin\n0123456789abcdef publisher\n", ":2: this token is already listed"),
])
def test_bad_tokens_file_exits_1_with_one_line(tmp_path, content, says):
    tokens = tmp_path / "tokens.txt"
    if content is not None:
        tokens.write_text(content)
    done = run_serve(tmp_path / "broker", "--tokens", tokens)
    assert done.returncode == 1
    assert done.stderr.startswith("rtf: error: ") and done.stderr.count("\n") == 1, done.stderr
    assert says in done.stderr


# ------------------------------------------ 10. differential on DBpedia


def _dbpedia_bodies(n_pubs: int, n_bodies: int) -> tuple[list[str], list]:
    """`n_bodies` N-Triples bodies holding `n_pubs` publications of the sample (verbatim
    lines, grouped by subject), and the publications to generate queries from."""
    from rtf.io import datasets
    from rtf.io.reader import read_publications

    if not datasets.available():
        pytest.skip(datasets.missing_message())
    files = {f.name.split("_")[0]: f for f in datasets.dbpedia_files()}
    pubs = list(read_publications([files["nordlys"], files["esbm"]]))
    pubs += list(itertools.islice(read_publications([files["db8k28"]]), 600))
    subjects = []  # [(subject, [lines])] in file order
    for name in ("nordlys", "esbm", "db8k28"):
        with gzip.open(files[name], "rt", encoding="utf-8") as f:
            for subject, lines in itertools.groupby(f, key=lambda line: line.split(" ", 1)[0]):
                subjects.append((subject, list(lines)))
                if len(subjects) >= 8 * n_pubs:
                    break
    chosen = subjects[::8][:n_pubs]
    per = -(-len(chosen) // n_bodies)
    bodies = ["".join(line for _, lines in chosen[i:i + per] for line in lines)
              for i in range(0, len(chosen), per)]
    return bodies, pubs


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["rtfs", "naive"])
def test_dbpedia_answers_equal_rtf_match(tmp_path, algorithm, capsys):
    from rtf.bench.workload import Mix, generate_queries

    bodies, pubs = _dbpedia_bodies(100, 4)
    mix = Mix.selective(0.5)
    mix.distinct_predicates = 1.0  # as rtf gen-queries sets it
    records = generate_queries(pubs, 200, seed=10, mix=mix)
    qfile = tmp_path / "q.jsonl"
    qfile.write_text("".join(json.dumps(r) + "\n" for r in records))
    pfile = tmp_path / "pubs.nt"
    pfile.write_text("".join(bodies))
    out = tmp_path / "out.jsonl"
    assert rtf_main(["match", "--queries", str(qfile), "--publications", str(pfile),
                     "--algorithm", algorithm, "--output", str(out)]) == 0
    capsys.readouterr()
    reference = out.read_text().splitlines()
    assert len(reference) > 50 and len({json.loads(line)["query"] for line in reference}) > 20

    with ServerProcess(tmp_path / "broker", "--algorithm", algorithm) as server:
        with server.client() as http:
            register(http, {r["id"]: (r["query"], r["subscriber"]) for r in records})
            answers = [line for body in bodies for line in publish(http, body.encode())]
    assert answers == reference
    assert_clean_log(server)
