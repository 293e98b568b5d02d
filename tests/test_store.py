"""The durable query index (rtf/io/store.py): save, load, refuse bad files, threads."""

from __future__ import annotations

import json
import os
import threading
from dataclasses import replace

import pytest

from rtf import ALGORITHMS, Engine
from rtf.io import sections, store
from rtf.errors import IndexFileError
from rtf.parser import parse_query
from rtf.io.taxonomy import Taxonomy
from rtf.bench.workload import Mix, generate_queries
from tests.index_bodies import body, with_body

PUB_TRIPLES = [("<http://ex/a>", "<http://ex/p>", '"Games in Rio de Janeiro"'),
               ("<http://ex/a>", "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>", "<http://ex/Athlete>")]
QUERY = 'SELECT ?s WHERE { ?s <http://ex/p> ?o FILTER ftcontains(?o, "rio") }'
TYPED = "SELECT ?s WHERE { ?s a/rdfs:subClassOf* <http://ex/Person> }"


def run(engine, pubs):
    return [(p.id, m.query_id, m.subscriber, m.solutions, m.truncated)
            for p in pubs for m in engine.match(p)]


@pytest.fixture(scope="module")
def workload(dbpedia_slice, dbpedia_taxonomy):
    """Every operator on, on the real sample: 400 queries and 300 publications."""
    mix = replace(Mix.all_operators(0.7), distinct_predicates=1.0)
    records = generate_queries(dbpedia_slice, 400, seed=11, mix=mix, taxonomy=dbpedia_taxonomy)
    return records, dbpedia_slice[:300]


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_answers_identical_after_save_and_load_on_dbpedia(algorithm, workload, dbpedia_taxonomy, tmp_path):
    records, pubs = workload
    engine = Engine(algorithm, taxonomy=dbpedia_taxonomy, max_solutions=50)
    for r in records:
        engine.register(r["query"], r["id"], r["subscriber"])
    before = run(engine, pubs)
    assert len(before) > 50, "the workload should produce real matches"
    engine.save(tmp_path / "q.idx")
    loaded = Engine.load(tmp_path / "q.idx")
    assert (loaded.algorithm, loaded.max_solutions, len(loaded)) == (algorithm, 50, len(engine))
    assert loaded.taxonomy == dbpedia_taxonomy
    for a, b in zip(engine.queries(), loaded.queries()):
        assert (a.id, a.subscriber, a.query, a.query.text) == (b.id, b.subscriber, b.query, b.query.text)
    assert run(loaded, pubs) == before


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["naive", "rtfs", "ibroker"])
def test_a_query_unregistered_before_save_never_matches_after_load(algorithm, workload,
                                                                  dbpedia_taxonomy, tmp_path):
    records, pubs = workload
    engine = Engine(algorithm, taxonomy=dbpedia_taxonomy)
    for r in records:
        engine.register(r["query"], r["id"], r["subscriber"])
    matched = {qid for _, qid, *_ in run(engine, pubs)}
    gone = set(sorted(matched)[::2])
    assert gone
    for qid in gone:
        engine.unregister(qid)
    engine.save(tmp_path / "q.idx")
    loaded = Engine.load(tmp_path / "q.idx")
    after = run(loaded, pubs)
    assert not gone & {qid for _, qid, *_ in after}
    assert not any(qid in loaded for qid in gone)
    assert after == run(engine, pubs)


def test_taxonomy_and_automatic_ids_survive(tmp_path):
    taxonomy = Taxonomy.from_edges([("<http://ex/Athlete>", "<http://ex/Person>")])
    engine = Engine("rtfs", taxonomy=taxonomy)
    first = engine.register(TYPED)
    engine.save(tmp_path / "q.idx")
    loaded = Engine.load(tmp_path / "q.idx")
    assert [m.query_id for m in loaded.match(PUB_TRIPLES)] == [first]  # through the taxonomy
    assert loaded.register(QUERY) not in (first,)  # the next automatic id is not reused


def test_an_empty_engine_round_trips(tmp_path):
    Engine("rtfm").save(tmp_path / "e.idx")
    loaded = Engine.load(tmp_path / "e.idx")
    assert (len(loaded), loaded.algorithm, loaded.match(PUB_TRIPLES)) == (0, "rtfm", [])


# ---------------------------------------------------------------- bad files


def _saved(tmp_path) -> bytes:
    engine = Engine("rtfs")
    engine.register(QUERY, "q1", "alice")
    engine.save(tmp_path / "q.idx")
    return (tmp_path / "q.idx").read_bytes()


def _first_section(data: bytes) -> int:
    return sections.ENTRY.unpack_from(data, sections.HEADER_SIZE)[2]


@pytest.mark.parametrize("damage, message", [
    (lambda d: d[: len(d) // 2], "truncated"),
    (lambda d: d[:20], "truncated"),
    (lambda d: d[:10], "not an rtf index"),
    (lambda d: b"", "not an rtf index"),
    (lambda d: d + b"\0", "trailing"),
    (lambda d: d[:-5] + bytes([d[-5] ^ 1]) + d[-4:], "checksum"),
    (lambda d: d[:_first_section(d)] + b"\xff" * 64 + d[_first_section(d) + 64:], "checksum"),  # (not inflated)
    (lambda d: b'{"queries": []}' + b" " * 60, "not an rtf index"),
    (lambda d: d[:8] + (1).to_bytes(4, "little") + d[12:], "version 1, but this rtf reads version 4"),
    (lambda d: d[:8] + (2).to_bytes(4, "little") + d[12:], "version 2, but this rtf reads version 4"),
    (lambda d: d[:8] + (3).to_bytes(4, "little") + d[12:],
     "index format version 3, but this rtf reads version 4; rebuild it with `rtf index build`"),
    (lambda d: d[:8] + (5).to_bytes(4, "little") + d[12:], "version 5"),
    (lambda d: with_body({**body(d), "classes": ["IRI", "os.system"]}), "class"),
    (lambda d: with_body({**body(d), "values": [[0, [5]]] + body(d)["values"]}), "malformed"),
    (lambda d: with_body({**body(d), "values": [[0, [-1]]] + body(d)["values"]}), "malformed"),
    (lambda d: with_body({**body(d), "algorithm": "pickle"}), "algorithm"),
    (lambda d: with_body({**body(d), "queries": [["q1", None, 0]]}), "does not refer to a query"),
    (lambda d: with_body({**body(d), "taxonomy": {"<a>": ["<b>"], "<b>": ["<a>"]}}), "cycle"),
    (lambda d: with_body([1, 2]), "not an object"),
])
@pytest.mark.parametrize("overlap", [False, True], ids=["checksum-first", "checksum-in-a-thread"])
def test_a_bad_file_is_refused_with_one_clear_error(damage, message, overlap, tmp_path, monkeypatch):
    if overlap:  # (a large file's checksum is computed while the load goes on: the same errors)
        monkeypatch.setattr(sections, "OVERLAP_BYTES", 0)
    bad = tmp_path / "bad.idx"
    bad.write_bytes(damage(_saved(tmp_path)))
    with pytest.raises(IndexFileError, match=message):
        Engine.load(bad)


def test_load_from_bytes_equals_load_from_file_and_refuses_truncated_bytes(workload, dbpedia_taxonomy,
                                                                          tmp_path):
    records, pubs = workload
    engine = Engine("rtfs", taxonomy=dbpedia_taxonomy)
    for r in records[:150]:
        engine.register(r["query"], r["id"], r["subscriber"])
    engine.save(tmp_path / "q.idx")
    data = (tmp_path / "q.idx").read_bytes()
    from_file, from_bytes = Engine.load(tmp_path / "q.idx"), Engine.from_bytes(data, "broadcast")
    assert [(q.id, q.subscriber, q.query) for q in from_bytes.queries()] == \
        [(q.id, q.subscriber, q.query) for q in from_file.queries()]
    assert from_bytes.taxonomy == from_file.taxonomy == dbpedia_taxonomy
    expected = run(from_file, pubs[:100])
    assert expected and run(from_bytes, pubs[:100]) == expected
    for cut in (len(data) - 1, len(data) // 2, sections.HEADER_SIZE, 3):
        with pytest.raises(IndexFileError, match=r"^broadcast: .*(truncated|not an rtf index)"):
            Engine.from_bytes(data[:cut], "broadcast")


def test_a_missing_file_is_an_index_error(tmp_path):
    with pytest.raises(IndexFileError, match="cannot read"):
        Engine.load(tmp_path / "nothing.idx")


def test_the_whitelist_covers_every_model_value():
    """Each class a parsed query can hold round-trips (the union of the spec's constructs)."""
    text = ('SELECT DISTINCT ?s ?o WHERE { ?s a/rdfs:subClassOf* <http://ex/C> . ?s <http://ex/p> ?o . '
            '?s <http://ex/q> "x"@en . ?s <http://ex/r> "1"^^<http://www.w3.org/2001/XMLSchema#integer> . '
            '?s <http://ex/w> * . _:b <http://ex/v> ?s . '
            'FILTER (ftcontains(?o, "rio" ftand ("olymp*" ftor "games in") ftand ftnot "war" '
            'ftand ("a" ftnear(0, 3, unordered) "b")) && (lang(?o) = "en" || !contains(?o, "z")) '
            '&& regex(?o, "^G", "i") && langMatches(lang(?o), "en") && ?o != "q") }')
    query = parse_query(text)
    table = store._ValueTable()
    ref = table.ref(query)
    entries = table.take()
    decoded = store._ValueBuilder(json.loads(json.dumps(store.CLASS_NAMES)))
    decoded.add(json.loads(json.dumps(entries)))
    assert decoded.values[ref] == query and decoded.values[ref].text == text
    used = {store.CLASS_NAMES[entry[0]] for entry in entries}
    assert {"FTNear", "FTNot", "FTOr", "Regex", "LangMatches", "Lang", "Not", "BlankNode",
            "Wildcard", "TypePath", "Literal"} <= used


# ---------------------------------------------------------------- atomic writes


def test_a_failed_save_leaves_the_previous_file_and_no_temporary(tmp_path, monkeypatch):
    before = _saved(tmp_path)
    engine = Engine.load(tmp_path / "q.idx")
    engine.register(TYPED, "q2")

    def disk_full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(OSError):
        engine.save(tmp_path / "q.idx")
    assert (tmp_path / "q.idx").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q.idx"]


# ---------------------------------------------------------------- threads


def test_matching_threads_with_a_writer_see_exactly_the_stable_answers(workload, dbpedia_taxonomy):
    """Four threads match while a fifth registers and unregisters other queries:
    each thread's answers about the stable queries equal the single-threaded ones."""
    records, pubs = workload
    stable, churn = records[:300], records[300:]
    engine = Engine("rtfs", taxonomy=dbpedia_taxonomy)
    for r in stable:
        engine.register(r["query"], r["id"], r["subscriber"])
    pubs = pubs[:150]
    expected = run(engine, pubs)
    stable_ids = {r["id"] for r in stable}
    results, errors = {}, []
    stop = threading.Event()

    def reader(n):
        try:
            results[n] = [a for a in run(engine, pubs) if a[1] in stable_ids]
        except BaseException as e:  # surfaced below
            errors.append(e)

    def writer():
        try:
            while not stop.is_set():
                for r in churn:
                    engine.register(r["query"], "churn-" + r["id"])
                for r in churn:
                    engine.unregister("churn-" + r["id"])
        except BaseException as e:
            errors.append(e)

    w = threading.Thread(target=writer)
    w.start()
    readers = [threading.Thread(target=reader, args=(n,)) for n in range(4)]
    for t in readers:
        t.start()
    for t in readers:
        t.join()
    stop.set()
    w.join()
    assert not errors
    assert all(results[n] == expected for n in range(4))
    assert len(engine) == len(stable)


def test_an_engine_still_pickles_for_spark_with_a_lock_of_its_own():
    import pickle
    engine = Engine("rtfs")
    engine.register(QUERY, "q1")
    copy = pickle.loads(pickle.dumps(engine))
    assert copy._lock is not engine._lock
    assert [m.query_id for m in copy.match(PUB_TRIPLES)] == ["q1"]


def test_language_v2_and_metadata_survive_a_save(tmp_path):
    """UNION, alternative predicates, OPTIONAL, IN, functions, arithmetic and casts are
    whitelisted too; a query's metadata comes back with it."""
    text = ('PREFIX xsd: <http://www.w3.org/2001/XMLSchema#> '
            'SELECT ?s ?l WHERE { { ?s a <http://ex/City> } UNION { ?s a <http://ex/Town> } '
            '?s (<http://ex/abstract>|<http://ex/comment>) ?t '
            'FILTER (lcase(str(?t)) IN ("a", "b") || strlen(?t) + 1 > xsd:integer("3")) '
            'OPTIONAL { ?s <http://ex/label> ?l FILTER (lang(?l) = "en") } }')
    engine = Engine("rtfs")
    engine.register(text, "v2", "alice", metadata={"topic": "towns", "n": [1, 2]})
    engine.save(tmp_path / "idx")
    loaded = Engine.load(tmp_path / "idx")
    again = loaded.get("v2")
    assert again.query == parse_query(text) and again.query.text == text
    assert dict(again.metadata) == {"topic": "towns", "n": [1, 2]}
    assert again.subscriber == "alice"
