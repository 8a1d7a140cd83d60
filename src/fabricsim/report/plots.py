"""The experiments' figures: compare's bars, the ARK study's CDFs, spine heatmap and QPS curves,
the MoE incast against its fluid models.

The experiments (layer 8) write data only; the command line hands them
:func:`compare_figures` and :func:`study_figures`, which draw into the experiment's output
directory before it is swapped in.  matplotlib is imported when a figure is drawn, never when
this module is.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fabricsim.analysis import moe_incast as mi
from fabricsim.analysis.links import spine_grid
from fabricsim.errors import ConfigError
from fabricsim.experiments.study import LABELS, METRICS, Study
from fabricsim.metrics.results import Result

__all__ = [
    "compare_figures",
    "compare_png",
    "plot_fct_ttft",
    "plot_incast",
    "plot_spine_heatmap",
    "plot_sweep",
    "study_figures",
]


# -- fabricsim compare -------------------------------------------------------------------------
def compare_png(table: pd.DataFrame, title: str) -> bytes:
    """Bars of mean and P99 FCT per method (the comparison figure), PNG bytes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(max(5.0, 0.9 * len(table) + 2.5), 3.8), layout="constrained")
    ax = fig.add_subplot()
    x = np.arange(len(table))
    ax.bar(x - 0.2, table["fct_mean_us"], 0.4, label="mean FCT")
    ax.bar(x + 0.2, table["fct_p99_us"], 0.4, label="P99 FCT")
    ax.set_xticks(x, labels=list(table["method"]), rotation=30, ha="right")
    ax.set_ylabel("FCT (us)")
    ax.set_title(title, fontsize="medium")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize="small")
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, metadata={"Software": None})
    return buf.getvalue()


def compare_figures(directory: Path, table: pd.DataFrame, title: str) -> None:
    """``compare.png`` (:func:`compare_png`) in a comparison's output directory."""
    (Path(directory) / "compare.png").write_bytes(compare_png(table, title))


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


def study_figures(directory: Path, study: Study) -> None:
    """``fct_ttft.png`` and (with spine timelines) ``spine_heatmap.png`` of the first seed."""
    plot_fct_ttft(study.runs, Path(directory) / "fct_ttft.png")
    if study.scenario.records.timelines:
        first = study.seeds[0]
        ecmp, ark = study.runs[("ecmp", first)], study.runs[("ark", first)]
        plot_spine_heatmap(ecmp, ark, Path(directory) / "spine_heatmap.png")


def plot_fct_ttft(runs: dict[tuple[str, int], Result], path: Path) -> Path:
    """CDFs of FCT and TTFT per policy (all seeds pooled), saved as a PNG."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for policy in dict.fromkeys(p for p, _ in runs):
        frames = [r.flows for (p, _), r in runs.items() if p == policy]
        fct = np.sort(np.concatenate([f["fct_s"].to_numpy() for f in frames]))
        ttft = np.sort(
            np.concatenate(
                [(f["prefill_s"] + f["fct_s"] + f["decode_s"]).to_numpy() for f in frames]
            )
        )
        for ax, values in zip(axes, (fct, ttft), strict=True):
            values = values[~np.isnan(values)]
            ax.plot(values, np.arange(1, len(values) + 1) / max(len(values), 1), label=policy)
    for ax, what in zip(axes, ("KV-flow FCT (s)", "TTFT (s)"), strict=True):
        ax.set_xscale("log")
        ax.set_xlabel(what)
        ax.set_ylabel("CDF")
        ax.grid(alpha=0.3)
        ax.legend()
    return _save(plt, fig, path)


def plot_spine_heatmap(ecmp: Result, ark: Result, path: Path, bin_s: float = 0.1) -> Path:
    """Per-spine active flows over time, ECMP (top) and ARK (bottom), as the paper's Fig. 3."""
    plt = _pyplot()
    tables = [r.tables.get("timeline_spine_flows") for r in (ecmp, ark)]
    if any(t is None or t.empty for t in tables):
        raise ConfigError("records.timelines: the spine heatmap needs records.timelines=true")
    end = max(float(t["time_s"].max()) for t in tables if t is not None)
    grids = [spine_grid(t, bin_s, end) for t in tables if t is not None]
    vmax = max(float(g.max()) for _, g in grids)
    fig, axes = plt.subplots(2, 1, figsize=(11, 4.5), sharex=True)
    for ax, (spines, grid), name in zip(axes, grids, ("ECMP", "ARK"), strict=True):
        im = ax.imshow(
            grid,
            aspect="auto",
            origin="lower",
            cmap="viridis",
            vmin=0,
            vmax=vmax,
            extent=(0, grid.shape[1] * bin_s, -0.5, len(spines) - 0.5),
            interpolation="nearest",
        )
        ax.set_yticks(range(len(spines)), spines)
        ax.set_title(f"{name}: active flows per spine (peak {int(grid.max())})")
    axes[-1].set_xlabel("time (s)")
    fig.colorbar(im, ax=axes, label="active flows")
    return _save(plt, fig, path, tight=False)  # a shared colorbar: no tight layout


def plot_sweep(sweep: pd.DataFrame, path: Path) -> Path:
    """Mean and P95 FCT and TTFT against QPS per policy (Fig. 2 and Fig. 4)."""
    plt = _pyplot()
    mean = sweep.groupby(["qps", "policy"])[list(METRICS)].mean().reset_index()
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.6))
    for ax, metric in zip(axes, METRICS, strict=True):
        for policy, rows in mean.groupby("policy"):
            ax.plot(rows["qps"], rows[metric], marker="o", ms=3, label=str(policy))
        ax.set_xlabel("QPS")
        ax.set_ylabel(LABELS[metric])
        ax.grid(alpha=0.3)
        ax.legend()
    return _save(plt, fig, path)


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
