"""Match output: the JSON Lines of ``rtf match`` and SPARQL 1.1 Query Results JSON.

One line per (publication, matching query)::

    {"publication": "http://ex/a", "query": "q1", "subscriber": null, "bindings": [{"s": "<http://ex/a>"}]}

The same lines are what ``rtf serve`` answers and pushes, and what the
Spark replay writes, so that every way of running rtf can be compared
byte for byte.
"""

from __future__ import annotations

import json

from rtf.algebra.results import OrderedRows, Triples

#: What separates two ids in the JSON array of ``--output-format ids``.
IDS_SEPARATOR = '", "'


def match_line(pub_id: str, m) -> str:
    """One output line: exactly ``json.dumps({"publication", "query", "subscriber",
    "bindings"}, ensure_ascii=False)``, written by hand (5x faster: a publication
    makes thousands of matches, and most of them share their bindings). A CONSTRUCT
    match has ``"triples"`` (a list of [subject, predicate, object]) for ``"bindings"``."""
    subscriber = "null" if m.subscriber is None else _json_string(m.subscriber)
    return (f'{{"publication": {_json_string(pub_id)}, "query": {_json_string(m.query_id)}, '
            f'"subscriber": {subscriber}, {_answer_text(m.solutions) if not m.is_ask else _ASK_ANSWER}}}')


_json_string = json.encoder.encode_basestring  # what json.dumps uses with ensure_ascii=False
_BINDINGS: dict = {}  # solutions -> their JSON array; star queries share their solutions
_CACHED = 4096  # entries each cache holds before it starts again


_ASK_ANSWER = '"bindings": []'


def _answer_text(solutions) -> str:
    """``"bindings": [...]`` of a match's solutions (in order for an ORDER BY query's
    `OrderedRows`, else sorted), or ``"triples": [...]`` of a CONSTRUCT's `Triples`."""
    found = _BINDINGS.get(solutions)
    if found is None:
        if len(_BINDINGS) >= _CACHED:
            _BINDINGS.clear()
        if isinstance(solutions, Triples):
            found = '"triples": [' + ", ".join(
                "[" + ", ".join(map(_json_string, t)) + "]" for t in sorted(solutions)) + "]"
        else:
            rows = solutions if isinstance(solutions, OrderedRows) else sorted(solutions)
            found = '"bindings": [' + ", ".join(
                "{" + ", ".join(f"{_json_string(v)}: {_json_string(t)}" for v, t in sol) + "}"
                for sol in rows) + "]"
        # (an OrderedRows equal to a frozenset never is: a tuple and a set are unequal)
        _BINDINGS[solutions] = found
    return found


#: The bytes that `json.encoder.encode_basestring` writes otherwise than themselves
#: (the ASCII controls, the quote, the backslash): deleted to count them.
_ESCAPED_BYTES = bytes(range(0x20)) + b'"\\'


def _end_text(solutions) -> str:
    return _answer_text(solutions) + "}\n"


def _middle_text(subscriber) -> str:
    return '", "subscriber": ' + ("null" if subscriber is None else _json_string(subscriber)) + ', '


def _texts(cache: dict, keys: list, make) -> list:
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


class _Kind:
    """What `_lines` writes: text (`match_lines`) or UTF-8 bytes (`match_bytes`),
    each with its own caches of line ends (by solutions) and middles (by
    subscriber, from the quote that ends the query id: '", "subscriber": ...,
    "bindings": ')."""

    def __init__(self, encode, errors: str) -> None:
        self.encode = encode
        self.errors = errors  # how the ids are encoded (text: whatever they hold, as before)
        self.empty = encode("")
        self.ask_end = encode(_ASK_ANSWER + "}\n")
        self.ends: dict = {}
        self.middles: dict = {}
        self.end = lambda solutions: encode(_end_text(solutions))
        self.middle = lambda subscriber: encode(_middle_text(subscriber))


_TEXT = _Kind(str, "surrogatepass")
_BYTES = _Kind(str.encode, "strict")


def _escaped_ids(ids: list[str], errors: str = "strict") -> tuple[bytes, bool]:
    """The ids as they go between a line's quotes, in UTF-8, joined by newlines, and
    whether each was as it is (nearly always: then no Python call per id). An id
    that needs JSON escaping makes every id escaped (`encode_basestring`, quotes
    dropped). The bytes to escape are counted by deleting them (10x a regex)."""
    text = "\n".join(ids).encode("utf-8", errors)
    if len(text) - len(text.translate(None, _ESCAPED_BYTES)) == len(ids) - 1:  # the newlines alone
        return text, True
    return "\n".join([escaped[1:-1] for escaped in map(_json_string, ids)]).encode("utf-8", errors), False


def match_lines(pub_id: str, matches) -> str:
    """The output lines (each ending in a newline) of one publication's
    `rtf.matching.results.Matches`: ``match_line`` of each match, in order.

    Made from the matches' parallel lists with C-level maps and joins, so a
    publication that matches thousands of queries costs no Python call per
    match: the bindings text is shared by the queries with the same
    solutions, the subscriber text by the queries of one subscriber, and
    query ids that need no escaping in JSON (nearly all) go in as they are.
    """
    return _lines(_TEXT, pub_id, matches)


def match_bytes(pub_id: str, matches) -> bytes:
    """`match_lines` encoded in UTF-8, for a writer of bytes (no text layer).

    At thousands of matches a publication, encoding a text that is not ASCII
    cost twice what making it did, so such lines are made as bytes from
    encoded parts (the ids encoded at once, then split). ASCII text encodes
    by one copy, cheaper than that split: lines whose publication id and
    answer (one for all) are ASCII are made as text and encoded, and other
    lines that share one answer by `_one_answer_bytes` (no split). The engine's
    matches that share one answer take each line's id and subscriber text, made
    once per query, from the query table's column of them
    (`rtf.matching.id_column.IdColumns.lines_text`): no id or subscriber string
    is read, which was a cache miss each.
    """
    solutions = matches.solutions
    if solutions and solutions.count(solutions[0]) == len(solutions):  # one answer for all
        columns = matches.id_columns() if hasattr(matches, "id_columns") else None
        if columns is not None and not matches.has_ask():
            text = columns.lines_text(matches.slots)
            if text is not None:  # the engine's slots: no id or subscriber read one by one
                return _one_answer_lines(pub_id, solutions[0], text)
        if pub_id.isascii() and _answer_text(solutions[0]).isascii():
            return _lines(_TEXT, pub_id, matches).encode()
        if not matches.has_ask():
            return _one_answer_bytes(pub_id, matches)
    return _lines(_BYTES, pub_id, matches)


def _one_answer_bytes(pub_id: str, matches) -> bytes:
    """`match_bytes` of matches that share one answer (star queries about the subject:
    nearly every publication), whatever the ids, subscribers and publication hold.

    The lines differ only by their ids and subscribers. So the text made is each id
    followed by its subscriber's middle and a newline, which JSON text never holds
    raw (mostly ASCII: encoded by one copy), and each newline is then replaced, in
    C, by the line's end (the answer, the newline) and the next line's head, in
    UTF-8. No id is split out of the encoded text one by one, which had cost
    more than making the lines of a publication id that is not ASCII."""
    ids = matches.query_ids
    _, as_they_are = _escaped_ids(ids, _TEXT.errors)
    if not as_they_are:
        ids = [escaped[1:-1] for escaped in map(_json_string, ids)]
    subscribers = matches.subscribers
    distinct = list(set(subscribers))
    middles = dict(zip(distinct, [m + "\n" for m in _texts(_TEXT.middles, distinct, _middle_text)]))
    if len(distinct) == 1:
        text = middles[distinct[0]].join(ids) + middles[distinct[0]]
    else:
        parts = [None] * (2 * len(ids))
        parts[0::2] = ids
        parts[1::2] = map(middles.__getitem__, subscribers)
        text = "".join(parts)
    return _one_answer_lines(pub_id, matches.solutions[0], text.encode())


def _one_answer_lines(pub_id: str, solutions, text: bytes) -> bytes:
    """The lines of matches that share `solutions`, from `text`: each line's part from its
    query id on to its bindings, followed by a newline (`_one_answer_bytes`)."""
    head = f'{{"publication": {_json_string(pub_id)}, "query": "'.encode()
    end = _texts(_BYTES.ends, [solutions], _BYTES.end)[0]  # the answer, "}\n"
    return head + text[:-1].replace(b"\n", end + head) + end


def _lines(kind: _Kind, pub_id: str, matches):
    """The lines of `match_lines`, made of `kind`'s parts (text or bytes)."""
    n = len(matches)
    if not n:
        return kind.empty
    ids, solutions, subscribers = matches.query_ids, matches.solutions, matches.subscribers
    head = kind.encode(f'{{"publication": {_json_string(pub_id)}, "query": "')
    if solutions.count(solutions[0]) == n:  # one answer for all (identity first: in C)
        ends = _texts(kind.ends, solutions[:1], kind.end) * n
    else:
        ends = _texts(kind.ends, solutions, kind.end)
    if matches.has_ask():
        ends = [kind.ask_end if rq.is_ask else e for rq, e in zip(matches.registered, ends)]
    text, as_they_are = _escaped_ids(ids, kind.errors)
    if kind is _BYTES:
        ids = text.split(b"\n")
    elif not as_they_are:
        ids = text.decode("utf-8", kind.errors).split("\n")
    if ends.count(ends[0]) == n:
        # One answer for all (star queries about the subject): the lines differ only by
        # their ids and subscribers, so the text is the ids, each followed by its
        # subscriber's text up to the next id (one per subscriber, made here), the
        # first id preceded by the text before it and the last followed by the end.
        distinct = list(set(subscribers))
        end = ends[0]
        after = dict(zip(distinct, [middle + end + head for middle in
                                    _texts(kind.middles, distinct, kind.middle)]))
        if len(distinct) == 1:  # one subscriber too: the ids joined by that text
            between = after[distinct[0]]
            ids = list(ids)
            ids[0] = head + ids[0]
            ids[-1] += between[:-len(head)]
            return between.join(ids)
        parts = [None] * (2 * n)
        parts[0::2] = ids
        parts[1::2] = map(after.__getitem__, subscribers)
        parts[0] = head + parts[0]
        parts[-1] = parts[-1][:-len(head)]
        return kind.empty.join(parts)
    # Each id between the quotes that end `head` and start its middle.
    parts = [None] * (4 * n)
    parts[0::4] = [head] * n
    parts[1::4] = ids
    parts[2::4] = _texts(kind.middles, subscribers, kind.middle)
    parts[3::4] = ends
    return kind.empty.join(parts)


def match_ids_bytes(pub_id: str, matches) -> bytes:
    """The line of ``--output-format ids`` for one publication's matches, in UTF-8: its id
    and the ids of the queries it matched, in order, as Lucene Monitor answers; exactly
    ``json.dumps({"publication": pub_id, "queries": [...]}, ensure_ascii=False)`` and a
    newline. The engine's matches take their ids, escaped, from the query table's column
    of them (`rtf.matching.id_column.IdColumns.ids_text`: no id string read); others are
    joined in C as `match_bytes` joins them, escaped only if one needs it.

    >>> from rtf.engine import Match
    >>> found = [Match("q1", None, frozenset({()})), Match('say "hi"', None, frozenset({()}))]
    >>> match_ids_bytes("http://ex/a", found)
    b'{"publication": "http://ex/a", "queries": ["q1", "say \\\\"hi\\\\""]}\\n'
    """
    columns = matches.id_columns() if hasattr(matches, "id_columns") else None
    text = columns.ids_text(matches.slots) if columns is not None else None
    if text is not None:  # the engine's slots: the ids gathered from the table's column, in C
        if not text:
            return b""
        text = memoryview(text)[:-len(IDS_SEPARATOR)]  # (each id is followed by the separator)
    else:
        ids = matches.query_ids if hasattr(matches, "query_ids") else [m.query_id for m in matches]
        if not ids:
            return b""
        # Joined by their separator at once; the bytes to escape are counted as `_escaped_ids`
        # counts them: the separators' quotes alone, or every id is escaped.
        text = IDS_SEPARATOR.join(ids).encode()
        if len(text) - len(text.translate(None, _ESCAPED_BYTES)) != 2 * (len(ids) - 1):
            text = IDS_SEPARATOR.join([escaped[1:-1] for escaped in map(_json_string, ids)]).encode()
    return b"".join((b'{"publication": ', _json_string(pub_id).encode(), b', "queries": ["',
                     text, b'"]}\n'))


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
    """A match as a SPARQL 1.1 Query Results JSON document (ASK: a boolean). A CONSTRUCT
    match has no such document: it is its triples, each term as SPARQL JSON writes terms."""
    if m.is_ask:
        return {"head": {}, "boolean": True}
    if isinstance(m.solutions, Triples):
        return {"triples": [{"subject": sparql_term(s), "predicate": sparql_term(p),
                             "object": sparql_term(o)} for s, p, o in sorted(m.solutions)]}
    rows = m.solutions if isinstance(m.solutions, OrderedRows) else sorted(m.solutions)
    return {"head": {"vars": list(registered.query.projection)},
            "results": {"bindings": [{v: sparql_term(t) for v, t in sol} for sol in rows]}}


def sparql_json_line(pub_id: str, m, registered) -> str:
    """One output line of --output-format sparql-json: the results document
    plus "publication", "query" and "subscriber"."""
    doc = {"publication": pub_id, "query": m.query_id, "subscriber": m.subscriber}
    doc.update(sparql_json(m, registered))
    return json.dumps(doc, ensure_ascii=False)


# ------------------------------------------------------------------ exports


def query_record_line(query_id: str, text: str, subscriber: str | None, metadata) -> str:
    """One line of a query file (`rtf.io.queries`) that reads back as this query: id, text,
    subscriber and, when there is some, metadata (``rtf index export``)."""
    record = {"id": query_id, "query": text, "subscriber": subscriber}
    if metadata:
        record["metadata"] = metadata
    return json.dumps(record, ensure_ascii=False) + "\n"


def taxonomy_lines(taxonomy) -> list[str]:
    """`taxonomy` as N-Triples that `rtf.io.taxonomy.Taxonomy.from_file` reads back as it:
    its ``rdfs:subClassOf`` edges, and an ``owl:Class`` line for a class without any."""
    from rtf.query.terms import RDF_TYPE, RDFS_SUBCLASSOF

    lines = []
    for cls, parents in sorted(taxonomy.parent_table().items()):
        lines += [f"{cls} <{RDFS_SUBCLASSOF}> {parent} .\n" for parent in parents]
        if not parents and not taxonomy.descendants_or_self(cls) - {cls}:
            lines.append(f"{cls} <{RDF_TYPE}> <http://www.w3.org/2002/07/owl#Class> .\n")
    return lines
