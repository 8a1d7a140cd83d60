"""Synchronized collectives with per-step dependencies: ring all-reduce and all-to-all.

Ring all-reduce of ``S`` bytes over ``n`` hosts: ``2(n-1)`` steps; in every step each host sends
``S/n`` to its ring successor.  Step ``s`` of host ``i`` starts when host ``i`` has finished
sending step ``s-1`` and has received step ``s-1`` from its predecessor.  All-to-all: every host
sends ``S/n`` to every other host at once.  Reported: collective completion time, algorithm
bandwidth ``S / time`` and bus bandwidth (all-reduce: ``algbw * 2(n-1)/n``; all-to-all:
``algbw * (n-1)/n``), as nccl-tests defines them.
"""

from __future__ import annotations

import numpy as np

from fabricsim.config.models import Scenario
from fabricsim.config.workloads import CollectiveWorkload
from fabricsim.errors import ConfigError
from fabricsim.topology.fabric import Fabric
from fabricsim.workloads.base import FabricCounts, FlowTable, WorkloadLoad, register


def _hosts(wl: CollectiveWorkload, fabric: Fabric) -> np.ndarray:
    hosts = np.arange(fabric.num_hosts) if wl.hosts is None else np.array(wl.hosts, dtype=np.int64)
    if len(hosts) < 2:
        raise ConfigError("workload.hosts: a collective needs at least 2 hosts")
    if len(np.unique(hosts)) != len(hosts):
        raise ConfigError("workload.hosts: hosts must be distinct")
    bad = hosts[(hosts < 0) | (hosts >= fabric.num_hosts)]
    if len(bad):
        raise ConfigError(
            f"workload.hosts: host {int(bad[0])} outside the fabric (0..{fabric.num_hosts - 1})"
        )
    return hosts


def collective_load(wl: CollectiveWorkload, fab: FabricCounts) -> WorkloadLoad:
    """Budget terms: every step's chunk between its pairs."""
    n = len(wl.hosts) if wl.hosts is not None else fab.hosts
    chunk = float(max(1, wl.size_bytes // max(n, 1)))
    steps = 2 * (n - 1) if wl.op == "ring_allreduce" else n - 1
    flows = steps * n
    return WorkloadLoad(
        flows=flows,
        pairs=n if wl.op == "ring_allreduce" else n * (n - 1),
        bytes_total=flows * chunk,
        busiest=steps * chunk,
        last_start_s=float(wl.start_s),
        flows_key=None if wl.hosts is None else ("workload.hosts", f"[{len(wl.hosts)} hosts]"),
        packets_key=("workload.size_bytes", wl.size_bytes),
    )


@register("collective", model=CollectiveWorkload, budget=collective_load)
def collective(sc: Scenario, fabric: Fabric) -> FlowTable:
    wl = sc.workload
    assert isinstance(wl, CollectiveWorkload)
    hosts = _hosts(wl, fabric)
    n = len(hosts)
    chunk = max(1, wl.size_bytes // n)
    if wl.op == "all_to_all":
        src = np.repeat(hosts, n - 1)
        dst = np.array([h for i in range(n) for h in np.roll(hosts, -i)[1:]])
        table = FlowTable.build(
            sc, src, dst, np.full(len(src), chunk), np.full(len(src), wl.start_s)
        )
    else:
        steps = 2 * (n - 1)
        src = np.tile(hosts, steps)
        dst = np.tile(np.roll(hosts, -1), steps)
        deps: list[list[int]] = []
        for s in range(steps):
            for i in range(n):
                deps.append([] if s == 0 else [(s - 1) * n + i, (s - 1) * n + (i - 1) % n])
        size = np.full(len(src), chunk)
        table = FlowTable.build(sc, src, dst, size, np.full(len(src), wl.start_s), depends_on=deps)
        table.extra["step"] = np.repeat(np.arange(steps), n)
    table.meta.update({"collective": wl.op, "participants": n, "buffer_bytes": wl.size_bytes})
    return table
