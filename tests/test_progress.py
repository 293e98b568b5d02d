"""Progress bars know their total where it can be known (issue 26 item 6): the bytes of
the input files, uncompressed, so that `rtf match` on a terminal shows how far and how long."""

from __future__ import annotations

import bz2
import gzip
import io
import sys

import pytest

import rtf.io.progress as progress_module
from rtf.io.progress import input_size, read_progress
from rtf.io.reader import ReadStats, read_publications

LINES = "".join(f'<http://ex.org/s{n}> <http://ex.org/p> "text number {n}" .\n' for n in range(2000))


@pytest.fixture
def files(tmp_path):
    plain, gz, bz = tmp_path / "a.nt", tmp_path / "b.nt.gz", tmp_path / "c.nt.bz2"
    plain.write_text(LINES)
    gz.write_bytes(gzip.compress(LINES.encode()))
    bz.write_bytes(bz2.compress(LINES.encode()))
    return plain, gz, bz


def test_input_size(files, tmp_path):
    plain, gz, bz = files
    size = len(LINES.encode())
    assert input_size([plain]) == size and input_size([gz]) == size
    assert input_size([plain, gz]) == 2 * size
    assert input_size([bz]) is None and input_size([plain, bz]) is None    # bzip2 records no size
    assert input_size(["-"]) is None and input_size([io.BytesIO(b"")]) is None
    assert input_size([tmp_path / "missing.nt"]) is None
    two_members = tmp_path / "two.nt.gz"  # the trailer has the last member's size only
    two_members.write_bytes(gzip.compress(LINES.encode()) + gzip.compress(b"\n"))
    assert input_size([two_members]) is None


def bar_text(monkeypatch, pubs, stats, paths) -> tuple[int, list[str]]:
    monkeypatch.setattr(progress_module, "_on_terminal", lambda: True)
    captured = io.StringIO()
    monkeypatch.setattr(sys, "stderr", captured)
    n = sum(1 for _ in read_progress(pubs, stats, paths, "matching"))
    return n, [frame for frame in captured.getvalue().split("\r") if frame.strip()]


def test_a_bar_with_a_total_and_eta(monkeypatch, files):
    plain, gz, _ = files
    stats = ReadStats()
    n, frames = bar_text(monkeypatch, read_publications([plain, gz], stats=stats), stats, [plain, gz])
    assert n == 4000
    from tqdm import tqdm
    total = "/" + tqdm.format_sizeof(2 * len(LINES.encode()), divisor=1024)
    assert frames and all(total in frame and "%|" in frame for frame in frames), frames
    assert "<?" in frames[0]  # the ETA column (unknown before the first step)


def test_without_a_size_it_counts_publications(monkeypatch, files):
    _, _, bz = files
    stats = ReadStats()
    n, frames = bar_text(monkeypatch, read_publications([bz], stats=stats), stats, [bz])
    assert n == 2000 and "pub" in frames[0] and "%" not in frames[0]


def test_a_followed_file_is_counted_by_publication(monkeypatch, files):
    plain, _, _ = files
    stats = ReadStats()
    n, frames = bar_text(monkeypatch, read_publications([plain], stats=stats), stats, None)
    assert n == 2000 and "pub" in frames[0] and "%" not in frames[0]


def test_no_bar_off_a_terminal(files):
    plain, _, _ = files
    pubs = iter([1, 2, 3])
    assert read_progress(pubs, ReadStats(), [plain]) is pubs
