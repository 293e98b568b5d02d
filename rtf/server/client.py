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

Every error the server answers is raised as an `rtf.errors.RtfError`
(`rtf.server.client_errors` says which). `from rtf import Client` is the short path.

The client is synchronous (httpx) and not meant to be shared between threads;
open one per thread. `rtf.server.async_client.AsyncClient` is the same client for
asyncio. Both are thin: what each call sends and how its answer reads is
`rtf.server.client_calls`, how the match stream resumes `rtf.server.client_stream`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import httpx
from httpx_sse import EventSource, SSEError, connect_sse

from rtf.server import client_calls as calls
from rtf.server.client_calls import CONTENT_TYPES, DEFAULT_URL
from rtf.server.client_errors import (AuthenticationError, BadRequestError, NotFoundError,
                                      PayloadTooLargeError, PermissionDeniedError, ServerError,
                                      ServerUnavailableError, error_from_response, unavailable)
from rtf.server.client_stream import (BACKOFF_FIRST, BACKOFF_MAX, CUT, STREAM_SILENCE, Event,
                                      GapEvent, Idle, MatchEvent, MatchesEvent, Resumption,
                                      check_matches_arguments, watched)

__all__ = [
    "Client", "MatchEvent", "MatchesEvent", "GapEvent", "Event", "ServerError", "BadRequestError",
    "AuthenticationError", "PermissionDeniedError", "NotFoundError", "PayloadTooLargeError",
    "ServerUnavailableError", "DEFAULT_URL", "CONTENT_TYPES", "BACKOFF_FIRST", "BACKOFF_MAX",
    "STREAM_SILENCE",
]

_sleep = time.sleep          # one name, so that tests can record the back-off


class Client:
    """A connection to `rtf serve` at `url`, with a bearer `token` when the
    server runs with `--tokens`; `timeout` (seconds) bounds connecting and each
    read of every request. With `compress`, request bodies of 1 KiB and more are
    sent gzip-compressed (an N-Triples body shrinks about 3 times: for a slow or
    metered network). Use it as a context manager, or call `close()`."""

    def __init__(self, url: str = DEFAULT_URL, token: str | None = None, timeout: float = 30.0,
                 *, compress: bool = False, transport: httpx.BaseTransport | None = None):
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.compress = compress
        self._http = httpx.Client(base_url=self.url, headers=calls.headers(token), timeout=timeout,
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
        return unavailable(self.url, error)

    def _send(self, call: calls.Call) -> httpx.Response:
        call = calls.compressed(call) if self.compress else call
        try:
            response = self._http.request(call.method, call.path, **call.kwargs)
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
        call = calls.register(query, query_id, subscriber, metadata, "Client.register")
        return calls.answer_json_or_empty(self._send(call))

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
        call = calls.register_many(queries, atomic, "Client.register_many")
        return calls.register_many_answer(self._send(call), atomic)

    def unregister(self, query_id: str) -> None:
        """Remove the query `query_id` (DELETE /queries/{id}); `NotFoundError`
        (a KeyError) if the server does not know it."""
        self._send(calls.Call("DELETE", calls.query_path(query_id)))

    def get(self, query_id: str) -> dict[str, Any]:
        """`{"id", "subscriber", "query", "metadata"}` of the query `query_id`;
        `NotFoundError` (a KeyError) if the server does not know it."""
        return calls.answer_json(self._send(calls.Call("GET", calls.query_path(query_id))))

    def queries(self, subscriber: str | None = None, page_size: int = 1000) -> Iterator[dict[str, Any]]:
        """Every registered query (of `subscriber`, or all), in registration
        order, as `get` gives them; fetched `page_size` at a time (1..10000)
        following the server's `next` cursors. Lazy: a request is sent when the
        iteration needs the next page."""
        pages = calls.Pages(subscriber, page_size)
        while (call := pages.call()) is not None:
            yield from pages.read(self._send(call))

    # ------------------------------------------------------------ publications

    def publish(self, data: bytes | str, format: str = "nt",
                group_by: str = "subject", grouped: bool = False) -> list[dict[str, Any]]:
        """Post RDF (POST /publications) and return its matches, the `rtf match`
        lines parsed (`publication`, `query`, `subscriber`, `bindings`). `format`
        is nt, ttl (turtle), nq or trig (see CONTENT_TYPES); each subject (or
        graph, with `group_by="graph"`) is one publication. Bad RDF raises
        `BadRequestError` and nothing is matched. `grouped`: the matches of a
        publication and subscriber that share one answer come as one line, with
        `queries` (a list) for `query` (docs/server.md, "Grouped events")."""
        return calls.answer_lines(self._send(calls.publish(data, format, group_by, grouped)))

    # ------------------------------------------------------------ pushed matches

    def matches(self, subscriber: str, last_event_id: int | None = None, reconnect: bool = True,
                timeout: float | None = None, grouped: bool = False) -> Iterator[Event]:
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

        `grouped`: a `MatchesEvent` for the matches of one publication that share
        one answer (its `matches` lists them one by one), instead of a
        `MatchEvent` each: fewer and smaller events, the same ids, resumption and
        rules (docs/server.md, "Grouped events").
        """
        path = calls.matches_path(subscriber, grouped)
        check_matches_arguments(last_event_id, timeout)
        return self._stream(Resumption(path, last_event_id, reconnect, timeout))

    def _stream(self, state: Resumption) -> Iterator[Event]:
        while True:
            try:
                with connect_sse(self._http, "GET", state.path, headers=state.headers(),
                                 timeout=state.timeout(self.timeout)) as source:
                    response = source.response
                    if response.is_error:
                        response.read()
                    if state.opened(response):
                        events = httpx.Response(response.status_code, headers=response.headers,
                                                content=watched(response.iter_raw(), state.deadline))
                        for sse in EventSource(events).iter_sse():
                            event = state.event(sse, response)
                            if event is CUT:
                                break
                            if event is not None:
                                yield event  # type: ignore[misc]
                                state.given()
                            if state.deadline.expired():
                                return
            except (Idle, SSEError, httpx.TransportError) as e:
                if state.failed(e, self._unavailable):
                    return
            if (wait := state.pause()) is None:
                return
            _sleep(wait)
            if state.deadline.expired():
                return

    # ------------------------------------------------------------ service

    def stream_ticket(self, subscriber: str) -> dict[str, Any]:
        """A short-lived ticket that opens `subscriber`'s stream without a token
        (POST /subscribers/{name}/tickets): ``{"ticket", "expires", "url"}``, for a
        browser's ``EventSource(url)``."""
        return calls.answer_json(self._send(calls.Call("POST", calls.subscriber_path(subscriber,
                                                                                      "tickets"))))

    def health(self) -> dict[str, Any]:
        """GET /health: `{"status": "ok", "queries": N, "algorithm": ..., ...}`."""
        return calls.answer_json(self._send(calls.Call("GET", "/health")))

    def metrics(self) -> str:
        """GET /metrics: the Prometheus text."""
        return self._send(calls.Call("GET", "/metrics")).text
