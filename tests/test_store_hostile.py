"""Hostile and damaged index files (issue 21, item 5): refused with one
`IndexFileError`, never a crash, a MemoryError or an engine that answers
differently from the reference.

The checksum is recomputed in every family below (it is no signature), so
each damage reaches the decoder: bombs, truncations, bit flips inside the
compressed and the decompressed body, wrong field types, inconsistent
models. Whatever loads must answer exactly as the naive engine with the
same loaded queries.
"""

from __future__ import annotations

import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rtf import Engine, Publication
from rtf.errors import IndexFileError
from rtf.io import store
from tests.index_bodies import assert_answers_as_the_reference, body, packed_body, raw_body, with_body, with_raw, wrap

EX = "PREFIX ex: <http://ex/> "
QUERIES = [
    EX + 'SELECT ?s WHERE { ?s ex:p ?o FILTER ftcontains(?o, "rio" ftnear(0, 2) "games") }',
    EX + 'SELECT ?s ?o WHERE { ?s ex:p ?o FILTER ftcontains(?o, "olymp*" ftor "gold") }',
    EX + 'ASK { ?s ex:p ?o . ?s a ex:C FILTER (lang(?o) = "en" || ftcontains(?o, ftnot "rio")) }',
    EX + 'SELECT * WHERE { { ?s ex:p ?o } UNION { ?s ex:q ?o } OPTIONAL { ?s ex:r ?v } '
         'FILTER (!bound(?v) || ?v > 3) }',
    EX + 'SELECT ?s WHERE { ?s a/rdfs:subClassOf* ex:C . ?s ex:q "x"@en FILTER regex(str(?s), "a") }',
    EX + 'SELECT ?s WHERE { ?s ex:n ?n FILTER (xsd:integer(?n) + 1 IN (2, 3)) }',
]
PUBLICATIONS = [
    Publication("http://ex/a", [("<http://ex/a>", "<http://ex/p>", '"Games in Rio, gold"@en'),
                                ("<http://ex/a>", "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>",
                                 "<http://ex/D>"),
                                ("<http://ex/a>", "<http://ex/q>", '"x"@en'),
                                ("<http://ex/a>", "<http://ex/r>",
                                 '"4"^^<http://www.w3.org/2001/XMLSchema#integer>'),
                                ("<http://ex/a>", "<http://ex/n>", '"1"')]),
    Publication("http://ex/b", [("<http://ex/b>", "<http://ex/p>", '"Olympics"'),
                                ("<http://ex/b>", "<http://ex/q>", '"rio games"')]),
]


def saved(algorithm: str = "rtfs") -> bytes:
    from rtf.io.taxonomy import Taxonomy
    engine = Engine(algorithm, taxonomy=Taxonomy({"<http://ex/D>": ["<http://ex/C>"],
                                                  "<http://ex/C>": []}))
    for i, q in enumerate(QUERIES):
        engine.register(q, f"q{i}", subscriber="alice" if i % 2 else None,
                        metadata={"n": i} if i == 1 else None)
    return engine.to_bytes()


def answers(engine: Engine) -> list:
    return [sorted((m.query_id, m.subscriber, m.solutions, m.is_ask) for m in engine.match(p))
            for p in PUBLICATIONS]


def loads_consistently_or_is_refused(data: bytes) -> None:
    """The property every damaged file must have."""
    try:
        engine = Engine.from_bytes(data, "f.idx")
    except IndexFileError as e:
        assert "\n" not in str(e) and str(e).startswith("f.idx: ")
        return
    assert_answers_as_the_reference(engine, PUBLICATIONS)


BASE = saved()


def test_the_base_file_loads_and_every_engine_answers_as_the_reference():
    loads_consistently_or_is_refused(BASE)
    for algorithm in ("naive", "rtfm", "ibroker"):
        assert answers(Engine.from_bytes(saved(algorithm))) == answers(Engine.from_bytes(BASE))
    assert any(answers(Engine.from_bytes(BASE)))


@pytest.mark.slow
@pytest.mark.parametrize("raw_length", [None, 10, 1 << 20])
def test_a_zlib_bomb_with_a_recomputed_checksum_is_an_index_error(raw_length):
    packed = zlib.compress(b"[" + b"0," * (256 << 20) + b"0]", 9)  # 512 MiB in ~500 KB
    claimed = 512 << 20 if raw_length is None else raw_length
    with pytest.raises(IndexFileError, match="claims|does not decompress"):
        Engine.from_bytes(wrap(packed, claimed), "bomb.idx")


def test_a_bomb_snapshot_makes_the_server_rebuild_from_its_table(tmp_path):
    from rtf.server.registry import Registry
    registry = Registry(tmp_path)
    registry.put("q1", QUERIES[0], "alice")
    registry.snapshot()
    registry.close()
    packed = zlib.compress(b" " * (64 << 20), 9)
    (tmp_path / "snapshot.idx").write_bytes(wrap(packed, 64 << 20))
    again = Registry(tmp_path)
    assert again.startup["from"] == "rebuilt" and "q1" in again.engine
    again.close()


@settings(max_examples=60, deadline=None)
@given(cut=st.integers(0, len(BASE) - 1))
def test_every_truncation_is_refused(cut):
    with pytest.raises(IndexFileError):
        Engine.from_bytes(BASE[:cut], "f.idx")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(flips=st.lists(st.tuples(st.integers(0, len(packed_body(BASE)[0]) - 1), st.integers(0, 7)),
                      min_size=1, max_size=3))
def test_bit_flips_in_the_stored_body_with_a_recomputed_checksum(flips):
    packed, raw_length = packed_body(BASE)
    packed = bytearray(packed)
    for at, bit in flips:
        packed[at] ^= 1 << bit
    loads_consistently_or_is_refused(wrap(bytes(packed), raw_length))


RAW = raw_body(body(BASE))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(flips=st.lists(st.tuples(st.integers(0, len(RAW) - 1), st.sampled_from(
    [1, 2, 4, 8, 16, 32, 64])), min_size=1, max_size=2))
def test_bit_flips_in_the_decompressed_body_with_a_recomputed_checksum(flips):
    raw = bytearray(RAW)
    for at, bit in flips:
        raw[at] ^= bit
    loads_consistently_or_is_refused(with_raw(bytes(raw)))


_ANY_JSON = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.just(10 ** 30),
                      st.floats(allow_nan=False), st.text(max_size=5), st.just([]), st.just([0]),
                      st.just([10 ** 6]), st.just({}), st.just("x"), st.just("\ud800"))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_field_of_another_type_or_range_is_refused_or_harmless(data):
    content = body(BASE)
    values = content["values"]
    n = data.draw(st.integers(0, len(values) - 1))
    entry = values[n]
    if len(entry) > 1:
        k = data.draw(st.integers(1, len(entry) - 1))
        entry[k] = data.draw(_ANY_JSON)
    else:
        entry.append(data.draw(_ANY_JSON))
    loads_consistently_or_is_refused(with_body(content))


@settings(max_examples=150, deadline=None)
@given(key=st.sampled_from(["algorithm", "max_solutions", "next_id", "taxonomy", "classes",
                            "values", "queries"]), value=_ANY_JSON)
def test_a_top_level_field_of_another_type_is_refused_or_harmless(key, value):
    content = body(BASE)
    content[key] = value
    loads_consistently_or_is_refused(with_body(content))


@settings(max_examples=150, deadline=None)
@given(i=st.integers(0, len(QUERIES) - 1), k=st.integers(0, 3), value=_ANY_JSON)
def test_a_query_entry_of_another_type_is_refused_or_harmless(i, k, value):
    content = body(BASE)
    entry = content["queries"][i]
    if k < len(entry):
        entry[k] = value
    else:
        entry.append(value)
    loads_consistently_or_is_refused(with_body(content))


def _value_of(content: dict, cls: str) -> list:
    c = content["classes"].index(cls)
    return next(v for v in content["values"] if v[0] == c)


@pytest.mark.parametrize("damage, message", [
    (lambda v: v.__setitem__(3, "x"), "FTNear field is wrong: 'x'"),
    (lambda v: v.__setitem__(3, 5), "minimum exceeds the maximum"),
    (lambda v: v.__setitem__(3, True), "FTNear field is wrong"),
    (lambda v: v.__setitem__(5, 0), "FTNear field is wrong"),
])
def test_an_ftnear_bound_of_the_wrong_type_or_range_is_refused_at_load(damage, message):
    content = body(BASE)
    damage(_value_of(content, "FTNear"))
    with pytest.raises(IndexFileError, match=message):
        Engine.from_bytes(with_body(content), "f.idx")


def test_branches_cannot_be_smuggled_in_and_a_query_must_match_its_group():
    content = body(BASE)
    content["classes"].append("Branch")
    content["values"].insert(0, [len(content["classes"]) - 1, [0], [0]])
    with pytest.raises(IndexFileError, match="class this rtf does not know"):
        Engine.from_bytes(with_body(content), "f.idx")
    # the UNION query: its patterns listed without the second side's
    content = body(BASE)
    query = content["values"][content["queries"][3][2]]
    patterns = content["values"][query[4][0]]
    content["values"].append(patterns[:-1])  # a tuple of fewer patterns
    query[4] = [len(content["values"]) - 1]
    content["values"].append(content["values"].pop(content["queries"][3][2]))
    for entry in content["queries"]:  # the query moved to the end: point at it there
        if entry[2] == content["queries"][3][2]:
            entry[2] = len(content["values"]) - 1
    with pytest.raises(IndexFileError, match="not those of its group|malformed"):
        Engine.from_bytes(with_body(content), "f.idx")


@pytest.mark.parametrize("cls, k, value", [
    ("IRI", 1, "not an iri"), ("IRI", 1, "http://ex/a b"), ("FTWord", 1, "Two words"),
    ("FTWord", 1, "Rio"), ("FTWord", 1, ""), ("Variable", 1, ""), ("Query", 1, "DESCRIBE"),
    ("Literal", 3, "EN"), ("Literal", 3, "not a tag!"),
])
def test_values_the_parser_could_not_make_are_refused(cls, k, value):
    content = body(BASE)
    _value_of(content, cls)[k] = value
    with pytest.raises(IndexFileError, match="malformed"):
        Engine.from_bytes(with_body(content), "f.idx")


def test_a_lone_surrogate_anywhere_is_refused():
    content = body(BASE)
    content["queries"][0][1] = "al\ud800ice"
    with pytest.raises(IndexFileError, match="lone surrogate"):
        Engine.from_bytes(with_body(content), "f.idx")


# ------------------------------------------- nothing the parser makes is refused

from tests import worlds  # noqa: E402


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(worlds.queries(), min_size=1, max_size=5))
def test_every_query_the_parser_makes_survives_the_checks(texts):
    engine = Engine("rtfs", taxonomy=worlds.taxonomy())
    engine.register_many([(text, f"q{i}") for i, text in enumerate(texts)], lambda *_: None)  # refused: left out
    loaded = Engine.from_bytes(engine.to_bytes(), "f.idx")
    assert [(rq.id, rq.query, rq.query.branches) for rq in loaded.queries()] == [
        (rq.id, rq.query, rq.query.branches) for rq in engine.queries()]


def _lines(data: bytes) -> list[bytes]:
    return zlib.decompress(packed_body(data)[0]).split(b"\n")[:-1]


@pytest.mark.parametrize("damage, message", [
    (lambda ls: ls[:1] + [b'{"values": [], "queries": []}'] + ls[1:], "not {\"values\""),
    (lambda ls: ls[:1] + [b'{"pickle": []}'] + ls[1:], "not {\"values\""),
    (lambda ls: ls[:1] + [b"[]"] + ls[1:], "not {\"values\""),
    (lambda ls: ls[:1] + [b""] + ls[1:], "cannot be decoded"),
    (lambda ls: [ls[0]] + [ls[-1]] + ls[1:-1], "does not refer to a query"),  # queries before values
    (lambda ls: ls[1:], "first line is not an object|algorithm"),
])
def test_lines_out_of_place_are_refused(damage, message):
    raw = b"".join(line + b"\n" for line in damage(_lines(BASE)))
    with pytest.raises(IndexFileError, match=message):
        Engine.from_bytes(with_raw(raw), "f.idx")


def test_a_body_cut_inside_its_last_line_is_refused():
    raw = b"".join(line + b"\n" for line in _lines(BASE))
    with pytest.raises(IndexFileError, match="whole line"):
        Engine.from_bytes(with_raw(raw[:-1]), "f.idx")


def test_a_file_of_many_lines_loads_as_the_engine_that_wrote_it(monkeypatch):
    monkeypatch.setattr(store, "LINE_ENTRIES", 2)  # a value line and a query line every two
    data = saved()
    assert len(_lines(data)) >= 8  # the head, value lines, three query lines
    loaded = Engine.from_bytes(data)
    assert [(rq.id, rq.query, rq.subscriber, rq.metadata) for rq in loaded.queries()] == [
        (rq.id, rq.query, rq.subscriber, rq.metadata) for rq in Engine.from_bytes(BASE).queries()]
    loads_consistently_or_is_refused(data)
