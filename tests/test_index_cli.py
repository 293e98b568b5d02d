"""``rtf index`` and ``rtf match --index`` (rtf/cli/index.py), and the SIGKILL test."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace

import pytest

from rtf import Engine

from rtf.io import datasets, store
from rtf.cli import main
from rtf.bench.workload import Mix, generate_queries


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.fixture(scope="module")
def records(dbpedia_slice, dbpedia_taxonomy):
    mix = replace(Mix.all_operators(0.6), distinct_predicates=1.0)
    return generate_queries(dbpedia_slice, 300, seed=3, mix=mix, taxonomy=dbpedia_taxonomy)


@pytest.fixture(scope="module")
def sample(dbpedia_slice, tmp_path_factory):
    """400 real publications of the sample, as one N-Triples file (a few seconds to match)."""
    path = tmp_path_factory.mktemp("pubs") / "sample.nt"
    with open(path, "w", encoding="utf-8") as f:
        for pub in dbpedia_slice[::3][:400]:
            f.writelines(f"{s} {p} {o} .\n" for s, p, o in pub.triples)
    return str(path)


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["naive", "rtfs", "ibroker"])
def test_match_with_an_index_writes_exactly_what_match_with_the_queries_writes(
        algorithm, records, sample, tmp_path, capsys):
    onto = str(datasets.dbpedia_ontology())
    queries = write_jsonl(tmp_path / "q.jsonl", records)
    idx = tmp_path / "q.idx"
    assert run(capsys, "index", "build", "--queries", queries, "--algorithm", algorithm,
               "--taxonomy", onto, "--output", idx)[0] == 0
    code, direct, _ = run(capsys, "match", "--queries", queries, "--algorithm", algorithm,
                          "--taxonomy", onto, "--publications", sample)
    assert code == 0 and direct.count("\n") > 20
    code, loaded, _ = run(capsys, "match", "--index", idx, "--publications", sample)
    assert code == 0 and loaded == direct
    out = tmp_path / "m.jsonl"
    assert run(capsys, "match", "--index", idx, "--publications", sample, "--output", out)[0] == 0
    assert out.read_text() == direct


def test_add_and_remove_update_the_index_in_place(records, sample, tmp_path, capsys):
    first, more = records[:200], records[200:]
    idx = tmp_path / "q.idx"
    run(capsys, "index", "build", "--queries", write_jsonl(tmp_path / "a.jsonl", first), "--output", idx)
    assert run(capsys, "index", "add", idx, "--queries", write_jsonl(tmp_path / "b.jsonl", more))[0] == 0
    gone = [r["id"] for r in records[::3]]
    assert run(capsys, "index", "remove", idx, "--ids", *gone)[0] == 0
    kept = [r for r in records if r["id"] not in set(gone)]
    code, via_index, _ = run(capsys, "match", "--index", idx, "--publications", sample)
    code2, direct, _ = run(capsys, "match", "--algorithm", "rtfs", "--publications", sample,
                           "--queries", write_jsonl(tmp_path / "k.jsonl", kept))
    assert code == code2 == 0 and via_index == direct
    assert not {json.loads(line)["query"] for line in via_index.splitlines()} & set(gone)
    code, out, _ = run(capsys, "index", "info", idx)
    info = json.loads(out)
    assert code == 0 and info["queries"] == len(kept) and info["algorithm"] == "rtfs"
    assert info["format_version"] == store.FORMAT_VERSION and info["bytes"] == idx.stat().st_size and info["shapes"] > 0


def test_a_failed_update_leaves_the_index_as_it_was(records, tmp_path, capsys):
    idx = tmp_path / "q.idx"
    run(capsys, "index", "build", "--queries", write_jsonl(tmp_path / "a.jsonl", records[:20]),
        "--output", idx)
    before = idx.read_bytes()
    bad = write_jsonl(tmp_path / "b.jsonl", records[20:25] + [{"id": "x", "query": "SELECT ?x WHERE {"}])
    code, _, err = run(capsys, "index", "add", idx, "--queries", bad)
    assert code == 1 and "b.jsonl:6" in err
    dup = write_jsonl(tmp_path / "c.jsonl", records[:1])
    assert run(capsys, "index", "add", idx, "--queries", dup)[0] == 1
    code, _, err = run(capsys, "index", "remove", idx, "--ids", records[0]["id"], "nope")
    assert code == 1 and "'nope'" in err
    assert idx.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "b.jsonl", "c.jsonl", "q.idx"]


def test_a_bad_index_is_one_error_line_and_no_traceback(records, sample, tmp_path, capsys):
    idx = tmp_path / "q.idx"
    run(capsys, "index", "build", "--queries", write_jsonl(tmp_path / "a.jsonl", records[:5]),
        "--output", idx)
    data = idx.read_bytes()
    idx.write_bytes(data[:-10])
    for argv in (("index", "info", idx), ("match", "--index", idx, "--publications", sample),
                 ("index", "add", idx, "--queries", tmp_path / "a.jsonl")):
        code, out, err = run(capsys, *argv)
        assert code == 1 and err.startswith("rtf: error:") and "truncated" in err
        assert "Traceback" not in err and err.count("\n") == 1
    (tmp_path / "foreign.idx").write_text('{"id": "q1"}\n' * 10)
    code, _, err = run(capsys, "index", "info", tmp_path / "foreign.idx")
    assert code == 1 and "not an rtf index" in err


def test_match_refuses_options_the_index_fixes(records, sample, tmp_path, capsys):
    idx = tmp_path / "q.idx"
    run(capsys, "index", "build", "--queries", write_jsonl(tmp_path / "a.jsonl", records[:5]),
        "--output", idx)
    code, _, err = run(capsys, "match", "--index", idx, "--taxonomy", str(datasets.dbpedia_ontology()),
                       "--publications", sample)
    assert code == 1 and "--taxonomy" in err
    code, _, err = run(capsys, "match", "--index", idx, "--algorithm", "naive", "--publications", sample)
    assert code == 1 and "rtfs" in err
    code, _, err = run(capsys, "match", "--index", idx, "--publications", sample, "--output", idx)
    assert code == 2 and "refusing" in err
    assert Engine.load(idx) is not None
    with pytest.raises(SystemExit):  # --queries and --index are exclusive
        main(["match", "--index", str(idx), "--queries", str(tmp_path / "a.jsonl"), "--publications", sample])


@pytest.mark.slow
def test_sigkill_in_the_middle_of_index_add_leaves_the_previous_index_intact(records, tmp_path, capsys,
                                                                              dbpedia_slice):
    """Kill `rtf index add` at several moments, the last as its temporary file
    appears (mid-write): the index loads every time, and is either the previous
    one byte for byte or, if the rename already happened, the complete new one."""
    idx = tmp_path / "q.idx"
    run(capsys, "index", "build", "--queries", write_jsonl(tmp_path / "a.jsonl", records[:10]),
        "--output", idx)
    before = idx.read_bytes()
    more = generate_queries(dbpedia_slice, 2500, seed=9, prefix="more")
    more_file = write_jsonl(tmp_path / "more.jsonl", more)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    killed_mid_write = False
    for delay in (0.5, 1.5, None):
        proc = subprocess.Popen([sys.executable, "-m", "rtf.cli", "index", "add", str(idx),
                                 "--queries", str(more_file)], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        if delay is not None:
            time.sleep(delay)
        else:  # wait for the temporary file: the write has begun
            while time.monotonic() < deadline and proc.poll() is None and \
                    not any(p.name.endswith(".tmp") for p in tmp_path.iterdir()):
                time.sleep(0.0005)
        alive = proc.poll() is None
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        loaded = Engine.load(idx)
        if idx.read_bytes() == before:
            assert len(loaded) == 10
        else:  # the process finished its rename before the kill
            assert len(loaded) == 10 + len(more)
            idx.write_bytes(before)
        killed_mid_write |= alive and delay is None
        for p in tmp_path.iterdir():  # a killed writer leaves its temporary file behind
            if p.name.endswith(".tmp"):
                p.unlink()
    assert killed_mid_write, "the last kill should land while the index was being written"


def test_match_from_an_index_reports_its_stats(records, sample, tmp_path, capsys):
    idx = tmp_path / "q.idx"
    run(capsys, "index", "build", "--queries", write_jsonl(tmp_path / "a.jsonl", records), "--output", idx)
    code, out, err = run(capsys, "match", "--index", idx, "--publications", sample, "--stats")
    stats = json.loads(err.strip().splitlines()[-1])
    assert code == 0 and stats["queries"] == len(records) and stats["skipped_queries"] == 0
    assert stats["matches"] == len(out.splitlines()) and stats["run_s"] >= stats["filter_s"]
