"""Classic stress patterns: permutation, incast, and leaf-to-leaf collective steps."""

from __future__ import annotations

import numpy as np

from fabricsim.config.models import Scenario
from fabricsim.config.workloads import IncastWorkload, LeafToLeafWorkload, PermutationWorkload
from fabricsim.errors import ConfigError
from fabricsim.rng import stream
from fabricsim.topology.fabric import Fabric
from fabricsim.workloads.base import FabricCounts, FlowTable, WorkloadLoad, register


def random_derangement(rng: np.random.Generator, n: int) -> np.ndarray:
    """A uniformly random permutation of ``0..n-1`` with no fixed point (rejection sampling)."""
    if n < 2:
        raise ConfigError("workload: a permutation needs at least 2 hosts")
    while True:
        perm = rng.permutation(n)
        if not np.any(perm == np.arange(n)):
            return perm


def permutation_load(wl: PermutationWorkload, fab: FabricCounts) -> WorkloadLoad:
    """Budget terms: one message per host."""
    hosts = fab.hosts
    return WorkloadLoad(
        flows=hosts,
        pairs=hosts,
        bytes_total=float(hosts) * wl.size_bytes,
        busiest=float(wl.size_bytes),
        last_start_s=float(wl.start_s),
        packets_key=("workload.size_bytes", wl.size_bytes),
    )


@register("permutation", model=PermutationWorkload, budget=permutation_load)
def permutation(sc: Scenario, fabric: Fabric) -> FlowTable:
    wl = sc.workload
    assert isinstance(wl, PermutationWorkload)
    n = fabric.num_hosts
    dst = random_derangement(stream(sc.seed, "workload"), n)
    return FlowTable.build(sc, np.arange(n), dst, np.full(n, wl.size_bytes), np.full(n, wl.start_s))


def incast_load(wl: IncastWorkload, fab: FabricCounts) -> WorkloadLoad:
    """Budget terms: ``senders`` messages into one receiver."""
    n = max(1, min(int(wl.senders), fab.hosts - 1))
    total = float(n) * wl.size_bytes
    return WorkloadLoad(
        flows=n,
        pairs=n,
        bytes_total=total,
        busiest=total,
        last_start_s=float(wl.start_s),
        flows_key=("workload.senders", wl.senders),
        packets_key=("workload.size_bytes", wl.size_bytes),
    )


@register("incast", model=IncastWorkload, budget=incast_load)
def incast(sc: Scenario, fabric: Fabric) -> FlowTable:
    wl = sc.workload
    assert isinstance(wl, IncastWorkload)
    n = fabric.num_hosts
    if wl.receiver >= n:
        raise ConfigError(f"workload.receiver: must be a host index 0..{n - 1} (got {wl.receiver})")
    if wl.senders > n - 1:
        raise ConfigError(f"workload.senders: at most {n - 1} on this fabric (got {wl.senders})")
    others = np.array([h for h in range(n) if h != wl.receiver])
    # senders spread over the fabric: far hosts first (other pods / leaves), in index order
    far = others[fabric.host_leaf[others] != fabric.host_leaf[wl.receiver]]
    near = others[fabric.host_leaf[others] == fabric.host_leaf[wl.receiver]]
    senders = np.concatenate([far, near])[: wl.senders]
    k = len(senders)
    return FlowTable.build(
        sc, senders, np.full(k, wl.receiver), np.full(k, wl.size_bytes), np.full(k, wl.start_s)
    )


def leaf_to_leaf_load(wl: LeafToLeafWorkload, fab: FabricCounts) -> WorkloadLoad:
    """Budget terms: one message per sending host of the leaf."""
    per_leaf = fab.hosts // max(fab.leaves, 1)
    n = max(1, min(int(wl.hosts or per_leaf), per_leaf))
    return WorkloadLoad(
        flows=n,
        pairs=n,
        bytes_total=float(n) * wl.size_bytes,
        busiest=float(wl.size_bytes),
        last_start_s=float(wl.start_s),
        packets_key=("workload.size_bytes", wl.size_bytes),
    )


@register("leaf_to_leaf", model=LeafToLeafWorkload, budget=leaf_to_leaf_load)
def leaf_to_leaf(sc: Scenario, fabric: Fabric) -> FlowTable:
    wl = sc.workload
    assert isinstance(wl, LeafToLeafWorkload)
    leaves = len(fabric.leaves)
    for name, val in (("src_leaf", wl.src_leaf), ("dst_leaf", wl.dst_leaf)):
        if val >= leaves:
            raise ConfigError(f"workload.{name}: must be a leaf index 0..{leaves - 1} (got {val})")
    if wl.src_leaf == wl.dst_leaf:
        raise ConfigError("workload.dst_leaf: must differ from workload.src_leaf")
    hosts_src = np.flatnonzero(fabric.host_leaf == fabric.leaves[wl.src_leaf])
    hosts_dst = np.flatnonzero(fabric.host_leaf == fabric.leaves[wl.dst_leaf])
    k = min(len(hosts_src), len(hosts_dst))
    if wl.hosts is not None:
        if wl.hosts > k:
            raise ConfigError(f"workload.hosts: at most {k} on this fabric (got {wl.hosts})")
        k = wl.hosts
    table = FlowTable.build(
        sc, hosts_src[:k], hosts_dst[:k], np.full(k, wl.size_bytes), np.full(k, wl.start_s)
    )
    table.meta["step"] = True
    return table
