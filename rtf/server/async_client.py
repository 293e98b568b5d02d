"""The Python client of `rtf serve` for asyncio: `rtf.server.client.Client`'s calls,
each awaited (httpx.AsyncClient), with the same arguments, answers, errors and match
stream (Server-Sent Events, resumed with ``Last-Event-ID``, the same reconnection,
cut, gap and idle-timeout rules: both run `rtf.server.client_stream.Resumption`)::

    from rtf import AsyncClient, MatchEvent

    async with AsyncClient("http://127.0.0.1:8750") as broker:
        await broker.register('ASK { ?a <http://ex/p> ?t FILTER ftcontains(?t, "rio") }',
                              "rio", subscriber="alice")
        async for event in broker.matches("alice", last_event_id=0, timeout=5):
            if isinstance(event, MatchEvent):
                print(event.id, event.match["query"])

One client may serve many tasks at once (httpx.AsyncClient pools its connections);
use it inside one event loop.
"""

from __future__ import annotations

import asyncio
from contextlib import aclosing
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import Any

import httpx
from httpx_sse import EventSource, SSEError, aconnect_sse

from rtf.server import client_calls as calls
from rtf.server.client_calls import DEFAULT_URL
from rtf.server.client_errors import ServerUnavailableError, error_from_response, unavailable
from rtf.server.client_stream import (CUT, Event, Idle, Resumption, awatched,
                                      check_matches_arguments)

__all__ = ["AsyncClient"]

_sleep = asyncio.sleep       # one name, so that tests can record the back-off


class AsyncClient:
    """A connection to `rtf serve` at `url` for asyncio, with a bearer `token` when
    the server runs with `--tokens`; `timeout` (seconds) bounds connecting and each
    read of every request; `compress` as `Client`'s. Use it as an async context manager,
    or await `aclose()`.
    Each method is `rtf.server.client.Client`'s, awaited; `matches` is an async
    iterator."""

    def __init__(self, url: str = DEFAULT_URL, token: str | None = None, timeout: float = 30.0,
                 *, compress: bool = False, transport: httpx.AsyncBaseTransport | None = None):
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.compress = compress
        self._http = httpx.AsyncClient(base_url=self.url, headers=calls.headers(token),
                                       timeout=timeout, transport=transport)

    def __repr__(self) -> str:
        return f"AsyncClient({self.url!r})"

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connections (an open `matches` iterator stops working)."""
        await self._http.aclose()

    def _unavailable(self, error: httpx.TransportError) -> ServerUnavailableError:
        return unavailable(self.url, error)

    async def _send(self, call: calls.Call) -> httpx.Response:
        call = calls.compressed(call) if self.compress else call
        try:
            response = await self._http.request(call.method, call.path, **call.kwargs)
        except httpx.TransportError as e:
            raise self._unavailable(e) from e
        if response.is_error:
            raise error_from_response(response)
        return response

    # ------------------------------------------------------------ queries

    async def register(self, query: str, query_id: str, subscriber: str | None = None,
                       metadata: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """`Client.register`: PUT /queries/{id}."""
        call = calls.register(query, query_id, subscriber, metadata, "AsyncClient.register")
        return calls.answer_json_or_empty(await self._send(call))

    async def register_many(self, queries: Iterable[Mapping[str, Any] | Sequence[Any]],
                            atomic: bool = True) -> dict[str, Any] | list[dict[str, Any]]:
        """`Client.register_many`: POST /queries."""
        call = calls.register_many(queries, atomic, "AsyncClient.register_many")
        return calls.register_many_answer(await self._send(call), atomic)

    async def unregister(self, query_id: str) -> None:
        """`Client.unregister`: DELETE /queries/{id}."""
        await self._send(calls.Call("DELETE", calls.query_path(query_id)))

    async def get(self, query_id: str) -> dict[str, Any]:
        """`Client.get`: GET /queries/{id}."""
        return calls.answer_json(await self._send(calls.Call("GET", calls.query_path(query_id))))

    async def queries(self, subscriber: str | None = None,
                      page_size: int = 1000) -> AsyncIterator[dict[str, Any]]:
        """`Client.queries`, an async iterator: a page is asked when the iteration needs it."""
        pages = calls.Pages(subscriber, page_size)
        while (call := pages.call()) is not None:
            for query in pages.read(await self._send(call)):
                yield query

    # ------------------------------------------------------------ publications

    async def publish(self, data: bytes | str, format: str = "nt",
                      group_by: str = "subject", grouped: bool = False) -> list[dict[str, Any]]:
        """`Client.publish`: POST /publications, its matches parsed."""
        return calls.answer_lines(await self._send(calls.publish(data, format, group_by, grouped)))

    # ------------------------------------------------------------ pushed matches

    def matches(self, subscriber: str, last_event_id: int | None = None, reconnect: bool = True,
                timeout: float | None = None, grouped: bool = False) -> AsyncIterator[Event]:
        """`Client.matches`, an async iterator (``async for event in ...``): the same
        events, resumption, reconnection and `timeout`. Bad arguments raise here,
        before any request."""
        path = calls.matches_path(subscriber, grouped)
        check_matches_arguments(last_event_id, timeout)
        return self._stream(Resumption(path, last_event_id, reconnect, timeout))

    async def _stream(self, state: Resumption) -> AsyncIterator[Event]:
        # Client._stream with await (Python cannot share a loop between a generator and an
        # async one): everything it decides is Resumption's.
        while True:
            try:
                async with aconnect_sse(self._http, "GET", state.path, headers=state.headers(),
                                        timeout=state.timeout(self.timeout)) as source:
                    response = source.response
                    if response.is_error:
                        await response.aread()
                    if state.opened(response):
                        events = httpx.Response(response.status_code, headers=response.headers,
                                                content=awatched(response.aiter_raw(), state.deadline))
                        # closed here, not by the garbage collector once the loop is gone
                        async with aclosing(EventSource(events).aiter_sse()) as sses:
                            async for sse in sses:
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
            await _sleep(wait)
            if state.deadline.expired():
                return

    # ------------------------------------------------------------ service

    async def stream_ticket(self, subscriber: str) -> dict[str, Any]:
        """`Client.stream_ticket`: POST /subscribers/{name}/tickets."""
        call = calls.Call("POST", calls.subscriber_path(subscriber, "tickets"))
        return calls.answer_json(await self._send(call))

    async def health(self) -> dict[str, Any]:
        """GET /health."""
        return calls.answer_json(await self._send(calls.Call("GET", "/health")))

    async def metrics(self) -> str:
        """GET /metrics: the Prometheus text."""
        return (await self._send(calls.Call("GET", "/metrics"))).text
