"""Issue 23's API of `rtf serve`: bulk registration, stream tickets and the metrics
role, SPARQL JSON answers, the OpenAPI document and offline docs, starting from a
saved index, and a core that installs without the server stack.

In-process (httpx's ASGI transport) where no stream is read; real server
processes for streams and the command line.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

httpx = pytest.importorskip("httpx")

from rtf.engine import Engine  # noqa: E402
from rtf.io.output import match_line, sparql_term  # noqa: E402
from rtf.io.reader import publications_from_bytes  # noqa: E402
from rtf.server.app import create_app  # noqa: E402
from rtf.server.auth import Tickets, Tokens  # noqa: E402
from rtf.server.broker import Broker, BrokerConfig  # noqa: E402
from rtf.server.process import ServerProcess, run_serve  # noqa: E402

EX = "http://ex.org/api/"
NT = {"Content-Type": "application/n-triples"}
NDJSON = {"Content-Type": "application/x-ndjson"}


def query(word: str, select: bool = True) -> str:
    head = "SELECT ?s ?t WHERE" if select else "ASK"
    return f'{head} {{ ?s <{EX}title> ?t FILTER ftcontains(?t, "{word}") }}'


def rdf(*titles: str) -> bytes:
    return "".join(f'<{EX}p{i}> <{EX}title> "{t}" .\n' for i, t in enumerate(titles)).encode()


def ndjson(*records: dict) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def in_process(tmp_path, check, tokens: Tokens | None = None):
    """Run `check(client, broker)` against the app in-process."""
    broker = Broker(BrokerConfig(tmp_path))
    app = create_app(broker, tokens)

    async def run():
        transport = httpx.ASGITransport(app=app)
        async with app.router.lifespan_context(app), httpx.AsyncClient(
                transport=transport, base_url="http://rtf") as client:
            await check(client, broker)

    asyncio.run(run())


# ------------------------------------------------------------ bulk registration


GOOD = [{"id": "rio", "query": query("rio"), "subscriber": "alice"},
        {"id": "gold", "query": query("gold", False), "subscriber": "bob", "metadata": {"k": 1}},
        {"id": "any", "query": query("games")}]


def test_bulk_registration_all_or_nothing(tmp_path):
    async def check(client, broker):
        bad = [*GOOD[:2], {"id": "broken", "query": "ASK { ?s ?p }"}, GOOD[2]]
        r = await client.post("/queries", content=ndjson(*bad), headers=NDJSON)
        assert r.status_code == 400, r.text
        body = r.json()
        assert body["record"] == 3 and body["id"] == "broken" and body["line"] == 1
        assert body["error"].startswith("<body>:3: query 'broken': line 1, column ")
        assert (await client.get("/queries")).json()["queries"] == []  # nothing registered
        assert len(broker.engine) == 0
        r = await client.post("/queries", content=ndjson(*GOOD), headers=NDJSON)
        assert r.status_code == 200 and r.json() == {"registered": 3, "created": 3, "replaced": 0,
                                                     "failed": 0}
        listed = (await client.get("/queries")).json()["queries"]
        assert [(q["id"], q["subscriber"], q["metadata"]) for q in listed] == [
            ("rio", "alice", {}), ("gold", "bob", {"k": 1}), ("any", None, {})]
        # answers as an engine holding the same queries
        reference = Engine()
        for rec in GOOD:
            reference.register(rec["query"], rec["id"], rec.get("subscriber"))
        body_rdf = rdf("Rio games", "gold", "games")
        answer = (await client.post("/publications", content=body_rdf, headers=NT)).text
        assert answer.splitlines() == [match_line(p.id, m) for p in
                                       publications_from_bytes(body_rdf, "nt") for m in reference.match(p)]
        # again: replaced; a line that is not JSON; an id given twice
        r = await client.post("/queries", content=ndjson(GOOD[0]), headers=NDJSON)
        assert r.json()["replaced"] == 1
        r = await client.post("/queries", content=ndjson(GOOD[0]) + b"{nope\n", headers=NDJSON)
        assert r.status_code == 400 and r.json()["error"].startswith("<body>:2: not a JSON object")
        r = await client.post("/queries", content=ndjson(GOOD[1], GOOD[1]), headers=NDJSON)
        assert r.status_code == 400 and "given twice (lines 1 and 2)" in r.json()["error"]
        r = await client.post("/queries", content=ndjson({"query": query("x")}), headers=NDJSON)
        assert r.status_code == 400 and "a query id is needed" in r.json()["error"]
        r = await client.post("/queries", content=ndjson(*GOOD), headers={"Content-Type": "text/csv"})
        assert r.status_code == 415

    in_process(tmp_path, check)


def test_bulk_registration_line_by_line(tmp_path):
    async def check(client, broker):
        mixed = [GOOD[0], {"id": "broken", "query": "ASK { ?s ?p }"}, GOOD[1], GOOD[0]]
        r = await client.post("/queries", params={"atomic": "false"},
                              content=ndjson(*mixed) + b"[]\n", headers=NDJSON)
        assert r.status_code == 200 and r.headers["content-type"].startswith("application/x-ndjson")
        results = [json.loads(line) for line in r.text.splitlines()]
        assert [(x["line"], x["id"], x["status"]) for x in results] == [
            (1, "rio", 201), (2, "broken", 400), (3, "gold", 201), (4, "rio", 400), (5, None, 400)]
        assert results[1]["query_line"] == 1 and "given twice" in results[3]["error"]
        assert r.headers["X-RTF-Registered"] == "2" and r.headers["X-RTF-Failed"] == "3"
        assert sorted(q.id for q in broker.engine.queries()) == ["gold", "rio"]
        assert broker.registry.store.count() == 2

    in_process(tmp_path, check)


TOKENS = ("admin-token-0123456789 admin\npub-token-0123456789 publisher\n"
          "alice-token-0123456789 subscriber:alice\nbob-token-0123456789 subscriber:bob\n"
          "scrape-token-0123456789 metrics\n")


def _tokens(tmp_path) -> Tokens:
    path = tmp_path / "tokens.txt"
    path.write_text(TOKENS)
    return Tokens.from_file(path)


def test_bulk_registration_roles(tmp_path):
    async def check(client, broker):
        def auth(name):
            return {**NDJSON, "Authorization": f"Bearer {name}-token-0123456789"}
        mine = ndjson({"id": "a1", "query": query("rio")}, {"id": "a2", "query": query("x"),
                                                             "subscriber": "alice"})
        r = await client.post("/queries", content=mine, headers=auth("alice"))
        assert r.status_code == 200 and {q.subscriber for q in broker.engine.queries()} == {"alice"}
        r = await client.post("/queries", content=ndjson({"id": "b1", "query": query("x"),
                                                          "subscriber": "bob"}), headers=auth("alice"))
        assert r.status_code == 403 and r.json()["record"] == 1
        r = await client.post("/queries", content=ndjson({"id": "a1", "query": query("y")}),
                              headers=auth("bob"))  # alice's id: not bob's to replace
        assert r.status_code == 403 and "belongs to another subscriber" in r.json()["error"]
        for role in ("pub", "scrape"):
            assert (await client.post("/queries", content=mine, headers=auth(role))).status_code == 403
        assert len(broker.engine) == 2

    in_process(tmp_path, check, _tokens(tmp_path))


# ----------------------------------------------------- metrics role, tickets


def test_metrics_role_reads_metrics_only(tmp_path):
    async def check(client, broker):
        scrape = {"Authorization": "Bearer scrape-token-0123456789"}
        r = await client.get("/metrics", headers=scrape)
        assert r.status_code == 200 and "rtf_queries" in r.text
        assert (await client.post("/publications", content=rdf("x"), headers={**NT, **scrape})
                ).status_code == 403
        assert (await client.get("/queries", headers=scrape)).status_code == 403
        assert (await client.get("/metrics", headers={"Authorization": "Bearer pub-token-0123456789"})
                ).status_code == 403

    in_process(tmp_path, check, _tokens(tmp_path))


def test_tickets_sign_a_subscriber_and_expire():
    now = [1000.0]
    tickets = Tickets(ttl=60, clock=lambda: now[0])
    ticket, expires = tickets.issue("alice")
    assert expires == 1060 and tickets.check(ticket, "alice")
    assert not tickets.check(ticket, "bob")
    assert not tickets.check(ticket.replace(".", ".x"), "alice")
    signature = ticket.split(".")[1]
    assert not tickets.check(f"1060.{signature[:-1]}{'B' if signature[-1] == 'A' else 'A'}", "alice")
    assert not Tickets(ttl=60, clock=lambda: now[0]).check(ticket, "alice")  # another server's key
    for junk in ("", ".", "abc", "9" * 40 + ".x", "1060.é"):
        assert not tickets.check(junk, "alice")
    now[0] = 1061.0
    assert not tickets.check(ticket, "alice")


@pytest.mark.slow
def test_a_stream_ticket_opens_its_stream_without_a_header(tmp_path):
    tokens = tmp_path / "tokens.txt"
    tokens.write_text(TOKENS)
    with ServerProcess(tmp_path / "b", "--tokens", tokens) as server:
        with server.client(token="alice-token-0123456789") as alice:
            r = alice.post("/subscribers/alice/tickets")
            assert r.status_code == 200, r.text
            ticket = r.json()
            assert ticket["url"] == f"/subscribers/alice/matches?ticket={ticket['ticket']}"
            assert alice.post("/subscribers/bob/tickets").status_code == 403
        with server.client(token=None) as anyone:
            with anyone.stream("GET", ticket["url"]) as stream:
                assert stream.status_code == 200
                first = next(stream.iter_lines())
                assert first.startswith("id: ")  # the `open` event
            bad = anyone.get(f"/subscribers/bob/matches?ticket={ticket['ticket']}")
            assert bad.status_code == 401 and "ticket" in bad.json()["error"]
            assert anyone.get("/subscribers/alice/matches?ticket=1.x").status_code == 401


# ------------------------------------------------------------- SPARQL JSON


def test_sparql_json_answer_is_one_results_document(tmp_path):
    async def check(client, broker):
        r = await client.post("/queries", content=ndjson(
            {"id": "sel", "query": query("rio"), "subscriber": "alice"},
            {"id": "ask", "query": query("rio", False)},
            {"id": "clash", "query": f'SELECT ?query WHERE {{ ?query <{EX}title> ?t }}'}),
            headers=NDJSON)
        assert r.status_code == 200
        body = rdf("Rio games", "nothing")
        plain = await client.post("/publications", content=body, headers=NT)
        r = await client.post("/publications", content=body,
                              headers={**NT, "Accept": "application/sparql-results+json"})
        assert r.status_code == 200 and r.headers["content-type"] == "application/sparql-results+json"
        assert r.headers["X-RTF-Matches"] == plain.headers["X-RTF-Matches"] == "4"
        doc = r.json()
        # ?query is a query's variable: the match's own column is query_
        assert doc["head"]["vars"] == ["publication", "query_", "subscriber", "query", "s", "t"]
        p0 = {"type": "uri", "value": f"{EX}p0"}
        expected_rows = []
        for line in plain.text.splitlines():
            m = json.loads(line)
            row = {"publication": {"type": "uri", "value": m["publication"]},
                   "query_": {"type": "literal", "value": m["query"]}}
            if m["subscriber"]:
                row["subscriber"] = {"type": "literal", "value": m["subscriber"]}
            for binding in m["bindings"] or [{}]:
                expected_rows.append({**row, **{v: sparql_term(t) for v, t in binding.items()}})
        assert doc["results"]["bindings"] == expected_rows
        assert expected_rows[0]["publication"] == p0 and len(expected_rows) == 4
        r = await client.post("/publications", content=body, headers={**NT, "Accept": "text/html"})
        assert r.status_code == 406 and "application/sparql-results+json" in r.json()["error"]
        r = await client.post("/publications", content=body, headers={
            **NT, "Accept": "application/x-ndjson;q=0.5, application/sparql-results+json"})
        assert r.headers["content-type"] == "application/sparql-results+json"
        r = await client.post("/publications", content=body, headers={**NT, "Accept": "*/*"})
        assert r.text == plain.text

    in_process(tmp_path, check)


# ------------------------------------------------------------ the OpenAPI document


@pytest.mark.parametrize("with_tokens", [False, True])
def test_openapi_document_is_valid_and_says_what_the_server_answers(tmp_path, with_tokens):
    validator = pytest.importorskip("openapi_spec_validator")

    async def check(client, broker):
        doc = (await client.get("/openapi.json")).json()
        validator.validate(doc)
        text = json.dumps(doc)
        assert '"422"' not in text and "HTTPValidationError" not in text
        ops = {(path, method): op for path, item in doc["paths"].items() for method, op in item.items()}
        assert {"400", "401", "403", "413", "500", "507"} <= set(ops["/queries/{query_id}", "put"]["responses"])
        assert {"400", "406", "413", "415"} <= set(ops["/publications", "post"]["responses"])
        assert "404" in ops["/queries/{query_id}", "get"]["responses"]
        assert ops["/queries/{query_id}", "get"]["responses"]["404"]["content"]["application/json"][
            "schema"] == {"$ref": "#/components/schemas/ErrorBody"}
        assert doc["components"]["securitySchemes"]["bearer"] == {
            "type": "http", "scheme": "bearer", "description": doc["components"]["securitySchemes"][
                "bearer"]["description"]}
        secured = ops["/publications", "post"].get("security")
        assert secured == ([{"bearer": []}] if with_tokens else None)
        assert ops["/health", "get"].get("security") is None
        if with_tokens:
            assert {"ticket": []} in ops["/subscribers/{name}/matches", "get"]["security"]
        # the docs page and its script come from this server (no CDN)
        page = (await client.get("/docs")).text
        assert "cdn" not in page.lower()
        script = page.split('src="')[1].split('"')[0]
        r = await client.get(script)
        assert r.status_code == 200 and len(r.content) > 100_000

    in_process(tmp_path, check, _tokens(tmp_path) if with_tokens else None)


# ------------------------------------------------------- starting from an index


@pytest.mark.slow
def test_import_index_starts_a_folder_without_parsing(tmp_path):
    engine = Engine()
    queries = {f"q{i}": (query(w), s) for i, (w, s) in
               enumerate([("rio", "alice"), ("gold", None), ("games", "bob")])}
    for qid, (text, sub) in queries.items():
        engine.register(text, qid, sub, {"n": qid})
    idx = tmp_path / "q.idx"
    engine.save(idx)
    data = tmp_path / "b"
    body = rdf("Rio games", "gold")
    expected = [match_line(p.id, m) for p in publications_from_bytes(body, "nt") for m in engine.match(p)]
    server = ServerProcess(data, "--import-index", idx)
    with server, server.client() as http:
        health = server.health()
        assert health["startup"]["from"] == "import" and health["queries"] == 3
        assert http.get("/queries/q0").json() == {"id": "q0", "subscriber": "alice",
                                                  "query": queries["q0"][0], "metadata": {"n": "q0"}}
        assert http.post("/publications", content=body, headers=NT).text.splitlines() == expected
        http.delete("/queries/q1")
    # the same command again: the folder is served as it is (q1 stays removed)
    with server, server.client() as http:
        assert server.health()["startup"]["from"] == "snapshot"
        assert server.health()["queries"] == 2 and http.get("/queries/q1").status_code == 404
    other = Engine()
    other.register(query("x"), "z")
    other.save(tmp_path / "other.idx")
    done = run_serve(data, "--import-index", tmp_path / "other.idx")
    assert done.returncode == 1 and "holds 2 queries already" in done.stderr
    assert done.stderr.count("\n") == 1
    done = run_serve(tmp_path / "c", "--import-index", idx, "--algorithm", "naive")
    assert done.returncode == 1 and "--algorithm rtfs" in done.stderr
    (tmp_path / "junk.idx").write_bytes(b"not an index")
    done = run_serve(tmp_path / "d", "--import-index", tmp_path / "junk.idx")
    assert done.returncode == 1 and "Traceback" not in done.stderr and done.stderr.count("\n") == 1


# --------------------------------------------------------------- a light core


SERVER_STACK = ("fastapi", "uvicorn", "starlette", "httpx", "sse_starlette", "prometheus_client",
                "pydantic", "anyio", "httpx_sse", "fastapi_offline")


@pytest.mark.slow
def test_the_engine_and_rtf_match_never_import_the_server_stack(tmp_path):
    root = Path(__file__).resolve().parents[1]
    script = (
        "import sys, io, contextlib\n"
        "import rtf\n"
        "from rtf import Engine\n"
        "from rtf.cli import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):\n"
        f"    main(['match', '--queries', {str(root / 'examples/news_queries.jsonl')!r}, "
        f"'--publications', {str(root / 'examples/news.nt')!r}])\n"
        f"    main(['demo'])\n"
        f"    main(['--help']) if False else None\n"
        f"stack = {SERVER_STACK!r}\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & set(stack)))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_rtf_serve_without_the_extra_says_what_to_install(tmp_path):
    script = ("import importlib.util, sys\n"
              "real = importlib.util.find_spec\n"
              "importlib.util.find_spec = lambda name, *a: None if name == 'fastapi' else real(name, *a)\n"
              "from rtf.cli import main\n"
              f"sys.exit(main(['serve', '--data', {str(tmp_path / 'b')!r}]))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr == ("rtf: error: rtf serve needs the server extra (fastapi missing): "
                           "pip install 'rtf[server]'\n")
