"""The shape families (rtf.bench.shapes): deterministic, registrable everywhere, answered alike
by every engine, and each of the shape it is named for.

The families are the shape matrix's workloads (docs/benchmarks.md, "Shape matrix"): if one
drifted from its shape -- a "projected value star" projecting ?x alone, a chain that is a
star -- the matrix would measure something else under its name.
"""

from __future__ import annotations

import doctest
import json
import random
import subprocess
import sys

import pytest
from hypothesis import given, settings, strategies as st

from rtf.bench import shape_sources, shapes
from rtf.bench.shape_sources import MissingShapeError, ShapeSources, value_kind
from rtf.bench.shapes import FAMILIES, shape_queries, shape_stream
from rtf.engine import ALGORITHMS, Engine
from rtf.io.reader import read_publications
from rtf.parser import parse_query
from rtf.query.model import Compare, FtContains, In
from rtf.query.terms import IRI, RDF_TYPE, Variable

TYPE = f"<{RDF_TYPE}>"


@pytest.fixture(scope="module")
def sources(dbpedia_slice):
    return ShapeSources(dbpedia_slice)


def parsed(sources, family: str, n: int, seed: int = 0, ft_pr: float = 0.5):
    return [parse_query(r["query"]) for r in shape_queries(sources, family, n, seed=seed, ft_pr=ft_pr)]


def variables(expr) -> set[str]:
    """The variables an expression (a filter) mentions, anywhere in it."""
    if isinstance(expr, Variable):
        return {expr.name}
    found = set()
    for name in getattr(expr, "__slots__", ()) or getattr(expr, "__dataclass_fields__", ()):
        value = getattr(expr, name, None)
        for part in value if isinstance(value, tuple) else (value,):
            if part is not None and not isinstance(part, (str, int, float, bool)):
                found |= variables(part)
    return found


def filters_of(expr) -> list:
    """The atoms of a filter's && and ||."""
    parts = getattr(expr, "operands", None)
    if parts is not None and type(expr).__name__ in ("And", "Or"):
        return [a for p in parts for a in filters_of(p)]
    return [expr]


def object_variables(query) -> dict[str, str]:
    """variable -> the predicate key of the pattern whose object it is (not rdf:type)."""
    return {t.object.name: t.predicate.key for t in query.patterns
            if isinstance(t.object, Variable) and isinstance(t.predicate, IRI)}


@pytest.mark.parametrize("module", [shapes, shape_sources])
def test_the_docstring_examples_run(module):
    assert doctest.testmod(module, optionflags=doctest.ELLIPSIS).failed == 0


@pytest.mark.parametrize("family", FAMILIES)
def test_the_same_seed_gives_the_same_queries_and_another_seed_others(sources, family):
    a, b = shape_queries(sources, family, 60, seed=4), shape_queries(sources, family, 60, seed=4)
    assert a == b
    assert a != shape_queries(sources, family, 60, seed=5)
    assert len({r["id"] for r in a}) == 60


@pytest.mark.slow
def test_the_queries_do_not_depend_on_the_hash_seed(dbpedia_slice):
    """Values, classes and words pass through sets and counters: their order must not leak in."""
    from rtf.io import datasets

    files = [str(f) for f in datasets.dbpedia_files() if f.name.startswith(("nordlys", "esbm", "db8k28"))]
    code = ("import json; from rtf.io.reader import read_publications; "
            "from rtf.bench.shapes import FAMILIES, shape_queries; "
            "from rtf.bench.shape_sources import ShapeSources; "
            f"s = ShapeSources(read_publications({files!r})); "
            "print(json.dumps([shape_queries(s, f, 80, seed=3) for f in FAMILIES]))")
    outputs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                              env={"PYTHONHASHSEED": seed, "PATH": ""}).stdout for seed in ("1", "2")}
    assert len(outputs) == 1 and len(json.loads(outputs.pop())) == len(FAMILIES)


@pytest.mark.parametrize("family", FAMILIES)
def test_every_query_registers_in_every_engine(sources, family):
    records = shape_queries(sources, family, 150, seed=1, ft_pr=0.5)
    for algorithm in ALGORITHMS:
        engine = Engine(algorithm)
        engine.register_many((r["query"], r["id"]) for r in records)
        assert len(engine) == 150


def answers_agree(records: list[dict], pubs) -> int:
    """Assert that every engine gives `naive`'s matches and solutions for `records` on each
    of `pubs`; the number of (publication, query) matches compared."""
    engines = {a: Engine(a) for a in ALGORITHMS}
    for engine in engines.values():
        engine.register_many((r["query"], r["id"]) for r in records)
    found = 0
    for pub in pubs:
        want = [(m.query_id, m.solutions) for m in engines["naive"].match(pub)]
        found += len(want)
        for algorithm, engine in engines.items():
            assert [(m.query_id, m.solutions) for m in engine.match(pub)] == want, (algorithm, pub.id)
    return found


#: Each family once, the paper's mix at each FT_pr of the matrix (0, 50, 100 %).
ROWS = [(f, ft) for f in FAMILIES for ft in ((0.0, 0.5, 1.0) if f == "paper-dbpedia" else (0.5,))]


@pytest.mark.parametrize("family, ft_pr", ROWS)
def test_every_engine_gives_the_reference_answers(sources, family, ft_pr):
    records = shape_queries(sources, family, 250, seed=2, ft_pr=ft_pr)
    pubs = random.Random(family).sample(shape_stream(sources, family), 12)
    assert answers_agree(records, pubs) > 0  # they match: the comparison is not of empty answers


@settings(max_examples=12, deadline=None)
@given(family=st.sampled_from(sorted(FAMILIES)), seed=st.integers(0, 10**6),
       ft_pr=st.sampled_from([0.0, 0.5, 1.0]), pick=st.randoms(use_true_random=False))
def test_every_engine_gives_the_reference_answers_for_any_seed(sources, family, seed, ft_pr, pick):
    """The families' whole space, not one seed's queries: any seed, any publications of the stream."""
    records = shape_queries(sources, family, 60, seed=seed, ft_pr=ft_pr)
    answers_agree(records, pick.sample(shape_stream(sources, family), 4))


def test_value_stars_project_their_values_with_the_issue_s_operators(sources):
    queries = parsed(sources, "value-star", 400)
    for q in queries:
        assert len({t.subject for t in q.patterns}) == 1  # a star
        values = [v for v, p in object_variables(q).items() if p != TYPE]
        assert set(values) & set(q.projection), q.text  # at least one value variable projected
    text = " ".join(q.text for q in queries)
    for operator in (" IN (", "||", "&&", "year(", "lang(", "ftcontains(", " <= ", " > "):
        assert operator in text, operator
    several = sum(len(set(object_variables(q)) & set(q.projection)) > 1 for q in queries)
    unfiltered = sum(not q.filters for q in queries)
    assert several > 40 and 20 < unfiltered < 120


def test_chains_join_two_subjects_and_project_the_far_value(sources):
    for q in parsed(sources, "chain", 300):
        hops = [(a, b) for a in q.patterns for b in q.patterns
                if isinstance(a.object, Variable) and a.object == b.subject and a.subject != b.subject]
        assert any(isinstance(b.object, Variable) and b.object.name in q.projection for _, b in hops), q.text
    # and the publications they are matched against hold several subjects
    assert all(len({t[0] for t in p.triples}) > 1 for p in shape_stream(sources, "chain"))


def test_multi_valued_queries_project_objects_of_properties_with_several_values(sources):
    several = {p for pub in sources.multi_valued
               for p in shape_sources.multi_valued_predicates(shape_sources.own_triples(pub))}
    for q in parsed(sources, "multi-valued", 300):
        projected = {v: p for v, p in object_variables(q).items() if v in q.projection}
        assert set(projected.values()) & several, q.text


def test_joined_filters_compare_two_variables_of_the_query(sources):
    for q in parsed(sources, "joined-filter", 300):
        objects = set(object_variables(q))
        assert any(isinstance(f, Compare) and len(variables(f) & objects) == 2
                   for f in q.filters for f in filters_of(f)), q.text


def test_text_values_put_full_text_and_a_value_test_on_one_subject(sources):
    for q in parsed(sources, "text-values", 300):
        assert len({t.subject for t in q.patterns}) == 1
        atoms = [a for f in q.filters for a in filters_of(f)]
        text_vars = {a.var.name for a in atoms if isinstance(a, FtContains)}
        value_vars = {v for a in atoms if not isinstance(a, FtContains) for v in variables(a)}
        assert text_vars and value_vars and not text_vars & value_vars, q.text


def test_the_paper_mix_on_whole_descriptions_applies_its_ft_pr(sources):
    def with_text(queries):
        return sum(any(t.fulltext is not None for b in q.branches for t in b.tuples) for q in queries)

    by_ft = {ft: parsed(sources, "paper-dbpedia", 300, ft_pr=ft) for ft in (0.0, 0.5, 1.0)}
    assert 0 == with_text(by_ft[0.0]) < with_text(by_ft[0.5]) < with_text(by_ft[1.0])
    # its predicates are those of whole descriptions (DBpedia's mix), not the sample's
    described = {t[1] for p in sources.descriptions for t in p.triples}
    assert {t.predicate.key for qs in by_ft.values() for q in qs for t in q.patterns
            if isinstance(t.predicate, IRI)} <= described


@pytest.mark.parametrize("rare", [True, False])
def test_constants_are_rare_or_frequent_as_named(sources, rare):
    counts = sources.constant_publications
    family = "rare-constants" if rare else "frequent-constants"
    for q in parsed(sources, family, 300):
        constants = [(t.predicate.key, t.object.key) for t in q.patterns if isinstance(t.object, IRI)]
        assert constants, q.text
        for pair in constants:
            assert counts[pair] <= 2 if rare else counts[pair] >= sources.frequent_limit, (pair, q.text)


def test_value_kinds():
    xsd = "http://www.w3.org/2001/XMLSchema#"
    assert value_kind(f'"3511"^^<{xsd}nonNegativeInteger>') == "number"
    assert value_kind(f'"1950"^^<{xsd}gYear>') == "year"
    assert value_kind('"1.5E9"^^<http://dbpedia.org/datatype/euro>') == "unit"
    assert value_kind('"x"^^<http://dbpedia.org/datatype/euro>') == "other"
    assert value_kind('"Rio"') == "string" and value_kind("<http://ex/a>") is None


def _sample_files() -> list[str]:
    from rtf.io import datasets

    return [str(f) for f in datasets.dbpedia_files() if f.name.startswith(("nordlys", "esbm", "db8k28"))]


@pytest.mark.slow
def test_gen_queries_writes_a_family_and_its_publications_that_rtf_match_reads(dbpedia_slice, tmp_path):
    """The chains' publications hold several subjects: written as N-Quads, one graph each, and
    read back by graph they are the publications the family is matched against."""
    from rtf.cli import main

    queries, pubs, out = tmp_path / "q.jsonl", tmp_path / "p.nq", tmp_path / "m.jsonl"
    sample = tmp_path / "sample.nt"
    sample.write_text("".join(f"{s} {p} {o} .\n" for pub in dbpedia_slice for s, p, o in pub.triples))
    argv = ["gen-queries", "--publications", str(sample), "--mix", "chain", "-n", "40",
            "--seed", "2", "--write-publications", str(pubs), "-o", str(queries)]
    assert main(argv) == 0
    records = [json.loads(line) for line in queries.read_text().splitlines()]
    sources = ShapeSources(read_publications(str(sample)))
    assert records == shape_queries(sources, "chain", 40, seed=2)
    assert main(["match", "--queries", str(queries), "--publications", str(pubs), "--group-by", "graph",
                 "--output", str(out)]) == 0
    got = sorted((m["publication"], m["query"]) for m in map(json.loads, out.read_text().splitlines()))
    engine = Engine()
    engine.register_many((r["query"], r["id"]) for r in records)
    want = sorted((p.id, m.query_id) for p in shape_stream(sources, "chain") for m in engine.match(p))
    assert got == want and len(want) > 40


def test_rtf_bench_runs_a_shape_family_on_its_own_publications(tmp_path, capsys):
    from rtf.cli import main

    out = tmp_path / "bench.json"
    code = main(["bench", "--publications", *_sample_files(), "--mix", "value-star", "--db", "30,60",
                 "--pubs", "20", "--algorithms", "rtfs,naive", "--no-memory", "--json", str(out)])
    doc = json.loads(out.read_text())
    assert code == 0 and doc["params"]["mix"] == "value-star"
    assert [(r["algorithm"], r["db"]) for r in doc["runs"]] == [("rtfs", 30), ("rtfs", 60), ("naive", 30), ("naive", 60)]
    assert all(r["matches_agree"] for r in doc["runs"]) and doc["runs"][1]["matches"] > 0
    capsys.readouterr()


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_publications_without_a_family_s_shape_are_a_user_error(tmp_path, capsys, family):
    """Not an internal error: one line that names the shape the publications lack (every
    family: paper-dbpedia once gave "internal error: ValueError")."""
    from rtf.cli import main

    one = tmp_path / "one.nt"
    one.write_text('<http://ex/a> <http://ex/p> "x" .\n')
    with pytest.raises(MissingShapeError, match=f"{family} shape"):
        shape_queries(read_publications(str(one)), family, 3)
    with pytest.raises(MissingShapeError, match=f"{family} queries against"):
        shape_stream(read_publications(str(one)), family)
    code = main(["gen-queries", "--publications", str(one), "--mix", family, "-n", "3",
                 "-o", str(tmp_path / "q.jsonl")])
    err = capsys.readouterr().err.strip()
    assert code == 1 and f"no publication has the {family} shape" in err and "internal" not in err
    assert len(err.splitlines()) == 1


@pytest.mark.slow
def test_the_shape_matrix_script_measures_each_family_and_tabulates_it(dbpedia_slice):
    """benchmarks/shape_matrix.py, run tiny in this process: a row per family and size, whose
    counts are those of the engine on the family's stream, and a table of them."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "shape_matrix.py"
    spec = importlib.util.spec_from_file_location("shape_matrix", path)
    matrix = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(matrix)
    assert matrix.rows_to_run(["chain", "paper-dbpedia"]) == [
        ("chain", 50), ("paper-dbpedia", 0), ("paper-dbpedia", 50), ("paper-dbpedia", 100)]
    sources = ShapeSources(dbpedia_slice)
    rows = matrix.measure(sources, "value-star", 50, [30, 60], 6, 0, "rtfs")
    assert [(r["family"], r["queries"], r["publications"]) for r in rows] == [
        ("value-star", 30, 6), ("value-star", 60, 6)]
    from rtf.bench.inputs import sample_publications
    sample = sample_publications(shape_stream(sources, "value-star"), 6, 0)
    engine = Engine("naive")
    engine.register_many((r["query"], r["id"]) for r in shape_queries(sources, "value-star", 60, seed=0))
    assert rows[1]["matches_per_pub"] == sum(len(engine.match(p)) for p in sample) / 6 > 0
    for r in rows:
        assert r["pubs_per_s"] > 0 and r["wall_pubs_per_s"] > 0 and r["register_q_per_s"] > 0
    table = matrix.format_matrix(rows).splitlines()
    assert len(table) == 2 + len(rows) and table[2].startswith("| value-star | 30 |")
