"""Counts from the config alone, for the memory budget (:mod:`fabricsim.experiments.budget`).

The fabric's size (nodes, links, paths) and the workload's load (flows, bytes, pairs, MoE
matrix and prompt-table entries) that :func:`~fabricsim.experiments.budget.estimate` prices.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fabricsim._compat import pq
from fabricsim.units import MAX_TIME_S, us_to_s
from fabricsim.workloads.kv_models import get_model
from fabricsim.workloads.moe import GENERIC, PRESETS


@dataclass
class _Fabric:
    kind: str
    hosts: int
    nodes: int
    links: int
    leaves: int
    tops: int
    pair_paths: int  # equal-cost paths between hosts of different leaves
    path_links: int  # links on the longest host-to-host path
    host_bps: float
    fabric_bps: float
    parallel: int = 1  # links between each leaf and spine (topology.parallel_links)


@dataclass
class _Load:
    flows: int = 0
    bytes_total: float | None = 0.0  # None: unknown from the config alone
    busiest: float | None = 0.0  # bytes the most loaded host sends or receives
    last_start_s: float = 0.0
    pairs: int = 0  # distinct (src, dst) host pairs, at most
    matrix: float = 0.0  # MoE matrix entries
    prompt_table: float = 0.0  # kv_cache rank-Zipf table entries
    notes: list[str] = field(default_factory=list)


# -- counts from the config --------------------------------------------------------------------
@dataclass
class _Shape:
    topology: Any  # what _fabric reads of a scenario


def _fabric(sc: Any) -> _Fabric:
    t = sc.topology
    nics = t.host_nic_gbps or []
    slowest = min([float(t.host_link_gbps), *(nics.values() if isinstance(nics, dict) else nics)])
    host_bps = max(slowest * 1e9, 1.0)  # the builder's rates are whole bit/s; the slowest NIC
    fabric_bps = max(float(min(t.fabric_link_gbps, t.core_link_gbps or math.inf)) * 1e9, 1.0)
    if t.kind == "multi_plane":  # planes copies of the plane fabric, and a NIC node per host
        one = _fabric(_Shape(t.model_copy(update={"kind": t.plane_kind})))
        p = int(t.planes)
        return _Fabric(
            "multi_plane", one.hosts, 2 * one.hosts + p * (one.nodes - one.hosts),
            2 * one.hosts + p * one.links, p * one.leaves, p * one.tops, p * one.pair_paths,
            one.path_links + 2, host_bps, fabric_bps,
        )  # fmt: skip
    if t.kind == "fat_tree":
        k = int(t.k)
        half = k // 2
        per_edge = int(t.hosts_per_edge or half)
        hosts = k * half * per_edge
        edges = aggs = k * half
        cores = half * half
        links = 2 * (hosts + k * half * half + k * half * half)
        return _Fabric(
            "fat_tree", hosts, hosts + edges + aggs + cores, links, edges, cores, cores, 6,
            host_bps, fabric_bps,
        )  # fmt: skip
    leaves, spines = int(t.leaves), int(t.spines)
    par = int(getattr(t, "parallel_links", 1) or 1)
    hosts = leaves * int(t.hosts_per_leaf)
    if t.kind == "rail_optimized":
        per = int(t.servers_per_leaf or t.servers)
        leaves = int(t.rails) * -(-int(t.servers) // per)
        hosts = int(t.servers) * int(t.rails)
    links = 2 * (hosts + leaves * spines * par)
    path_links = 4 if leaves > 1 else 2
    nodes = hosts + leaves + spines
    if t.kind == "rail_optimized" and t.pxn:  # a NIC node per GPU, an NVSwitch per server
        nodes += hosts + int(t.servers)
        links += 4 * hosts
        path_links += 2
    return _Fabric(
        "leaf_spine", hosts, nodes, links, leaves, spines, spines * par, path_links, host_bps,
        fabric_bps, par,
    )  # fmt: skip


def _harmonic(n: float, a: float) -> float:
    """``sum(r ** -a for r in 1..n)``: 64 terms exactly, the tail by Euler-Maclaurin (< 1e-6)."""
    head = float(sum(r**-a for r in range(1, int(min(n, 64)) + 1)))
    if n <= 64:
        return head
    m = 65.0
    if abs(a - 1.0) < 1e-12:
        integral = math.log(n) - math.log(m)
    else:
        integral = (n ** (1 - a) - m ** (1 - a)) / (1 - a)
    ends = (m**-a + n**-a) / 2 + a * (m ** (-a - 1) - n ** (-a - 1)) / 12
    return head + integral + ends


def _rank_zipf_mean(lo: int, hi: int, theta: float) -> float:
    """Mean prompt of the rank-Zipf law on ``lo..hi`` (see kv_models.RankZipf)."""
    n = hi - lo + 1
    return lo - 1 + _harmonic(n, theta - 1) / _harmonic(n, theta)


def _trace_rows(path: str) -> int | None:
    p = Path(path)
    try:
        if p.suffix.lower() in (".parquet", ".pq"):
            return int(pq.read_metadata(p).num_rows)
        return max(1, p.stat().st_size // 8) if p.is_file() else None
    except Exception:  # noqa: BLE001 - unreadable: the workload reader refuses it in one line
        return None


def _moe_load(sc: Any, fab: _Fabric, load: _Load) -> None:
    wl = sc.workload
    if wl.matrix == "pure_zipf":
        n = int(wl.gpus or fab.hosts // 2)
        total = float(wl.total_bytes_per_sender)
        load.flows = load.pairs = n * n
        load.matrix = float(n * n)
        load.bytes_total = n * total
        load.busiest = max(total, n * total / _harmonic(max(n, 1), 1.0))
        return
    n = int(wl.gpus or fab.hosts)
    load.matrix = float(n * n)
    if wl.matrix != "zipf":
        load.flows = load.pairs = n * n
        load.bytes_total = load.busiest = None
        load.notes.append(f"workload.matrix={wl.matrix}: bytes unknown before reading the file")
        return

    base = PRESETS[wl.model] if wl.model else GENERIC
    top_k = int(wl.top_k or base.top_k)
    token_bytes = float(
        (wl.hidden_size or base.hidden_size) * (wl.bytes_per_element or base.bytes_per_element)
    )
    tokens = int(wl.tokens_per_gpu)
    outside = max(n - min(int(wl.gpus_per_server), n), 1)  # GPUs outside a sender's server
    per_sender = min(outside, tokens * min(top_k, n))
    load.flows = load.pairs = n * max(per_sender, 1)
    load.bytes_total = n * tokens * min(top_k, n) * token_bytes
    load.busiest = max(tokens * min(top_k, n), n * tokens) * token_bytes
    load.matrix += min(n * tokens * top_k, 2_000_000)  # one batch of sampled tokens


def _load(sc: Any, fab: _Fabric) -> _Load:
    wl, load = sc.workload, _Load()
    kind = wl.kind
    hosts = fab.hosts
    if kind == "permutation":
        load.flows = load.pairs = hosts
        load.bytes_total = float(hosts) * wl.size_bytes
        load.busiest = float(wl.size_bytes)
        load.last_start_s = float(wl.start_s)
    elif kind == "incast":
        n = max(1, min(int(wl.senders), hosts - 1))
        load.flows = load.pairs = n
        load.bytes_total = load.busiest = float(n) * wl.size_bytes
        load.last_start_s = float(wl.start_s)
    elif kind == "leaf_to_leaf":
        per_leaf = hosts // max(fab.leaves, 1)
        n = max(1, min(int(wl.hosts or per_leaf), per_leaf))
        load.flows = load.pairs = n
        load.bytes_total = float(n) * wl.size_bytes
        load.busiest = float(wl.size_bytes)
        load.last_start_s = float(wl.start_s)
    elif kind == "collective":
        n = len(wl.hosts) if wl.hosts is not None else hosts
        chunk = float(max(1, wl.size_bytes // max(n, 1)))
        steps = 2 * (n - 1) if wl.op == "ring_allreduce" else n - 1
        load.flows = steps * n
        load.pairs = n if wl.op == "ring_allreduce" else n * (n - 1)
        load.bytes_total = load.flows * chunk
        load.busiest = steps * chunk
        load.last_start_s = float(wl.start_s)
    elif kind == "kv_cache":
        n = int(wl.requests)
        per_token = float(wl.kv_bytes_per_token or get_model(wl.model).kv_bytes_per_token)
        if wl.prompt == "zipf":
            lo, hi = int(wl.prompt_min_tokens), int(wl.prompt_max_tokens)
            tokens = _rank_zipf_mean(lo, hi, float(wl.prompt_theta))
            load.prompt_table = float(hi - lo + 1)
        elif wl.prompt == "fixed":
            tokens = float(wl.prompt_tokens)
        else:
            tokens = float(wl.prompt_max_tokens)
            load.notes.append(
                "workload.prompt=trace: prompts counted as workload.prompt_max_tokens"
            )
        decode = len(wl.decode_hosts) if wl.decode_hosts else hosts - hosts // 2
        prefill = len(wl.prefill_hosts) if wl.prefill_hosts else hosts // 2
        load.flows = n
        load.pairs = min(n, max(decode, 1) * max(prefill, 1))
        load.bytes_total = n * tokens * per_token
        load.busiest = load.bytes_total * min(1.0, 2.0 / max(min(decode, prefill), 1))
        load.last_start_s = (n + 4 * math.sqrt(n) + 4) / float(wl.qps)
    elif kind == "moe":
        _moe_load(sc, fab, load)
        load.last_start_s = float(wl.start_s)
    elif kind == "trace":
        rows = _trace_rows(wl.path)
        load.flows = load.pairs = rows or 0
        load.bytes_total = load.busiest = None
        load.notes.append("workload.kind=trace: bytes and start times unknown before reading")
    return load


def _packets(sc: Any, load: _Load) -> int:
    if load.bytes_total is None:
        return 0
    return int(load.bytes_total / sc.nic.rdma_data_mss) + load.flows


def _rto_s(sc: Any, fab: _Fabric) -> float:
    """The packet engine's RTO: ``nic.rto_us``, else 2 x (base RTT + full-buffer drains)."""
    nic, sw = sc.nic, sc.switch
    if nic.rto_us:
        return us_to_s(float(nic.rto_us))
    delay = us_to_s(float(sc.topology.link_delay_us))
    mtu_bits = (nic.rdma_data_mss + nic.header_bytes) * 8
    unloaded = fab.path_links * (2 * delay + mtu_bits / min(fab.host_bps, fab.fabric_bps))
    base = (
        unloaded if nic.initial_base_rtt_us == "auto" else us_to_s(float(nic.initial_base_rtt_us))
    )
    base = max(base, unloaded)
    if sw.buffer_bytes:
        drain = float(sw.buffer_bytes) * 8 / fab.fabric_bps
    else:
        drain = float(sw.buffer_bdp) * base
    return 2 * (base + (fab.path_links - 1) * drain)


def _packet_duration_s(sc: Any, fab: _Fabric, load: _Load) -> float | None:
    """How long the packet engine's samplers run, at most (see the module docstring)."""
    limit = sc.engine.time_limit_s
    if limit is not None:
        limit = min(float(limit), MAX_TIME_S)
    if load.busiest is None:
        return limit
    wire = 1 + sc.nic.header_bytes / sc.nic.rdma_data_mss
    busy = load.busiest * wire * 8 / fab.host_bps
    rto = _rto_s(sc, fab)
    failing = bool(sc.topology.failed_links) or bool(sc.topology.link_failures)
    tries = sc.nic.max_retries + 1
    tail = rto * ((2**tries if sc.nic.rto_backoff else tries) if failing else 8)
    span = min(load.last_start_s + 2 * busy + tail, MAX_TIME_S)  # no run goes past MAX_TIME_S
    return min(span, float(limit)) if limit is not None else span
