"""`rtf index build` a chunk at a time (`rtf.io.builder.IndexBuilder`, `rtf.io.store.IndexWriter`):
the file is the one `Engine.save` writes after registering every query, whatever the chunk."""

from __future__ import annotations

import gc
import json
import zlib
from dataclasses import replace

import pytest
import rtf.io.builder
from hypothesis import given, settings, strategies as st

from rtf import Engine
from rtf.bench.workload import Mix, generate_queries
from rtf.cli import main
from rtf.io.builder import IndexBuilder
from rtf.errors import QueryError
from rtf.io import store

RIO = 'SELECT ?s WHERE {{ ?s <http://ex/p> ?o FILTER ftcontains(?o, "{}") }}'


def body(data: bytes) -> bytes:
    """The body once decompressed, every check of the reader passed."""
    return b"\n".join(store.body_lines(data)) + b"\n"


@pytest.fixture(scope="module")
def records(dbpedia_slice, dbpedia_taxonomy):
    mix = replace(Mix.all_operators(0.6), distinct_predicates=1.0)
    recs = generate_queries(dbpedia_slice, 120, seed=5, mix=mix, taxonomy=dbpedia_taxonomy)
    out = []
    for k, r in enumerate(recs):  # some automatic ids, subscribers, metadata, repeated texts
        out.append((r["query"], None if k % 7 == 3 else r["id"], "alice" if k % 3 == 0 else None,
                    {"k": k} if k % 5 == 0 else None))
    return out + [(out[0][0], "again", None, None)]


@pytest.mark.parametrize("chunk", [1, 7, 50, 1000])
@pytest.mark.parametrize("algorithm", ["rtfs", "ibroker"])
def test_a_chunked_build_writes_the_body_a_whole_engine_saves(records, dbpedia_taxonomy, chunk, algorithm):
    engine = Engine(algorithm, taxonomy=dbpedia_taxonomy)
    engine.register_many(records)
    builder = IndexBuilder(Engine(algorithm, taxonomy=dbpedia_taxonomy), chunk=chunk)
    assert builder.register_many(records) == len(records) == len(builder)
    built = builder.to_bytes()
    assert body(built) == body(engine.to_bytes())
    loaded = Engine.from_bytes(built)
    assert [(q.id, q.subscriber, q.metadata) for q in loaded.queries()] == \
        [(q.id, q.subscriber, q.metadata) for q in engine.queries()]
    assert loaded._next_id == engine._next_id


def test_a_chunked_build_keeps_the_text_analysis(tmp_path):
    options = {"fold_accents": True, "stem": "english"}
    texts = [RIO.format(w) for w in ("Cafés", "running", "olympic games")]
    engine = Engine(text_analysis=options)
    engine.register_many((t, f"q{k}") for k, t in enumerate(texts))
    builder = IndexBuilder(Engine(text_analysis=options), chunk=2)
    builder.register_many((t, f"q{k}") for k, t in enumerate(texts))
    assert body(builder.to_bytes()) == body(engine.to_bytes())
    assert Engine.from_bytes(builder.to_bytes()).text_analysis == engine.text_analysis


def test_ids_are_checked_across_chunks_as_one_engine_checks_them():
    builder = IndexBuilder(Engine(), chunk=2)
    builder.register_many([(RIO.format("a"), None), (RIO.format("b"), "q3"), (RIO.format("c"), None)])
    with pytest.raises(ValueError, match="'q1' is already registered"):
        builder.register_many([(RIO.format("d"), "x"), (RIO.format("e"), "y"), (RIO.format("f"), "q1")])
    # automatic ids skip q3, taken in an earlier chunk: q1, q3, q2, q4, q5
    builder = IndexBuilder(Engine(), chunk=2)
    builder.register_many([(RIO.format("a"), None), (RIO.format("b"), "q3"), (RIO.format("c"), None),
                           (RIO.format("d"), None), (RIO.format("e"), None)])
    engine = Engine()
    engine.register_many([(RIO.format("a"), None), (RIO.format("b"), "q3"), (RIO.format("c"), None),
                          (RIO.format("d"), None), (RIO.format("e"), None)])
    assert [q.id for q in Engine.from_bytes(builder.to_bytes()).queries()] == [q.id for q in engine.queries()]


def test_refused_records_are_reported_at_their_position_across_chunks():
    texts = [RIO.format(w) for w in "abcdefg"]
    texts[1] = texts[5] = "SELECT nonsense"
    refused = []
    builder = IndexBuilder(Engine(), chunk=3)
    n = builder.register_many(((t, f"id{k}") for k, t in enumerate(texts)),
                              lambda position, record, e: refused.append((position, record[1], type(e))))
    assert n == 5 and [(position, qid) for position, qid, _ in refused] == [(1, "id1"), (5, "id5")]
    assert all(issubclass(kind, QueryError) for _, _, kind in refused)
    assert [q.id for q in Engine.from_bytes(builder.to_bytes()).queries()] == ["id0", "id2", "id3", "id4", "id6"]


def test_rtf_index_build_refuses_a_bad_query_in_a_later_chunk_and_writes_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(rtf.io.builder, "BUILD_CHUNK", 2)
    lines = [{"id": f"q{k}", "query": RIO.format(w)} for k, w in enumerate("abcde")]
    lines[4]["query"] = "SELECT ?s WHERE { ?s <http://ex/p> ?o"
    queries = tmp_path / "q.jsonl"
    queries.write_text("".join(json.dumps(r) + "\n" for r in lines))
    code = main(["index", "build", "--queries", str(queries), "--output", str(tmp_path / "q.idx")])
    err = capsys.readouterr().err
    assert code != 0 and "q.jsonl:5" in err and "Traceback" not in err
    assert not (tmp_path / "q.idx").exists()


def test_rtf_index_build_of_many_chunks_answers_as_the_queries_do(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(rtf.io.builder, "BUILD_CHUNK", 3)
    lines = [{"id": f"q{k}", "query": RIO.format(w)} for k, w in enumerate(["rio", "games", "rio games", "x"] * 3)]
    queries = tmp_path / "q.jsonl"
    queries.write_text("".join(json.dumps(r) + "\n" for r in lines))
    assert main(["index", "build", "--queries", str(queries), "--output", str(tmp_path / "q.idx")]) == 0
    capsys.readouterr()
    engine = Engine()
    engine.register_many((r["query"], r["id"]) for r in lines)
    assert body((tmp_path / "q.idx").read_bytes()) == body(engine.to_bytes())


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.binary(max_size=200), st.integers(0, 3))
def test_adler32_combine_is_the_adler32_of_the_two_strings(first, second, repeat):
    second = second * (1 + repeat * 200)  # lengths past the modulus 65521 too
    assert store.adler32_combine(zlib.adler32(first), zlib.adler32(second), len(second)) == \
        zlib.adler32(first + second)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.sampled_from(["q1", "q2", "q3", "q5", "x"])), max_size=12),
       st.integers(1, 5))
def test_ids_of_any_file_are_taken_or_refused_as_one_engine_takes_them(ids, chunk):
    records = [(RIO.format(f"w{k}"), qid) for k, qid in enumerate(ids)]
    refused_by_engine, refused_by_builder = [], []
    engine = Engine()
    engine.register_many(records, lambda position, _r, e: refused_by_engine.append((position, str(e))))
    builder = IndexBuilder(Engine(), chunk=chunk)
    builder.register_many(records, lambda position, _r, e: refused_by_builder.append((position, str(e))))
    assert refused_by_builder == refused_by_engine
    assert body(builder.to_bytes()) == body(engine.to_bytes())


def test_the_builder_takes_only_an_empty_engine():
    engine = Engine()
    engine.register(RIO.format("rio"), "q1")
    with pytest.raises(ValueError, match="empty engine"):
        IndexBuilder(engine)


# ------------------------------------------------------------------ the query table merged


def answers(engine: Engine, pubs) -> list:
    return [sorted((m.query_id, m.subscriber, m.solutions, m.is_ask) for m in engine.match(pub)) for pub in pubs]


@pytest.fixture(scope="module")
def paper_records(dbpedia_slice):
    """The paper's mix (no value tests): many chunks share shapes, words and answer variables."""
    recs = generate_queries(dbpedia_slice, 150, seed=11, mix=Mix.paper(0.6))
    return [(r["query"], r["id"], "bob" if k % 4 == 0 else None, {"k": k} if k % 9 == 0 else None)
            for k, r in enumerate(recs)]


#: The sections the merge chooses as a whole engine would but not as its history did.
PIVOTS = ("t_pivot", "t_others", "t_extra_slots", "t_extra_offsets", "t_extra_shapes")


@pytest.mark.parametrize("chunk", [1, 13])
@pytest.mark.parametrize("algorithm", ["rtfs", "rtfm"])
def test_a_chunked_build_with_the_table_is_the_file_one_engine_saves(paper_records, dbpedia_slice,
                                                                     dbpedia_taxonomy, algorithm, chunk):
    """Every section as one engine of all the queries saves it -- shapes numbered in the order
    they first appear, slots, word index, records -- but the pivots, chosen again for all at
    the end; the file loads mapped and answers as that engine does."""
    engine = Engine(algorithm, taxonomy=dbpedia_taxonomy, keep_models=True)
    engine.register_many(paper_records)
    builder = IndexBuilder(Engine(algorithm, taxonomy=dbpedia_taxonomy), chunk=chunk, table=True)
    IndexBuilder(Engine(algorithm), chunk=1, table=True).register_many(paper_records[:3])  # (first uses' cycles)
    gc.collect()
    builder.register_many(paper_records)
    assert gc.collect() == 0  # (the build collects none: it leaves no cycles, each chunk's freed as it goes)
    whole, built = (store.sections.unpack(data, store.FORMAT_VERSION).arrays
                    for data in (engine.to_bytes(), builder.to_bytes()))
    assert list(built) == list(whole) and "t_head" in built
    assert [name for name in whole if name not in PIVOTS
            and not (whole[name].shape == built[name].shape and (whole[name] == built[name]).all())] == []
    loaded = Engine.from_bytes(builder.to_bytes())
    assert loaded._index.table.mapped is not None  # (mapped back, not registered again)
    pubs = dbpedia_slice[:40]
    assert answers(loaded, pubs) == answers(engine, pubs)


def test_a_chunk_with_value_tests_after_the_first_leaves_them_to_register_at_load(dbpedia_slice):
    """The merge carries no value tests: a query counted by them in a later chunk is saved
    unmapped (registered from its model at load); a first chunk with some builds whole."""
    plain = [(RIO.format(w), f"p{k}") for k, w in enumerate(["rio", "games", "x"])]
    valued = [('SELECT ?s WHERE { ?s <http://ex/n> ?n FILTER (?n > 3) }', "v1")]
    pub = [("<http://ex/a>", "<http://ex/p>", '"rio games"'), ("<http://ex/a>", "<http://ex/n>",
                                                                  '"4"^^<http://www.w3.org/2001/XMLSchema#integer>')]
    for records, whole in ((plain + valued + plain[:1], False), (valued + plain, True)):
        records = [(text, f"{qid}-{k}") for k, (text, qid) in enumerate(records)]
        engine = Engine(keep_models=True)
        engine.register_many(records)
        builder = IndexBuilder(Engine(), chunk=2, table=True)
        builder.register_many(records)
        assert builder._whole is whole
        arrays = store.sections.unpack(builder.to_bytes(), store.FORMAT_VERSION).arrays
        assert arrays["t_query_mapped"].tolist() == [int(whole or not text.startswith("SELECT ?s WHERE { ?s <http://ex/n>"))
                                                     for text, _ in records]
        loaded = Engine.from_bytes(builder.to_bytes())
        found = answers(loaded, [pub])
        assert found == answers(engine, [pub]) and {m[0].split("-")[0] for m in found[0]} == {"p0", "p1", "v1"}
