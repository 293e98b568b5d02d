"""A Python client of `rtf serve` (the HTTP contract is docs/server.md).

Register queries, publish RDF and follow a subscriber's pushed matches::

    from rtf.server.client import Client

    with Client("http://127.0.0.1:8750", token=None) as broker:
        broker.register('ASK { ?a <http://ex/p> ?t FILTER ftcontains(?t, "rio") }', "rio",
                        subscriber="alice")
        print(broker.publish('<http://ex/a> <http://ex/p> "Games in Rio" .\\n', format="nt"))
        for event in broker.matches("alice"):      # reconnects with Last-Event-ID by itself
            if isinstance(event, MatchEvent):
                print(event.id, event.match["query"])

Every error the server answers is raised as an `rtf.errors.RtfError`:

- an invalid query (`400` with `line` and `column`): `rtf.errors.QueryError`, the
  class a local `Engine.register` raises, with the same `.line`, `.column` and
  text;
- any other answer of `400` and up: a `ServerError` (`.status`, `.message`, the
  server's `"error"` field), of a subclass for the common ones:
  `BadRequestError` (400, also a `ValueError`), `AuthenticationError` (401),
  `PermissionDeniedError` (403), `NotFoundError` (404, also a `KeyError`, as
  `Engine.get` raises for an unknown query) and `PayloadTooLargeError` (413);
- a server that cannot be reached, or stops answering: `ServerUnavailableError`
  (`.status` is None), whose message names the URL.

The client is synchronous (httpx) and not meant to be shared between threads;
open one per thread.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx
from httpx_sse import EventSource, SSEError, connect_sse

from rtf import __version__
from rtf.errors import QueryError, RtfError
from rtf.io.queries import QueryFileError

__all__ = [
    "Client", "MatchEvent", "GapEvent", "Event", "ServerError", "BadRequestError",
    "AuthenticationError", "PermissionDeniedError", "NotFoundError", "PayloadTooLargeError",
    "ServerUnavailableError", "DEFAULT_URL", "CONTENT_TYPES",
]

DEFAULT_URL = "http://127.0.0.1:8750"

#: `publish(format=...)` names and the Content-Type each one is sent with.
CONTENT_TYPES: dict[str, str] = {
    "nt": "application/n-triples", "ntriples": "application/n-triples",
    "n-triples": "application/n-triples",
    "ttl": "text/turtle", "turtle": "text/turtle",
    "nq": "application/n-quads", "nquads": "application/n-quads",
    "n-quads": "application/n-quads",
    "trig": "application/trig",
}

#: Reconnection delays of `Client.matches`: the first one, doubled after each
#: failed attempt up to the last one; back to the first once an event arrives.
#: (Reviewed for issue 26: retry libraries -- tenacity, stamina, backoff -- retry
#: a call; this is a generator that yields events between attempts, resumes from
#: the last event id and answers to one deadline across reconnections, and its
#: back-off is two lines, so it stays hand-written.)
BACKOFF_FIRST = 0.1
BACKOFF_MAX = 5.0

#: A match stream silent for this long (the server sends a `: ping` every 15 s)
#: is taken for a dead connection, and `Client.matches` reconnects.
STREAM_SILENCE = 45.0

_sleep = time.sleep          # one name, so that tests can record the back-off


# ---------------------------------------------------------------- errors

class ServerError(RtfError):
    """The server answered an error (`status` is its HTTP status), or could not
    be reached (`status` is None). `message` (and `str()`) is the server's
    `"error"` field."""

    def __init__(self, status: int | None, message: str):
        self.status = status
        self.message = message
        super().__init__(message)

    def __str__(self) -> str:               # not KeyError's quoted repr
        return self.message


class BadRequestError(ServerError, ValueError):
    """400: a request the server refuses, other than an invalid query (bad RDF,
    a bad parameter)."""


class AuthenticationError(ServerError):
    """401: no token, or one the server does not know."""


class PermissionDeniedError(ServerError):
    """403: the token's role does not allow this request."""


class NotFoundError(ServerError, KeyError):
    """404: no such query (or path). A `KeyError`, as with `Engine.get`."""


class PayloadTooLargeError(ServerError):
    """413: the request body is over the server's `--max-body`."""


class ServerUnavailableError(ServerError):
    """The server cannot be reached, or the connection failed or timed out."""


_BY_STATUS: dict[int, type[ServerError]] = {
    400: BadRequestError, 401: AuthenticationError, 403: PermissionDeniedError,
    404: NotFoundError, 413: PayloadTooLargeError,
}

#: Statuses after which `matches` keeps trying to reconnect (a server restarting
#: behind a proxy); on its first connection they are raised like any other.
_TRANSIENT = frozenset({502, 503, 504})


def _error_message(response: httpx.Response) -> tuple[str, Any]:
    """The server's `"error"` field (or the body's first line) and the parsed body."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        return body["error"], body
    text = response.text.strip()
    first = text.splitlines()[0][:300] if text else ""
    return first or f"HTTP {response.status_code} {response.reason_phrase}".strip(), body


def _query_error(message: str, line: Any, column: Any) -> QueryError:
    """A QueryError whose str() is the one a local engine gives: the server's
    message is `rtf check`'s ("invalid query: line L, column C: ..."), and
    QueryError puts "line L, column C: " in front by itself."""
    line = line if isinstance(line, int) else None
    column = column if isinstance(column, int) else None
    text = message.removeprefix("invalid query: ")
    if line is not None:
        text = text.removeprefix(f"line {line}, column {column}: ")
    return QueryError(text, line, column)


def error_from_response(response: httpx.Response) -> RtfError:
    """The exception for an error answer (status 400 and up); reads the body."""
    response.read()
    status = response.status_code
    message, body = _error_message(response)
    if isinstance(body, dict) and "record" in body:  # a line of POST /queries
        error = QueryFileError(message)
        error.record, error.query_id = body.get("record"), body.get("id")
        error.line, error.column, error.status = body.get("line"), body.get("column"), status
        return error
    if status == 400 and isinstance(body, dict) and "line" in body and "column" in body:
        return _query_error(message, body["line"], body["column"])
    return _BY_STATUS.get(status, ServerError)(status, message)


# ---------------------------------------------------------------- events

@dataclass(frozen=True, slots=True)
class MatchEvent:
    """A match pushed to the subscriber: `id` is the event id (increasing),
    `match` the `rtf match` line (`publication`, `query`, `subscriber`,
    `bindings`)."""

    id: int
    match: dict[str, Any]


@dataclass(frozen=True, slots=True)
class GapEvent:
    """Events `from_id`..`to_id` (inclusive) of this subscriber were dropped
    from the server's outbox (retention) before they were read: those matches
    are lost. The stream goes on after it."""

    from_id: int
    to_id: int

    @property
    def id(self) -> int:
        """The id to resume after (`to_id`), as with `MatchEvent.id`."""
        return self.to_id


Event = MatchEvent | GapEvent


class _Idle(Exception):
    """The idle timeout of `Client.matches` passed (raised inside the stream)."""


class _Deadline:
    """`seconds` without an event; None: never."""

    def __init__(self, seconds: float | None):
        self.seconds = seconds
        self.reset()

    def reset(self) -> None:
        self.at = None if self.seconds is None else time.monotonic() + self.seconds

    def remaining(self) -> float | None:
        return None if self.at is None else max(0.0, self.at - time.monotonic())

    def expired(self) -> bool:
        return self.at is not None and time.monotonic() >= self.at


def _watched(raw: Iterator[bytes], deadline: _Deadline) -> Iterator[bytes]:
    """The stream's bytes, ended (by _Idle) once the deadline has passed: the
    server's pings keep a connection busy without giving an event."""
    for chunk in raw:
        if deadline.expired():
            raise _Idle
        yield chunk


def _segment(value: str, what: str) -> str:
    """`value` as one percent-encoded path segment ('/', spaces, unicode, and
    the dot segments "." and ".." that URL normalisation would remove)."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"a {what} is a non-empty string, not {value!r}")
    if value in (".", ".."):
        return value.replace(".", "%2E")
    return quote(value, safe="")


def _json(response: httpx.Response) -> dict[str, Any]:
    """The answer's JSON object; a ServerError when it is something else."""
    try:
        value = response.json()
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise ServerError(response.status_code,
                          f"the server answered {response.request.method} {response.request.url.path} "
                          f"with a body that is not a JSON object: {response.text[:200]!r}")
    return value


def _check_order(what: str, query: Any, query_id: Any) -> None:
    """A TypeError for arguments in the old order (id first), told by the query
    text's braces, rather than a query registered under its own text."""
    if not isinstance(query, str) or not isinstance(query_id, str):
        raise TypeError(f"{what} takes the query and its id, two str (query first), not "
                        f"{type(query).__name__} and {type(query_id).__name__}")
    if "{" in query_id and "{" not in query:
        raise TypeError(f"{what} takes the query first, then its id, as Engine.register does: "
                        f"(query, query_id={query!r}) (the arguments look swapped)")


# ---------------------------------------------------------------- the client

class Client:
    """A connection to `rtf serve` at `url`, with a bearer `token` when the
    server runs with `--tokens`; `timeout` (seconds) bounds connecting and each
    read of every request. Use it as a context manager, or call `close()`."""

    def __init__(self, url: str = DEFAULT_URL, token: str | None = None, timeout: float = 30.0,
                 *, transport: httpx.BaseTransport | None = None):
        self.url = url.rstrip("/")
        self.timeout = timeout
        headers = {"User-Agent": f"rtf-client/{__version__}"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout,
                                  transport=transport)

    def __repr__(self) -> str:
        return f"Client({self.url!r})"

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connections (an open `matches` iterator stops working)."""
        self._http.close()

    # ------------------------------------------------------------ requests

    def _unavailable(self, error: httpx.TransportError) -> ServerUnavailableError:
        if isinstance(error, httpx.TimeoutException):
            return ServerUnavailableError(
                None, f"the rtf server at {self.url} did not answer in time ({error or 'timeout'})")
        return ServerUnavailableError(None, f"cannot reach the rtf server at {self.url}: {error}")

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.TransportError as e:
            raise self._unavailable(e) from e
        if response.is_error:
            raise error_from_response(response)
        return response

    # ------------------------------------------------------------ queries

    def register(self, query: str, query_id: str, subscriber: str | None = None,
                 metadata: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Register (or replace) `query` as `query_id` (PUT /queries/{id}); returns
        once the server has it on disk, with the server's JSON answer ({} when it
        has no body). Raises `rtf.errors.QueryError` for an invalid query.

        The arguments come in `rtf.Engine.register`'s order: the query first,
        then its id. A call in the old order (id first) is a TypeError, told by
        the query text's braces, rather than a query registered under its own text.
        """
        _check_order("Client.register", query, query_id)
        body: dict[str, Any] = {"query": query}
        if subscriber is not None:
            body["subscriber"] = subscriber
        if metadata is not None:
            body["metadata"] = dict(metadata)
        response = self._request("PUT", "/queries/" + _segment(query_id, "query id"), json=body)
        return _json(response) if response.content.strip() else {}

    def register_many(self, queries: Iterable[Mapping[str, Any] | Sequence[Any]],
                      atomic: bool = True) -> dict[str, Any] | list[dict[str, Any]]:
        """Register many queries in one request and one transaction (POST /queries),
        each given as `Engine.register_parsed` takes them, ``(query, query_id[,
        subscriber[, metadata]])``, or as a query file's record, ``{"id", "query",
        "subscriber", "metadata"}``.

        `atomic` (the default): all or none; a bad one raises
        `rtf.io.queries.QueryFileError` naming its position (``<body>:LINE: ...``,
        as ``rtf check -f`` does; `.record` is the 1-based position, `.query_id`
        its id, `.line`/`.column` the place in the query) and nothing is
        registered. Returns ``{"registered", "created", "replaced", "failed"}``.
        Otherwise each is registered on its own and the result is one dict per
        query, in order: ``{"line", "id", "status"}`` (201 created, 200 replaced,
        400/403 refused, with ``"error"``).
        """
        lines = []
        for n, item in enumerate(queries, 1):
            if isinstance(item, Mapping):
                record = dict(item)
            elif isinstance(item, Sequence) and not isinstance(item, str) and 2 <= len(item) <= 4:
                record = dict(zip(("query", "id", "subscriber", "metadata"), item))
            else:
                raise TypeError(f"query #{n}: expected (query, query_id[, subscriber[, metadata]]) "
                                f"or a {{'id', 'query', ...}} mapping, not {type(item).__name__}")
            _check_order(f"Client.register_many, query #{n}:", record.get("query"), record.get("id"))
            lines.append(json.dumps({k: v for k, v in record.items() if v is not None},
                                    ensure_ascii=False))
        response = self._request("POST", "/queries", params={"atomic": "true" if atomic else "false"},
                                 content="\n".join(lines).encode("utf-8"),
                                 headers={"Content-Type": "application/x-ndjson"})
        if atomic:
            return _json(response)
        return [json.loads(line) for line in response.content.split(b"\n") if line.strip()]

    def unregister(self, query_id: str) -> None:
        """Remove the query `query_id` (DELETE /queries/{id}); `NotFoundError`
        (a KeyError) if the server does not know it."""
        self._request("DELETE", "/queries/" + _segment(query_id, "query id"))

    def get(self, query_id: str) -> dict[str, Any]:
        """`{"id", "subscriber", "query", "metadata"}` of the query `query_id`;
        `NotFoundError` (a KeyError) if the server does not know it."""
        return _json(self._request("GET", "/queries/" + _segment(query_id, "query id")))

    def queries(self, subscriber: str | None = None, page_size: int = 1000) -> Iterator[dict[str, Any]]:
        """Every registered query (of `subscriber`, or all), in registration
        order, as `get` gives them; fetched `page_size` at a time (1..10000)
        following the server's `next` cursors. Lazy: a request is sent when the
        iteration needs the next page."""
        params: dict[str, Any] = {"limit": page_size}
        if subscriber is not None:
            params["subscriber"] = subscriber
        seen: set[Any] = set()
        while True:
            page = _json(self._request("GET", "/queries", params=params))
            yield from page["queries"]
            cursor = page.get("next")
            if cursor is None:
                return
            if cursor in seen:
                raise ServerError(200, f"the server gave the cursor {cursor!r} twice")
            seen.add(cursor)
            params["after"] = cursor

    # ------------------------------------------------------------ publications

    def publish(self, data: bytes | str, format: str = "nt",
                group_by: str = "subject") -> list[dict[str, Any]]:
        """Post RDF (POST /publications) and return its matches, the `rtf match`
        lines parsed (`publication`, `query`, `subscriber`, `bindings`). `format`
        is nt, ttl (turtle), nq or trig (see CONTENT_TYPES); each subject (or
        graph, with `group_by="graph"`) is one publication. Bad RDF raises
        `BadRequestError` and nothing is matched."""
        content_type = CONTENT_TYPES.get(format.lower())
        if content_type is None:
            raise ValueError(f"unknown RDF format {format!r}; one of {', '.join(CONTENT_TYPES)}")
        body = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        response = self._request("POST", "/publications", params={"group_by": group_by},
                                 content=body, headers={"Content-Type": content_type})
        # Split on "\n" only: a line holds literals written with ensure_ascii=False,
        # where U+2028 and friends (str.splitlines' other line ends) are plain text.
        return [json.loads(line) for line in response.content.split(b"\n") if line.strip()]

    # ------------------------------------------------------------ pushed matches

    def matches(self, subscriber: str, last_event_id: int | None = None, reconnect: bool = True,
                timeout: float | None = None) -> Iterator[Event]:
        """The matches pushed to `subscriber` (GET /subscribers/{name}/matches,
        Server-Sent Events), as `MatchEvent`s; a `GapEvent` says that matches
        were dropped from the server's outbox before they were read.

        `last_event_id`: None starts with the matches published from now on; N
        starts after event N (0: everything the outbox holds). To resume after
        an iterator ended, pass the `id` of the last event it gave (a
        GapEvent's is its `to_id`).

        With `reconnect` (the default), when the server cuts the stream (the
        subscriber fell behind), the connection drops or the server restarts,
        the iterator reconnects by itself with `Last-Event-ID` set to the last
        event it gave (waiting 0.1 s, doubled after each failed attempt up to
        5 s): it never gives an event twice and skips none the outbox holds.
        Only the first connection raises `ServerUnavailableError` when the
        server cannot be reached; HTTP errors (401, 403, 404, ...) are raised
        on any connection. Without `reconnect`, the iterator ends when the
        server ends the stream (or cuts it), and a failed connection raises.

        `timeout`: the iterator ends (returns) after that many seconds without
        an event (the server's pings do not count); None: never. An event that
        arrives after that is not given; resume with `last_event_id`.
        """
        segment = _segment(subscriber, "subscriber name")
        if last_event_id is not None and (isinstance(last_event_id, bool)
                                          or not isinstance(last_event_id, int) or last_event_id < 0):
            raise ValueError(f"last_event_id is an event id (an int >= 0), not {last_event_id!r}")
        if timeout is not None and timeout <= 0:
            raise ValueError(f"timeout is a number of seconds > 0, not {timeout!r}")
        return self._stream(f"/subscribers/{segment}/matches", last_event_id, reconnect,
                            _Deadline(timeout))

    def _stream(self, path: str, position: int | None, reconnect: bool,
                deadline: _Deadline) -> Iterator[Event]:
        # `position`: the id of the last event given (or asked for with last_event_id).
        delay = BACKOFF_FIRST
        connected = False                   # once the server has answered 2xx
        while True:
            headers = {} if position is None else {"Last-Event-ID": str(position)}
            # Each read waits at most the time left (a read that times out early
            # only costs a reconnection), and never longer than STREAM_SILENCE.
            remaining = deadline.remaining()
            read = STREAM_SILENCE if remaining is None else max(0.001, min(remaining, STREAM_SILENCE))
            if not connected and deadline.seconds is not None:
                read = min(deadline.seconds, STREAM_SILENCE)   # exact: see the ReadTimeout case
            try:
                with connect_sse(self._http, "GET", path, headers=headers,
                                 timeout=httpx.Timeout(self.timeout, read=read)) as source:
                    response = source.response
                    if response.is_error:
                        error = error_from_response(response)
                        if not (connected and reconnect and response.status_code in _TRANSIENT):
                            raise error
                    else:
                        connected = True
                        watched = httpx.Response(response.status_code, headers=response.headers,
                                                 content=_watched(response.iter_raw(), deadline))
                        for sse in EventSource(watched).iter_sse():
                            if sse.event == "match":
                                event_id = _event_id(sse.id, response)
                                if position is None or event_id > position:
                                    position = event_id
                                    yield MatchEvent(event_id, _event_data(sse.data, response))
                                    deadline.reset()
                                    delay = BACKOFF_FIRST
                            elif sse.event == "gap":
                                data = _event_data(sse.data, response)
                                first, last = data.get("from"), data.get("to")
                                if not (isinstance(first, int) and isinstance(last, int)):
                                    raise ServerError(response.status_code, f"a gap event without ids: {sse.data!r}")
                                if position is None or last > position:
                                    # Reconnecting after B must not give the gap again.
                                    position = last
                                    yield GapEvent(first, last)
                                    deadline.reset()
                            elif sse.event == "open":
                                # Where the server starts this stream: resume from
                                # there if the connection drops before any event.
                                # (Lower than asked only when the server's outbox is
                                # younger than our position: follow it, or skip its events.)
                                data = _event_data(sse.data, response)
                                if isinstance(data.get("last_event_id"), int):
                                    position = data["last_event_id"]
                            elif sse.event == "cut":
                                data = _event_data(sse.data, response)
                                if position is None and isinstance(data.get("last_event_id"), int):
                                    position = data["last_event_id"]
                                break
                            if deadline.expired():
                                return
            except _Idle:
                return
            except SSEError as e:           # a 2xx that is not an event stream (before TransportError: a subclass)
                raise ServerError(response.status_code, f"{path}: {e}") from e
            except httpx.TimeoutException as e:
                if deadline.expired():
                    return
                if not (connected and reconnect):
                    raise self._unavailable(e) from e
            except httpx.TransportError as e:
                if not (connected and reconnect):
                    raise self._unavailable(e) from e
            if not reconnect:
                return
            if deadline.expired():
                return
            remaining = deadline.remaining()
            _sleep(delay if remaining is None else min(delay, remaining))
            if deadline.expired():
                return
            delay = min(delay * 2, BACKOFF_MAX)

    # ------------------------------------------------------------ service

    def stream_ticket(self, subscriber: str) -> dict[str, Any]:
        """A short-lived ticket that opens `subscriber`'s stream without a token
        (POST /subscribers/{name}/tickets): ``{"ticket", "expires", "url"}``, for a
        browser's ``EventSource(url)``."""
        return _json(self._request("POST", f"/subscribers/{_segment(subscriber, 'subscriber name')}"
                                           "/tickets"))

    def health(self) -> dict[str, Any]:
        """GET /health: `{"status": "ok", "queries": N, "algorithm": ..., ...}`."""
        return _json(self._request("GET", "/health"))

    def metrics(self) -> str:
        """GET /metrics: the Prometheus text."""
        return self._request("GET", "/metrics").text


def _event_id(value: str, response: httpx.Response) -> int:
    try:
        return int(value)
    except ValueError:
        raise ServerError(response.status_code, f"a match event without a numeric id: {value!r}") from None


def _event_data(data: str, response: httpx.Response) -> dict[str, Any]:
    try:
        value = json.loads(data)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise ServerError(response.status_code, f"an event whose data is not a JSON object: {data[:200]!r}")
    return value
