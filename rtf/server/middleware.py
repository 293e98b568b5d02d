"""ASGI middleware of `rtf serve`: paths and query strings must be UTF-8, bodies
are decompressed (``Content-Encoding: gzip``) and stay under ``--max-body``, a
request the server's stop cancels is answered ``503``, and no page of another
origin may change anything; all answer JSON errors like every route."""

from __future__ import annotations

import asyncio
from urllib.parse import unquote_to_bytes, urlsplit

from fastapi.responses import JSONResponse

from rtf.server import encodings
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
    """ASGI middleware: request bodies as the routes read them -- decompressed when
    sent with ``Content-Encoding: gzip`` (`rtf.server.encodings`; another coding gets
    ``415`` with the ``Accept-Encoding`` the server reads) -- and at most `limit`
    bytes, both as sent and as decompressed: a body over it gets ``413``, whether it
    says its length (refused before reading) or not (refused once it passes), and a
    gzip bomb is refused once `limit` bytes have come out of it. A body that is not
    the gzip its header says is a ``400``."""

    def __init__(self, app, limit: int, metrics):
        self.app = app
        self.limit = limit
        self.metrics = metrics

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope["headers"])
        length = headers.get(b"content-length")
        digits = length.lstrip(b"0") if length is not None and length.isdigit() else None
        if digits is not None and (len(digits) > 19 or int(digits or b"0") > self.limit):
            return await self._answer(scope, receive, send, *self._too_large(""))
        coding = encodings.codings(headers.get(b"content-encoding", b"").decode("latin-1"))
        if coding and coding != ["gzip"]:
            return await self._answer(scope, receive, send, *self._unreadable(coding))
        gunzip = encodings.Gunzip() if coding else None
        if gunzip is not None:  # the routes see the body as it was before it was compressed
            scope = dict(scope, headers=[(k, v) for k, v in scope["headers"]
                                         if k not in (b"content-encoding", b"content-length")])
        received = decoded = 0  # bytes as sent, and as decompressed
        pieces: list[bytes] = []  # decompressed, not yet given to the app
        ended = False  # the last piece given ends the body
        refusal = None  # (status, message) once the body is refused mid-way
        responded = False

        async def limited_receive():
            nonlocal received, decoded, ended, refusal
            while True:
                if refusal is not None:
                    return {"type": "http.disconnect"}
                if pieces or ended:
                    piece = pieces.pop(0) if pieces else b""
                    last = ended and not pieces
                    ended = ended and not last  # then on, receive() again (a disconnect)
                    return {"type": "http.request", "body": piece, "more_body": not last}
                message = await receive()
                if message["type"] != "http.request":
                    return message
                body = message.get("body", b"")
                received += len(body)
                if received > self.limit:
                    refusal = self._too_large("")
                    continue
                if gunzip is None:
                    return message
                try:
                    for piece in gunzip.feed(body):
                        decoded += len(piece)
                        if decoded > self.limit:
                            refusal = self._too_large(" once decompressed")
                            break
                        pieces.append(piece)
                    if not message.get("more_body", False):
                        gunzip.finish()
                        ended = True
                except encodings.CodingError as e:
                    refusal = (400, f"bad request: {e}")

        async def guarded_send(message):
            nonlocal responded
            if refusal is not None:
                return  # the app's answer to a cut-off body is replaced by ours
            responded = True
            await send(message)

        try:
            await self.app(scope, limited_receive, guarded_send)
        except Exception:
            if refusal is None:
                raise
        if refusal is not None and not responded:
            await self._answer(scope, receive, send, *refusal)

    def _too_large(self, how: str) -> tuple[int, str]:
        return 413, (f"the request body{how} is over the limit of {self.limit} bytes "
                     "(rtf serve --max-body)")

    @staticmethod
    def _unreadable(coding: list[str]) -> tuple[int, str, dict]:
        return 415, (f"cannot read a body sent with Content-Encoding: {', '.join(coding)}; "
                     f"send it as it is, or with one of: {', '.join(encodings.READ)}"), {
                         "Accept-Encoding": ", ".join(encodings.READ)}

    async def _answer(self, scope, receive, send, status: int, message: str,
                      headers: dict | None = None):
        self.metrics.bad_requests.labels(str(status)).inc()
        await JSONResponse({"error": message}, status, headers=headers)(scope, receive, send)


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
