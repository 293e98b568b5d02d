"""The command line never shows a traceback and never loses the user's data (issue 14).

Every test runs `rtf.cli.main` in-process on files in tmp_path and reads its
stderr through capsys. Exit statuses are the documented ones (`rtf --help`):
0 done, 1 bad input, 2 bad command line or an output that is an input,
70 internal error.
"""

from __future__ import annotations

import bz2
import gzip
import json
import os
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rtf.cli import main
from rtf.engine import ALGORITHMS

EX = "http://ex.org/"
PROBE = f'SELECT ?s ?t WHERE {{ ?s <{EX}title> ?t FILTER ftcontains(?t, "rio") }}'
DOCUMENTED_EXITS = {0, 1, 2, 70, 130}


def nt_line(i: int, text: str) -> str:
    return f'<{EX}s{i}> <{EX}title> "{text}" .\n'


def clean_nt(n: int = 300) -> str:
    """n one-line publications, every third about Rio."""
    return "".join(nt_line(i, f"Rio number {i}" if i % 3 == 0 else f"Paris {i}") for i in range(n))


@pytest.fixture
def queries(tmp_path):
    q = tmp_path / "q.jsonl"
    q.write_text(json.dumps({"id": "rio", "query": PROBE}) + "\n")
    return q


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    assert code in DOCUMENTED_EXITS
    return code, out, err


def matched(out: str) -> list[str]:
    return [json.loads(line)["publication"] for line in out.splitlines()]


# ------------------------------------------------------- 1. no tracebacks


def test_check_a_query_file_that_is_not_utf8(capsys, tmp_path):
    rq = tmp_path / "bad.rq"
    rq.write_bytes(b"ASK {\n  ?s ?p \xff }")
    code, _, err = run(capsys, "check", "-f", rq)
    assert code == 1 and f"{rq}:2: not UTF-8 text (byte 0xff at column 9)" in err


def test_match_a_queries_file_that_is_not_utf8(capsys, tmp_path, queries):
    pubs = tmp_path / "p.nt"
    pubs.write_text(clean_nt(3))
    queries.write_bytes(queries.read_bytes() + b'{"id": "x", "query": "\xc3("}\n')
    code, out, err = run(capsys, "match", "--queries", queries, "--publications", pubs)
    assert code == 1 and out == "" and f"{queries}:2: not UTF-8" in err


def test_match_a_queries_file_nested_100000_deep(capsys, tmp_path, queries):
    pubs = tmp_path / "p.nt"
    pubs.write_text(clean_nt(3))
    queries.write_text(queries.read_text() + "[" * 100_000 + "\n")
    code, _, err = run(capsys, "match", "--queries", queries, "--publications", pubs)
    assert code == 1 and f"{queries}:2: JSON nested too deeply" in err


def test_a_query_id_with_a_lone_surrogate_is_an_input_error(capsys, tmp_path):
    pubs = tmp_path / "p.nt"
    pubs.write_text(clean_nt(3))
    q = tmp_path / "q.jsonl"
    q.write_text('{"id": "\\udc80", "query": "ASK { ?s ?p ?o }"}\n')
    code, out, err = run(capsys, "match", "--queries", q, "--publications", pubs)
    assert code == 1 and out == "" and f'{q}:1: "id" is not valid Unicode' in err


def corrupt_gzip_body(data: bytes) -> bytes:
    """A gzip whose header is fine and whose deflate stream is not."""
    return data[:10] + b"\xff" * 16 + data[26:]


@pytest.mark.parametrize("kind", ["gz-body", "gz-header", "bz2-body"])
def test_a_corrupt_archive_names_the_file(capsys, tmp_path, queries, kind):
    data = clean_nt(50).encode()
    if kind == "gz-body":
        pubs, raw = tmp_path / "p.nt.gz", corrupt_gzip_body(gzip.compress(data))
    elif kind == "gz-header":
        pubs, raw = tmp_path / "p.nt.gz", data  # not gzip at all
    else:
        packed = bz2.compress(data)
        pubs, raw = tmp_path / "p.nt.bz2", packed[:40] + b"\x00" * 40 + packed[80:]
    pubs.write_bytes(raw)
    code, _, err = run(capsys, "match", "--queries", queries, "--publications", pubs)
    assert code == 1 and f"rtf: error: {pubs}:1: the file breaks off here" in err
    code, _, err = run(capsys, "match", "--queries", queries, "--publications", pubs, "--skip-invalid")
    assert code == 0 and f"rtf: warning: {pubs}:1: the file breaks off here" in err


def test_a_corrupt_taxonomy_archive_is_an_input_error(capsys, tmp_path, queries):
    pubs = tmp_path / "p.nt"
    pubs.write_text(clean_nt(3))
    onto = tmp_path / "onto.nt.gz"
    onto.write_bytes(corrupt_gzip_body(gzip.compress(clean_nt(50).encode())))
    code, _, err = run(capsys, "match", "--queries", queries, "--publications", pubs, "--taxonomy", onto)
    assert code == 1 and err.startswith("rtf: error:") and len(err.splitlines()) == 1


@pytest.mark.parametrize("exception, code, message", [
    (MemoryError(), 1, "rtf: error: out of memory"),
    (RecursionError(), 1, "rtf: error: the input is nested too deeply"),
    (zlib.error("bad"), 1, "rtf: error: cannot read a compressed file: bad"),
    (UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"), 1, "rtf: error: not valid UTF-8"),
    (KeyError("oops"), 70, "rtf: error: internal error: KeyError: 'oops'; please report it"),
])
def test_any_exception_in_a_command_is_one_line(capsys, monkeypatch, tmp_path, queries,
                                                 exception, code, message):
    pubs = tmp_path / "p.nt"
    pubs.write_text(clean_nt(3))

    def explode(self, publication):
        raise exception
    monkeypatch.setattr("rtf.engine.Engine.match", explode)
    monkeypatch.delenv("RTF_DEBUG", raising=False)
    got, _, err = run(capsys, "match", "--queries", queries, "--publications", pubs)
    assert got == code and err.startswith(message) and len(err.splitlines()) == 1


def test_rtf_debug_shows_the_traceback_of_an_internal_error(capsys, monkeypatch, tmp_path, queries):
    pubs = tmp_path / "p.nt"
    pubs.write_text(clean_nt(3))

    def explode(self, publication):
        raise KeyError("oops")
    monkeypatch.setattr("rtf.engine.Engine.match", explode)
    monkeypatch.setenv("RTF_DEBUG", "1")
    code = main(["match", "--queries", str(queries), "--publications", str(pubs)])
    err = capsys.readouterr().err
    assert code == 70 and "Traceback" in err and "KeyError" in err


def test_help_documents_exit_statuses_and_rtf_debug(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "exit status:" in out and "70" in out and "RTF_DEBUG=1" in out


# ------------------------------------------------------- 2. no data loss


@pytest.mark.parametrize("spelling", ["same", "relative", "symlink", "hardlink"])
def test_match_refuses_to_write_over_its_publications(capsys, monkeypatch, tmp_path, queries, spelling):
    victim = tmp_path / "victim.nt"
    victim.write_text(clean_nt(3))
    monkeypatch.chdir(tmp_path)
    output = {"same": str(victim), "relative": "./victim.nt"}.get(spelling)
    if spelling == "symlink":
        os.symlink(victim, tmp_path / "link.nt")
        output = "link.nt"
    elif spelling == "hardlink":
        os.link(victim, tmp_path / "hard.nt")
        output = "hard.nt"
    code, _, err = run(capsys, "match", "--queries", queries, "--publications", victim, "--output", output)
    assert code == 2 and "refusing to overwrite an input" in err
    assert victim.read_text() == clean_nt(3)


@pytest.mark.parametrize("option", ["--queries", "--taxonomy"])
def test_match_refuses_to_write_over_its_queries_or_taxonomy(capsys, tmp_path, queries, option):
    pubs = tmp_path / "p.nt"
    pubs.write_text(clean_nt(3))
    onto = tmp_path / "onto.nt"
    onto.write_text(f"<{EX}A> <http://www.w3.org/2000/01/rdf-schema#subClassOf> <{EX}B> .\n")
    before = {queries: queries.read_bytes(), onto: onto.read_bytes()}
    victim = queries if option == "--queries" else onto
    code, _, err = run(capsys, "match", "--queries", queries, "--publications", pubs,
                       "--taxonomy", onto, "--output", victim)
    assert code == 2 and f"is the {option} file" in err
    assert {queries: queries.read_bytes(), onto: onto.read_bytes()} == before


def test_gen_queries_refuses_to_write_over_its_publications(capsys, tmp_path):
    victim = tmp_path / "victim.nt"
    victim.write_text(clean_nt(3))
    code, _, err = run(capsys, "gen-queries", "--publications", victim, "-n", "2", "-o", victim)
    assert code == 2 and "refusing to overwrite an input" in err and victim.read_text() == clean_nt(3)


def test_a_failed_match_leaves_the_output_as_it_was(capsys, tmp_path, queries):
    pubs = tmp_path / "p.nt"
    pubs.write_text(clean_nt(30) + "<oops\n")
    output = tmp_path / "out.jsonl"
    output.write_text("previous results\n")
    code, _, err = run(capsys, "match", "--queries", queries, "--publications", pubs, "--output", output)
    assert code == 1 and f"{pubs}:31:" in err
    assert output.read_text() == "previous results\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl", "p.nt", "q.jsonl"]


def test_a_successful_match_replaces_the_output_through_a_link(capsys, tmp_path, queries):
    pubs = tmp_path / "p.nt"
    pubs.write_text(clean_nt(6))
    real = tmp_path / "real.jsonl"
    real.write_text("old\n")
    os.chmod(real, 0o640)
    os.symlink(real, tmp_path / "out.jsonl")
    code, _, _ = run(capsys, "match", "--queries", queries, "--publications", pubs,
                     "--output", tmp_path / "out.jsonl")
    assert code == 0 and (tmp_path / "out.jsonl").is_symlink()
    assert matched(real.read_text()) == [f"{EX}s0", f"{EX}s3"]
    assert os.stat(real).st_mode & 0o777 == 0o640


# ------------------------------------------------------- 3. truncated archives


@pytest.mark.parametrize("compress, suffix", [
    (gzip.compress, "gz"),
    (lambda data: bz2.compress(data, 1), "bz2"),  # blocks of 100 kB: the first one is whole
])
def test_a_truncated_archive(capsys, tmp_path, queries, compress, suffix):
    text = clean_nt(3000)
    packed = compress(text.encode())
    pubs = tmp_path / f"p.nt.{suffix}"
    pubs.write_bytes(packed[: len(packed) * 2 // 3])
    with gzip.open(pubs) if suffix == "gz" else bz2.open(pubs) as f:
        readable = b""
        with pytest.raises(EOFError):
            while chunk := f.read1(1024):
                readable += chunk
    whole = readable.count(b"\n")
    assert 1000 < whole < 3000
    expected = [f"{EX}s{i}" for i in range(whole) if i % 3 == 0]

    code, out, err = run(capsys, "match", "--queries", queries, "--publications", pubs,
                         "--skip-invalid", "--stats")
    assert code == 0 and matched(out) == expected
    assert f"rtf: warning: {pubs}:{whole + 1}: the file breaks off here, after {len(readable)} bytes" in err
    stats = json.loads(err.splitlines()[-1])
    assert stats["breaks"] == [{"source": str(pubs), "line": whole + 1, "bytes_read": len(readable),
                                "reason": stats["breaks"][0]["reason"]}]
    assert stats["publications"] == whole

    # Without --skip-invalid: the publications read whole before the break are
    # matched (the last one may be cut short: it is not), then exit 1.
    code, out, err = run(capsys, "match", "--queries", queries, "--publications", pubs)
    assert code == 1 and f"rtf: error: {pubs}:{whole + 1}: the file breaks off here" in err
    assert matched(out) == [p for p in expected if p != f"{EX}s{whole - 1}"]


# ------------------------------------------------------- 5. byte order mark


@pytest.mark.parametrize("name", ["p.nt", "p.nt.gz", "p.ttl", "p.nq"])
def test_a_byte_order_mark_is_ignored(capsys, tmp_path, queries, name):
    data = b"\xef\xbb\xbf" + clean_nt(4).encode()
    pubs = tmp_path / name
    pubs.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    code, out, err = run(capsys, "match", "--queries", queries, "--publications", pubs)
    assert (code, err) == (0, "") and matched(out) == [f"{EX}s0", f"{EX}s3"]
