"""The console (docs/console.md): a page that ``rtf serve`` serves itself at ``/``.

Three files of the package (`rtf.server.console`: HTML, CSS, JavaScript),
read once, no CDN, no framework. The page talks to the API as any client
does, with the token the person signed in with in an ``Authorization``
header (never a cookie, never a URL): it can do no more than that token.

Every answer of the console carries a strict Content-Security-Policy: scripts
and styles from this server only (no inline script, no ``eval``), no
frames, no form posts, and Trusted Types required, so that the browser
itself refuses any HTML built from a string (the page writes text nodes
only). ``GET /whoami`` tells the page who its token is.
"""

from __future__ import annotations

from importlib.resources import files

from fastapi import APIRouter, Depends
from fastapi.responses import Response
from pydantic import BaseModel, Field

from rtf.server.api_common import Authenticator, Refused, error_responses
from rtf.server.auth import Principal

#: The console's files and their types.
ASSETS = {"console.js": "text/javascript; charset=utf-8",
          "console.css": "text/css; charset=utf-8"}

#: What the page may load and do: everything from this server, nothing inline.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
       "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; "
       "require-trusted-types-for 'script'; trusted-types 'none'")

HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
           "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY",
           "Cross-Origin-Opener-Policy": "same-origin", "Cache-Control": "no-cache"}


class Identity(BaseModel):
    role: str = Field(description="admin, publisher, subscriber or metrics (admin without "
                                  "--tokens)")
    subscriber: str | None = Field(description="A subscriber token's name")
    tokens: bool = Field(description="Whether the server checks tokens (false: single-user "
                                     "mode, everyone is admin)")


def routes(auth: Authenticator) -> APIRouter:
    router = APIRouter()
    page = _read("index.html")
    assets = {name: _read(name) for name in ASSETS}

    @router.get("/", include_in_schema=False)
    @router.get("/console", include_in_schema=False)
    async def console():
        return Response(page, media_type="text/html; charset=utf-8", headers=HEADERS)

    @router.get("/console/{name}", include_in_schema=False)
    async def asset(name: str):
        if name not in assets:
            raise Refused(404, f"the console has no file {name!r}")
        return Response(assets[name], media_type=ASSETS[name], headers=HEADERS)

    @router.get("/whoami", tags=["service"], response_model=Identity,
                responses=error_responses(401))
    async def whoami(who: Principal = Depends(auth)):
        """Who the request's token is (the console signs in with it)."""
        return {"role": who.role, "subscriber": who.subscriber, "tokens": auth.tokens is not None}

    return router


def _read(name: str) -> bytes:
    return files("rtf.server.console").joinpath(name).read_bytes()
