"""A quiet live feed's last publication is matched after an idle time (issue 40, item 7):
``rtf match --publications - --flush-after S`` and ``--follow FILE --flush-after S``, run as
real processes whose input stays open (rtf/io/idle.py, rtf/io/reader.py)."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from rtf import read_publications
from rtf.io.idle import IDLE, marked_when_idle

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
NEWS = (EXAMPLES / "news.nt").read_text(encoding="utf-8").splitlines(keepends=True)
A1 = [line for line in NEWS if "/news/a1>" in line.split()[0]]
A2 = [line for line in NEWS if "/news/a2>" in line.split()[0]]


def rtf_match(*options: str, stdin=subprocess.PIPE) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "rtf.cli", "match", "--queries", str(EXAMPLES / "news_queries.jsonl"),
         "--taxonomy", str(EXAMPLES / "news_ontology.nt"), *options],
        stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)))


def lines_of(stream) -> queue.Queue:
    """The lines of `stream` as they come, read in a thread (None at its end)."""
    lines: queue.Queue = queue.Queue()

    def read() -> None:
        for line in stream:
            lines.put(line)
        lines.put(None)
    threading.Thread(target=read, daemon=True).start()
    return lines


def next_line(lines: queue.Queue, seconds: float) -> str | None:
    try:
        return lines.get(timeout=seconds)
    except queue.Empty:
        return None


def publications_of(lines: list[str]) -> set[str]:
    return {json.loads(line)["publication"] for line in lines}


def stop(process: subprocess.Popen) -> str:
    process.kill()
    process.wait(timeout=30)
    return process.stderr.read()


@pytest.mark.slow
def test_the_last_publication_of_an_open_pipe_is_matched_after_the_idle_time():
    process = rtf_match("--publications", "-", "--flush-after", "0.3")
    try:
        out = lines_of(process.stdout)
        process.stdin.writelines(A1)
        process.stdin.flush()  # and the pipe stays open: no next subject, no end of input
        first = next_line(out, 60)
        assert first is not None, stop(process)
        got = [first]
        while (line := next_line(out, 2)) is not None:
            got.append(line)
        assert publications_of(got) == {"http://example.org/news/a1"}
        assert {json.loads(line)["query"] for line in got} == {"recent-articles", "rio-games"}
        process.stdin.writelines(A2)  # the feed goes on: the next one too, after its quiet spell
        process.stdin.flush()
        line = next_line(out, 60)
        assert line is not None and json.loads(line)["query"] == "any-report-about-football"
        process.stdin.close()
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            stop(process)


@pytest.mark.slow
def test_without_flush_after_the_last_publication_waits_for_the_next_subject():
    """(What --flush-after is for: the same feed, and no match while it is quiet.)"""
    process = rtf_match("--publications", "-")
    try:
        out = lines_of(process.stdout)
        process.stdin.writelines(A1)
        process.stdin.flush()
        assert next_line(out, 2) is None
        process.stdin.close()  # the end of the input completes it
        assert publications_of([line for line in iter(lambda: next_line(out, 60), None)]) == \
            {"http://example.org/news/a1"}
    finally:
        if process.poll() is None:
            stop(process)


def test_follow_with_flush_after_matches_a_file_that_stops_growing(tmp_path):
    feed = tmp_path / "feed.nt"
    feed.write_text("".join(A1), encoding="utf-8")
    process = rtf_match("--follow", str(feed), "--flush-after", "0.3", stdin=subprocess.DEVNULL)
    try:
        out = lines_of(process.stdout)
        line = next_line(out, 60)
        assert line is not None, stop(process)
        assert json.loads(line)["publication"] == "http://example.org/news/a1"
    finally:
        stop(process)


@pytest.mark.parametrize("options, words", [
    (["--publications", str(EXAMPLES / "news.nt"), "--flush-after", "1"], "live feed"),
    (["--publications", "-", "--flush-after", "1", "--workers", "2"], "--workers 1"),
    (["--publications", "-", "--flush-after", "0"], "--flush-after"),
])
def test_flush_after_is_refused_where_it_has_no_meaning(options, words):
    process = rtf_match(*options, stdin=subprocess.DEVNULL)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 2 and words in err and "Traceback" not in err


def test_marked_when_idle_marks_each_quiet_spell_once_and_keeps_the_order():
    def slow():
        yield 1
        time.sleep(0.5)
        yield 2
        yield 3
        time.sleep(0.5)
    assert [x if x is not IDLE else "idle" for x in marked_when_idle(slow(), 0.1)] == \
        [1, "idle", 2, 3, "idle"]


def test_marked_when_idle_raises_the_sources_error_in_its_place():
    def broken():
        yield 1
        raise ValueError("bad line")
    items = marked_when_idle(broken(), 5)
    assert next(items) == 1
    with pytest.raises(ValueError, match="bad line"):
        next(items)


def test_read_publications_with_flush_after_on_a_file_reads_what_it_read_without(tmp_path):
    path = tmp_path / "news.nt"
    path.write_text("".join(NEWS), encoding="utf-8")
    with_idle = [(p.id, sorted(p.triples)) for p in read_publications([str(path)], flush_after=0.2)]
    without = [(p.id, sorted(p.triples)) for p in read_publications([str(path)])]
    assert with_idle == without and len(without) == 3
