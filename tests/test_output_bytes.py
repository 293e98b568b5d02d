"""`rtf match` writes bytes: `match_bytes` must be exactly `match_lines` in UTF-8,
whichever way it makes them (as text then encoded, or from encoded parts), and
`rtf match` must write them where it wrote text before (a file, stdout, a
stdout without a binary layer)."""

from __future__ import annotations

import contextlib
import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rtf import Engine, Publication
from rtf.cli import main
from rtf.engine import RegisteredQuery
from rtf.io import output
from rtf.io.output import match_bytes, match_lines
from rtf.matching.results import Matches
from tests.test_results import _QUERY, _text, matches

_ids = st.lists(st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=6),
                min_size=1, max_size=6, unique=True).map(sorted)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(pub=_text, found=matches())
def test_match_bytes_are_match_lines_in_utf8(pub, found):
    expected = match_lines(pub, found).encode()
    assert match_bytes(pub, found) == expected
    # both ways of making them, whatever the publication id says
    assert output._lines(output._BYTES, pub, found) == expected
    assert output._lines(output._TEXT, pub, found).encode() == expected


@settings(max_examples=300, deadline=None)
@given(pub=_text, found=matches())
def test_the_lines_of_one_answer_are_made_as_bytes_as_the_text_is(pub, found):
    """`_one_answer_bytes` (a publication id that is not ASCII, every match with one answer),
    tried on any publication id, ids and subscribers, ASK queries excepted (its caller's)."""
    shared = Matches(found.query_ids, [found.solutions[0]] * len(found) if len(found) else [],
                     found.registered, frozenset(), False)
    if len(shared):
        assert output._one_answer_bytes(pub, shared) == match_lines(pub, shared).encode()


@pytest.mark.parametrize("pub", ["http://ex/a", "http://ex/Zürich", "http://ex/東京", "http://ex/😀"])
@pytest.mark.parametrize("ids", [["q1", "q2", "q3"], ["a\nb", "q2"], ['say "hi"', "q\\1", "q\x00"],
                                 ["é", "q\t", "😀"], ["only"]])
@pytest.mark.parametrize("subscribers", [[None], ["alice"], [None, "bob", "ça"]])
def test_match_bytes_escape_ids_and_answers_as_json_does(pub, ids, subscribers):
    registered = [RegisteredQuery(q, _QUERY, subscribers[i % len(subscribers)], False)
                  for i, q in enumerate(ids)]
    solutions = [frozenset({(("s", f"<{pub}>"),)})] * len(ids)
    found = Matches(ids, solutions, registered, frozenset(), False)
    got = match_bytes(pub, found)
    lines = [json.loads(line) for line in got.decode().splitlines()]
    assert lines == [{"publication": pub, "query": q, "subscriber": r.subscriber,
                      "bindings": [{"s": f"<{pub}>"}]} for q, r in zip(ids, registered)]
    assert got == "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode()


def test_an_id_that_is_not_unicode_fails_in_bytes_as_the_text_writer_did():
    found = Matches(["q\ud800"], [frozenset({()})], [RegisteredQuery("q\ud800", _QUERY, None, False)],
                    frozenset(), False)
    assert "q\ud800" in match_lines("http://ex/a", found)  # text keeps what it is given
    for pub in ("http://ex/a", "http://ex/é"):
        with pytest.raises(UnicodeEncodeError):
            match_bytes(pub, found)


@pytest.fixture()
def files(tmp_path):
    queries = tmp_path / "q.jsonl"
    queries.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in [
        {"id": "q1", "query": "SELECT ?s WHERE { ?s <http://ex/p> ?o }", "subscriber": "ça"},
        {"id": "q2", "query": "SELECT ?o WHERE { ?s <http://ex/p> ?o }"},
        {"id": "q3", "query": "ASK { ?s <http://ex/p> ?o }"}]), encoding="utf-8")
    pubs = tmp_path / "p.nt"
    pubs.write_text('<http://ex/Zürich> <http://ex/p> "été" .\n<http://ex/a> <http://ex/p> "b" .\n',
                    encoding="utf-8")
    return queries, pubs


def _expected(pubs) -> str:
    engine = Engine()
    engine.register("SELECT ?s WHERE { ?s <http://ex/p> ?o }", "q1", subscriber="ça")
    engine.register("SELECT ?o WHERE { ?s <http://ex/p> ?o }", "q2")
    engine.register("ASK { ?s <http://ex/p> ?o }", "q3")
    from rtf.io.reader import read_publications
    return "".join(match_lines(p.id, engine.match(p)) for p in read_publications(str(pubs)))


def test_rtf_match_writes_the_lines_to_a_file(files, tmp_path):
    queries, pubs = files
    out = tmp_path / "out.jsonl"
    assert main(["match", "--queries", str(queries), "--publications", str(pubs), "--output", str(out)]) == 0
    assert out.read_bytes() == _expected(pubs).encode()
    assert len(out.read_bytes().splitlines()) == 6


def test_rtf_match_writes_the_lines_after_what_stdout_held(files, monkeypatch):
    queries, pubs = files
    stdout = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")  # buffers text, as a pipe's does
    monkeypatch.setattr("sys.stdout", stdout)
    stdout.write("before\n")  # still in the text layer: must come first
    assert main(["match", "--queries", str(queries), "--publications", str(pubs)]) == 0
    stdout.write("after\n")
    stdout.flush()
    assert stdout.buffer.getvalue() == b"before\n" + _expected(pubs).encode() + b"after\n"


def test_rtf_match_writes_text_to_a_stdout_without_bytes(files):
    queries, pubs = files
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        assert main(["match", "--queries", str(queries), "--publications", str(pubs)]) == 0
    assert text.getvalue() == _expected(pubs)


def test_rtf_match_renderers_with_extras_write_utf8(files, tmp_path):
    queries, pubs = files
    out = tmp_path / "out.jsonl"
    assert main(["match", "--queries", str(queries), "--publications", str(pubs), "--output", str(out),
                 "--with-metadata", "--output-format", "sparql-json"]) == 0
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [(d["publication"], d["query"]) for d in lines] == [
        ("http://ex/Zürich", "q1"), ("http://ex/Zürich", "q2"), ("http://ex/Zürich", "q3"),
        ("http://ex/a", "q1"), ("http://ex/a", "q2"), ("http://ex/a", "q3")]
    assert lines[1]["results"]["bindings"] == [{"o": {"type": "literal", "value": "été"}}]
