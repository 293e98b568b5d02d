"""``rtf match`` around matching: lines made and written in blocks by a thread
(`rtf.io.line_blocks`) and publications read ahead in a forked process
(`rtf.io.read_ahead`). Each must give, byte for byte, what the publication-at-
a-time path gives: the same lines in the same order (blocks cut anywhere, made
pieces between them), the same publications, stats and input errors (raised
after the publications before them), and the same run when no process can be
forked or the reading process is lost.
"""

from __future__ import annotations

import io
from functools import partial

import pytest

from rtf import Engine, Publication
from rtf.cli import main
from rtf.engine import Match
from rtf.errors import PublicationError
from rtf.io import line_blocks, read_ahead
from rtf.io.line_blocks import LineBlockWriter, ids_block
from rtf.io.output import match_ids_bytes
from rtf.io.reader import ReadStats, read_publications
from tests.test_output_bytes import files  # noqa: F401 (a fixture)

STAR = 'SELECT ?s WHERE {{ ?s <http://ex/p> "{}" }}'


def _star_engine(long: bool = True) -> tuple[Engine, list]:
    """An engine whose id columns are made, and the matches of three publications (one
    with none), of ids JSON escapes, non-ASCII ones and a `long` one (past the fixed-width
    rows of `rtf.matching.id_column`)."""
    engine = Engine("rtfs")
    ids = ['say "hi"', "é", "q1", "x" * (200 if long else 5), "back\\slash"]
    for n, qid in enumerate(ids):
        engine.register(STAR.format("a" if n % 2 else "b"), qid, subscriber=None if n % 3 else "ann")
    engine.register(STAR.format("a"), "q0")
    pubs = [Publication(f"http://ex/{s}", [(f"<http://ex/{s}>", "<http://ex/p>", f'"{o}"')])
            for s, o in (("x", "a"), ("é", "b"), ("z", "c"))]
    for _ in range(len(ids) + 2):  # (made once as many ids were read as are registered)
        engine.match(pubs[0]).id_columns()
    return engine, [(p.id, engine.match(p)) for p in pubs]


@pytest.mark.parametrize("long", [False, True])
def test_a_block_of_lines_is_the_lines_of_each_publication(long):
    engine, found = _star_engine(long)
    found = [(pub, m) for pub, m in found if m]
    assert found[0][1].id_columns() is not None  # (the one-gather path)
    assert b"".join(ids_block(found)) == b"".join(match_ids_bytes(pub, m) for pub, m in found)
    lists = [(pub, list(m)) for pub, m in found]  # (Match records, as a worker's pickle)
    assert b"".join(ids_block(lists)) == b"".join(ids_block(found))
    assert b"".join(ids_block(lists[:1] + found[1:])) == b"".join(ids_block(found))  # (columns and lists mixed)


@pytest.mark.parametrize("block, write", [(1, 1), (2, 10), (1 << 18, 1 << 22)])
def test_the_writer_keeps_the_order_of_pieces_and_made_bytes(monkeypatch, block, write):
    monkeypatch.setattr(line_blocks, "BLOCK_MATCHES", block)
    monkeypatch.setattr(line_blocks, "WRITE_BYTES", write)
    engine, found = _star_engine()
    found = [(pub, m) for pub, m in found if m]

    def render(pieces):
        return b"".join(ids_block(pieces))

    out = io.BytesIO()
    writer = LineBlockWriter(out)
    for piece in (found[0], b"made\n", found[1], b"a", b"b\n"):
        writer.write(piece)
    writer.close()
    assert out.getvalue() == render(found[:1]) + b"made\n" + render(found[1:]) + b"ab\n"


def test_a_failed_write_is_raised_by_the_next_write_and_nothing_follows_it(monkeypatch):
    monkeypatch.setattr(line_blocks, "BLOCK_MATCHES", 1)
    writes = []

    class Full:
        def write(self, data):
            writes.append(data)
            raise OSError(28, "No space left on device")

    writer = LineBlockWriter(Full())
    writer.write(("http://ex/a", [Match("q1", None, frozenset({()}))]))
    with pytest.raises(OSError, match="No space"):
        writer.write(("http://ex/b", [Match("q2", None, frozenset({()}))]))
    writer.write(("http://ex/c", [Match("q3", None, frozenset({()}))]))
    writer.close()  # (the error was told once; nothing more is written)
    assert writes == [b'{"publication": "http://ex/a", "queries": ["q1"]}\n']


def _bad_file(pubs, tmp_path):
    bad = tmp_path / "bad.nt"
    bad.write_text(pubs.read_text(encoding="utf-8") * 3 + "<http://ex/c> <http://ex/p> oops .\n"
                   + pubs.read_text(encoding="utf-8"), encoding="utf-8")
    return bad


def _read_ahead(path, monkeypatch, **options) -> tuple[list, ReadStats, Exception | None]:
    monkeypatch.setattr(read_ahead, "BATCH", 2)  # (batches cut in the middle)
    stats = ReadStats()
    got, error = [], None
    with read_ahead.ReadAhead(partial(read_publications, [path], stats=stats, **options), stats) as ahead:
        try:
            for pub in ahead.publications():
                got.append((pub.id, pub.triples))
        except PublicationError as e:
            error = e
    assert ahead.received == len(got) > 0  # (read by the process, not here)
    return got, stats, error


def _read_here(path, **options):
    stats = ReadStats()
    got, error = [], None
    try:
        for pub in read_publications([path], stats=stats, **options):
            got.append((pub.id, pub.triples))
    except PublicationError as e:
        error = e
    return got, stats, error


@pytest.mark.parametrize("skip_invalid", [False, True])
def test_publications_read_ahead_are_those_read_here(files, tmp_path, monkeypatch, skip_invalid):  # noqa: F811
    bad = _bad_file(files[1], tmp_path)
    got, stats, error = _read_ahead(bad, monkeypatch, skip_invalid=skip_invalid)
    want, want_stats, want_error = _read_here(bad, skip_invalid=skip_invalid)
    assert got == want and len(got) == (8 if skip_invalid else 5)
    assert (stats.triples, stats.skipped_lines, stats.files, stats.bytes_read) == (
        want_stats.triples, want_stats.skipped_lines, want_stats.files, want_stats.bytes_read)
    assert [str(e) for e in stats.errors] == [str(e) for e in want_stats.errors]
    assert str(error) == str(want_error) and (error is None) == skip_invalid
    if error is not None:
        assert (error.source, error.line) == (str(bad), 7)


def test_without_a_reading_process_the_files_are_read_here(files, tmp_path, monkeypatch):  # noqa: F811
    import subprocess

    bad = _bad_file(files[1], tmp_path)
    want = _read_here(bad, skip_invalid=True)[0]

    def cannot_start(*args, **kwargs):
        raise OSError("no process here")

    with monkeypatch.context() as patch:
        patch.setattr(subprocess, "Popen", cannot_start)
        stats = ReadStats()
        read = partial(read_publications, [bad], stats=stats, skip_invalid=True)
        assert [(p.id, p.triples) for p in read_ahead.read_ahead(read, stats)] == want

    # the reading process killed after a few publications: the rest read here, none twice
    monkeypatch.setattr(read_ahead, "BATCH", 2)
    stats = ReadStats()
    got = []
    with read_ahead.ReadAhead(partial(read_publications, [bad], stats=stats, skip_invalid=True), stats) as ahead:
        assert ahead._process is not None  # (a reader that can be pickled: it is started)
        for pub in ahead.publications():
            got.append((pub.id, pub.triples))
            if len(got) == 1:
                ahead._process.kill()
    assert got == want and stats.skipped_lines == 1


def _run(args: list, monkeypatch) -> tuple[int, bytes]:
    stdout = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    with monkeypatch.context() as patch:
        patch.setattr("sys.stdout", stdout)
        code = main([*args, "--output", "-"])
        stdout.flush()
    return code, stdout.buffer.getvalue()


def _rows(data: bytes, output_format: str):
    if output_format != "arrow":
        return data
    import pyarrow as pa

    return pa.ipc.open_stream(data).read_all().to_pylist()


@pytest.mark.parametrize("output_format", ["ids", "jsonl", "arrow"])
def test_rtf_match_writes_the_same_with_blocks_and_reading_ahead(files, tmp_path, monkeypatch,  # noqa: F811
                                                                  output_format):
    """Blocks of one match and publications read in another process, against a live feed's
    path (each publication written at once, read here); with a bad line, the lines of the
    publications before it, then exit 1."""
    queries, pubs = files
    bad = _bad_file(pubs, tmp_path)
    args = ["match", "--queries", str(queries), "--output-format", output_format, "--publications"]
    with open(bad, "rb") as stdin:
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(stdin))
        live = _run([*args, "-", "--skip-invalid"], monkeypatch)
    here = _run([*args, str(bad)], monkeypatch)
    monkeypatch.setattr(line_blocks, "BLOCK_MATCHES", 1)
    monkeypatch.setattr(read_ahead, "MIN_BYTES", 0)
    monkeypatch.setattr(read_ahead, "BATCH", 1)
    received = []
    close = read_ahead.ReadAhead.close
    monkeypatch.setattr(read_ahead.ReadAhead, "close", lambda self: (received.append(self.received), close(self)))
    ahead = _run([*args, str(bad), "--skip-invalid"], monkeypatch)
    assert max(received, default=0) == (0 if output_format == "jsonl" else 8)  # (read by the process)
    assert ahead[0] == live[0] == 0 and _rows(ahead[1], output_format) == _rows(live[1], output_format)
    assert len(_rows(live[1], output_format)) > 4
    failed = _run([*args, str(bad)], monkeypatch)
    assert failed[0] == here[0] == 1 and failed[1] == here[1] and len(_rows(here[1], output_format)) > 2
