"""The console in a real browser (issue 41, docs/console.md).

Playwright (the Python package) drives Debian's Chromium, headless, launched by
path (no browser download), against real ``rtf serve`` processes on 127.0.0.1:
one without ``--tokens`` (single-user mode), one with, and one with tiny
stream and outbox bounds (to see a cut and a gap). One browser for the module,
a fresh context (storage, cookies) per test; every wait is on an element, none
on time. Each test fails on a script error, a Content-Security-Policy
violation or a dialog (an ``alert`` an injection would open).

The screenshots of docs/console.md are written here (docs/console/*.png), so
they show what the page does; a file is rewritten only when the picture changed
meaningfully (over 1% of its pixels, or its size), not for a changed number.

Skipped, with the reason, when the ``playwright`` package or Chromium is
missing (`.ci/run` installs Debian's ``chromium``, and sets ``RTF_REQUIRE_BROWSER``
so that they fail there instead; set ``RTF_CHROMIUM`` to use another binary).
"""

from __future__ import annotations

import http.server
import io
import json
import os
import re
import shutil
import socket
import threading
import time
from pathlib import Path
from urllib.parse import quote, unquote

import pytest

httpx = pytest.importorskip("httpx")
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not "
                               "installed (pip install -e '.[dev]')")
expect = sync_api.expect

from rtf.io import datasets  # noqa: E402
from rtf.server.api_check import check_query  # noqa: E402
from rtf.server.process import ServerProcess  # noqa: E402
from tests.test_console_api import TOKENS, token_server  # noqa: E402

#: Spark, rtf serve processes or a browser: out of the quick subset (pytest -m 'not slow').
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "docs" / "console"
CHROMIUM = os.environ.get("RTF_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
NT = {"Content-Type": "application/n-triples"}
EX = "http://ex.org/browser/"
#: Waits on elements, in ms: generous, since a loaded machine is slow (they end early).
WAIT = 15_000

AIRLINES = ("PREFIX dbo: <http://dbpedia.org/ontology/>\n"
            "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>\n"
            "SELECT ?airline ?name WHERE {\n"
            "  ?airline a dbo:Airline ; rdfs:label ?name ; dbo:abstract ?text .\n"
            '  FILTER ftcontains(?text, "flag" ftand "carrier")\n'
            "}\n")


def query(word: str, select: bool = True) -> str:
    head = "SELECT ?s ?t WHERE" if select else "ASK"
    return f'{head} {{ ?s <{EX}title> ?t FILTER ftcontains(?t, "{word}") }}'


def triple(subject: str, text: str) -> str:
    return f'<{EX}{subject}> <{EX}title> "{text}" .\n'


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        missing = (f"Chromium not found at {CHROMIUM}: `apt-get install chromium` (.ci/run "
                   "does it), or set RTF_CHROMIUM")
        if os.environ.get("RTF_REQUIRE_BROWSER"):  # CI: the browser tests must run
            pytest.fail(missing)
        pytest.skip(missing)
    with sync_api.sync_playwright() as p:
        # Playwright gives each launch a fresh, temporary profile (--user-data-dir)
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def open_server(tmp_path_factory):
    """Single-user mode, on a fixed port: the page reconnects to it after a restart."""
    folder = tmp_path_factory.mktemp("console-open")
    with ServerProcess(folder / "broker", "--port", free_port()) as proc:
        yield proc


@pytest.fixture(scope="module")
def auth_server(tmp_path_factory):
    with token_server(tmp_path_factory.mktemp("console-auth")) as proc:
        yield proc


class Watched:
    """A page, and what went wrong on it: script errors, CSP violations, dialogs."""

    def __init__(self, page):
        self.page = page
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        page.on("pageerror", lambda e: self.errors.append(f"page error: {e}"))
        page.on("console", lambda m: m.type == "error" and not _expected(m.text)
                and self.errors.append(f"console: {m.text}"))
        page.on("dialog", self._dialog)
        page.add_init_script("window.__violations = [];"
                             "document.addEventListener('securitypolicyviolation', (e) => "
                             "window.__violations.push(e.violatedDirective + ' ' + e.blockedURI));")

    def _dialog(self, dialog):
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def check(self):
        violations = self.page.evaluate("window.__violations || []")
        assert (self.errors, violations, self.dialogs) == ([], [], [])

    def forget(self):
        """Forget what went wrong so far (a test's own probe)."""
        self.errors.clear()
        self.page.evaluate("window.__violations = []")


def _expected(text: str) -> bool:
    """Console errors a browser logs for answers the page expects and shows: a refused
    request (401, 403, 404), and a stream that drops while the server restarts."""
    return bool(re.search(r"status of (401|403|404)|ERR_CONNECTION_REFUSED|ERR_EMPTY_RESPONSE|"
                          r"net::ERR_|EventSource", text))


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    watched = Watched(context.new_page())
    yield watched
    try:
        watched.check()
        assert context.cookies() == []  # the console keeps nothing in cookies
    finally:
        context.close()


def open_console(watched: Watched, server: ServerProcess, path: str = "/"):
    watched.page.goto(server.url + path)
    return watched.page


def sign_in(page, token: str):
    page.locator("#sign-in:not([hidden])").wait_for(timeout=WAIT)
    page.fill("#token", token)
    page.click("#sign-in-form button")
    page.locator("#app:not([hidden])").wait_for(timeout=WAIT)


def shoot(target, name: str) -> None:
    """Save a screenshot of `target` (a page or locator) as docs/console/NAME.png, unless
    the one there shows the same picture (under 1% of its pixels differ)."""
    from PIL import Image, ImageChops
    picture = Image.open(io.BytesIO(target.screenshot(animations="disabled"))).convert("RGB")
    path = SHOTS / f"{name}.png"
    if path.exists():
        old = Image.open(path).convert("RGB")
        if old.size == picture.size:
            changed = ImageChops.difference(old, picture).convert("L").point(lambda v: 255 if v > 24 else 0)
            if changed.histogram()[255] < 0.01 * picture.size[0] * picture.size[1]:
                return
    SHOTS.mkdir(parents=True, exist_ok=True)
    picture.quantize(colors=64).save(path, optimize=True)  # a small palette PNG


def live_items(page) -> list[dict]:
    return page.eval_on_selector_all(
        "#live li.match[data-event]",
        "items => items.map(i => ({event: Number(i.dataset.event), "
        "query: i.querySelector('.query').textContent, "
        "publication: i.querySelector('.publication').textContent}))")


# ---------------------------------------------------------------- the tests


def test_check_as_you_type_register_publish_and_see_the_highlighted_match(page, open_server):
    """Type a query with an error: its line and column, marked in the text; fix it,
    register it, publish a DBpedia resource through the API: the match and its
    highlighted words appear within a second."""
    if not datasets.available():
        pytest.skip(datasets.missing_message())
    from rtf.io.reader import read_publications
    nordlys = next(f for f in datasets.dbpedia_files() if f.name.startswith("nordlys"))
    airline = next(p for p in read_publications([nordlys])
                   if p.id == "http://dbpedia.org/resource/British_Airways")
    body = "".join(" ".join(t) + " .\n" for t in airline.triples).encode()

    p = open_console(page, open_server)
    p.locator("#who-name", has_text="single-user mode").wait_for(timeout=WAIT)
    broken = AIRLINES.replace('"carrier")', '"carrier"')  # a parenthesis missing
    p.fill("#query", broken)
    expected = check_query(broken)
    assert not expected["valid"] and expected["line"] == 6
    where = p.locator("#check .where")
    where.wait_for(timeout=WAIT)
    assert where.text_content() == f"line {expected['line']}, column {expected['column']}: "
    assert p.text_content("#check .error") == f"line {expected['line']}, column " \
                                              f"{expected['column']}: {expected['message']}"
    # the character at that line and column is the one marked in the text
    before = p.evaluate("document.querySelector('#backdrop').firstChild.textContent")
    lines = broken.split("\n")
    assert before == "\n".join(lines[:expected["line"] - 1] + [
        lines[expected["line"] - 1][:expected["column"] - 1]])
    p.locator("#backdrop mark").wait_for(state="attached")
    shoot(p.locator("#editor-section"), "check-error")

    # fixed by typing: checked again as it is typed
    p.fill("#query", AIRLINES.rstrip("}\n"))
    p.locator("#query").press_sequentially("\n}")
    ok = p.locator("#check .ok")
    ok.wait_for(timeout=WAIT)
    assert ok.text_content() == "valid SELECT query, 1 branch"
    assert p.locator("#backdrop mark").count() == 0
    p.fill("#query-id", "airlines-flag-carrier")
    p.fill("#subscriber", "alice")
    p.fill("#metadata", '{"topic": "aviation"}')
    p.click("#register")
    p.locator("#register-result.ok").wait_for(timeout=WAIT)
    assert p.text_content("#register-result") == \
        "registered airlines-flag-carrier (subscriber alice)"
    p.locator("#queries tr[data-id='airlines-flag-carrier']").wait_for(timeout=WAIT)
    p.locator("#stream-state[data-state='live']").wait_for(timeout=WAIT)  # watching alice

    with open_server.client() as api:
        started = time.monotonic()
        assert api.post("/publications", content=body, headers=NT).status_code == 200
        marks = p.locator("#live li.match .explain mark")
        marks.first.wait_for(timeout=WAIT)
        elapsed = time.monotonic() - started
    assert elapsed < 1.0, f"the match took {elapsed:.2f} s to appear"
    item = p.locator("#live li.match").first
    assert item.locator(".query").text_content() == "airlines-flag-carrier"
    assert item.locator(".publication").text_content() == airline.id
    assert "<http://dbpedia.org/resource/British_Airways>" in item.locator("table").text_content()
    words = {m.lower() for m in marks.all_text_contents()}
    assert words == {"flag", "carrier"}
    assert "metadata {\"topic\":\"aviation\"}" in item.text_content()
    p.locator("#stat-queries", has_text="1").wait_for(timeout=WAIT)
    shoot(p, "overview")
    shoot(p.locator("#live-section"), "live-match")

    # the same resource in the try box: its match and why, and nobody notified
    with open_server.client() as api:
        newest = api.get("/health").json()["last_event_id"]
    p.fill("#try-rdf", body.decode())
    p.click("#try")
    p.locator("#try-results li.match .explain mark").first.wait_for(timeout=WAIT)
    assert p.text_content("#try-summary") == "1 publication(s), 1 match(es); nobody was notified"
    shoot(p.locator("#try-section"), "try")
    with open_server.client() as api:
        assert api.get("/health").json()["last_event_id"] == newest
    assert len(live_items(p)) == 1


def test_restart_mid_stream_loses_nothing_and_repeats_nothing(page, open_server):
    p = open_console(page, open_server)
    p.locator("#app:not([hidden])").wait_for(timeout=WAIT)
    with open_server.client() as api:
        api.put("/queries/restart-q", json={"query": query("restart"), "subscriber": "rex"})
    p.fill("#watch", "rex")
    p.click("#watch-form button")
    p.locator("#stream-state[data-state='live']").wait_for(timeout=WAIT)

    def publish(*subjects):
        with open_server.client() as api:
            for s in subjects:
                r = api.post("/publications", content=triple(s, f"restart {s}"), headers=NT)
                assert r.status_code == 200 and r.headers["X-RTF-Matches"] == "1"

    def seen(n):
        expect(p.locator("#live li.match[data-event]")).to_have_count(n, timeout=WAIT)

    publish("a")
    seen(1)
    open_server.terminate()
    p.locator("#stream-state[data-state='reconnecting']").wait_for(timeout=WAIT)
    shoot(p.locator("#live-section"), "reconnecting")
    open_server.start()
    publish("b", "c")  # most likely before the page is back: read from the outbox
    p.locator("#stream-state[data-state='live']").wait_for(timeout=WAIT)
    publish("d")
    seen(4)
    items = live_items(p)
    assert sorted(i["publication"] for i in items) == [f"{EX}{s}" for s in "abcd"]
    events = [i["event"] for i in items]
    assert events == sorted(events, reverse=True) and len(set(events)) == 4  # newest first
    # every match explained, the ones before the restart too (the page kept them)
    expect(p.locator("#live li.match .explain")).to_have_count(4, timeout=WAIT)
    expect(p.locator("#live li.match .explain.unavailable")).to_have_count(0)


def test_markup_in_ids_literals_and_errors_stays_text(page, open_server):
    """An id, subscriber, literal, IRI, metadata or error holding markup is shown as
    that text; nothing of it becomes an element or runs (no dialog opens)."""
    evil_id = '<script>alert("id")</script>'
    evil_sub = '"><img src=x onerror=alert("sub")>'
    evil_text = '<img src=x onerror=alert(1)> <script>alert(2)</script> xss'
    evil_iri = "javascript:alert(3)"
    with open_server.client() as api:
        r = api.put(f"/queries/{quote(evil_id, safe='')}",
                     json={"query": query("xss"), "subscriber": evil_sub,
                           "metadata": {"<b onmouseover=alert(4)>": "<script>alert(5)</script>"}})
        assert r.status_code == 201, r.text
    p = open_console(page, open_server)
    p.locator("#app:not([hidden])").wait_for(timeout=WAIT)
    p.fill("#watch", evil_sub)
    p.click("#watch-form button")
    p.locator("#stream-state[data-state='live']").wait_for(timeout=WAIT)
    rdf = f'<{evil_iri}> <{EX}title> "{evil_text}" .\n'
    with open_server.client() as api:
        assert api.post("/publications", content=rdf, headers=NT).status_code == 200
    item = p.locator("#live li.match").first
    item.locator(".explain mark").wait_for(timeout=WAIT)
    assert item.locator(".query").text_content() == evil_id
    assert item.locator(".subscriber").text_content() == evil_sub
    assert item.locator(".publication").text_content() == evil_iri
    assert item.locator("blockquote").text_content().startswith(evil_text)
    assert item.locator("mark").text_content() == "xss"
    assert '"<b onmouseover=alert(4)>":"<script>alert(5)</script>"' in item.text_content()
    # the list, the try box, the editor's messages
    p.fill("#filter", "xss")
    p.locator("#queries td", has_text=evil_id).first.wait_for(timeout=WAIT)
    p.fill("#try-rdf", rdf)
    p.click("#try")
    p.locator("#try-results li.match").first.wait_for(timeout=WAIT)
    assert p.locator("#try-results .publication").text_content() == evil_iri
    p.fill("#query-id", evil_text)
    p.click("#unregister")
    p.locator("#register-result.error").wait_for(timeout=WAIT)
    assert evil_text in p.text_content("#register-result")  # the 404's message, as text
    p.fill("#query", f"SELECT ?s WHERE {{ {evil_text} }}")
    p.locator("#check .error").wait_for(timeout=WAIT)
    # nothing became an element: no image, no script but the page's own, no link
    assert p.locator("img, svg, iframe, a, b").count() == 0
    assert p.locator("script").count() == 1
    shoot(p.locator("#live-section"), "markup-as-text")
    page.check()
    # and the browser itself refuses HTML made from a string (Trusted Types)
    refused = p.evaluate("() => { try { document.body.insertAdjacentHTML('beforeend', '<i>x</i>');"
                         " return 'allowed' } catch (e) { return e.name } }")
    assert refused == "TypeError"
    assert p.evaluate("window.__violations") == ["require-trusted-types-for trusted-types-sink"]
    page.forget()  # (that violation was the probe's)


def test_sign_in_keeps_the_token_in_the_tab_only(page, auth_server):
    p = open_console(page, auth_server)
    sign_in_form = p.locator("#sign-in:not([hidden])")
    sign_in_form.wait_for(timeout=WAIT)
    p.fill("#token", "not-a-token-of-this-server")
    p.click("#sign-in-form button")
    p.locator("#sign-in-error", has_text="unknown token").wait_for(timeout=WAIT)
    shoot(p.locator("#sign-in"), "sign-in")
    p.fill("#token", TOKENS["alice"])
    p.click("#sign-in-form button")
    p.locator("#who-name", has_text="signed in: subscriber alice").wait_for(timeout=WAIT)
    assert TOKENS["alice"] not in p.url
    assert p.evaluate("sessionStorage.getItem('rtf-console-token')") == TOKENS["alice"]
    assert p.evaluate("localStorage.length") == 0
    p.reload()  # the tab remembers it
    p.locator("#who-name", has_text="signed in: subscriber alice").wait_for(timeout=WAIT)
    p.click("#sign-out")
    sign_in_form.wait_for(timeout=WAIT)
    assert p.evaluate("sessionStorage.getItem('rtf-console-token')") is None
    # another tab (a new context) starts signed out
    other = p.context.browser.new_context().new_page()
    try:
        other.goto(auth_server.url + "/console")
        other.locator("#sign-in:not([hidden])").wait_for(timeout=WAIT)
    finally:
        other.context.close()


def test_a_subscriber_sees_and_changes_only_its_own_queries(page, auth_server):
    with auth_server.client() as admin:
        for qid, sub in (("alice-1", "alice"), ("alice-2", "alice"), ("bob-1", "bob")):
            r = admin.put(f"/queries/{qid}", json={"query": query("shared"), "subscriber": sub})
            assert r.status_code in (200, 201)
    p = open_console(page, auth_server)
    sign_in(p, TOKENS["alice"])
    p.locator("#queries tr[data-id='alice-2']").wait_for(timeout=WAIT)
    ids = p.eval_on_selector_all("#queries tbody tr[data-id]", "rows => rows.map(r => r.dataset.id)")
    assert sorted(ids) == ["alice-1", "alice-2"]
    assert p.locator("#filter-subscriber").is_hidden()
    assert p.locator("#subscriber").input_value() == "alice"
    assert p.evaluate("document.getElementById('subscriber').readOnly")
    p.locator("#stream-state[data-state='live']").wait_for(timeout=WAIT)  # its own stream
    # bob's query can be neither replaced nor removed from alice's page
    p.fill("#query", query("taken").replace("{ ", "{\n  ").replace(" FILTER", "\n  FILTER"))
    p.fill("#query-id", "bob-1")
    p.click("#register")
    p.locator("#register-result.error", has_text="belongs to another subscriber").wait_for(timeout=WAIT)
    p.click("#unregister")
    p.locator("#register-result.error", has_text="belongs to another subscriber").wait_for(timeout=WAIT)
    # the try box answers alice's matches only
    p.fill("#try-rdf", triple("t", "shared"))
    p.click("#try")
    p.locator("#try-summary.ok").wait_for(timeout=WAIT)
    tried = p.locator("#try-results .query").all_text_contents()
    assert sorted(tried) == ["alice-1", "alice-2"]
    # watching bob's stream is refused by the server, and says so
    p.evaluate("document.getElementById('watch').readOnly = false")
    p.fill("#watch", "bob")
    p.click("#watch-form button")
    p.locator("#stream-state[data-state='refused']").wait_for(timeout=WAIT)
    with auth_server.client() as admin:
        assert admin.get("/queries/bob-1").json()["query"] == query("shared")
    shoot(p.locator("#editor-section"), "subscriber")


def test_queries_list_pages_and_filters(page, open_server):
    with open_server.client() as api:
        lines = "".join(json.dumps({"id": f"pager-{n:02}", "query": query("pager"),
                                    "subscriber": "pa" if n % 2 else "pb"}) + "\n" for n in range(25))
        r = api.post("/queries", content=lines, headers={"Content-Type": "application/x-ndjson"})
        assert r.status_code == 200, r.text
    p = open_console(page, open_server)
    p.locator("#app:not([hidden])").wait_for(timeout=WAIT)
    p.fill("#filter", "pager-")

    rows = p.locator("#queries tbody tr[data-id]")

    def shown(ids):
        expect(rows.first).to_have_attribute("data-id", ids[0], timeout=WAIT)
        expect(p.locator("#queries tbody tr[data-id]:not([data-id^='pager-'])")).to_have_count(0)
        expect(rows).to_have_count(len(ids))
        assert p.eval_on_selector_all("#queries tbody tr[data-id]",
                                      "rows => rows.map(r => r.dataset.id)") == ids

    shown([f"pager-{n:02}" for n in range(20)])
    p.click("#next-page")
    shown([f"pager-{n:02}" for n in range(20, 25)])
    assert p.locator("#next-page").is_disabled()
    p.click("#prev-page")
    shown([f"pager-{n:02}" for n in range(20)])
    p.fill("#filter-subscriber", "pa")
    shown([f"pager-{n:02}" for n in range(1, 25, 2)])
    # a row loads into the editor, and is checked
    p.click("#queries tr[data-id='pager-03']")
    assert p.locator("#query-id").input_value() == "pager-03"
    assert p.locator("#query").input_value() == query("pager")
    p.locator("#check .ok").wait_for(timeout=WAIT)


@pytest.fixture(scope="module")
def tight_server(tmp_path_factory):
    """A server whose streams hold one event and whose outbox keeps two per subscriber."""
    folder = tmp_path_factory.mktemp("console-tight")
    with ServerProcess(folder / "broker", "--stream-queue", "1",
                       "--outbox-max-events", "2") as proc:
        yield proc


def test_a_cut_and_a_gap_are_shown_and_nothing_is_shown_twice(page, tight_server):
    with tight_server.client() as api:
        for n in range(2):
            api.put(f"/queries/cut-{n}", json={"query": query("cut"), "subscriber": "carl"})
    p = open_console(page, tight_server)
    p.locator("#app:not([hidden])").wait_for(timeout=WAIT)
    p.fill("#watch", "carl")
    p.click("#watch-form button")
    p.locator("#stream-state[data-state='live']").wait_for(timeout=WAIT)
    with tight_server.client() as api:  # two matches at once: more than the stream holds
        api.post("/publications", content=triple("c1", "cut"), headers=NT)
    p.locator("#live li.notice.cut").wait_for(timeout=WAIT)
    # read from the outbox after the cut
    expect(p.locator("#live li.match[data-event]")).to_have_count(2, timeout=WAIT)
    p.locator("#stream-state[data-state='live']").wait_for(timeout=WAIT)
    assert sorted(i["query"] for i in live_items(p)) == ["cut-0", "cut-1"]
    shoot(p.locator("#live-section"), "cut")
    # three more matches: the outbox keeps carl's newest two; asking for everything
    # retained shows the gap, then those two
    with tight_server.client() as api:
        api.post("/publications", content=triple("c2", "cut"), headers=NT)
        for n in range(2):
            api.delete(f"/queries/cut-{n}")
        api.put("/queries/cut-9", json={"query": query("cut"), "subscriber": "carl"})
        api.post("/publications", content=triple("c3", "cut"), headers=NT)
        api.post("/publications", content=triple("c4", "cut"), headers=NT)
    p.check("#watch-retained")
    p.click("#watch-form button")
    p.locator("#live li.notice.gap").wait_for(timeout=WAIT)
    expect(p.locator("#live li.match[data-event]")).to_have_count(2, timeout=WAIT)
    assert [i["publication"] for i in live_items(p)] == [f"{EX}c4", f"{EX}c3"]
    assert p.locator("#stream-state").get_attribute("data-state") in ("gap", "live")
    shoot(p.locator("#live-section"), "gap")


class _Attacker(http.server.BaseHTTPRequestHandler):
    """A page of another origin that tries to publish and register on the console's server."""

    target = ""
    reports: list[str] = []

    def do_GET(self):
        if self.path.startswith("/report?"):
            self.reports.append(unquote(self.path.partition("?")[2]))
            self.send_response(204)
            self.end_headers()
            return
        page = f"""<!doctype html><title>another site</title>
<form id="f" method="post" enctype="text/plain" action="{self.target}/publications">
<input name='<{EX}csrf> <{EX}title> "csrf' value='form" .'></form>
<script>
(async () => {{
  const out = [];
  for (const [method, mode, path, type, body] of [
      ["POST", "no-cors", "/publications", "text/plain", '<{EX}csrf> <{EX}title> "csrf fetch" .'],
      ["PUT", "cors", "/queries/csrf", "application/json", '{{"query": "ASK {{ ?s ?p ?o }}"}}'],
      ["DELETE", "cors", "/queries/csrf-keep", "text/plain", ""]]) {{
    try {{
      await fetch("{self.target}" + path, {{method, mode, body: body || undefined,
                                           headers: {{"Content-Type": type}}}});
      out.push(method + " sent");
    }} catch (e) {{ out.push(method + " failed"); }}
  }}
  await fetch("/report?" + encodeURIComponent(out.join(", ")));
  document.getElementById("f").submit();
}})();
</script>"""
        data = page.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def test_a_page_of_another_origin_changes_nothing(page, open_server):
    """Cross-site request forgery against the server without --tokens (the one a
    forged request could reach: with tokens it holds no token): a page of another
    origin posts a form and sends fetches; the server refuses them unread."""
    with open_server.client() as api:
        api.put("/queries/csrf-keep", json={"query": query("csrf"), "subscriber": "cs"})
        before = api.get("/metrics").text
    attacker = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Attacker)
    _Attacker.target = open_server.url
    _Attacker.reports = []
    threading.Thread(target=attacker.serve_forever, daemon=True).start()
    try:
        p = page.page
        with p.expect_navigation(url=open_server.url + "/publications", timeout=WAIT):
            p.goto(f"http://127.0.0.1:{attacker.server_address[1]}/")
        assert "another origin" in p.text_content("body")  # the form's answer: 403
        # the POST left (a "simple" request needs no preflight); the PUT and DELETE were
        # stopped by their preflight (the server allows no other origin)
        assert _Attacker.reports == ["POST sent, PUT failed, DELETE failed"]
        page.forget()  # (the browser's console said so: that is the attacker's page)
    finally:
        attacker.shutdown()
        attacker.server_close()

    def counter(text, name):
        found = re.search(rf'^{name} (\S+)$', text, re.M)
        return float(found.group(1)) if found else 0.0

    with open_server.client() as api:
        after = api.get("/metrics").text
        assert api.get("/queries/csrf").status_code == 404
        assert api.get("/queries/csrf-keep").status_code == 200
    assert counter(after, "rtf_publications_total") == counter(before, "rtf_publications_total")
    refused = 'rtf_rejected_requests_total\\{status="403"\\}'
    # the fetch and the form arrived, and were refused
    assert counter(after, refused) - counter(before, refused) == 2


def test_docs_show_every_screenshot():
    """docs/console.md shows each picture these tests write, and no other."""
    doc = (ROOT / "docs" / "console.md").read_text(encoding="utf-8")
    shown = set(re.findall(r"\]\(console/([\w-]+)\.png\)", doc))
    written = set(re.findall(r'shoot\([^\n]*"([\w-]+)"\)', Path(__file__).read_text(encoding="utf-8")))
    assert shown == written
    for name in written:
        assert (SHOTS / f"{name}.png").exists(), name



def test_watching_again_leaves_one_stream_open(page, tight_server):
    """Watch pressed twice at once: the first connection, begun before the second
    press, is dropped, not left open beside the new one."""
    def streams() -> float:
        with tight_server.client() as api:
            return float(re.search(r"^rtf_streams (\S+)$", api.get("/metrics").text, re.M).group(1))

    with tight_server.client() as api:
        api.put("/queries/twice", json={"query": query("twice"), "subscriber": "tw"})
    p = open_console(page, tight_server)
    p.locator("#app:not([hidden])").wait_for(timeout=WAIT)
    p.fill("#watch", "tw")
    deadline = time.monotonic() + WAIT / 1000
    while streams() and time.monotonic() < deadline:  # the pages of other tests are closed:
        time.sleep(0.05)                              # their streams end
    assert streams() == 0
    p.evaluate("() => { const b = document.querySelector('#watch-form button'); b.click(); b.click(); }")
    p.locator("#stream-state[data-state='live']").wait_for(timeout=WAIT)
    with tight_server.client() as api:
        api.post("/publications", content=triple("tw", "twice"), headers=NT)
    expect(p.locator("#live li.match[data-event]")).to_have_count(1, timeout=WAIT)
    assert streams() == 1
