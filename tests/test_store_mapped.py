"""Format 4's mapped load (rtf/matching/table_snapshot.py, restoring.py, rtf/io/sections.py): an
engine loaded from the arrays of a file this installation signed answers as the reference, and
stays a normal engine (add, remove, save again); a damaged or re-signed file is refused with one
`IndexFileError` or loads without crashing."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from rtf import Engine
from rtf.bench.workload import Mix, generate_queries
from rtf.errors import IndexFileError
from rtf.io import sections, store
from rtf.matching.table_snapshot import MappedShape
from tests.index_bodies import altered_and_signed, assert_answers_as_the_reference, loaded_or_refused, unsigned

MIXES = {"paper": Mix.paper(0.5), "selective": Mix.selective(0.5), "all": Mix.all_operators(0.6)}


def answers(engine: Engine, pubs) -> list:
    return [sorted((m.query_id, m.subscriber, m.solutions, m.is_ask) for m in engine.match(p)) for p in pubs]


@pytest.fixture(scope="module")
def pubs(dbpedia_slice):
    return dbpedia_slice[:40]


def test_a_loaded_engine_is_mapped_back_not_registered_again(dbpedia_slice, dbpedia_taxonomy, pubs):
    records = generate_queries(dbpedia_slice, 200, seed=3, mix=MIXES["selective"], taxonomy=dbpedia_taxonomy)
    engine = Engine("rtfs", taxonomy=dbpedia_taxonomy)
    for r in records:
        engine.register(r["query"], r["id"], r["subscriber"])
    data = engine.to_bytes()
    assert sections.unpack(data, store.FORMAT_VERSION).signed
    loaded = Engine.from_bytes(data)
    table = loaded._index.table
    assert table.mapped is not None and isinstance(table.shape_at[0], MappedShape)
    assert loaded._queries[records[0]["id"]]._models.queries is None  # no model decoded yet
    # The texts (what `rtf serve` checks its snapshot by) are read without decoding a model.
    assert [q.text for q in loaded.queries()] == [q.query.text for q in engine.queries()]
    assert loaded._queries[records[0]["id"]]._models.queries is None
    assert answers(loaded, pubs) == answers(engine, pubs) and any(answers(engine, pubs))
    # (the memory estimate alone may differ: a restored word index's postings are sized exactly)
    estimate = engine.stats()["index_bytes_estimate"]
    assert {**loaded.stats(), "index_bytes_estimate": 0} == \
        {**engine.stats(), "truncated_matches": 0, "index_bytes_estimate": 0}
    assert 0.8 * estimate <= loaded.stats()["index_bytes_estimate"] <= 1.2 * estimate
    # The unsigned file (another installation's) is loaded the checked way, to the same engine.
    checked = Engine.from_bytes(unsigned(data))
    assert checked._index.table.mapped is None and answers(checked, pubs) == answers(engine, pubs)
    assert [(q.id, q.subscriber, q.query) for q in loaded.queries()] == \
        [(q.id, q.subscriber, q.query) for q in engine.queries()]


def test_a_loaded_query_s_model_is_decoded_alone_from_its_own_record(dbpedia_slice, dbpedia_taxonomy, pubs):
    """`Engine.get` and a publication joining loaded branches decode the models they need, one
    record each (rtf/io/query_models.py), never the whole body; a save copies the records."""
    records = generate_queries(dbpedia_slice, 300, seed=7, mix=MIXES["paper"], taxonomy=dbpedia_taxonomy)
    engine = Engine("rtfs", taxonomy=dbpedia_taxonomy)
    for r in records:
        engine.register(r["query"], r["id"], r["subscriber"])
    loaded = Engine.from_bytes(engine.to_bytes())
    models = loaded._queries[records[0]["id"]]._models
    assert loaded.get(records[150]["id"]).query == engine.get(records[150]["id"]).query
    assert models.queries is None and list(models.decoded) == [150]
    merged = [t for pub in pubs for t in pub.triples]  # one publication of many subjects: joins
    assert answers(loaded, [merged]) == answers(engine, [merged]) and any(answers(engine, [merged]))
    assert models.queries is None and 1 < len(models.decoded) < len(records)
    again = Engine.from_bytes(loaded.to_bytes())
    assert models.queries is None
    assert [q.query for q in again.queries()] == [q.query for q in engine.queries()]


def _word_sets(engine: Engine) -> dict:
    """Each key's shapes (by structure and keys: ids freed and taken again may differ)."""
    words, shape_at = engine._index.index.words, engine._index.table.shape_at
    return {(kind, key): sorted(repr((s.subject, s.predicate, s.object, s._keys)) for s in
                                shape_at[words.shape_id[np.frombuffer(postings, dtype=np.int32)]])
            for kind, table in (("word", words.words), ("prefix", words.prefixes)) for key, postings in table.items()}


def test_the_word_index_is_taken_from_the_file_not_indexed_again(dbpedia_slice, dbpedia_taxonomy, pubs,
                                                                  monkeypatch):
    from rtf.trieforest.words import WordIndex

    records = generate_queries(dbpedia_slice, 300, seed=13, mix=MIXES["all"], taxonomy=dbpedia_taxonomy)
    engine = Engine("rtfs", taxonomy=dbpedia_taxonomy)
    for r in records:
        engine.register(r["query"], r["id"], r["subscriber"])
    for r in records[::7]:  # (free alternatives and keys in the saved word index)
        engine.unregister(r["id"])
    data = engine.to_bytes()
    with monkeypatch.context() as patched:
        patched.setattr(WordIndex, "add", lambda self, shape: pytest.fail("a key indexed again at load"))
        loaded = Engine.from_bytes(data)
    assert _word_sets(loaded) == _word_sets(engine) and _word_sets(engine)
    assert answers(loaded, pubs) == answers(engine, pubs) and any(answers(engine, pubs))
    for r in records[1::5]:  # registered and removed after a load, as on a fresh engine
        if r["id"] in loaded:
            loaded.unregister(r["id"])
            engine.unregister(r["id"])
    for r in records[::7]:
        loaded.register(r["query"], r["id"], r["subscriber"])
        engine.register(r["query"], r["id"], r["subscriber"])
    assert _word_sets(loaded) == _word_sets(engine)
    assert answers(loaded, pubs) == answers(engine, pubs)


def test_a_re_signed_word_index_whose_keys_are_not_its_shapes_removes_them_all_the_same(
        dbpedia_slice, dbpedia_taxonomy, pubs):
    records = generate_queries(dbpedia_slice, 60, seed=17, mix=MIXES["selective"], taxonomy=dbpedia_taxonomy)
    engine = Engine("rtfs", taxonomy=dbpedia_taxonomy)
    for r in records:
        engine.register(r["query"], r["id"], r["subscriber"])
    arrays = {name: array.copy() for name, array in sections.unpack(engine.to_bytes(), store.FORMAT_VERSION)
              .arrays.items()}
    arrays["t_words"][arrays["t_word_offsets"][1] - 1] ^= 1  # the first key's last letter changed
    loaded = Engine.from_bytes(sections.pack(store.FORMAT_VERSION, arrays, sign=True), "f.idx")
    for pub in pubs[:10]:
        loaded.match(pub)
    for r in records:
        loaded.unregister(r["id"])
    words = loaded._index.index.words
    assert words.is_empty() and (words.shape_id == -1).all()
    # An alternative given to another shape leaves one shape with none: refused at load.
    arrays = {name: array.copy() for name, array in sections.unpack(engine.to_bytes(), store.FORMAT_VERSION)
              .arrays.items()}
    arrays["t_alt_shape"][0] = arrays["t_alt_shape"][1]
    with pytest.raises(IndexFileError, match="^f.idx: .*the saved word index's alternatives are inconsistent"):
        Engine.from_bytes(sections.pack(store.FORMAT_VERSION, arrays, sign=True), "f.idx")


def test_a_loaded_engine_pickles_as_the_engine_it_stands_for(dbpedia_slice, dbpedia_taxonomy, pubs):
    """Its shapes and records, loaded lazily, travel (as Spark ships engines) as plain ones."""
    import pickle

    from rtf.matching.tuple_shapes import TupleShape

    records = generate_queries(dbpedia_slice, 200, seed=5, mix=MIXES["all"], taxonomy=dbpedia_taxonomy)
    engine = Engine("rtfs", taxonomy=dbpedia_taxonomy)
    for r in records:
        engine.register(r["query"], r["id"], r["subscriber"])
    loaded = Engine.from_bytes(engine.to_bytes())
    assert isinstance(loaded._index.table.shape_at[0], MappedShape)
    shipped = pickle.loads(pickle.dumps(loaded))
    shapes = [s for s in shipped._index.table.shape_at.tolist() if s is not None]
    assert shapes and all(type(s) is TupleShape for s in shapes)
    assert [s.key for s in shapes] == [s.key for s in loaded._index.table.shape_at.tolist() if s is not None]
    assert answers(shipped, pubs) == answers(engine, pubs) and any(answers(engine, pubs))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), n=st.integers(5, 60), mix=st.sampled_from(sorted(MIXES)),
       algorithm=st.sampled_from(["rtfs", "rtfm"]), removed=st.integers(0, 20), added=st.integers(0, 10),
       cap=st.sampled_from([3, 10_000]))
# a `*` query whose join the cap of 3 cuts: one solution of 3, truncated (docs/limits.md)
@example(seed=451, n=44, mix="all", algorithm="rtfs", removed=0, added=10, cap=3)
def test_saved_loaded_changed_and_saved_again_answers_as_the_reference(
        dbpedia_slice, dbpedia_taxonomy, pubs, seed, n, mix, algorithm, removed, added, cap):
    records = generate_queries(dbpedia_slice, n + added, seed=seed, mix=MIXES[mix], taxonomy=dbpedia_taxonomy)
    engine = Engine(algorithm, taxonomy=dbpedia_taxonomy, max_solutions=cap)
    for k, r in enumerate(records[:n]):
        engine.register(r["query"], r["id"], r["subscriber"], metadata={"k": k} if k % 4 == 0 else None)
    loaded = Engine.from_bytes(engine.to_bytes())
    assert answers(loaded, pubs) == answers(engine, pubs)
    assert_answers_as_the_reference(loaded, pubs)
    for r in records[:n][::3][:removed]:
        loaded.unregister(r["id"])
    for r in records[n:]:
        loaded.register(r["query"], r["id"], r["subscriber"])
    assert_answers_as_the_reference(loaded, pubs)
    again = Engine.from_bytes(loaded.to_bytes())
    assert answers(again, pubs) == answers(loaded, pubs)
    assert_answers_as_the_reference(again, pubs)
    assert [(q.id, q.subscriber, q.metadata) for q in again.queries()] == \
        [(q.id, q.subscriber, q.metadata) for q in loaded.queries()]


SMALL = None


def _small(dbpedia_slice, dbpedia_taxonomy) -> bytes:
    global SMALL
    if SMALL is None:
        records = generate_queries(dbpedia_slice, 30, seed=11, mix=MIXES["all"], taxonomy=dbpedia_taxonomy)
        engine = Engine("rtfs", taxonomy=dbpedia_taxonomy)
        for r in records:
            engine.register(r["query"], r["id"], r["subscriber"])
        SMALL = engine.to_bytes()
    return SMALL


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.floats(0, 1, exclude_max=True))
def test_every_truncation_of_a_signed_file_is_refused(dbpedia_slice, dbpedia_taxonomy, cut):
    data = _small(dbpedia_slice, dbpedia_taxonomy)
    with pytest.raises(IndexFileError):
        Engine.from_bytes(data[:int(cut * len(data))], "f.idx")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_altered_arrays_signed_again_are_refused_or_load_and_match_without_crashing(
        dbpedia_slice, dbpedia_taxonomy, pubs, data):
    """Even a file signed with this installation's key (altered by someone who holds it) is
    never a crash: every id the matcher reads is checked to be in range."""
    engine = loaded_or_refused(altered_and_signed(_small(dbpedia_slice, dbpedia_taxonomy),
                                                  ("t_", "q_", "m_", "v_", "p_"), data.draw))
    if engine is None:
        return
    try:
        for pub in pubs[:10]:
            engine.match(pub)
        for rq in engine.queries()[:5]:
            engine.unregister(rq.id)
    except IndexFileError:
        pass  # (a model that disagrees with the table, found when it is decoded)


def test_a_version_3_file_is_refused_with_what_to_do():
    data = Engine().to_bytes()
    old = data[:8] + (3).to_bytes(4, "little") + data[12:]
    with pytest.raises(IndexFileError, match=r"^f.idx: index format version 3, but this rtf reads version 4; "
                                             r"rebuild it with `rtf index build`$"):
        Engine.from_bytes(old, "f.idx")


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), n=st.integers(4, 40), removed=st.integers(0, 30), added=st.integers(0, 8),
       mix=st.sampled_from(sorted(MIXES)))
def test_a_save_after_a_load_writes_the_loaded_models_again_without_decoding_them(
        dbpedia_slice, dbpedia_taxonomy, pubs, seed, n, removed, added, mix):
    records = generate_queries(dbpedia_slice, n + added, seed=seed, mix=MIXES[mix], taxonomy=dbpedia_taxonomy)
    engine = Engine("rtfs", taxonomy=dbpedia_taxonomy)
    for k, r in enumerate(records[:n]):
        engine.register(r["query"], r["id"], r["subscriber"], metadata={"k": k} if k % 3 == 0 else None)
    loaded = Engine.from_bytes(engine.to_bytes())
    gone = [r["id"] for r in records[:n][1::2][:removed]]
    for qid in gone:
        loaded.unregister(qid)
        engine.unregister(qid)
    for r in records[n:]:
        loaded.register(r["query"], r["id"], r["subscriber"])
        engine.register(r["query"], r["id"], r["subscriber"])
    kept = next((rq for rq in loaded.queries() if hasattr(rq, "_models")), None)
    # (a file with queries the table does not map had its models decoded at load)
    reused = kept is not None and kept._models.queries is None and 2 * (n - len(gone)) >= n
    data = loaded.to_bytes()
    event(f"the loaded models written again as they were: {reused}")
    if reused:  # (the loaded models were not decoded to be written again)
        assert kept._models.queries is None
    for again in (Engine.from_bytes(data), Engine.from_bytes(unsigned(data))):
        assert [(q.id, q.subscriber, q.metadata, q.query) for q in again.queries()] == \
            [(q.id, q.subscriber, q.metadata, q.query) for q in engine.queries()]
        assert answers(again, pubs) == answers(engine, pubs)


def test_the_installation_key_is_made_once_whole_and_private(tmp_path, monkeypatch):
    """Processes saving their first index at once (xdist workers, `rtf match --workers`)
    share one key, and none reads it half-written (then it would save unsigned)."""
    import os
    import stat
    import time
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.delenv(sections.KEY_VARIABLE, raising=False)
    monkeypatch.setenv(sections.KEY_FILE_VARIABLE, str(tmp_path / "conf" / "rtf" / "index.key"))
    assert sections.installation_key() is None  # none yet, and none made when not asked
    real_token_bytes = sections.secrets.token_bytes

    def slow_token_bytes(n):  # (widens the window in which the others look)
        time.sleep(0.05)
        return real_token_bytes(n)

    monkeypatch.setattr(sections.secrets, "token_bytes", slow_token_bytes)
    with ThreadPoolExecutor(8) as pool:
        keys = list(pool.map(lambda _: sections.installation_key(create=True), range(32)))
    assert len(set(keys)) == 1 and len(keys[0]) == 32
    path = tmp_path / "conf" / "rtf" / "index.key"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert sorted(os.listdir(path.parent)) == ["index.key"]  # no leftover of the losers


def test_a_model_block_inflating_to_more_than_its_offsets_give_is_refused_before_it_is_decoded():
    """A zlib bomb in `m_blocks` (re-signed) is refused when its query's model is read, having
    inflated no more than the record offsets give (rtf/io/query_models.py)."""
    import zlib

    from rtf.io.query_models import ModelRecords, model_sections

    engine = Engine("rtfs")
    for k in range(40):
        engine.register(f'SELECT ?s WHERE {{ ?s <http://ex/p{k}> ?o FILTER ftcontains(?o, "w{k}") }}', f"q{k}")
    arrays = model_sections(rq.query for rq in engine.queries())
    records = ModelRecords(arrays, 40)
    assert [records.raw(k) for k in range(40)] == [ModelRecords(arrays, 40).raw(k) for k in range(40)]
    bomb = zlib.compress(b" " * (64 << 20), 9)
    arrays["m_block_offsets"] = np.array([0, len(bomb), len(bomb) + 1, len(bomb) + 2], dtype=np.int64)
    arrays["m_blocks"] = np.frombuffer(bomb + b"xy", dtype=np.uint8)
    with pytest.raises(ValueError, match="not the length their offsets give"):
        ModelRecords(arrays, 40).raw(3)
    arrays["m_record_offsets"][5] = arrays["m_record_offsets"][4]  # an empty record: refused
    with pytest.raises(ValueError, match="offsets are inconsistent"):
        ModelRecords(arrays, 40)


def test_a_save_after_a_load_copies_the_unchanged_model_blocks_still_compressed(monkeypatch):
    """`rtf index add` of one query compresses the models of the blocks that changed, not all."""
    from rtf.io import query_models

    engine = Engine("rtfs")
    for k in range(40 * query_models.BLOCK_QUERIES + 3):
        engine.register(f'SELECT ?s WHERE {{ ?s <http://ex/p{k % 7}> ?o FILTER ftcontains(?o, "w{k}") }}', f"q{k}")
    loaded = Engine.from_bytes(engine.to_bytes())
    loaded.register('SELECT ?s WHERE { ?s <http://ex/p> ?o FILTER ftcontains(?o, "new") }', "new")
    engine.register('SELECT ?s WHERE { ?s <http://ex/p> ?o FILTER ftcontains(?o, "new") }', "new")
    read, raw = set(), query_models.ModelRecords.raw
    monkeypatch.setattr(query_models.ModelRecords, "raw",
                        lambda self, k: read.add(k // self.per) or raw(self, k))
    data = loaded.to_bytes()
    # (the first 256 records make the dictionary; the last block, partial, has the new query)
    assert read == set(range(query_models.DICTIONARY_QUERIES // query_models.BLOCK_QUERIES)) | {40}
    monkeypatch.undo()
    again = Engine.from_bytes(data)
    assert [q.query for q in again.queries()] == [q.query for q in engine.queries()]
    assert again._queries["q5"]._models.records.data.tobytes() == \
        sections.unpack(engine.to_bytes(), store.FORMAT_VERSION).arrays["m_blocks"].tobytes()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="ab\né€😀", max_size=4), max_size=8), st.data())
def test_strings_read_back_as_written_and_a_cut_inside_a_character_is_refused(values, data):
    """`sections.read_strings` splits the joined bytes at newlines put between them (or
    slices them when a string holds one): the strings as written, and an offset moved
    inside a character refused, as each string decoded alone would be."""
    offsets, raw = sections.strings(values)
    assert sections.read_strings(offsets, raw, "x") == values
    inside = [k for k in range(1, len(offsets) - 1) if any(
        offsets[k - 1] < at < offsets[k + 1] and (raw[at] & 0xC0) == 0x80 for at in [int(offsets[k]) + 1])]
    if inside:
        moved = offsets.copy()
        moved[data.draw(st.sampled_from(inside))] += 1
        with pytest.raises(ValueError):
            sections.read_strings(moved, raw, "x")
