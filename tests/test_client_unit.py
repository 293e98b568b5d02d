"""rtf.server.client against a fake server (httpx.MockTransport): the requests it sends
(URLs, percent-encoded ids, headers, bodies), how it maps error answers, the
pages it follows, and the Server-Sent Events it parses and reconnects to.
The contract is docs/server.md; no server process is started here.

Every test runs twice: with `Client`, and with `AsyncClient` driven from here
(`Blocking`: each call run on one event loop), which must send the same requests,
give the same answers and events, and raise the same errors.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
import socket
import time

import httpx
import pytest

import rtf.server.async_client
import rtf.server.client
from rtf.server.async_client import AsyncClient
from rtf.server.client import (AuthenticationError, BadRequestError, Client, GapEvent, MatchEvent,
                        NotFoundError, PayloadTooLargeError, PermissionDeniedError, ServerError,
                        ServerUnavailableError)
from rtf.errors import QueryError, RtfError

URL = "http://broker.test:8750"


class Fake:
    """A scripted server: answers the requests in order with `answers` (a
    Response, an exception class raised as a transport error, or a function of
    the request), then with `then` (a function of the request) if given."""

    def __init__(self, *answers, then=None):
        self.answers = list(answers)
        self.then = then
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.answers:
            answer = self.answers.pop(0)
        elif self.then is not None:
            answer = self.then
        else:
            raise AssertionError(f"unexpected request {request.method} {request.url}")
        if isinstance(answer, type) and issubclass(answer, Exception):
            raise answer("scripted failure", request=request)
        return answer(request) if callable(answer) else answer

    def paths(self) -> list[str]:
        return [r.url.raw_path.decode() for r in self.requests]

    def last_ids(self) -> list[str | None]:
        return [r.headers.get("last-event-id") for r in self.requests]


@pytest.fixture(autouse=True, params=["sync", "async"])
def kind(request, monkeypatch):
    """Which client the test's `client(...)` and `connect(...)` make."""
    monkeypatch.setattr(Kind, "name", request.param)
    return request.param


class Kind:
    name = "sync"


class Blocking:
    """An AsyncClient used as a Client: each call runs on one event loop (kept
    across calls, as the client's connections are), an async iterator becomes an
    iterator."""

    def __init__(self, client: AsyncClient):
        self._runner = asyncio.Runner()
        self._client = client

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self._runner.run(self._client.aclose())
        self._runner.close()

    def __getattr__(self, name):
        attr = getattr(self._client, name)
        if not callable(attr):
            return attr

        def call(*args, **kwargs):
            result = attr(*args, **kwargs)
            if inspect.iscoroutine(result):
                return self._runner.run(result)
            if hasattr(result, "__anext__"):
                return self._iterate(result)
            return result
        return call

    def _iterate(self, iterator):
        async def step():
            return await iterator.__anext__()
        while True:
            try:
                yield self._runner.run(step())
            except StopAsyncIteration:
                return


def _async_answers(fake):
    """`fake` for an async transport: a body given by a generator is given by an async one."""
    def answer(request):
        response = fake(request)
        if not isinstance(response.stream, httpx.AsyncByteStream):
            chunks = response.stream

            async def body():
                for chunk in chunks:
                    yield chunk
            return httpx.Response(response.status_code, headers=response.headers, content=body())
        return response
    return answer


def connect(url: str, fake: Fake | None = None, **kwargs):
    """A client of the test's kind at `url`, answered by `fake` (None: the network)."""
    if Kind.name == "sync":
        return Client(url, transport=None if fake is None else httpx.MockTransport(fake), **kwargs)
    transport = None if fake is None else httpx.MockTransport(_async_answers(fake))
    return Blocking(AsyncClient(url, transport=transport, **kwargs))


def client(fake: Fake, **kwargs):
    return connect(URL, fake, **kwargs)


def match(event_id: int, query: str = "q1") -> str:
    line = {"publication": f"http://ex/p{event_id}", "query": query, "subscriber": "alice",
            "bindings": [{"a": f"http://ex/p{event_id}"}]}
    return f"id: {event_id}\nevent: match\ndata: {json.dumps(line)}\n\n"


def gap(first: int, last: int) -> str:
    return f"event: gap\ndata: {json.dumps({'from': first, 'to': last})}\n\n"


def cut(last_event_id: int) -> str:
    return f"event: cut\ndata: {json.dumps({'reason': 'slow subscriber', 'last_event_id': last_event_id})}\n\n"


def stream(*chunks, end: Exception | None = None, pause: float = 0.0) -> httpx.Response:
    """An SSE answer sending `chunks` (with `pause` seconds before each), then
    ending normally or by raising `end` (a dropped connection)."""
    def body():
        for chunk in chunks:
            if pause:
                time.sleep(pause)
            yield chunk.encode() if isinstance(chunk, str) else chunk
        if end is not None:
            raise end
    return httpx.Response(200, headers={"content-type": "text/event-stream; charset=utf-8"},
                          content=body())


def dropped() -> httpx.RemoteProtocolError:
    return httpx.RemoteProtocolError("peer closed connection without sending complete message body")


def ids(events) -> list:
    return [e.id if isinstance(e, MatchEvent) else (e.from_id, e.to_id) for e in events]


@pytest.fixture
def no_retry(monkeypatch):
    """Fails a test whose client would wait to try again."""
    def sleep(seconds):
        raise AssertionError(f"retried after {seconds} s")
    monkeypatch.setattr(rtf.server.client, "_sleep", sleep)
    monkeypatch.setattr(rtf.server.async_client, "_sleep", _async(sleep))


@pytest.fixture
def sleeps(monkeypatch):
    """The reconnection delays, recorded instead of slept."""
    recorded: list[float] = []
    monkeypatch.setattr(rtf.server.client, "_sleep", recorded.append)
    monkeypatch.setattr(rtf.server.async_client, "_sleep", _async(recorded.append))
    return recorded


def _async(function):
    async def call(*args):
        return function(*args)
    return call


# ---------------------------------------------------------------- URLs, bodies, headers

@pytest.mark.parametrize("query_id, path", [
    ("rio", "/queries/rio"),
    ("a/b c", "/queries/a%2Fb%20c"),
    ("é☃", "/queries/%C3%A9%E2%98%83"),
    ("?x#y&z=%2F", "/queries/%3Fx%23y%26z%3D%252F"),
    ("..", "/queries/%2E%2E"),
    (".", "/queries/%2E"),
])
def test_query_ids_are_one_percent_encoded_path_segment(query_id, path):
    fake = Fake(httpx.Response(200, json={"id": query_id}), httpx.Response(204),
                httpx.Response(201, json={"id": query_id}))
    with client(fake) as broker:
        assert broker.get(query_id) == {"id": query_id}
        assert broker.unregister(query_id) is None
        broker.register("ASK {}", query_id)
    assert [r.method for r in fake.requests] == ["GET", "DELETE", "PUT"]
    assert fake.paths() == [path] * 3


def test_a_base_url_with_a_path_prefixes_every_request():
    fake = Fake(httpx.Response(200, json={"status": "ok"}))
    with connect("http://proxy.test/rtf/", fake) as broker:
        broker.health()
    assert str(fake.requests[0].url) == "http://proxy.test/rtf/health"


@pytest.mark.parametrize("bad", ["", None, 7])
def test_an_empty_or_non_string_id_is_refused_before_any_request(bad):
    fake = Fake()
    with client(fake) as broker, pytest.raises(ValueError):
        broker.get(bad)
    assert fake.requests == []


def test_register_sends_the_query_subscriber_and_metadata_and_returns_the_server_json():
    answer = {"id": "rio", "subscriber": "alice", "query": "ASK {}", "metadata": {"topic": "sport"}}
    fake = Fake(httpx.Response(201, json=answer), httpx.Response(200, json=answer), httpx.Response(201))
    with client(fake) as broker:
        assert broker.register("ASK {}", "rio", subscriber="alice", metadata={"topic": "sport"}) == answer
        assert broker.register("ASK {}", "rio") == answer
        assert broker.register("ASK {}", "rio") == {}          # a 201 without a body
    bodies = [json.loads(r.content) for r in fake.requests]
    assert bodies[0] == {"query": "ASK {}", "subscriber": "alice", "metadata": {"topic": "sport"}}
    assert bodies[1] == {"query": "ASK {}"}                     # None is left out, not sent as null
    assert fake.requests[0].headers["content-type"] == "application/json"


def test_health_and_metrics():
    fake = Fake(httpx.Response(200, json={"status": "ok", "queries": 3, "algorithm": "rtfs"}),
                httpx.Response(200, text="# TYPE rtf_queries gauge\nrtf_queries 3\n"))
    with client(fake) as broker:
        assert broker.health()["queries"] == 3
        assert broker.metrics().endswith("rtf_queries 3\n")
    assert fake.paths() == ["/health", "/metrics"]


def test_the_token_is_sent_as_a_bearer_authorization_on_every_request():
    fake = Fake(then=lambda request: stream(match(1)) if request.url.path.endswith("/matches")
                else httpx.Response(200, json={"queries": [], "next": None}))
    with client(fake, token="s3cr3t-alice-token") as broker:
        list(broker.queries())
        list(broker.matches("alice", reconnect=False))
    assert [r.headers["authorization"] for r in fake.requests] == ["Bearer s3cr3t-alice-token"] * 2
    fake = Fake(httpx.Response(200, json={"status": "ok"}))
    with client(fake) as broker:
        broker.health()
    assert "authorization" not in fake.requests[0].headers


@pytest.mark.parametrize("format, content_type", [
    ("nt", "application/n-triples"), ("ttl", "text/turtle"), ("turtle", "text/turtle"),
    ("nq", "application/n-quads"), ("trig", "application/trig"), ("NT", "application/n-triples"),
])
def test_publish_sends_the_content_type_of_its_format(format, content_type):
    fake = Fake(httpx.Response(200, content=b"", headers={"content-type": "application/x-ndjson"}))
    with client(fake) as broker:
        assert broker.publish(b"<http://ex/a> <http://ex/p> \"x\" .\n", format=format) == []
    request = fake.requests[0]
    assert (request.method, request.url.path) == ("POST", "/publications")
    assert request.headers["content-type"] == content_type
    assert request.url.params["group_by"] == "subject"


def test_publish_encodes_text_as_utf8_passes_group_by_and_parses_the_json_lines():
    lines = [{"publication": "http://ex/a", "query": "q1", "subscriber": "alice",
              "bindings": [{"t": "Rio\u2028Janeiro é"}]},      # U+2028 is not a line end in JSON Lines
             {"publication": "http://ex/g", "query": "q2", "subscriber": None, "bindings": [{}]}]
    body = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode()
    fake = Fake(httpx.Response(200, content=body, headers={"content-type": "application/x-ndjson",
                                                           "x-rtf-publications": "2", "x-rtf-matches": "2"}))
    text = '<http://ex/a> <http://ex/p> "Jogos no Rio é" <http://ex/g> .\n'
    with client(fake) as broker:
        assert broker.publish(text, format="nq", group_by="graph") == lines
    assert fake.requests[0].content == text.encode("utf-8")
    assert fake.requests[0].url.params["group_by"] == "graph"


def test_publish_refuses_an_unknown_format_before_any_request():
    fake = Fake()
    with client(fake) as broker, pytest.raises(ValueError, match="rdfxml"):
        broker.publish("x", format="rdfxml")
    assert fake.requests == []


# ---------------------------------------------------------------- errors

@pytest.mark.parametrize("status, cls, also", [
    (400, BadRequestError, ValueError),
    (401, AuthenticationError, ServerError),
    (403, PermissionDeniedError, ServerError),
    (404, NotFoundError, KeyError),
    (413, PayloadTooLargeError, ServerError),
    (415, ServerError, ServerError),
    (500, ServerError, ServerError),
])
def test_each_error_status_raises_its_class_with_the_servers_message(status, cls, also):
    message = f"the server's own words for {status}"
    fake = Fake(then=httpx.Response(status, json={"error": message}))
    with client(fake) as broker:
        for call in (lambda: broker.get("q1"), lambda: broker.publish("x"),
                     lambda: list(broker.queries()), lambda: broker.unregister("q1"),
                     lambda: broker.register("ASK {}", "q1"), lambda: broker.metrics(),
                     lambda: next(broker.matches("alice"))):
            with pytest.raises(cls) as caught:
                call()
            error = caught.value
            assert type(error) is cls and isinstance(error, also) and isinstance(error, RtfError)
            assert (error.status, error.message, str(error)) == (status, message, message)


def test_not_found_is_a_key_error_as_with_a_local_engine():
    fake = Fake(httpx.Response(404, json={"error": "unknown query 'nope'"}))
    with client(fake) as broker:
        try:
            broker.get("nope")
        except KeyError as e:
            assert str(e) == "unknown query 'nope'"            # not KeyError's quoted repr
        else:
            pytest.fail("no KeyError")


def test_an_invalid_query_raises_the_query_error_a_local_engine_raises():
    from rtf import Engine
    bad = 'ASK { ?a <http://ex/p> ?t FILTER ftcontains(?t, ) }'
    with pytest.raises(QueryError) as local:
        Engine().register(bad, query_id="bad")
    local = local.value
    assert local.line is not None
    body = {"error": f"invalid query: {local}", "line": local.line, "column": local.column}
    fake = Fake(httpx.Response(400, json=body))
    with client(fake) as broker, pytest.raises(QueryError) as remote:
        broker.register(bad, "bad")
    remote = remote.value
    assert not isinstance(remote, ServerError)
    assert (remote.line, remote.column) == (local.line, local.column)
    assert remote.message == local.message and str(remote) == str(local)
    assert str(remote).count(f"line {local.line}, column {local.column}") == 1


def test_a_query_error_without_a_position_keeps_the_message():
    fake = Fake(httpx.Response(400, json={"error": "invalid query: too large", "line": None, "column": None}))
    with client(fake) as broker, pytest.raises(QueryError) as caught:
        broker.register("ASK {}", "big")
    assert (caught.value.line, str(caught.value)) == (None, "too large")


def test_an_error_that_is_not_json_gives_its_first_line():
    fake = Fake(httpx.Response(502, text="<html>Bad Gateway</html>\n<body>...</body>"),
                httpx.Response(503, content=b""))
    with client(fake) as broker:
        with pytest.raises(ServerError, match="^<html>Bad Gateway</html>$"):
            broker.health()
        with pytest.raises(ServerError, match="503 Service Unavailable"):
            broker.health()


def test_a_refused_connection_raises_server_unavailable_naming_the_url(no_retry):
    with socket.socket() as s:                              # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    with connect(url, timeout=5) as broker:
        for call in (broker.health, lambda: broker.get("q1"), lambda: next(broker.matches("alice"))):
            with pytest.raises(ServerUnavailableError) as caught:
                call()
            assert url in str(caught.value) and caught.value.status is None


def test_an_answer_that_is_not_a_json_object_is_an_error():
    fake = Fake(httpx.Response(200, json=["q1"]), httpx.Response(200, text="ok"))
    with client(fake) as broker:
        with pytest.raises(ServerError, match="not a JSON object"):
            broker.get("q1")
        with pytest.raises(ServerError, match="not a JSON object"):
            broker.health()


def test_a_timeout_raises_server_unavailable():
    fake = Fake(httpx.ReadTimeout)
    with client(fake) as broker, pytest.raises(ServerUnavailableError, match="did not answer in time"):
        broker.health()


# ---------------------------------------------------------------- pagination

def test_queries_follows_the_next_cursors_to_the_end():
    pages = [({"queries": [{"id": "q1"}, {"id": "q2"}], "next": "c2"}),
             ({"queries": [{"id": "q3"}, {"id": "q4"}], "next": 17}),
             ({"queries": [{"id": "q5"}], "next": None})]
    fake = Fake(*(httpx.Response(200, json=page) for page in pages))
    with client(fake) as broker:
        assert [q["id"] for q in broker.queries(subscriber="alice", page_size=2)] == \
            ["q1", "q2", "q3", "q4", "q5"]
    params = [dict(r.url.params) for r in fake.requests]
    assert params == [{"limit": "2", "subscriber": "alice"},
                      {"limit": "2", "subscriber": "alice", "after": "c2"},
                      {"limit": "2", "subscriber": "alice", "after": "17"}]


def test_queries_without_a_subscriber_sends_none_and_is_lazy():
    fake = Fake(httpx.Response(200, json={"queries": [{"id": "q1"}], "next": "c"}),
                httpx.Response(200, json={"queries": [], "next": None}))
    with client(fake) as broker:
        listing = broker.queries()
        assert fake.requests == []
        assert next(listing) == {"id": "q1"}
        assert len(fake.requests) == 1
        assert list(listing) == []
    assert dict(fake.requests[0].url.params) == {"limit": "1000"}


def test_queries_stops_on_a_cursor_given_twice():
    fake = Fake(then=httpx.Response(200, json={"queries": [{"id": "q1"}], "next": "same"}))
    with client(fake) as broker, pytest.raises(ServerError, match="twice"):
        list(broker.queries())


# ---------------------------------------------------------------- Server-Sent Events

def test_match_gap_cut_events_and_comments_are_parsed():
    fake = Fake(stream(": ping\n\n", match(1), ": ping\n\n", gap(2, 4), match(5, query="q2"),
                       "event: future-kind\ndata: {}\n\n", cut(5)))
    with client(fake) as broker:
        events = list(broker.matches("alice", last_event_id=0, reconnect=False))
    assert events == [MatchEvent(1, json.loads(match(1).split("data: ")[1])), GapEvent(2, 4),
                      MatchEvent(5, json.loads(match(5, "q2").split("data: ")[1]))]
    assert events[2].match["query"] == "q2"
    assert [e.id for e in events] == [1, 4, 5]                # a gap's id is the last one it covers
    request = fake.requests[0]
    assert request.url.raw_path == b"/subscribers/alice/matches"
    assert request.headers["accept"] == "text/event-stream"
    assert request.headers["last-event-id"] == "0"


def test_events_split_across_chunks_and_crlf_lines_are_parsed():
    text = (match(7) + match(8)).replace("\n", "\r\n").encode()
    chunks = [text[i:i + 5] for i in range(0, len(text), 5)]
    fake = Fake(stream(*chunks))
    with client(fake) as broker:
        assert ids(broker.matches("alice", reconnect=False)) == [7, 8]


def test_a_subscriber_name_is_percent_encoded_and_no_last_event_id_is_sent_at_first():
    fake = Fake(stream(match(1)))
    with client(fake) as broker:
        list(broker.matches("ana maria/é", reconnect=False))
    assert fake.paths() == ["/subscribers/ana%20maria%2F%C3%A9/matches"]
    assert fake.last_ids() == [None]


def test_an_answer_that_is_not_an_event_stream_is_an_error():
    fake = Fake(httpx.Response(200, json={"matches": []}))
    with client(fake) as broker, pytest.raises(ServerError, match="text/event-stream"):
        list(broker.matches("alice"))


def test_a_malformed_match_event_is_an_error():
    fake = Fake(stream("id: x\nevent: match\ndata: {}\n\n"), stream("id: 3\nevent: match\ndata: [1]\n\n"))
    with client(fake) as broker:
        with pytest.raises(ServerError, match="numeric id"):
            list(broker.matches("alice"))
        with pytest.raises(ServerError, match="JSON object"):
            list(broker.matches("alice"))


# ---------------------------------------------------------------- reconnection

def test_a_cut_reconnects_with_the_last_id_given_and_gives_no_event_twice(sleeps):
    fake = Fake(stream(match(1), match(2), cut(2)),
                stream(match(2), match(3), cut(3)),          # 2 again: a server resending is skipped
                stream(match(4)))
    with client(fake) as broker:
        events = list(itertools.islice(broker.matches("alice"), 4))
    assert ids(events) == [1, 2, 3, 4]
    assert fake.last_ids() == [None, "2", "3"]
    assert sleeps == [0.1, 0.1]                              # each connection gave an event


def test_a_cut_before_any_event_resumes_from_the_cuts_last_event_id(sleeps):
    fake = Fake(stream(cut(41)), stream(match(42)))
    with client(fake) as broker:
        assert ids(itertools.islice(broker.matches("alice"), 1)) == [42]
    assert fake.last_ids() == [None, "41"]


def opened(last_event_id: int) -> str:
    return f"id: {last_event_id}\nevent: open\ndata: {json.dumps({'last_event_id': last_event_id})}\n\n"


def test_a_drop_before_any_match_resumes_from_where_the_server_opened_the_stream(sleeps):
    fake = Fake(stream(opened(17), end=dropped()), stream(opened(17), match(18)))
    with client(fake) as broker:
        assert ids(itertools.islice(broker.matches("alice"), 1)) == [18]
    assert fake.last_ids() == [None, "17"]


def test_a_server_whose_outbox_is_younger_than_the_position_is_followed(sleeps):
    # the data folder was replaced: the server opens at 3 although we asked for 5
    fake = Fake(stream(match(5), end=dropped()), stream(opened(3), match(4)))
    with client(fake) as broker:
        assert ids(itertools.islice(broker.matches("alice"), 2)) == [5, 4]
    assert fake.last_ids() == [None, "5"]


def test_a_dropped_stream_and_a_restarting_server_are_reconnected_with_backoff(sleeps):
    fake = Fake(stream(match(1), end=dropped()),
                *[httpx.ConnectError] * 8,                    # the server restarts
                stream(match(1), match(2), end=dropped()),
                httpx.ConnectError,
                httpx.Response(503, json={"error": "starting"}),
                stream(match(3)))
    with client(fake) as broker:
        assert ids(itertools.islice(broker.matches("alice"), 3)) == [1, 2, 3]
    assert fake.last_ids() == [None] + ["1"] * 9 + ["2"] * 3
    assert sleeps == pytest.approx([0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0, 5.0, 0.1, 0.2, 0.4])


def test_a_stream_that_ends_is_reconnected(sleeps):
    fake = Fake(stream(match(1)), stream(), stream(match(2)))
    with client(fake) as broker:
        assert ids(itertools.islice(broker.matches("alice", last_event_id=0), 2)) == [1, 2]
    assert fake.last_ids() == ["0", "1", "1"]


def test_reconnecting_after_a_gap_asks_for_what_follows_it(sleeps):
    fake = Fake(stream(match(1), gap(2, 9), end=dropped()),
                stream(gap(2, 9), match(10)))                # the same gap again is not given twice
    with client(fake) as broker:
        assert ids(itertools.islice(broker.matches("alice"), 3)) == [1, (2, 9), 10]
    assert fake.last_ids() == [None, "9"]


def test_without_reconnect_a_cut_or_the_end_stops_and_a_drop_raises(sleeps):
    fake = Fake(stream(match(1), cut(1), match(2)), stream(match(1), end=dropped()))
    with client(fake) as broker:
        assert ids(broker.matches("alice", reconnect=False)) == [1]
        events = broker.matches("alice", reconnect=False)
        assert next(events).id == 1
        with pytest.raises(ServerUnavailableError):
            next(events)
    assert len(fake.requests) == 2 and sleeps == []


def test_http_errors_on_a_reconnection_are_raised(sleeps):
    fake = Fake(stream(match(1), end=dropped()), httpx.Response(403, json={"error": "not yours"}))
    with client(fake) as broker:
        events = broker.matches("alice")
        assert next(events).id == 1
        with pytest.raises(PermissionDeniedError, match="not yours"):
            next(events)


def test_the_first_connection_is_not_retried(sleeps):
    fake = Fake(httpx.ConnectError, httpx.Response(503, json={"error": "starting"}))
    with client(fake) as broker:
        with pytest.raises(ServerUnavailableError, match="broker.test"):
            next(broker.matches("alice"))
        with pytest.raises(ServerError, match="starting"):
            next(broker.matches("alice"))
    assert sleeps == []


@pytest.mark.parametrize("bad", [-1, "3", 1.5, True])
def test_a_bad_last_event_id_is_refused(bad):
    with client(Fake()) as broker, pytest.raises(ValueError):
        broker.matches("alice", last_event_id=bad)


# ---------------------------------------------------------------- timeout

@pytest.mark.parametrize("ping", [": ping\n\n", ": ping\n"])
def test_timeout_ends_an_iterator_kept_busy_by_pings(ping):
    pings = [ping] * 200                                      # 10 s of pings every 0.05 s
    fake = Fake(stream(match(1), *pings, match(2), pause=0.05))
    with client(fake) as broker:
        start = time.monotonic()
        events = list(broker.matches("alice", timeout=0.4))
        elapsed = time.monotonic() - start
    assert ids(events) == [1]
    assert 0.4 <= elapsed < 2.0


def test_timeout_counts_from_the_last_event():
    fake = Fake(stream(*[match(i) for i in range(1, 9)], ": ping\n\n", ": ping\n\n", pause=0.15))
    with client(fake) as broker:
        start = time.monotonic()
        events = list(broker.matches("alice", timeout=0.5, reconnect=False))
    # 1.2 s in all, 0.15 s apart: a timeout counted from the start would end after 3 events
    # (0.35 s to spare between two events, for a busy machine: 0.1 s was not enough)
    assert ids(events) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert time.monotonic() - start >= 1.2


def test_timeout_ends_the_reconnection_loop():
    fake = Fake(then=lambda request: stream(end=dropped()))
    with client(fake) as broker:
        start = time.monotonic()
        assert list(broker.matches("alice", timeout=0.5)) == []
        assert 0.5 <= time.monotonic() - start < 2.0
    assert 2 <= len(fake.requests) < 10                        # 0.1 + 0.2 + 0.4 s of backoff


def test_a_read_timeout_after_the_deadline_ends_the_iterator_and_before_it_reconnects(sleeps):
    def silent_then_timeout(seconds):
        def answer(request):
            def body():
                yield match(int(request.headers.get("last-event-id", "0")) + 1).encode()
                time.sleep(seconds)
                raise httpx.ReadTimeout("timed out")
            return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body())
        return answer
    fake = Fake(silent_then_timeout(0.05), silent_then_timeout(0.5), silent_then_timeout(0.5))
    with client(fake) as broker:
        assert ids(broker.matches("alice", timeout=0.3)) == [1, 2]
        assert ids(broker.matches("alice", timeout=0.3, reconnect=False)) == [1]   # ends, no error
    assert fake.last_ids() == [None, "1", None] and sleeps == [0.1]


def test_register_takes_the_query_first_as_engine_register_does():
    fake = Fake()
    broker = client(fake)
    with pytest.raises(TypeError, match="the query first"):
        broker.register("rio", 'ASK { ?a <http://ex/p> ?t }')  # the old order: id, then query
    with pytest.raises(TypeError, match="two str"):
        broker.register('ASK { ?a <http://ex/p> ?t }', 5)
    assert fake.requests == []  # nothing was sent


# ---------------------------------------------------------------- compressed bodies

def test_compress_sends_bodies_gzip_compressed_and_small_ones_as_they_are():
    """`compress=True`: the same requests, their bodies of 1 KiB and more gzip-compressed
    with Content-Encoding: gzip (what rtf serve reads), smaller ones as they are."""
    import gzip

    big_rdf = '<http://ex/a> <http://ex/p> "' + "Games in Rio " * 200 + '" .\n'
    sent = {}
    for compress in (False, True):
        fake = Fake(then=lambda request: httpx.Response(200, json={}))
        with client(fake, compress=compress) as broker:
            broker.publish(big_rdf)
            broker.publish("<http://ex/a> <http://ex/p> <http://ex/b> .\n")
            broker.register("ASK {}", "q1", metadata={"note": "x" * 2000})
            broker.register("ASK {}", "q2")
            broker.register_many([("ASK {}", f"q{i}", "alice") for i in range(100)])
            broker.health()
        sent[compress] = fake.requests
    big = [True, False, True, False, True, False]
    assert len(sent[False]) == len(sent[True]) == len(big)
    for plain, packed, compressed in zip(sent[False], sent[True], big):
        assert (packed.method, packed.url) == (plain.method, plain.url)
        assert packed.headers.get("content-type") == plain.headers.get("content-type")
        assert "content-encoding" not in plain.headers
        if compressed:
            assert packed.headers["content-encoding"] == "gzip"
            body = gzip.decompress(packed.content)
            assert len(packed.content) < len(body) // 3
        else:
            assert "content-encoding" not in packed.headers
            body = packed.content
        if plain.headers.get("content-type") == "application/json":
            assert json.loads(body) == json.loads(plain.content)
        else:
            assert body == plain.content
