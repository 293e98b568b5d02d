"""The bench's figures (the RTF paper's Figs. 5-7) with matplotlib.

Two choices keep the figures honest when engines are close or a stream is
uneven: series of equal values are drawn side by side (`dodge`) with hollow
markers of decreasing size, so that no engine's line hides under another's;
and throughput along the stream is a rolling median (`rolling_rate`), so
that one slow publication is a blip, not a jump that the cumulative curve
would carry to the end (the mean throughput, slow publications included, is
the dashed line and the legend's figure).
"""


from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

_STYLE = {"rtfs": ("tab:blue", "o"), "rtfm": ("tab:green", "s"),
          "ibroker": ("tab:red", "^"), "naive": ("tab:gray", "x")}


def rolling_rate(times: Sequence[float], points: int = 50) -> tuple[list[int], list[float]]:
    """Publications per second along a stream of per-publication `times`: at about
    `points` positions, 1 / the median time of the window of publications around it
    (a window of a 25th of the stream, at least 5). A single slow publication moves a
    median by one rank: it shows as a blip at most, never as a lasting jump."""
    import numpy as np

    n = len(times)
    if n == 0:
        return [], []
    half = max(2, n // 50)
    xs = sorted({min(n, max(1, round(i * n / points))) for i in range(1, points + 1)})
    values = np.asarray(times, dtype=float)
    ys = []
    for x in xs:
        median = float(np.median(values[max(0, x - 1 - half):x + half]))
        ys.append(1.0 / median if median > 0 else float("nan"))
    return xs, ys


def dodge(x: Sequence[float], k: int, n: int, span: float) -> list[float]:
    """`x` moved sideways for series `k` of `n` (by up to 1.5 % of `span` either way),
    so that series with the same values stay apart."""
    if n <= 1:
        return list(x)
    shift = (k - (n - 1) / 2) * 0.03 * span / (n - 1)
    return [v + shift for v in x]


def _series(runs, ft_pr, alg, key):
    rs = sorted((r for r in runs if r["ft_pr"] == ft_pr and r["algorithm"] == alg),
                key=lambda r: r["db"])
    return [r["db"] / 1000 for r in rs], [r.get(key) for r in rs]


def write_plots(doc: dict, directory: str | os.PathLike) -> list[Path]:
    """PNG charts in the manner of the paper's Figs. 5-7; returns the paths written."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    runs, params = doc["runs"], doc["params"]
    ft_prs = sorted({r["ft_pr"] for r in runs})
    main_ft = 50 if 50 in ft_prs else ft_prs[0]
    algs = [a for a in params["algorithms"] if any(r["algorithm"] == a for r in runs)]
    db_max = max(r["db"] for r in runs)
    written = []

    single_db = len({r["db"] for r in runs}) == 1
    slots: dict = {}  # axis -> how many series it has, for bars side by side

    db_span = (db_max - min(r["db"] for r in runs)) / 1000

    def draw(ax, x, y, color=None, marker="o", label=None, linestyle="-", k=None, **kw):
        """A series against DB: a line, or a bar when a single DB size was measured.

        `k`: the series' rank among `algs`, to dodge it and size its hollow marker so
        that an engine with the same values as another stays visible."""
        if not single_db:
            if k is not None:
                x = dodge(x, k, len(algs), db_span)
                kw.setdefault("markersize", 9 - 2 * min(k, 3))
                kw.setdefault("markerfacecolor", "none")
                kw.setdefault("linewidth", 2.2 - 0.4 * min(k, 3))
            ax.plot(x, y, marker=marker, color=color, label=label, linestyle=linestyle, **kw)
            return
        k = slots[ax] = slots.get(ax, -1) + 1
        if y and y[0] is not None:
            ax.bar([k], y[:1], width=0.7, color=color, label=label,
                   hatch=None if linestyle == "-" else "//",
                   fill=linestyle == "-" or kw.get("markerfacecolor") != "none",
                   edgecolor=color)

    def outside_legend(ax):
        # Beside the axes, never over the data.
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1), borderaxespad=0)

    def style(ax, ylabel, log=False):
        if single_db:
            ax.set_xticks([])
            ax.set_xlabel(f"query database DB = {db_max:,} queries")
        else:
            ax.set_xlabel("query database DB (thousands of queries)")
        ax.set_ylabel(ylabel)
        if log:
            ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            outside_legend(ax)
        else:
            ax.text(0.5, 0.5, "not measured", ha="center", va="center", transform=ax.transAxes)

    def spread(values):
        vals = [v for v in values if v]
        return vals and max(vals) / min(vals) > 20

    def save(fig, name):
        fig.tight_layout()
        fig.savefig(directory / name, dpi=90, bbox_inches="tight")  # keeps the outside legends
        plt.close(fig)
        written.append(directory / name)

    # Fig. 5: (a) filter time vs DB, (b) throughput along the publication stream at the largest DB
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
    allv = []
    for k, alg in enumerate(algs):
        x, y = _series(runs, main_ft, alg, "filter_ms_mean")
        allv += y
        c, m = _STYLE.get(alg, (None, "o"))
        draw(ax1, x, y, color=c, marker=m, label=alg, k=k)
    ax1.set_title(f"(a) filter time per publication, FT_pr={main_ft}%", fontsize=10)
    style(ax1, "ms / publication (mean)", log=spread(allv))
    for alg in algs:
        r = next((r for r in runs if r["ft_pr"] == main_ft and r["algorithm"] == alg
                  and r["db"] == db_max), None)
        if r is None or not r.get("_times"):
            continue
        xs, ys = rolling_rate(r["_times"])
        c, m = _STYLE.get(alg, (None, "o"))
        ax2.plot(xs, ys, color=c, marker=m, markevery=max(1, len(xs) // 10), markersize=4,
                 label=f"{alg}: {r['pubs_per_s']:,.1f} pubs/s, {r['kb_per_s']:,.1f} KB/s")
        ax2.axhline(r["pubs_per_s"], color=c, linestyle="--", linewidth=0.8)
    ax2.set_title(f"(b) throughput along the stream, DB={db_max:,}", fontsize=10)
    ax2.set_xlabel(f"publications filtered (of {max(r['publications'] for r in runs):,})")
    ax2.set_ylabel("publications / s (rolling median)")
    if spread([r["pubs_per_s"] for r in runs if r["db"] == db_max and r["ft_pr"] == main_ft]):
        ax2.set_yscale("log")
    else:
        ax2.set_ylim(bottom=0)
    ax2.grid(True, which="both", alpha=0.3)
    if ax2.get_legend_handles_labels()[0]:
        outside_legend(ax2)
    save(fig, "fig5_filtering.png")

    # Fig. 6: (a) index memory vs DB, (b) insertion time per step
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
    for k, alg in enumerate(algs):
        c, m = _STYLE.get(alg, (None, "o"))
        x, y = _series(runs, main_ft, alg, "index_mb")
        if any(v is not None for v in y):
            draw(ax1, x, y, marker=m, color=c, label=alg, k=k)
            _, q = _series(runs, main_ft, alg, "queries_mb")
            if all(v is not None for v in y + q):
                draw(ax1, x, [a - b for a, b in zip(y, q)], marker=m, color=c, linestyle="--",
                     markerfacecolor="none", label=f"{alg} without its copy of the queries", k=k)
        x, y = _series(runs, main_ft, alg, "insert_s")
        draw(ax2, x, [1000 * v for v in y], marker=m, color=c, label=alg, k=k)
    ax1.set_title(f"(a) index memory (tracemalloc), FT_pr={main_ft}%", fontsize=10)
    style(ax1, "MB")
    ax1.set_ylim(bottom=0)
    ax2.set_title(f"(b) time to insert each step of {params['step']:,} queries", fontsize=10)
    style(ax2, "ms per step")
    ax2.set_ylim(bottom=0)
    save(fig, "fig6_memory_insertion.png")

    # Fig. 7: every measured engine when FT_pr varies (only with several FT_pr)
    if len(ft_prs) > 1:
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
        dashes = ["-", "--", ":", "-."]
        for alg in algs:
            c, m = _STYLE.get(alg, (None, "o"))
            for k, ft in enumerate(ft_prs):
                ls = dashes[k % len(dashes)]
                x, y = _series(runs, ft, alg, "filter_ms_mean")
                draw(ax1, x, y, marker=m, color=c, linestyle=ls, label=f"{alg} FT_pr={ft}%",
                     alpha=1.0 - 0.5 * k / len(ft_prs))
                x, y = _series(runs, ft, alg, "insert_s")
                draw(ax2, x, [1000 * v for v in y], marker=m, color=c, linestyle=ls,
                     label=f"{alg} FT_pr={ft}%", alpha=1.0 - 0.5 * k / len(ft_prs))
        ax1.set_title("(a) filter time when FT_pr varies", fontsize=10)
        style(ax1, "ms / publication (mean)")
        ax2.set_title("(b) insertion time per step when FT_pr varies", fontsize=10)
        style(ax2, "ms per step")
        save(fig, "fig7_ft_pr.png")
    return written
