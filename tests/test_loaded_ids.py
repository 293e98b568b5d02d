"""`rtf.matching.loaded_ids.LoadedMap`: a loaded engine's records and branches by id, each made
when first read, behave as the dicts they stand for (order included); a load makes none."""

from __future__ import annotations

import pickle

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rtf import Engine
from rtf.matching.loaded_ids import FileIds, LoadedMap

IDS = ["a", "b", "c", "d", "e"]
PRESENT = [True, True, False, True, True]  # ("c": absent, as a query the load registers from its model)


def _pair(present=PRESENT):
    made = []

    def make(k: int) -> str:
        made.append(k)
        return f"file-{IDS[k]}"

    loaded = LoadedMap(FileIds(IDS), make, np.array(present))
    plain = {i: f"file-{i}" for i, p in zip(IDS, present) if p}
    return loaded, plain, made


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["set", "del", "get"]),
                          st.sampled_from(IDS + ["x", "y"]), st.integers(0, 9)), max_size=25))
def test_a_loaded_map_behaves_as_a_dict(operations):
    """Set, delete, read in any order: the same entries in the same order as a dict."""
    loaded, plain, _ = _pair([True] * len(IDS))
    for op, key, value in operations:
        if op == "set":
            plain[key] = loaded[key] = value
        elif op == "del" and key in plain:
            del plain[key], loaded[key]
        assert loaded.get(key) == plain.get(key) and (key in loaded) == (key in plain)
        assert list(loaded) == list(plain) and loaded.values() == list(plain.values()) and len(loaded) == len(plain)
    copied = pickle.loads(pickle.dumps(loaded))  # (as Spark ships an engine: the dict it stands for)
    assert copied == plain and type(copied) is dict


def test_entries_are_made_when_first_read_and_once():
    loaded, _, made = _pair()
    assert made == [] and len(loaded) == 4 and "c" not in loaded
    assert loaded["b"] == "file-b" and loaded["b"] == "file-b" and made == [1]
    loaded["c"] = "registered"
    assert list(loaded) == ["a", "b", "c", "d", "e"] and made == [1]
    del loaded["a"]
    loaded["a"] = "again"  # (removed and registered again: last, as a dict puts it)
    assert list(loaded) == ["b", "c", "d", "e", "a"] and loaded["a"] == "again"


def test_a_load_makes_no_record_until_one_is_read(tmp_path):
    engine = Engine("rtfs")
    for n in range(5):
        engine.register(f'SELECT ?s WHERE {{ ?s <http://ex/p{n}> ?o }}', f"q{n}", "alice" if n % 2 else None)
    engine.save(tmp_path / "q.idx")
    loaded = Engine.load(tmp_path / "q.idx")
    assert isinstance(loaded._queries, LoadedMap) and loaded._queries._made == {}
    assert loaded._index.table.queries._made == {}
    assert [m.query_id for m in loaded.match([("<http://ex/s>", "<http://ex/p3>", "<http://ex/o>")])] == ["q3"]
    assert loaded._queries._made == {}  # (a match's ids and subscribers come from the table)
    assert loaded.get("q3").subscriber == "alice" and list(loaded._queries._made) == [3]
    # A shape with words is made when a match finds it, not by the load (the forest keeps its id).
    engine.register('SELECT ?s WHERE { ?s <http://ex/t> ?o FILTER ftcontains(?o, "rio") }', "ft")
    table = Engine.from_bytes(engine.to_bytes())._index.table
    assert not [s for s in table.shape_at.tolist() if s is not None and s.has_words]
    assert table.mapped.unmade.count == 1 and len([s for s in table.shape_at.tolist() if s is not None]) == 5
    again = Engine.from_bytes(engine.to_bytes())
    assert [m.query_id for m in again.match([("<http://ex/s>", "<http://ex/t>", '"Rio"')])] == ["ft"]
    assert [s.words for s in again._index.table.shape_at.tolist() if s is not None and s.has_words] == [("rio",)]
    again.unregister("ft")  # (its shape's id leaves the forest and the word index)
    assert again.match([("<http://ex/s>", "<http://ex/t>", '"Rio"')]) == [] and len(again) == 5
    loaded.unregister("q1")
    loaded.register('SELECT ?s WHERE { ?s <http://ex/p1> ?o }', "q1")
    assert [q.id for q in loaded.queries()] == ["q0", "q2", "q3", "q4", "q1"]
    assert [(q.id, q.subscriber, q.query) for q in loaded.queries()] == \
        [(q.id, q.subscriber, q.query) for q in Engine.from_bytes(loaded.to_bytes()).queries()]


def test_a_mapped_load_and_its_matches_import_no_query_parser(tmp_path):
    """`rtf match --index` parses no query: the engine, the store and its term checks import
    the parser (lark: ~0.05 s of a 0.15 s start) only where they parse."""
    import subprocess
    import sys

    engine = Engine("rtfs")
    engine.register('SELECT ?s WHERE { ?s <http://ex/p> ?o FILTER ftcontains(?o, "rio") }', "q1")
    engine.save(tmp_path / "q.idx")
    code = ("import sys; from rtf import Engine; e = Engine.load(sys.argv[1]); "
            "assert e._index.table.mapped is not None; "
            "assert [m.query_id for m in e.match([('<http://ex/s>', '<http://ex/p>', '\"Rio\"')])] == ['q1']; "
            "print(sorted(m for m in ('lark', 'rtf.parser') if m in sys.modules))")
    found = subprocess.run([sys.executable, "-c", code, str(tmp_path / "q.idx")], capture_output=True, text=True)
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == "[]"


def test_a_waiting_shape_s_keys_come_back_as_saved():
    """`UnmadeShapes` keeps a shape's keys as one string until the shape is made: keys that
    the string could not give back (empty, holding the separator) are kept as they are."""
    from rtf.matching.query_table import QueryTable
    from rtf.matching.table_snapshot import UnmadeShapes, _full_texts

    keys = [["a", "b"], ["a\x00b"], [""], ["x", ""], [], [[["w"], ["pre"]], [["v"], []]]]
    raw = [["?1", "<http://ex/p>", "?2", k] for k in keys] + [None]
    texts = _full_texts(np.zeros(len(raw) + 1, dtype=np.int64), np.zeros(0, dtype=np.uint8), None)
    shapes = UnmadeShapes(raw, texts, np.zeros(len(raw), dtype=bool))
    assert shapes.alternatives.tolist() == [1, 1, 1, 1, 0, 2, 0] and shapes.structure_of.tolist() == [0] * 6 + [-1]
    table = QueryTable()
    assert [shapes.make(table, sid)._keys for sid in range(6)] == \
        [("a", "b"), ("a\x00b",), ("",), ("x", ""), (), ((("w",), ("pre",)), (("v",), ()))]
    assert shapes.count == 0 and table.shapes_of([0, 6]) == [table.shape_at[0], None]
