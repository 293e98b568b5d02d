"""Queries registered as text keep their text, not their model (`rtf.matching.registered.TextRecord`).

A query's model is parsed again from its text whenever it is read; matching reads
none (the query table keeps what it needs). Cheap: a few dozen registrations.
"""

import pickle

from rtf import Engine, Publication, parse_query
from rtf.matching.query_table import RegisteredBranch
from rtf.matching.registered import RegisteredQuery, TextRecord
from rtf.query import terms

FT = 'SELECT ?s WHERE { ?s <http://ex/abstract> ?o FILTER ftcontains(?o, "river" ftand "bank") }'
JOIN = ('SELECT ?s ?n WHERE { ?s <http://ex/abstract> ?o . ?s <http://ex/name> ?n '
        'FILTER ftcontains(?o, "river") }')
RESIDUAL = 'SELECT ?s WHERE { ?s <http://ex/name> ?n FILTER(contains(?n, "Bank")) }'
PUB = [("<http://ex/a>", "<http://ex/abstract>", '"the river bank"'),
       ("<http://ex/a>", "<http://ex/name>", '"Bank of the river"'),
       ("<http://ex/b>", "<http://ex/abstract>", '"a river"')]
_MODEL = RegisteredQuery.query.__get__  # (what a record holds where the model is)
_BRANCH = RegisteredBranch.branch.__get__


def _engine(**kwargs) -> Engine:
    engine = Engine("rtfs", **kwargs)
    engine.register(FT, "ft", "alice", metadata={"k": 1})
    engine.register(JOIN, "join")
    engine.register(RESIDUAL, "residual")
    engine.register(parse_query(FT), "parsed")  # a model handed in: kept as it is
    return engine


def _held(engine: Engine, query_id: str):
    """(the record's held value, its branches' held values) in `engine`."""
    table = engine._index.table
    return _MODEL(engine._queries[query_id]), [_BRANCH(rb) for rb in table.queries[query_id]]


def test_a_query_registered_as_text_holds_its_text_and_reads_as_its_model():
    engine = _engine()
    record = engine.get("ft")
    assert type(record) is TextRecord and record.text == FT
    held, branches = _held(engine, "ft")
    assert held == FT and branches == [record]  # no model, no branch: the text
    assert record.query == parse_query(FT) and record.metadata == {"k": 1}
    plain = RegisteredQuery("ft", parse_query(FT), "alice", False, record.metadata)
    assert record == plain and plain == record and hash(record) == hash(plain)
    assert engine._index.table.queries["ft"][0].branch == parse_query(FT).branches[0]
    # A join and a residual filter read their branch: kept; a model handed in is kept.
    for qid in ("join", "residual"):
        assert isinstance(_held(engine, qid)[1][0], type(parse_query(FT).branches[0]))
    assert _held(engine, "parsed")[0] == parse_query(FT)


def test_an_engine_that_reads_every_model_or_analyses_text_keeps_the_models():
    import pytest

    from rtf import TextAnalysis
    from rtf.io.builder import IndexBuilder
    keeper = Engine("rtfs", keep_models=True)
    keeper.register(FT, "ft")
    analysed = Engine("rtfs", text_analysis=TextAnalysis(fold_accents=True))
    analysed.register(FT, "ft")
    loaded_later = Engine("rtfs")  # (set on an engine made elsewhere: a loaded one, a builder's)
    loaded_later.register(FT, "before")
    loaded_later.keep_models = True
    loaded_later.register(FT, "ft")
    assert type(loaded_later.get("before")) is TextRecord
    built = Engine("rtfs")
    IndexBuilder(built)  # (it reads every model for the file)
    built.register(FT, "ft")
    for engine in (keeper, analysed, loaded_later, built):
        assert type(engine.get("ft")) is RegisteredQuery and _held(engine, "ft")[0].text == FT
    with pytest.raises(TypeError, match="keep_models must be a bool"):
        Engine(keep_models="yes")
    state = keeper.__getstate__()  # an engine pickled by an rtf that named it _keep_models
    state["_keep_models"] = state.pop("keep_models")
    old = Engine.__new__(Engine)
    old.__setstate__(state)
    assert old.keep_models is True and "_keep_models" not in vars(old)
    assert pickle.loads(pickle.dumps(Engine())).keep_models is False


def test_full_text_tuples_are_not_kept_in_the_shared_values():
    t = parse_query(FT).branches[0].tuples[0]
    assert t.fulltext is not None and terms._SHARED.get(t) is not t
    plain = parse_query('SELECT ?s WHERE { ?s <http://ex/name> ?n }').branches[0].tuples[0]
    assert terms._SHARED.get(plain) is plain  # (shared as before)


def test_a_copy_pickled_saved_or_loaded_answers_alike_and_explains(tmp_path):
    engine = _engine()
    expected = engine.match(PUB)
    assert sorted(expected.query_ids) == ["ft", "join", "parsed", "residual"]
    path = tmp_path / "e.idx"
    engine.save(path)
    copy = pickle.loads(pickle.dumps(engine))
    assert type(copy.get("ft")) is TextRecord and _held(copy, "ft")[0] == FT  # still lean
    for other in (copy, Engine.load(path)):
        assert other.match(PUB) == expected
        assert other.get("ft") == engine.get("ft")
        found = next(m for m in other.match(PUB) if m.query_id == "ft")
        assert "river" in str(found.explain(Publication("p", PUB), other))
        other.unregister("ft")
        other.register(FT, "ft", "alice")
        assert other.match(PUB).query_ids == expected.query_ids


def test_a_loaded_shape_reads_its_full_text_from_the_file_and_shares_its_words(tmp_path):
    import sys

    import numpy as np
    import pytest

    from rtf.matching.table_snapshot import _full_texts
    engine = _engine()
    path = tmp_path / "e.idx"
    engine.save(path)
    loaded = Engine.load(path)
    shapes = [s for s in loaded._index.table.shape_at.tolist() if s is not None and s.has_words]
    assert shapes and all(w is sys.intern(w) for s in shapes for w in s.words)
    assert "_entries" not in type(shapes[0]).__slots__  # (read from the mapped section, by shape id)
    assert {s.fulltext for s in shapes} == {rb.shapes[0].fulltext for q in ("ft", "join")
                                             for rb in engine._index.table.queries[q]}
    data = np.frombuffer("é".encode(), dtype=np.uint8)
    with pytest.raises(ValueError, match="UTF-8"):  # a text that begins inside a character
        _full_texts(np.array([0, 1, 2]), data, None)


def test_a_save_parses_each_query_kept_as_text_once_and_writes_the_bytes_of_kept_models(monkeypatch):
    import rtf.parser
    kept = _engine(keep_models=True)
    engine = _engine()
    parses = []
    real = rtf.parser.parse_query
    monkeypatch.setattr(rtf.parser, "parse_query", lambda text, *a, **k: parses.append(text) or real(text, *a, **k))
    assert engine.to_bytes() == kept.to_bytes()
    assert sorted(parses) == sorted([FT, JOIN, RESIDUAL])  # (a save reads each model twice)
