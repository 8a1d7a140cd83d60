"""Figures of a paired study (``fabricsim study``): per-point CDFs, metric vs grid with CI bands,
per-top-switch heatmaps side by side.

Every title names the scenario, engine and seeds, and the fabric and workload in their lines
(:mod:`fabricsim.experiments.describe`).  matplotlib is imported when a figure is drawn.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fabricsim.analysis import moe_incast
from fabricsim.analysis.links import spine_grid
from fabricsim.experiments.describe import describe_fabric, describe_run, describe_workload
from fabricsim.experiments.paired import PairedStudy, describe_study, point_label
from fabricsim.metrics.readable import METRIC_LABELS
from fabricsim.metrics.results import Result
from fabricsim.report import figures
from fabricsim.report.figures import FIGURE_FORMAT
from fabricsim.report.guard import guarded
from fabricsim.report.labels import axis_label, figure_labels, value_label
from fabricsim.units import seconds_unit

__all__ = ["ark_figures", "paired_figures", "study_title"]


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def study_title(study: PairedStudy, what: str, params: dict[str, Any] | None = None) -> str:
    """A figure title: what it shows, then the run line, the fabric and the workload (at the
    grid point ``params``, or, for a figure over the whole grid, with the values the study
    varies: ``at QPS {5, 25}``, not the base scenario's fixed ``QPS 25``)."""
    run = describe_run(study.scenario, study.engine, study.seeds)
    if params:
        sc = study.scenario.with_overrides(params)
        return f"{what}\n{run}\n{describe_fabric(sc)}\n{describe_workload(sc)}"
    header = describe_study(study)
    return f"{what}\n{run}\n{header['fabric']}\n{header['workload']}\n{header['compared']}"


def _save(plt: Any, fig: Any, path: Path, fmt: str) -> Path:
    """Write ``fig`` to ``<path>.<fmt>`` (the suffix appended: ``cdf_zipf_s0.25`` keeps its
    ``.25``) and close it."""
    import matplotlib

    out = path.with_name(f"{path.name}.{fmt}")
    if fmt == "svg":  # text as text and fixed ids and metadata, as figures._png
        rc: dict[Any, Any] = {"svg.fonttype": "none", "svg.hashsalt": "fabricsim"}
        with matplotlib.rc_context(rc):
            fig.savefig(out, bbox_inches="tight", metadata={"Date": None, "Creator": None})
    else:
        fig.savefig(out, dpi=110, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return out


def _ttft(flows: Any) -> np.ndarray:
    if not {"prefill_s", "decode_s"} <= set(flows.columns):
        return np.array([])
    return (flows["prefill_s"] + flows["fct_s"] + flows["decode_s"]).to_numpy(dtype=float)


def plot_point_cdfs(study: PairedStudy, params: dict[str, Any], path: Path, fmt: str) -> Path:
    """CDFs of FCT (and TTFT for KV caches) of each ``vs`` value at one grid point, seeds pooled."""
    plt = _pyplot()
    key, values = study.vs
    series: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for value in values:
        runs = study.results(params, value)
        fct = np.concatenate([r.flows["fct_s"].to_numpy(dtype=float) for r in runs])
        ttft = np.concatenate([_ttft(r.flows) for r in runs])
        series[value_label(key, value)] = (fct[np.isfinite(fct)], ttft[np.isfinite(ttft)])
    panels = 2 if all(len(t) for _, t in series.values()) else 1
    fig, axes = plt.subplots(
        1, panels, figsize=(5.5 * panels, 4.6), squeeze=False, layout="constrained"
    )
    for i, what in enumerate(("FCT", "TTFT")[:panels]):
        figures.cdf_axes(axes[0][i], {name: data[i] for name, data in series.items()}, what)
    figures.legend_below(fig, axes[0])
    what = "FCT and TTFT CDFs" if panels == 2 else "FCT CDF"
    fig.suptitle(_wrapped(study_title(study, _at(what, params), params), fig), fontsize=8)
    return _save(plt, fig, path, fmt)


def _at(what: str, params: dict[str, Any]) -> str:
    """A short headline: ``FCT CDF at QPS 25`` (``FCT CDF`` without a grid)."""
    where = ", ".join(value_label(k, v) for k, v in params.items())
    return f"{what} at {where}" if where else what


def _wrapped(title: str, fig: Any) -> str:
    return figures.wrap_title(title, fig.get_figwidth() * 1.6)  # fontsize 8, not "small"


def plot_vs_grid(
    study: PairedStudy, path: Path, fmt: str, metrics: Sequence[str] | None = None
) -> Path | None:
    """Each metric (default: all) against the first grid key, one line per ``vs`` value (and per
    combination of the other grid keys' values) with its 95 % CI band; None without a grid."""
    if not study.grid:
        return None
    gkey, *others = study.grid
    table = study.table
    combos = list(dict.fromkeys(tuple(r) for r in table[others].itertuples(index=False)))
    present = set(table["metric"])
    metrics = [m for m in (metrics or METRIC_LABELS) if m in present]
    if not metrics:
        return None
    plt = _pyplot()
    cols = min(len(metrics), 3)
    rows = -(-len(metrics) // cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(4.6 * cols, 1.2 + 3.6 * rows), squeeze=False, layout="constrained"
    )
    key, values = study.vs
    for ax, metric in zip(axes.flat, metrics, strict=False):
        part = table[table["metric"] == metric]
        factor, unit = seconds_unit(float(part["mean"].abs().max()))
        for combo in combos:
            rows_of = part
            for k, v in zip(others, combo, strict=True):
                rows_of = rows_of[rows_of[k] == v]
            rest = ", ".join(value_label(k, v) for k, v in zip(others, combo, strict=True))
            for value in values:
                line = rows_of[rows_of["value"] == str(value)]
                line = line.iloc[np.argsort(line[gkey].to_numpy(), kind="stable")]
                x = line[gkey].to_numpy()
                label = value_label(key, value) + (f", {rest}" if rest else "")
                drawn = ax.plot(x, line["mean"] / factor, marker="o", label=label)[0]
                if line["ci_low"].notna().all():
                    low, high = line["ci_low"] / factor, line["ci_high"] / factor
                    ax.fill_between(x, low, high, color=drawn.get_color(), alpha=0.2)
        grid_x = np.unique(part[gkey].to_numpy())
        if grid_x.dtype.kind in "iuf" and len(grid_x) <= 12:
            ax.set_xticks(grid_x)  # the grid's own values (4, 8), not 4.0, 4.5, ...
        ax.set_xlabel(axis_label(gkey))
        ax.set_ylabel(f"{METRIC_LABELS[metric]} ({unit})")
        ax.set_title(METRIC_LABELS[metric], fontsize=9)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(metrics) :]:
        ax.set_visible(False)
    figures.legend_below(fig, axes.flat)
    names = " and ".join(METRIC_LABELS[m] for m in metrics) if len(metrics) <= 2 else "metrics"
    what = f"{names} vs {axis_label(gkey)} (band: 95 % CI over seeds)"
    fig.suptitle(_wrapped(study_title(study, what), fig), fontsize=8)
    return _save(plt, fig, path, fmt)


def plot_heatmaps(study: PairedStudy, params: dict[str, Any], path: Path, fmt: str) -> Path | None:
    """Active flows per top switch over time, one panel per ``vs`` value (first seed)."""
    named: list[tuple[str, Result]] = []
    key, values = study.vs
    for value in values:
        runs = study.results(params, value)
        if not runs or runs[0].tables.get("timeline_spine_flows") is None:
            return None
        if runs[0].tables["timeline_spine_flows"].empty:
            return None
        named.append((value_label(key, value), runs[0]))
    plt = _pyplot()
    tables = [r.tables["timeline_spine_flows"] for _, r in named]
    end = max(float(t["time_s"].max()) for t in tables)
    bin_s = max(end / 400, 1e-9)
    grids = [spine_grid(t, bin_s, end) for t in tables]
    factor, unit = figures.time_unit([end])
    vmax = max(float(g.max()) for _, g in grids) or 1.0
    fig, axes = plt.subplots(
        len(named), 1, figsize=(11, 1.8 + 1.6 * len(named)), sharex=True, squeeze=False,
        layout="constrained",
    )  # fmt: skip
    im = None
    for ax, (spines, grid), (name, _) in zip(axes[:, 0], grids, named, strict=True):
        im = ax.imshow(
            grid, aspect="auto", origin="lower", cmap="viridis", vmin=0, vmax=vmax,
            extent=(0, grid.shape[1] * bin_s / factor, -0.5, len(spines) - 0.5),
            interpolation="nearest",
        )  # fmt: skip
        ax.set_yticks(range(len(spines)), spines)
        ax.set_title(f"{name}: active flows per top switch (peak {int(grid.max())})", fontsize=9)
    axes[-1, 0].set_xlabel(f"time ({unit})")
    from matplotlib.ticker import MaxNLocator

    fig.colorbar(im, ax=axes[:, 0].tolist(), label="active flows", ticks=MaxNLocator(integer=True))
    what = _at("top-switch load", params) + f" (seed {study.seeds[0]})"
    fig.suptitle(_wrapped(study_title(study, what, params), fig), fontsize=8)
    return _save(plt, fig, path, fmt)


def plot_moe(
    study: PairedStudy, params: dict[str, Any], directory: Path, fmt: str, label: str = ""
) -> list[Path]:
    """MoE runs (with ``timeline_backlog``): the hot receiver's queue and the backlog, and receiver
    utilization with active destinations per sender, one line per ``vs`` value (first seed)."""
    key, values = study.vs
    series: dict[str, Any] = {}
    active: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for value in values:
        runs = study.results(params, value)
        tl = runs[0].tables.get("timeline_backlog") if runs else None
        if tl is None or tl.empty or "hot_queue_bytes" not in tl.columns:
            return []
        series[value_label(key, value)] = tl
    end = max(float(tl["time_s"].max()) for tl in series.values())
    times = np.linspace(0.0, end, 400)
    for value in values:
        flows = study.results(params, value)[0].flows
        active[value_label(key, value)] = (times, moe_incast.active_destinations(flows, times))
    label = label or point_label(params) or "all"
    title = study_title(study, _at("MoE incast", params) + f" (seed {study.seeds[0]})", params)
    draws = {
        f"moe_queue_{label}": lambda: figures.moe_queue_png(series, None, title),
        f"moe_utilization_{label}": (
            lambda: figures.moe_utilization_png(series, active, None, title)
        ),
    }
    out = []
    for stem, draw in draws.items():
        token = FIGURE_FORMAT.set(fmt)
        try:
            data = guarded(f"figure {stem}", draw)
        finally:
            FIGURE_FORMAT.reset(token)
        if data is not None:
            path = directory / f"{stem}.{fmt}"
            path.write_bytes(data)
            out.append(path)
    return out


def _add(out: list[Path], stem: str, draw: Callable[[], Path | list[Path] | None]) -> None:
    """Append what ``draw`` wrote to ``out``; a figure that fails is skipped with one warning
    line naming it (the study's runs are already written)."""
    got = guarded(f"figure {stem}", draw)
    if isinstance(got, list):
        out += got
    elif got is not None:
        out.append(got)


def paired_figures(directory: Path, study: PairedStudy, fmt: str = "png") -> list[Path]:
    """Every figure of a study into ``directory``: ``cdf_<point>``, ``vs_grid`` (one grid key),
    ``heatmap_<point>`` (with spine timelines), ``moe_queue_<point>`` and
    ``moe_utilization_<point>`` (MoE runs with timelines); returns the files written.

    A figure that cannot be drawn is left out with one warning line on stderr naming it.
    """
    out: list[Path] = []
    d = Path(directory)
    points = study.points()
    for params, label in zip(points, figure_labels(points), strict=True):
        cdf, heat = d / f"cdf_{label}", d / f"heatmap_{label}"
        _add(out, cdf.name, functools.partial(plot_point_cdfs, study, params, cdf, fmt))
        _add(out, heat.name, functools.partial(plot_heatmaps, study, params, heat, fmt))
        out += plot_moe(study, params, d, fmt, label)
    _add(out, "vs_grid", lambda: plot_vs_grid(study, d / "vs_grid", fmt))
    return out


def ark_figures(directory: Path, study: PairedStudy, fmt: str = "png") -> list[Path]:
    """The default study's figures, as ``001_*.txt``: ``fct_vs_qps`` (mean and P95 FCT, Fig. 2),
    ``ttft_vs_qps`` (mean and P95 TTFT, Fig. 4), and at QPS 25 (or the one rate studied) the
    per-spine heatmap (``spine_heatmap_qps25``, Fig. 3) and the CDFs (``cdf_qps25``).

    A figure that cannot be drawn is left out with one warning line on stderr naming it.
    """
    d = Path(directory)
    out: list[Path] = []
    for stem, metrics in (
        ("fct_vs_qps", ("fct_mean_s", "fct_p95_s")), ("ttft_vs_qps", ("ttft_mean_s", "ttft_p95_s"))
    ):  # fmt: skip

        def draw(stem: str = stem, metrics: tuple[str, ...] = metrics) -> Path | None:
            return plot_vs_grid(study, d / stem, fmt, metrics)

        _add(out, stem, draw)
    points = study.points()
    at = next((p for p in points if p.get("workload.qps") == 25), points[-1])
    label = figure_labels(points)[points.index(at)]
    heat = f"spine_heatmap_{label}"
    _add(out, heat, lambda: plot_heatmaps(study, at, d / heat, fmt))
    _add(out, f"cdf_{label}", lambda: plot_point_cdfs(study, at, d / f"cdf_{label}", fmt))
    return out
