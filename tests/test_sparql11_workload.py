"""The ``sparql11`` mix (rtf.bench.sparql11_workload): selective subscriptions, a share of them
rewritten into SPARQL 1.1 (version 3) queries around the same star.

What is checked: the base queries are the selective mix's whatever the share; every rewrite is
a version-3 query that parses and registers in every engine; the rewrites that keep the star
require it (so they stay as selective); every query matches the publication it was modelled
on; and the indexed engines give the reference engine's answers (the presearch is exact).
"""

from __future__ import annotations

import doctest
import json
import random
from collections import Counter

import pytest

from rtf.bench import confirm_census, sparql11_workload
from rtf.bench.sparql11_workload import KINDS, Version3Builder
from rtf.bench.workload import Mix, Vocabulary, _Builder, generate_queries
from rtf.cli import main
from rtf.engine import ALGORITHMS, Engine
from rtf.io import datasets
from rtf.parser import parse_query
from rtf.query.terms import BlankNode, Variable
from tests.test_bench import generated_under_hash_seeds

#: The rewrites whose required triple patterns hold the whole base star (the others change
#: one tuple: a path reverses it or makes it either of two, VALUES makes a constant a variable).
KEEP_THE_STAR = set(KINDS) - {"path", "zero_path", "values"}


@pytest.fixture(scope="module")
def slice_pubs(dbpedia_slice):
    """Typed DBpedia publications of the three source formats, and some abstracts."""
    return dbpedia_slice[::6]


@pytest.fixture(scope="module")
def vocabulary(slice_pubs):
    return Vocabulary(slice_pubs)


def rewrites(vocab, n: int, seed: int = 0, share: float = 1.0):
    """`n` (kind, base query, query) of the sparql11 mix at `share`; kind None for a base one."""
    base_builder = _Builder(vocab, random.Random(seed), Mix.sparql11(v3_share=share))
    builder = Version3Builder(base_builder, seed)
    out = []
    for _ in range(n):
        state = base_builder.rng.getstate()
        text = builder.query()
        after = base_builder.rng.getstate()
        base_builder.rng.setstate(state)  # the base query again, from the same draws
        base = base_builder.query()
        assert base_builder.rng.getstate() == after
        out.append((builder.last_kind, base, text))
    return out


def _signature(branch) -> set:
    """A branch's tuples as (predicate, object or 'var', full text): variable names aside."""
    def term(t):
        return "var" if isinstance(t, (Variable, BlankNode)) else str(t)
    return {(term(t.predicate), term(t.object), str(t.fulltext)) for t in branch.tuples}


@pytest.mark.parametrize("module", [sparql11_workload, confirm_census])
def test_the_docstring_examples_run(module):
    assert doctest.testmod(module, optionflags=doctest.ELLIPSIS).failed == 0


def test_the_base_queries_are_the_selective_mix_whatever_the_share(slice_pubs):
    selective = generate_queries(slice_pubs, 300, seed=3, mix=Mix.selective())
    assert generate_queries(slice_pubs, 300, seed=3, mix=Mix.sparql11(v3_share=0.0)) == selective
    mixed = generate_queries(slice_pubs, 300, seed=3, mix=Mix.sparql11())
    changed = [(a, b) for a, b in zip(selective, mixed) if a != b]
    assert [a["id"] for a in selective] == [b["id"] for b in mixed]
    assert 0.12 < len(changed) / 300 < 0.28, len(changed)  # binomial(300, 0.2): 0.2 +- 4 sigma
    for _, rec in changed:
        assert parse_query(rec["query"]).algebra is not None, rec["query"]


def test_the_mix_is_deterministic_by_seed_and_not_by_hash_seed(slice_pubs):
    first = generate_queries(slice_pubs, 200, seed=5, mix=Mix.sparql11(v3_share=0.5))
    assert generate_queries(list(slice_pubs), 200, seed=5, mix=Mix.sparql11(v3_share=0.5)) == first
    assert generate_queries(slice_pubs, 200, seed=6, mix=Mix.sparql11(v3_share=0.5)) != first
    files = [str(f) for f in datasets.dbpedia_files() if f.name.startswith(("nordlys", "esbm"))]
    assert len(generated_under_hash_seeds(files, 150, "Mix.sparql11(v3_share=1.0)")) == 1


@pytest.mark.slow
def test_every_rewrite_is_version_3_and_keeps_its_star(vocabulary):
    kinds = Counter()
    for kind, base, text in rewrites(vocabulary, 1500):
        kinds[kind] += 1
        q, b = parse_query(text), parse_query(base)
        assert q.algebra is not None and b.algebra is None, text
        assert q.branches, f"a {kind} query that requires no triple: {text}"
        if kind in KEEP_THE_STAR:
            star = _signature(b.branches[0])
            assert all(star <= _signature(branch) for branch in q.branches), (kind, text)
    assert set(kinds) == set(KINDS), set(KINDS) - set(kinds)
    # weights as KINDS says (zero-length paths rare): the commonest is aggregate
    assert kinds.most_common(1)[0][0] == "aggregate" and kinds["zero_path"] < 0.01 * 1500


def test_every_query_parses_and_registers_in_every_engine(vocabulary):
    records = generate_queries(vocabulary, 400, seed=8, mix=Mix.sparql11(v3_share=1.0))
    for algorithm in ALGORITHMS:
        engine = Engine(algorithm)
        for r in records:
            engine.register(r["query"], r["id"], r["subscriber"])
        assert len(engine) == len(records)


def _answers(records, publications, algorithm: str) -> list[list]:
    engine = Engine(algorithm)
    for r in records:
        engine.register(r["query"], r["id"])
    return [[(m.query_id, m.solutions, m.is_ask) for m in engine.match(p)] for p in publications]


def test_every_query_matches_the_publication_it_was_modelled_on(slice_pubs):
    """Class, properties, constants and words come from one publication, and each rewrite
    keeps it a match (MINUS and NOT EXISTS on a property it lacks, VALUES with its value)."""
    pubs = slice_pubs[::4]
    records = generate_queries(pubs, 250, seed=1, mix=Mix.sparql11(v3_share=1.0))
    hits = Counter({r["id"]: 0 for r in records})
    for found in _answers(records, pubs, "rtfs"):
        hits.update(qid for qid, _, _ in found)
    never = [r["query"] for r in records if hits[r["id"]] == 0]
    assert not never, never[:3]


@pytest.mark.parametrize("algorithm", [a for a in ALGORITHMS if a != "naive"])
def test_the_engines_give_the_reference_answers(slice_pubs, vocabulary, algorithm):
    """The presearch is exact: an index skips a query only where its answer is empty."""
    records = generate_queries(vocabulary, 300, seed=4, mix=Mix.sparql11(v3_share=0.6))
    pubs = slice_pubs[::9]
    expected = _answers(records, pubs, "naive")
    v3 = {r["id"] for r in records if parse_query(r["query"]).algebra is not None}
    assert sum(qid in v3 for found in expected for qid, _, _ in found) > 20
    assert _answers(records, pubs, algorithm) == expected


@pytest.mark.slow
def test_gen_queries_and_bench_run_the_mix(tmp_path, capsys):
    files = [str(f) for f in datasets.dbpedia_files() if f.name.startswith(("nordlys", "esbm"))]
    if not files:
        pytest.skip(datasets.missing_message())
    base, v2, v3 = tmp_path / "base.jsonl", tmp_path / "v2.jsonl", tmp_path / "v3.jsonl"
    argv = ["gen-queries", "--publications", *files, "-n", "200", "--seed", "2"]
    assert main([*argv, "--selective", "-o", str(base)]) == 0
    assert main([*argv, "--mix", "sparql11", "--v3-share", "0", "-o", str(v2)]) == 0
    assert main([*argv, "--mix", "sparql11", "-o", str(v3)]) == 0
    assert v2.read_text() == base.read_text() != v3.read_text()
    out = tmp_path / "bench.json"
    assert main(["bench", "--publications", *files, "--mix", "sparql11", "--v3-share", "0.5",
                 "--db", "100,200", "--pubs", "40", "--algorithms", "naive,rtfs,ibroker",
                 "--no-memory", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    report = capsys.readouterr().out
    assert doc["params"]["mix"]["v3_share"] == 0.5 and doc["params"]["v3_share"] == 0.5
    assert all(r["matches_agree"] for r in doc["runs"]) and doc["runs"][-1]["matches"] > 0
    # the version-3 census: the reference engine confirms every version-3 query on every
    # publication, an index only its candidates, and every match was a candidate
    v3 = [parse_query(json.loads(line)["query"]).algebra is not None
          for line in bench_queries(files, tmp_path)]
    runs = {(r["algorithm"], r["db"]): r for r in doc["runs"]}
    for db in (100, 200):
        naive, rtfs = runs["naive", db], runs["rtfs", db]
        assert naive["v3_candidates_per_pub"] == sum(v3[:db])
        assert naive["v3_matches_per_pub"] == rtfs["v3_matches_per_pub"] > 0
        assert rtfs["v3_matches_per_pub"] <= rtfs["v3_candidates_per_pub"] < naive["v3_candidates_per_pub"]
        assert 0 < rtfs["confirm_pct"] < 100
    assert f"{sum(v3):,} version-3 queries" in report and "candidates confirmed per publication" in report
    assert main(["bench", "--publications", *files, "--mix", "selective", "--db", "50", "--pubs", "10",
                 "--algorithms", "rtfs", "--no-memory", "--json", str(out)]) == 0
    assert "v3_candidates_per_pub" not in json.loads(out.read_text())["runs"][0]


def bench_queries(files, tmp_path) -> list[str]:
    """The queries the bench above generated (the same seed, share and count)."""
    path = tmp_path / "bench_queries.jsonl"
    assert main(["gen-queries", "--publications", *files, "-n", "200", "--seed", "0", "--mix",
                 "sparql11", "--v3-share", "0.5", "-o", str(path)]) == 0
    return path.read_text().splitlines()
