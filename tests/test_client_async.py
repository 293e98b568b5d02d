"""Issue 40, item 5: `rtf.AsyncClient` against a real `rtf serve` process, and the
short path `from rtf import Client` (imported when first used).

tests/test_client_unit.py runs every scripted-server test with both clients; here
the async one talks to a real server: the same answers as the sync client, the
errors a local Engine raises, and a match stream that survives the server being
killed and restarted without losing or repeating a match.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from contextlib import aclosing

import pytest

pytest.importorskip("httpx")
pytest.importorskip("httpx_sse")

from rtf.errors import QueryError  # noqa: E402
from rtf.server.client import (AuthenticationError, Client, MatchEvent,  # noqa: E402
                               NotFoundError, PermissionDeniedError)
from rtf.server.process import ServerProcess  # noqa: E402

P = "<http://ex.org/ac/p>"


def q(word: str) -> str:
    return f'SELECT ?s WHERE {{ ?s {P} ?t FILTER ftcontains(?t, "{word}") }}'


def body(i: int, words: str) -> str:
    return f'<http://ex.org/ac/s{i}> {P} "{words}" .\n'


def python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


def test_from_rtf_import_client_is_the_client_imported_on_first_use():
    done = python("import sys, rtf\n"
                  "assert 'httpx' not in sys.modules and 'rtf.server' not in sys.modules\n"
                  "from rtf import AsyncClient, Client, GapEvent, MatchEvent\n"
                  "import rtf.server.async_client as a, rtf.server.client as c\n"
                  "assert (Client, AsyncClient, MatchEvent, GapEvent) == "
                  "(c.Client, a.AsyncClient, c.MatchEvent, c.GapEvent)\n"
                  "assert {'Client', 'AsyncClient'} <= set(rtf.__all__)\n")
    assert done.returncode == 0, done.stderr


def test_the_client_without_the_server_extra_is_one_line_saying_what_to_install():
    done = python("import sys; sys.modules['httpx'] = None\n"
                  "from rtf import Client\n")
    last = done.stderr.strip().splitlines()[-1]
    assert last == ("ModuleNotFoundError: rtf.Client needs the 'server' extra: "
                    "pip install 'rtf[server]' (no module named 'httpx')"), done.stderr


@pytest.mark.slow
def test_async_client_answers_what_the_sync_client_answers(tmp_path):
    from rtf import AsyncClient

    rdf = body(1, "Olympic Games in Rio") + body(2, "rio carnival") + body(3, "nothing")

    async def run(url: str) -> dict:
        async with AsyncClient(url) as broker:
            got = {"put": await broker.register(q("rio"), "a/rio", "alice", metadata={"n": 1}),
                   "many": await broker.register_many([(q("games"), "games", "bob"),
                                                       {"id": "x y", "query": q("olympic")}])}
            got["get"] = await broker.get("a/rio")
            got["all"] = [r async for r in broker.queries(page_size=2)]
            got["bob"] = [r async for r in broker.queries(subscriber="bob")]
            got["publish"] = await broker.publish(rdf)
            await broker.unregister("games")
            with pytest.raises(NotFoundError):
                await broker.unregister("games")
            with pytest.raises(QueryError) as bad:
                await broker.register('ASK { ?s ?p ?t FILTER ftcontains(?t, "a" ftand) }', "bad")
            got["bad"] = (bad.value.line, bad.value.column, str(bad.value))
            got["queries"] = (await broker.health())["queries"]
            return got

    with ServerProcess(tmp_path / "async") as server:
        got = asyncio.run(run(server.url))
    with ServerProcess(tmp_path / "sync") as server, Client(server.url) as broker:
        want = {"put": broker.register(q("rio"), "a/rio", "alice", metadata={"n": 1}),
                "many": broker.register_many([(q("games"), "games", "bob"),
                                              {"id": "x y", "query": q("olympic")}])}
        want["get"] = broker.get("a/rio")
        want["all"] = list(broker.queries(page_size=2))
        want["bob"] = list(broker.queries(subscriber="bob"))
        want["publish"] = broker.publish(rdf)
        broker.unregister("games")
        with pytest.raises(QueryError) as bad:
            broker.register('ASK { ?s ?p ?t FILTER ftcontains(?t, "a" ftand) }', "bad")
        want["bad"] = (bad.value.line, bad.value.column, str(bad.value))
        want["queries"] = broker.health()["queries"]
    assert got == want
    assert sorted((m["publication"][-2:], m["query"]) for m in got["publish"]) == [
        ("s1", "a/rio"), ("s1", "games"), ("s1", "x y"), ("s2", "a/rio")]
    assert got["queries"] == 2 and got["get"]["metadata"] == {"n": 1}


def test_async_matches_survive_a_killed_and_restarted_server_exactly_once(tmp_path):
    """The async iterator reconnects by itself (Last-Event-ID) across a SIGKILL and a restart,
    while other tasks of the same loop publish through the same client."""
    from rtf import AsyncClient

    data = tmp_path / "d"
    server = ServerProcess(data).start()
    port = server.port

    async def run():
        nonlocal server
        async with AsyncClient(server.url) as broker:
            await broker.register(q("rio"), "rio", "alice")
            first = await broker.publish(body(0, "rio"))  # before the stream opens: not for it
            events = broker.matches("alice", timeout=20)
            reader = asyncio.create_task(take(events, 3))
            sent = []
            for i in range(1, 3):
                while "rtf_streams 1.0" not in await broker.metrics():  # the stream is open
                    await asyncio.sleep(0.02)
                sent += await broker.publish(body(i, f"rio {i}"))
            await asyncio.to_thread(server.kill)  # SIGKILL: the stream drops
            server = await asyncio.to_thread(ServerProcess(data, "--port", port).start)
            sent += await broker.publish(body(3, "rio again"))
            received = await asyncio.wait_for(reader, 30)
            return first, sent, received

    async def take(events, n):
        got = []
        async with aclosing(events):  # its connection closed in the loop, not by the collector
            async for event in events:
                got.append(event)
                if len(got) == n:
                    break
        return got

    try:
        first, sent, received = asyncio.run(run())
    finally:
        server.stop()
    assert first and all(isinstance(e, MatchEvent) for e in received)
    assert [e.match for e in received] == sent and len(sent) == 3
    ids = [e.id for e in received]
    assert ids == sorted(set(ids))


def test_async_client_errors_for_tokens(tmp_path):
    from rtf import AsyncClient

    tokens = tmp_path / "tokens"
    tokens.write_text("admin-token-0123456789 admin\nalice-token-0123456789 subscriber:alice\n")

    async def run(url):
        async with AsyncClient(url) as anonymous:
            with pytest.raises(AuthenticationError):
                await anonymous.register(q("rio"), "q")
        async with AsyncClient(url, token="alice-token-0123456789") as alice:
            assert (await alice.register(q("rio"), "mine"))["subscriber"] == "alice"
            with pytest.raises(PermissionDeniedError):
                await alice.publish(body(1, "rio"))
            with pytest.raises(PermissionDeniedError):
                await anext(alice.matches("bob"))

    with ServerProcess(tmp_path / "d", "--tokens", tokens) as server:
        asyncio.run(run(server.url))


@pytest.mark.slow
def test_the_docs_async_example_prints_its_match(tmp_path):
    """docs/server.md's asyncio example, run as written against a real server (its address
    aside: the test's server listens on a free port, not 8750)."""
    import re
    from pathlib import Path

    docs = (Path(__file__).resolve().parents[1] / "docs" / "server.md").read_text(encoding="utf-8")
    section = docs[docs.index("## From Python"):]
    example = re.findall(r"```python\n(.*?)```", section, re.S)[1]
    assert "AsyncClient" in example
    with ServerProcess(tmp_path / "data") as server:
        done = python(example.replace("http://127.0.0.1:8750", server.url))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert json.loads(lines[0].replace("'", '"'))[0]["query"] == "rio"
    assert re.fullmatch(r"\d+ rio", lines[1]), lines
