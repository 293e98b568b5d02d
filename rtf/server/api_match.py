"""Matching without publishing, and why a pushed match matched.

``POST /match`` takes publications as ``POST /publications`` does and answers
their matches as ``rtf match`` lines (with ``explain`` and ``with_metadata``,
as ``rtf match --explain --with-metadata``), but notifies nobody and stores
nothing: no outbox event, no stream, no count in the metrics. It answers
"which stored queries would this match, and why?" -- the console's *try a
publication* box. A subscriber token sees only its own queries' matches.

``GET /subscribers/{name}/matches/{id}/explanation`` explains one event of a
subscriber's stream: its line read from the outbox (so a client can only ask
about what was pushed to it), explained against the publication as it was
matched, which the server holds for a while (`rtf.server.recent`).
"""

from __future__ import annotations

import json
from types import SimpleNamespace

from fastapi import APIRouter, Depends, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response

from rtf.errors import PublicationError
from rtf.io.output import match_line
from rtf.matching.explain import explain_match
from rtf.server.api_common import (MAX_EVENT_ID, Authenticator, Refused, check_name,
                                   error_responses, media_type)
from rtf.server.api_publications import NDJSON, RDF_TYPES, bad_rdf
from rtf.server.auth import Principal
from rtf.server.broker import Broker
from rtf.server.recent import RECENT_PUBLICATIONS


def routes(broker: Broker, auth: Authenticator) -> APIRouter:
    router = APIRouter(tags=["publications"])

    @router.post("/match",
                 openapi_extra={"requestBody": {"required": True, "content": {
                     t: {"schema": {"type": "string"}} for t in RDF_TYPES}}},
                 responses={200: {"content": {NDJSON: {}},
                                  "description": "The matches, one `rtf match` line each "
                                                 "(with `explain`, `metadata` when asked)"},
                            **error_responses(400, 401, 403, 413, 415)})
    async def match_only(request: Request,
                         group_by: str = Query("subject", pattern="^(subject|graph)$"),
                         explain: bool = Query(False, description='Add "explain" to each line '
                                               "(rtf match --explain)"),
                         with_metadata: bool = Query(False, description='Add "metadata" '
                                                     "(rtf match --with-metadata)"),
                         who: Principal = Depends(auth)):
        """Which stored queries these publications would match, and why: `rtf match`'s lines.
        Nothing is published: no subscriber is notified, nothing is stored."""
        if not (who.may_publish() or who.role == "subscriber"):
            raise Refused(403, f"a {who} token cannot match publications")
        fmt = RDF_TYPES.get(media_type(request))
        if fmt is None:
            raise Refused(415, f"cannot read {media_type(request) or 'a body without Content-Type'}; "
                               f"send one of {', '.join(RDF_TYPES)}")
        body = await request.body()
        only = who.subscriber if who.role == "subscriber" else ...
        try:
            lines, publications = await run_in_threadpool(
                _match_lines, broker, body, fmt, group_by, only, explain, with_metadata)
        except PublicationError as e:
            raise bad_rdf(e, fmt, body) from None  # (as POST /publications says it)
        return Response("".join(lines), media_type=NDJSON,
                        headers={"X-RTF-Publications": str(publications),
                                 "X-RTF-Matches": str(len(lines))})

    @router.get("/subscribers/{name:text}/matches/{event:int}/explanation",
                responses=error_responses(400, 401, 403, 404))
    async def explanation(name: str, event: int, who: Principal = Depends(auth)):
        """Why event `event` of this subscriber's stream matched: its `rtf match` line with
        "explain" and "metadata" (404 once the publication is no longer held: the server
        keeps the last matched publications in memory, none from before a restart)."""
        check_name("a subscriber name", name)
        if not who.may_act_for(name):
            raise Refused(403, f"a {who} token cannot read the stream of {name!r}")
        line = await run_in_threadpool(_event_line, broker, name, event)
        if line is None:
            raise Refused(404, f"{name!r} has no event {event} in the outbox (not one of its "
                               "events, or dropped by retention)")
        return await run_in_threadpool(_explained, broker, json.loads(line))

    return router


def _match_lines(broker: Broker, body: bytes, fmt: str, group_by: str, only,
                 explain: bool, with_metadata: bool) -> tuple[list[str], int]:
    """The lines (each ending in a newline) of the matches of `body`'s publications,
    of subscriber `only`'s queries (``...``: everyone's), and how many publications."""
    engine = broker.engine
    publications = broker.read(body, fmt, group_by)
    lines = []
    metadata: dict[str, dict] = {}  # by query id: the table's (the engine keeps none)
    for pub in publications:
        for m in engine.match(pub):
            if only is not ... and m.subscriber != only:
                continue
            text = match_line(pub.id, m)
            extra = {}
            if with_metadata:
                if m.query_id not in metadata:
                    metadata[m.query_id] = _metadata(broker, m.query_id)
                extra["metadata"] = metadata[m.query_id]
            if explain:
                extra["explain"] = m.explain(pub, engine)
            if extra:
                text = text[:-1] + ", " + json.dumps(extra, ensure_ascii=False)[1:]
            lines.append(text + "\n")
    return lines, len(publications)


def _event_line(broker: Broker, subscriber: str, event: int) -> str | None:
    """The `rtf match` line of `subscriber`'s event `event`, or None."""
    if not 0 < event <= MAX_EVENT_ID:
        return None
    runs = broker.outbox.batches_since(subscriber, event - 1, 1)
    if not runs or runs[0][0] != event:
        return None
    return runs[0][1][0].decode()


def _explained(broker: Broker, line: dict) -> dict:
    """`line` (a pushed match) with its explanation and its query's metadata."""
    engine = broker.engine
    publication = broker.publisher.recent.get(line["publication"])
    if publication is None:
        raise Refused(404, f"publication {line['publication']!r} is no longer held to explain "
                           f"it (the server keeps the last {RECENT_PUBLICATIONS} matched "
                           "publications in memory, none from before a restart)")
    # A match as `Match.explain` reads it, from the line (ASK and CONSTRUCT: one entry).
    try:
        registered = engine.get(line["query"])
        match = SimpleNamespace(query_id=line["query"], is_ask=registered.is_ask,
                                bindings=line.get("bindings") or [], triples=line.get("triples"))
        explained = explain_match(match, publication, engine)
    except KeyError:
        raise Refused(404, f"query {line['query']!r} was removed since") from None
    return {**line, "metadata": _metadata(broker, line["query"]), "explain": explained}


def _metadata(broker: Broker, query_id: str) -> dict:
    """The query's metadata as ``GET /queries/{id}`` shows it ({} once it is removed)."""
    row = broker.registry.get(query_id)
    return {} if row is None else row.as_json()["metadata"]
