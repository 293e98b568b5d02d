"""``POST /check``: what ``rtf check`` says of a query, without registering it.

The console checks its editor's text as the user types; a script can check a
query file's entries before posting them. The answer is always ``200``: a
query that does not parse is an answer (``"valid": false``, with the message,
the line and column and what was expected there), not a failed request.
"""

from __future__ import annotations

import json

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, Field

from rtf.errors import QueryError
from rtf.matching import explain
from rtf.parser import parse_query
from rtf.query.text import analysed
from rtf.server.api_common import Authenticator, Refused, error_responses, media_type
from rtf.server.auth import Principal
from rtf.server.broker import Broker

#: Content types of a query sent as it is (the SPARQL protocol's, and plain text).
QUERY_TYPES = ("application/sparql-query", "text/plain")

#: What the check warns about beyond errors: `query_warnings` where the engine has it
#: (it also says "evaluated for every publication"), else why a query can never match.
query_warnings = getattr(explain, "query_warnings", explain.never_match_reasons)


class Checked(BaseModel):
    """What ``rtf check`` says of a query."""

    valid: bool
    error: str | None = Field(None, description="An invalid query: `rtf check`'s message "
                              "(\"invalid query: line L, column C: ...\")")
    message: str | None = Field(None, description="The message without its position")
    line: int | None = Field(None, description="The line of the problem (1-based; null when "
                             "it has no place, as a query over the size limit)")
    column: int | None = Field(None, description="Its column (1-based, in characters)")
    expected: list[str] = Field([], description="What the grammar accepts at that place")
    form: str | None = Field(None, description="A valid query: SELECT, ASK, ...")
    branches: int | None = Field(None, description="Its branches (disjunctive normal form)")
    description: str | None = Field(None, description="Its decomposition, as `rtf check` "
                                    "prints it")
    warnings: list[str] = Field([], description="`rtf check`'s warnings (a query that can "
                                "never match, one evaluated for every publication, an "
                                "a/rdfs:subClassOf* without a taxonomy or on a class it lacks)")


def routes(broker: Broker, auth: Authenticator) -> APIRouter:
    router = APIRouter(tags=["queries"])

    @router.post("/check", response_model=Checked,
                 openapi_extra={"requestBody": {"required": True, "content": {
                     "application/json": {"schema": {"type": "object", "required": ["query"],
                                                      "properties": {"query": {"type": "string"}}}},
                     **{t: {"schema": {"type": "string"}} for t in QUERY_TYPES}}}},
                 responses=error_responses(400, 401, 413, 415))
    async def check(request: Request, who: Principal = Depends(auth)):
        """Check a query as `rtf check` does (nothing is registered): JSON `{"query": "..."}`,
        or the text itself as application/sparql-query or text/plain."""
        text = _query_text(media_type(request), await request.body())
        return await run_in_threadpool(check_query, text, broker.engine.text_analysis,
                                       broker.engine.taxonomy)

    return router


def _query_text(kind: str, body: bytes) -> str:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Refused(400, f"the query is not UTF-8 (byte {e.start})") from None
    if kind in QUERY_TYPES:
        return text
    if kind != "application/json":
        raise Refused(415, f"cannot read {kind or 'a body without Content-Type'}; send JSON "
                           f'{{"query": "..."}} or one of {", ".join(QUERY_TYPES)}')
    try:
        value = json.loads(text)
    except ValueError as e:
        raise Refused(400, f"bad request: the body is not JSON ({e})") from None
    if not isinstance(value, dict) or not isinstance(value.get("query"), str):
        raise Refused(400, 'bad request: the body is a JSON object {"query": "..."}')
    return value["query"]


def check_query(text: str, analysis=None, taxonomy=None) -> dict:
    """`Checked` of `text`, parsed under the engine's text `analysis`, its type paths
    read against the engine's `taxonomy`."""
    try:
        with analysed(analysis):
            query = parse_query(text)
    except QueryError as e:
        return {"valid": False, "error": f"invalid query: {e}", "message": e.message,
                "line": e.line, "column": e.column, "expected": list(e.expected)}
    return {"valid": True, "form": query.form, "branches": len(query.branches),
            "description": query.describe(),
            "warnings": list(query_warnings(query)) + explain.taxonomy_warnings(query, taxonomy)}
