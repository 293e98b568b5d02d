"""The HTTP API of `rtf serve` (docs/server.md): a FastAPI app over a `Broker`.

The routes live by what they serve: `api_queries` (registering), `api_publications`
(publishing), `api_streams` (pushed matches and stream tickets), `api_check` (checking
a query), `api_match` (matching without publishing, explaining a pushed match),
`api_console` (the console page); here are the
app itself, its lifespan, the service routes and the error handlers. SQLite
writes run in worker threads, matching in the publisher's thread; the streams
live on the event loop. Every error is ``{"error": "<one line>"}`` (with
``line`` and ``column`` for a query).
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from contextlib import asynccontextmanager

import anyio
from fastapi import Depends, FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi_offline import FastAPIOffline
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.convertors import PathConvertor, register_url_convertor
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect

import rtf
from rtf.server import (api_check, api_console, api_match, api_publications, api_queries,
                        api_streams, openapi)
from rtf.server.api_common import Authenticator, Refused, error_responses, storage_error
from rtf.server.auth import Principal, Tickets, Tokens
from rtf.server.broker import Broker
from rtf.server.middleware import BodyLimit, SameOrigin, StopGuard, Utf8Only

log = logging.getLogger("rtf.server")

#: Content types of publications (re-exported: the command's help lists them).
RDF_TYPES = api_publications.RDF_TYPES


class AnyText(PathConvertor):
    """``{name:text}``: any characters, newlines included (``{name:path}`` stops at one)."""

    regex = "(?s:.*)"


register_url_convertor("text", AnyText())


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
        except asyncio.CancelledError:
            # A second Ctrl-C: uvicorn ends without the lifespan's shutdown and asyncio
            # cancels it; the files are closed all the same, and no traceback is logged.
            asyncio.current_task().uncancel()
        finally:
            broker.begin_stop()
            shutdown.set()
            broker.hub.close_all()
            watcher.cancel()
            await run_in_threadpool(broker.close)

    # FastAPIOffline: /docs and /redoc with their scripts served from here (no CDN)
    app = FastAPIOffline(title="rtf serve", version=rtf.__version__, lifespan=lifespan,
                         description="Continuous full-text SPARQL queries over RDF publications: "
                                     "register queries, post publications, receive matches "
                                     "(docs/server.md).")
    app.add_middleware(BodyLimit, limit=broker.config.max_body, metrics=broker.metrics)
    app.add_middleware(Utf8Only, metrics=broker.metrics)
    app.add_middleware(SameOrigin, metrics=broker.metrics)
    app.add_middleware(StopGuard, metrics=broker.metrics)  # outermost: sees every cancellation
    auth = Authenticator(tokens, Tickets())
    app.include_router(api_queries.routes(broker, auth))
    app.include_router(api_publications.routes(broker, auth))
    app.include_router(api_streams.routes(broker, auth, shutdown))
    app.include_router(api_check.routes(broker, auth))
    app.include_router(api_match.routes(broker, auth))
    app.include_router(api_console.routes(auth))
    openapi.install(app, tokens is not None, bodies=[api_queries.QueryIn])
    _errors(app, broker)

    @app.get("/health", tags=["service"])
    async def health():
        """Whether the server serves, and what."""
        return {"status": "ok", "version": rtf.__version__, "algorithm": broker.engine.algorithm,
                "queries": len(broker.engine), "last_event_id": broker.outbox.last_id,
                "startup": broker.registry.startup}

    @app.get("/metrics", tags=["service"], response_class=Response,
             responses={200: {"content": {"text/plain": {}}}, **error_responses(401, 403)})
    async def metrics(who: Principal = Depends(auth)):
        """Prometheus metrics (an admin or metrics token)."""
        if not who.may_read_metrics():
            raise Refused(403, f"a {who} token cannot read the metrics")
        await run_in_threadpool(broker.count_subscribers)
        return Response(generate_latest(broker.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    return app


def _errors(app: FastAPI, broker: Broker) -> None:
    """Every failure answered as one JSON line, counted by status."""

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
        status, message = storage_error(exc)
        broker.metrics.bad_requests.labels(str(status)).inc()
        log.warning("%s %s: %s", request.method, request.url.path, message)
        return JSONResponse({"error": message}, status)

    @app.exception_handler(Exception)
    async def internal(request: Request, exc: Exception):
        # A bug: the answer is JSON like every other; uvicorn logs the traceback.
        broker.metrics.bad_requests.labels("500").inc()
        return JSONResponse({"error": f"internal error: {type(exc).__name__}: {exc}; please "
                                      "report it (the server log has the traceback)"}, 500)
