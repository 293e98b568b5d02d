"""Issue 37 item 3: no stored row can break a listing of `rtf serve`.

Metadata nested 300 levels was accepted (201), after which ``GET /queries``
answered 500 (pydantic's serialization depth) for everyone until the row was
deleted. Now metadata is bounded when accepted (64 levels, 65,536 bytes of
JSON: `rtf.io.metadata`), and a row beyond the bounds -- written by hand into
SQLite, or by an older rtf -- is shown with ``"unreadable"`` saying why, its
bad fields replaced, for that row only; start-up skips it instead of failing.

In-process (httpx's ASGI transport): the routes and the start-up are what is
tested, not the HTTP server.
"""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

httpx = pytest.importorskip("httpx")

from rtf.io.metadata import MAX_METADATA_BYTES, MAX_METADATA_DEPTH  # noqa: E402
from rtf.server.querystore import READ_METADATA_CHARS, QueryStore  # noqa: E402
from tests.test_server_api import in_process  # noqa: E402

NDJSON = {"Content-Type": "application/x-ndjson"}
QUERY = 'ASK { ?s <http://ex.org/rows/p> ?t FILTER ftcontains(?t, "rio") }'


def nested(depth: int, kind: str = "object") -> dict:
    """Metadata whose containers nest `depth` levels (the top object is the first)."""
    inner: object = 1
    for level in range(depth - 1):
        inner = {"a": inner} if kind == "object" or level % 2 else [inner]
    return {"a": inner} if depth else {}


# ------------------------------------------------------------ the probe


@pytest.mark.parametrize("depth", [300, 500])
def test_deep_metadata_is_refused_and_the_listing_stays_200(tmp_path, depth):
    """The probe: metadata nesting 300-500 levels was 201, then GET /queries was 500."""
    async def check(client, broker):
        r = await client.put("/queries/deep", json={"query": QUERY, "metadata": nested(depth)})
        assert r.status_code == 400, r.text
        assert r.json()["error"].startswith(f"metadata nests more than {MAX_METADATA_DEPTH} levels")
        r = await client.post("/queries", headers=NDJSON, content=json.dumps(
            {"id": "deep", "query": QUERY, "metadata": nested(depth, "mixed")}) + "\n")
        assert r.status_code == 400 and r.json()["error"].startswith("<body>:1: metadata nests")
        assert (await client.get("/queries")).status_code == 200
        assert len(broker.engine) == 0

    in_process(tmp_path, check)


def test_the_bounds_are_inclusive_and_said_in_the_openapi_schema(tmp_path):
    at_most = {"k": "x" * (MAX_METADATA_BYTES - len('{"k": ""}'))}
    assert len(json.dumps(at_most).encode()) == MAX_METADATA_BYTES

    async def check(client, broker):
        for qid, metadata in (("deepest", nested(MAX_METADATA_DEPTH)),
                              ("largest", at_most)):
            assert (await client.put(f"/queries/{qid}", json={"query": QUERY, "metadata": metadata}
                                     )).status_code == 201
            assert (await client.get(f"/queries/{qid}")).json()["metadata"] == metadata
        for metadata in (nested(MAX_METADATA_DEPTH + 1), {"k": at_most["k"] + "é"}):
            r = await client.put("/queries/over", json={"query": QUERY, "metadata": metadata})
            assert r.status_code == 400, r.text
        listed = (await client.get("/queries")).json()["queries"]
        assert [q["id"] for q in listed] == ["deepest", "largest"]
        schema = (await client.get("/openapi.json")).json()["components"]["schemas"]
        field = schema["QueryIn"]["properties"]["metadata"]
        assert field["x-max-depth"] == MAX_METADATA_DEPTH and field["x-max-bytes"] == MAX_METADATA_BYTES
        assert f"{MAX_METADATA_BYTES} bytes" in field["description"]
        assert "unreadable" in schema["StoredOut"]["properties"]

    in_process(tmp_path, check)


# ------------------------------------------------------------ rows written by hand


def hand_written(folder: Path, rows: list[tuple], typed: bool = True) -> None:
    """Rows put into a data folder's table as another program could: each value is
    written as given (str as TEXT, bytes as BLOB, ("bad", bytes) as TEXT that is not
    UTF-8, numbers, NULL); the table made by rtf, or (not `typed`) made by hand with
    the same columns, no types and no NOT NULL."""
    folder.mkdir(parents=True, exist_ok=True)
    QueryStore(folder).close()  # rtf's tables and identity, then by hand:
    db = sqlite3.connect(folder / QueryStore.FILE)
    if not typed:
        db.executescript("""
            ALTER TABLE queries RENAME TO old;
            CREATE TABLE queries (seq INTEGER PRIMARY KEY AUTOINCREMENT, id UNIQUE, query,
                                  subscriber, metadata);
            INSERT INTO queries SELECT * FROM old; DROP TABLE old;
            CREATE INDEX queries_by_subscriber ON queries (subscriber, seq);""")
    for values in rows:
        sql, args = [], []
        for value in values:
            if isinstance(value, tuple):  # TEXT holding bytes that are not UTF-8
                sql.append("CAST(? AS TEXT)")
                args.append(value[1])
            else:
                sql.append("?")
                args.append(value)
        db.execute(f"INSERT INTO queries (id, query, subscriber, metadata) VALUES ({', '.join(sql)})",
                   args)
    db.commit()
    db.close()


def depth_of(value) -> int:
    if isinstance(value, dict):
        return 1 + max(map(depth_of, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth_of, value), default=0)
    return 0


def fine(value) -> bool:
    """Finite numbers, strings and keys without lone surrogates, all the way down."""
    if isinstance(value, dict):
        return all(fine(k) and fine(v) for k, v in value.items())
    if isinstance(value, list):
        return all(map(fine, value))
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, str):
        return not any(0xD800 <= ord(c) <= 0xDFFF for c in value)
    return True


def shown_metadata(stored) -> dict | None:
    """What GET shows of stored metadata (None: it is refused, with "unreadable")."""
    if stored is None or stored == "":
        return {}
    if not isinstance(stored, str) or len(stored) > READ_METADATA_CHARS:
        return None
    try:
        value = json.loads(stored)
    except (ValueError, RecursionError):
        return None
    if value is None:
        return {}
    if (not isinstance(value, dict) or not fine(value) or depth_of(value) > MAX_METADATA_DEPTH
            or len(json.dumps(value, ensure_ascii=False).encode()) > MAX_METADATA_BYTES):
        return None
    return value


JSON_LEAVES = (st.none() | st.booleans() | st.integers(-10**30, 10**30) | st.floats()
               | st.text(max_size=8) | st.sampled_from(["\ud800", "a\udfffb", "é" * 3]))
JSON = st.recursive(JSON_LEAVES, lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=4) | st.just("\udc80"), inner, max_size=3),
                    max_leaves=10)


@st.composite
def stored_metadata(draw):
    """Metadata text as a table may hold it: JSON of any shape, depth and size (as this
    rtf writes it, or an older one with NaN and escapes), or anything else."""
    kind = draw(st.sampled_from(["json", "deep", "large", "raw"]))
    if kind == "raw":
        return draw(st.sampled_from([None, "", "null", "not json", "[1, 2]", "5", '"text"',
                                     b'{"blob": 1}', ("bad", b'{"k": "\xff"}'), 7, 1.5,
                                     '{"a": NaN}', '{"a": Infinity}', '{"a": 1e400}',
                                     '{"n": ' + "9" * 5000 + "}", '{"s": "\\ud800"}',
                                     "[" * 100_000, '{"a": 1}   ' + " " * READ_METADATA_CHARS]))
    if kind == "deep":
        value = nested(draw(st.integers(MAX_METADATA_DEPTH - 2, 600)),
                       draw(st.sampled_from(["object", "mixed"])))
    elif kind == "large":
        size = draw(st.integers(MAX_METADATA_BYTES - 40, MAX_METADATA_BYTES + 40))
        value = {"k": draw(st.sampled_from(["x", "é"])) * size}
        value["k"] = value["k"][:max(0, size - len('{"k": ""}'))]
    else:
        value = draw(st.dictionaries(st.text(max_size=4), JSON, max_size=4))
    ascii_only = draw(st.booleans()) or not fine(value)  # a lone surrogate: escaped
    try:
        return json.dumps(value, ensure_ascii=ascii_only)
    except RecursionError:
        return "[" * 10 + "]" * 10


TEXTS = st.one_of(st.text(max_size=12), st.sampled_from(["", "a\nb", "a/b", "%2F", "x" * 2000,
                                                          "é", "\u2028"]))
ODD = st.sampled_from([b"blob", ("bad", b"a\xffb"), ("bad", b"\xed\xa0\x80"), 42, 3.5])
QUERIES = st.sampled_from([QUERY, "ASK { ?s ?p ?o }", "not a query", "SELECT"])


@st.composite
def rows(draw):
    found, ids = [], set()
    for n in range(draw(st.integers(1, 5))):
        qid = draw(st.one_of(TEXTS.map(lambda t: f"{t}{n}"), ODD, st.just(None)))
        if qid is None and n:  # one NULL id at most a table (and only the first row)
            qid = f"q{n}"
        key = repr(qid)
        if key in ids:
            continue
        ids.add(key)
        found.append((qid, draw(QUERIES | ODD | st.just(None)),
                      draw(st.none() | st.sampled_from(["alice", "bob", "a\nb"]) | ODD),
                      draw(stored_metadata())))
    return found


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.data_too_large,
                                                                  HealthCheck.function_scoped_fixture])
@given(table=rows(), limit=st.integers(1, 3), typed=st.booleans())
def test_fuzz_every_stored_row_through_every_listing_route(tmp_path_factory, table, limit, typed):
    """Rows of every shape written into the table by hand: the server starts, every
    listing route answers 200 JSON, each row shown as it is when it could be
    accepted today, else with "unreadable" for that row only; only clean rows match."""
    folder = tmp_path_factory.mktemp("rows") / "b"
    if typed:  # rtf's table: NOT NULL id and query, and TEXT columns make numbers text
        table = [tuple(str(v) if type(v) in (int, float) else v
                       for v in (qid if qid is not None else "", text if text is not None else "",
                                 *rest))
                 for qid, text, *rest in table]
    hand_written(folder, table, typed)

    async def check(client, broker):
        got = (await client.get("/queries")).json()["queries"]
        assert len(got) == len(table)
        paged, after = [], 0
        while True:
            page = (await client.get("/queries", params={"after": after, "limit": limit})).json()
            paged += page["queries"]
            if page["next"] is None:
                break
            after = page["next"]
        assert paged == got
        registrable = 0
        for (qid, text, subscriber, metadata), shown in zip(table, got):
            clean = all(type(v) is str for v in (qid, text)) and (
                subscriber is None or type(subscriber) is str)
            expected = shown_metadata(metadata)
            assert shown["metadata"] == (expected if expected is not None else {})
            assert ("unreadable" in shown) == (not clean or expected is None), (shown, metadata)
            if clean:
                assert (shown["id"], shown["query"], shown["subscriber"]) == (qid, text, subscriber)
                registrable += qid != "" and text in (QUERY, "ASK { ?s ?p ?o }")
                if qid:
                    one = await client.get("/queries/" + quote(qid, safe=""))
                    assert one.status_code == 200 and one.json() == shown
            if type(subscriber) is str:
                mine = (await client.get("/queries", params={"subscriber": subscriber})).json()
                assert shown in mine["queries"]
        assert len(broker.engine) == registrable
        assert broker.registry.startup["failed"] == len(table) - registrable

    in_process(folder, check)


def test_a_row_shown_unreadable_can_be_deleted_or_replaced_and_the_others_are_untouched(tmp_path):
    hand_written(tmp_path, [("good", QUERY, "alice", '{"k": [1, 2]}'),
                            ("bad", QUERY, "alice", json.dumps(nested(300))),
                            ("nan", QUERY, None, '{"x": NaN}'),
                            ("odd", QUERY, ("bad", b"bo\xffb"), None)])

    async def check(client, broker):
        got = {q["id"]: q for q in (await client.get("/queries")).json()["queries"]}
        assert got["good"] == {"id": "good", "subscriber": "alice", "query": QUERY,
                               "metadata": {"k": [1, 2]}}
        assert got["bad"]["metadata"] == {} and "nests more than 64" in got["bad"]["unreadable"]
        assert "NaN" in got["nan"]["unreadable"] or "nan" in got["nan"]["unreadable"]
        assert "subscriber is not valid UTF-8" in got["odd"]["unreadable"]
        assert len(broker.engine) == 3  # their queries match (their metadata is withheld), not odd's
        assert (await client.delete("/queries/bad")).status_code == 204
        assert (await client.put("/queries/odd", json={"query": QUERY})).status_code == 200
        assert [q["id"] for q in (await client.get("/queries")).json()["queries"]] == [
            "good", "nan", "odd"]

    in_process(tmp_path, check)
