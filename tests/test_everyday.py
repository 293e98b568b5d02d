"""Everyday use (issue 15): live input, query files with bad queries, metadata,
match_many and --workers, SPARQL JSON output, defaults and paper cuts."""

from __future__ import annotations

import bz2
import gzip
import json
import os
import selectors
import subprocess
import sys
import threading
import time
import typing
from pathlib import Path

import pytest

import rtf
from rtf import Engine, Publication, RegisteredQuery
from rtf.cli import main
from rtf.io.output import sparql_term
from rtf.io.reader import read_publications

EX = "http://ex.org/"
ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def nt(subject: str, text: str) -> str:
    return f'<{EX}{subject}> <{EX}title> "{text}" .\n'


QUERIES = [
    {"id": "rio", "query": f'SELECT ?s WHERE {{ ?s <{EX}title> ?t FILTER ftcontains(?t, "rio") }}',
     "subscriber": "alice", "topic": "sport", "priority": 2},
    {"id": "any", "query": f"ASK {{ ?s <{EX}title> ?t }}"},
]


@pytest.fixture
def queries(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in QUERIES))
    return path


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def rtf_process(*argv) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "rtf.cli", *map(str, argv)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=ROOT)


def read_line(proc: subprocess.Popen, timeout: float = 20.0) -> str:
    """One line of the process's stdout, failing (not hanging) if none comes in time.

    Reads the pipe's file descriptor directly (a buffered reader could hold
    the next line where select cannot see it).
    """
    pending = _PENDING.setdefault(proc.pid, bytearray())
    fd = proc.stdout.fileno()
    deadline = time.monotonic() + timeout
    while b"\n" not in pending:
        sel = selectors.DefaultSelector()
        sel.register(fd, selectors.EVENT_READ)
        left = deadline - time.monotonic()
        assert left > 0 and sel.select(left), "no output in time: the matches were held back"
        chunk = os.read(fd, 65536)
        assert chunk, "the process ended early"
        pending += chunk
    line, _, rest = bytes(pending).partition(b"\n")
    pending[:] = rest
    return line.decode()


def read_rest(proc: subprocess.Popen) -> list[str]:
    """The lines left on stdout once the process closes it."""
    pending = _PENDING.pop(proc.pid, bytearray())
    pending += proc.stdout.read()
    return bytes(pending).decode().splitlines()


_PENDING: dict[int, bytearray] = {}


# ------------------------------------------------------------- live input


def test_a_live_feed_gets_each_publications_matches_before_the_next_is_sent(queries):
    proc = rtf_process("match", "--queries", queries, "--publications", "-")
    try:
        # The pipe stays open: a publication is complete once the next subject starts.
        proc.stdin.write(nt("a", "Rio games").encode() + nt("b", "Nothing").encode())
        proc.stdin.flush()
        got = [json.loads(read_line(proc)), json.loads(read_line(proc))]
        assert [(g["publication"], g["query"]) for g in got] == [(f"{EX}a", "any"), (f"{EX}a", "rio")]
        proc.stdin.write(nt("c", "Rio again").encode())
        proc.stdin.flush()
        assert json.loads(read_line(proc))["publication"] == f"{EX}b"  # b ended when c began
        proc.stdin.close()  # the end of input completes the last one
        rest = [json.loads(line) for line in read_rest(proc)]
        assert [(g["publication"], g["query"]) for g in rest] == [(f"{EX}c", "any"), (f"{EX}c", "rio")]
        assert proc.wait(timeout=20) == 0
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("compress", [gzip.compress, bz2.compress, lambda b: b])
def test_stdin_compression_is_told_by_magic_bytes(queries, compress):
    data = compress((nt("a", "Rio") + nt("b", "x")).encode())
    out = subprocess.run([sys.executable, "-m", "rtf.cli", "match", "--queries", queries,
                          "--publications", "-"], input=data, capture_output=True, check=True).stdout
    assert [json.loads(l)["query"] for l in out.decode().splitlines()] == ["any", "rio", "any"]


def test_format_names_the_syntax_of_stdin(queries, monkeypatch, capsys):
    turtle = f'@prefix ex: <{EX}> .\nex:a ex:title "Rio" .\n'
    import io
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(turtle.encode())))
    code, out, _ = run(capsys, "match", "--queries", queries, "--publications", "-", "--format", "ttl")
    assert code == 0 and [json.loads(l)["query"] for l in out.splitlines()] == ["any", "rio"]


def test_an_unknown_format_error_names_the_cli_flag(capsys, queries, tmp_path):
    code, _, err = run(capsys, "match", "--queries", queries, "--publications", tmp_path / "x.foo")
    assert code == 1 and "--format" in err and "format=" not in err


def test_follow_reads_a_growing_file(queries, tmp_path):
    feed = tmp_path / "feed.nt"
    feed.write_text(nt("a", "Rio"))
    proc = rtf_process("match", "--queries", queries, "--follow", feed, "--follow-timeout", "30")
    try:
        with open(feed, "a") as f:
            f.write(nt("b", "x"))
        assert [json.loads(read_line(proc))["query"] for _ in "12"] == ["any", "rio"]  # a's
        with open(feed, "a") as f:
            f.write(nt("c", "Rio"))
        assert json.loads(read_line(proc))["publication"] == f"{EX}b"
    finally:
        proc.kill()
        proc.wait()


def test_follow_stops_after_the_idle_timeout(capsys, queries, tmp_path):
    feed = tmp_path / "feed.nt"
    feed.write_text(nt("a", "Rio"))
    t0 = time.perf_counter()
    code, out, _ = run(capsys, "match", "--queries", queries, "--follow", feed, "--follow-timeout", "0.3")
    assert code == 0 and len(out.splitlines()) == 2 and time.perf_counter() - t0 < 10


# ------------------------------------------------------------- query files


BAD_FILE = [
    json.dumps(QUERIES[0]),
    "{not json",
    json.dumps({"id": "broken", "query": "SELECT ?s WHERE { ?s ?p }"}),
    json.dumps({"id": "rio", "query": QUERIES[1]["query"]}),  # a duplicate id
    json.dumps({"id": "dead", "query": f'SELECT ?s WHERE {{ ?s <{EX}title> ?t FILTER ftcontains(?x, "rio") }}'}),
]


def test_check_reports_every_bad_query_of_a_file(capsys, tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text("\n".join(BAD_FILE) + "\n")
    code, out, err = run(capsys, "check", "-f", path)
    assert code == 1
    assert f"{path}:2: not a JSON object" in err
    assert f"{path}:3: query 'broken': line 1, column" in err
    assert f"{path}:4: a query with id 'rio' is already registered" in err
    assert f"{path}:5: query 'dead': warning: ftcontains(?x, \"rio\") is never true" in err
    assert "2 valid queries, 3 invalid, 1 warning(s)" in out


def test_check_warns_about_a_query_that_can_never_match(capsys):
    code, _, err = run(capsys, "check", f'SELECT ?s WHERE {{ ?s <{EX}p> ?t FILTER ftcontains(?s, "x") }}')
    assert code == 0 and "warning: ftcontains(?s, \"x\") is never true" in err
    code, _, err = run(capsys, "check", f'SELECT ?s WHERE {{ ?s <{EX}p> ?t FILTER ftcontains(?t, "x") }}')
    assert code == 0 and "warning" not in err


def test_match_skip_invalid_skips_bad_queries_and_reports_each(capsys, tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text("\n".join(BAD_FILE) + "\n")
    pubs = tmp_path / "p.nt"
    pubs.write_text(nt("a", "Rio"))
    code, _, err = run(capsys, "match", "--queries", path, "--publications", pubs)
    assert code == 1 and f"{path}:2" in err  # without the flag: the first bad line stops it
    code, out, err = run(capsys, "match", "--queries", path, "--publications", pubs, "--skip-invalid")
    assert code == 0
    assert [json.loads(l)["query"] for l in out.splitlines()] == ["rio"]  # "dead" never matches
    skipped = [l for l in err.splitlines() if l.startswith("rtf: skipped query: ")]
    assert [s.split(": ")[2] for s in skipped] == [f"{path}:2", f"{path}:3", f"{path}:4"]


# ------------------------------------------------------------- metadata


def test_extra_fields_are_metadata_returned_by_get_and_echoed(capsys, queries, tmp_path):
    pubs = tmp_path / "p.nt"
    pubs.write_text(nt("a", "Rio"))
    code, out, _ = run(capsys, "match", "--queries", queries, "--publications", pubs, "--with-metadata")
    lines = [json.loads(l) for l in out.splitlines()]
    assert code == 0 and [l["metadata"] for l in lines] == [{}, {"topic": "sport", "priority": 2}]
    code, plain, _ = run(capsys, "match", "--queries", queries, "--publications", pubs)
    assert [{k: v for k, v in l.items() if k != "metadata"} for l in lines] == \
        [json.loads(l) for l in plain.splitlines()]


def test_engine_get_returns_the_registered_query_with_its_metadata():
    engine = Engine()
    engine.register(QUERIES[0]["query"], "rio", "alice", metadata={"topic": "sport"})
    got = engine.get("rio")
    assert isinstance(got, RegisteredQuery) and got.subscriber == "alice"
    assert dict(got.metadata) == {"topic": "sport"} and got.query.projection == ("s",)
    with pytest.raises(TypeError):
        got.metadata["x"] = 1  # read-only
    assert dict(engine.get("rio").metadata) == {"topic": "sport"}
    with pytest.raises(KeyError):
        engine.get("nope")
    with pytest.raises(TypeError):
        engine.register(QUERIES[1]["query"], "q2", metadata=["not", "a", "mapping"])
    assert "q2" not in engine


# ------------------------------------------------------------- several publications


def test_match_many_is_match_in_input_order():
    engine = Engine()
    for r in QUERIES:
        engine.register(r["query"], r["id"])
    pubs = [Publication(f"{EX}{i}", [(f"<{EX}{i}>", f"<{EX}title>", f'"{t}"')])
            for i, t in enumerate(["Rio", "x", "rio games", "y"])]
    many = engine.match_many(iter(pubs))
    assert not isinstance(many, list)  # lazy
    assert list(many) == [engine.match(p) for p in pubs]


def test_workers_give_the_one_process_output(capsys, queries, tmp_path):
    pubs = tmp_path / "p.nt"
    pubs.write_text("".join(nt(f"s{i}", "Rio" if i % 3 else "none") for i in range(200)))
    outputs = [run(capsys, "match", "--queries", queries, "--publications", pubs, "--workers", n)
               for n in (1, 2, 3)]
    assert outputs[0][0] == 0 and len(outputs[0][1].splitlines()) == 200 + 133
    assert outputs[1][:2] == outputs[0][:2] and outputs[2][:2] == outputs[0][:2]


def test_workers_keep_the_output_before_a_bad_line(capsys, queries, tmp_path):
    pubs = tmp_path / "p.nt"
    pubs.write_text(nt("a", "Rio") + "<broken\n" + nt("b", "Rio"))
    one = run(capsys, "match", "--queries", queries, "--publications", pubs)
    two = run(capsys, "match", "--queries", queries, "--publications", pubs, "--workers", "2")
    assert one[0] == two[0] == 1 and one[1] == two[1] and f"{pubs}:2" in two[2]


# ------------------------------------------------------------- SPARQL JSON


def test_sparql_json_output_is_a_results_document_per_match(capsys, queries, tmp_path):
    pubs = tmp_path / "p.nt"
    pubs.write_text(nt("a", "Rio"))
    code, out, _ = run(capsys, "match", "--queries", queries, "--publications", pubs,
                       "--output-format", "sparql-json")
    ask, select = [json.loads(l) for l in out.splitlines()]
    assert ask == {"publication": f"{EX}a", "query": "any", "subscriber": None, "head": {}, "boolean": True}
    assert select == {"publication": f"{EX}a", "query": "rio", "subscriber": "alice",
                      "head": {"vars": ["s"]},
                      "results": {"bindings": [{"s": {"type": "uri", "value": f"{EX}a"}}]}}


def test_sparql_json_is_what_rdflib_reads():
    from rdflib.plugins.sparql.results.jsonresults import JSONResultParser
    import io
    keys = ["<http://ex/a>", "_:b1", '"plain"', '"chat"@fr', '"1"^^<http://www.w3.org/2001/XMLSchema#integer>',
            '"a \\"q\\" \\n"']
    doc = {"head": {"vars": [f"v{i}" for i in range(len(keys))]},
           "results": {"bindings": [{f"v{i}": sparql_term(k) for i, k in enumerate(keys)}]}}
    result = JSONResultParser().parse(io.StringIO(json.dumps(doc)))
    from rtf.query.terms import rdflib_key
    row = result.bindings[0]
    got = [rdflib_key(row[__import__("rdflib").Variable(f"v{i}")]) for i in range(len(keys))]
    assert got[0] == keys[0] and got[2:] == keys[2:] and got[1].startswith("_:")


# ------------------------------------------------------------- defaults and paper cuts


def test_engine_and_rtf_match_default_to_rtfs(capsys, queries, tmp_path):
    assert Engine().algorithm == "rtfs"
    pubs = tmp_path / "p.nt"
    pubs.write_text(nt("a", "Rio"))
    code, _, err = run(capsys, "match", "--queries", queries, "--publications", pubs, "--stats")
    assert json.loads(err.splitlines()[-1])["algorithm"] == "rtfs"


def test_version(capsys):
    with pytest.raises(SystemExit) as exit:
        main(["--version"])
    assert exit.value.code == 0 and capsys.readouterr().out.strip() == f"rtf {rtf.__version__}"


def test_typing_marker_algorithm_literal_and_exports():
    assert (ROOT / "rtf" / "py.typed").exists()
    assert typing.get_args(rtf.Algorithm) == rtf.ALGORITHMS
    assert "RegisteredQuery" in rtf.__all__ and rtf.RegisteredQuery is RegisteredQuery
    hints = typing.get_type_hints(Engine.__init__)
    assert hints["algorithm"] == rtf.Algorithm


def test_every_public_method_has_a_docstring():
    from rtf.engine import Match
    for cls in (Engine, Match, RegisteredQuery):
        for name, member in vars(cls).items():
            if callable(member) and (not name.startswith("_") or name in ("__init__", "__len__")):
                doc = member.__doc__ or (cls.__doc__ if name == "__init__" else None)
                assert doc, f"{cls.__name__}.{name} has no docstring"


def test_match_help_example_names_files_that_exist(capsys):
    with pytest.raises(SystemExit):
        main(["match", "--help"])
    help_text = capsys.readouterr().out
    named = {w for w in help_text.split() if w.startswith("examples/")}
    assert named and all((ROOT / w).exists() for w in named)


def test_the_match_help_example_runs(capsys):
    code, out, _ = run(capsys, "match", "--queries", EXAMPLES / "news_queries.jsonl",
                       "--publications", EXAMPLES / "news.nt", "--taxonomy", EXAMPLES / "news_ontology.nt")
    assert code == 0 and len(out.splitlines()) == 3


# ------------------------------------------------------------- plots


def _bench_doc(dbs, ft_prs=(0, 50), algorithms=("rtfs", "rtfm", "ibroker")):
    runs = [{"ft_pr": ft, "algorithm": alg, "db": db, "filter_ms_mean": 1.0 + i + db / 1000,
             "_times": [0.001] * 20, "pubs_per_s": 1000.0, "kb_per_s": 10.0, "publications": 20,
             "index_mb": 5.0 + i, "queries_mb": 1.0, "insert_s": 0.1 * (i + 1)}
            for ft in ft_prs for i, alg in enumerate(algorithms) for db in dbs]
    return {"runs": runs, "params": {"algorithms": list(algorithms), "step": dbs[0]}}


def _figures(monkeypatch, tmp_path, doc):
    """The figures write_plots draws, kept open to be inspected."""
    pytest.importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from rtf.bench.plots import write_plots
    plt.close("all")
    monkeypatch.setattr(plt, "close", lambda fig=None: None)
    written = write_plots(doc, tmp_path)
    figures = [plt.figure(n) for n in plt.get_fignums()]
    return written, figures


def test_fig7_has_every_engine_and_legends_stay_off_the_data(monkeypatch, tmp_path):
    written, figures = _figures(monkeypatch, tmp_path, _bench_doc([1000, 2000]))
    assert [p.name for p in written] == ["fig5_filtering.png", "fig6_memory_insertion.png", "fig7_ft_pr.png"]
    fig7 = figures[-1]
    labels = fig7.axes[0].get_legend_handles_labels()[1]
    assert {label.split()[0] for label in labels} == {"rtfs", "rtfm", "ibroker"}
    for fig in figures:
        fig.canvas.draw()
        for ax in fig.axes:
            legend = ax.get_legend()
            if legend is not None:  # the legend's box lies beside the axes', not over it
                box, area = legend.get_window_extent(), ax.get_window_extent()
                assert box.x0 >= area.x1 or box.y1 <= area.y0


def test_a_single_db_size_is_drawn_as_bars(monkeypatch, tmp_path):
    from matplotlib.patches import Rectangle
    _, figures = _figures(monkeypatch, tmp_path, _bench_doc([1000]))
    filter_axis = figures[0].axes[0]
    bars = [p for p in filter_axis.patches if isinstance(p, Rectangle)]
    assert len(bars) == 3 and not filter_axis.get_lines()
    assert "DB = 1,000" in filter_axis.get_xlabel()


def test_an_engine_with_metadata_pickles():
    import pickle
    engine = Engine()
    engine.register(QUERIES[0]["query"], "rio", metadata={"topic": "sport"})
    copy = pickle.loads(pickle.dumps(engine))
    assert dict(copy.get("rio").metadata) == {"topic": "sport"}
