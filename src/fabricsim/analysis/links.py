"""Link occupancy of a finished run: uplink balance per step, the receiver's busy fraction,
active flows per spine on a time grid.

Steps are the workload's ``step`` column (collectives), else the whole run; a step's window runs
from its first start to its last finish.  An uplink's utilization in a window comes from the
``timeline_links`` record: packet-engine rows are the utilization over the sampling interval
ending at ``time_s``, flow-engine rows hold from ``time_s`` to the link's next row.  (Compare
:func:`fabricsim.analysis.diagnostics.uplink_step_loads`, which counts the bytes each uplink's
flows carry instead.)

Examples
--------
>>> import pandas as pd
>>> flows = pd.DataFrame({"start_s": [0.0, 1.0], "finish_s": [0.5, 2.0], "step": [0, 1]})
>>> step_windows(flows, 3.0)
[(0.0, 0.5), (1.0, 2.0)]
"""

from __future__ import annotations

import math

import numpy as np

from fabricsim._compat import pd
from fabricsim.metrics.results import Result
from fabricsim.topology.fabric import HOST, Fabric
from fabricsim.units import ps_to_s, us_to_s

__all__ = [
    "receiver_busy_fraction",
    "spine_grid",
    "step_windows",
    "uplink_utilization",
    "uplinks",
]


def uplinks(fabric: Fabric) -> list[str]:
    """Names of the switch links that go up a tier (leaf -> spine, edge -> agg -> core)."""
    tier, src, dst = fabric.node_tier, fabric.link_src, fabric.link_dst
    return [
        fabric.link_names[x]
        for x in range(fabric.num_links)
        if tier[src[x]] != HOST and tier[dst[x]] > tier[src[x]]
    ]


def _segments(timeline: pd.DataFrame, engine: str, interval_s: float, end_s: float) -> tuple:
    """(link codes, t0, t1, utilization) of every timeline row, as time intervals."""
    tl = timeline.sort_values(["link", "time_s"], kind="stable")
    link = tl["link"].to_numpy()
    t = tl["time_s"].to_numpy(dtype=float)
    u = tl["utilization"].to_numpy(dtype=float)
    if engine == "packet":
        return link, t - interval_s, t, u
    nxt = np.append(t[1:], end_s)
    last = np.append(link[1:] != link[:-1], True)
    nxt[last] = max(end_s, float(t.max(initial=0.0)))
    return link, t, nxt, u


def step_windows(flows: pd.DataFrame, end_s: float) -> list[tuple[float, float]]:
    """(first start, last finish) of each step (``step`` column, else the whole run), s."""
    groups = flows.groupby("step", sort=True) if "step" in flows.columns else [(0, flows)]
    out = []
    for _, g in groups:
        a = float(g["start_s"].min())
        finish = g["finish_s"].to_numpy(dtype=float)
        b = end_s if np.isnan(finish).any() else float(finish.max())
        if b > a:
            out.append((a, b))
    return out


def uplink_utilization(res: Result, fabric: Fabric) -> dict[str, float]:
    """Mean over steps of the uplinks' max and mean utilization in the step, and their ratio.

    Only the uplinks of switches that sent traffic up during the step count (a leaf with no
    senders would otherwise halve the mean): with 8 flows hashed onto one leaf's 8 uplinks the
    ratio averages the 2.6 of ``002_*.txt``.

    Needs the run's ``timeline_links`` table; NaN values without it.
    """
    nan = {"uplink_util_max": math.nan, "uplink_util_mean": math.nan}
    tl = res.tables.get("timeline_links")
    if tl is None or res.flows.empty:
        return {**nan, "uplink_max_over_mean": math.nan}
    names = uplinks(fabric)
    end = float(res.summary.get("sim_end_s") or np.nanmax(res.flows["finish_s"]))
    interval = us_to_s(res.scenario.records.timeline_interval_us)
    tl = tl[tl["link"].isin(names)]
    link, t0, t1, u = _segments(tl, res.summary["engine"], interval, end)
    codes = pd.Categorical(link, categories=names).codes
    owner = np.array([n.split("->")[0] for n in names])  # each uplink's lower switch
    maxes, means, ratios = [], [], []
    for a, b in step_windows(res.flows, end):
        overlap = np.clip(np.minimum(t1, b) - np.maximum(t0, a), 0.0, None)
        busy = np.bincount(codes, weights=u * overlap, minlength=len(names)) / (b - a)
        # only switches that sent traffic up in this step (the seed's per-leaf diagnostic)
        carried = pd.Series(busy).groupby(owner).transform("sum").to_numpy() > 0
        busy = busy[carried]
        mean = float(busy.mean()) if len(busy) else 0.0
        maxes.append(float(busy.max(initial=0.0)))
        means.append(mean)
        ratios.append(maxes[-1] / mean if mean > 0 else math.nan)
    if not maxes:
        return {**nan, "uplink_max_over_mean": math.nan}
    return {
        "uplink_util_max": float(np.mean(maxes)),
        "uplink_util_mean": float(np.mean(means)),
        "uplink_max_over_mean": float(np.nanmean(ratios)) if not np.isnan(ratios).all() else 0.0,
    }


def receiver_busy_fraction(res: Result, fabric: Fabric, receiver: int) -> float:
    """How busy the link into ``receiver`` was from the first arrival to the last.

    Packet engine with ``records.port_stats``: the time the receiver's downlink spent
    serializing (every byte it sent: data, retransmissions, trimmed headers) over the time it
    could have: from the earliest moment a first full packet can reach the downlink (the
    nearest sender's start plus its unloaded delay, :meth:`Fabric.unloaded_delay_ps`, to the
    receiver's switch) to the moment the last message's last bit left it (finish minus the link's delay).
    At most 1.
    """
    ports = res.tables["port_stats"]
    down = int(fabric.host_downlink[receiver])
    row = ports[ports["link"] == fabric.link_names[down]].iloc[0]
    mine = res.flows[res.flows["dst"] == fabric.host_names[receiver]]
    size = res.scenario.nic.rdma_data_mss + res.scenario.nic.header_bytes
    first = math.inf
    for name, start in zip(mine["src"], mine["start_s"], strict=True):
        path = fabric.paths(fabric.host_names.index(name), receiver)[0][:-1]
        first = min(first, float(start) + ps_to_s(fabric.unloaded_delay_ps(path, size)))
    last = float(mine["finish_s"].max()) - ps_to_s(fabric.link_delay_ps[down])
    return float(row["bytes"]) * 8 / float(row["rate_bps"]) / (last - first)


def spine_grid(timeline: pd.DataFrame, bin_s: float, end_s: float) -> tuple[list[str], np.ndarray]:
    """Per-spine active flows on a time grid: the peak within each bin (Fig. 3's heatmap).

    Parameters
    ----------
    timeline : pandas.DataFrame
        ``timeline_spine_flows`` (``spine``, ``time_s``, ``active_flows``; a step function).
    bin_s, end_s : float
        Bin width and end of the grid (s).

    Returns
    -------
    spines : list of str
    grid : numpy.ndarray
        Shape ``(spines, bins)``.
    """
    spines = sorted(timeline["spine"].unique(), key=lambda s: (len(s), s))
    bins = max(1, int(np.ceil(end_s / bin_s)))
    grid = np.zeros((len(spines), bins))
    for i, spine in enumerate(spines):
        rows = timeline[timeline["spine"] == spine].sort_values("time_s", kind="stable")
        t, v = rows["time_s"].to_numpy(), rows["active_flows"].to_numpy(dtype=np.float64)
        starts = np.arange(bins) * bin_s
        at = np.searchsorted(t, starts, side="right") - 1
        grid[i] = np.where(at >= 0, v[np.maximum(at, 0)], 0.0)  # value carried into the bin
        idx = np.minimum((t / bin_s).astype(np.int64), bins - 1)
        np.maximum.at(grid[i], idx, v)  # and every value reached inside it
    return spines, grid
