"""ASGI middleware of `rtf serve`: paths and query strings must be UTF-8, bodies
stay under ``--max-body``, a request the server's stop cancels is answered
``503``, and no page of another origin may change anything; all answer JSON
errors like every route."""

from __future__ import annotations

import asyncio
from urllib.parse import unquote_to_bytes, urlsplit

from fastapi.responses import JSONResponse

from rtf.server.stopping import NOT_DONE, retry_headers


class StopGuard:
    """ASGI middleware: a request cancelled by the server's stop before it answered
    (uvicorn cancels what still runs 5 s after SIGTERM) gets ``503`` with
    ``Retry-After`` instead of uvicorn's plain ``500``. Nothing of it was done: the
    routes that write wait for their write (`rtf.server.stopping.to_the_end`)."""

    def __init__(self, app, metrics):
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = False

        async def watched_send(message):
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, watched_send)
        except asyncio.CancelledError:
            if started:
                raise
            asyncio.current_task().uncancel()  # the request is answered: it ends normally
            self.metrics.bad_requests.labels("503").inc()
            await JSONResponse({"error": NOT_DONE}, 503, headers=retry_headers())(
                scope, receive, send)


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


#: Methods that change nothing: a page of another site may send them (a link to the
#: console, an image), and cannot read the answer (the server sends no CORS headers).
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


class SameOrigin:
    """ASGI middleware: a request that changes something (POST, PUT, DELETE) sent by a
    browser from a page of another origin is refused (``403``), so no other site can
    make a visitor's browser publish or register on a server without ``--tokens``
    (with tokens it could not anyway: the token is a header, never a cookie).

    A browser says where a request comes from: ``Sec-Fetch-Site`` (every current
    browser), of which only ``same-origin`` and ``none`` (typed by the person) pass,
    and ``Origin``, which must then name the host the request was sent to. Clients
    that are not browsers (curl, the Python client) send neither, and pass.
    """

    def __init__(self, app, metrics):
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["method"] not in SAFE_METHODS:
            headers = dict(scope["headers"])
            site = headers.get(b"sec-fetch-site")
            origin = headers.get(b"origin")
            foreign = (site not in (None, b"same-origin", b"none")
                       or (origin is not None and urlsplit(origin.decode("latin-1")).netloc.lower()
                           != headers.get(b"host", b"").decode("latin-1").lower()))
            if foreign:
                self.metrics.bad_requests.labels("403").inc()
                response = JSONResponse({"error": "a request from a page of another origin is "
                                                  "refused (cross-site request)"}, 403)
                return await response(scope, receive, send)
        return await self.app(scope, receive, send)
