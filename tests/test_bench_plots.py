"""The bench's figures (issue 26 item 6): equal engines stay visible, and one slow
publication does not make the throughput panel jump."""

from __future__ import annotations

import pytest

from rtf.bench.plots import dodge, rolling_rate, write_plots


def test_one_slow_publication_is_not_a_jump():
    times = [0.01] * 400
    times[5] = 2.0  # one publication 200 times slower, early in the stream
    xs, ys = rolling_rate(times)
    assert len(xs) == len(ys) <= 50 and xs[-1] == 400
    assert max(ys) / min(ys) < 1.01  # flat: the median ignores it
    # (what the cumulative curve showed: a drop to a third, carried to the end)
    cumulative = [i / sum(times[:i]) for i in xs]
    assert min(cumulative[1:]) < 0.35 * max(cumulative)


def test_a_lasting_slowdown_shows():
    xs, ys = rolling_rate([0.01] * 200 + [0.02] * 200)
    assert ys[0] == pytest.approx(100) and ys[-1] == pytest.approx(50)


def test_short_and_empty_streams():
    assert rolling_rate([]) == ([], [])
    xs, ys = rolling_rate([0.5, 0.25])
    assert xs == [1, 2] and all(y > 0 for y in ys)


def test_equal_series_are_drawn_apart():
    x = [2.0, 4.0, 6.0]
    moved = [dodge(x, k, 3, span=8.0) for k in range(3)]
    assert moved[0] != moved[1] != moved[2] and moved[1] == x
    assert all(abs(a - b) <= 0.015 * 8.0 + 1e-9 for m in moved for a, b in zip(m, x))
    assert dodge(x, 0, 1, 8.0) == x


def test_plots_of_engines_with_equal_figures(tmp_path):
    pytest.importorskip("matplotlib")
    runs = [dict(algorithm=alg, ft_pr=50, db=db, filter_ms_mean=1.0, index_mb=db / 100, queries_mb=db / 300,
                 insert_s=0.1, pubs_per_s=100.0, kb_per_s=10.0, publications=50, _times=[0.01] * 50)
            for alg in ("rtfs", "rtfm") for db in (1000, 2000)]
    written = write_plots({"runs": runs, "params": {"algorithms": ["rtfs", "rtfm"], "step": 1000}}, tmp_path)
    assert [p.name for p in written] == ["fig5_filtering.png", "fig6_memory_insertion.png"]
