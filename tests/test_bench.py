"""``rtf bench``: its JSON, its table, and that it cries out when engines disagree.

Every test runs the real command on a small generated world (a few dozen
publications, a few dozen queries), so the whole file takes seconds.
"""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rtf.bench import inputs, timing
from rtf.cli import main

EX = "http://ex.org/"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
WORDS = ("olympic games rio football season club stadium city river film music "
         "opened final cup league team won lost year new old").split()
RUN_FIELDS = {"algorithm", "db", "publications", "insert_s", "filter_ms_mean", "filter_ms_p50",
              "filter_ms_p99", "pubs_per_s", "kb_per_s", "index_mb", "matches", "matches_per_pub"}
MACHINE_FIELDS = {"cpu", "cores", "memory_gb", "python", "os"}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """40 publications over a small vocabulary, so that queries match often."""
    rng = random.Random(1)
    lines = []
    for i in range(40):
        s = f"<{EX}r{i}>"
        lines.append(f"{s} <{RDF_TYPE}> <{EX}{rng.choice(['Club', 'City', 'Film'])}> .")
        lines.append(f'{s} <{EX}label> "{" ".join(rng.sample(WORDS, 2))}"@en .')
        lines.append(f'{s} <{EX}abstract> "{" ".join(rng.choices(WORDS, k=12))}"@en .')
        for _ in range(rng.randint(0, 3)):
            lines.append(f"{s} <{EX}near> <{EX}r{rng.randrange(40)}> .")
    path = tmp_path_factory.mktemp("bench") / "world.nt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def bench_args(world, *extra):
    return ["bench", "--publications", world, "--db", "20,40", "--pubs", "15", *extra]


def run_json(capsys, tmp_path, *argv):
    out = tmp_path / "bench.json"
    code = main([*argv, "--json", str(out)])
    stdout, stderr = capsys.readouterr()
    return code, json.loads(out.read_text()), stdout, stderr


@pytest.mark.slow
def test_json_has_the_documented_fields(world, tmp_path, capsys):
    code, doc, _, _ = run_json(capsys, tmp_path, *bench_args(world))
    assert code == 0
    assert set(doc) == {"params", "machine", "runs"}
    assert "tracemalloc" in doc["params"]["memory_method"]
    assert MACHINE_FIELDS <= set(doc["machine"])
    assert doc["params"]["db"] == [20, 40] and doc["params"]["step"] == 20
    assert len(doc["runs"]) == 3 * 2  # rtfs, rtfm, ibroker at two DB sizes
    for r in doc["runs"]:
        assert RUN_FIELDS <= set(r), RUN_FIELDS - set(r)
        assert not any(k.startswith("_") for k in r)
        assert r["publications"] == 15 and r["inserted"] == 20
        assert r["filter_ms_p50"] <= r["filter_ms_p99"]
        assert r["index_mb"] > 0 and r["pubs_per_s"] > 0 and r["kb_per_s"] > 0


@pytest.mark.slow
def test_match_counts_agree_across_algorithms_at_each_db_size(world, tmp_path, capsys):
    code, doc, stdout, _ = run_json(capsys, tmp_path, *bench_args(world))
    assert code == 0
    assert all(r["matches_agree"] and r["mismatch"] is None for r in doc["runs"])
    for db in (20, 40):
        runs = [r for r in doc["runs"] if r["db"] == db]
        assert len({r["matches"] for r in runs}) == 1
        assert len({r["digest"] for r in runs}) == 1
    assert max(r["matches"] for r in doc["runs"]) > 0, "the world should produce matches"
    assert "matches agree: FT_pr=50% DB=40" in stdout
    assert "MISMATCH" not in stdout


@pytest.mark.slow
def test_a_wrong_engine_makes_the_bench_fail_loudly(world, tmp_path, capsys, monkeypatch):
    from rtf.engine import Engine

    real_match = Engine.match

    def lossy_match(self, publication):
        found = real_match(self, publication)
        return found[:-1] if self.algorithm == "rtfm" else found  # drops one answer

    monkeypatch.setattr(Engine, "match", lossy_match)
    code, doc, stdout, _ = run_json(capsys, tmp_path, *bench_args(world))
    assert code == inputs.EXIT_MISMATCH
    assert "MATCH MISMATCH" in stdout
    assert not any(r["matches_agree"] for r in doc["runs"])
    bad = [r for r in doc["runs"] if r["mismatch"]]
    assert {r["algorithm"] for r in bad} == {"rtfm"}
    mismatch = bad[0]["mismatch"]
    assert mismatch["algorithms"] == ["rtfs", "rtfm"]
    assert mismatch["publication"] and mismatch["differing_queries"]
    assert mismatch["publication"] in stdout and mismatch["differing_queries"][0] in stdout
    reproduction = mismatch["reproduction"]
    assert reproduction and reproduction["rtfm"] == [] and reproduction["rtfs"]


@pytest.mark.slow
def test_ibroker_on_a_sample_is_compared_on_the_common_publications(world, tmp_path, capsys):
    code, doc, stdout, _ = run_json(capsys, tmp_path, *bench_args(world, "--ibroker-pubs", "5"))
    assert code == 0
    seen = {r["algorithm"]: r["publications"] for r in doc["runs"]}
    assert seen == {"rtfs": 15, "rtfm": 15, "ibroker": 5}
    assert all(r["common_publications"] == 5 for r in doc["runs"])
    for db in (20, 40):
        assert len({r["common_matches"] for r in doc["runs"] if r["db"] == db}) == 1
    assert doc["params"]["publications_per_algorithm"] == {"rtfs": 15, "rtfm": 15, "ibroker": 5}
    assert "ibroker 5" in stdout


def test_the_terminal_table_names_every_run(world, capsys):
    assert main(bench_args(world, "--algorithms", "rtfs,naive", "--no-memory")) == 0
    stdout = capsys.readouterr().out
    header = stdout.splitlines()[0].split()
    assert header[:3] == ["algorithm", "FT%", "DB"] and "matches" in header
    rows = [line.split()[0] for line in stdout.splitlines()[2:6]]
    assert rows == ["rtfs", "naive", "rtfs", "naive"]


@pytest.mark.slow
def test_same_seed_same_answers_in_process_or_forked(world, tmp_path, capsys):
    _, forked, _, _ = run_json(capsys, tmp_path, *bench_args(world, "--no-memory"))
    _, here, _, _ = run_json(capsys, tmp_path, *bench_args(world, "--no-memory", "--in-process"))
    assert [r["digest"] for r in forked["runs"]] == [r["digest"] for r in here["runs"]]
    _, other, _, _ = run_json(capsys, tmp_path, *bench_args(world, "--no-memory", "--seed", "9"))
    assert [r["digest"] for r in other["runs"]] != [r["digest"] for r in here["runs"]]


@pytest.mark.slow
def test_several_ft_pr_and_plots(world, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    plots = tmp_path / "plots"
    argv = bench_args(world, "--ft-pr", "0,100", "--algorithms", "rtfs,rtfm", "--no-memory",
                      "--plots", str(plots))
    code, doc, _, _ = run_json(capsys, tmp_path, *argv)
    assert code == 0
    assert {r["ft_pr"] for r in doc["runs"]} == {0, 100}
    names = sorted(p.name for p in plots.iterdir())
    assert names == ["fig5_filtering.png", "fig6_memory_insertion.png", "fig7_ft_pr.png"]
    assert all((plots / n).read_bytes()[:4] == b"\x89PNG" for n in names)


@pytest.mark.parametrize("argv, message", [
    (["--db", "10,x"], "comma-separated integers"),
    (["--ft-pr", "150"], "0 to 100"),
    (["--algorithms", "rtfs,lucene"], "unknown algorithm lucene"),
    (["--pubs", "0"], "positive"),
    (["--mix", "dense"], "invalid choice: 'dense'"),
])
def test_bad_arguments_are_one_line_errors(world, capsys, argv, message):
    with pytest.raises(SystemExit) as e:
        main(["bench", "--publications", world, *argv])
    assert e.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.slow
def test_selective_bench_reports_selectivity_and_latency(world, tmp_path, capsys):
    code, doc, stdout, _ = run_json(capsys, tmp_path, *bench_args(world, "--mix", "selective",
                                                                 "--no-memory"))
    assert code == 0
    assert doc["params"]["mix_name"] == "selective" and doc["params"]["mix"]["rare_class"] == 1.0
    _, paper, _, _ = run_json(capsys, tmp_path, *bench_args(world, "--no-memory"))
    assert paper["params"]["mix_name"] == "paper" and paper["params"]["mix"]["rare_class"] == 0.0
    for r in doc["runs"]:
        assert r["matches_per_pub"] == pytest.approx(r["matches"] / r["publications"])
    assert {r["digest"] for r in doc["runs"]}.isdisjoint(r["digest"] for r in paper["runs"])
    assert "matches/pub" in stdout.splitlines()[0]
    assert "workload: the selective mix" in stdout
    summary = next(line for line in stdout.splitlines() if line.startswith("at FT_pr=50% DB=40:"))
    assert "matches per publication" in summary and "p50 / p99" in summary
    assert "rtfs" in summary and "ibroker" in summary
    assert "mean filter time relative to rtfs: rtfm" in stdout


def test_steps_end_at_every_db_size():
    assert inputs.chunks([20, 40], 20) == [(0, 20), (20, 40)]
    assert inputs.chunks([20, 50], 20) == [(0, 20), (20, 40), (40, 50)]
    assert inputs.chunks([5, 12], 5) == [(0, 5), (5, 10), (10, 12)]


def test_percentiles_interpolate_between_ranks():
    values = [1.0, 2.0, 3.0, 4.0]
    assert timing.percentile(values, 0.5) == 2.5
    assert timing.percentile(values, 0.99) == pytest.approx(3.97)
    assert timing.percentile([7.0], 0.99) == 7.0


# ------------------------------------------------------------ the workload generator


@pytest.fixture(scope="module")
def world_pubs(world):
    from rtf.io.reader import read_publications
    return list(read_publications([world]))


def _examples():
    from rtf.io.datasets import examples_dir
    return examples_dir()


def test_generator_is_deterministic_by_seed(world_pubs):
    from rtf.bench.workload import Mix, generate_queries

    mix = Mix.all_operators(0.5)
    first = generate_queries(world_pubs, 200, seed=5, mix=mix)
    assert generate_queries(list(world_pubs), 200, seed=5, mix=mix) == first
    assert generate_queries(world_pubs, 200, seed=6, mix=mix) != first
    assert [r["id"] for r in first] == [f"g{i}" for i in range(1, 201)]


def test_queries_are_made_one_at_a_time_for_the_command(world_pubs):
    """`rtf gen-queries` writes what `iter_queries` yields, one record at a time (ten million
    are not held at once), and its records are `generate_queries`' for any count."""
    import itertools

    from rtf.bench.workload import Mix, generate_queries, iter_queries
    made = iter_queries(world_pubs, 10**6, seed=5, mix=Mix.selective())
    assert iter(made) is made  # an iterator, not a list of a million
    assert list(itertools.islice(made, 50)) == generate_queries(world_pubs, 50, seed=5, mix=Mix.selective())


def test_gen_queries_command_is_deterministic_and_rtf_match_reads_it(world, tmp_path, capsys):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    argv = ["gen-queries", "--publications", world, "-n", "50", "--ft-pr", "100", "--seed", "3"]
    assert main([*argv, "-o", str(a)]) == 0 and main([*argv, "-o", str(b)]) == 0
    assert a.read_text() == b.read_text() and len(a.read_text().splitlines()) == 50
    assert main(["match", "--queries", str(a), "--publications", world, "--algorithm", "rtfs",
                 "--output", str(tmp_path / "m.jsonl")]) == 0
    assert (tmp_path / "m.jsonl").read_text().strip(), "FT_pr=100% queries from the data match it"


def test_queries_are_stars_of_at_most_four_tuples_with_ft_pr_applied(world_pubs):
    from rtf.parser import parse_query
    from rtf.bench.workload import Mix, generate_queries

    literal_tuples = {0.0: [0, 0], 1.0: [0, 0]}
    for ft_pr in (0.0, 1.0):
        for rec in generate_queries(world_pubs, 150, seed=2, mix=Mix.paper(ft_pr)):
            q = parse_query(rec["query"])
            assert 1 <= len(q.patterns) <= 4
            assert {str(p.subject) for p in q.patterns} == {"?s"}, rec["query"]
            assert len(q.branches) == 1
            for t in q.branches[0].tuples:
                if str(t.object).startswith("?o"):  # a literal-valued tuple in the data
                    literal_tuples[ft_pr][0] += 1
                    literal_tuples[ft_pr][1] += t.fulltext is not None
                    if t.fulltext is not None:  # 1-3 conjunctive terms
                        text = str(t.fulltext)
                        assert "ftor" not in text and "ftnot" not in text and "ftnear" not in text
                        assert 1 <= text.count('"') // 2 <= 3
            predicates = [str(p.predicate) for p in q.patterns if "#type" not in str(p.predicate)]
            assert len(predicates) == len(set(predicates)), "the paper mix asks distinct properties"
    zero, full = literal_tuples[0.0], literal_tuples[1.0]
    assert zero[1] == 0 and zero[0] > 20
    # with FT_pr = 100 % every literal-valued tuple has ftcontains (IRI-valued ones cannot)
    assert full[0] > 20


def test_terms_are_drawn_from_the_multiset_of_words(tmp_path):
    """A word that fills 95 % of the text fills about 95 % of the terms."""
    from rtf.io.reader import read_publications
    from rtf.query.text import words
    from rtf.bench.workload import Mix, generate_queries

    lines = [f'<{EX}r{i}> <{EX}text> "{" ".join(["common"] * 19 + [f"rare{i}"])}" .'
             for i in range(20)]
    path = tmp_path / "skewed.nt"
    path.write_text("\n".join(lines) + "\n")
    pubs = list(read_publications([str(path)]))
    terms = []
    for rec in generate_queries(pubs, 300, seed=0, mix=Mix.paper(1.0)):
        ft = rec["query"].split("ftcontains(?o1, ", 1)[1].rsplit(")", 1)[0]
        terms += [w for w in words(ft) if w != "ftand"]
    share = terms.count("common") / len(terms)
    assert 0.9 < share < 0.99, share


@pytest.mark.parametrize("source", ["world", "news"])
def test_generated_queries_all_parse_and_register_in_every_engine(world, source):
    from rtf.engine import ALGORITHMS, Engine
    from rtf.parser import parse_query
    from rtf.io.reader import read_publications
    from rtf.io.taxonomy import Taxonomy
    from rtf.bench.workload import Mix, generate_queries

    if source == "world":
        pubs, taxonomy = list(read_publications([world])), Taxonomy.from_edges(
            [(f"<{EX}Club>", f"<{EX}Organisation>"), (f"<{EX}City>", f"<{EX}Place>")])
    else:
        pubs = list(read_publications([str(_examples() / "news.nt")]))
        taxonomy = Taxonomy.from_file(_examples() / "news_ontology.nt")
    records = []
    for k, mix in enumerate([Mix.paper(0.0), Mix.paper(0.5), Mix.paper(1.0),
                             Mix.all_operators(0.5), Mix.all_operators(1.0), Mix.selective(0.5)]):
        records += generate_queries(pubs, 150, seed=k, mix=mix, taxonomy=taxonomy, prefix=f"m{k}_")
    parsed = [(r["id"], parse_query(r["query"]), r["subscriber"]) for r in records]
    answers = {}
    for algorithm in ALGORITHMS:
        engine = Engine(algorithm, taxonomy=taxonomy)
        for qid, q, sub in parsed:
            engine.register(q, qid, sub)
        assert len(engine) == len(records)
        answers[algorithm] = [[(m.query_id, m.solutions) for m in engine.match(p)] for p in pubs]
    assert any(answers["naive"]), "the generated queries should match their own publications"
    for algorithm in ALGORITHMS:
        assert answers[algorithm] == answers["naive"], algorithm


def test_the_bench_workload_replaces_queries_the_parser_refuses(monkeypatch):
    records = [{"id": "a", "query": "ASK { ?s ?p ?o }"}, {"id": "b", "query": "NOT A QUERY"},
               {"id": "c", "query": "ASK { ?s <http://ex/p> ?o }"}]
    more = lambda round_, k: [{"id": f"x{round_}_{i}", "query": "ASK { ?s ?p ?o }"} for i in range(k)]
    wl = inputs.parse_workload(records, 50, 3, more)
    assert wl.ids == ["a", "c", "x1_0"] and wl.rejected == 1


# ------------------------------------------------------------ the selective workload


def _matches_per_publication(records, publications, algorithm="rtfs"):
    """{query id: number of `publications` it matches}, through one engine."""
    from collections import Counter

    from rtf.engine import Engine
    from rtf.parser import parse_query

    engine = Engine(algorithm)
    for r in records:
        engine.register(parse_query(r["query"]), r["id"])
    hits = Counter({r["id"]: 0 for r in records})
    for pub in publications:
        hits.update(m.query_id for m in engine.match(pub))
    return hits


def test_selective_mix_is_deterministic_by_seed(world_pubs):
    from rtf.bench.workload import Mix, generate_queries

    first = generate_queries(world_pubs, 200, seed=5, mix=Mix.selective())
    assert generate_queries(list(world_pubs), 200, seed=5, mix=Mix.selective()) == first
    assert generate_queries(world_pubs, 200, seed=6, mix=Mix.selective()) != first


def generated_under_hash_seeds(files: list[str], count: int, mix: str) -> set[str]:
    """The JSON of `generate_queries` over `files` (seed 3, `mix` a Python expression), as
    printed by two processes of different hash seeds: one text when nothing depends on them."""
    import subprocess
    import sys

    code = ("import json, sys; from rtf.io.reader import read_publications; "
            "from rtf.bench.workload import Mix, generate_queries; "
            f"print(json.dumps(generate_queries(list(read_publications({files!r})), {count}, seed=3, "
            f"mix={mix})))")
    return {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={"PYTHONHASHSEED": seed, "PATH": ""}).stdout for seed in ("1", "2")}


def test_selective_mix_does_not_depend_on_the_hash_seed(world):
    """Word and class choices go through sets and counters: their order must not leak in."""
    assert len(generated_under_hash_seeds([world], 100, "Mix.selective()")) == 1


def test_selective_queries_are_typed_stars_of_informative_own_words(world_pubs):
    """Every query asks ?s a C (one class) plus 1-3 distinct properties, in the paper's shape."""
    from rtf.parser import parse_query
    from rtf.bench.workload import Mix, generate_queries

    texts = {w for p in world_pubs for o in p.literals() for w in o.split('"')[1].casefold().split()}
    for rec in generate_queries(world_pubs, 150, seed=2, mix=Mix.selective(1.0)):
        q = parse_query(rec["query"])
        assert 2 <= len(q.patterns) <= 4, rec["query"]
        assert {str(p.subject) for p in q.patterns} == {"?s"}
        assert rec["query"].count(" a <") == 1, rec["query"]
        predicates = [str(p.predicate) for p in q.patterns if "#type" not in str(p.predicate)]
        assert len(predicates) == len(set(predicates)) >= 1
        for t in q.branches[0].tuples:
            if t.fulltext is not None:
                text = str(t.fulltext)
                assert "ftor" not in text and "ftnot" not in text and "ftnear" not in text
                terms = text.split('"')[1::2]
                assert 1 <= len(terms) <= 3 and len(set(terms)) == len(terms), text
                assert set(terms) <= texts


def test_selective_words_skip_the_common_ones(tmp_path):
    """'common' fills 95 % of the text and is in every publication: never an informative term."""
    from rtf.io.reader import read_publications
    from rtf.query.text import words
    from rtf.bench.workload import Mix, generate_queries

    lines = [f'<{EX}r{i}> <{RDF_TYPE}> <{EX}C{i % 3}> .\n'
             f'<{EX}r{i}> <{EX}text> "{" ".join(["common"] * 19 + [f"rare{i}"])}" .'
             for i in range(200)]
    path = tmp_path / "skewed.nt"
    path.write_text("\n".join(lines) + "\n")
    pubs = list(read_publications([str(path)]))
    for rec in generate_queries(pubs, 100, seed=0, mix=Mix.selective(1.0)):
        ft = rec["query"].split("ftcontains(?o2, ", 1)[1].rsplit(")", 1)[0]
        terms = [w for w in words(ft) if w != "ftand"]
        # the first term is the text's one informative word; once it is used, a second
        # or third term falls back to the rarest word left, 'common'
        assert terms[0].startswith("rare") and terms[1:] == ["common"] * (len(terms) - 1), ft
    paper_terms = []
    for rec in generate_queries(pubs, 100, seed=0, mix=Mix.paper(1.0)):
        if "ftcontains" not in rec["query"]:  # the paper mix may ask only ?s a C
            continue
        ft = rec["query"].split("ftcontains(?o", 1)[1].split(", ", 1)[1].rsplit(")", 1)[0]
        paper_terms += [w for w in words(ft) if w != "ftand"]
    assert paper_terms.count("common") > 0.8 * len(paper_terms)


@pytest.fixture(scope="module")
def dbpedia_vocabulary(dbpedia_all):
    from rtf.bench.workload import Vocabulary
    return Vocabulary(dbpedia_all)


def test_engines_agree_on_the_selective_mix(world_pubs, dbpedia_slice):
    from rtf.bench.workload import Mix, generate_queries

    for pubs, n, filtered in ((world_pubs, 120, world_pubs), (dbpedia_slice, 400, dbpedia_slice[::20])):
        records = generate_queries(pubs, n, seed=4, mix=Mix.selective())
        naive = _matches_per_publication(records, filtered, "naive")
        assert _matches_per_publication(records, filtered, "rtfs") == naive
        assert sum(naive.values()) > 0


def test_every_selective_query_matches_its_source_publication(dbpedia_slice):
    """Class, properties, constants and words all come from one publication: it matches."""
    from rtf.bench.workload import Mix, generate_queries

    pubs = dbpedia_slice[::8]
    hits = _matches_per_publication(generate_queries(pubs, 300, seed=1, mix=Mix.selective()), pubs)
    assert min(hits.values()) >= 1, [q for q, n in hits.items() if n == 0][:5]


@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 10**6))
def test_the_selective_mix_is_more_selective_than_the_paper_mix(dbpedia_vocabulary, seed):
    """On a DBpedia sample the share of queries matching a publication drops from ~11 % (paper)
    to ~2 % (selective, docs/benchmarks.md); with 300 queries x 60 publications, below 4 %."""
    from rtf.bench.inputs import sample_publications
    from rtf.bench.workload import Mix, generate_queries

    pubs = sample_publications(dbpedia_vocabulary.publications, 60, seed)
    share = {}
    for name, mix in (("paper", Mix.paper()), ("selective", Mix.selective())):
        hits = _matches_per_publication(generate_queries(dbpedia_vocabulary, 300, seed, mix), pubs)
        share[name] = sum(hits.values()) / len(pubs) / 300
    assert share["selective"] < 0.04 and share["selective"] < share["paper"] / 2, share


@pytest.mark.slow
def test_index_cache_loads_the_engines_a_previous_run_saved(world, tmp_path, capsys):
    cache = tmp_path / "cache"
    args = bench_args(world, "--in-process", "--no-memory", "--index-cache", str(cache))
    code, first, _, _ = run_json(capsys, tmp_path, *args)
    assert code == 0 and not any(r["loaded"] for r in first["runs"])
    assert len(list(cache.glob("*.rtfidx"))) == 3 * 2  # three algorithms at two DB sizes
    code, again, _, _ = run_json(capsys, tmp_path, *args)
    assert code == 0 and all(r["loaded"] for r in again["runs"])
    # the loaded engines answer exactly as the registered ones did
    assert [(r["algorithm"], r["db"], r["digest"]) for r in again["runs"]] == \
           [(r["algorithm"], r["db"], r["digest"]) for r in first["runs"]]
    # another workload (another seed) never reuses them
    code, other, _, _ = run_json(capsys, tmp_path, *args, "--seed", "5")
    assert code == 0 and not any(r["loaded"] for r in other["runs"])


def test_json_names_input_paths_relative_to_where_the_bench_ran(world, tmp_path, capsys, monkeypatch):
    import os
    monkeypatch.chdir(tmp_path)
    code, doc, _, _ = run_json(capsys, tmp_path, *bench_args(os.path.abspath(world), "--in-process", "--no-memory"))
    assert code == 0
    assert doc["params"]["publications"] == [os.path.relpath(world, tmp_path)]
    assert not any(p.startswith("/") for p in doc["params"]["publications"])


# ----------------------------------------------------- --repeat and thin percentiles (issue 40, item 10)


@pytest.mark.slow
def test_repeat_gives_the_median_of_each_cell_and_its_spread(world, tmp_path, capsys):
    code, doc, table, err = run_json(capsys, tmp_path, *bench_args(world, "--algorithms", "rtfs,rtfm",
                                                                    "--repeat", "3", "--no-memory"))
    assert code == 0 and doc["params"]["repeat"] == 3
    for r in doc["runs"]:
        assert r["repeats"] == 3 and r["repeat_answers_agree"] is True
        low, high = r["spread"]["filter_ms_mean"]
        assert low <= r["filter_ms_mean"] <= high
    assert "±%" in table and "the median of 3 runs" in table
    # 15 publications: p99 rests on none of them, p50 on 7: both said, on stderr as warnings too
    assert "p99 rests on the slowest 0 of 15" in table and "p50 rests on the slowest 7 of 15" in table
    assert "rtf bench: p99 rests on" in err


def test_repeated_rows_take_the_median_and_flag_answers_that_change():
    from rtf.bench.run import repeated_rows

    def row(ms, digest="d"):
        return {"algorithm": "rtfs", "db": 10, "filter_ms_mean": ms, "pubs_per_s": 1000 / ms,
                "digest": digest, "insert_s": None}
    [r] = repeated_rows([[row(3.0)], [row(1.0)], [row(2.0)]])
    assert r["filter_ms_mean"] == 2.0 and r["spread"]["filter_ms_mean"] == [1.0, 3.0]
    assert r["pubs_per_s"] == 500 and r["repeats"] == 3 and r["repeat_answers_agree"]
    assert "insert_s" not in r["spread"]  # (a figure the runs did not have)
    assert repeated_rows([[row(1.0)]]) == [row(1.0)]  # one run: as it was
    assert repeated_rows([[row(1.0)], [row(1.0, "other")]])[0]["repeat_answers_agree"] is False


@pytest.mark.parametrize("publications, notes", [
    (15, ["p50", "p99"]), (100, ["p99"]), (1999, ["p99"]), (2000, []), (40000, [])])
def test_a_percentile_on_fewer_than_twenty_samples_is_said_to_be_rough(publications, notes):
    from rtf.bench.report import percentile_notes

    said = percentile_notes([{"publications": publications}])
    assert [note.split()[1] for note in said] == notes
