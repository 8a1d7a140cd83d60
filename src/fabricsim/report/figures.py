"""Report figures as SVG (default) or PNG bytes (matplotlib's Agg canvas; no pyplot).

The format is :data:`FIGURE_FORMAT`, a context variable :func:`fabricsim.report.write_report`
sets for the report it writes (``fabricsim report --png``); SVG keeps its text as text (no
glyph outlines) and its element ids and metadata fixed, so the same data gives the same bytes.
matplotlib is imported when the first figure is drawn (:func:`_figure`), not with this module:
the command line imports :mod:`fabricsim.report` at start-up.
"""

from __future__ import annotations

import io
import textwrap
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import numpy as np

from fabricsim._compat import pd
from fabricsim.experiments.intervals import mean_interval
from fabricsim.report.labels import axis_label, metric_label, natural_key, value_label
from fabricsim.units import seconds_unit

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


def time_unit(values: Any, log: bool = False) -> tuple[float, str]:
    """The unit (seconds per unit, name) of a time axis: read off the largest value (a linear
    axis from 0) or the median (a log axis), so ticks read ``20, 40 µs``, never ``0.00034``."""
    v = np.abs(np.asarray(values, dtype=float).ravel())
    v = v[np.isfinite(v) & (v > 0)]
    if not len(v):
        return 1.0, "s"
    return seconds_unit(float(np.median(v) if log else v.max()))


def bytes_unit(largest: float) -> tuple[float, str]:
    """(bytes per unit, name) for an axis of byte counts up to ``largest`` (powers of 1000).

    >>> bytes_unit(512), bytes_unit(3.2e5), bytes_unit(7e9)
    ((1.0, 'B'), (1000.0, 'kB'), (1000000000.0, 'GB'))
    """
    for factor, unit in ((1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
        if abs(largest) >= factor:
            return factor, unit
    return 1.0, "B"


def plain_log_ticks(axis: Any, low: float, high: float) -> None:
    """Log-axis ticks as plain numbers (``10, 20, 50, 100``, not ``2×10⁻⁵``): 2 and 5 between
    the decades when the data span under three decades, else the decades alone."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    def plain(v: float, _pos: Any = None) -> str:
        return f"{v:,.0f}" if v >= 1 else f"{v:g}"

    def minor(v: float, _pos: Any = None) -> str:
        mantissa = round(v / 10 ** np.floor(np.log10(v)), 6) if v > 0 else 0
        return plain(v) if mantissa in (2.0, 5.0) else ""

    axis.set_major_formatter(FuncFormatter(plain))
    few = low > 0 and high / low < 1000
    axis.set_minor_formatter(FuncFormatter(minor) if few else NullFormatter())


def legend_below(fig: Figure, axes: Any, ncols: int | None = None) -> None:
    """One legend for the figure, under its axes (so it covers no data); a label drawn in
    several panels is listed once."""
    entries: dict[str, Any] = {}
    for ax in np.ravel(axes):
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            entries.setdefault(label, handle)
    if not entries:
        return
    cols = ncols or min(len(entries), 4 if max(map(len, entries)) < 28 else 2)
    fig.legend(list(entries.values()), list(entries), loc="outside lower center", ncols=cols,
               fontsize="small", frameon=False)  # fmt: skip


def wrap_title(title: str, width_in: float) -> str:
    """Each line of a title wrapped to the figure's width (about 15 small characters an inch)."""
    chars = max(40, int(width_in * 15))
    return "\n".join(textwrap.fill(line, chars) for line in title.split("\n"))


def _png(fig: Figure, title: str | None = None) -> bytes:
    """``fig`` rendered in :data:`FIGURE_FORMAT` (the name is older than the SVG option), with
    ``title`` (what the run was: scenario, engine, seeds, fabric, workload) above it."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if title:
        fig.suptitle(wrap_title(title, fig.get_figwidth()), fontsize="small")
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    if FIGURE_FORMAT.get() == "svg":
        rc: dict[Any, Any] = {"svg.fonttype": "none", "svg.hashsalt": "fabricsim"}
        with matplotlib.rc_context(rc):
            fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    else:
        fig.savefig(buf, format="png", dpi=_DPI, metadata={"Software": None})
    return buf.getvalue()


def cdf_axes(ax: Any, samples: dict[str, np.ndarray], what: str = "FCT") -> None:
    """Empirical CDFs of durations in seconds, one line per label (with its count), in one unit
    chosen for the data; a log x axis (plain-number ticks) when they span over 2 decades."""
    data = {k: np.sort(np.asarray(v, dtype=float)[np.isfinite(v)]) for k, v in samples.items()}
    data = {k: v for k, v in data.items() if len(v)}
    pooled = np.concatenate(list(data.values())) if data else np.array([])
    low = float(pooled[pooled > 0].min()) if (pooled > 0).any() else 0.0
    high = float(pooled.max()) if len(pooled) else 0.0
    log = low > 0 and high / low > 100
    factor, unit = time_unit(pooled, log)
    for label, v in data.items():
        ax.step(v / factor, np.arange(1, len(v) + 1) / len(v), where="post",
                label=f"{label} ({len(v):,})")  # fmt: skip
    if log:
        ax.set_xscale("log")
        plain_log_ticks(ax.xaxis, low / factor, high / factor)
    ax.set_xlabel(f"{what} ({unit})")
    ax.set_ylabel("fraction of flows")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)


def cdf_png(samples: dict[str, np.ndarray], what: str = "FCT", title: str | None = None) -> bytes:
    """Empirical CDFs of durations (seconds), one line per label (:func:`cdf_axes`)."""
    fig = _figure(figsize=(7, 4.4), layout="constrained")
    ax = fig.add_subplot()
    cdf_axes(ax, samples, what)
    legend_below(fig, ax)
    return _png(fig, title)


def vs_load_png(
    table: pd.DataFrame,
    load: str,
    metrics: list[str],
    group: str | None,
    title: str | None = None,
) -> bytes:
    """Metrics (durations in seconds, ``*_s``) against the load key: mean over seeds with its
    95 % confidence band (:func:`~fabricsim.experiments.intervals.mean_interval`, the study's
    interval of a mean; none with one seed); one line per group (human labels), one time
    unit per panel chosen for its values."""
    fig = _figure(figsize=(4.4 * len(metrics), 3.9), layout="constrained")
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    groups = [(None, table)] if group is None else list(table.groupby(group, sort=False))
    if group is not None and pd.api.types.is_numeric_dtype(table[group]):
        groups.sort(key=lambda g: natural_key(g[0]))  # numbers in order; names as run
    for ax, metric in zip(axes, metrics, strict=True):
        factor, unit = time_unit(table[metric])
        for name, sub in groups:
            by_load = sub.groupby(load, sort=True)[metric]
            means = by_load.mean()
            x = means.index.to_numpy(dtype=float)
            label = "all" if group is None else value_label(group, name)
            line = ax.plot(x, means / factor, marker="o", label=label)[0]
            # the study's interval of a mean (log scale: a time's band stays above 0)
            band = np.array([mean_interval(v.dropna().to_numpy(float)) for _, v in by_load])
            if np.isfinite(band).any():
                ax.fill_between(x, band[:, 0] / factor, band[:, 1] / factor,
                                color=line.get_color(), alpha=0.15)  # fmt: skip
        ax.set_xlabel(axis_label(load))
        name = metric_label(metric)
        ax.set_ylabel(f"{name} ({unit})")
        ax.set_title(name, fontsize="medium")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    if group is not None:
        legend_below(fig, axes)
    return _png(fig, title)


def spine_heatmap_png(spines: pd.DataFrame, title: str | None = None) -> bytes:
    """Active flows per spine over time (a step heatmap over the recorded change times)."""
    wide = spines.pivot_table(
        index="spine", columns="time_s", values="active_flows", aggfunc="last"
    )
    order = sorted(wide.index, key=natural_key)
    wide = wide.loc[order].ffill(axis=1).fillna(0)
    times = wide.columns.to_numpy(dtype=float)
    step = np.diff(times).min() if len(times) > 1 else 1e-6
    edges = np.append(times, times[-1] + step)
    factor, unit = time_unit(edges)
    fig = _figure(figsize=(9, 0.35 * len(order) + 1.9), layout="constrained")
    ax = fig.add_subplot()
    mesh = ax.pcolormesh(edges / factor, np.arange(len(order) + 1), wide.to_numpy(), cmap="viridis")
    mesh.set_rasterized(True)  # an image inside the SVG, not one path per cell
    ax.set_yticks(np.arange(len(order)) + 0.5, labels=order, fontsize="small")
    ax.set_xlabel(f"time ({unit})")
    from matplotlib.ticker import MaxNLocator

    fig.colorbar(mesh, ax=ax, label="active flows", ticks=MaxNLocator(integer=True))
    return _png(fig, title)


def link_timelines_png(
    links: pd.DataFrame, names: list[str], queues: bool = True, title: str | None = None
) -> bytes:
    """Utilization (and, with ``queues``, queue bytes) over time of the named links."""
    fig = _figure(figsize=(9, 6.6 if queues else 4.2), layout="constrained")
    axes = fig.subplots(2, 1, sharex=True) if queues else [fig.add_subplot()]
    ax_u = axes[0]
    shown = links[links["link"].isin(names)]
    factor, unit = time_unit(shown["time_s"])
    qfactor, qunit = bytes_unit(float(shown["queue_bytes"].max()) if queues else 0.0)
    for name in names:
        sub = links[links["link"] == name].sort_values("time_s", kind="stable")
        t = sub["time_s"].to_numpy(dtype=float) / factor
        ax_u.step(t, sub["utilization"], where="post", label=name)
        if queues:
            axes[1].step(t, sub["queue_bytes"] / qfactor, where="post", label=name)
    ax_u.set_ylabel("utilization")
    ax_u.set_ylim(0, 1.05)
    if queues:
        axes[1].set_ylabel(f"queue ({qunit})")
    axes[-1].set_xlabel(f"time ({unit})")
    for ax in axes:
        ax.grid(alpha=0.3)
    legend_below(fig, axes, ncols=4)
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


def _moe_axes(ax: Any, ylabel: str, unit: str = "µs") -> None:
    ax.set_xlabel(f"time ({unit})")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)


def _moe_time(series: dict[str, pd.DataFrame]) -> tuple[float, str]:
    return time_unit(np.concatenate([tl["time_s"].to_numpy(dtype=float) for tl in series.values()]))


def moe_queue_png(
    series: dict[str, pd.DataFrame],
    model: tuple[np.ndarray, np.ndarray] | None = None,
    title: str | None = None,
) -> bytes:
    """The hot receiver's queue and the switches' total backlog over time, one line per run
    (``timeline_backlog`` tables by label), the fluid model's total backlog Q(t) beside them
    (``model``: times in s, bytes)."""
    fig = _figure(figsize=(11, 4.4), layout="constrained")
    ax_hot, ax_all = fig.subplots(1, 2)
    factor, unit = _moe_time(series)
    top = max(float(tl["backlog_bytes"].max()) for tl in series.values())
    top = max(top, float(np.max(model[1]))) if model is not None and len(model[1]) else top
    hot = max(float(tl["hot_queue_bytes"].max()) for tl in series.values())
    (hf, hu), (bf, bu) = bytes_unit(hot), bytes_unit(top)
    for label, tl in series.items():
        t = tl["time_s"].to_numpy(dtype=float) / factor
        ax_hot.step(t, tl["hot_queue_bytes"] / hf, where="post", label=label)
        ax_all.step(t, tl["backlog_bytes"] / bf, where="post", label=label)
    if model is not None:
        ax_all.plot(model[0] / factor, model[1] / bf, "k--", lw=1, label="fluid model Q(t)")
    ax_hot.set_title("hot receiver's downlink queue", fontsize="medium")
    ax_all.set_title("total switch backlog", fontsize="medium")
    _moe_axes(ax_hot, f"queue ({hu})", unit)
    _moe_axes(ax_all, f"backlog ({bu})", unit)
    legend_below(fig, (ax_hot, ax_all))
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
    fig = _figure(figsize=(11, 4.6), layout="constrained")
    ax_u, ax_k = fig.subplots(1, 2)
    factor, unit = _moe_time(series)
    for label, tl in series.items():
        t = tl["time_s"].to_numpy(dtype=float) / factor
        color = None
        if "hot_utilization" in tl.columns:
            hot = ax_u.step(t, tl["hot_utilization"], where="post", label=f"{label}: hot receiver")
            color = hot[0].get_color()
        if "receiver_utilization" in tl.columns:
            ax_u.step(t, tl["receiver_utilization"], where="post", ls=":" if color else "-",
                      color=color, label=f"{label}: all receivers")  # fmt: skip
    for label, (t, k) in active.items():
        ax_k.step(t / factor, k, where="post", label=f"{label}: destinations")
    if model is not None:
        ax_k.plot(model[0] / factor, model[1], "k--", lw=1, label="fluid model k(t)")
    ax_u.set_ylim(0, 1.05)
    ax_u.set_title("receiver downlink utilization", fontsize="medium")
    ax_k.set_title("active destinations per sender", fontsize="medium")
    _moe_axes(ax_u, "utilization", unit)
    _moe_axes(ax_k, "destinations", unit)
    legend_below(fig, (ax_u, ax_k), ncols=3)
    return _png(fig, title)
