"""The errors of the clients of `rtf serve` (`rtf.server.client`, `rtf.server.async_client`):
what each error answer of the server is raised as.

Every error the server answers is raised as an `rtf.errors.RtfError`:

- an invalid query (`400` with `line` and `column`): `rtf.errors.QueryError`, the
  class a local `Engine.register` raises, with the same `.line`, `.column` and
  text;
- a refused line of a bulk registration (`400` or `403` with `record`):
  `rtf.io.queries.QueryFileError`, as `rtf check -f` would name it;
- any other answer of `400` and up: a `ServerError` (`.status`, `.message`, the
  server's `"error"` field), of a subclass for the common ones:
  `BadRequestError` (400, also a `ValueError`), `AuthenticationError` (401),
  `PermissionDeniedError` (403), `NotFoundError` (404, also a `KeyError`, as
  `Engine.get` raises for an unknown query) and `PayloadTooLargeError` (413);
- a server that cannot be reached, or stops answering: `ServerUnavailableError`
  (`.status` is None), whose message names the URL.
"""

from __future__ import annotations

from typing import Any

import httpx

from rtf.errors import QueryError, RtfError
from rtf.io.queries import QueryFileError


class ServerError(RtfError):
    """The server answered an error (`status` is its HTTP status), or could not
    be reached (`status` is None). `message` (and `str()`) is the server's
    `"error"` field."""

    def __init__(self, status: int | None, message: str):
        self.status = status
        self.message = message
        super().__init__(message)

    def __str__(self) -> str:               # not KeyError's quoted repr
        return self.message


class BadRequestError(ServerError, ValueError):
    """400: a request the server refuses, other than an invalid query (bad RDF,
    a bad parameter)."""


class AuthenticationError(ServerError):
    """401: no token, or one the server does not know."""


class PermissionDeniedError(ServerError):
    """403: the token's role does not allow this request."""


class NotFoundError(ServerError, KeyError):
    """404: no such query (or path). A `KeyError`, as with `Engine.get`."""


class PayloadTooLargeError(ServerError):
    """413: the request body is over the server's `--max-body`."""


class ServerUnavailableError(ServerError):
    """The server cannot be reached, or the connection failed or timed out."""


_BY_STATUS: dict[int, type[ServerError]] = {
    400: BadRequestError, 401: AuthenticationError, 403: PermissionDeniedError,
    404: NotFoundError, 413: PayloadTooLargeError,
}

#: Statuses after which `matches` keeps trying to reconnect (a server restarting
#: behind a proxy); on its first connection they are raised like any other.
TRANSIENT = frozenset({502, 503, 504})


def _error_message(response: httpx.Response) -> tuple[str, Any]:
    """The server's `"error"` field (or the body's first line) and the parsed body."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        return body["error"], body
    text = response.text.strip()
    first = text.splitlines()[0][:300] if text else ""
    return first or f"HTTP {response.status_code} {response.reason_phrase}".strip(), body


def _query_error(message: str, line: Any, column: Any) -> QueryError:
    """A QueryError whose str() is the one a local engine gives: the server's
    message is `rtf check`'s ("invalid query: line L, column C: ..."), and
    QueryError puts "line L, column C: " in front by itself."""
    line = line if isinstance(line, int) else None
    column = column if isinstance(column, int) else None
    text = message.removeprefix("invalid query: ")
    if line is not None:
        text = text.removeprefix(f"line {line}, column {column}: ")
    return QueryError(text, line, column)


def error_from_response(response: httpx.Response) -> RtfError:
    """The exception for an error answer (status 400 and up), whose body has been read
    (``response.read()``, or ``await response.aread()``)."""
    status = response.status_code
    message, body = _error_message(response)
    if isinstance(body, dict) and "record" in body:  # a line of POST /queries
        error = QueryFileError(message)
        error.record, error.query_id = body.get("record"), body.get("id")
        error.line, error.column, error.status = body.get("line"), body.get("column"), status
        return error
    if status == 400 and isinstance(body, dict) and "line" in body and "column" in body:
        return _query_error(message, body["line"], body["column"])
    return _BY_STATUS.get(status, ServerError)(status, message)


def unavailable(url: str, error: httpx.TransportError) -> ServerUnavailableError:
    """The error for a request that got no answer from the server at `url`."""
    if isinstance(error, httpx.TimeoutException):
        return ServerUnavailableError(
            None, f"the rtf server at {url} did not answer in time ({error or 'timeout'})")
    return ServerUnavailableError(None, f"cannot reach the rtf server at {url}: {error}")
