"""The command line: rtf check, rtf match, rtf demo (issue interface, kept stable)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

import pytest

from rtf import ALGORITHMS
from rtf.cli import main

EX = "http://ex.org/"
NT = f"""<{EX}a> <{EX}title> "Olympic games in Rio"@en .
<{EX}a> <{EX}p> <{EX}b> .
<{EX}b> <{EX}title> "Nothing here" .
<{EX}c> <{EX}title> "Rio, again" .
<{EX}c> <{EX}p> <{EX}a> .
"""


@pytest.fixture
def files(tmp_path):
    pubs = tmp_path / "pubs.nt.gz"
    with gzip.open(pubs, "wt", encoding="utf-8") as f:
        f.write(NT)
    queries = tmp_path / "q.jsonl"
    queries.write_text("\n".join(json.dumps(r) for r in [
        {"id": "rio", "query": f'SELECT ?s ?t WHERE {{ ?s <{EX}title> ?t FILTER ftcontains(?t, "rio") }}',
         "subscriber": "alice"},
        {"id": "linked", "query": f"ASK {{ ?s <{EX}p> ?o }}"},
    ]) + "\n")
    return pubs, queries


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_check_prints_the_decomposition(capsys):
    code, out, _ = run(capsys, "check", f'ASK {{ ?a <{EX}p> ?t FILTER ftcontains(?t, "a" ftor "b") }}')
    # ftor is one full-text constraint (language version 2), not two branches
    assert code == 0 and "branches:    1" in out and '("a" ftor "b")' in out


def test_check_reports_line_and_column_and_no_traceback(capsys):
    code, out, err = run(capsys, "check", "SELECT ?x WHERE {\n  ?x ?y \n}")
    assert code == 1 and "line" in err and "column" in err and "Traceback" not in err


def test_check_names_an_unsupported_construct(capsys):
    code, _, err = run(capsys, "check", "SELECT ?x WHERE { ?x ?p ?o SERVICE <http://x/> { ?x ?q ?r } }")
    assert code == 1 and "SERVICE" in err.upper()


def test_check_reads_a_query_file(capsys, tmp_path):
    rq = tmp_path / "one.rq"
    rq.write_text("ASK { ?s ?p ?o }")
    assert run(capsys, "check", "-f", str(rq))[0] == 0


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_match_writes_documented_json_lines_in_order(capsys, files, algorithm):
    pubs, queries = files
    code, out, _ = run(capsys, "match", "--queries", str(queries), "--publications", str(pubs),
                       "--algorithm", algorithm)
    assert code == 0
    lines = [json.loads(line) for line in out.splitlines()]
    assert lines == [
        {"publication": f"{EX}a", "query": "linked", "subscriber": None, "bindings": []},
        {"publication": f"{EX}a", "query": "rio", "subscriber": "alice",
         "bindings": [{"s": f"<{EX}a>", "t": '"Olympic games in Rio"@en'}]},
        {"publication": f"{EX}c", "query": "linked", "subscriber": None, "bindings": []},
        {"publication": f"{EX}c", "query": "rio", "subscriber": "alice",
         "bindings": [{"s": f"<{EX}c>", "t": '"Rio, again"'}]},
    ]


def test_match_stats_go_to_stderr(capsys, files, tmp_path):
    pubs, queries = files
    out_file = tmp_path / "m.jsonl"
    code, out, err = run(capsys, "match", "--queries", str(queries), "--publications", str(pubs),
                         "--output", str(out_file), "--stats")
    stats = json.loads(err.strip().splitlines()[-1])
    assert code == 0 and out == ""
    assert {"queries", "publications", "register_s", "filter_s", "matches", "peak_rss_mb"} <= set(stats)
    assert (stats["queries"], stats["publications"], stats["matches"]) == (2, 3, 4)
    assert len(out_file.read_text().splitlines()) == 4


def test_match_names_file_and_line_of_a_malformed_line(capsys, files, tmp_path):
    _, queries = files
    bad = tmp_path / "bad.nt"
    bad.write_text(NT + "<http://ex.org/d> <http://ex.org/p> oops .\n")
    code, _, err = run(capsys, "match", "--queries", str(queries), "--publications", str(bad))
    assert code == 1 and "bad.nt:6" in err and "Traceback" not in err


def test_match_skip_invalid_goes_on_and_counts(capsys, files, tmp_path):
    _, queries = files
    bad = tmp_path / "bad.nt"
    bad.write_text("<http://ex.org/d> <http://ex.org/p> oops .\n" + NT)
    code, out, err = run(capsys, "match", "--queries", str(queries), "--publications", str(bad),
                         "--skip-invalid", "--stats")
    assert code == 0 and "skipped 1 invalid line" in err
    assert json.loads(err.strip().splitlines()[-1])["skipped_lines"] == 1
    assert len(out.splitlines()) == 4


def test_match_rejects_a_bad_query_naming_it(capsys, files, tmp_path):
    pubs, _ = files
    q = tmp_path / "q.jsonl"
    q.write_text(json.dumps({"id": "broken", "query": "SELECT ?x WHERE { ?x"}) + "\n")
    code, _, err = run(capsys, "match", "--queries", str(q), "--publications", str(pubs))
    assert code == 1 and "broken" in err and "q.jsonl:1" in err


def test_match_reads_a_single_rq_query(capsys, files, tmp_path):
    pubs, _ = files
    rq = tmp_path / "linked.rq"
    rq.write_text(f"ASK {{ ?s <{EX}p> ?o }}")
    code, out, _ = run(capsys, "match", "--queries", str(rq), "--publications", str(pubs))
    assert code == 0 and [json.loads(x)["query"] for x in out.splitlines()] == ["linked", "linked"]


def test_demo_falls_back_to_the_bundled_example(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("RTF_DATA_DIR", str(tmp_path / "nowhere"))
    code, out, err = run(capsys, "demo")
    assert code == 0 and "bundled example" in err
    assert {json.loads(x)["query"] for x in out.splitlines()} == {"rio-games", "any-report-about-football", "recent-articles"}


def test_console_script_help_teaches():
    out = subprocess.run([sys.executable, "-m", "rtf.cli", "match", "--help"],
                         capture_output=True, text=True, check=True).stdout
    assert "--publications" in out and "example" in out


@pytest.mark.parametrize("argv, message", [
    (["gen-queries", "--publications", "x.nt", "-n", "0", "-o", "q.jsonl"],
     "-n/--count: expected a positive integer, got '0'"),
    (["gen-queries", "--publications", "x.nt", "--ft-pr", "150", "-o", "q.jsonl"],
     "--ft-pr: a percentage is from 0 to 100, got '150'"),
    (["gen-queries", "--publications", "x.nt", "--phrase", "often", "-o", "q.jsonl"],
     "--phrase: expected a probability, got 'often'"),
    (["bench", "--pubs", "-3"], "--pubs: expected a positive integer, got '-3'"),
])
def test_bad_option_values_are_one_line_usage_errors(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


# ------------------------------------------------------------- output lines

from hypothesis import given, settings, strategies as st  # noqa: E402

from rtf.io.output import match_line  # noqa: E402
from rtf.engine import Match  # noqa: E402

_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)


@settings(max_examples=200, deadline=None)
@given(pub=_text, qid=_text, subscriber=st.none() | _text, is_ask=st.booleans(),
       solutions=st.frozensets(  # a solution binds each variable once
           st.dictionaries(_text, _text, max_size=3).map(lambda d: tuple(d.items())), max_size=4))
def test_match_line_is_exactly_json_dumps(pub, qid, subscriber, is_ask, solutions):
    m = Match(qid, subscriber, solutions, is_ask)
    expected = json.dumps({"publication": pub, "query": qid, "subscriber": subscriber,
                           "bindings": m.bindings}, ensure_ascii=False)
    assert match_line(pub, m) == expected
