"""Counts from the config alone, for the memory budget (:mod:`fabricsim.experiments.budget`).

The fabric's size (nodes, links, paths) and the workload's load (flows, bytes, pairs, MoE
matrix and prompt-table entries) that :func:`~fabricsim.experiments.budget.estimate` prices.
The load is each ``workload.kind``'s own: the budget terms it registers beside its generator
(:class:`fabricsim.workloads.base.WorkloadKind`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from fabricsim import workloads  # noqa: F401  (registers every kind's budget terms)
from fabricsim.units import MAX_TIME_S, us_to_s
from fabricsim.workloads.base import WorkloadLoad, workload_kind


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


_Load = WorkloadLoad  # the workload's counts: each kind's registered budget terms


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


def _load(sc: Any, fab: _Fabric) -> _Load:
    """The workload's load: the budget terms its kind registered (:func:`fabricsim.workloads.register`)."""
    registered = workload_kind(sc.workload.kind)
    return _Load() if registered is None else registered.budget(sc.workload, fab)


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
