"""The API behind the console (issue 41, docs/console.md): ``POST /check`` says what
``rtf check`` says, ``POST /match`` matches without notifying anyone, a pushed match
is explained from the outbox, ``/whoami``, the page's headers, ``contains=``, the
subscribers gauge, and no page of another origin changing anything.

In-process (httpx's ASGI transport) where no stream is read; a real server for
the match-only call and the explanations of pushed matches. The browser tests
are tests/test_console_browser.py.
"""

from __future__ import annotations

import json
import re
from itertools import islice
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

httpx = pytest.importorskip("httpx")

from rtf.engine import Engine  # noqa: E402
from rtf.io.output import match_line  # noqa: E402
from rtf.io.publication import Publication  # noqa: E402
from rtf.io.reader import publications_from_bytes  # noqa: E402
from rtf.server import api_console  # noqa: E402
from rtf.server.api_check import check_query  # noqa: E402
from rtf.server.auth import Tokens  # noqa: E402
from rtf.server.client import Client  # noqa: E402
from rtf.server.process import ServerProcess  # noqa: E402
from rtf.server.recent import Recent  # noqa: E402
from tests.test_server_api import in_process  # noqa: E402

EX = "http://ex.org/console/"
NT = {"Content-Type": "application/n-triples"}
TOKENS = {"admin": "admin-token-0123456789", "publisher": "publisher-token-0123456789",
          "alice": "alice-token-0123456789", "bob": "bob-token-0123456789",
          "metrics": "metrics-token-0123456789"}


def query(word: str, select: bool = True) -> str:
    head = "SELECT ?s ?t WHERE" if select else "ASK"
    return f'{head} {{ ?s <{EX}title> ?t FILTER ftcontains(?t, "{word}") }}'


def rdf(*titles: str) -> bytes:
    return "".join(f'<{EX}p{i}> <{EX}title> "{t}" .\n' for i, t in enumerate(titles)).encode()


def tokens_file(folder) -> Path:
    path = folder / "tokens.txt"
    path.write_text("".join(f"{token} {'subscriber:' + who if who in ('alice', 'bob') else who}\n"
                            for who, token in TOKENS.items()))
    return path


def lines(response) -> list[dict]:
    assert response.status_code == 200, response.text
    return [json.loads(line) for line in response.content.split(b"\n") if line.strip()]


# ------------------------------------------------------------------ POST /check


def rtf_check(text: str, capsys) -> tuple[str, str]:
    """What `rtf check TEXT` prints: (stdout, stderr)."""
    from rtf.cli import main
    capsys.readouterr()
    main(["check", text])
    return capsys.readouterr()


def assert_same_as_rtf_check(answer: dict, text: str, capsys) -> None:
    out, err = rtf_check(text, capsys)
    if answer["valid"]:
        assert out == answer["description"] + "\n"
        assert err.splitlines() == [f"warning: {w}" for w in answer["warnings"]]
    else:
        assert out == ""
        assert err.splitlines()[0] == answer["error"]
        where = "" if answer["line"] is None else f"line {answer['line']}, column {answer['column']}: "
        assert answer["error"] == f"invalid query: {where}{answer['message']}"


CHECKED = [
    query("rio"),
    'SELECT ?a WHERE {\n  ?a <http://ex/p> ?t\n  FILTER ftcontains(?t, "rio" ftand)\n}',
    f'ASK {{ ?s <{EX}title> ?t FILTER ftcontains(?x, "rio") }}',         # can never match
    "SELECT ?s WHERE { ?s ?p ?o FILTER ftcontains(?o, \"é\") } garbage",  # trailing text
    "ASK { ?s <http://ex/p> ?o OPTIONAL { ?s <http://ex/q> ?z } }",
    "",
]


@pytest.mark.parametrize("text", CHECKED)
def test_check_says_what_rtf_check_says(tmp_path, text, capsys):
    async def check(client, broker):
        for body, headers in (({"json": {"query": text}}, {}),
                              ({"content": text.encode()}, {"Content-Type": "application/sparql-query"}),
                              ({"content": text.encode()}, {"Content-Type": "text/plain; charset=utf-8"})):
            r = await client.post("/check", headers=headers, **body)
            assert r.status_code == 200, r.text
            answers.append(r.json())

    answers: list[dict] = []
    in_process(tmp_path, check)
    assert answers[0] == answers[1] == answers[2]
    assert_same_as_rtf_check(answers[0], text, capsys)


def test_check_places_the_error_and_names_what_was_expected():
    answer = check_query(CHECKED[1])
    assert (answer["valid"], answer["line"], answer["column"]) == (False, 3, 36)
    assert CHECKED[1].splitlines()[2][35] == ")"  # the column counts characters from 1
    assert answer["expected"] and all(e in answer["message"] for e in answer["expected"])
    warned = check_query(CHECKED[2])
    assert warned["valid"] and "can never match" in warned["warnings"][0]
    assert warned["form"] == "ASK" and warned["branches"] == 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_check_equals_rtf_check_on_damaged_queries(data, capsys):
    """Any text made from a valid query by deleting, inserting or replacing a few
    characters: the endpoint's answer is `rtf check`'s, position and all."""
    text = data.draw(st.sampled_from(CHECKED[:5]))
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(text)))
        piece = data.draw(st.sampled_from(["", "(", ")", "{", '"', "\n", "é", "?", "ftand", "𝄞"]))
        cut = data.draw(st.integers(0, 2))
        text = text[:at] + piece + text[at + cut:]
    assert_same_as_rtf_check(check_query(text), text, capsys)


def test_check_refuses_what_is_not_a_query(tmp_path):
    async def check(client, broker):
        for kwargs, status, says in (
                ({"content": b'{"q": 1}', "headers": {"Content-Type": "application/json"}}, 400, '{"query"'),
                ({"content": b"[1]", "headers": {"Content-Type": "application/json"}}, 400, '{"query"'),
                ({"content": b"{nope", "headers": {"Content-Type": "application/json"}}, 400, "not JSON"),
                ({"content": b"\xff", "headers": {"Content-Type": "text/plain"}}, 400, "not UTF-8"),
                ({"content": b"ASK {}", "headers": {"Content-Type": "text/csv"}}, 415, "cannot read")):
            r = await client.post("/check", **kwargs)
            assert r.status_code == status and says in r.json()["error"], r.text

    in_process(tmp_path, check)


# ------------------------------------------------------------------ who, page, headers


def test_whoami_tells_the_page_who_its_token_is(tmp_path):
    async def check(client, broker):
        assert (await client.get("/whoami")).json() == {"role": "admin", "subscriber": None,
                                                        "tokens": False}

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    in_process(tmp_path / "a", check)

    async def check_tokens(client, broker):
        assert (await client.get("/whoami")).status_code == 401
        for who, token in TOKENS.items():
            r = await client.get("/whoami", headers={"Authorization": f"Bearer {token}"})
            role = "subscriber" if who in ("alice", "bob") else who
            assert r.json() == {"role": role, "subscriber": who if role == "subscriber" else None,
                                "tokens": True}

    in_process(tmp_path / "b", check_tokens, Tokens.from_file(tokens_file(tmp_path)))


class _Markup(HTMLParser):
    """The scripts, inline handlers and style attributes of an HTML page."""

    def __init__(self):
        super().__init__()
        self.scripts, self.handlers, self.styles, self.inline = [], [], [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "script":
            self.scripts.append(attrs.get("src"))
        self.handlers += [name for name in attrs if name.startswith("on")]
        self.styles += [tag for name in attrs if name == "style"]
        if tag == "style":
            self.inline.append(tag)

    def handle_data(self, data):
        if self.lasttag == "script" and data.strip():
            self.inline.append(data)


def test_console_is_served_offline_with_a_strict_policy(tmp_path):
    async def check(client, broker):
        for path in ("/", "/console"):
            r = await client.get(path)
            assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
            page = r.text
            policy = r.headers["content-security-policy"]
            assert "script-src 'self'" in policy and "default-src 'none'" in policy
            assert "unsafe" not in policy and "require-trusted-types-for 'script'" in policy
            assert r.headers["x-content-type-options"] == "nosniff"
            assert r.headers["x-frame-options"] == "DENY"
        markup = _Markup()
        markup.feed(page)
        # nothing the policy would block: no inline script, handler or style
        assert markup.scripts == ["console/console.js"]
        assert markup.handlers == markup.styles == markup.inline == []
        # every asset from the server itself (no CDN)
        assert not re.search(r"""(src|href)="(https?:)?//""", page)
        for name, kind in (("console.js", "text/javascript"), ("console.css", "text/css")):
            r = await client.get(f"/console/{name}")
            assert r.status_code == 200 and r.headers["content-type"].startswith(kind)
            assert r.headers["content-security-policy"] == api_console.CSP
            assert "http://" not in r.text and "https://" not in r.text
        js = (await client.get("/console/console.js")).text
        # the page writes text only: no HTML sink, no eval
        assert not re.search(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|"
                             r"new Function|setAttribute\(\s*[\"']on", js)
        r = await client.get("/console/other.js")
        assert r.status_code == 404 and "error" in r.json()
        # the console's routes are pages, not API: not in the OpenAPI document
        paths = (await client.get("/openapi.json")).json()["paths"]
        assert "/" not in paths and "/console" not in paths
        assert {"/check", "/match", "/whoami",
                "/subscribers/{name}/matches/{event}/explanation"} <= set(paths)

    in_process(tmp_path, check)


def test_console_files_are_small():
    from importlib.resources import files
    sizes = {name: len(files("rtf.server.console").joinpath(name).read_bytes())
             for name in ("index.html", "console.css", "console.js")}
    assert sum(sizes.values()) < 60_000, sizes


# ------------------------------------------------------------------ cross-site requests


def test_no_page_of_another_origin_changes_anything(tmp_path):
    """Without --tokens anyone on the machine may do anything, but not another site's
    page through a visitor's browser: a write that says it comes from another origin
    is refused before it is read; reads and clients that are not browsers pass."""
    async def check(client, broker):
        body = rdf("Rio")
        refused = [{"Sec-Fetch-Site": "cross-site"}, {"Sec-Fetch-Site": "same-site"},
                   {"Origin": "http://evil.example"}, {"Origin": "null"},
                   {"Origin": "http://rtf:8750"},  # another port is another origin
                   {"Sec-Fetch-Site": "cross-site", "Origin": "http://rtf"}]
        for headers in refused:
            for method, path, kwargs in (("POST", "/publications", {"content": body, "headers": NT}),
                                         ("PUT", "/queries/x", {"json": {"query": query("rio")}}),
                                         ("DELETE", "/queries/x", {})):
                kwargs = {**kwargs, "headers": {**kwargs.get("headers", {}), **headers}}
                r = await client.request(method, path, **kwargs)
                assert r.status_code == 403 and "another origin" in r.json()["error"], (headers, r.text)
        assert broker.metrics.publications._value.get() == 0 and len(broker.engine) == 0
        allowed = [{}, {"Sec-Fetch-Site": "same-origin", "Origin": "http://rtf"},
                   {"Sec-Fetch-Site": "none"}, {"Origin": "http://RTF"}]
        for n, headers in enumerate(allowed):
            r = await client.put(f"/queries/q{n}", json={"query": query("rio")}, headers=headers)
            assert r.status_code == 201, (headers, r.text)
        r = await client.get("/queries", headers={"Sec-Fetch-Site": "cross-site"})
        assert r.status_code == 200  # a read changes nothing (and no CORS: unreadable there)

    in_process(tmp_path, check)


# ------------------------------------------------------------------ listing, metrics


def test_queries_contains_filters_by_id_or_text(tmp_path):
    async def check(client, broker):
        ids = ["Rio-games", "gold%", "gold_x", "goldax", "plain", "back\\slash", "naïve"]
        for n, qid in enumerate(ids):
            sub = "alice" if n % 2 else "bob"
            r = await client.put(f"/queries/{qid.replace('%', '%25')}",
                                 json={"query": query("w" + str(n)), "subscriber": sub})
            assert r.status_code == 201, r.text

        async def found(**params):
            r = await client.get("/queries", params=params)
            assert r.status_code == 200, r.text
            return [q["id"] for q in r.json()["queries"]]

        assert await found(contains="rio") == ["Rio-games"]      # ASCII letters, any case
        assert await found(contains="%") == ["gold%"]             # a wildcard of LIKE is a character
        assert await found(contains="_") == ["gold_x"]
        assert await found(contains="\\") == ["back\\slash"]
        assert await found(contains="ï") == ["naïve"]
        assert await found(contains='"w3"') == ["goldax"]        # the text too
        assert await found(contains="gold", subscriber="alice") == ["gold%", "goldax"]
        assert await found(contains="") == ids
        # pages of a filtered listing
        r = (await client.get("/queries", params={"contains": "gold", "limit": 2})).json()
        assert [q["id"] for q in r["queries"]] == ["gold%", "gold_x"] and r["next"] is not None
        r = (await client.get("/queries", params={"contains": "gold", "limit": 2,
                                                   "after": r["next"]})).json()
        assert [q["id"] for q in r["queries"]] == ["goldax"] and r["next"] is None

    in_process(tmp_path, check)


def test_metrics_count_the_subscribers(tmp_path):
    def subscribers(text: str) -> float:
        return float(re.search(r"^rtf_subscribers (\S+)$", text, re.M).group(1))

    async def check(client, broker):
        assert subscribers((await client.get("/metrics")).text) == 0
        for qid, sub in (("a1", "alice"), ("a2", "alice"), ("b1", "bob"), ("n", None)):
            await client.put(f"/queries/{qid}", json={"query": query("x"), "subscriber": sub})
        assert subscribers((await client.get("/metrics")).text) == 2
        await client.delete("/queries/b1")
        assert subscribers((await client.get("/metrics")).text) == 1

    in_process(tmp_path, check)


def test_recent_keeps_the_last_matched_publications_by_id():
    recent = Recent(size=2)
    pubs = [Publication(f"{EX}{n}", [(f"<{EX}{n}>", f"<{EX}p>", f'"{n}"')]) for n in range(3)]
    for pub in pubs:
        recent.add(pub)
    assert recent.get(pubs[0].id) is None and recent.get(pubs[2].id) is pubs[2]
    again = Publication(pubs[1].id, [(f"<{EX}1>", f"<{EX}p>", '"newer"')])
    recent.add(again)  # the newest of an id replaces it, and is the youngest
    recent.add(pubs[0])
    assert recent.get(pubs[1].id) is again and recent.get(pubs[2].id) is None and len(recent) == 2


# ------------------------------------------------------------------ a real server


def token_server(folder) -> ServerProcess:
    """A server in `folder` with TOKENS (not started), the admin's token for its clients."""
    return ServerProcess(folder / "broker", "--tokens", tokens_file(folder), token=TOKENS["admin"])


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with token_server(tmp_path_factory.mktemp("console-api")) as proc:
        yield proc


QUERIES = {"m-alice": (query("rio"), "alice"), "m-bob": (query("rio", select=False), "bob"),
           "m-none": (query("games"), None), "m-alice-2": (query("games"), "alice")}


def reference_lines(body: bytes, explain: bool = False, metadata: dict | None = None) -> list[dict]:
    """What `rtf match --explain --with-metadata` writes for QUERIES and `body`."""
    engine = Engine()
    for qid, (text, sub) in QUERIES.items():
        engine.register(text, qid, sub)
    out = []
    for pub in publications_from_bytes(body, "nt"):
        for m in engine.match(pub):
            line = json.loads(match_line(pub.id, m))
            if metadata is not None:
                line["metadata"] = metadata.get(m.query_id, {})
            if explain:
                line["explain"] = m.explain(pub, engine)
            out.append(line)
    return out


def test_match_only_answers_rtf_match_and_notifies_nobody(server):
    body = rdf("Rio games", "more games", "nothing")
    with server.client() as admin, server.client(token=TOKENS["alice"]) as alice, \
            server.client(token=TOKENS["publisher"]) as publisher, \
            server.client(token=TOKENS["metrics"]) as scraper:
        for qid, (text, sub) in QUERIES.items():
            r = admin.put(f"/queries/{qid}", json={"query": text, "subscriber": sub,
                                                    "metadata": {"of": qid}})
            assert r.status_code in (200, 201), r.text
        before = admin.get("/health").json()["last_event_id"]
        published = admin.get("/metrics").text
        # everything, as rtf match writes it, with --explain and --with-metadata
        r = publisher.post("/match", content=body, headers=NT,
                           params={"explain": "true", "with_metadata": "true"})
        metadata = {qid: {"of": qid} for qid in QUERIES}
        assert lines(r) == reference_lines(body, explain=True, metadata=metadata)
        # "Rio games": the four queries; "more games": the two of "games"; "nothing": none
        assert r.headers["X-RTF-Publications"] == "3" and r.headers["X-RTF-Matches"] == "6"
        assert lines(admin.post("/match", content=body, headers=NT)) == reference_lines(body)
        # a subscriber sees only its own queries' matches
        mine = lines(alice.post("/match", content=body, headers=NT, params={"explain": "true"}))
        assert mine == [x for x in reference_lines(body, explain=True) if x["subscriber"] == "alice"]
        assert {x["query"] for x in mine} == {"m-alice", "m-alice-2"}
        # refused: a metrics token, bad RDF, another type
        assert scraper.post("/match", content=body, headers=NT).status_code == 403
        r = admin.post("/match", content=b"<a> <b> .", headers=NT)
        assert r.status_code == 400 and r.json()["error"].startswith("bad N-Triples")
        r = admin.post("/match", content=b"x:a <b> <c> .", headers=NT)  # as POST /publications says it
        assert r.status_code == 400 and "prefix name" not in r.json()["error"], r.json()
        assert admin.post("/match", content=body, headers={"Content-Type": "text/csv"}).status_code == 415
        # nothing was published: no event, no count, nothing on alice's stream
        assert admin.get("/health").json()["last_event_id"] == before
        counted = re.compile(r"^rtf_(publications|matches|outbox_events)_total .*$", re.M)
        assert counted.findall(admin.get("/metrics").text) == counted.findall(published)
        with Client(server.url, token=TOKENS["alice"]) as client:
            assert list(client.matches("alice", last_event_id=before, timeout=1)) == []
            # ... where publishing the same body is seen
            publisher.post("/publications", content=body, headers=NT)
            expected = [x for x in reference_lines(body) if x["subscriber"] == "alice"]
            got = islice(client.matches("alice", last_event_id=before, timeout=10), len(expected))
            assert [e.match for e in got] == expected


@pytest.mark.slow
def test_a_pushed_match_is_explained_from_the_outbox(server):
    body = rdf("Rio and the games", "games again")
    with server.client() as admin, server.client(token=TOKENS["alice"]) as alice, \
            server.client(token=TOKENS["bob"]) as bob:
        for qid, (text, sub) in QUERIES.items():
            admin.put(f"/queries/{qid}", json={"query": text, "subscriber": sub,
                                               "metadata": {"of": qid}})
        before = admin.get("/health").json()["last_event_id"]
        admin.post("/publications", content=body, headers=NT)
        with Client(server.url, token=TOKENS["alice"]) as client:
            events = list(islice(client.matches("alice", last_event_id=before, timeout=10), 3))
        assert len(events) == 3
        expected = {(x["publication"], x["query"]): x for x in
                    reference_lines(body, explain=True, metadata={q: {"of": q} for q in QUERIES})}
        for event in events:
            r = alice.get(f"/subscribers/alice/matches/{event.id}/explanation")
            assert r.status_code == 200, r.text
            answer = r.json()
            assert answer == expected[answer["publication"], answer["query"]]
            assert any(hit["words"] for e in answer["explain"] for ft in e["ftcontains"]
                       for hit in ft["hits"])
            # another subscriber may not ask; nor about its own stream with alice's id
            assert bob.get(f"/subscribers/alice/matches/{event.id}/explanation").status_code == 403
            assert bob.get(f"/subscribers/bob/matches/{event.id}/explanation").status_code == 404
        for missing in (0, events[-1].id + 1000, 2**70):
            r = alice.get(f"/subscribers/alice/matches/{missing}/explanation")
            assert r.status_code == 404 and "no event" in r.json()["error"], r.text
    # the publications are held in memory only: none after a restart
    server.restart()
    with server.client(token=TOKENS["alice"]) as alice:
        r = alice.get(f"/subscribers/alice/matches/{events[0].id}/explanation")
        assert r.status_code == 404 and "no longer held" in r.json()["error"]
