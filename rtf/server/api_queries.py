"""The query routes of `rtf serve`: register one (PUT) or many (POST, JSON Lines),
list, read and remove them. Registrations are answered once on disk."""

from __future__ import annotations

import json
from typing import Any, Literal

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from rtf.errors import QueryError
from rtf.io.metadata import MAX_METADATA_BYTES, MAX_METADATA_DEPTH
from rtf.io.queries import QueryFileError, decode_text, query_records
from rtf.matching.explain import taxonomy_warnings
from rtf.server.api_common import (JSON_TYPE, MAX_EVENT_ID, MAX_ID_CHARS, Authenticator, Refused,
                                   check_metadata, check_name, error_responses, json_body,
                                   media_type)
from rtf.server.auth import Principal
from rtf.server.broker import Broker
from rtf.server.registry import BulkRefusedError, NotOwnerError, Record
from rtf.server.stopping import StoppingError, in_thread_to_the_end, retry_headers

#: Content types of a bulk registration (JSON Lines).
NDJSON_TYPES = ("application/x-ndjson", "application/jsonl", "application/json-lines")

#: A PUT body, as the errors show it.
QUERY_EXAMPLE = '{"query": "...", "subscriber": "...", "metadata": {...}}'

#: The name the bulk body has in error messages ("<body>:LINE: ...", as `rtf check -f`).
BODY = "<body>"


class QueryIn(BaseModel):
    """A query to register: these three fields, no other (a field of one's own is metadata,
    under "metadata"; any other field is refused, as a misspelt "subscriber" would otherwise
    be dropped silently)."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(description="The query text (docs/language.md)")
    subscriber: str | None = Field(None, description="Who receives its matches (a subscriber "
                                   "token's own name when omitted)")
    metadata: dict[str, Any] | None = Field(
        None, description=f"Kept with the query, returned by GET: a JSON object at most "
                          f"{MAX_METADATA_DEPTH} levels deep and {MAX_METADATA_BYTES} bytes of "
                          "JSON text, whose strings hold no lone surrogate (else 400)",
        json_schema_extra={"x-max-depth": MAX_METADATA_DEPTH, "x-max-bytes": MAX_METADATA_BYTES})


class Registered(BaseModel):
    id: str
    subscriber: str | None
    created: bool
    warnings: list[str] = Field([], description="When there are any: what `rtf check` warns of, "
                                "with the server's taxonomy (an a/rdfs:subClassOf* where `rtf "
                                "serve` has none: it then holds only for the class itself; or on "
                                "a class the taxonomy lacks)")


class StoredOut(BaseModel):
    id: str
    subscriber: str | None
    query: str
    metadata: dict[str, Any]
    unreadable: str | None = Field(None, description="Only for a row of the table that cannot be "
                                   "shown as it is (written by hand, or by an older rtf): why, "
                                   "and which fields are shown replaced (metadata by {})")


class Page(BaseModel):
    queries: list[StoredOut]
    next: int | None = Field(description="The cursor of the next page (null: none)")


class BulkResult(BaseModel):
    registered: int = Field(description="Queries registered (created + replaced)")
    created: int
    replaced: int
    failed: int = Field(description="Lines refused (only with atomic=false)")
    warnings: list[str] = Field([], description="When there are any: the registered queries' "
                                "warnings, as `rtf check -f` words them (\"<body>:LINE: query "
                                "'ID': warning: ...\"; with atomic=false, each line's result "
                                "has its own)")


def routes(broker: Broker, auth: Authenticator) -> APIRouter:
    router = APIRouter(tags=["queries"])

    def writer(who: Principal, subscriber: str | None) -> str | None:
        """The subscriber a registration by `who` is for (403 if it may not)."""
        if who.role == "subscriber":
            if subscriber is None:
                return who.subscriber
            if subscriber != who.subscriber:
                raise Refused(403, f"token of subscriber {who.subscriber!r} cannot register "
                                   f"queries for {subscriber!r}")
        elif not who.is_admin:
            raise Refused(403, f"a {who} token cannot register queries")
        return subscriber

    def owner_of_writes(who: Principal) -> str | None:
        """The subscriber whose queries `who` may change (None: any, for admin)."""
        return None if who.is_admin else who.subscriber

    @router.put("/queries/{query_id:text}", status_code=201,
                openapi_extra={"requestBody": {"required": True, "content": {JSON_TYPE: {
                    "schema": {"$ref": "#/components/schemas/QueryIn"}}}}},
                responses={201: {"model": Registered, "description": "Registered, on disk"},
                           200: {"model": Registered, "description": "Replaced a query of that id"},
                           **error_responses(400, 401, 403, 413, 415, 503, 507)})
    async def put_query(request: Request, query_id: str = Path(description="The query's id"),
                        who: Principal = Depends(auth)):
        """Register a continuous query (or replace the one of that id); answered once it is
        committed to disk. The body is `QueryIn`: a field it does not name is a `400`."""
        body: QueryIn = await json_body(request, QueryIn, QUERY_EXAMPLE)
        check_name("a query id", query_id)
        if body.subscriber is not None:
            check_name("a subscriber name", body.subscriber)
        check_metadata(body.metadata)
        subscriber = writer(who, body.subscriber)
        try:
            created = await in_thread_to_the_end(broker.registry.put, query_id, body.query,
                                                 subscriber, body.metadata, owner_of_writes(who))
        except QueryError as e:
            raise Refused(400, f"invalid query: {e}", line=e.line, column=e.column) from None
        except NotOwnerError as e:
            raise Refused(403, str(e)) from None
        broker.changed()
        registered = broker.engine.get(query_id) if query_id in broker.engine else None
        warnings = [] if registered is None else taxonomy_warnings(registered.query,
                                                                   broker.engine.taxonomy)
        answer = {"id": query_id, "subscriber": subscriber, "created": created}
        return JSONResponse({**answer, "warnings": warnings} if warnings else answer,
                            201 if created else 200)

    @router.post("/queries", response_model=BulkResult,
                 openapi_extra={"requestBody": {"required": True, "content": {
                     t: {"schema": {"type": "string"}} for t in NDJSON_TYPES}}},
                 responses={200: {"content": {"application/x-ndjson": {}},
                                  "description": "The summary; with atomic=false, one JSON line "
                                                 "per record instead: {line, id, status, error}"},
                            **error_responses(400, 401, 403, 413, 415, 503, 507)})
    async def post_queries(request: Request,
                           atomic: bool = Query(True, description="All or nothing (default); "
                                                "false: each line on its own, one result per line"),
                           extra_fields: Literal["refuse", "metadata"] = Query(
                               "refuse", description="A field other than id, query, subscriber "
                               "and metadata: refused (400 naming it, the default), or read as "
                               "metadata, as `rtf match` reads a query file's lines"),
                           who: Principal = Depends(auth)):
        """Register many queries, one JSON object per line (`{"id", "query", "subscriber",
        "metadata"}`, the format of `rtf match --queries` files), in one transaction."""
        if not (who.is_admin or who.role == "subscriber"):
            raise Refused(403, f"a {who} token cannot register queries")
        if media_type(request) not in NDJSON_TYPES:
            raise Refused(415, f"cannot read {media_type(request) or 'a body without Content-Type'}; "
                               f"send JSON Lines as one of {', '.join(NDJSON_TYPES)}")
        body = await request.body()
        records, problems = _records(body, who, atomic, writer, extra_fields == "metadata")
        try:
            await in_thread_to_the_end(broker.registry.put_many, records, owner_of_writes(who),
                                       atomic)
        except BulkRefusedError as e:
            raise _refusal(e.record) from None
        except StoppingError as e:  # rolled back: the client may send it again
            raise Refused(503, str(e), headers=retry_headers()) from None
        if records:
            broker.changed()
        outcomes = [r.outcome for r in records]
        created, replaced = outcomes.count("created"), outcomes.count("replaced")
        taxonomy = broker.engine.taxonomy
        if atomic:
            summary = {"registered": created + replaced, "created": created, "replaced": replaced,
                       "failed": 0}
            warnings = [f"{BODY}:{r.line}: query {r.id!r}: warning: {w}"
                        for r in records for w in _warnings(r, taxonomy)]
            return JSONResponse({**summary, "warnings": warnings} if warnings else summary)
        results = sorted(problems + [_result(r, taxonomy) for r in records], key=lambda r: r["line"])
        return Response("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in results),
                        media_type="application/x-ndjson",
                        headers={"X-RTF-Registered": str(created + replaced),
                                 "X-RTF-Failed": str(len(results) - created - replaced)})

    @router.get("/queries", response_model=Page, responses=error_responses(400, 401, 403, 503))
    async def list_queries(subscriber: str | None = Query(None, description="Only this "
                                                          "subscriber's queries"),
                           after: int = Query(0, ge=0, description="The cursor `next` of the "
                                              "previous page (past the last: an empty page)"),
                           limit: int = Query(1000, ge=1, le=10_000),
                           contains: str | None = Query(None, max_length=MAX_ID_CHARS,
                                                        description="Only the queries whose "
                                                        "id or text contains this (ASCII "
                                                        "letters of either case)"),
                           who: Principal = Depends(auth)):
        """The registered queries, in registration order, a page at a time."""
        if not who.is_admin:
            if who.role != "subscriber" or subscriber not in (None, who.subscriber):
                whose = "queries" if subscriber is None else f"the queries of {subscriber!r}"
                raise Refused(403, f"a {who} token cannot list {whose}")
            subscriber = who.subscriber
        if subscriber is not None:
            check_name("a subscriber name", subscriber)
        rows = await run_in_threadpool(broker.registry.store.page, subscriber,
                                       min(after, MAX_EVENT_ID), limit, True, contains)
        # Rendered here, not by the response model: every row is JSON within the bounds
        # (`StoredQuery.as_json`), and 10,000 rows skip a validation that proves nothing.
        return JSONResponse({"queries": [r.as_json() for r in rows],
                             "next": rows[-1].seq if len(rows) == limit else None})

    @router.get("/queries/{query_id:text}", response_model=StoredOut,
                responses=error_responses(400, 401, 403, 404, 503))
    async def get_query(query_id: str, who: Principal = Depends(auth)):
        """One registered query."""
        row = await run_in_threadpool(broker.registry.get, query_id)
        if row is None:
            raise Refused(404, f"no registered query with id {query_id!r}")
        if not who.may_act_for(row.subscriber):
            raise Refused(403, f"query {query_id!r} belongs to another subscriber")
        return JSONResponse(row.as_json())

    @router.delete("/queries/{query_id:text}", status_code=204,
                   responses={204: {"description": "Removed"},
                              **error_responses(400, 401, 403, 404, 503, 507)})
    async def delete_query(query_id: str, who: Principal = Depends(auth)):
        """Remove a query for good."""
        if who.role in ("publisher", "metrics"):
            raise Refused(403, f"a {who} token cannot remove queries")
        try:
            await in_thread_to_the_end(broker.registry.delete, query_id, owner_of_writes(who))
        except KeyError:
            raise Refused(404, f"no registered query with id {query_id!r}") from None
        except NotOwnerError as e:
            raise Refused(403, str(e)) from None
        broker.changed()
        return Response(status_code=204)

    return router


def _records(body: bytes, who: Principal, atomic: bool, writer,
             extra_fields: bool) -> tuple[list[Record], list[dict]]:
    """The records of a bulk body, checked as PUT checks one (and, without `extra_fields`,
    refusing the fields PUT refuses); with `atomic`, the first bad line is a 400, else each
    bad line is a result of its own."""
    try:
        text = decode_text(body, BODY)
    except QueryFileError as e:
        raise Refused(400, str(e)) from None
    problems: list[str] = []
    try:
        raw = query_records(text, BODY, None if atomic else problems, extra_fields)
    except QueryFileError as e:  # atomic: the first line that is not a query record
        raise Refused(400, str(e)) from None
    records: list[Record] = []
    refused: list[dict] = []
    for problem in problems:  # lines that are not query records
        line = int(problem.split(":", 2)[1])
        refused.append({"line": line, "id": None, "status": 400, "error": problem})
    for rec in raw:
        try:
            if rec["id"] is None:
                raise Refused(400, f'{BODY}:{rec["line"]}: a query id is needed ("id")')
            check_name("a query id", rec["id"])
            if rec["subscriber"] is not None:
                check_name("a subscriber name", rec["subscriber"])
            check_metadata(rec["metadata"] or None)
            subscriber = writer(who, rec["subscriber"])
        except Refused as e:
            message = e.detail if e.detail.startswith(BODY) else f"{BODY}:{rec['line']}: {e.detail}"
            if atomic:
                raise Refused(e.status_code, message, record=rec["line"], id=rec["id"]) from None
            refused.append({"line": rec["line"], "id": rec["id"], "status": e.status_code,
                            "error": message})
            continue
        records.append(Record(rec["line"], rec["id"], rec["query"], subscriber,
                              rec["metadata"] or None))
    return records, refused


def _message(r: Record) -> tuple[int, str]:
    """The status and `rtf check -f`'s line for a refused record."""
    e = r.outcome
    if isinstance(e, NotOwnerError):
        return 403, f"{BODY}:{r.line}: {e}"
    return 400, f"{BODY}:{r.line}: query {r.id!r}: {e}"


def _refusal(r: Record) -> Refused:
    status, message = _message(r)
    fields = {"record": r.line, "id": r.id}
    if isinstance(r.outcome, QueryError):
        fields.update(line=r.outcome.line, column=r.outcome.column)
    return Refused(status, message, **fields)


def _warnings(r: Record, taxonomy) -> list[str]:
    """`taxonomy_warnings` of a registered record."""
    return taxonomy_warnings(r.parsed, taxonomy) if isinstance(r.outcome, str) else []


def _result(r: Record, taxonomy=None) -> dict:
    if isinstance(r.outcome, str):
        result = {"line": r.line, "id": r.id, "status": 201 if r.outcome == "created" else 200}
        return {**result, "warnings": w} if (w := _warnings(r, taxonomy)) else result
    status, message = _message(r)
    result = {"line": r.line, "id": r.id, "status": status, "error": message}
    if isinstance(r.outcome, QueryError):
        result.update(query_line=r.outcome.line, query_column=r.outcome.column)
    return result
