"""``POST /publications``: match an RDF body's publications, answer their matches
(JSON Lines, or one SPARQL 1.1 Query Results JSON document with
``Accept: application/sparql-results+json``) and push them to subscribers."""

from __future__ import annotations

import json
import re
from functools import partial

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response

from rtf.errors import PublicationError
from rtf.io.output import sparql_term
from rtf.server.api_common import Authenticator, Refused, error_responses, media_type
from rtf.server.auth import Principal
from rtf.server.broker import Broker
from rtf.server.stopping import in_thread_to_the_end

#: Content types of publications, and the reader's format names.
RDF_TYPES = {
    "application/n-triples": "nt", "text/plain": "nt",
    "text/turtle": "ttl", "application/x-turtle": "ttl",
    "application/n-quads": "nq", "application/trig": "trig",
    "application/rdf+xml": "rdf",
}

#: The formats' names, as an error names them ("bad N-Triples: ...").
FORMAT_NAMES = {"nt": "N-Triples", "ttl": "Turtle", "nq": "N-Quads", "trig": "TriG",
                "rdf": "RDF/XML"}

#: The first bytes of a gzip file.
GZIP_MAGIC = b"\x1f\x8b"

#: The message of Turtle's reader, which reads N-Triples too, for a character that
#: cannot start a term: N-Triples has no prefix names.
_PREFIX_NAME = re.compile(r"'(.*?)' is not allowed at the beginning of a prefix name")

NDJSON = "application/x-ndjson"
SPARQL_JSON = "application/sparql-results+json"
#: The answers POST /publications can give, by Accept type.
ANSWER_TYPES = {NDJSON: NDJSON, "application/jsonl": NDJSON, "application/json": NDJSON,
                SPARQL_JSON: SPARQL_JSON}

#: The variables a SPARQL JSON answer adds to each row: which publication, query and
#: subscriber the row is a match of.
MATCH_VARIABLES = ("publication", "query", "subscriber")


def routes(broker: Broker, auth: Authenticator) -> APIRouter:
    router = APIRouter(tags=["publications"])

    @router.post("/publications",
                 openapi_extra={"requestBody": {"required": True, "content": {
                     t: {"schema": {"type": "string"}} for t in RDF_TYPES}}},
                 responses={200: {"content": {NDJSON: {}, SPARQL_JSON: {}},
                                  "description": "The matches: one `rtf match` line each, or "
                                                 "(Accept: application/sparql-results+json) one "
                                                 "SPARQL JSON results document"},
                            **error_responses(400, 401, 403, 406, 413, 415, 503, 507)})
    async def post_publications(request: Request,
                                group_by: str = Query("subject", pattern="^(subject|graph)$"),
                                grouped: bool = Query(False, description="Answer one line per "
                                                      "publication and subscriber (its matches "
                                                      "sharing one answer): `queries`, a list"),
                                who: Principal = Depends(auth)):
        """Match the publications of an RDF document; push the matches to subscribers."""
        if not who.may_publish():
            raise Refused(403, f"a {who} token cannot publish")
        fmt = RDF_TYPES.get(media_type(request))
        if fmt is None:
            raise Refused(415, f"cannot read {media_type(request) or 'a body without Content-Type'}; "
                               f"send one of {', '.join(RDF_TYPES)}")
        answer = negotiate(request.headers.get("accept", ""))
        sparql = answer == SPARQL_JSON
        if sparql and grouped:
            raise Refused(400, "grouped answers are JSON lines: ask for them without "
                               f"Accept: {SPARQL_JSON}")
        body = await request.body()
        try:  # read and matched in the publisher's thread
            done = await broker.publisher.publish(partial(broker.read, body, fmt, group_by),
                                                  keep_matches=sparql, grouped=grouped)
        except PublicationError as e:
            raise bad_rdf(e, fmt, body) from None
        headers = {"X-RTF-Publications": str(done.publications),
                   "X-RTF-Matches": str(done.matches)}
        if sparql:
            text = await in_thread_to_the_end(sparql_results, done.kept)  # published: answer it
            return Response(text, media_type=SPARQL_JSON, headers=headers)
        return Response(done.body, media_type=NDJSON, headers=headers)

    return router


def bad_rdf(error: PublicationError, fmt: str, body: bytes) -> Refused:
    """The 400 of a body that is not the RDF its Content-Type says: named by its format
    ("bad N-Triples: <body>:LINE: ..."), and a compressed body told as such."""
    name = FORMAT_NAMES[fmt]
    if body.startswith(GZIP_MAGIC):
        return Refused(400, f"bad {name}: the body is gzip-compressed data; send it with "
                            "Content-Encoding: gzip, or uncompressed")
    # the character shown escaped (a control character would print as nothing)
    why = "cannot begin a term" if fmt in ("nt", "nq") else "cannot begin a prefix name"
    message = _PREFIX_NAME.sub(lambda m: f"{m.group(1)!r} {why}", str(error))
    return Refused(400, f"bad {name}: {message}")


def negotiate(accept: str) -> str:
    """The answer type for an Accept header (JSON Lines unless SPARQL JSON is preferred);
    406 when it accepts none of them."""
    best, best_q = None, 0.0
    for position, item in enumerate(accept.split(",")):
        kind, *params = [p.strip() for p in item.split(";")]
        kind = kind.lower()
        q = 1.0
        for p in params:
            name, _, value = p.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        if kind in ("*/*", "application/*", ""):
            found = NDJSON
        else:
            found = ANSWER_TYPES.get(kind)
        if found is not None and q > best_q:  # ties: the first listed
            best, best_q = found, q
    if not accept.strip():
        return NDJSON
    if best is None:
        raise Refused(406, f"cannot answer {accept[:100]!r}; accepted: {', '.join(ANSWER_TYPES)}")
    return best


def sparql_results(kept: list) -> str:
    """One SPARQL 1.1 Query Results JSON document of every match of `kept`
    (``(publication id, Matches)`` pairs): a row per solution (one per ASK match)
    binding the query's projected variables and `MATCH_VARIABLES`. A query variable
    with one of those names keeps it; the match's variable then gets a ``_`` more."""
    projected: dict[str, None] = {}
    for _, found in kept:
        for rq in {id(rq): rq for rq in found.registered}.values():
            projected.update(dict.fromkeys(rq.query.projection))
    names = {}
    for name in MATCH_VARIABLES:
        while name in projected or name in names.values():
            name += "_"
        names[len(names)] = name
    publication, query, subscriber = names[0], names[1], names[2]
    rows = []
    for pub_id, found in kept:
        pub = ({"type": "bnode", "value": pub_id[2:]} if pub_id.startswith("_:")
               else {"type": "uri", "value": pub_id})
        for qid, rq, solutions in zip(found.query_ids, found.registered, found.solutions):
            head = {publication: pub, query: {"type": "literal", "value": qid}}
            if rq.subscriber is not None:
                head[subscriber] = {"type": "literal", "value": rq.subscriber}
            if rq.is_ask:
                rows.append(head)
                continue
            for solution in sorted(solutions):
                row = dict(head)
                row.update((v, sparql_term(t)) for v, t in solution)
                rows.append(row)
    doc = {"head": {"vars": [publication, query, subscriber, *projected]},
           "results": {"bindings": rows}}
    return json.dumps(doc, ensure_ascii=False)
