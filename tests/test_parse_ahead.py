"""Queries parsed ahead in forked workers (`rtf.io.parse_ahead`, ``--workers``): the same
index, ids, errors and positions as one process, with or without text analysis."""

from __future__ import annotations

import json
import multiprocessing
import subprocess
import sys
import textwrap
from dataclasses import replace

import pytest

import rtf.io.parse_ahead as parse_ahead_module
from rtf import Engine, QueryError
from rtf.bench.workload import Mix, generate_queries
from rtf.cli import main
from rtf.io.builder import IndexBuilder
from rtf.io.parse_ahead import Ahead, original, parse_ahead
from rtf.parser import parse_query

RIO = 'SELECT ?s WHERE {{ ?s <http://ex/p> ?o FILTER ftcontains(?o, "{}") }}'
BAD = [
    "SELECT ?s WHERE { ?s <http://ex/p> ?o ",  # cut short
    'SELECT ?s WHERE { ?s <http://ex/p> ?o FILTER regex(?o, "(") }',  # a regex that cannot run
    "ASK { ?s ?p }",
]


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch):
    """Chunks of 5 texts, 2 ahead a worker: a few dozen records cross many chunk borders."""
    monkeypatch.setattr(parse_ahead_module, "CHUNK", 5)
    monkeypatch.setattr(parse_ahead_module, "IN_FLIGHT", 2)


@pytest.fixture(scope="module")
def records(dbpedia_slice, dbpedia_taxonomy):
    """Generated queries of every operator, some automatic ids, subscribers, metadata, a
    parsed query, repeated texts, and bad queries and a duplicate id among them."""
    mix = replace(Mix.all_operators(0.6), distinct_predicates=1.0)
    recs = generate_queries(dbpedia_slice, 60, seed=11, mix=mix, taxonomy=dbpedia_taxonomy)
    out: list[tuple] = []
    for k, r in enumerate(recs):
        out.append((r["query"], None if k % 7 == 3 else r["id"], "alice" if k % 3 == 0 else None,
                    {"k": k} if k % 5 == 0 else None))
        if k % 17 == 4:
            out.append((BAD[k % len(BAD)], f"bad{k}"))
    out.insert(9, (parse_query(out[2][0]), "parsed"))
    out.append((out[0][0], out[0][1] or "dup", None, None))  # a duplicate id
    return out


def register(engine, records, workers):
    refused = []
    done = engine.register_many(records, lambda pos, rec, e: refused.append((pos, rec, type(e), str(e))),
                                workers=workers)
    return done, refused


@pytest.mark.parametrize("algorithm", ["rtfs", "ibroker", "naive"])
def test_parsed_ahead_the_engine_is_the_one_process_engine(records, dbpedia_taxonomy, algorithm):
    one, many = (Engine(algorithm, taxonomy=dbpedia_taxonomy) for _ in range(2))
    expected = register(one, records, 1)
    assert register(many, records, 2) == expected
    assert len(expected[1]) >= 4  # the bad queries and the duplicate were refused, with their positions
    assert many.to_bytes() == one.to_bytes()


def test_without_on_error_the_first_bad_query_undoes_the_batch(records):
    one, many = Engine(), Engine()
    with pytest.raises(QueryError) as first:
        one.register_many(records)
    with pytest.raises(QueryError) as second:
        many.register_many(records, workers=2)
    assert str(second.value) == str(first.value)
    assert (second.value.line, second.value.column) == (first.value.line, first.value.column)
    assert len(many) == len(one) == 0


def test_text_analysis_is_the_workers_too():
    options = {"fold_accents": True, "stem": "english", "stop_words": "english"}
    texts = [RIO.format(w) for w in ("Cafés", "running", "the olympic games", "naïve runners")] * 4
    one, many = Engine(text_analysis=options), Engine(text_analysis=options)
    one.register_many((t, f"q{k}") for k, t in enumerate(texts))
    many.register_many(((t, f"q{k}") for k, t in enumerate(texts)), workers=2)
    assert many.to_bytes() == one.to_bytes()
    pub = [("<http://ex/a>", "<http://ex/p>", '"the cafe where a runner runs"')]
    assert [m.query_id for m in many.match(pub)] == [m.query_id for m in one.match(pub)] != []


def test_a_query_parsed_elsewhere_is_still_parsed_again_under_the_analysis():
    """Only a worker's `Ahead` is taken as analysed: a `Query` given in a record is not."""
    text = RIO.format("running")
    many = Engine(text_analysis={"stem": "english"})
    many.register_many([(parse_query(text), "given"), (text, "text")], workers=2)
    one = Engine(text_analysis={"stem": "english"})
    one.register_many([(text, "given"), (text, "text")])
    assert many.to_bytes() == one.to_bytes()


@pytest.mark.parametrize("chunk", [3, 1000])
def test_a_chunked_build_parsed_ahead_writes_the_same_file(records, dbpedia_taxonomy, chunk):
    good = [r for r in records if not str(r[1]).startswith(("bad", "dup"))][:-1]
    one = IndexBuilder(Engine(taxonomy=dbpedia_taxonomy), chunk=chunk)
    many = IndexBuilder(Engine(taxonomy=dbpedia_taxonomy), chunk=chunk)
    assert one.register_many(good) == many.register_many(good, workers=3) == len(good)
    assert many.to_bytes() == one.to_bytes()


def test_the_records_come_back_in_order_and_the_workers_stop_when_closed():
    texts = [(RIO.format(f"w{k}"), f"q{k}") for k in range(23)] + [(BAD[0], "bad"), (42, "not text")]
    out = list(parse_ahead(texts, 2))
    assert [original(r) for r in out] == texts
    assert [type(r[0]) for r in out] == [Ahead] * 23 + [str, int]
    assert out[4][0].query == parse_query(texts[4][0])
    stream = parse_ahead(iter(texts), 2)
    next(stream)
    stream.close()  # (as `register_many` closes it when a record is refused)
    assert multiprocessing.active_children() == []


def test_workers_must_be_a_positive_int():
    for workers in (0, -1, 1.5, "2"):
        with pytest.raises(ValueError, match="workers"):
            Engine().register_many([], workers=workers)
        with pytest.raises(ValueError, match="workers"):
            IndexBuilder(Engine()).register_many([], workers=workers)


def test_the_cli_builds_the_same_index_and_names_the_same_lines(tmp_path, capsys):
    lines = [{"id": f"q{k}", "query": RIO.format(f"w{k}")} for k in range(30)]
    lines[17] = {"id": "broken", "query": BAD[0]}
    queries = tmp_path / "q.jsonl"
    queries.write_text("".join(json.dumps(line) + "\n" for line in lines))
    errors = []
    for workers in ("1", "2"):
        assert main(["index", "build", "--queries", str(queries), "--output", str(tmp_path / f"{workers}.idx"),
                     "--workers", workers]) == 1
        errors.append(capsys.readouterr().err)
        assert not (tmp_path / f"{workers}.idx").exists()
    assert errors[0] == errors[1] and f"{queries}:18: query 'broken'" in errors[0]
    lines[17] = {"id": "fine", "query": RIO.format("fine")}
    queries.write_text("".join(json.dumps(line) + "\n" for line in lines))
    for workers in ("1", "2"):
        assert main(["index", "build", "--queries", str(queries), "--output", str(tmp_path / f"{workers}.idx"),
                     "--workers", workers]) == 0
    assert (tmp_path / "1.idx").read_bytes() == (tmp_path / "2.idx").read_bytes()


def test_match_skip_invalid_reports_the_same_lines_with_workers(tmp_path, capsys):
    lines = [{"id": f"q{k}", "query": RIO.format(f"w{k}")} for k in range(20)]
    lines[3] = {"id": "bad3", "query": BAD[2]}
    lines[14] = {"id": "q2", "query": RIO.format("again")}  # a duplicate id
    queries = tmp_path / "q.jsonl"
    queries.write_text("".join(json.dumps(line) + "\n" for line in lines))
    pubs = tmp_path / "p.nt"
    pubs.write_text('<http://ex/a> <http://ex/p> "w1 w2 w3 again" .\n')
    outs = []
    for workers in ("1", "2"):
        assert main(["match", "--queries", str(queries), "--publications", str(pubs), "--skip-invalid",
                     "--workers", workers]) == 0
        outs.append(capsys.readouterr())
    assert outs[0] == outs[1]
    assert f"{queries}:4: query 'bad3'" in outs[0].err and f"{queries}:15:" in outs[0].err
    assert outs[0].out.count("\n") == 2  # q1 and q2 (q3 is bad3, "again" the refused duplicate)


def test_equal_texts_are_one_query_as_in_one_process():
    """A text parsed in a worker is cached here as `parse_query` caches it: a repeat of it,
    in a later chunk or a later batch, is that same object (memory, as in one process)."""
    from rtf.parser import PARSE_CACHE
    PARSE_CACHE.clear()
    texts = [(RIO.format(f"w{k % 4}"), f"q{k}") for k in range(30)]  # each text over several chunks
    many = Engine()
    many.register_many(texts, workers=2)
    many.register_many([(texts[0][0], "later")], workers=2)
    assert len({id(many.get(qid).query) for _, qid in texts} | {id(many.get("later").query)}) == 4


def test_workers_parse_while_another_thread_holds_the_parse_cache_lock():
    """A thread of the parent holding the parse cache's lock when the workers fork would
    leave it held for ever in them: they get fresh locks (`rtf.parser.cache.fork_safe`).
    Run in a process of its own: without them, it would never end."""
    script = textwrap.dedent(f"""
        import threading, time
        from rtf.io.parse_ahead import Ahead, parse_ahead
        from rtf.parser import PARSE_CACHE
        held, done = threading.Event(), threading.Event()
        def hold():
            with PARSE_CACHE._lock:
                held.set()
                time.sleep(1.0)  # the workers fork meanwhile
        threading.Thread(target=hold).start()
        held.wait()
        out = list(parse_ahead([({RIO.format("held")!r}, "q%d" % k) for k in range(12)], 2, None))
        print(sorted(set(type(r[0]).__name__ for r in out)))
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "['Ahead']", result.stderr[-2000:]


def test_an_error_of_the_records_comes_in_its_turn():
    """Reading runs ahead of registering: an error raised by the records' iterator is
    raised where one process would have met it, after an earlier bad query."""
    def records():
        for k in range(40):
            if k == 25:
                raise RuntimeError("the query file breaks at record 25")
            yield (BAD[0] if k == 3 else RIO.format(f"w{k}"), f"q{k}")

    for workers in (1, 2):
        with pytest.raises(QueryError):  # the bad query at 3, not the break at 25
            Engine().register_many(records(), workers=workers)
        seen = []
        with pytest.raises(RuntimeError, match="record 25"):
            Engine().register_many(records(), lambda pos, rec, e: seen.append(pos), workers=workers)
        assert seen == [3]
    out = []
    with pytest.raises(RuntimeError, match="record 25"):
        for record in parse_ahead(records(), 2):
            out.append(record)
    assert len(out) == 25


def test_without_workers_to_fork_the_records_are_parsed_here(monkeypatch):
    def no_fork(*args, **kwargs):
        raise OSError(11, "Resource temporarily unavailable")
    monkeypatch.setattr(parse_ahead_module, "forked_pool", no_fork)
    texts = [(RIO.format(f"w{k}"), f"q{k}") for k in range(7)]
    assert list(parse_ahead(texts, 2)) == texts
    one, many = Engine(), Engine()
    one.register_many(texts)
    many.register_many(texts, workers=2)
    assert many.to_bytes() == one.to_bytes()
