"""rtf.server.client against a real `rtf serve` process on loopback.

tests/test_client_unit.py checks the client against scripted answers; here
the same calls go to the server: the answers must be what a local Engine
gives, the errors what a local Engine raises, and the match iterator must
survive the server being killed and restarted without losing or repeating a
match.
"""

from __future__ import annotations

import itertools
import json
import threading
import time

import pytest

pytest.importorskip("httpx")
pytest.importorskip("httpx_sse")

from rtf import Engine  # noqa: E402
from rtf.io.output import match_line  # noqa: E402
from rtf.server.client import (AuthenticationError, Client, MatchEvent, NotFoundError,  # noqa: E402
                        PermissionDeniedError)
from rtf.errors import QueryError  # noqa: E402
from rtf.parser import parse_query  # noqa: E402
from rtf.io.reader import publications_from_bytes  # noqa: E402

from rtf.server.process import ServerProcess  # noqa: E402

#: seconds without an event before a test's match iterator gives up: a bound on a hang only
IDLE_BOUND = 120

P = "<http://ex.org/c/p>"


def q(word: str) -> str:
    return f'SELECT ?s WHERE {{ ?s {P} ?t FILTER ftcontains(?t, "{word}") }}'


def body(i: int, words: str) -> str:
    return f'<http://ex.org/c/s{i}> {P} "{words}" .\n'


def local_lines(queries: dict[str, tuple[str, str]], rdf: str) -> list[dict]:
    engine = Engine()
    for qid, (text, subscriber) in queries.items():
        engine.register(text, qid, subscriber)
    return [json.loads(match_line(pub.id, m))
            for pub in publications_from_bytes(rdf.encode(), "nt") for m in engine.match(pub)]


def test_client_round_trip_equals_a_local_engine(tmp_path):
    queries = {"rio": (q("rio"), "alice"), "games": (q("games"), "bob"), "x/y z": (q("olympic"), "alice")}
    rdf = body(1, "Olympic Games in Rio") + body(2, "rio carnival") + body(3, "nothing")
    with ServerProcess(tmp_path / "d") as server, Client(server.url) as broker:
        for qid, (text, subscriber) in queries.items():
            assert broker.register(text, qid, subscriber, metadata={"n": 1})["created"] is True
        assert broker.get("x/y z") == {"id": "x/y z", "subscriber": "alice", "query": q("olympic"),
                                       "metadata": {"n": 1}}
        assert [r["id"] for r in broker.queries(page_size=2)] == list(queries)
        assert [r["id"] for r in broker.queries(subscriber="bob")] == ["games"]
        assert broker.publish(rdf) == local_lines(queries, rdf)
        # grouped (docs/server.md, "Grouped events"): alice's rio and olympic share s1's
        # answer, one event; split at its first id it gives the second; the same matches
        singles = list(broker.matches("alice", last_event_id=0, timeout=0.5))
        grouped = list(broker.matches("alice", last_event_id=0, timeout=0.5, grouped=True))
        assert [len(e.group["queries"]) for e in grouped] == [2, 1]
        assert [m for e in grouped for m in e.matches] == singles and len(singles) == 3
        rest = list(broker.matches("alice", last_event_id=singles[0].id, timeout=0.5, grouped=True))
        assert [m for e in rest for m in e.matches] == singles[1:]
        assert sorted((line["publication"], q) for line in broker.publish(rdf, grouped=True)
                      for q in line["queries"]) == sorted(
            (line["publication"], line["query"]) for line in local_lines(queries, rdf))
        broker.unregister("games")
        with pytest.raises(KeyError):
            broker.get("games")
        with pytest.raises(NotFoundError):
            broker.unregister("games")
        del queries["games"]
        assert broker.publish(rdf) == local_lines(queries, rdf)
        bad = 'ASK { ?s ?p ?t FILTER ftcontains(?t, "a" ftand) }'
        with pytest.raises(QueryError) as remote:
            broker.register(bad, "bad")
        with pytest.raises(QueryError) as local:
            parse_query(bad)
        assert (remote.value.line, remote.value.column, str(remote.value)) == (
            local.value.line, local.value.column, str(local.value))
        assert broker.health()["queries"] == 2


@pytest.mark.slow
def test_matches_survive_a_killed_and_restarted_server_exactly_once(tmp_path):
    """The iterator reconnects by itself (Last-Event-ID) across a SIGKILL and a restart."""
    data = tmp_path / "d"
    server = ServerProcess(data).start()
    port = server.port
    received: list[MatchEvent] = []
    with Client(server.url) as broker:
        broker.register(q("rio"), "rio", "alice")
        # The idle bound and the join are bounds on a hang, not speeds: a loaded 2-core machine
        # took over 20 s to restart the server and publish (the iterator then ended early).
        events = broker.matches("alice", timeout=IDLE_BOUND)
        first = broker.publish(body(0, "rio"))  # before the iterator connects: not for it
        reader_ready = threading.Event()

        def read(n: int):
            reader_ready.set()
            received.extend(itertools.islice(events, n))

        # connect: the first event comes after this publication, so read it in a thread
        t = threading.Thread(target=read, args=(3,))
        t.start()
        reader_ready.wait()
        sent = []
        try:
            for i in range(1, 3):
                while 'rtf_streams 1.0' not in broker.metrics():  # publish once the stream is open
                    time.sleep(0.02)
                sent += broker.publish(body(i, f"rio {i}"))
            server.kill()  # SIGKILL: the stream drops
            server = ServerProcess(data, "--port", port).start()
            sent += broker.publish(body(3, "rio again"))
            t.join(IDLE_BOUND + 30)
        finally:
            server.stop()
    assert not t.is_alive()
    assert first and [e.match for e in received] == sent
    ids = [e.id for e in received]
    assert ids == sorted(set(ids))


def test_client_errors_for_tokens(tmp_path):
    tokens = tmp_path / "tokens"
    tokens.write_text("admin-token-0123456789 admin\nalice-token-0123456789 subscriber:alice\n")
    with ServerProcess(tmp_path / "d", "--tokens", tokens) as server:
        with Client(server.url) as anonymous, pytest.raises(AuthenticationError):
            anonymous.register(q("rio"), "q")
        with Client(server.url, token="alice-token-0123456789") as alice:
            assert alice.register(q("rio"), "mine")["subscriber"] == "alice"
            with pytest.raises(PermissionDeniedError):
                alice.publish(body(1, "rio"))
            with pytest.raises(PermissionDeniedError):
                next(alice.matches("bob"))
        with Client(server.url, token="admin-token-0123456789") as admin:
            assert [m["query"] for m in admin.publish(body(1, "rio"))] == ["mine"]


def test_a_last_event_id_beyond_the_outbox_skips_nothing_new(tmp_path):
    """A client that comes back to a server whose data folder was replaced."""
    with ServerProcess(tmp_path / "d") as server, Client(server.url) as broker:
        broker.register(q("rio"), "rio", "alice")
        got: list = []
        events = broker.matches("alice", last_event_id=10**9, timeout=IDLE_BOUND)
        t = threading.Thread(target=lambda: got.extend(itertools.islice(events, 1)))
        t.start()
        while 'rtf_streams 1.0' not in broker.metrics():
            time.sleep(0.02)
        sent = broker.publish(body(1, "rio"))
        t.join(IDLE_BOUND + 30)
    assert [e.match for e in got] == sent


@pytest.mark.slow
def test_the_docs_client_example_prints_its_match(tmp_path):
    """docs/server.md's Python example, run as written against a real server (its address aside:
    the test's server listens on a free port, not 8750)."""
    import contextlib
    import io
    import re
    from pathlib import Path

    docs = (Path(__file__).resolve().parents[1] / "docs" / "server.md").read_text(encoding="utf-8")
    section = docs[docs.index("## From Python"):]
    example = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    with ServerProcess(tmp_path / "data") as server:
        code = example.replace("http://127.0.0.1:8750", server.url)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, "docs/server.md", "exec"), {})
    lines = out.getvalue().splitlines()
    import ast
    assert ast.literal_eval(lines[0])[0]["query"] == "rio"  # the POST's answer, printed
    assert re.fullmatch(r"\d+ rio", lines[1]), lines


def test_register_many_in_engine_order_and_its_errors(tmp_path):
    from rtf.io.queries import QueryFileError
    with ServerProcess(tmp_path / "b") as server, Client(server.url) as broker:
        summary = broker.register_many([(q("rio"), "r1", "alice"),
                                        {"id": "r2", "query": q("gold"), "metadata": {"k": 2}}])
        assert summary == {"registered": 2, "created": 2, "replaced": 0, "failed": 0}
        assert broker.get("r2")["metadata"] == {"k": 2} and broker.get("r1")["subscriber"] == "alice"
        with pytest.raises(QueryFileError) as caught:
            broker.register_many([(q("x"), "r3"), ("ASK { ?s ?p }", "bad")])
        assert caught.value.record == 2 and caught.value.query_id == "bad" and caught.value.line == 1
        assert str(caught.value).startswith("<body>:2: query 'bad': line 1, column ")
        assert [x["id"] for x in broker.queries()] == ["r1", "r2"]  # nothing of that call
        results = broker.register_many([(q("x"), "r3"), ("ASK { ?s ?p }", "bad")], atomic=False)
        assert [(x["id"], x["status"]) for x in results] == [("r3", 201), ("bad", 400)]
        with pytest.raises(TypeError, match="query first"):
            broker.register_many([("r4", q("y"))])  # the id first: refused, not registered
        with pytest.raises(TypeError, match="query first"):
            broker.register_many([(None, "r4")])


@pytest.mark.slow
def test_the_docs_curl_examples_run_as_written(tmp_path):
    """docs/server.md's curl lines, run as written (from the repository's folder) against a
    real server, its address aside: the test's server listens on a free port, not 8750."""
    import re
    import shutil
    import subprocess
    from pathlib import Path

    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    root = Path(__file__).resolve().parents[1]
    docs = (root / "docs" / "server.md").read_text(encoding="utf-8")
    section = docs[docs.index("### Try it with curl"):]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    with ServerProcess(tmp_path / "data") as server:
        script = block.replace("localhost:8750", server.url.removeprefix("http://"))
        # one command at a time: the stream's curl ends by its --max-time (status 28)
        done = subprocess.run(["bash", "-uo", "pipefail", "-c", script], cwd=root,
                              capture_output=True, text=True, timeout=60)
    out = done.stdout
    assert '{"id":"rio","subscriber":"alice","created":true}' in out, (out, done.stderr)
    # (and a warning: the example file's taxonomy query on a server without a taxonomy)
    assert '{"registered":3,"created":3,"replaced":0,"failed":0,"warnings":["' in out
    assert "subClassOf" in out.split('"warnings":', 1)[1].split("]", 1)[0]
    assert '{"publication": "http://ex/a", "query": "rio", "subscriber": "alice", "bindings": []}' in out
    assert '"head":{"vars":["publication","query","subscriber"' in out.replace(" ", "")
    assert out.count("event: match") == 2 and "event: open" in out
    assert '"queries":4' in out.replace(" ", "")
