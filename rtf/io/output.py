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
_CACHED = 4096  # entries each cache holds before it starts again


def _json_bindings(m) -> str:
    if m.is_ask:
        return "[]"
    return _bindings_text(m.solutions)


def _bindings_text(solutions) -> str:
    found = _BINDINGS.get(solutions)
    if found is None:
        if len(_BINDINGS) >= _CACHED:
            _BINDINGS.clear()
        found = _BINDINGS[solutions] = "[" + ", ".join(
            "{" + ", ".join(f"{_json_string(v)}: {_json_string(t)}" for v, t in sol) + "}"
            for sol in sorted(solutions)) + "]"
    return found


#: line ends by solutions: the bindings array, then '}' and the newline
_ENDS: dict = {}
#: the middle of a line by subscriber: ', "subscriber": ..., "bindings": '
_MIDDLES: dict = {}


def match_lines(pub_id: str, matches) -> str:
    """The output lines (each ending in a newline) of one publication's
    `rtf.matching.results.Matches`: ``match_line`` of each match, in order.

    Made from the matches' parallel lists with C-level maps and one join, so
    a publication that matches thousands of queries costs no Python call
    per match: the bindings text is shared by the queries with the same
    solutions, the subscriber text by the queries of one subscriber.
    """
    n = len(matches)
    if not n:
        return ""
    ends = list(map(_ENDS.get, matches.solutions))
    if None in ends:
        if len(_ENDS) >= _CACHED:
            _ENDS.clear()
        for sols in set(matches.solutions).difference(_ENDS):
            _ENDS[sols] = _bindings_text(sols) + "}\n"
        ends = list(map(_ENDS.__getitem__, matches.solutions))
    if matches.has_ask():
        ends = ["[]}\n" if rq.is_ask else e for rq, e in zip(matches.registered, ends)]
    subscribers = matches.subscribers
    middles = list(map(_MIDDLES.get, subscribers))
    if None in middles:
        if len(_MIDDLES) >= _CACHED:
            _MIDDLES.clear()
        for s in set(subscribers).difference(_MIDDLES):
            _MIDDLES[s] = (', "subscriber": ' + ("null" if s is None else _json_string(s))
                           + ', "bindings": ')
        middles = list(map(_MIDDLES.__getitem__, subscribers))
    parts = [None] * (4 * n)
    parts[0::4] = [f'{{"publication": {_json_string(pub_id)}, "query": '] * n
    parts[1::4] = map(_json_string, matches.query_ids)
    parts[2::4] = middles
    parts[3::4] = ends
    return "".join(parts)


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
