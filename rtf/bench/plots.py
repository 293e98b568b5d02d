"""The bench's figures (the RTF paper's Figs. 5-7) with matplotlib.
"""


from __future__ import annotations

import os
from pathlib import Path

_STYLE = {"rtfs": ("tab:blue", "o"), "rtfm": ("tab:green", "s"),
          "ibroker": ("tab:red", "^"), "naive": ("tab:gray", "x")}


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

    def draw(ax, x, y, color=None, marker="o", label=None, linestyle="-", **kw):
        """A series against DB: a line, or a bar when a single DB size was measured."""
        if not single_db:
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
    for alg in algs:
        x, y = _series(runs, main_ft, alg, "filter_ms_mean")
        allv += y
        c, m = _STYLE.get(alg, (None, "o"))
        draw(ax1, x, y, color=c, marker=m, label=alg)
    ax1.set_title(f"(a) filter time per publication, FT_pr={main_ft}%", fontsize=10)
    style(ax1, "ms / publication (mean)", log=spread(allv))
    for alg in algs:
        r = next((r for r in runs if r["ft_pr"] == main_ft and r["algorithm"] == alg
                  and r["db"] == db_max), None)
        if r is None or not r.get("_times"):
            continue
        times = r["_times"]
        every = max(1, len(times) // 50)
        xs, ys, elapsed = [], [], 0.0
        for i, t in enumerate(times, 1):
            elapsed += t
            if i % every == 0 or i == len(times):
                xs.append(i)
                ys.append(i / elapsed if elapsed else float("nan"))
        c, m = _STYLE.get(alg, (None, "o"))
        ax2.plot(xs, ys, color=c, marker=m, markevery=max(1, len(xs) // 10), markersize=4,
                 label=f"{alg}: {r['pubs_per_s']:,.1f} pubs/s, {r['kb_per_s']:,.1f} KB/s")
    ax2.set_title(f"(b) throughput along the stream, DB={db_max:,}", fontsize=10)
    ax2.set_xlabel(f"publications filtered (of {max(r['publications'] for r in runs):,})")
    ax2.set_ylabel("publications / s (cumulative)")
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
    for alg in algs:
        c, m = _STYLE.get(alg, (None, "o"))
        x, y = _series(runs, main_ft, alg, "index_mb")
        if any(v is not None for v in y):
            draw(ax1, x, y, marker=m, color=c, label=alg)
            _, q = _series(runs, main_ft, alg, "queries_mb")
            if all(v is not None for v in y + q):
                draw(ax1, x, [a - b for a, b in zip(y, q)], marker=m, color=c, linestyle="--",
                     markerfacecolor="none", label=f"{alg} without its copy of the queries")
        x, y = _series(runs, main_ft, alg, "insert_s")
        draw(ax2, x, [1000 * v for v in y], marker=m, color=c, label=alg)
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
