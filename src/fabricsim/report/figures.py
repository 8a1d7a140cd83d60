"""Report figures as SVG (default) or PNG bytes (matplotlib's Agg canvas; no pyplot).

The format is :data:`FIGURE_FORMAT`, a context variable :func:`fabricsim.report.write_report`
sets for the report it writes (``fabricsim report --png``); SVG keeps its text as text (no
glyph outlines) and its element ids and metadata fixed, so the same data gives the same bytes.
matplotlib is imported when the first figure is drawn (:func:`_figure`), not with this module:
the command line imports :mod:`fabricsim.report` at start-up.
"""

from __future__ import annotations

import io
import re
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import numpy as np

from fabricsim._compat import pd

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "FIGURE_FORMAT",
    "bars_png",
    "cdf_png",
    "link_timelines_png",
    "moe_queue_png",
    "moe_utilization_png",
    "spine_heatmap_png",
    "vs_load_png",
]

_DPI = 100
FIGURE_FORMAT: ContextVar[str] = ContextVar("FIGURE_FORMAT", default="svg")
"""``svg`` or ``png``: what the figure functions return."""


def _figure(**kwargs: Any) -> Figure:
    """A new matplotlib Figure (matplotlib imported here, on first use)."""
    from matplotlib.figure import Figure

    return Figure(**kwargs)


def _png(fig: Figure, title: str | None = None) -> bytes:
    """``fig`` rendered in :data:`FIGURE_FORMAT` (the name is older than the SVG option), with
    ``title`` (what the run was: scenario, engine, seeds, fabric, workload) above it."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if title:
        fig.suptitle(title, fontsize="small")
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    if FIGURE_FORMAT.get() == "svg":
        rc: dict[Any, Any] = {"svg.fonttype": "none", "svg.hashsalt": "fabricsim"}
        with matplotlib.rc_context(rc):
            fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    else:
        fig.savefig(buf, format="png", dpi=_DPI, metadata={"Software": None})
    return buf.getvalue()


def cdf_png(samples: dict[str, np.ndarray], xlabel: str, title: str | None = None) -> bytes:
    """Empirical CDFs, one line per label (a log x axis when the values span > 2 decades)."""
    fig = _figure(figsize=(7, 4), layout="constrained")
    ax = fig.add_subplot()
    lows, highs = [], []
    for label, values in samples.items():
        v = np.sort(np.asarray(values, dtype=float)[np.isfinite(values)])
        if len(v) == 0:
            continue
        ax.step(v, np.arange(1, len(v) + 1) / len(v), where="post", label=f"{label} ({len(v)})")
        lows.append(v[0])
        highs.append(v[-1])
    if lows and min(lows) > 0 and max(highs) / min(lows) > 100:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("fraction of flows")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize="small")
    return _png(fig, title)


def vs_load_png(
    table: pd.DataFrame,
    load: str,
    metrics: list[str],
    group: str | None,
    ylabel: str,
    title: str | None = None,
) -> bytes:
    """Metrics against the load key: mean over seeds with its 95 % t confidence band (none with
    one seed); one line per group."""
    fig = _figure(figsize=(4.2 * len(metrics), 3.6), layout="constrained")
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    groups = [(None, table)] if group is None else list(table.groupby(group, sort=False))
    for ax, metric in zip(axes, metrics, strict=True):
        for name, sub in groups:
            stats = sub.groupby(load, sort=True)[metric].agg(["mean", "std", "count"])
            x = stats.index.to_numpy(dtype=float)
            label = "all" if name is None else str(name)
            line = ax.plot(x, stats["mean"], marker="o", label=label)[0]
            half = _t_half_width(stats["std"].to_numpy(float), stats["count"].to_numpy(float))
            if np.isfinite(half).any():
                low, high = stats["mean"] - half, stats["mean"] + half
                ax.fill_between(x, low, high, color=line.get_color(), alpha=0.15)
        ax.set_xlabel(load)
        ax.set_ylabel(ylabel)
        ax.set_title(metric, fontsize="medium")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize="small")
    return _png(fig, title)


def _t_half_width(std: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Half width of the 95 % Student-t interval of a mean (NaN below two samples)."""
    from scipy import special  # perf: stats.t.ppf's own function, without scipy.stats (0.9 s)

    n = np.maximum(count, 2)
    half = special.stdtrit(n - 1, 0.975) * std / np.sqrt(n)
    return np.where(count >= 2, half, np.nan)


def spine_heatmap_png(spines: pd.DataFrame, title: str | None = None) -> bytes:
    """Active flows per spine over time (a step heatmap over the recorded change times)."""
    wide = spines.pivot_table(
        index="spine", columns="time_s", values="active_flows", aggfunc="last"
    )
    order = sorted(wide.index, key=_natural)
    wide = wide.loc[order].ffill(axis=1).fillna(0)
    times = wide.columns.to_numpy(dtype=float)
    step = np.diff(times).min() if len(times) > 1 else 1e-6
    edges = np.append(times, times[-1] + step)
    fig = _figure(figsize=(9, 0.35 * len(order) + 1.6), layout="constrained")
    ax = fig.add_subplot()
    mesh = ax.pcolormesh(edges, np.arange(len(order) + 1), wide.to_numpy(), cmap="viridis")
    mesh.set_rasterized(True)  # an image inside the SVG, not one path per cell
    ax.set_yticks(np.arange(len(order)) + 0.5, labels=order, fontsize="small")
    ax.set_xlabel("time (s)")
    fig.colorbar(mesh, ax=ax, label="active flows")
    return _png(fig, title)


def link_timelines_png(
    links: pd.DataFrame, names: list[str], queues: bool = True, title: str | None = None
) -> bytes:
    """Utilization (and, with ``queues``, queue bytes) over time of the named links."""
    fig = _figure(figsize=(9, 6 if queues else 3.6), layout="constrained")
    axes = fig.subplots(2, 1, sharex=True) if queues else [fig.add_subplot()]
    ax_u = axes[0]
    for name in names:
        sub = links[links["link"] == name].sort_values("time_s", kind="stable")
        t = sub["time_s"].to_numpy(dtype=float)
        ax_u.step(t, sub["utilization"], where="post", label=name)
        if queues:
            axes[1].step(t, sub["queue_bytes"], where="post", label=name)
    ax_u.set_ylabel("utilization")
    if queues:
        axes[1].set_ylabel("queue (bytes)")
    axes[-1].set_xlabel("time (s)")
    for ax in axes:
        ax.grid(alpha=0.3)
    ax_u.legend(fontsize="x-small", ncol=2, loc="upper right")
    return _png(fig, title)


def bars_png(
    values: dict[str, float], ylabel: str, reference: float | None = None, title: str | None = None
) -> bytes:
    """One bar per label (e.g. CCT inflation per policy), with an optional reference line."""
    fig = _figure(figsize=(max(4.0, 0.8 * len(values) + 2), 3.6), layout="constrained")
    ax = fig.add_subplot()
    labels = list(values)
    ax.bar(range(len(labels)), [values[k] for k in labels], color="tab:blue")
    ax.set_xticks(range(len(labels)), labels=labels, rotation=30, ha="right", fontsize="small")
    if reference is not None:
        ax.axhline(reference, color="grey", linestyle="--", linewidth=1)
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)
    return _png(fig, title)


def _natural(name: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", str(name)))


def _moe_axes(ax: Any, ylabel: str) -> None:
    ax.set_xlabel("time (µs)")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")


def moe_queue_png(
    series: dict[str, pd.DataFrame],
    model: tuple[np.ndarray, np.ndarray] | None = None,
    title: str | None = None,
) -> bytes:
    """The hot receiver's queue and the switches' total backlog over time, one line per run
    (``timeline_backlog`` tables by label), the fluid model's total backlog Q(t) beside them
    (``model``: times in s, bytes)."""
    fig = _figure(figsize=(11, 3.8), layout="constrained")
    ax_hot, ax_all = fig.subplots(1, 2)
    for label, tl in series.items():
        t = tl["time_s"].to_numpy(dtype=float) * 1e6
        ax_hot.step(t, tl["hot_queue_bytes"] / 1e3, where="post", label=label)
        ax_all.step(t, tl["backlog_bytes"] / 1e3, where="post", label=label)
    if model is not None:
        ax_all.plot(model[0] * 1e6, model[1] / 1e3, "k--", lw=1, label="fluid model Q(t)")
    ax_hot.set_title("hot receiver's downlink queue", fontsize="medium")
    ax_all.set_title("total switch backlog", fontsize="medium")
    _moe_axes(ax_hot, "queue (kB)")
    _moe_axes(ax_all, "backlog (kB)")
    return _png(fig, title)


def moe_utilization_png(
    series: dict[str, pd.DataFrame],
    active: dict[str, tuple[np.ndarray, np.ndarray]],
    model: tuple[np.ndarray, np.ndarray] | None = None,
    title: str | None = None,
) -> bytes:
    """Receiver link utilization over time (the hot receiver, and all receivers weighted by
    capacity) per run, and each run's mean active destinations per sender k(t) with the fluid
    model's k(t) (``active`` and ``model``: times in s, counts).

    A run's table may lack ``hot_utilization`` (the flow engine's open-loop model writes only
    ``receiver_utilization``): its line is then left out, never an error.
    """
    fig = _figure(figsize=(11, 3.8), layout="constrained")
    ax_u, ax_k = fig.subplots(1, 2)
    for label, tl in series.items():
        t = tl["time_s"].to_numpy(dtype=float) * 1e6
        color = None
        if "hot_utilization" in tl.columns:
            hot = ax_u.step(t, tl["hot_utilization"], where="post", label=f"{label}: hot receiver")
            color = hot[0].get_color()
        if "receiver_utilization" in tl.columns:
            ax_u.step(t, tl["receiver_utilization"], where="post", ls=":" if color else "-",
                      color=color, label=f"{label}: all receivers")  # fmt: skip
    for label, (t, k) in active.items():
        ax_k.step(t * 1e6, k, where="post", label=label)
    if model is not None:
        ax_k.plot(model[0] * 1e6, model[1], "k--", lw=1, label="fluid model k(t)")
    ax_u.set_ylim(0, 1.05)
    ax_u.set_title("receiver downlink utilization", fontsize="medium")
    ax_k.set_title("active destinations per sender", fontsize="medium")
    _moe_axes(ax_u, "utilization")
    _moe_axes(ax_k, "destinations")
    return _png(fig, title)
