"""Replace by id and get an index's queries back out (issue 40, item 6; the plural of item 14):
`Engine.register(..., replace=True)` and `register_many(replace=True)`, atomic; `rtf index add
--replace`; `rtf index list` and `rtf index export`, whose file `rtf index build` turns back
into the same index (queries, subscribers, metadata, taxonomy and text analysis)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rtf import Engine, Publication, QueryError, TextAnalysis
from rtf.cli import main

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
EX = "http://example.org/news/"
PUB = Publication.from_rdf("a1", f'<{EX}a1> <{EX}title> "Olympic games open in Rio" .\n'
                                 f'<{EX}a1> <{EX}tag> <{EX}Sport> .')


def ask(word: str) -> str:
    return f'ASK {{ ?a <{EX}title> ?t FILTER ftcontains(?t, "{word}") }}'


def matched(engine: Engine) -> dict[str, str | None]:
    return {m.query_id: m.subscriber for m in engine.match(PUB)}


# ------------------------------------------------------------------ Engine


@pytest.mark.parametrize("algorithm", ["rtfs", "rtfm", "naive", "ibroker"])
def test_register_replace_swaps_the_query_its_subscriber_and_metadata(algorithm):
    engine = Engine(algorithm)
    engine.register(ask("olympic"), "q1", subscriber="alice", metadata={"n": 1})
    engine.register(ask("rio"), "q2")
    assert matched(engine) == {"q1": "alice", "q2": None}
    with pytest.raises(ValueError, match="already registered"):
        engine.register(ask("chess"), "q1")  # without replace: still refused
    assert engine.register(ask("chess"), "q1", subscriber="bob", metadata={"n": 2}, replace=True) == "q1"
    assert matched(engine) == {"q2": None}
    assert [rq.id for rq in engine.queries()] == ["q1", "q2"]  # kept its place
    rq = engine.get("q1")
    assert (rq.subscriber, dict(rq.metadata)) == ("bob", {"n": 2})
    engine.register(ask("games"), "q1", replace=True)
    assert matched(engine) == {"q1": None, "q2": None}
    assert engine.register(ask("rio"), "new", replace=True) == "new"  # no such id: registered
    assert len(engine) == 3


@pytest.mark.parametrize("algorithm", ["rtfs", "naive"])
def test_a_refused_replacement_leaves_the_old_query_registered_and_matching(algorithm):
    engine = Engine(algorithm)
    engine.register(ask("olympic"), "q1", subscriber="alice")
    for bad in ("ASK { ?a <x", 'ASK { ?a ?p ?t FILTER regex(?t, "(") }'):
        with pytest.raises(QueryError):
            engine.register(bad, "q1", subscriber="bob", replace=True)
        assert matched(engine) == {"q1": "alice"}
        assert engine.stats()["queries"] == 1 and engine.queries()[0].subscriber == "alice"


def test_register_many_replace_is_undone_whole_when_a_record_fails():
    engine = Engine()
    engine.register(ask("olympic"), "q1", subscriber="alice")
    engine.register(ask("rio"), "q2", subscriber="alice")
    with pytest.raises(QueryError):
        engine.register_many([(ask("chess"), "q1", "bob", None), (ask("games"), "q3", None, None),
                              ("ASK {", "q2", None, None)], replace=True)
    assert matched(engine) == {"q1": "alice", "q2": "alice"}
    assert [rq.id for rq in engine.queries()] == ["q1", "q2"]
    assert engine.register_many([(ask("chess"), "q1", "bob", None)], replace=True) == ["q1"]
    assert matched(engine) == {"q2": "alice"}


WORDS = ["olympic", "games", "rio", "chess", "open*", "BAD"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(st.tuples(st.sampled_from(["q1", "q2", "q3"]), st.sampled_from(WORDS),
                                st.sampled_from([None, "alice", "bob"])), max_size=12),
       algorithm=st.sampled_from(["rtfs", "rtfm", "naive", "ibroker"]))
def test_any_sequence_of_replacements_matches_as_a_fresh_engine_of_the_final_queries(steps, algorithm):
    """Replacements, refused ones among them, leave the engine as if built from what stands."""
    engine = Engine(algorithm)
    standing: dict[str, tuple[str, str | None]] = {}
    for qid, word, subscriber in steps:
        text = "ASK { ?a <x" if word == "BAD" else ask(word)
        try:
            engine.register(text, qid, subscriber=subscriber, replace=True)
        except QueryError:
            assert word == "BAD"
            continue
        standing[qid] = (text, subscriber)
    fresh = Engine(algorithm)
    for qid, (text, subscriber) in standing.items():
        fresh.register(text, qid, subscriber=subscriber)
    assert matched(engine) == matched(fresh)
    assert sorted((rq.id, rq.subscriber) for rq in engine.queries()) == \
        sorted((rq.id, rq.subscriber) for rq in fresh.queries())


# ------------------------------------------------------------------ rtf index


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


RECORDS = [
    {"id": "q1", "query": ask("olympic"), "subscriber": "alice", "metadata": {"tags": ["sport"], "n": 1}},
    {"id": "q2", "query": ask("rio"), "subscriber": None},
    {"id": "odd\tid é", "query": ask("games"), "subscriber": "bob\nsmith", "priority": 3},
    {"id": "q4", "query": f"PREFIX ex: <{EX}> SELECT ?a WHERE {{ ?a a/rdfs:subClassOf* ex:Report }}",
     "subscriber": "carol"},
]


@pytest.fixture
def index(tmp_path, capsys):
    idx = tmp_path / "q.idx"
    code, _, err = run(capsys, "index", "build", "--queries", write_jsonl(tmp_path / "q.jsonl", RECORDS),
                       "--output", idx, "--taxonomy", EXAMPLES / "news_ontology.nt", "--stem", "english")
    assert code == 0, err
    return idx


def test_index_list_shows_ids_and_subscribers_one_line_each(index, capsys):
    code, out, _ = run(capsys, "index", "list", index)
    assert code == 0
    assert out.splitlines() == ["q1\talice", "q2\t", "odd\\tid é\tbob\\nsmith", "q4\tcarol"]
    code, out, _ = run(capsys, "index", "list", index, "--json")
    assert [json.loads(line) for line in out.splitlines()] == [
        {"id": r["id"], "subscriber": r["subscriber"]} for r in RECORDS]
    code, out, _ = run(capsys, "index", "list", index, "--subscriber", "alice")
    assert out == "q1\talice\n"


def test_index_export_builds_back_into_the_same_index(index, tmp_path, capsys):
    exported = tmp_path / "exported.jsonl"
    onto = tmp_path / "onto.nt"
    code, out, err = run(capsys, "index", "export", index, "--taxonomy-output", onto)
    assert code == 0
    exported.write_text(out, encoding="utf-8")
    # the message says how: the algorithm, the text analysis and the taxonomy
    assert "--algorithm rtfs" in err and "--stem english" in err and f"--taxonomy {onto}" in err
    records = [json.loads(line) for line in out.splitlines()]
    assert [r["id"] for r in records] == [r["id"] for r in RECORDS]
    assert records[0]["metadata"] == {"tags": ["sport"], "n": 1}
    assert records[2]["metadata"] == {"priority": 3} and records[2]["subscriber"] == "bob\nsmith"
    again = tmp_path / "again.idx"
    assert run(capsys, "index", "build", "--queries", exported, "--output", again, "--taxonomy", onto,
               "--stem", "english")[0] == 0
    old, new = Engine.load(str(index)), Engine.load(str(again))
    assert [(rq.id, rq.subscriber, dict(rq.metadata), rq.query.text) for rq in old.queries()] == \
        [(rq.id, rq.subscriber, dict(rq.metadata), rq.query.text) for rq in new.queries()]
    assert old.text_analysis == new.text_analysis == TextAnalysis(stem="english")
    assert old.taxonomy.parent_table() == new.taxonomy.parent_table()
    assert run(capsys, "index", "export", again)[1] == out  # a fixed point
    pubs = EXAMPLES / "news.nt"
    assert run(capsys, "match", "--index", index, "--publications", pubs)[1] == \
        run(capsys, "match", "--index", again, "--publications", pubs)[1]


def test_index_export_says_which_stop_words_the_index_was_built_with(tmp_path, capsys):
    words = tmp_path / "stop.txt"
    words.write_text("le\nla\n", encoding="utf-8")
    idx = tmp_path / "q.idx"
    assert run(capsys, "index", "build", "--queries", write_jsonl(tmp_path / "q.jsonl", RECORDS[:2]),
               "--stop-words-file", words, "--output", idx)[0] == 0
    code, out, err = run(capsys, "index", "export", idx, "--output", tmp_path / "out.jsonl")
    assert code == 0 and out == ""
    assert f"--queries {tmp_path / 'out.jsonl'} --algorithm rtfs --stop-words-file WORDS`" in err
    assert "WORDS: its stop words" in err and "ONTO" not in err


def test_index_export_to_a_file_is_written_whole(index, tmp_path, capsys):
    out = tmp_path / "out.jsonl"
    assert run(capsys, "index", "export", index, "--output", out)[0] == 0
    assert out.read_text(encoding="utf-8") == run(capsys, "index", "export", index)[1]


def test_index_add_replace_updates_by_id_and_says_so(index, tmp_path, capsys):
    changed = write_jsonl(tmp_path / "changed.jsonl", [
        {"id": "q2", "query": ask("chess"), "subscriber": "dave"},
        {"id": "q5", "query": ask("open*")}])
    code, _, err = run(capsys, "index", "add", index, "--queries", changed)
    assert code == 1 and "'q2'" in err  # without --replace: an id already there is an error
    code, _, err = run(capsys, "index", "add", index, "--queries", changed, "--replace")
    assert code == 0
    assert re.search(r"added 1 query, replaced 1 query, 5 in all", err), err
    engine = Engine.load(str(index))
    assert [(rq.id, rq.subscriber) for rq in engine.queries()][1] == ("q2", "dave")
    assert "chess" in engine.queries()[1].query.text
    twice = write_jsonl(tmp_path / "twice.jsonl", [{"id": "q1", "query": ask("a")}, {"id": "q1", "query": ask("b")}])
    before = index.read_bytes()
    code, _, err = run(capsys, "index", "add", index, "--queries", twice, "--replace")
    assert code == 1 and "twice.jsonl:2" in err
    assert index.read_bytes() == before


def test_removed_and_added_counts_are_worded_in_the_singular_for_one(index, tmp_path, capsys):
    code, _, err = run(capsys, "index", "remove", index, "--ids", "q1")
    assert code == 0 and "removed 1 query, 3 left" in err
    code, _, err = run(capsys, "index", "remove", index, "--ids", "q2", "q4")
    assert code == 0 and "removed 2 queries, 1 left" in err
    one = write_jsonl(tmp_path / "one.jsonl", [{"id": "z", "query": ask("rio")}])
    code, _, err = run(capsys, "index", "add", index, "--queries", one)
    assert code == 0 and "added 1 query, 2 in all" in err
