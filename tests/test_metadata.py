"""Query metadata (issue 26 item 3): JSON values only, checked at `register`; a deep
read-only copy that `json.dumps` takes; a query file's "metadata" object is the
metadata, so `GET /queries` lines read back without nesting twice."""

from __future__ import annotations

import copy
import json
import math
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rtf import Engine
from rtf.cli import main
from rtf.io.metadata import MAX_METADATA_DEPTH, Metadata, frozen
from rtf.io.queries import QueryFileError, load_queries
from rtf.server.querystore import StoredQuery

ASK = "ASK { ?s <http://ex.org/p> ?o }"
NT = '<http://ex.org/a> <http://ex.org/p> "x" .\n'

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(blacklist_categories=("Cs",))),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20)
OBJECTS = st.dictionaries(st.text(max_size=5), JSON, min_size=1, max_size=4)


@settings(max_examples=200, deadline=None)
@given(metadata=OBJECTS)
def test_json_metadata_comes_back_equal_and_json_dumpable(metadata):
    engine = Engine("naive")
    engine.register(ASK, "q", metadata=metadata)
    got = engine.get("q").metadata
    assert got == metadata
    assert json.loads(json.dumps(got)) == json.loads(json.dumps(metadata))
    assert pickle.loads(pickle.dumps(got)) == metadata and type(pickle.loads(pickle.dumps(got))) is Metadata


BAD = st.sampled_from([object(), {1, 2}, b"bytes", 1j, math.nan, math.inf, "\ud800", Engine])


@settings(max_examples=100, deadline=None)
@given(metadata=OBJECTS, bad=BAD, data=st.data())
def test_a_value_that_is_not_json_anywhere_is_refused_and_nothing_is_registered(metadata, bad, data):
    # Put `bad` somewhere in `metadata`: at a key, inside a list, or inside a nested object.
    path = data.draw(st.lists(st.sampled_from(["list", "dict"]), max_size=3))
    value = bad
    shown = ""
    for step in reversed(path):
        value, shown = ([value], f"[0]{shown}") if step == "list" else ({"k": value}, f"['k']{shown}")
    metadata = {**metadata, "bad": value}
    engine = Engine("naive")
    with pytest.raises((TypeError, ValueError)) as e:
        engine.register(ASK, "q", metadata=metadata)
    assert f"metadata['bad']{shown}" in str(e.value)
    assert len(engine) == 0 and "q" not in engine
    engine.register(ASK, "q", metadata={"fine": 1})  # the id is still free


@pytest.mark.parametrize("metadata, error", [
    ({"a": object()}, TypeError), ({1: "x"}, TypeError), ({"a": {2: "x"}}, TypeError),
    ({"a": float("nan")}, ValueError), ({"a": [float("-inf")]}, ValueError),
    ({"\udc80": 1}, ValueError), (["not", "a", "mapping"], TypeError), ("text", TypeError),
])
def test_clear_errors(metadata, error):
    with pytest.raises(error, match="metadata"):
        Engine("naive").register(ASK, "q", metadata=metadata)


def test_too_deep_is_refused():
    deep: dict = {}
    node = deep
    for _ in range(MAX_METADATA_DEPTH + 1):
        node["a"] = {}
        node = node["a"]
    with pytest.raises(ValueError, match="nests more than"):
        frozen(deep)


def test_the_copy_is_deep_and_read_only():
    original = {"tags": ["rio", {"year": 2016}], "topic": "sport"}
    engine = Engine("naive")
    engine.register(ASK, "q", metadata=original)
    original["tags"].append("changed after")          # the caller's object is not shared
    original["tags"][1]["year"] = 1900
    got = engine.get("q").metadata
    assert got == {"tags": ["rio", {"year": 2016}], "topic": "sport"}
    for change in (lambda: got["tags"].append("x"), lambda: got["tags"][1].update(year=1),
                   lambda: got.__setitem__("x", 1), lambda: got["tags"].sort(),
                   lambda: got.pop("topic"), lambda: got["tags"].__iadd__(["x"])):
        with pytest.raises(TypeError, match="read-only"):
            change()
    assert engine.get("q").metadata == {"tags": ["rio", {"year": 2016}], "topic": "sport"}
    mine = copy.deepcopy(got)                          # the way to a copy to change
    mine["tags"].append("x")
    assert type(mine) is dict and type(mine["tags"]) is list and len(got["tags"]) == 2


def test_metadata_survives_save_and_load(tmp_path):
    engine = Engine("rtfs")
    engine.register(ASK, "q", metadata={"a": [1, {"b": None}], "c": 1.5})
    engine.save(tmp_path / "x.idx")
    loaded = Engine.load(tmp_path / "x.idx").get("q").metadata
    assert loaded == {"a": [1, {"b": None}], "c": 1.5} and isinstance(loaded["a"], list)
    with pytest.raises(TypeError):
        loaded["a"].append(2)


# ------------------------------------------------------------ query files

def _write(tmp_path, *records) -> str:
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def test_a_metadata_object_is_the_metadata_not_nested(tmp_path):
    path = _write(tmp_path, {"id": "a", "query": ASK, "metadata": {"topic": "sport"}, "extra": 1},
                  {"id": "b", "query": ASK, "topic": "old form"})
    assert [r["metadata"] for r in load_queries(path)] == [{"topic": "sport", "extra": 1},
                                                           {"topic": "old form"}]


@pytest.mark.parametrize("record, message", [
    ({"id": "a", "query": ASK, "metadata": ["x"]}, '"metadata" must be a JSON object'),
    ({"id": "a", "query": ASK, "metadata": {"t": 1}, "t": 2}, "'t' is both a field and a key"),
])
def test_metadata_field_errors(tmp_path, record, message):
    with pytest.raises(QueryFileError, match=message):
        load_queries(_write(tmp_path, record))


def test_get_queries_lines_read_back_with_the_same_metadata(tmp_path, capsys):
    """The lines `GET /queries` shows, fed to `rtf match --with-metadata`, echo the same metadata."""
    served = [StoredQuery(1, "a", ASK, "alice", {"topic": "sport", "tags": ["x"]}).as_json(),
              StoredQuery(2, "b", ASK, None, None).as_json()]
    path = _write(tmp_path, *served)
    pubs = tmp_path / "p.nt"
    pubs.write_text(NT)
    assert main(["match", "--queries", path, "--publications", str(pubs), "--with-metadata"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["metadata"] for line in lines] == [s["metadata"] for s in served]
    # ... and what --with-metadata writes reads back the same way again
    again = _write(tmp_path, *({"id": line["query"], "query": ASK, "metadata": line["metadata"]}
                               for line in lines))
    assert [r["metadata"] for r in load_queries(again)] == [s["metadata"] for s in served]
