"""The subscriber routes of `rtf serve`: a subscriber's matches as Server-Sent
Events (the outbox's backlog after ``Last-Event-ID``, then the live ones), and
the short-lived tickets that let a browser's ``EventSource`` open a stream."""

from __future__ import annotations

import json
from urllib.parse import quote

import anyio
from fastapi import APIRouter, Depends, Query, Request
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, Field
from sse_starlette import EventSourceResponse, ServerSentEvent

from rtf.server.api_common import Authenticator, Refused, check_name, error_responses, event_id
from rtf.server.auth import Principal
from rtf.server.broker import Broker

#: The line separator of every event (the match events are written with it too).
SEP = "\n"

#: Events read from the outbox at a time when a subscriber catches up.
BACKLOG_PAGE = 1000

#: Seconds between two keep-alive comments on an idle stream.
PING_S = 15

#: Seconds a stream may wait for its client to take one event before it is
#: dropped (a client that stopped reading; its matches stay in the outbox).
SEND_TIMEOUT_S = 30

#: Seconds a stream has, once the server shuts down, to end by itself before it is
#: cancelled (less than uvicorn's graceful shutdown timeout in rtf.server.command).
SHUTDOWN_GRACE_S = 2.0


class Ticket(BaseModel):
    ticket: str = Field(description="Pass as ?ticket= to GET /subscribers/{name}/matches")
    expires: int = Field(description="Unix time after which it opens no stream")
    url: str = Field(description="The stream's path with the ticket")


def routes(broker: Broker, auth: Authenticator, shutdown: anyio.Event) -> APIRouter:
    router = APIRouter(tags=["subscribers"])

    @router.get("/subscribers/{name:text}/matches",
                responses={200: {"content": {"text/event-stream": {}},
                                 "description": "Server-Sent Events: open, match (or, grouped, "
                                                "matches), gap, cut"},
                           **error_responses(400, 401, 403)})
    async def stream_matches(request: Request, name: str,
                             last_event_id: str | None = Query(None, description="As the "
                                                               "Last-Event-ID header"),
                             ticket: str | None = Query(None, description="A stream ticket "
                                                        "(POST /subscribers/{name}/tickets), for "
                                                        "clients that cannot send a header"),
                             grouped: bool = Query(False, description="One `matches` event per "
                                                   "publication (its matches sharing one answer) "
                                                   "instead of one `match` event per match"),
                             ):
        """The subscriber's matches as Server-Sent Events, resuming after Last-Event-ID."""
        check_name("a subscriber name", name)
        who = auth.stream_principal(request, name, ticket)
        if not who.may_act_for(name):
            raise Refused(403, f"a {who} token cannot read the stream of {name!r}")
        header = request.headers.get("last-event-id")
        if header is not None:
            last_event_id = event_id(header, "Last-Event-ID")
        elif last_event_id is not None:
            last_event_id = event_id(last_event_id, "last_event_id")
        return EventSourceResponse(_events(broker, name, last_event_id, grouped), ping=PING_S,
                                   send_timeout=SEND_TIMEOUT_S, shutdown_event=shutdown,
                                   shutdown_grace_period=SHUTDOWN_GRACE_S, sep=SEP,
                                   headers={"Cache-Control": "no-store"})

    @router.post("/subscribers/{name:text}/tickets", response_model=Ticket,
                 responses=error_responses(400, 401, 403))
    async def stream_ticket(name: str, who: Principal = Depends(auth)):
        """A ticket that opens this subscriber's stream for a short while (an EventSource
        cannot send Authorization; a long-lived token never goes in a URL)."""
        check_name("a subscriber name", name)
        if not who.may_act_for(name):
            raise Refused(403, f"a {who} token cannot read the stream of {name!r}")
        ticket, expires = auth.tickets.issue(name)
        path = request_path(name)
        return {"ticket": ticket, "expires": expires, "url": f"{path}?ticket={ticket}"}

    return router


def request_path(name: str) -> str:
    """The path of `name`'s stream."""
    return f"/subscribers/{quote(name, safe='')}/matches"


async def _events(broker: Broker, subscriber: str, last_event_id: int | None,
                  grouped: bool = False):
    """The SSE events of one connection: the backlog after `last_event_id`, then live ones;
    one a match, or `grouped` (`rtf.server.events`).

    The stream is opened before the outbox is read, so an event committed
    meanwhile is seen twice (outbox and queue) rather than never: ids at or
    below the last one sent are skipped.
    """
    hub, outbox, metrics = broker.hub, broker.outbox, broker.metrics
    stream = hub.open(subscriber, grouped)
    try:
        # None: from now on. An id above the newest (the data folder was replaced
        # since the client last read) is read as the newest, so nothing new is skipped.
        sent = outbox.last_id if last_event_id is None else min(last_event_id, outbox.last_id)
        # Where this connection starts, as an event id: a client that drops
        # before any match resumes from here (EventSource does it by itself).
        yield _event("open", {"last_event_id": sent}, str(sent))
        if last_event_id is not None:
            pruned = await run_in_threadpool(outbox.pruned_through, subscriber)
            if pruned > sent:
                yield _event("gap", {"from": sent + 1, "to": pruned})
                sent = pruned

            def page(after: int):  # read, and written as events, in a worker thread
                chunks = outbox.chunks_since(subscriber, after, BACKLOG_PAGE)
                return chunks, b"".join(c.sse(grouped) for c in chunks)

            while True:
                chunks, data = await run_in_threadpool(page, sent)
                if not chunks:
                    break
                yield data
                sent = chunks[-1].last_id
                metrics.delivered.inc(sum(c.size for c in chunks))
        while True:
            chunks = await stream.next_chunks()
            if chunks is None:
                if not stream.cut:
                    return
                yield _event("cut", {
                    "reason": f"the subscriber fell more than {hub.queue_size} events behind; "
                              "reconnect with Last-Event-ID to read the rest from the outbox",
                    "last_event_id": sent})
                return
            if chunks[0].first_id <= sent:  # seen in the backlog already
                chunks = [c for c in (c.after(sent) for c in chunks) if c is not None]
                if not chunks:
                    continue
            yield b"".join(c.sse(grouped) for c in chunks) if len(chunks) > 1 else chunks[0].sse(grouped)
            metrics.delivered.inc(sum(c.size for c in chunks))
            sent = chunks[-1].last_id
    finally:
        hub.close(stream)


def _event(kind: str, data: dict, id: str | None = None) -> ServerSentEvent:
    return ServerSentEvent(json.dumps(data), event=kind, id=id, sep=SEP)
