"""Report figures as PNG bytes (matplotlib's Agg canvas; no pyplot, no global state).

matplotlib is imported when the first figure is drawn (:func:`_figure`), not with this module:
the command line imports :mod:`fabricsim.report` at start-up.
"""

from __future__ import annotations

import io
import re
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "bars_png",
    "cdf_png",
    "link_timelines_png",
    "spine_heatmap_png",
    "vs_load_png",
]

_DPI = 100


def _figure(**kwargs: Any) -> Figure:
    """A new matplotlib Figure (matplotlib imported here, on first use)."""
    from matplotlib.figure import Figure

    return Figure(**kwargs)


def _png(fig: Figure) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=_DPI, metadata={"Software": None})
    return buf.getvalue()


def cdf_png(samples: dict[str, np.ndarray], xlabel: str) -> bytes:
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
    return _png(fig)


def vs_load_png(
    table: pd.DataFrame, load: str, metrics: list[str], group: str | None, ylabel: str
) -> bytes:
    """Metrics against the load key: mean over seeds, min-max band; one line per group."""
    fig = _figure(figsize=(4.2 * len(metrics), 3.6), layout="constrained")
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    groups = [(None, table)] if group is None else list(table.groupby(group, sort=False))
    for ax, metric in zip(axes, metrics, strict=True):
        for name, sub in groups:
            stats = sub.groupby(load, sort=True)[metric].agg(["mean", "min", "max"])
            x = stats.index.to_numpy(dtype=float)
            label = "all" if name is None else str(name)
            line = ax.plot(x, stats["mean"], marker="o", label=label)[0]
            ax.fill_between(x, stats["min"], stats["max"], color=line.get_color(), alpha=0.15)
        ax.set_xlabel(load)
        ax.set_ylabel(ylabel)
        ax.set_title(metric, fontsize="medium")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize="small")
    return _png(fig)


def spine_heatmap_png(spines: pd.DataFrame) -> bytes:
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
    ax.set_yticks(np.arange(len(order)) + 0.5, labels=order, fontsize="small")
    ax.set_xlabel("time (s)")
    fig.colorbar(mesh, ax=ax, label="active flows")
    return _png(fig)


def link_timelines_png(links: pd.DataFrame, names: list[str]) -> bytes:
    """Utilization and queue bytes over time of the named links (step plots)."""
    fig = _figure(figsize=(9, 6), layout="constrained")
    ax_u, ax_q = fig.subplots(2, 1, sharex=True)
    for name in names:
        sub = links[links["link"] == name].sort_values("time_s", kind="stable")
        t = sub["time_s"].to_numpy(dtype=float)
        ax_u.step(t, sub["utilization"], where="post", label=name)
        ax_q.step(t, sub["queue_bytes"], where="post", label=name)
    ax_u.set_ylabel("utilization")
    ax_q.set_ylabel("queue (bytes)")
    ax_q.set_xlabel("time (s)")
    for ax in (ax_u, ax_q):
        ax.grid(alpha=0.3)
    ax_u.legend(fontsize="x-small", ncol=2, loc="upper right")
    return _png(fig)


def bars_png(values: dict[str, float], ylabel: str, reference: float | None = None) -> bytes:
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
    return _png(fig)


def _natural(name: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", str(name)))
