"""``rtf match --output-format arrow|parquet|ids``: the same matches as the JSON Lines.

Read back with pyarrow, each row of the Arrow stream and of the Parquet file
is written as `rtf match` writes a line (`row_line`) and compared with the
JSON Lines output byte for byte, for every engine, on generated worlds and
on the DBpedia sample; ``ids`` holds the (publication, query) pairs of the
JSON Lines, no more, no fewer.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from rtf import ALGORITHMS, Engine
from rtf.cli import main
from rtf.io import datasets
from rtf.io.arrow_matches import MatchBatchWriter, MatchRows, arrow_match_schema, row_line
from rtf.io.output import match_bytes, match_ids_bytes, match_lines
from tests import worlds
from tests.test_differential import register_everywhere
from tests.test_output_bytes import files as output_bytes_files  # noqa: F401 (a fixture)
from tests.test_results import _text, matches


def _rows_of(data: bytes, output_format: str) -> list[dict]:
    if output_format == "parquet":
        table = pq.read_table(io.BytesIO(data))
    else:
        table = pa.ipc.open_stream(data).read_all()
    assert table.schema == arrow_match_schema()
    return table.to_pylist()


def _written(output_format: str, pieces, live: bool = False) -> bytes:
    out = io.BytesIO()
    writer = MatchBatchWriter(out, output_format, live=live)
    for piece in pieces:
        writer.write(piece)
    writer.close()
    return out.getvalue()


def _pairs_of_ids(data: bytes) -> list[tuple[str, str]]:
    return [(doc["publication"], q) for doc in map(json.loads, data.split(b"\n")[:-1])
            for q in doc["queries"]]


def _pairs_of_lines(text: str) -> list[tuple[str, str]]:
    return [(doc["publication"], doc["query"]) for doc in map(json.loads, text.split("\n")[:-1])]


# ------------------------------------------------------------- the columns


@settings(max_examples=300, deadline=None)
@given(found=st.lists(st.tuples(_text, matches()), max_size=4), cut=st.integers(0, 4))
def test_rows_say_what_the_lines_say_for_any_matches(found, cut):
    """Any ids (newlines, quotes, non-ASCII), subscribers (None), ASK, shared and distinct
    solutions: the rows, flushed anywhere, are the lines."""
    rows, got = MatchRows(), []
    for i, (pub, m) in enumerate(found):
        if i == cut:
            got += rows.flush().to_pylist()
        rows.add(pub, m)
    got += rows.flush().to_pylist()
    expected = "".join(match_lines(pub, m) for pub, m in found)
    assert "".join(row_line(r) + "\n" for r in got) == expected
    ids = b"".join(match_ids_bytes(pub, m) for pub, m in found)
    assert _pairs_of_ids(ids) == _pairs_of_lines(expected)


@settings(max_examples=200, deadline=None)
@given(ids=st.lists(_text.filter(bool), min_size=1, max_size=6, unique=True), pub=_text)
def test_ids_lines_are_json_dumps(ids, pub):
    from rtf.engine import Match

    found = [Match(q, None, frozenset({()}), is_ask=True) for q in ids]
    expected = json.dumps({"publication": pub, "queries": ids}, ensure_ascii=False) + "\n"
    assert match_ids_bytes(pub, found) == expected.encode()


@pytest.mark.slow
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(qs=st.lists(worlds.queries(), min_size=1, max_size=6),
       pubs=st.lists(worlds.publications(), min_size=1, max_size=3))
def test_every_engine_writes_the_same_matches_in_every_format(qs, pubs):
    engines = {a: Engine(a, taxonomy=worlds.taxonomy()) for a in ALGORITHMS}
    assume(register_everywhere(engines, qs))
    for name, engine in engines.items():
        found = [(pub.id, engine.match(pub)) for pub in pubs]
        lines = b"".join(match_bytes(pub, m) for pub, m in found).decode()
        for output_format in ("arrow", "parquet"):
            rows = _rows_of(_written(output_format, found), output_format)
            assert "".join(row_line(r) + "\n" for r in rows) == lines, (name, output_format)
        ids = b"".join(match_ids_bytes(pub, m) for pub, m in found if m)
        assert _pairs_of_ids(ids) == _pairs_of_lines(lines), name


def test_a_worker_batch_is_written_after_the_rows_gathered_before_it():
    from rtf.engine import Match
    from rtf.io.arrow_matches import batch_of

    one = ("http://ex/a", [Match("q1", None, frozenset({(("s", "<http://ex/a>"),)}))])
    two = ("http://ex/b", [Match("q2", "ann", frozenset({(("s", "<http://ex/b>"),)}))])
    three = ("http://ex/c", [Match("q3", None, frozenset({()}), is_ask=True)])
    data = _written("arrow", [one, batch_of([two]), three])
    assert [(r["publication"], r["query"]) for r in _rows_of(data, "arrow")] == [
        ("http://ex/a", "q1"), ("http://ex/b", "q2"), ("http://ex/c", "q3")]
    # live: one batch per publication, each flushed as it is written
    reader = pa.ipc.open_stream(_written("arrow", [one, three], live=True))
    assert [batch.num_rows for batch in reader] == [1, 1]


def test_the_spark_jobs_use_this_schema_and_these_rows():
    import rtf.io.arrow_matches as shared
    import rtf.spark.arrow_matches as spark

    assert spark.arrow_match_schema is shared.arrow_match_schema
    assert spark.MatchRows is shared.MatchRows and spark.row_line is shared.row_line


# ---------------------------------------------------------- the command line


@pytest.fixture()
def files(output_bytes_files):
    """test_output_bytes' files (a subscriber "ça", one without, an ASK, a publication id
    that is not ASCII), a CONSTRUCT query more, and a publication that matches nothing."""
    queries, pubs = output_bytes_files
    with queries.open("a", encoding="utf-8") as f:
        f.write(json.dumps({"id": "q4", "query": "CONSTRUCT { ?s <http://ex/of> ?o } "
                                                 "WHERE { ?s <http://ex/p> ?o }"}) + "\n")
    with pubs.open("a", encoding="utf-8") as f:
        f.write('<http://ex/b> <http://ex/q> "c" .\n')
    return queries, pubs


def _run(tmp_path, *args, output_format: str) -> bytes:
    out = tmp_path / f"out.{output_format}"
    assert main(["match", *args, "--output-format", output_format, "--output", str(out)]) == 0
    return out.read_bytes()


def _same_output_in_every_format(tmp_path, args) -> int:
    lines = _run(tmp_path, *args, output_format="jsonl").decode()
    for output_format in ("arrow", "parquet"):
        rows = _rows_of(_run(tmp_path, *args, output_format=output_format), output_format)
        assert "".join(row_line(r) + "\n" for r in rows) == lines, output_format
    assert _pairs_of_ids(_run(tmp_path, *args, output_format="ids")) == _pairs_of_lines(lines)
    return lines.count("\n")


def test_rtf_match_writes_each_format(files, tmp_path):
    queries, pubs = files
    assert _same_output_in_every_format(tmp_path, ["--queries", str(queries), "--publications",
                                                   str(pubs)]) == 8


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2])
def test_rtf_match_writes_each_format_on_the_dbpedia_sample(tmp_path, workers):
    if not datasets.available():
        pytest.skip(datasets.missing_message())
    from rtf.bench.workload import Mix, generate_queries
    from rtf.io.reader import read_publications

    sample = [f for f in datasets.dbpedia_files() if f.name.startswith("nordlys")][0]
    pubs = list(read_publications([sample]))
    queries = tmp_path / "q.jsonl"
    queries.write_text("".join(json.dumps(r) + "\n" for r in
                               generate_queries(pubs, 150, seed=3, mix=Mix.all_operators(0.5))))
    for algorithm in ALGORITHMS if workers == 1 else ["rtfs"]:
        args = ["--queries", str(queries), "--publications", str(sample), "--algorithm", algorithm,
                "--workers", str(workers)]
        assert _same_output_in_every_format(tmp_path, args) > 100


def test_an_arrow_stream_ends_well_after_a_bad_line(files, tmp_path, capsys):
    """As the lines: the matches of the publications before the bad line, then exit 1."""
    queries, pubs = files
    bad = tmp_path / "bad.nt"
    bad.write_text(pubs.read_text(encoding="utf-8") + "<http://ex/c> <http://ex/p> oops .\n",
                   encoding="utf-8")
    out = tmp_path / "out"
    args = ["match", "--queries", str(queries), "--publications", str(bad), "--output", "-"]
    stdout = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("sys.stdout", stdout)
        assert main([*args, "--output-format", "arrow"]) == 1
        stdout.flush()
        rows = _rows_of(stdout.buffer.getvalue(), "arrow")
    assert main(["match", "--queries", str(queries), "--publications", str(pubs),
                 "--output", str(out)]) == 0
    assert "".join(row_line(r) + "\n" for r in rows) == out.read_text(encoding="utf-8")
    assert "bad.nt:4: " in capsys.readouterr().err


@pytest.mark.parametrize("options, message", [
    (["--output-format", "parquet"], "--output-format parquet needs --output FILE"),
    (["--output-format", "parquet", "--output", "-"], "--output-format parquet needs --output FILE"),
    (["--output-format", "arrow", "--with-metadata"], "--with-metadata is for the JSON lines"),
    (["--output-format", "ids", "--explain", "--with-metadata"],
     "--with-metadata and --explain are for the JSON lines"),
])
def test_what_a_format_cannot_carry_is_refused_in_one_line(files, capsys, options, message):
    queries, pubs = files
    assert main(["match", "--queries", str(queries), "--publications", str(pubs), *options]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_arrow_to_a_stdout_of_text_is_refused(files, capsys):
    import contextlib

    queries, pubs = files
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["match", "--queries", str(queries), "--publications", str(pubs),
                     "--output-format", "arrow"]) == 2
    assert "writes bytes" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("output_format", ["jsonl", "ids", "arrow"])
def test_a_reader_that_stops_early_ends_the_run_quietly(tmp_path, output_format):
    """`rtf match ... | head -c 100`: exit 0 and nothing on stderr, as for the lines."""
    queries = tmp_path / "q.jsonl"
    queries.write_text("".join(json.dumps({"id": f"q{i}", "query": "SELECT ?s WHERE { ?s ?p ?o }"}) + "\n"
                               for i in range(2000)))
    pubs = tmp_path / "p.nt"
    pubs.write_text("".join(f'<http://ex/s{i}> <http://ex/p> "{i}" .\n' for i in range(400)))
    command = (f"{sys.executable} -m rtf match --queries {queries} --publications {pubs} "
               f"--output-format {output_format} | head -c 100 > /dev/null; echo ${{PIPESTATUS[0]}}")
    result = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=120)
    assert result.stdout.strip() == "0" and result.stderr == ""


# ------------------------------------------------------------------ the page


@pytest.mark.slow
def test_the_output_page_reads_the_stream_as_written():
    import os
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    text = (root / "docs" / "output.md").read_text(encoding="utf-8")
    blocks = text.split("```")[1::2]
    python = [b.split("\n", 1)[1] for b in blocks if b.startswith("python\n")][0]
    shell = [b.split("\n", 1)[1] for b in blocks if b.startswith("sh\n")][0]
    result = subprocess.run([sys.executable, "-c", python], cwd=root, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert "http://example.org/news/a1 rio-games alice [{'article': '<http://example.org/news/a1>'" \
        in result.stdout
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", shell], cwd=root, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "rio-games" in result.stdout, result.stderr


def test_a_live_feed_gets_a_batch_per_publication(files):
    """--publications -: each publication's matches are a record batch of their own, written
    as soon as the publication is complete (as the lines are flushed)."""
    queries, pubs = files
    result = subprocess.run([sys.executable, "-m", "rtf", "match", "--queries", str(queries),
                             "--publications", "-", "--output-format", "arrow"],
                            input=pubs.read_bytes(), capture_output=True, timeout=120)
    assert result.returncode == 0, result.stderr
    batches = list(pa.ipc.open_stream(result.stdout))
    assert [set(b.column("publication").to_pylist()) for b in batches] == [
        {"http://ex/Zürich"}, {"http://ex/a"}]


@pytest.mark.parametrize("name", ["rtf.io.arrow_matches", "rtf.io.output"])
def test_the_docstring_examples_run(name):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
