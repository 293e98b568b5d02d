"""What every route of the HTTP API shares: error answers, name and id checks,
and who the request comes from (bearer tokens, or a stream ticket).

Every error is ``{"error": "<one line>"}`` (a query error adds ``line`` and
``column``); `ERROR_STATUSES` documents each status in the OpenAPI document.
"""

from __future__ import annotations

import errno
import json
from typing import Any

from fastapi import Request
from pydantic import BaseModel, Field, ValidationError
from starlette.exceptions import HTTPException

from rtf.io.metadata import metadata_problem
from rtf.io.queries import is_unicode, unknown_field
from rtf.server.auth import ANYONE, MAX_NAME_CHARS, Principal, Tickets, Tokens

#: Longest query id, and subscriber name, accepted: characters.
MAX_ID_CHARS = MAX_NAME_CHARS

#: The largest event id or cursor: SQLite's largest integer. A larger
#: Last-Event-ID or ``after`` is read as this (past the newest: nothing newer).
MAX_EVENT_ID = 2**63 - 1


class ErrorBody(BaseModel):
    """Every error answer."""

    error: str = Field(description="What went wrong, in one readable line")
    line: int | None = Field(None, description="For an invalid query: the line of the problem")
    column: int | None = Field(None, description="For an invalid query: its column")


#: What each error status means, for the OpenAPI document.
ERROR_STATUSES = {
    400: "Bad request: invalid JSON, query, RDF, parameter or name (the message says which)",
    401: "No bearer token, or an unknown one (with --tokens)",
    403: "The token's role does not allow this request",
    404: "No such query",
    406: "None of the Accept header's types can be answered",
    413: "The request body is over --max-body (as sent, or once decompressed)",
    415: "A Content-Type this route does not read, or a Content-Encoding other than gzip",
    500: "A bug: the server log has the traceback",
    503: "The data folder could not be read or written, or the server is stopping (then with "
         "Retry-After); nothing was changed: send it again later",
    507: "The data folder is full; nothing was changed",
}


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The `responses` of a route that may answer these error statuses (and 500, 503)."""
    return {status: {"model": ErrorBody, "description": ERROR_STATUSES[status]}
            for status in sorted({*statuses, 500})}


class Refused(HTTPException):
    """An error answer: status and one readable line (plus fields)."""

    def __init__(self, status: int, message: str, headers: dict | None = None, **fields):
        super().__init__(status, message, headers)
        self.fields = fields


def check_name(what: str, name: str) -> None:
    """A query id or subscriber name: 1 to MAX_ID_CHARS characters, each a real one
    (JSON may carry a lone surrogate, "\\ud800", which no file or database can hold)."""
    if not isinstance(name, str) or not name or len(name) > MAX_ID_CHARS:
        size = len(name) if isinstance(name, str) else type(name).__name__
        raise Refused(400, f"{what} must have 1 to {MAX_ID_CHARS} characters, not {size}")
    if not is_unicode(name):
        raise Refused(400, f"{what} must be valid Unicode (it holds a lone surrogate, "
                           "\\ud800-\\udfff)")
    if name in (".", ".."):  # no URL path can name it: clients remove dot segments (RFC 3986 5.2.4)
        raise Refused(400, f"{what} cannot be {name!r}: a URL path cannot carry it "
                           "(clients and proxies remove '.' and '..' segments)")


def check_metadata(metadata: dict | None) -> None:
    """Metadata that JSON files and the table can hold, and every listing can show:
    JSON, at most `MAX_METADATA_DEPTH` levels deep and `MAX_METADATA_BYTES` of text
    (`rtf.io.metadata.metadata_problem`)."""
    problem = metadata_problem(metadata) if metadata is not None else None
    if problem:
        raise Refused(400, problem if problem.startswith("metadata") else f"metadata: {problem}")


def event_id(text: str, where: str) -> int:
    """An event id as a client sends it: ASCII digits; one past every event there can
    be is read as MAX_EVENT_ID (the newest), whatever its length."""
    # int() would also take "-3" (a gap event from -2), "1_000" and non-ASCII digits,
    # and refuses more than 4,300 digits
    if not (text.isascii() and text.isdigit()):
        raise Refused(400, f"{where} must be an event id (digits), not {text[:40]!r}")
    digits = text.lstrip("0") or "0"
    return MAX_EVENT_ID if len(digits) > 19 else min(int(digits), MAX_EVENT_ID)


def media_type(request: Request) -> str:
    """The request's Content-Type without parameters, lower case ("" if none)."""
    return request.headers.get("content-type", "").split(";")[0].strip().lower()


#: What a JSON body's Content-Type is (``application/json`` or any ``+json`` type).
JSON_TYPE = "application/json"


async def json_body(request: Request, model: type[BaseModel], example: str) -> Any:
    """The JSON body of `request` read as `model` (whose ``extra="forbid"`` refuses any
    field it does not name); every way it can fail is one line: ``415`` for a body that
    does not say it is JSON, ``400`` naming the problem (the JSON's position, the field)
    and showing `example`."""
    kind = media_type(request)
    if kind != JSON_TYPE and not kind.endswith("+json"):
        raise Refused(415, f"cannot read {kind or 'a body without Content-Type'}; send "
                           f"{example} as JSON (Content-Type: {JSON_TYPE})")
    body = await request.body()
    if not body.strip():
        raise Refused(400, f"bad request: the body is empty; send {example}")
    try:
        # json.loads, as FastAPI reads JSON: a lone surrogate ("\ud800") is read, and
        # refused by the name checks with a line of its own
        value = json.loads(body)
    except (ValueError, RecursionError) as e:
        why = "nested too deeply" if isinstance(e, RecursionError) else str(e)
        raise Refused(400, f"bad request: the body is not JSON ({why}); send {example}") from None
    if isinstance(value, dict):  # an unknown field named here, whatever its characters
        # (not from pydantic's extra_forbidden: it reports a key it cannot read, a lone
        # surrogate say, without its name)
        unknown = next((name for name in value if name not in model.model_fields), None)
        if unknown is not None and model.model_config.get("extra") == "forbid":
            raise Refused(400, f"bad request: {unknown_field(unknown, model.model_fields)}")
    try:
        return model.model_validate(value)
    except ValidationError as e:
        raise Refused(400, _invalid(e, example)) from None


def _invalid(error: ValidationError, example: str) -> str:
    """One line for the first problem pydantic found in a JSON body."""
    first = error.errors()[0]
    loc = [str(p) for p in first["loc"]]
    if not loc:
        return f"bad request: the body must be a JSON object: {example}"
    if first["type"] == "missing":
        return f'bad request: "{loc[0]}" is needed: {example}'
    return f"bad request: {'.'.join(loc)}: {first['msg']}"


def utf8(header: str) -> str:
    """A header value as its client meant it: HTTP headers arrive as bytes, which
    Starlette reads as Latin-1; a UTF-8 token is read as UTF-8."""
    raw = header.encode("latin-1")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return header


#: errno values of a data folder that is full (or over a size limit).
_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


def storage_error(exc: Exception) -> tuple[int, str]:
    """The status and message of a failed read or write of the data folder."""
    text = str(exc) or type(exc).__name__
    full = getattr(exc, "errno", None) in _FULL or "full" in text.lower()
    if full:
        return 507, (f"the server's data folder is full ({text}); nothing was changed: "
                     "retry once space is freed")
    return 503, f"the server could not use its data folder ({text}); nothing was changed"


class Authenticator:
    """Who a request comes from: the principal of its bearer token (everyone is
    admin without `tokens`), or, for a stream, the subscriber a valid ticket names."""

    def __init__(self, tokens: Tokens | None, tickets: Tickets):
        self.tokens = tokens
        self.tickets = tickets

    async def __call__(self, request: Request) -> Principal:
        return self.principal(request)

    def principal(self, request: Request) -> Principal:
        if self.tokens is None:
            return ANYONE
        header = utf8(request.headers.get("authorization", ""))
        scheme, _, token = header.partition(" ")
        found = self.tokens.principal(token.strip()) if scheme.lower() == "bearer" else None
        if found is None:
            raise unauthorized(bool(header))
        return found

    def stream_principal(self, request: Request, subscriber: str, ticket: str | None) -> Principal:
        """A stream's reader: a ticket for `subscriber` (EventSource cannot send headers),
        else the bearer token."""
        if ticket is None or self.tokens is None:
            return self.principal(request)
        if not self.tickets.check(ticket, subscriber):
            raise Refused(401, "the stream ticket is invalid or expired: ask POST "
                               "/subscribers/{name}/tickets for a new one",
                          headers={"WWW-Authenticate": "Bearer"})
        return Principal("subscriber", subscriber)


def unauthorized(had_header: bool) -> Refused:
    return Refused(401, "unknown token" if had_header
                   else "a bearer token is needed (Authorization: Bearer TOKEN)",
                   headers={"WWW-Authenticate": "Bearer"})
