"""The experiments' figures: compare's bars, the ARK QPS sweep's curves, the MoE incast against
its fluid models (a study's figures: :mod:`fabricsim.report.study_plots`).

The experiments (layer 8) write data only; the command line hands them
:func:`compare_figures`, which draws into the experiment's output directory before it is
swapped in.  matplotlib is imported when a figure is drawn, never when
this module is.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np

from fabricsim._compat import pd
from fabricsim.analysis import moe_incast as mi
from fabricsim.experiments.study import LABELS, METRICS
from fabricsim.report.figures import legend_below, time_unit, wrap_title
from fabricsim.report.guard import guarded
from fabricsim.report.labels import method_label, value_label

__all__ = [
    "compare_figures",
    "compare_png",
    "plot_incast",
    "plot_sweep",
]


# -- fabricsim compare -------------------------------------------------------------------------
def compare_png(table: pd.DataFrame, title: str) -> bytes:
    """Bars of mean and P99 FCT per method (the comparison figure), PNG bytes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(max(5.0, 0.9 * len(table) + 2.5), 4.2), layout="constrained")
    ax = fig.add_subplot()
    x = np.arange(len(table))
    factor, unit = time_unit(table[["fct_mean_us", "fct_p99_us"]].to_numpy(float) * 1e-6)
    scale = 1e-6 / factor  # the table's µs in the unit chosen for the values
    ax.bar(x - 0.2, table["fct_mean_us"] * scale, 0.4, label="mean FCT")
    ax.bar(x + 0.2, table["fct_p99_us"] * scale, 0.4, label="P99 FCT")
    ax.set_xticks(x, labels=[method_label(m) for m in table["method"]], rotation=30, ha="right")
    ax.set_ylabel(f"FCT ({unit})")
    fig.suptitle(wrap_title(title, fig.get_figwidth()), fontsize="small")
    ax.grid(axis="y", alpha=0.3)
    legend_below(fig, ax)
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, metadata={"Software": None})
    return buf.getvalue()


def compare_figures(directory: Path, table: pd.DataFrame, title: str) -> None:
    """``compare.png`` (:func:`compare_png`) in a comparison's output directory (left out with
    one warning line if it cannot be drawn: the comparison's runs are kept)."""
    png = guarded("figure compare.png", lambda: compare_png(table, title))
    if png is not None:
        (Path(directory) / "compare.png").write_bytes(png)


# -- the ARK study -----------------------------------------------------------------------------
def _save(plt: Any, fig: Any, path: Path, *, tight: bool = True) -> Path:
    """Lay out ``fig`` (unless ``tight`` is False), write it to ``path`` as PNG, close it."""
    if tight:
        fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_sweep(sweep: pd.DataFrame, path: Path) -> Path:
    """Mean and P95 FCT and TTFT against QPS per policy (Fig. 2 and Fig. 4)."""
    plt = _pyplot()
    mean = sweep.groupby(["qps", "policy"], sort=False)[list(METRICS)].mean().reset_index()
    fig, axes = plt.subplots(1, 4, figsize=(16, 4.0), layout="constrained")
    for ax, metric in zip(axes, METRICS, strict=True):
        factor, unit = time_unit(mean[metric])
        for policy, rows in mean.groupby("policy", sort=False):
            rows = rows.sort_values("qps")
            label = value_label("lb.policy", policy)
            ax.plot(rows["qps"], rows[metric] / factor, marker="o", ms=3, label=label)
        ax.set_xlabel("QPS")
        ax.set_ylabel(LABELS[metric].replace("(s)", f"({unit})"))
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    legend_below(fig, axes)
    return _save(plt, fig, path, tight=False)


# -- the MoE exponential incast ----------------------------------------------------------------
def _incast_panels(tl: pd.DataFrame, n: int, total_bytes: float, u: np.ndarray) -> tuple:
    """(title, simulated, paper, exact, log scale) of each panel of :func:`plot_incast`."""
    return (
        (
            "active destinations per sender",
            tl["mean_active_destinations"],
            mi.paper_active_destinations(u, n, total_bytes),
            mi.exact_active_destinations(u, n, total_bytes),
            True,
        ),
        (
            "hot receiver arrival rate / line rate",
            tl["hot_arrival_norm"],
            mi.paper_hot_arrival_rate(u, n, total_bytes),
            mi.exact_hot_arrival_rate(u, n, total_bytes),
            True,
        ),
        (
            "total backlog, bytes",
            tl["backlog_bytes"],
            None,
            mi.exact_backlog(u, n, total_bytes),
            False,
        ),
    )


def plot_incast(
    timeline: pd.DataFrame, n: int, total_bytes: float, rate_bps: float, path: str | Path
) -> Path:
    """PNG: active destinations, hot arrival rate and total backlog over time — simulation
    (an open-loop ``timeline_backlog``) against the paper's forms and the exact fluid solution
    (:mod:`fabricsim.analysis.moe_incast`)."""
    plt = _pyplot()
    t_end = total_bytes * 8 / rate_bps
    tl = timeline[timeline["time_s"] <= t_end * 1.0000001]
    x = tl["time_s"].to_numpy() / t_end
    grid = np.linspace(0, 1, 400)
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    panels = _incast_panels(tl, n, total_bytes, grid * total_bytes)
    for ax, (title, sim, paper, exact, log) in zip(axes, panels, strict=True):
        if log:
            ax.step(x, sim, where="post", label="simulation (open loop)", lw=2.5, alpha=0.6)
            ax.set_ylim(0.5, 2.0 * n)
        else:
            ax.plot(x, sim, label="simulation (open loop)", lw=2.5, alpha=0.6)
        ax.plot(grid, exact, "k--", lw=1, label="exact fluid")
        if paper is not None:
            ax.plot(grid, paper, "r:", lw=1.5, label="paper")
        else:
            backlog = mi.paper_backlog_at_end(n, total_bytes)
            ax.plot([1.0], [backlog], "r*", ms=10, label="paper Q(T)")
        ax.set(title=title, xlabel="t / T", yscale="log" if log else "linear")
        ax.legend(fontsize=8)
    fig.suptitle(f"MoE exponential incast, pure Zipf, N = {n}, round robin")
    return _save(plt, fig, Path(path))
