"""Match output: the JSON Lines of ``rtf match`` and SPARQL 1.1 Query Results JSON.

One line per (publication, matching query)::

    {"publication": "http://ex/a", "query": "q1", "subscriber": null, "bindings": [{"s": "<http://ex/a>"}]}

The same lines are what ``rtf serve`` answers and pushes, and what the
Spark replay writes, so that every way of running rtf can be compared
byte for byte.
"""

from __future__ import annotations

import json
import re


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
#: the middle of a line by subscriber, from the quote that ends the query id:
#: '", "subscriber": ..., "bindings": '
_MIDDLES: dict = {}


#: A character that `json.encoder.encode_basestring` writes otherwise than itself.
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f]')


def _end_text(solutions) -> str:
    return _bindings_text(solutions) + "}\n"


def _middle_text(subscriber) -> str:
    return '", "subscriber": ' + ("null" if subscriber is None else _json_string(subscriber)) + ', "bindings": '


def _texts(cache: dict, keys: list, make) -> list[str]:
    """``cache[k]`` for each of `keys`, the missing ones made by ``make(k)``: no Python call
    per key when all are cached (a publication's thousands of matches share a few)."""
    found = list(map(cache.get, keys))
    if None in found:
        if len(cache) >= _CACHED:
            cache.clear()
        for key in set(keys).difference(cache):
            cache[key] = make(key)
        found = list(map(cache.__getitem__, keys))
    return found


def match_lines(pub_id: str, matches) -> str:
    """The output lines (each ending in a newline) of one publication's
    `rtf.matching.results.Matches`: ``match_line`` of each match, in order.

    Made from the matches' parallel lists with C-level maps and joins, so a
    publication that matches thousands of queries costs no Python call per
    match: the bindings text is shared by the queries with the same
    solutions, the subscriber text by the queries of one subscriber, and
    query ids that need no escaping in JSON (nearly all) go in as they are.
    """
    n = len(matches)
    if not n:
        return ""
    ids, solutions, subscribers = matches.query_ids, matches.solutions, matches.subscribers
    head = f'{{"publication": {_json_string(pub_id)}, "query": "'
    if solutions.count(solutions[0]) == n:  # one answer for all (identity first: in C)
        ends = _texts(_ENDS, solutions[:1], _end_text) * n
    else:
        ends = _texts(_ENDS, solutions, _end_text)
    if matches.has_ask():
        ends = ["[]}\n" if rq.is_ask else e for rq, e in zip(matches.registered, ends)]
    if _NEEDS_ESCAPE.search("".join(ids)) is not None:  # rare: each id escaped, its quotes dropped
        ids = [text[1:-1] for text in map(_json_string, ids)]
    elif ends.count(ends[0]) == n and subscribers.count(subscribers[0]) == n:
        # One subscriber, one answer (star queries about the subject): the lines differ
        # only by their ids, so the text is one join of the ids, the first and the last
        # carrying the text before and after them.
        tail = _texts(_MIDDLES, subscribers[:1], _middle_text)[0] + ends[0]
        ids = list(ids)
        ids[0] = head + ids[0]
        ids[-1] += tail
        return (tail + head).join(ids)
    # Each id between the quotes that end `head` and start its middle.
    parts = [None] * (4 * n)
    parts[0::4] = [head] * n
    parts[1::4] = ids
    parts[2::4] = _texts(_MIDDLES, subscribers, _middle_text)
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
