"""Match output: the JSON Lines of ``rtf match`` and SPARQL 1.1 Query Results JSON.

One line per (publication, matching query)::

    {"publication": "http://ex/a", "query": "q1", "subscriber": null, "bindings": [{"s": "<http://ex/a>"}]}

The same lines are what ``rtf serve`` answers and pushes, and what the
Spark replay writes, so that every way of running rtf can be compared
byte for byte.
"""

from __future__ import annotations

import json


def match_line(pub_id: str, m) -> str:
    """One output line: exactly ``json.dumps({"publication", "query", "subscriber",
    "bindings"}, ensure_ascii=False)``, written by hand (5x faster: a publication
    makes thousands of matches, and most of them share their bindings)."""
    subscriber = "null" if m.subscriber is None else _json_string(m.subscriber)
    return (f'{{"publication": {_json_string(pub_id)}, "query": {_json_string(m.query_id)}, '
            f'"subscriber": {subscriber}, "bindings": {_json_bindings(m)}}}')


_json_string = json.encoder.encode_basestring  # what json.dumps uses with ensure_ascii=False
_BINDINGS: dict = {}  # solutions -> their JSON array; star queries share their solutions


def _json_bindings(m) -> str:
    if m.is_ask:
        return "[]"
    key = m.solutions
    found = _BINDINGS.get(key)
    if found is None:
        if len(_BINDINGS) >= 4096:
            _BINDINGS.clear()
        found = _BINDINGS[key] = "[" + ", ".join(
            "{" + ", ".join(f"{_json_string(v)}: {_json_string(t)}" for v, t in sol) + "}"
            for sol in sorted(key)) + "]"
    return found


def sparql_term(key: str) -> dict:
    """An N-Triples term as a SPARQL 1.1 Query Results JSON RDF term."""
    from rtf.query.terms import XSD_STRING, literal_parts
    if key.startswith("<"):
        return {"type": "uri", "value": key[1:-1]}
    if key.startswith("_:"):
        return {"type": "bnode", "value": key[2:]}
    parts = literal_parts(key)
    term = {"type": "literal", "value": parts.lexical}
    if parts.lang is not None:
        term["xml:lang"] = parts.lang
    elif parts.datatype != XSD_STRING:
        term["datatype"] = parts.datatype
    return term


def sparql_json(m, registered) -> dict:
    """A match as a SPARQL 1.1 Query Results JSON document (ASK: a boolean)."""
    if m.is_ask:
        return {"head": {}, "boolean": True}
    return {"head": {"vars": list(registered.query.projection)},
            "results": {"bindings": [{v: sparql_term(t) for v, t in sol}
                                     for sol in sorted(m.solutions)]}}


def sparql_json_line(pub_id: str, m, registered) -> str:
    """One output line of --output-format sparql-json: the results document
    plus "publication", "query" and "subscriber"."""
    doc = {"publication": pub_id, "query": m.query_id, "subscriber": m.subscriber}
    doc.update(sparql_json(m, registered))
    return json.dumps(doc, ensure_ascii=False)
