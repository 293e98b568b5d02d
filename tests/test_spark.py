"""The Spark replay (`rtf spark replay`, spark/dbpedia_eval.py, rtf.spark.replay) against `rtf match`.

One local[2] SparkSession serves the module. The inputs are a slice of the
DBpedia sample laid out as DBpedia ships dumps: the nordlys resources split
into an instance-types file and a file with everything else (so every
publication must be regrouped across files), the esbm file, a few hundred
db8k resources as .bz2, real abstracts as line-based .ttl, and a file with
bad lines. The reference is `rtf match` over the same triples with each
resource in one file. Tests that need Java are marked ``spark``.
"""

from __future__ import annotations

import bz2
import gzip
import importlib.util
import itertools
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rtf.io import datasets

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "spark" / "dbpedia_eval.py"
TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"

BAD_LINES = [
    "this is not a triple",
    '<http://ex.org/bad1> <http://ex.org/p> "unterminated .',
    "<http://ex.org/bad2> <http://ex.org/p> .",
]
GOOD_LINES = [
    '<http://ex.org/ok1> <http://www.w3.org/2000/01/rdf-schema#label> "Rio airline"@en .',
    "<http://ex.org/ok1> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> "
    "<http://dbpedia.org/ontology/Airline> .",
]


def _no_spark_reason() -> str | None:
    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is not installed (pip install 'rtf[spark]')"
    java_home = os.environ.get("JAVA_HOME")
    if not shutil.which("java") and not (java_home and Path(java_home, "bin", "java").exists()):
        return "Java is not installed (Spark needs Java 17; set JAVA_HOME or put java on PATH)"
    if not datasets.available():
        return datasets.missing_message()
    return None


NO_SPARK = _no_spark_reason()
needs_spark = [pytest.mark.spark, pytest.mark.skipif(NO_SPARK is not None, reason=str(NO_SPARK))]


def spark_test(f):
    for mark in needs_spark:
        f = mark(f)
    return f


def _load_script():
    spec = importlib.util.spec_from_file_location("dbpedia_eval", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------ fixtures


def local_session(master: str, app: str, **conf):
    """A quiet local SparkSession for a test module (two cores, two shuffle partitions)."""
    if NO_SPARK:
        pytest.skip(NO_SPARK)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName(app)
    settings = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
                "spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2",
                "spark.driver.memory": "1g", **conf}
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


@pytest.fixture(scope="module")
def spark():
    session = local_session("local[2]", "rtf tests")
    yield session
    session.stop()


def _file(name: str) -> Path:
    return next(f for f in datasets.dbpedia_files() if f.name.startswith(name))


def _head_publications(path: Path, n: int) -> list[str]:
    """The lines of the first `n` subjects of a sorted dump."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        runs = itertools.groupby(f, key=lambda line: line.split(" ", 1)[0])
        return [line for _, run in itertools.islice(runs, n) for line in run]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """(spark dump folder, reference files for rtf match, queries, taxonomy, bad line count)."""
    if NO_SPARK:
        pytest.skip(NO_SPARK)
    from rtf.io.reader import read_publications
    from rtf.bench.workload import Mix, generate_queries, write_jsonl

    base = tmp_path_factory.mktemp("spark")
    dumps, ref = base / "dump", base / "ref"
    dumps.mkdir()
    ref.mkdir()

    nordlys = _file("nordlys")
    with gzip.open(nordlys, "rt", encoding="utf-8") as f:
        lines = f.readlines()
    shutil.copy(nordlys, ref / nordlys.name)
    # As DBpedia ships it: instance types in one file, the other properties in another.
    with gzip.open(dumps / "instance_types_en.nt.gz", "wt", encoding="utf-8") as f:
        f.writelines(line for line in lines if line.split(" ", 2)[1] == TYPE)
    with bz2.open(dumps / "nordlys_properties_en.ttl.bz2", "wt", encoding="utf-8") as f:
        f.write("# started 2015-10-01T00:00:00Z\n")
        f.writelines(line for line in lines if line.split(" ", 2)[1] != TYPE)
        f.write("# completed 2015-10-01T00:00:01Z\n")

    esbm = _file("esbm")
    shutil.copy(esbm, dumps / esbm.name)
    shutil.copy(esbm, ref / esbm.name)

    db8k = _head_publications(_file("db8k28"), 300)
    for folder in (dumps, ref):
        with bz2.open(folder / "db8k28_slice.nt.bz2", "wt", encoding="utf-8") as f:
            f.writelines(db8k)
        (folder / "abstracts_en.ttl").write_text("".join(_head_publications(_file("ml1m"), 60)),
                                                  encoding="utf-8")
        # Bad lines among good ones, in a plain file.
        (folder / "with_bad_lines.nt").write_text(
            "\n".join([GOOD_LINES[0], BAD_LINES[0], GOOD_LINES[1], BAD_LINES[1], BAD_LINES[2]]) + "\n",
            encoding="utf-8")
    (dumps / "README.txt").write_text("not a dump file\n")

    taxonomy = str(datasets.dbpedia_ontology())
    pubs = list(read_publications(sorted(ref.iterdir()), skip_invalid=True))
    records = generate_queries(pubs, 120, seed=7, mix=Mix.all_operators(0.5), taxonomy=None)
    # The naive reference enumerates every combination of triples for the tuples
    # with a wildcard (``?s * ?o1 . ?s * ?o2 . ?s * ?o3``): keep at most one of them
    # per query, or one query can take minutes on a 200-triple resource -- and two
    # make more solutions than the engine's cap, which then keeps some, not the same
    # ones in every process (`Match.truncated`).
    records = [r for r in records if r["query"].count(" * ") <= 1]
    records += generate_queries(pubs, 60, seed=8, mix=Mix(ft_pr=0.8), prefix="h")
    examples = ROOT / "examples" / "dbpedia_queries.jsonl"
    records += [json.loads(line) for line in examples.read_text().splitlines() if line.strip()]
    records += VERSION_3  # every way of running rtf carries version-3 matches too
    queries = base / "queries.jsonl"
    write_jsonl(records, queries)
    return dumps, sorted(ref.iterdir()), queries, taxonomy, len(BAD_LINES)


from rtf.spark.arrow_matches import row_line  # noqa: E402 (a Parquet row as rtf match's line)

#: Spark, rtf serve processes or a browser: out of the quick subset (pytest -m 'not slow').
pytestmark = pytest.mark.slow

_DBO = "http://dbpedia.org/ontology/"
#: Queries of language version 3 (spec section 5): aggregates, ORDER BY, CONSTRUCT, MINUS, a path.
VERSION_3 = [
    {"id": "v3-count", "query": f"SELECT ?s (COUNT(?o) AS ?n) WHERE {{ ?s <{_DBO}starring> ?o }} "
                                "GROUP BY ?s HAVING (COUNT(?o) >= 2)"},
    {"id": "v3-order", "query": "SELECT ?s ?l WHERE { ?s <http://www.w3.org/2000/01/rdf-schema#label> ?l } "
                                "ORDER BY DESC(?l) LIMIT 2", "subscriber": "ann"},
    {"id": "v3-construct", "query": "CONSTRUCT { ?s <http://ex.org/named> ?n } WHERE { "
                                    "?s <http://xmlns.com/foaf/0.1/name> ?n FILTER(lang(?n) = 'en') }"},
    {"id": "v3-minus", "query": f"SELECT ?s WHERE {{ ?s a <{_DBO}Person> MINUS {{ ?s <{_DBO}deathDate> ?d }} }}"},
    {"id": "v3-path", "query": f"ASK {{ ?s (<{_DBO}starring>|<{_DBO}director>)+ ?x }}"},
]


@pytest.fixture(scope="module")
def reference(inputs, tmp_path_factory):
    """`rtf match` over the reference files, per algorithm: (sorted lines, --stats), cached."""
    import contextlib
    import io

    from rtf.cli import main

    _, ref_files, queries, taxonomy, _ = inputs
    cache: dict[str, tuple[list[str], dict]] = {}
    folder = tmp_path_factory.mktemp("rtf-match")

    def run(algorithm: str) -> tuple[list[str], dict]:
        if algorithm not in cache:
            out, err = folder / f"{algorithm}.jsonl", io.StringIO()
            with contextlib.redirect_stderr(err):
                code = main(["match", "--queries", str(queries), "--publications",
                             *map(str, ref_files), "--taxonomy", taxonomy, "--algorithm", algorithm,
                             "--skip-invalid", "--stats", "--output", str(out)])
            assert code == 0, err.getvalue()
            cache[algorithm] = (sorted(out.read_text(encoding="utf-8").splitlines()),
                                json.loads(err.getvalue().strip().splitlines()[-1]))
        return cache[algorithm]

    return run


def spark_lines(output: Path) -> list[str]:
    return sorted(line for part in sorted(output.glob("part-*"))
                  for line in part.read_text(encoding="utf-8").splitlines())


def run_script(spark, *argv) -> int:
    """The job on the module's session; JSON Lines unless the test asks for Parquet."""
    argv = [*map(str, argv)]
    if "--output-format" not in argv:
        argv += ["--output-format", "jsonl"]
    return _load_script().main([*argv, "--quiet"], spark=spark)


def metrics_of(output: Path) -> dict:
    return json.loads((output / "_metrics.json").read_text())


# -------------------------------------------------------------------- Spark


@spark_test
@pytest.mark.parametrize("algorithm", ["naive", "rtfm", "rtfs", "ibroker"])
def test_spark_output_equals_rtf_match(spark, inputs, reference, tmp_path, algorithm):
    from rtf.engine import make_index

    try:
        make_index(algorithm)
    except ImportError as e:  # an engine still being written
        pytest.skip(f"{algorithm} is not available: {e}")
    dumps, ref_files, queries, taxonomy, n_bad = inputs
    expected, stats = reference(algorithm)
    out = tmp_path / "out"
    assert run_script(spark, "--dump", dumps, "--queries", queries, "--taxonomy", taxonomy,
                      "--algorithm", algorithm, "--partitions", 3, "--output", out) == 0
    got = spark_lines(out)
    assert len(expected) > 50  # the workload does match something
    assert got == expected

    metrics = metrics_of(out)
    assert metrics["publications"] == stats["publications"]
    assert metrics["matches"] == stats["matches"] == len(expected)
    assert metrics["bad_lines_skipped"] == n_bad == stats["skipped_lines"]
    assert metrics["bad_lines_by_file"] == {str(dumps / "with_bad_lines.nt"): n_bad}
    assert set(metrics["stages_s"]) == {"read_parse_s", "broadcast_s", "match_s", "write_s"}
    assert metrics["index"]["bytes"] > 1000 and metrics["queries"] == stats["queries"]
    parts = metrics["partitions"]
    assert [p["partition"] for p in parts] == [0, 1, 2]
    assert sum(p["publications"] for p in parts) == metrics["publications"]
    # The engine is built once per Python worker, not once per partition.
    assert 1 <= metrics["index"]["loads"] <= len({p["worker"] for p in parts})
    assert metrics["throughput"]["publications_per_s"] > 0


@spark_test
def test_pipelined_run_gives_the_same_lines(spark, inputs, reference, tmp_path):
    dumps, _, queries, taxonomy, n_bad = inputs
    out = tmp_path / "piped"
    assert run_script(spark, "--dump", dumps, "--queries", queries, "--taxonomy", taxonomy,
                      "--algorithm", "rtfs", "--output", out, "--pipelined") == 0
    expected, stats = reference("rtfs")
    assert spark_lines(out) == expected
    metrics = metrics_of(out)
    assert metrics["bad_lines_skipped"] == n_bad and not metrics["timed_stages"]
    assert metrics["publications"] == stats["publications"]
    assert set(metrics["stages_s"]) == {"broadcast_s", "pipeline_s"}


@spark_test
def test_existing_output_is_refused_then_overwritten(spark, inputs, tmp_path, capsys):
    dumps, _, queries, taxonomy, _ = inputs
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    argv = ["--dump", dumps / "with_bad_lines.nt", "--queries", queries, "--algorithm", "rtfs",
            "--output", out]
    assert run_script(spark, *argv) == 1
    assert "exists" in capsys.readouterr().err and (out / "keep.txt").exists()
    assert run_script(spark, *argv, "--overwrite") == 1  # not an earlier run's output
    shutil.rmtree(out)
    assert run_script(spark, *argv) == 0
    assert run_script(spark, *argv, "--overwrite") == 0
    assert metrics_of(out)["publications"] == 1


@spark_test
def test_command_line_runs_in_local_mode_by_default(tmp_path):
    """The installed command as users run it (`rtf spark replay`, issue 40 item 8): its own
    session (local[*,2]), no --master. (spark/dbpedia_eval.py is the same function:
    tests/test_spark_commands.py.)"""
    out = tmp_path / "out"
    queries = ROOT / "examples" / "dbpedia_queries.jsonl"
    rtf = Path(sys.executable).parent / "rtf"
    proc = subprocess.run([str(rtf), "spark", "replay", "--dump", str(_file("nordlys")),
                           "--queries", str(queries), "--algorithm", "rtfm", "--output", str(out),
                           "--conf", "spark.ui.enabled=false"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    metrics = metrics_of(out)
    assert metrics["spark"]["master"] == "local[*,2]" and metrics["publications"] == 98
    assert "rtf spark replay: wrote" in proc.stderr


# ------------------------------------------------------------ without Spark


@spark_test
def test_parquet_output_holds_the_matches_of_rtf_match(spark, inputs, reference, tmp_path):
    """The default output: one row per match, bindings as array<map<string,string>>, read here
    without Spark; the same matches as `rtf match`, the variables in its order."""
    import pyarrow.dataset as ds

    dumps, _, queries, taxonomy, n_bad = inputs
    expected, stats = reference("rtfs")
    out = tmp_path / "out"
    assert run_script(spark, "--dump", dumps, "--queries", queries, "--taxonomy", taxonomy,
                      "--algorithm", "rtfs", "--output-format", "parquet", "--output", out) == 0
    rows = ds.dataset(out, format="parquet").to_table().to_pylist()
    lines = sorted(map(row_line, rows))
    assert lines == expected
    assert {"v3-count", "v3-order", "v3-construct", "v3-path"} <= {r["query"] for r in rows}
    assert metrics_of(out)["matches"] == len(expected)


def test_help_teaches_with_an_example():
    proc = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0
    for text in ("--dump", "--queries", "--taxonomy", "--algorithm", "--master", "--partitions",
                 "--output", "--output-format", "parquet", "example", "spark-submit", "_metrics.json"):
        assert text in proc.stdout


def test_dump_files_picks_the_dumps_of_a_folder(tmp_path):
    from rtf.spark.replay import ReplayError, dump_files

    for name in ("a.nt.gz", "b.ttl.bz2", "c.nt", "README.md", "_SUCCESS"):
        (tmp_path / name).write_text("")
    warnings = []
    found = dump_files([str(tmp_path)], warn=warnings.append)
    assert [Path(f).name for f in found] == ["a.nt.gz", "b.ttl.bz2", "c.nt"]
    assert len(warnings) == 1 and "README.md" in warnings[0]
    with pytest.raises(ReplayError, match="not a line-based dump"):
        dump_files([str(tmp_path / "README.md")])
    with pytest.raises(ReplayError, match="no such file"):
        dump_files([str(tmp_path / "missing.nt")])


def test_parse_lines_makes_subject_runs_and_counts_bad_lines():
    from rtf.spark.workers import parse_lines

    counters: dict = {}
    lines = GOOD_LINES + BAD_LINES + ['<http://ex.org/ok2> <http://ex.org/p> "x" .', GOOD_LINES[0]]
    runs = list(parse_lines(lines, "test", counters, batch_chars=10_000))
    assert [s for s, _ in runs] == ["<http://ex.org/ok1>", "<http://ex.org/ok2>", "<http://ex.org/ok1>"]
    assert len(runs[0][1]) == 2
    assert counters["bad_lines"] == 3 and counters["triples"] == 4 and counters["lines"] == 7
    assert len(counters["bad_examples"]) == 3
    assert counters["bytes"] == sum(len(line.encode("utf-8")) + 1 for line in lines)
    # Hadoop turns invalid UTF-8 into U+FFFD: such lines are counted, not rejected.
    counters = {}
    list(parse_lines(['<http://ex.org/a> <http://ex.org/p> "caf\ufffd" .'], "test", counters))
    assert counters["replacement_char_lines"] == 1 and "bad_lines" not in counters


def test_a_pickled_engine_matches_like_the_original(dbpedia_slice):
    from rtf.engine import Engine
    from rtf.spark.workers import filter_records, pickle_blob, unpickle_blob
    from rtf.bench.workload import generate_queries

    engine = Engine("rtfs")
    for rec in generate_queries(dbpedia_slice, 100, seed=3):
        engine.register(rec["query"], rec["id"], rec["subscriber"])
    copy = unpickle_blob(pickle_blob(engine))
    records = [(f"<{p.id}>", [(pp, o) for _, pp, o in p.triples]) for p in dbpedia_slice[:300]]
    stats: dict = {}
    assert list(filter_records(copy, records, stats)) == list(filter_records(engine, records, {}))
    assert stats["publications"] == 300


@spark_test
def test_bad_arguments_are_one_line_errors(spark, inputs, tmp_path, capsys):
    dumps, _, queries, _, _ = inputs
    bad_queries = tmp_path / "bad.jsonl"
    bad_queries.write_text('{"id": "b1", "query": "SELECT ?s WHERE { ?s ?p }"}\n')
    cases = [
        (["--dump", dumps / "nothing.nt", "--queries", queries], "no such file"),
        (["--dump", dumps / "README.txt", "--queries", queries], "not a line-based dump"),
        (["--dump", dumps, "--queries", bad_queries], "bad.jsonl:1"),
        (["--dump", dumps, "--queries", queries, "--partitions", 0], "at least 1"),
    ]
    for argv, message in cases:
        out = tmp_path / "out"
        assert run_script(spark, *argv, "--algorithm", "rtfs", "--output", out) == 1
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1 and not out.exists()


@spark_test
def test_a_saved_index_gives_the_lines_of_rtf_match_index(spark, inputs, tmp_path, capsys):
    import contextlib
    import io

    from rtf.cli import main as rtf_main

    dumps, ref_files, queries, taxonomy, n_bad = inputs
    index, expected_file = tmp_path / "q.idx", tmp_path / "expected.jsonl"
    with contextlib.redirect_stderr(io.StringIO()):
        assert rtf_main(["index", "build", "--queries", str(queries), "--algorithm", "rtfm",
                         "--taxonomy", taxonomy, "--output", str(index)]) == 0
        assert rtf_main(["match", "--index", str(index), "--publications", *map(str, ref_files),
                         "--skip-invalid", "--output", str(expected_file)]) == 0
    expected = sorted(expected_file.read_text(encoding="utf-8").splitlines())
    out = tmp_path / "out"
    assert run_script(spark, "--dump", dumps, "--index", index, "--partitions", 2, "--output", out) == 0
    assert len(expected) > 50 and spark_lines(out) == expected
    metrics = metrics_of(out)
    assert metrics["algorithm"] == "rtfm" and metrics["bad_lines_skipped"] == n_bad
    assert metrics["index"]["bytes"] == index.stat().st_size  # the file's bytes, not a pickle
    assert 1 <= metrics["index"]["loads"] <= len({p["worker"] for p in metrics["partitions"]})

    # In 3 query partitions: the index's part files, mapped by the tasks; the same lines.
    out_k, parts = tmp_path / "out-k3", tmp_path / "parts"
    assert run_script(spark, "--dump", dumps, "--index", index, "--partitions", 2, "--query-partitions", 3,
                      "--parts-folder", parts, "--output", out_k) == 0
    assert spark_lines(out_k) == expected
    metrics_k = metrics_of(out_k)
    qp = metrics_k["query_partitions"]
    assert qp["k"] == 3 and qp["written"] and sum(qp["queries"]) == metrics["queries"] and min(qp["queries"]) > 0
    assert sorted(f.name for f in parts.iterdir()) == sorted(_part_names(index, 3))
    assert metrics_k["publications"] == metrics["publications"] and metrics_k["matches"] == len(expected)
    assert len(metrics_k["partitions"]) == 3 * 2  # each task one partition's engine

    # What the index fixes is refused in one line, before any Spark work.
    capsys.readouterr()
    for extra, message in [(["--algorithm", "rtfs"], "the index"), (["--taxonomy", taxonomy], "--taxonomy"),
                           (["--query-partitions", 2, "--query-partitioning", "merging"], "hash of the query ids"),
                           (["--query-partitions", 0], "at least 1"), (["--parts-folder", parts], "give both")]:
        bad_out = tmp_path / "bad"
        assert run_script(spark, "--dump", dumps, "--index", index, *extra, "--output", bad_out) == 1
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1 and not bad_out.exists()
    with pytest.raises(SystemExit):  # argparse: --queries and --index exclude each other
        run_script(spark, "--dump", dumps, "--index", index, "--queries", queries, "--output", out)


def _part_names(index: Path, k: int) -> list[str]:
    import hashlib

    from rtf.spark.index_parts import part_names

    return part_names(hashlib.sha256(index.read_bytes()).hexdigest()[:16], k)


# ---------------------------------------------------------- query partitions


def _partitioned_run(spark, inputs, out, strategy, k, algorithm="rtfs", queries=None):
    dumps, _, all_queries, taxonomy, _ = inputs
    assert run_script(spark, "--dump", dumps, "--queries", queries or all_queries, "--taxonomy", taxonomy,
                      "--algorithm", algorithm, "--partitions", 2, "--query-partitions", k,
                      "--query-partitioning", strategy, "--output", out) == 0
    return metrics_of(out)


@spark_test
@pytest.mark.parametrize("strategy", ["hash", "containment", "merging"])
def test_query_partitions_give_the_lines_of_rtf_match(spark, inputs, reference, tmp_path, strategy):
    expected, stats = reference("rtfs")
    metrics = _partitioned_run(spark, inputs, tmp_path / "out", strategy, 4)
    assert spark_lines(tmp_path / "out") == expected
    assert metrics["publications"] == stats["publications"]
    assert metrics["matches"] == len(expected)
    qp = metrics["query_partitions"]
    assert qp["k"] == 4 and qp["strategy"] == strategy
    assert sum(g["queries"] for g in qp["groups"]) == metrics["queries"] == stats["queries"]
    assert qp["pairs_routed"] + qp["pairs_skipped"] == 4 * metrics["publications"]
    assert qp["pairs_routed"] == sum(g["publications_routed"] for g in qp["groups"])
    assert sum(g["matches"] for g in qp["groups"]) == len(expected)
    assert all(g["index_bytes"] > 0 for g in qp["groups"] if g["queries"])
    if strategy != "hash":
        assert qp["contained_queries"] > 0  # the workload has containment to use


@spark_test
def test_contained_query_is_reported_and_k_may_exceed_the_queries(spark, inputs, tmp_path):
    """Three queries in 5 groups: one contained in another, reported when it matches."""
    queries = tmp_path / "q.jsonl"
    label = "http://www.w3.org/2000/01/rdf-schema#label"
    records = [
        {"id": "airline", "query": f'SELECT ?s WHERE {{ ?s <{label}> ?o FILTER ftcontains(?o, "airline") }}'},
        {"id": "rio-airline",
         "query": f'SELECT ?s WHERE {{ ?s <{label}> ?o FILTER ftcontains(?o, "rio" ftand "airline") }}'},
        {"id": "nothing", "query": f'SELECT ?s WHERE {{ ?s <{label}> ?o FILTER ftcontains(?o, "zzzqx") }}'},
    ]
    queries.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "out"
    metrics = _partitioned_run(spark, inputs, out, "containment", 5, queries=queries)
    lines = [json.loads(line) for line in spark_lines(out)]
    assert {"publication": "http://ex.org/ok1", "query": "rio-airline", "subscriber": None,
            "bindings": [{"s": "<http://ex.org/ok1>"}]} in lines
    assert {line["query"] for line in lines} == {"airline", "rio-airline"}
    qp = metrics["query_partitions"]
    assert qp["contained_queries"] == 1 and len(qp["groups"]) == 5
    assert sum(1 for g in qp["groups"] if g["queries"]) == 2  # the tree and "nothing"
    assert qp["pairs_skipped"] > 0


@spark_test
def test_spark_jvms_map_the_class_archive_this_run_made():
    """tests/spark_jvm.py: the archive the run makes in the background is one a Spark JVM maps
    (``-Xshare:on`` makes a JVM that cannot use it exit with an error instead of starting
    without it)."""
    from tests import spark_jvm

    options = os.environ.get("SPARK_SUBMIT_OPTS", "")
    archive = next((Path(o.split("=", 1)[1]) for o in options.split() if o.startswith("-XX:SharedArchiveFile=")), None)
    if archive is None:
        pytest.skip(f"no class archive in this run's SPARK_SUBMIT_OPTS ({options!r}): -p no:cacheprovider or set before")
    deadline = time.monotonic() + 600
    while not archive.exists() and time.monotonic() < deadline:
        time.sleep(1)  # made in the background since the run collected this module
    assert archive.exists(), archive
    submit = Path(spark_jvm.pyspark_home()) / "bin" / "spark-submit"
    environment = {**os.environ, "SPARK_SUBMIT_OPTS": f"{options} -Xshare:on"}
    assert subprocess.run([str(submit), "--version"], env=environment, capture_output=True,
                          timeout=120).returncode == 0
    environment["SPARK_SUBMIT_OPTS"] = f"{options} -Xshare:on -XX:SharedArchiveFile={archive}.missing"
    assert subprocess.run([str(submit), "--version"], env=environment, capture_output=True,
                          timeout=120).returncode != 0  # (the check can fail)
