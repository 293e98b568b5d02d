"""Format 4's mapped value tests (rtf/matching/value_snapshot.py): a value-tested query is
restored from the file's arrays, not registered again from its model, and the loaded engine
answers, changes, pickles and saves again as a freshly built one and the reference; a damaged
or re-signed file is refused with one `IndexFileError` or loads without crashing."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rtf import Engine
from rtf.bench.values_workload import values_publications, values_queries
from rtf.errors import IndexFileError
from rtf.io import sections, store
from rtf.matching.query_table import PENDING
from tests.index_bodies import altered_and_signed, assert_answers_as_the_reference, loaded_or_refused, unsigned


def answers(engine: Engine, pubs) -> list:
    return [sorted((m.query_id, m.subscriber, m.solutions, m.is_ask) for m in engine.match(p)) for p in pubs]


def built(records, algorithm: str = "rtfs") -> Engine:
    engine = Engine(algorithm)
    for r in records:
        engine.register(r["query"], r["id"], r.get("subscriber"))
    return engine


def _stars(pubs) -> list[dict]:
    """Stars whose tested value is projected (answered per projected star: not mapped)."""
    predicates = sorted({t[1][1:-1] for pub in pubs for t in pub.triples})[:4]
    return [{"id": f"star{n}", "query": f"SELECT ?s ?v WHERE {{ ?s <{p}> ?v FILTER(?v > 3) }}"}
            for n, p in enumerate(predicates)]


def test_value_tested_queries_are_mapped_back_not_registered_again():
    records, pubs = values_queries(300, seed=1), values_publications(60, seed=1)
    engine = built(records)
    loaded = Engine.from_bytes(engine.to_bytes())
    table = loaded._index.table
    assert all(branches and branches[0] is PENDING for branches in table.queries.values())
    assert loaded._queries[records[0]["id"]]._models.queries is None  # no model decoded
    assert table.values.saved is not None and not table.values.branch_conj
    want = answers(engine, pubs)
    assert answers(loaded, pubs) == want and sum(map(len, want)) > 50
    assert not loaded._queries[records[0]["id"]]._models.decoded  # (answered without a model)
    assert {**loaded.stats(), "index_bytes_estimate": 0} == \
        {**engine.stats(), "truncated_matches": 0, "index_bytes_estimate": 0}
    checked = Engine.from_bytes(unsigned(engine.to_bytes()))
    assert checked._index.table.mapped is None and answers(checked, pubs) == answers(engine, pubs)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), n=st.integers(5, 120), algorithm=st.sampled_from(["rtfs", "rtfm"]),
       removed=st.integers(0, 40), added=st.integers(0, 20), stars=st.booleans())
def test_saved_loaded_changed_and_saved_again_answers_as_a_fresh_engine_and_the_reference(
        seed, n, algorithm, removed, added, stars):
    pubs = values_publications(30, seed=seed)
    records = values_queries(n + added, seed=seed) + (_stars(pubs) if stars else [])
    kept, later = records[:n] + records[n + added:], records[n:n + added]
    engine = built(kept, algorithm)
    loaded = Engine.from_bytes(engine.to_bytes())
    assert answers(loaded, pubs) == answers(engine, pubs)
    assert_answers_as_the_reference(loaded, pubs)
    gone = [r["id"] for r in kept[::3][:removed]]
    for qid in gone:
        loaded.unregister(qid)
    for r in later:
        loaded.register(r["query"], r["id"], r.get("subscriber"))
    fresh = built([r for r in kept if r["id"] not in set(gone)] + later, algorithm)
    assert answers(loaded, pubs) == answers(fresh, pubs)
    assert_answers_as_the_reference(loaded, pubs)
    again = Engine.from_bytes(loaded.to_bytes())
    assert answers(again, pubs) == answers(fresh, pubs)
    assert len(again._index.table.values) == len(fresh._index.table.values)


def _optionals(pubs) -> list[dict]:
    """OPTIONAL queries over the publications' predicates, some with value tests too."""
    predicates = sorted({t[1][1:-1] for pub in pubs for t in pub.triples} - {RDF_TYPE})
    return [{"id": f"opt{n}", "query": f"SELECT ?s ?v ?w WHERE {{ ?s <{p}> ?v OPTIONAL {{ ?s <{q}> ?w }} {f} }}"}
            for n, (p, q, f) in enumerate((p, q, f) for p in predicates for q in predicates[:3]
                                          for f in ("", "FILTER(?v > 3)", "FILTER(!bound(?w))"))]


RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"


def test_optional_queries_are_mapped_back_and_answer_as_a_fresh_engine_and_the_reference():
    pubs = values_publications(40, seed=2)
    records = _optionals(pubs) + values_queries(60, seed=2)
    engine = built(records)
    loaded = Engine.from_bytes(engine.to_bytes())
    assert all(branches and branches[0] is PENDING for branches in loaded._index.table.queries.values())
    want = answers(engine, pubs)
    assert answers(loaded, pubs) == want and any(m[0].startswith("opt") for found in want for m in found)
    assert_answers_as_the_reference(loaded, pubs)
    for r in records[::4]:
        loaded.unregister(r["id"])
        engine.unregister(r["id"])
    for r in records[::8]:
        loaded.register(r["query"], "again-" + r["id"])
        engine.register(r["query"], "again-" + r["id"])
    again = Engine.from_bytes(loaded.to_bytes())
    assert answers(loaded, pubs) == answers(engine, pubs) == answers(again, pubs)


@pytest.mark.parametrize("matched_first", [False, True])
def test_a_loaded_engine_pickled_removes_and_registers_as_the_reference(matched_first):
    """A loaded engine's restored branches (`PENDING`) and value tests travel by pickle, and
    the copy removes every query and registers some anew as the reference does."""
    records, pubs = values_queries(300, seed=5), values_publications(60, seed=5)
    records += _stars(pubs)
    loaded = Engine.from_bytes(built(records).to_bytes())
    if matched_first:
        loaded.match(pubs[0])
    copy = pickle.loads(pickle.dumps(loaded))
    naive = built(records, "naive")
    for r in records[::2] + records[1::2]:
        copy.unregister(r["id"])
        naive.unregister(r["id"])
    for r in records[:100:2]:
        copy.register(r["query"], "again-" + r["id"])
        naive.register(r["query"], "again-" + r["id"])
    want = answers(naive, pubs)
    assert answers(copy, pubs) == want and sum(map(len, want)) > 50


SMALL: dict[bool, bytes] = {}


DBO = "http://dbpedia.org/ontology/"


def _small(unmapped: bool = True) -> bytes:
    """A small signed file of value queries, an opaque test, projected stars and an OPTIONAL
    among them; with `unmapped`, a version-3 query too, registered at load (which builds
    every value index then): without, the value indexes and conjunctions are read from the
    arrays only when a publication asks."""
    if unmapped not in SMALL:
        records = values_queries(40, seed=11) + _stars(values_publications(10, seed=11))
        records.append({"id": "regex-test", "query": f'SELECT ?s WHERE {{ ?s <{DBO}birthName> ?v '
                                                f'FILTER(regex(?v, "^A")) }}'})
        records.append({"id": "optional-test", "query": f"SELECT ?s ?d WHERE {{ ?s <{DBO}birthName> ?v "
                                                   f"OPTIONAL {{ ?s <{DBO}birthDate> ?d }} FILTER(?v != \"A\") }}"})
        if unmapped:
            records.append({"id": "minus", "query": f"SELECT ?s WHERE {{ ?s <{DBO}birthName> ?v "
                                                 f"MINUS {{ ?s <{DBO}birthDate> ?d }} }}"})
        SMALL[unmapped] = built(records).to_bytes()
    return SMALL[unmapped]


@pytest.mark.parametrize("unmapped", [False, True])
def test_the_small_file_holds_every_kind_of_value_section(unmapped):
    arrays = sections.unpack(_small(unmapped), store.FORMAT_VERSION).arrays
    assert arrays["t_query_mapped"].all() != unmapped
    assert all(arrays[name].size for name in ("v_atom_conj", "v_held", "v_groups", "v_part_kind",
                                              "v_structure_shapes", "v_consts", "p_head"))
    assert (arrays["p_slot_code"] >= 0).any()
    assert (arrays["v_part_kind"] < 0).any() and (arrays["v_part_kind"] >= 0).any()  # opaque and indexed


@settings(max_examples=40, deadline=None)
@given(cut=st.floats(0, 1, exclude_max=True))
def test_every_truncation_of_a_signed_value_file_is_refused(cut):
    data = _small()
    with pytest.raises(IndexFileError):
        Engine.from_bytes(data[:int(cut * len(data))], "f.idx")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_altered_value_sections_signed_again_are_refused_or_load_and_match_without_crashing(data):
    """Even a file signed with this installation's key is never a crash: every number the
    value tests read is checked to be in range."""
    engine = loaded_or_refused(altered_and_signed(_small(data.draw(st.booleans())), ("v_", "p_"), data.draw))
    if engine is None:
        return
    try:
        for pub in values_publications(10, seed=11):
            engine.match(pub)
        for rq in engine.queries()[:8]:
            engine.unregister(rq.id)
        engine.register(values_queries(1, seed=12)[0]["query"], "new")
    except IndexFileError:
        pass  # (a model that disagrees with the table, found when it is decoded)


def _tables(tables: dict) -> dict:
    """A value index's tables as plain values, each value with its type (1 and 1.0 differ)."""
    return {op: ({kind: ([(type(v).__name__, repr(v)) for v in s.values], s.ids.tolist(), s.nan_ids.tolist())
                  for kind, s in table.by_kind.items()},
                 table.valueless, table.valueless_nonliteral) for op, table in tables.items()}


@pytest.mark.parametrize("seed", [1, 2])
def test_the_value_indexes_are_laid_out_as_saved_as_their_tests_build_them(seed):
    """A restored value index's sorted constants come from the file (ints and floats from their
    numbers, the others parsed from their keys, no sort): the very tables its tests build."""
    from rtf.matching.value_index import ValueIndex

    loaded = Engine.from_bytes(built(values_queries(600, seed=seed)).to_bytes())
    indexes = [index for group in loaded._index.table.values.groups.values()
               for _, index in group.operands.values()]
    assert indexes and all(index.saved is not None and index.saved.runs is not None for index in indexes)
    kinds = set()
    for index in indexes:
        laid = index._build()  # (from the runs: the tests are not made)
        assert index.saved is not None
        plain = ValueIndex()
        for test_id, test in index.tests().items():
            plain.add(test_id, test)
        assert _tables(laid) == _tables(plain._build())
        kinds |= {kind for table in laid.values() for kind in table.by_kind}
    assert len(kinds) >= 5  # (integers, decimals, doubles, strings, dates...)


def test_an_engine_without_value_tests_or_projected_stars_writes_no_such_sections():
    engine = Engine("rtfs")
    engine.register("SELECT ?s WHERE { ?s <http://ex/p> ?o }", "q1")
    arrays = sections.unpack(engine.to_bytes(), store.FORMAT_VERSION).arrays
    assert "t_head" in arrays and not any(name[:2] in ("v_", "p_") for name in arrays)
    loaded = Engine.from_bytes(engine.to_bytes())
    loaded.register("SELECT ?s ?v WHERE { ?s <http://ex/p> ?v FILTER(?v > 3) }", "q2")
    assert [m.query_id for m in loaded.match([("<http://ex/a>", "<http://ex/p>", '"4"^^<http://www.w3.org/2001/'
                                                                                  'XMLSchema#integer>')])] == ["q1", "q2"]
    again = sections.unpack(loaded.to_bytes(), store.FORMAT_VERSION).arrays
    assert "v_head" in again and "p_head" in again
