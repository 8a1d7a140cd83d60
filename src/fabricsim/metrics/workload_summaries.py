"""The built-in workloads' ``summary.json`` keys, registered by ``workload.kind``.

Metrics sit above the workloads, so the summarizers live here and read the flow table and the
engine output; workload modules stay free of metrics.  The runner imports this module (which
registers them) and passes the :class:`~fabricsim.metrics.summaries.RunContext`.

* ``leaf_to_leaf``: ``step_efficiency`` (one message alone over the slowest message);
* ``collective``: completion time, algorithm and bus bandwidth (nccl-tests' definitions);
* ``moe``: the dispatch's CCT, its lower bound and the hot receiver (moved from
  ``workloads/moe.py``);
* ``kv_cache``: TTFT percentiles (:func:`ttft_summary`);
* ``chakra``: the replay's iteration time and exposed communication, and its timeline tables
  (:func:`chakra_summary`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from fabricsim._compat import LazyModule, pd
from fabricsim.config.workloads import CollectiveWorkload
from fabricsim.engine_api import wire_bytes_array
from fabricsim.metrics.results import percentiles
from fabricsim.metrics.summaries import RunContext, register_summarizer
from fabricsim.routing.dag import PairDags
from fabricsim.topology.fabric import Fabric

if TYPE_CHECKING:
    from fabricsim.workloads import chakra_timeline, collective, kv_cache, moe
else:  # perf: a run imports the generators of its own workload kind only
    chakra_timeline = LazyModule("fabricsim.workloads.chakra_timeline")
    collective = LazyModule("fabricsim.workloads.collective")
    kv_cache = LazyModule("fabricsim.workloads.kv_cache")
    moe = LazyModule("fabricsim.workloads.moe")


# -- leaf_to_leaf -----------------------------------------------------------------------------
@register_summarizer("leaf_to_leaf")
def step_efficiency(ctx: RunContext) -> dict[str, Any]:
    """A synchronized step: ideal (one message alone) / the slowest message's time."""
    if np.isnan(ctx.fct_s).any():
        return {"step_efficiency": 0.0}
    ideal = ctx.alone_fct_s(0)
    return {"step_efficiency": ideal / float(ctx.fct_s.max()), "step_ideal_s": ideal}


# -- collective -------------------------------------------------------------------------------
ELEMENT_BYTES = 4
"""nccl-tests' ``count`` is in float (4-byte) elements."""
PER_RANK_COUNT = frozenset({"all_gather", "reduce_scatter", "all_to_all"})
"""Operations whose printed ``count`` is per rank (the size over ``n`` ranks), as nccl-tests'."""


@register_summarizer("collective")
def collective_summary(ctx: RunContext) -> dict[str, Any]:
    """``collective_time_s``, ``algbw_gbps``, ``busbw_gbps`` (nccl-tests' definitions, in
    Gbit/s) and ``busbw_fraction_of_link`` of the last (largest) size; the step efficiency.

    Adds the tables ``collective_sizes`` (per size: nccl-tests' columns ``size_bytes``,
    ``count``, ``time_us``, ``algbw_GBps``, ``busbw_GBps``) and ``collective_steps`` (per size
    and step: its window, the busiest link and its utilization, the links' mean utilization,
    and ``efficiency`` = the step's NIC-bound time over its slowest flow's time).
    """
    wl = ctx.scenario.workload
    assert isinstance(wl, CollectiveWorkload)
    f, finish = ctx.flows, ctx.output.finish_s
    n = int(f.meta["participants"])
    factor = collective.BUS_FACTORS[wl.operation](n)
    sizes = collective_sizes(wl, f.extra["size_index"], finish, n, factor)
    ctx.output.tables["collective_sizes"] = sizes
    if np.isnan(finish).any():
        return {"collective_time_s": None, "algbw_gbps": None, "busbw_gbps": None}
    steps = collective_steps(ctx)
    ctx.output.tables["collective_steps"] = steps
    elapsed = float(sizes["time_us"].iloc[-1]) * 1e-6
    algbw = wl.size_list[-1] * 8 / elapsed
    link = float(np.min(ctx.fabric.link_rate_bps[ctx.fabric.host_uplink[np.unique(f.src)]]))
    last = steps[steps["size_bytes"] == wl.size_list[-1]]
    return {
        "collective_time_s": elapsed,
        "algbw_gbps": algbw / 1e9,
        "busbw_gbps": algbw * factor / 1e9,
        "busbw_fraction_of_link": algbw * factor / link,
        "collective_steps": int(len(last)),
        "step_efficiency_mean": float(last["efficiency"].mean()),
        "step_efficiency_min": float(last["efficiency"].min()),
    }


def collective_sizes(
    wl: CollectiveWorkload, size_index: np.ndarray, finish: np.ndarray, n: int, factor: float
) -> pd.DataFrame:
    """nccl-tests' table: per size, its time from the previous size's end (the first size:
    from ``workload.start_s``) to its last flow's end; NaN where a flow did not finish."""
    sizes = np.array(wl.size_list, dtype=np.int64)
    ends = np.full(len(sizes), np.nan)
    for k in range(len(sizes)):
        mine = finish[size_index == k]
        ends[k] = np.nan if np.isnan(mine).any() else float(mine.max())
    begins = np.concatenate([[wl.start_s], ends[:-1]])
    time_s = ends - begins
    algbw = sizes / time_s / 1e9
    per = n if wl.operation in PER_RANK_COUNT else 1
    return pd.DataFrame(
        {
            "size_bytes": sizes,
            "count": sizes // (ELEMENT_BYTES * per),
            "time_us": time_s * 1e6,
            "algbw_GBps": algbw,
            "busbw_GBps": algbw * factor,
        }
    )


def collective_steps(ctx: RunContext) -> pd.DataFrame:
    """Per size and step: window, flows, bytes, busiest link, utilizations, efficiency.

    A step's window runs from its first start to its last finish; a link's utilization is its
    wire bits in the step over its rate and the window.  ``efficiency``: the busiest NIC's wire
    bits in the step over its rate (the step's time if only the NICs limited it), divided by
    the step's slowest flow time (1: no flow waited for the fabric).
    """
    f, fab, sc = ctx.flows, ctx.fabric, ctx.scenario
    wire = wire_bytes_array(f.size_bytes, sc.nic.rdma_data_mss, sc.nic.header_bytes) * 8.0
    links = flow_links(fab, f.src, f.dst, ctx.output.path)
    start = ctx.output.start_s if ctx.output.start_s is not None else f.start_s
    send_bps, recv_bps = moe.host_rates_bps(fab)
    assert isinstance(sc.workload, CollectiveWorkload)
    sizes = np.array(sc.workload.size_list)
    rows = []
    step = f.extra["step"]  # unique over a sweep's sizes
    for k in np.unique(step):
        sel = np.flatnonzero(step == k)
        a, b = float(start[sel].min()), float(ctx.output.finish_s[sel].max())
        bits = np.zeros(fab.num_links)
        for i in sel:
            for path in links[i]:
                bits[list(path)] += wire[i] / len(links[i])  # a path crosses a link once
        used = np.flatnonzero(bits)
        util = bits[used] / (fab.link_rate_bps[used] * (b - a))
        nic = max(
            float(np.max(np.bincount(f.src[sel], wire[sel], fab.num_hosts) / send_bps)),
            float(np.max(np.bincount(f.dst[sel], wire[sel], fab.num_hosts) / recv_bps)),
        )
        slowest = float(np.max(ctx.output.finish_s[sel] - start[sel]))
        top = int(np.argmax(util))
        rows.append(
            (int(sizes[f.extra["size_index"][sel[0]]]), int(f.extra["step"][sel[0]]), a, b,
             len(sel), int(f.size_bytes[sel].sum()), fab.link_names[used[top]],
             float(util[top]), float(util.mean()), nic / slowest)
        )  # fmt: skip
    cols = ["size_bytes", "step", "start_s", "end_s", "flows", "bytes", "busiest_link",
            "link_util_max", "link_util_mean", "efficiency"]  # fmt: skip
    return pd.DataFrame(rows, columns=cols)


def flow_links(
    fabric: Fabric, src: np.ndarray, dst: np.ndarray, labels: list[str]
) -> list[list[tuple[int, ...]]]:
    """Each flow's paths as link ids, from its ``path`` label (``;`` between several; an empty
    label, a flow sprayed over too many paths to name: every path of its pair)."""
    by_pair: dict[tuple[int, int], dict[str, tuple[int, ...]]] = {}
    out = []
    for s, d, label in zip(src.tolist(), dst.tolist(), labels, strict=True):
        paths = by_pair.get((s, d))
        if paths is None:
            paths = by_pair[(s, d)] = {fabric.path_label(p): p for p in fabric.paths(s, d)}
        names = label.split(";") if label else list(paths)
        out.append([paths[x] for x in names if x in paths] or list(paths.values()))
    return out


# -- moe --------------------------------------------------------------------------------------
def cct_lower_bound_s(
    fabric: Fabric,
    src: np.ndarray,
    dst: np.ndarray,
    wire_bytes: np.ndarray,
    mss: int,
    header_bytes: int,
) -> tuple[float, str]:
    """CCT at 100 % utilization of the busiest NIC (``M`` in wire bits / its line rate) plus one
    unloaded path delay through it; also the name of that port."""
    send_bps, recv_bps = moe.host_rates_bps(fabric)
    bits = 8.0 * np.asarray(wire_bytes, dtype=np.float64)
    out_t = np.bincount(src, weights=bits, minlength=fabric.num_hosts) / send_bps
    in_t = np.bincount(dst, weights=bits, minlength=fabric.num_hosts) / recv_bps
    if in_t.max() >= out_t.max():
        host, on_port, port = int(in_t.argmax()), dst, "in"
    else:
        host, on_port, port = int(out_t.argmax()), src, "out"
    lat = shortest_latency_s(fabric, src, dst, on_port == host, mss, header_bytes)
    name = f"{fabric.host_names[host]} ({port})"
    return float(max(out_t.max(), in_t.max())) + lat, name


def shortest_latency_s(
    fabric: Fabric, src: np.ndarray, dst: np.ndarray, mask: np.ndarray, mss: int, hdr: int
) -> float:
    """The smallest unloaded packet delay over the flows in ``mask`` (once per leaf pair), s."""
    lat = math.inf
    seen: set[tuple[int, int]] = set()
    dags = PairDags(fabric, mss + hdr)  # perf: no path enumeration (k = 64: 1,024 per pair)
    for f in np.flatnonzero(mask):
        s, d = int(src[f]), int(dst[f])
        key = (int(fabric.host_leaf[s]), int(fabric.host_leaf[d]))
        if key not in seen:
            seen.add(key)
            lat = min(lat, dags.shortest_s(s, d))
    return 0.0 if math.isinf(lat) else lat


@register_summarizer("moe")
def moe_summary(ctx: RunContext) -> dict[str, Any]:
    """``cct_s``, ``cct_lower_bound_s``, ``cct_inflation``, the dispatch's facts, and the hot
    receiver's utilization; on the packet engine also its queue (:func:`packet_queue_metrics`).

    ``hot_receiver_utilization``: the hot receiver's load (wire bits over its rate) divided by
    the time from the dispatch start plus its shortest unloaded path delay to its last arrival
    (1 = its downlink never idled; None if a flow into it did not finish).
    """
    f, sc = ctx.flows, ctx.scenario
    mss, hdr = sc.nic.rdma_data_mss, sc.nic.header_bytes
    wire = wire_bytes_array(f.size_bytes, mss, hdr)
    bound, port = cct_lower_bound_s(ctx.fabric, f.src, f.dst, wire, mss, hdr)
    finish = ctx.output.finish_s
    cct = None if np.isnan(finish).any() else float(finish.max() - f.start_s.min())
    meta = f.meta.get("moe", {})
    out = {
        "cct_s": cct,
        "cct_lower_bound_s": bound,
        "cct_inflation": None if cct is None else cct / bound,
        "moe_bottleneck_port": port,
        "moe_scheduler": f.meta.get("sender_scheduler"),
        "moe_gpus": meta.get("gpus"),
        "moe_matrix_bytes": meta.get("matrix_bytes"),
        "moe_wire_bytes": int(wire.sum()),
        "moe_nvlink_bytes": meta.get("nvlink_bytes"),
    }
    hot, load_s = hot_receiver(ctx.fabric, f.dst, wire)
    into = f.dst == hot
    lat = shortest_latency_s(ctx.fabric, f.src, f.dst, into, mss, hdr)
    span = float(finish[into].max() - f.start_s.min()) - lat  # NaN if one is unfinished
    out["hot_receiver_utilization"] = load_s / span if span > 0 else None
    if ctx.engine == "packet":
        out.update(packet_queue_metrics(ctx, hot))
    return out


def hot_receiver(fabric: Fabric, dst: np.ndarray, wire_bytes: np.ndarray) -> tuple[int, float]:
    """The receiver with the largest load over its line rate, and that load in seconds."""
    _, recv_bps = moe.host_rates_bps(fabric)
    load_s = np.bincount(dst, weights=8.0 * wire_bytes, minlength=fabric.num_hosts) / recv_bps
    hot = int(np.argmax(load_s))
    return hot, float(load_s[hot])


def packet_queue_metrics(ctx: RunContext, hot: int) -> dict[str, Any]:
    """The hot receiver's downlink queue and the fabric's backlog, from the packet engine's records.

    ``hot_receiver_peak_queue_bytes``: exact with ``records.port_stats`` (the port's peak data
    queue), else the largest ``records.timelines`` sample; absent with neither.  With
    timelines, the table ``timeline_backlog`` (per sample: ``backlog_bytes`` = data and
    header bytes queued in every switch port, ``hot_queue_bytes``, ``hot_utilization``,
    ``receiver_utilization`` = the receiving downlinks' capacity-weighted utilization) is added
    to the run's tables, with ``peak_backlog_bytes`` and ``peak_backlog_s``.
    """
    fab, tables = ctx.fabric, ctx.output.tables
    down = fab.link_names[int(fab.host_downlink[hot])]
    out: dict[str, Any] = {"hot_receiver": fab.host_names[hot]}
    # record tables of the packet engine are DataFrames (only flow_paths starts as columns)
    ports = cast("pd.DataFrame | None", tables.get("port_stats"))
    tl = cast("pd.DataFrame | None", tables.get("timeline_links"))
    if ports is not None:
        row = ports.loc[ports["link"] == down, "peak_queue_bytes"]
        out["hot_receiver_peak_queue_bytes"] = float(row.iloc[0])
    if tl is None:
        return out
    table = backlog_timeline(fab, tl, hot, np.unique(ctx.flows.dst))
    tables["timeline_backlog"] = table
    if ports is None:
        hot_q = table["hot_queue_bytes"]
        out["hot_receiver_peak_queue_bytes"] = float(hot_q.max()) if len(hot_q) else 0.0
    if len(table):
        i = int(table["backlog_bytes"].to_numpy().argmax())
        out["peak_backlog_bytes"] = float(table["backlog_bytes"].iloc[i])
        out["peak_backlog_s"] = float(table["time_s"].iloc[i])
    return out


def backlog_timeline(
    fabric: Fabric, links: pd.DataFrame, hot: int, receivers: np.ndarray
) -> pd.DataFrame:
    """``timeline_backlog`` from a packet-engine ``timeline_links`` table (see
    :func:`packet_queue_metrics`); a link missing at a sample time was idle there."""
    names = np.asarray(fabric.link_names)
    times = np.sort(links["time_s"].unique())
    uplinks = set(names[fabric.host_uplink])  # the NIC pulls: nothing queues there
    queued = links[~links["link"].isin(uplinks)].groupby("time_s")["queue_bytes"].sum()
    hot_rows = links[links["link"] == names[fabric.host_downlink[hot]]].set_index("time_s")
    rx = fabric.host_downlink[receivers]
    rate = pd.Series(fabric.link_nominal_bps[rx].astype(float), index=names[rx])
    rows = links[links["link"].isin(rate.index)]
    served = (rows["utilization"] * rows["link"].map(rate)).groupby(rows["time_s"]).sum()
    return pd.DataFrame(
        {
            "time_s": times,
            "backlog_bytes": queued.reindex(times, fill_value=0).to_numpy(dtype=float),
            "hot_queue_bytes": hot_rows["queue_bytes"].reindex(times, fill_value=0).to_numpy(float),
            "hot_utilization": hot_rows["utilization"].reindex(times, fill_value=0.0).to_numpy(),
            "receiver_utilization": served.reindex(times, fill_value=0.0).to_numpy() / rate.sum(),
        }
    )


# -- kv_cache ---------------------------------------------------------------------------------
@register_summarizer("kv_cache")
def ttft_summary(ctx: RunContext) -> dict[str, Any]:
    """Summary keys and flow columns of a kv_cache run (a registered summarizer).

    Adds ``ttft_mean_s``, ``ttft_p50_s``, ``ttft_p95_s``, ``ttft_p99_s``, ``ttft_max_s`` (over
    the requests whose KV flow finished) and ``kv_bytes_per_token``, and the per-flow
    ``ttft_s`` column (under ``"_columns"``, which the runner moves into the flow table).
    """
    ttft = kv_cache.ttft_s(ctx.flows, ctx.fct_s)
    out: dict[str, Any] = {k.replace("fct_", "ttft_"): v for k, v in percentiles(ttft).items()}
    meta = ctx.flows.meta.get("kv_cache", {})
    if "kv_bytes_per_token" in meta:
        out["kv_bytes_per_token"] = int(meta["kv_bytes_per_token"])
    out["_columns"] = {"ttft_s": ttft}
    return out


# -- chakra -----------------------------------------------------------------------------------
@register_summarizer("chakra")
def chakra_summary(ctx: RunContext) -> dict[str, Any]:
    """``iteration_time_s``, ``exposed_comm_s`` (the rank with the most), ``exposed_comm_mean_s``,
    ``compute_s``, ``comm_s``, ``chakra_ranks``, ``chakra_nodes``; adds the tables
    ``chakra_timeline`` (one row per trace node: rank, node_id, name, kind, start_s, finish_s,
    duration_s) and ``chakra_ranks`` (per rank: finish_s, compute_s, comm_s, exposed_comm_s)."""
    out = ctx.output
    start = out.start_s if out.start_s is not None else ctx.flows.start_s
    summary, timeline, ranks = chakra_timeline.replay_timeline(
        ctx.flows.meta["chakra"], start, out.finish_s
    )
    out.tables["chakra_timeline"] = pd.DataFrame(timeline)
    out.tables["chakra_ranks"] = pd.DataFrame(ranks)
    return summary
