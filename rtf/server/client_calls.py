"""What each call of the clients of `rtf serve` sends, and how its answer is read:
the part of `rtf.server.client.Client` and `rtf.server.async_client.AsyncClient`
that does no I/O, so that both send the same requests and read the same answers
(each only adds the sending: ``self._http.request`` or ``await`` it).

A call is a `Call` (method, path and the keyword arguments of
``httpx.Client.request``) built from the arguments, checked before anything is
sent; an answer is read by `answer_json` or `answer_lines`.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx

from rtf import __version__
from rtf.server.client_errors import ServerError

DEFAULT_URL = "http://127.0.0.1:8750"

#: `publish(format=...)` names and the Content-Type each one is sent with.
CONTENT_TYPES: dict[str, str] = {
    "nt": "application/n-triples", "ntriples": "application/n-triples",
    "n-triples": "application/n-triples",
    "ttl": "text/turtle", "turtle": "text/turtle",
    "nq": "application/n-quads", "nquads": "application/n-quads",
    "n-quads": "application/n-quads",
    "trig": "application/trig",
}


@dataclass(frozen=True)
class Call:
    """One request: ``http.request(call.method, call.path, **call.kwargs)``."""

    method: str
    path: str
    kwargs: dict[str, Any] = field(default_factory=dict)


#: Request bodies smaller than this are sent as they are by a client that compresses
#: (gzip's 20 bytes of header and trailer would outweigh what it saves).
COMPRESS_FROM = 1024


def compressed(call: Call) -> Call:
    """`call` with its body gzip-compressed (``Content-Encoding: gzip``, which `rtf serve`
    reads: docs/server.md), for a client made with ``compress=True``; a call without a
    body, or with a small one, as it is."""
    kwargs = dict(call.kwargs)
    headers = dict(kwargs.pop("headers", {}))
    if "json" in kwargs:
        body = json.dumps(kwargs.pop("json"), ensure_ascii=False).encode("utf-8")
        headers["Content-Type"] = "application/json"
    else:
        body = kwargs.pop("content", b"")
    if len(body) < COMPRESS_FROM:
        return call
    headers["Content-Encoding"] = "gzip"
    return Call(call.method, call.path, {**kwargs, "content": gzip.compress(body, 6),
                                         "headers": headers})


def headers(token: str | None) -> dict[str, str]:
    """The headers of every request of a client with bearer `token` (or None)."""
    sent = {"User-Agent": f"rtf-client/{__version__}"}
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    return sent


def segment(value: str, what: str) -> str:
    """`value` as one percent-encoded path segment ('/', spaces, unicode, and
    the dot segments "." and ".." that URL normalisation would remove)."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"a {what} is a non-empty string, not {value!r}")
    if value in (".", ".."):
        return value.replace(".", "%2E")
    return quote(value, safe="")


def query_path(query_id: str) -> str:
    return "/queries/" + segment(query_id, "query id")


def subscriber_path(subscriber: str, rest: str) -> str:
    return f"/subscribers/{segment(subscriber, 'subscriber name')}/{rest}"


def check_order(what: str, query: Any, query_id: Any) -> None:
    """A TypeError for arguments in the old order (id first), told by the query
    text's braces, rather than a query registered under its own text."""
    if not isinstance(query, str) or not isinstance(query_id, str):
        raise TypeError(f"{what} takes the query and its id, two str (query first), not "
                        f"{type(query).__name__} and {type(query_id).__name__}")
    if "{" in query_id and "{" not in query:
        raise TypeError(f"{what} takes the query first, then its id, as Engine.register does: "
                        f"(query, query_id={query!r}) (the arguments look swapped)")


def register(query: str, query_id: str, subscriber: str | None,
             metadata: Mapping[str, Any] | None, what: str) -> Call:
    """PUT /queries/{id} (`what` names the method in a TypeError)."""
    check_order(what, query, query_id)
    body: dict[str, Any] = {"query": query}
    if subscriber is not None:
        body["subscriber"] = subscriber
    if metadata is not None:
        body["metadata"] = dict(metadata)
    return Call("PUT", query_path(query_id), {"json": body})


def register_many(queries: Iterable[Mapping[str, Any] | Sequence[Any]], atomic: bool,
                  what: str) -> Call:
    """POST /queries: the queries as JSON Lines, each a record or a tuple in
    `Engine.register_parsed`'s order."""
    lines = []
    for n, item in enumerate(queries, 1):
        if isinstance(item, Mapping):
            record = dict(item)
        elif isinstance(item, Sequence) and not isinstance(item, str) and 2 <= len(item) <= 4:
            record = dict(zip(("query", "id", "subscriber", "metadata"), item))
        else:
            raise TypeError(f"query #{n}: expected (query, query_id[, subscriber[, metadata]]) "
                            f"or a {{'id', 'query', ...}} mapping, not {type(item).__name__}")
        check_order(f"{what}, query #{n}:", record.get("query"), record.get("id"))
        lines.append(json.dumps({k: v for k, v in record.items() if v is not None},
                                ensure_ascii=False))
    return Call("POST", "/queries", {"params": {"atomic": "true" if atomic else "false"},
                                     "content": "\n".join(lines).encode("utf-8"),
                                     "headers": {"Content-Type": "application/x-ndjson"}})


def register_many_answer(response: httpx.Response, atomic: bool
                         ) -> dict[str, Any] | list[dict[str, Any]]:
    return answer_json(response) if atomic else answer_lines(response)


def matches_path(subscriber: str, grouped: bool) -> str:
    """The path of `subscriber`'s stream (`grouped`: one event per publication)."""
    path = subscriber_path(subscriber, "matches")
    return path + "?grouped=true" if grouped else path


def publish(data: bytes | str, format: str, group_by: str, grouped: bool = False) -> Call:
    """POST /publications of RDF `data` in `format` (a name of CONTENT_TYPES); `grouped`:
    answered in grouped lines."""
    content_type = CONTENT_TYPES.get(format.lower())
    if content_type is None:
        raise ValueError(f"unknown RDF format {format!r}; one of {', '.join(CONTENT_TYPES)}")
    body = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    params = {"group_by": group_by, **({"grouped": "true"} if grouped else {})}
    return Call("POST", "/publications", {"params": params, "content": body,
                                          "headers": {"Content-Type": content_type}})


class Pages:
    """The pages of GET /queries, followed by their `next` cursors: `call()` is the
    next page's request (None after the last), `read(response)` a page's queries.
    A cursor given twice is a ServerError once that page's queries are given."""

    def __init__(self, subscriber: str | None, page_size: int):
        self.params: dict[str, Any] = {"limit": page_size}
        if subscriber is not None:
            self.params["subscriber"] = subscriber
        self.seen: set[Any] = set()
        self.cursor: Any = ...  # the last page's `next` (... before the first page)

    def call(self) -> Call | None:
        if self.cursor is None:
            return None
        if self.cursor is not ...:
            if self.cursor in self.seen:
                raise ServerError(200, f"the server gave the cursor {self.cursor!r} twice")
            self.seen.add(self.cursor)
            self.params["after"] = self.cursor
        return Call("GET", "/queries", {"params": dict(self.params)})

    def read(self, response: httpx.Response) -> list[dict[str, Any]]:
        page = answer_json(response)
        self.cursor = page.get("next")
        queries: list[dict[str, Any]] = page["queries"]
        return queries


def answer_json(response: httpx.Response) -> dict[str, Any]:
    """The answer's JSON object; a ServerError when it is something else."""
    try:
        value = response.json()
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise ServerError(response.status_code,
                          f"the server answered {response.request.method} {response.request.url.path} "
                          f"with a body that is not a JSON object: {response.text[:200]!r}")
    return value


def answer_json_or_empty(response: httpx.Response) -> dict[str, Any]:
    """The answer's JSON object, or {} for an answer without a body (PUT's 204)."""
    return answer_json(response) if response.content.strip() else {}


def answer_lines(response: httpx.Response) -> list[dict[str, Any]]:
    """The answer's JSON Lines, parsed. Split on "\\n" only: a line holds literals
    written with ensure_ascii=False, where U+2028 and friends (str.splitlines'
    other line ends) are plain text."""
    return [json.loads(line) for line in response.content.split(b"\n") if line.strip()]
