"""A subscriber's stream of pushed matches (GET /subscribers/{name}/matches, Server-Sent
Events) as the clients of `rtf serve` follow it: the events they give (`MatchEvent`,
`MatchesEvent` on a grouped stream, `GapEvent`) and `Resumption`, the state of one `matches` iteration across its
connections -- where to resume (``Last-Event-ID``), what each server event means
(a match, a gap, where the stream opened, a cut), which failures reconnect and after
how long, and when the idle timeout ends it. It does no I/O: `rtf.server.client`
and `rtf.server.async_client` run the same states, one with ``connect_sse`` and
``time.sleep``, the other with ``aconnect_sse`` and ``asyncio.sleep``.

(Reviewed for issue 26: retry libraries -- tenacity, stamina, backoff -- retry a
call; this is a generator that yields events between attempts, resumes from the
last event id and answers to one deadline across reconnections, and its back-off
is two lines, so it stays hand-written.)
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
from httpx_sse import ServerSentEvent, SSEError

from rtf.server.client_errors import TRANSIENT, ServerError, error_from_response

#: Reconnection delays of `matches`: the first one, doubled after each failed
#: attempt up to the last one; back to the first once an event arrives.
BACKOFF_FIRST = 0.1
BACKOFF_MAX = 5.0

#: A match stream silent for this long (the server sends a `: ping` every 15 s)
#: is taken for a dead connection, and `matches` reconnects.
STREAM_SILENCE = 45.0


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


@dataclass(frozen=True, slots=True)
class MatchesEvent:
    """Matches pushed to the subscriber of a grouped stream (``matches(...,
    grouped=True)``): the consecutive matches of one publication that share one
    answer, `group` the grouped line (`publication`, `subscriber`, `queries`, the
    answer: `bindings`, or a CONSTRUCT's `triples`). Each match has its own id, in
    the order of `queries`; `id` is the last one's (resume after it)."""

    id: int
    group: dict[str, Any]

    @property
    def first_id(self) -> int:
        """The id of the first match."""
        return self.id - len(self.group["queries"]) + 1

    @property
    def matches(self) -> list[MatchEvent]:
        """The matches one by one, each as a stream of single matches gives it."""
        g = self.group
        answer = {k: v for k, v in g.items() if k not in ("publication", "subscriber", "queries")}
        return [MatchEvent(self.first_id + k, {"publication": g["publication"], "query": query,
                                               "subscriber": g["subscriber"], **answer})
                for k, query in enumerate(g["queries"])]


Event = MatchEvent | MatchesEvent | GapEvent

#: What `Resumption.event` answers for a cut: this connection is over.
CUT = object()


class Idle(Exception):
    """The idle timeout of `matches` passed (raised inside the stream)."""


class Deadline:
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


def watched(raw: Iterator[bytes], deadline: Deadline) -> Iterator[bytes]:
    """The stream's bytes, ended (by Idle) once the deadline has passed: the
    server's pings keep a connection busy without giving an event."""
    for chunk in raw:
        if deadline.expired():
            raise Idle
        yield chunk


async def awatched(raw: AsyncIterator[bytes], deadline: Deadline) -> AsyncIterator[bytes]:
    """`watched`, for an async stream."""
    async for chunk in raw:
        if deadline.expired():
            raise Idle
        yield chunk


def check_matches_arguments(last_event_id: int | None, timeout: float | None) -> None:
    if last_event_id is not None and (isinstance(last_event_id, bool)
                                      or not isinstance(last_event_id, int) or last_event_id < 0):
        raise ValueError(f"last_event_id is an event id (an int >= 0), not {last_event_id!r}")
    if timeout is not None and timeout <= 0:
        raise ValueError(f"timeout is a number of seconds > 0, not {timeout!r}")


class Resumption:
    """One `matches` iteration of the stream at `path`, across its connections.

    `position` is the id of the last event given (or asked for with
    `last_event_id`; None: from now on). A client's loop, per connection: send
    `headers()` with `timeout(...)`; read the body of an error answer and ask
    `opened(response)` (raises it, or False: reconnect); give what `event(sse,
    response)` answers (an Event, then call `given()`; None: nothing; CUT: end this
    connection), and end once `deadline` has expired; when a connection ends by an
    error (Idle, SSEError, a transport error) ask `failed(error, unavailable)`
    (raises it, or True: end);
    then wait `pause()` seconds (None: end) and, unless `deadline` has expired
    by then, connect again.
    """

    def __init__(self, path: str, position: int | None, reconnect: bool, timeout: float | None):
        self.path = path
        self.position = position
        self.reconnect = reconnect
        self.deadline = Deadline(timeout)
        self.delay = BACKOFF_FIRST
        self.connected = False  # once the server has answered 2xx
        self.response: httpx.Response | None = None  # the last connection's answer

    def headers(self) -> dict[str, str]:
        return {} if self.position is None else {"Last-Event-ID": str(self.position)}

    def timeout(self, connect: float) -> httpx.Timeout:
        """Each read waits at most the time left (a read that times out early only
        costs a reconnection), and never longer than STREAM_SILENCE."""
        remaining = self.deadline.remaining()
        read = STREAM_SILENCE if remaining is None else max(0.001, min(remaining, STREAM_SILENCE))
        if not self.connected and self.deadline.seconds is not None:
            read = min(self.deadline.seconds, STREAM_SILENCE)   # exact: see `failed`
        return httpx.Timeout(connect, read=read)

    def opened(self, response: httpx.Response) -> bool:
        """True: read the events of this answer; False: reconnect (a server restarting
        behind a proxy, once connected); an error answer (its body read) is raised."""
        self.response = response
        if response.is_error:
            error = error_from_response(response)
            if not (self.connected and self.reconnect and response.status_code in TRANSIENT):
                raise error
            return False
        self.connected = True
        return True

    def event(self, sse: ServerSentEvent, response: httpx.Response) -> Event | object | None:
        if sse.event in ("match", "matches"):
            event_id = _event_id(sse.id, response)
            if self.position is None or event_id > self.position:
                self.position = event_id
                data = _event_data(sse.data, response)
                if sse.event == "match":
                    return MatchEvent(event_id, data)
                if not (isinstance(data.get("queries"), list) and data["queries"]):
                    raise ServerError(response.status_code,
                                      f"a matches event without queries: {sse.data[:200]!r}")
                return MatchesEvent(event_id, data)
        elif sse.event == "gap":
            data = _event_data(sse.data, response)
            first, last = data.get("from"), data.get("to")
            if not (isinstance(first, int) and isinstance(last, int)):
                raise ServerError(response.status_code, f"a gap event without ids: {sse.data!r}")
            if self.position is None or last > self.position:
                self.position = last  # reconnecting after it must not give the gap again
                return GapEvent(first, last)
        elif sse.event == "open":
            # Where the server starts this stream: resume from there if the connection
            # drops before any event. (Lower than asked only when the server's outbox is
            # younger than our position: follow it, or skip its events.)
            data = _event_data(sse.data, response)
            if isinstance(data.get("last_event_id"), int):
                self.position = data["last_event_id"]
        elif sse.event == "cut":
            data = _event_data(sse.data, response)
            if self.position is None and isinstance(data.get("last_event_id"), int):
                self.position = data["last_event_id"]
            return CUT
        return None

    def given(self) -> None:
        """An event was given (and its taker gave control back): the idle timeout
        and the back-off start again."""
        self.deadline.reset()
        self.delay = BACKOFF_FIRST

    def failed(self, error: Exception,
               unavailable: Callable[[httpx.TransportError], ServerError]) -> bool:
        """A connection that ended by `error`: True ends the iteration (the idle timeout,
        or a read that timed out with it); raised when not to reconnect (an answer
        that is not an event stream, a failed first connection); False: reconnect."""
        if isinstance(error, Idle):
            return True
        if isinstance(error, SSEError):  # a 2xx that is not an event stream
            status = None if self.response is None else self.response.status_code
            raise ServerError(status, f"{self.path}: {error}") from error
        assert isinstance(error, httpx.TransportError)
        if isinstance(error, httpx.TimeoutException) and self.deadline.expired():
            return True
        if not (self.connected and self.reconnect):
            raise unavailable(error) from error
        return False

    def pause(self) -> float | None:
        """Seconds to wait before reconnecting (doubling the next one); None: end."""
        if not self.reconnect or self.deadline.expired():
            return None
        remaining = self.deadline.remaining()
        wait = self.delay if remaining is None else min(self.delay, remaining)
        self.delay = min(self.delay * 2, BACKOFF_MAX)
        return wait


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
