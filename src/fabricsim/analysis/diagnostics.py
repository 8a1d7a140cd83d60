"""Diagnostics of any run: uplink load balance per step, queue depths, transport counters.

Everything here reads a run's outputs (a :class:`~fabricsim.metrics.Result` or an output
directory) and works for either engine; tables a run did not record are simply absent.

* :func:`uplink_step_loads` — per collective step (flows that start together, or the
  workload's ``step`` column) and per switch, the bytes each of its uplinks carries, computed
  from the flow table's ``path`` column and flow sizes.  ``max_over_mean`` is the busiest
  uplink's bytes over the mean over **all** the switch's uplinks (idle ones included): 8 equal
  flows hashed onto 8 uplinks give 2.6 on average (``fabricsim ecmp-math --flows 8 --uplinks
  8``), which is hashing at work, not a fault.
* :func:`link_timeline_stats` — per link, time-weighted utilization and queue-depth
  distribution (mean, std, P95, max) from ``timeline_links``.
* :func:`port_counters`, :func:`nic_counters` — ECN marks, trims, drops, NACKs, timeouts and
  out-of-order counters per port (``port_stats``) and per NIC (``uet_transport_stats``).

Examples
--------
>>> import fabricsim
>>> res = fabricsim.run("ecmp-collision")
>>> d = diagnose(res)
>>> row = d.uplink_steps.iloc[0]
>>> str(row["switch"]), int(row["uplinks"]), int(row["flows"])
('leaf0', 8, 8)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fabricsim._compat import pd
from fabricsim.analysis.run_files import (
    read_json_object,
    read_table,
    read_transport_stats,
    read_yaml_mapping,
)
from fabricsim.config.models import TopologyConfig
from fabricsim.topology import build_fabric
from fabricsim.topology.fabric import HOST, NIC, PARALLEL_MARK, TIER_NAMES, Fabric, label_hops

__all__ = [
    "Diagnostics",
    "diagnose",
    "link_timeline_stats",
    "nic_counters",
    "port_counters",
    "uplink_step_loads",
]

#: summary keys that count transport events (shown when the run has them)
TRANSPORT_KEYS = (
    "packets_sent",
    "packets_retransmitted",
    "packets_trimmed",
    "packets_dropped",
    "control_packets_dropped",
    "acks_sent",
    "nacks_sent",
    "timeouts",
    "early_failure_detections",
    "flows_failed",
)
#: per-NIC keys about out-of-order delivery
OOO_KEYS = ("num_out_of_order_events_on_nic", "max_out_of_order_on_flow")

_STEP_COLUMNS = [
    "step", "start_s", "switch", "tier", "flows", "uplinks", "idle_uplinks", "bytes_total",
    "bytes_max", "bytes_mean", "max_over_mean", "busiest",
]  # fmt: skip


@dataclass(eq=False)
class Diagnostics:
    """What :func:`diagnose` found; a field is None when the run lacks its data.

    Attributes
    ----------
    uplink_steps : DataFrame or None
        :func:`uplink_step_loads` of the run.
    link_stats : DataFrame or None
        :func:`link_timeline_stats` of ``timeline_links``.
    ports : DataFrame or None
        :func:`port_counters` of ``port_stats``.
    nics : DataFrame or None
        :func:`nic_counters` of ``uet_transport_stats``.
    transport : dict
        Transport counters from the summary (packet engine), e.g. ``packets_retransmitted``.
    out_of_order : dict
        Totals of the out-of-order counters over NICs (``max`` for the per-flow maximum).
    """

    uplink_steps: pd.DataFrame | None = None
    link_stats: pd.DataFrame | None = None
    ports: pd.DataFrame | None = None
    nics: pd.DataFrame | None = None
    transport: dict[str, Any] | None = None
    out_of_order: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """A compact JSON-ready digest (worst values), e.g. for a sweep table."""
        out: dict[str, Any] = {}
        steps = self.uplink_steps
        if steps is not None and len(steps):
            leaf = steps[steps["tier"] == TIER_NAMES[1]]
            use = leaf if len(leaf) else steps
            out["uplink_max_over_mean"] = float(use["max_over_mean"].max())
            out["uplink_steps"] = int(use["step"].nunique())
        if self.link_stats is not None and len(self.link_stats):
            ls = self.link_stats
            out["queue_max_bytes"] = float(ls["queue_max_bytes"].max())
            out["queue_p95_bytes_max"] = float(ls["queue_p95_bytes"].max())
            out["utilization_max"] = float(ls["utilization_max"].max())
        if self.ports is not None and len(self.ports):
            for col in ("ecn_marks", "trims", "drops"):
                if col in self.ports:
                    out[f"port_{col}"] = int(self.ports[col].sum())
        out.update(self.transport or {})
        out.update(self.out_of_order or {})
        return out


# --------------------------------------------------------------------------- uplinks per step


def _split_paths(path: str) -> list[list[str]]:
    """Hops of each path of a ``path`` cell (``;`` separates a multipath flow's paths)."""
    return [label_hops(p) for p in str(path).split(";") if p]


def _steps(flows: pd.DataFrame) -> pd.Series:
    """Step label of each flow: the workload's ``step`` column, else its start time."""
    if "step" in flows.columns:
        return flows["step"]
    starts = flows["start_s"].to_numpy(dtype=float)
    _, codes = np.unique(starts, return_inverse=True)
    return pd.Series(codes, index=flows.index)


def _node(hop: str) -> str:
    return hop.partition(PARALLEL_MARK)[0]


def _uplink_bytes(flows: pd.DataFrame, fabric: Fabric) -> pd.DataFrame:
    """One row per (flow, upward hop): step, switch, neighbor, bytes (multipath: even split).

    ``neighbor`` is the upper hop as the label names it: the neighbor's name with the
    parallel link's suffix (``spine1#1``), so each parallel uplink is its own neighbor.
    """
    index = {name: i for i, name in enumerate(fabric.node_names)}
    tier = fabric.node_rank if fabric.node_rank is not None else fabric.node_tier
    steps = _steps(flows).to_numpy()
    rows: list[tuple[Any, str, str, float]] = []
    sizes = flows["size_bytes"].to_numpy(dtype=float)
    first = _source_nics(flows, fabric)
    for i, path in enumerate(flows["path"].to_numpy()):
        paths = _split_paths(path) if isinstance(path, str) else []
        for hops in paths:
            share = sizes[i] / len(paths)
            nic = first[i]
            hops = hops if nic is None else [nic, *hops]
            for a, b in zip(hops, hops[1:], strict=False):
                ia, ib = index.get(_node(a)), index.get(_node(b))
                if ia is not None and ib is not None and tier[ib] > tier[ia]:
                    rows.append((steps[i], _node(a), b, share))
    return pd.DataFrame(rows, columns=["step", "switch", "neighbor", "bytes"])


def _source_nics(flows: pd.DataFrame, fabric: Fabric) -> list[str | None]:
    """Per flow, the NIC node its source host sends through (multi-plane, PXN), else None.

    Path labels name switches only; the NIC's choice (a plane) is a stage of its own, so the
    uplink loads put it back in front of the label.
    """
    nic_of: dict[str, str] = {}
    for link in range(fabric.num_links):
        a, b = int(fabric.link_src[link]), int(fabric.link_dst[link])
        if fabric.node_tier[a] == HOST and fabric.node_tier[b] == NIC:
            nic_of[fabric.node_names[a]] = fabric.node_names[b]
    if not nic_of or "src" not in flows.columns:
        return [None] * len(flows)
    return [nic_of.get(str(src)) for src in flows["src"].to_numpy()]


def _up_neighbors(fabric: Fabric) -> dict[str, list[str]]:
    """Each switch's uplinks, named as path labels name them (``spine1``, ``spine1#1``, ...).

    Every parallel link is an uplink of its own.
    """
    out: dict[str, list[str]] = {}
    for link in range(fabric.num_links):
        a, b = int(fabric.link_src[link]), int(fabric.link_dst[link])
        rank = fabric.node_rank if fabric.node_rank is not None else fabric.node_tier
        if fabric.node_tier[a] != HOST and rank[b] > rank[a]:
            names = out.setdefault(fabric.node_names[a], [])
            if fabric.link_hop[link] not in names:
                names.append(fabric.link_hop[link])
    return out


def _load_stats(loads: pd.Series, n_up: int) -> tuple:
    """uplinks, idle uplinks, total, max, mean (over all uplinks), max/mean, busiest."""
    total = float(loads.sum())
    mean = total / n_up
    peak = float(loads.max())
    ratio = peak / mean if mean > 0 else float("nan")
    return (n_up, n_up - int((loads > 0).sum()), total, peak, mean, ratio, str(loads.idxmax()))


def uplink_step_loads(flows: pd.DataFrame, fabric: Fabric, min_flows: int = 2) -> pd.DataFrame:
    """Bytes per uplink of each switch during each step, and the busiest/mean ratio.

    Parameters
    ----------
    flows
        The run's flow table (``path``, ``size_bytes``, ``start_s``; optional ``step``).
    fabric
        The run's fabric (for the uplinks no flow used).
    min_flows
        Steps with fewer flows are left out (a Poisson workload has no synchronized steps).

    Returns
    -------
    DataFrame
        One row per (step, switch with traffic going up): ``flows``, ``uplinks`` (links to
        upper neighbors; each parallel link counts), ``idle_uplinks``, ``bytes_total``,
        ``bytes_max``, ``bytes_mean`` (over all uplinks), ``max_over_mean`` and ``busiest``
        (the busiest uplink's neighbor, with its parallel suffix such as ``spine1#1``).
        Bytes are payload bytes; a multipath flow's bytes are split evenly over its paths.
    """
    if len(flows) == 0 or "path" not in flows.columns:
        return pd.DataFrame(columns=_STEP_COLUMNS)
    steps = _steps(flows)
    sizes = steps.value_counts()
    keep = flows[steps.map(sizes).to_numpy() >= min_flows]
    hops = _uplink_bytes(keep, fabric)
    if hops.empty:
        return pd.DataFrame(columns=_STEP_COLUMNS)
    ups = _up_neighbors(fabric)
    start = keep.groupby(_steps(keep))["start_s"].min()
    counts = hops.groupby(["step", "switch"]).size()
    per = hops.groupby(["step", "switch", "neighbor"], sort=False)["bytes"].sum()
    rows = []
    for key, grp in per.groupby(level=[0, 1], sort=True):
        step, switch = key  # type: ignore[misc,str-unpack]
        loads = grp.droplevel([0, 1])
        n_up = max(len(ups.get(str(switch), [])), len(loads))
        tier = TIER_NAMES[int(fabric.node_tier[fabric.node_names.index(str(switch))])]
        head = (step, float(start.loc[step]), str(switch), tier, int(counts.loc[(step, switch)]))
        rows.append(head + _load_stats(loads, n_up))
    out = pd.DataFrame(rows, columns=_STEP_COLUMNS)
    return out.sort_values(["step", "tier", "switch"], kind="stable").reset_index(drop=True)


# --------------------------------------------------------------------------- timelines


def _weighted_quantile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    order = np.argsort(values, kind="stable")
    v, w = values[order], weights[order]
    cum = np.cumsum(w)
    if cum[-1] <= 0:
        return float(np.quantile(values, q))
    return float(v[np.searchsorted(cum, q * cum[-1], side="left").clip(0, len(v) - 1)])


def _weighted(values: np.ndarray, weights: np.ndarray) -> tuple[float, float, float]:
    """Time-weighted mean, std and P95 (unweighted if no time elapsed)."""
    if weights.sum() <= 0:
        weights = np.ones_like(values)
    mean = float(np.average(values, weights=weights))
    std = float(np.sqrt(np.average((values - mean) ** 2, weights=weights)))
    return mean, std, _weighted_quantile(values, weights, 0.95)


def link_timeline_stats(timeline: pd.DataFrame) -> pd.DataFrame:
    """Per-link utilization and queue-depth statistics over the run, time-weighted.

    Each link's rows are read as a piecewise-constant series (a value holds until the link's
    next row; both engines write a row when a value changes or per sampling interval), over
    the window from the table's first to its last time; a link is idle (0) before its first
    row.

    Returns
    -------
    DataFrame
        One row per link (links with no traffic and no queue left out), sorted by peak queue
        then peak utilization: ``utilization_mean``, ``utilization_max``,
        ``queue_mean_bytes``, ``queue_std_bytes``, ``queue_p95_bytes``, ``queue_max_bytes``.
    """
    cols = [
        "link", "utilization_mean", "utilization_max", "queue_mean_bytes", "queue_std_bytes",
        "queue_p95_bytes", "queue_max_bytes",
    ]  # fmt: skip
    if timeline is None or timeline.empty:
        return pd.DataFrame(columns=cols)
    t0, t1 = float(timeline["time_s"].min()), float(timeline["time_s"].max())
    rows = []
    for link, grp in timeline.sort_values("time_s", kind="stable").groupby("link", sort=True):
        t = grp["time_s"].to_numpy(dtype=float)
        util = grp["utilization"].to_numpy(dtype=float)
        queue = grp["queue_bytes"].to_numpy(dtype=float)
        if not (util > 0).any() and not (queue > 0).any():
            continue
        dur = np.diff(np.append(t, t1))
        lead = t[0] - t0  # idle before the first row
        w = np.append(dur, lead)
        u_mean, _, _ = _weighted(np.append(util, 0.0), w)
        q_mean, q_std, q_p95 = _weighted(np.append(queue, 0.0), w)
        rows.append(
            (str(link), u_mean, float(util.max()), q_mean, q_std, q_p95, float(queue.max()))
        )
    out = pd.DataFrame(rows, columns=cols)
    out = out.sort_values(
        ["queue_max_bytes", "utilization_max", "link"], ascending=[False, False, True]
    )
    return out.reset_index(drop=True)


# --------------------------------------------------------------------------- counters


def port_counters(port_stats: pd.DataFrame) -> pd.DataFrame:
    """Ports that carried traffic or counted an event, with their counters (``port_stats``)."""
    if port_stats is None or port_stats.empty:
        return pd.DataFrame()
    counters = [c for c in ("bytes", "packets", "ecn_marks", "trims", "drops") if c in port_stats]
    active = (port_stats[counters] > 0).any(axis=1) if counters else slice(None)
    keep = ["link", *counters, *[c for c in ("peak_queue_bytes",) if c in port_stats]]
    return port_stats.loc[active, keep].reset_index(drop=True)


def nic_counters(transport_stats: dict[str, Any] | None) -> pd.DataFrame:
    """One row per NIC of ``uet_transport_stats`` (ECN-free counters: NACKs, OOO, timeouts)."""
    nics = (transport_stats or {}).get("nics") or {}
    if not nics:
        return pd.DataFrame()
    df = pd.DataFrame.from_dict(nics, orient="index")
    df.index.name = "nic"
    return df.reset_index()


def _out_of_order(transport_stats: dict[str, Any] | None, nics: pd.DataFrame) -> dict[str, Any]:
    total = (transport_stats or {}).get("total") or {}
    out = {k: total[k] for k in OOO_KEYS if k in total}
    if not out and not nics.empty:
        for k in OOO_KEYS:
            if k in nics:
                out[k] = int(nics[k].max() if k.startswith("max_") else nics[k].sum())
    return out


# --------------------------------------------------------------------------- whole run


@dataclass(eq=False)
class _RunData:
    summary: dict[str, Any]
    flows: pd.DataFrame
    topology: dict[str, Any]
    tables: dict[str, pd.DataFrame]
    json_records: dict[str, Any]


def _load_run(run: Any) -> _RunData:
    """A Result or an output directory, as plain data.

    A directory's files are read as untrusted input (:mod:`fabricsim.analysis.run_files`):
    a missing ``summary.json`` or ``flows.parquet``, or any corrupt file, is a ConfigError
    naming the file.
    """
    if hasattr(run, "summary") and hasattr(run, "flows"):
        topo = run.scenario.to_dict()["topology"]
        return _RunData(run.summary, run.flows, topo, dict(run.tables), dict(run.json_records))
    path = Path(run)
    summary = read_json_object(path / "summary.json")
    flows = read_table(path / "flows.parquet", required=True)
    assert flows is not None
    config = read_yaml_mapping(path / "config.yaml") if (path / "config.yaml").exists() else {}
    tables = {}
    for name in ("timeline_links", "port_stats"):
        table = read_table(path / f"{name}.parquet")
        if table is not None:
            tables[name] = table
    records = {}
    stats_path = path / "uet_transport_stats.json"
    if stats_path.exists():
        records["uet_transport_stats"] = read_transport_stats(stats_path)
    topology = config.get("topology") or {}
    return _RunData(summary, flows, topology if isinstance(topology, dict) else {}, tables, records)


def _fabric(topology: dict[str, Any]) -> Fabric | None:
    try:
        return build_fabric(TopologyConfig.model_validate(topology))
    except Exception:  # noqa: BLE001 - diagnostics never fail a report over the fabric
        return None


def diagnose(run: Any) -> Diagnostics:
    """Diagnostics of a run: a :class:`~fabricsim.metrics.Result` or an output directory.

    Parameters
    ----------
    run
        A Result, or the path of a directory written by ``Result.save`` / ``fabricsim run``.

    Returns
    -------
    Diagnostics
        Tables the run did not record are None.
    """
    data = _load_run(run)
    fabric = _fabric(data.topology) if data.topology else None
    diag = Diagnostics()
    if fabric is not None:
        diag.uplink_steps = uplink_step_loads(data.flows, fabric)
    if "timeline_links" in data.tables:
        diag.link_stats = link_timeline_stats(data.tables["timeline_links"])
    if "port_stats" in data.tables:
        diag.ports = port_counters(data.tables["port_stats"])
    stats = data.json_records.get("uet_transport_stats")
    if stats is not None:
        diag.nics = nic_counters(stats)
        diag.out_of_order = _out_of_order(stats, diag.nics)
    transport = {k: data.summary[k] for k in TRANSPORT_KEYS if k in data.summary}
    diag.transport = transport or None
    return diag
