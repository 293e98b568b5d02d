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


# ------------------------------------------------------------------ fuzzing

SUBJECTS = 12


def fuzz_nt() -> bytes:
    """Twelve publications of one to three lines; some about Rio, one with an escape."""
    lines = []
    for i in range(SUBJECTS):
        for j in range(1 + i % 3):
            text = f"Rio {i}.{j}" if (i + j) % 2 == 0 else f"Caf\\u00E9 {i}.{j}"
            lines.append(nt_line(i, text))
    return "".join(lines).encode()


def apply_corruption(data: bytes, op: tuple) -> bytes:
    kind, where, payload = op
    pos = where % (len(data) + 1)
    if kind == "flip" and data:
        pos = min(pos, len(data) - 1)
        return data[:pos] + bytes([data[pos] ^ (payload[0] or 1)]) + data[pos + 1:]
    if kind == "insert":
        return data[:pos] + payload + data[pos:]
    if kind == "delete":
        return data[:pos] + data[pos + len(payload) + 1:]
    if kind == "truncate":
        return data[:pos]
    if kind == "bom":
        return b"\xef\xbb\xbf" + data
    if kind == "bad-utf8":
        return data[:pos] + b"\xc3\x28\xff" + data[pos:]
    return data


corruptions = st.tuples(
    st.sampled_from(["flip", "insert", "delete", "truncate", "bom", "bad-utf8"]),
    st.integers(0, 10_000), st.binary(min_size=1, max_size=6))


def untouched_subjects(clean: bytes, corrupt: bytes) -> list[int]:
    """Subjects whose lines are all whole and unchanged in `corrupt`, and named by no other line."""
    segments = corrupt.split(b"\n")
    whole = segments[:-1]  # the last one has no newline: it is cut (or empty)
    keep = []
    for i in range(SUBJECTS):
        iri = f"<{EX}s{i}>".encode()
        own = [line for line in clean.split(b"\n") if line.startswith(iri + b" ")]
        naming = [s for s in segments if iri in s]
        if all(line in whole for line in own) and len(naming) == len(own):
            keep.append(i)
    return keep


def probe_answers(out: str) -> dict[str, set[str]]:
    """Per publication, the set of the probe's ?t bindings (publications may repeat)."""
    answers: dict[str, set[str]] = {}
    for line in out.splitlines():
        m = json.loads(line)
        answers.setdefault(m["publication"], set()).update(b["t"] for b in m["bindings"])
    return answers


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(corruptions, min_size=1, max_size=3),
       packing=st.sampled_from(["plain", "gzip", "gzip-truncated", "gzip-corrupt"]),
       cut=st.integers(0, 10_000))
def test_fuzz_corrupt_publications(capsys, tmp_path, ops, packing, cut):
    """Whatever happens to the file: no traceback, a documented status, and the
    publications whose lines were untouched give the same answers as before."""
    clean = fuzz_nt()
    corrupt = clean
    for op in ops:
        corrupt = apply_corruption(corrupt, op)
    q = tmp_path / "fq.jsonl"
    q.write_text(json.dumps({"id": "rio", "query": PROBE}) + "\n"
                 + json.dumps({"id": "all", "query": "ASK { ?s ?p ?o }"}) + "\n")
    name = tmp_path / ("f.nt" if packing == "plain" else "f.nt.gz")
    packed = corrupt if packing == "plain" else gzip.compress(corrupt)
    if packing == "gzip-truncated":
        packed = packed[: cut % (len(packed) + 1)]
    elif packing == "gzip-corrupt":
        at = 10 + cut % max(len(packed) - 10, 1)
        packed = packed[:at] + bytes([packed[at] ^ 0x5A]) + packed[at + 1:] if at < len(packed) else packed
    name.write_bytes(packed)
    (tmp_path / "clean.nt").write_bytes(clean)

    reference = probe_answers(run(capsys, "match", "--queries", q, "--publications", tmp_path / "clean.nt")[1])
    for algorithm in ALGORITHMS:
        code, out, err = run(capsys, "match", "--queries", q, "--publications", name,
                             "--skip-invalid", "--algorithm", algorithm, "--stats")
        assert code == 0, err
        assert "skipped_lines" in err.splitlines()[-1]
        if packing == "plain":
            answers = probe_answers(out)
            for i in untouched_subjects(clean, corrupt):
                subject = f"{EX}s{i}"
                assert answers.get(subject) == reference.get(subject), (algorithm, subject)
    code, _, err = run(capsys, "match", "--queries", q, "--publications", name)
    assert code in (0, 1) and (code == 0 or err.startswith("rtf: error: "))


QUERY_TEXTS = ["ASK { ?s ?p ?o }", PROBE, "SELECT ?x WHERE { ?x", "ASK { ?s <p> \udc80 }", ""]

query_lines = st.one_of(
    st.builds(lambda i, text, sub: json.dumps({"id": i, "query": text, "subscriber": sub}).encode(),
              st.one_of(st.text(max_size=5), st.integers(), st.none()),
              st.sampled_from(QUERY_TEXTS),
              st.one_of(st.none(), st.text(max_size=5), st.integers())),
    st.binary(max_size=30),
    st.integers(1, 200_000).map(lambda depth: b"[" * depth),
    st.sampled_from([b"{", b"[]", b"null", b'{"query": 3}', b'{"id": "\\ud800", "query": "ASK {}"}',
                     b'{"query": "ASK { ?s ?p ?o }", "id": "\xff"}', b"\xef\xbb\xbf{}"]),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(query_lines, min_size=1, max_size=4))
def test_fuzz_queries_file(capsys, tmp_path, lines):
    """A broken queries file is one line on stderr and status 1, never a traceback."""
    pubs = tmp_path / "p.nt"
    pubs.write_text(clean_nt(6))
    q = tmp_path / "fuzz.jsonl"
    q.write_bytes(b"\n".join(lines) + b"\n")
    code, out, err = run(capsys, "match", "--queries", q, "--publications", pubs)
    assert code in (0, 1)
    if code == 1:
        assert err.startswith("rtf: error: ") and len(err.splitlines()) == 1 and out == ""
    rq = tmp_path / "fuzz.rq"
    rq.write_bytes(lines[0])
    code, _, err = run(capsys, "check", "-f", rq)
    assert code in (0, 1)


# ------------------------------------------------------- 4. Turtle recovery


@pytest.mark.parametrize("bad", [
    f'<{EX}b> <{EX}title> oops .',             # not an object
    f'<{EX}b> <{EX}title> "rio b .',           # unterminated string: pyoxigraph lost all after it
    f'<{EX}b> <{EX}title> "rio b" . .',        # a stray dot: pyoxigraph lost the next statement
    f'<{EX}b> <{EX}title> [ .',                # an open bracket: same
    f'<{EX}b> <{EX}title> "rio b"@1 .',        # a bad language tag
    f'<{EX}b c> <{EX}title> "rio b" .',        # a space in an IRI
    b'<http://ex.org/b> <http://ex.org/title> "\xff" .',  # not UTF-8
])
def test_a_bad_turtle_statement_loses_only_itself(capsys, tmp_path, queries, bad):
    good = [f'<{EX}a> <{EX}title> "Rio a" .', f'ex:c <{EX}title> "Rio c" ;\n  <{EX}p> ex:d .',
            f'<{EX}d> <{EX}title> """Rio\nd""" .']
    bad = bad if isinstance(bad, bytes) else bad.encode()
    pubs = tmp_path / "p.ttl"
    pubs.write_bytes(f"@prefix ex: <{EX}> .\n# a comment\n{good[0]}\n".encode() + bad + b"\n"
                     + "\n".join(good[1:]).encode() + b"\n")
    code, out, err = run(capsys, "match", "--queries", queries, "--publications", pubs,
                         "--skip-invalid", "--stats")
    assert code == 0 and f"skipped 1 invalid line(s); first: {pubs}:4:" in err
    found = set(matched(out))
    assert {f"{EX}a", f"{EX}c", f"{EX}d"} <= found <= {f"{EX}a", f"{EX}b", f"{EX}c", f"{EX}d"}
    assert json.loads(err.splitlines()[-1])["skipped_lines"] == 1
