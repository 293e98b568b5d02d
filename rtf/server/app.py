"""The HTTP API of `rtf serve` (docs/server.md): a FastAPI app over a `Broker`.

Engine work and SQLite writes run in worker threads (the event loop keeps
streaming events meanwhile); the streams live on the loop. Every error is
``{"error": "<one line>"}`` (with ``line`` and ``column`` for a query).
"""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import sqlite3
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import unquote_to_bytes

import anyio
from fastapi import Depends, FastAPI, Path, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel, Field
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.convertors import PathConvertor, register_url_convertor
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect

import rtf
from rtf.errors import PublicationError, QueryError
from rtf.io.queries import is_unicode, json_problem
from rtf.server.auth import ANYONE, MAX_NAME_CHARS, Principal, Tokens
from rtf.server.broker import Broker
from rtf.server.registry import NotOwnerError

log = logging.getLogger("rtf.server")

#: Content types of publications, and the reader's format names.
RDF_TYPES = {
    "application/n-triples": "nt", "text/plain": "nt",
    "text/turtle": "ttl", "application/x-turtle": "ttl",
    "application/n-quads": "nq", "application/trig": "trig",
    "application/rdf+xml": "rdf",
}

#: Longest query id, and subscriber name, accepted: characters.
MAX_ID_CHARS = MAX_NAME_CHARS

#: The largest event id or cursor: SQLite's largest integer. A larger
#: Last-Event-ID or ``after`` is read as this (past the newest: nothing newer).
MAX_EVENT_ID = 2**63 - 1

#: Events read from the outbox at a time when a subscriber catches up.
BACKLOG_PAGE = 1000

#: Most events written to a stream in one chunk.
SEND_BATCH = 1000

#: Seconds between two keep-alive comments on an idle stream.
PING_S = 15

#: Seconds a stream may wait for its client to take one event before it is
#: dropped (a client that stopped reading; its matches stay in the outbox).
SEND_TIMEOUT_S = 30

#: Seconds a stream has, once the server shuts down, to end by itself before it is
#: cancelled (less than uvicorn's graceful shutdown timeout in rtf.server.command).
SHUTDOWN_GRACE_S = 2.0


class AnyText(PathConvertor):
    """``{name:text}``: any characters, newlines included (``{name:path}`` stops at one)."""

    regex = "(?s:.*)"


register_url_convertor("text", AnyText())


class QueryIn(BaseModel):
    """A query to register."""

    query: str = Field(description="The query text (docs/language.md)")
    subscriber: str | None = Field(None, description="Who receives its matches (a subscriber "
                                   "token's own name when omitted)")
    metadata: dict[str, Any] | None = Field(None, description="Kept with the query, returned by GET")


class Refused(HTTPException):
    """An error answer: status and one readable line (plus fields)."""

    def __init__(self, status: int, message: str, headers: dict | None = None, **fields):
        super().__init__(status, message, headers)
        self.fields = fields


def create_app(broker: Broker, tokens: Tokens | None = None,
               on_ready=None) -> FastAPI:
    """The app serving `broker`; `tokens` turns authentication on; `on_ready()` is
    called once the app has started (the server prints its address then)."""
    # Set by sse-starlette once it sees the server shutting down (uvicorn waits for
    # the open connections before the lifespan ends): the streams then end by
    # themselves, each response complete, instead of being cancelled mid-response.
    shutdown = anyio.Event()

    async def close_streams_at_shutdown():
        await shutdown.wait()
        broker.hub.close_all()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        broker.hub.bind(asyncio.get_running_loop())
        watcher = asyncio.get_running_loop().create_task(close_streams_at_shutdown())
        if broker.registry.changes_since_snapshot:
            broker.snapshot_in_background()  # the next start loads instead of replaying
        if on_ready is not None:
            on_ready()
        try:
            yield
        finally:
            shutdown.set()
            broker.hub.close_all()
            watcher.cancel()
            await run_in_threadpool(broker.close)

    app = FastAPI(title="rtf serve", version=rtf.__version__, lifespan=lifespan,
                  description="Continuous full-text SPARQL queries over RDF publications: "
                              "register queries, post publications, receive matches "
                              "(docs/server.md).")
    app.add_middleware(BodyLimit, limit=broker.config.max_body, metrics=broker.metrics)
    app.add_middleware(Utf8Only, metrics=broker.metrics)

    # ------------------------------------------------------------ errors

    @app.exception_handler(HTTPException)
    async def refused(request: Request, exc: HTTPException):
        broker.metrics.bad_requests.labels(str(exc.status_code)).inc()
        body = {"error": exc.detail, **getattr(exc, "fields", {})}
        headers = getattr(exc, "headers", None)
        return JSONResponse(body, exc.status_code, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError):
        broker.metrics.bad_requests.labels("400").inc()
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        return JSONResponse({"error": f"bad request: {where}: {first.get('msg', 'invalid')}"}, 400)

    @app.exception_handler(ClientDisconnect)
    async def gone(request: Request, exc: ClientDisconnect):
        # The client left before its body was read: nobody reads an answer.
        log.info("%s %s: the client disconnected before sending its whole body",
                 request.method, request.url.path)
        return Response(status_code=400)

    @app.exception_handler(sqlite3.Error)
    @app.exception_handler(OSError)
    async def storage_failed(request: Request, exc: Exception):
        status, message = _storage_error(exc)
        broker.metrics.bad_requests.labels(str(status)).inc()
        log.warning("%s %s: %s", request.method, request.url.path, message)
        return JSONResponse({"error": message}, status)

    @app.exception_handler(Exception)
    async def internal(request: Request, exc: Exception):
        # A bug: the answer is JSON like every other; uvicorn logs the traceback.
        broker.metrics.bad_requests.labels("500").inc()
        return JSONResponse({"error": f"internal error: {type(exc).__name__}: {exc}; please "
                                      "report it (the server log has the traceback)"}, 500)

    # ------------------------------------------------------------- auth

    async def principal(request: Request) -> Principal:
        if tokens is None:
            return ANYONE
        header = _utf8(request.headers.get("authorization", ""))
        scheme, _, token = header.partition(" ")
        found = tokens.principal(token.strip()) if scheme.lower() == "bearer" else None
        if found is None:
            raise _unauthorized(bool(header))
        return found

    def owner_of_writes(who: Principal) -> str | None:
        """The subscriber whose queries `who` may change (None: any, for admin)."""
        return None if who.is_admin else who.subscriber

    # ----------------------------------------------------------- queries

    @app.put("/queries/{query_id:text}", status_code=201, tags=["queries"],
             responses={200: {"description": "Replaced a query of that id"},
                        400: {"description": "Invalid query (message, line, column)"}})
    async def put_query(body: QueryIn, query_id: str = Path(description="The query's id"),
                        who: Principal = Depends(principal)):
        """Register a continuous query (or replace the one of that id); answered once it is
        committed to disk."""
        _check_name("a query id", query_id)
        subscriber = body.subscriber
        if subscriber is not None:
            _check_name("a subscriber name", subscriber)
        _check_metadata(body.metadata)
        if who.role == "subscriber":
            if subscriber is None:
                subscriber = who.subscriber
            elif subscriber != who.subscriber:
                raise Refused(403, f"token of subscriber {who.subscriber!r} cannot register "
                                   f"queries for {subscriber!r}")
        elif not who.is_admin:
            raise Refused(403, f"a {who} token cannot register queries")
        try:
            created = await run_in_threadpool(broker.registry.put, query_id, body.query,
                                              subscriber, body.metadata, owner_of_writes(who))
        except QueryError as e:
            raise Refused(400, f"invalid query: {e}", line=e.line, column=e.column) from None
        except NotOwnerError as e:
            raise Refused(403, str(e)) from None
        broker.changed()
        return JSONResponse({"id": query_id, "subscriber": subscriber, "created": created},
                            201 if created else 200)

    @app.get("/queries", tags=["queries"])
    async def list_queries(subscriber: str | None = Query(None, description="Only this "
                                                          "subscriber's queries"),
                           after: int = Query(0, ge=0, description="The cursor `next` of the "
                                              "previous page (past the last: an empty page)"),
                           limit: int = Query(1000, ge=1, le=10_000),
                           who: Principal = Depends(principal)):
        """The registered queries, in registration order, a page at a time."""
        if not who.is_admin:
            if who.role != "subscriber" or subscriber not in (None, who.subscriber):
                whose = "queries" if subscriber is None else f"{subscriber!r}'s queries"
                raise Refused(403, f"a {who} token cannot list {whose}")
            subscriber = who.subscriber
        if subscriber is not None:
            _check_name("a subscriber name", subscriber)
        rows = await run_in_threadpool(broker.registry.store.page, subscriber,
                                       min(after, MAX_EVENT_ID), limit)
        return {"queries": [r.as_json() for r in rows],
                "next": rows[-1].seq if len(rows) == limit else None}

    @app.get("/queries/{query_id:text}", tags=["queries"])
    async def get_query(query_id: str, who: Principal = Depends(principal)):
        """One registered query."""
        row = await run_in_threadpool(broker.registry.get, query_id)
        if row is None:
            raise Refused(404, f"no registered query with id {query_id!r}")
        if not who.may_act_for(row.subscriber):
            raise Refused(403, f"query {query_id!r} belongs to another subscriber")
        return row.as_json()

    @app.delete("/queries/{query_id:text}", status_code=204, tags=["queries"])
    async def delete_query(query_id: str, who: Principal = Depends(principal)):
        """Remove a query for good."""
        if who.role == "publisher":
            raise Refused(403, "a publisher token cannot remove queries")
        try:
            await run_in_threadpool(broker.registry.delete, query_id, owner_of_writes(who))
        except KeyError:
            raise Refused(404, f"no registered query with id {query_id!r}") from None
        except NotOwnerError as e:
            raise Refused(403, str(e)) from None
        broker.changed()
        return Response(status_code=204)

    # ------------------------------------------------------ publications

    @app.post("/publications", tags=["publications"],
              openapi_extra={"requestBody": {"required": True, "content": {
                  t: {"schema": {"type": "string"}} for t in RDF_TYPES}}},
              responses={200: {"content": {"application/x-ndjson": {}},
                               "description": "The matches, one `rtf match` line each"}})
    async def post_publications(request: Request,
                                group_by: str = Query("subject", pattern="^(subject|graph)$"),
                                who: Principal = Depends(principal)):
        """Match the publications of an RDF document; push the matches to subscribers."""
        if not who.may_publish():
            raise Refused(403, f"a {who} token cannot publish")
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        fmt = RDF_TYPES.get(content_type)
        if fmt is None:
            raise Refused(415, f"cannot read {content_type or 'a body without Content-Type'}; "
                               f"send one of {', '.join(RDF_TYPES)}")
        body = await request.body()
        try:
            lines, publications = await run_in_threadpool(broker.publish, body, fmt, group_by)
        except PublicationError as e:
            raise Refused(400, f"bad RDF: {e}") from None
        return Response("".join(line + "\n" for line in lines), media_type="application/x-ndjson",
                        headers={"X-RTF-Publications": str(publications),
                                 "X-RTF-Matches": str(len(lines))})

    # ----------------------------------------------------------- streams

    @app.get("/subscribers/{name:text}/matches", tags=["subscribers"],
             responses={200: {"content": {"text/event-stream": {}},
                              "description": "Server-Sent Events: match, gap, cut"}})
    async def stream_matches(request: Request, name: str,
                             last_event_id: str | None = Query(None, description="As the "
                                                               "Last-Event-ID header"),
                             who: Principal = Depends(principal)):
        """The subscriber's matches as Server-Sent Events, resuming after Last-Event-ID."""
        _check_name("a subscriber name", name)
        if not who.may_act_for(name):
            raise Refused(403, f"a {who} token cannot read the stream of {name!r}")
        header = request.headers.get("last-event-id")
        if header is not None:
            last_event_id = _event_id(header, "Last-Event-ID")
        elif last_event_id is not None:
            last_event_id = _event_id(last_event_id, "last_event_id")
        return EventSourceResponse(_events(broker, name, last_event_id), ping=PING_S,
                                   send_timeout=SEND_TIMEOUT_S, shutdown_event=shutdown,
                                   shutdown_grace_period=SHUTDOWN_GRACE_S,
                                   headers={"Cache-Control": "no-store"})

    # ------------------------------------------------------------- other

    @app.get("/health", tags=["service"])
    async def health():
        """Whether the server serves, and what."""
        return {"status": "ok", "version": rtf.__version__, "algorithm": broker.engine.algorithm,
                "queries": len(broker.engine), "last_event_id": broker.outbox.last_id,
                "startup": broker.registry.startup}

    @app.get("/metrics", tags=["service"], response_class=Response,
             responses={200: {"content": {"text/plain": {}}}})
    async def metrics(who: Principal = Depends(principal)):
        """Prometheus metrics."""
        if not who.is_admin:
            raise Refused(403, f"a {who} token cannot read the metrics")
        return Response(generate_latest(broker.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    return app


def _unauthorized(had_header: bool) -> Refused:
    return Refused(401, "unknown token" if had_header
                   else "a bearer token is needed (Authorization: Bearer TOKEN)",
                   headers={"WWW-Authenticate": "Bearer"})


def _check_name(what: str, name: str) -> None:
    """A query id or subscriber name: 1 to MAX_ID_CHARS characters, each a real one
    (JSON may carry a lone surrogate, "\\ud800", which no file or database can hold)."""
    if not name or len(name) > MAX_ID_CHARS:
        raise Refused(400, f"{what} must have 1 to {MAX_ID_CHARS} characters, not {len(name)}")
    if not is_unicode(name):
        raise Refused(400, f"{what} must be valid Unicode (it holds a lone surrogate, "
                           "\\ud800-\\udfff)")


def _check_metadata(metadata: dict | None) -> None:
    """Metadata that JSON files and the table can hold (`rtf.io.queries.json_problem`)."""
    problem = json_problem(metadata)
    if problem:
        raise Refused(400, f"metadata: {problem}")


def _event_id(text: str, where: str) -> int:
    """An event id as a client sends it: ASCII digits; one past every event there can
    be is read as MAX_EVENT_ID (the newest), whatever its length."""
    # int() would also take "-3" (a gap event from -2), "1_000" and non-ASCII digits,
    # and refuses more than 4,300 digits
    if not (text.isascii() and text.isdigit()):
        raise Refused(400, f"{where} must be an event id (digits), not {text[:40]!r}")
    digits = text.lstrip("0") or "0"
    return MAX_EVENT_ID if len(digits) > 19 else min(int(digits), MAX_EVENT_ID)


def _utf8(header: str) -> str:
    """A header value as its client meant it: HTTP headers arrive as bytes, which
    Starlette reads as Latin-1; a UTF-8 token is read as UTF-8."""
    raw = header.encode("latin-1")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return header


#: errno values of a data folder that is full (or over a size limit).
_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


def _storage_error(exc: Exception) -> tuple[int, str]:
    """The status and message of a failed read or write of the data folder."""
    text = str(exc) or type(exc).__name__
    full = getattr(exc, "errno", None) in _FULL or "full" in text.lower()
    if full:
        return 507, (f"the server's data folder is full ({text}); nothing was changed: "
                     "retry once space is freed")
    return 503, f"the server could not use its data folder ({text}); nothing was changed"


async def _events(broker: Broker, subscriber: str, last_event_id: int | None):
    """The SSE events of one connection: the backlog after `last_event_id`, then live ones.

    The stream is opened before the outbox is read, so an event committed
    meanwhile is seen twice (outbox and queue) rather than never: ids at or
    below the last one sent are skipped.
    """
    hub, outbox, metrics = broker.hub, broker.outbox, broker.metrics
    stream = hub.open(subscriber)
    try:
        # None: from now on. An id above the newest (the data folder was replaced
        # since the client last read) is read as the newest, so nothing new is skipped.
        sent = outbox.last_id if last_event_id is None else min(last_event_id, outbox.last_id)
        # Where this connection starts, as an event id: a client that drops
        # before any match resumes from here (EventSource does it by itself).
        yield ServerSentEvent(json.dumps({"last_event_id": sent}), event="open", id=str(sent))
        if last_event_id is not None:
            pruned = await run_in_threadpool(outbox.pruned_through, subscriber)
            if pruned > sent:
                yield ServerSentEvent(json.dumps({"from": sent + 1, "to": pruned}), event="gap")
                sent = pruned
            while True:
                rows = await run_in_threadpool(outbox.since, subscriber, sent, BACKLOG_PAGE)
                if rows:
                    yield _match_events(rows)
                    sent = rows[-1][0]
                    metrics.delivered.inc(len(rows))
                if len(rows) < BACKLOG_PAGE:
                    break
        while True:
            batch = await stream.next_batch(SEND_BATCH)
            if batch is None:
                if not stream.cut:
                    return
                yield ServerSentEvent(json.dumps({
                    "reason": f"the subscriber fell more than {hub.queue_size} events behind; "
                              "reconnect with Last-Event-ID to read the rest from the outbox",
                    "last_event_id": sent}), event="cut")
                return
            if batch[0][0] <= sent:  # seen in the backlog already
                batch = [event for event in batch if event[0] > sent]
                if not batch:
                    continue
            yield _match_events(batch)
            metrics.delivered.inc(len(batch))
            sent = batch[-1][0]
    finally:
        hub.close(stream)


def _match_events(events: list[tuple[int, str]]) -> bytes:
    """``(id, data)`` events as one chunk of `match` events: one socket write
    for all the events waiting, instead of one each."""
    return b"".join(ServerSentEvent(data, event="match", id=str(event_id)).encode()
                    for event_id, data in events)


class Utf8Only:
    """ASGI middleware: a path or query string that is not UTF-8 once percent-decoded
    gets ``400`` (Starlette would read each bad byte as U+FFFD, so that
    ``/queries/a%FF`` and ``/queries/a%EF%BF%BD`` named one query)."""

    def __init__(self, app, metrics):
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            for part, raw in (("path", scope.get("raw_path") or scope["path"].encode()),
                              ("query string", scope.get("query_string", b"").replace(b"+", b" "))):
                try:
                    unquote_to_bytes(raw).decode("utf-8")
                except UnicodeDecodeError:
                    self.metrics.bad_requests.labels("400").inc()
                    response = JSONResponse({"error": f"bad request: the {part} is not UTF-8 once "
                                                      "percent-decoded"}, 400)
                    return await response(scope, receive, send)
        return await self.app(scope, receive, send)


class BodyLimit:
    """ASGI middleware: a request body over `limit` bytes gets ``413``, whether it
    says its length (refused before reading) or not (refused once it passes)."""

    def __init__(self, app, limit: int, metrics):
        self.app = app
        self.limit = limit
        self.metrics = metrics

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope["headers"]).get(b"content-length")
        digits = length.lstrip(b"0") if length is not None and length.isdigit() else None
        if digits is not None and (len(digits) > 19 or int(digits or b"0") > self.limit):
            return await self._refuse(scope, receive, send)
        received = 0
        too_large = False
        responded = False

        async def limited_receive():
            nonlocal received, too_large
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    too_large = True
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message):
            nonlocal responded
            if too_large:
                return  # the app's answer to a cut-off body is replaced by ours
            responded = True
            await send(message)

        try:
            await self.app(scope, limited_receive, guarded_send)
        except Exception:
            if not too_large:
                raise
        if too_large and not responded:
            await self._refuse(scope, receive, send)

    async def _refuse(self, scope, receive, send):
        self.metrics.bad_requests.labels("413").inc()
        response = JSONResponse({"error": f"the request body is over the limit of {self.limit} "
                                          "bytes (rtf serve --max-body)"}, 413)
        await response(scope, receive, send)
