"""Chakra execution traces replayed with their dependencies (``workload.kind: chakra``).

A trace set is one file per rank (:mod:`.chakra` reads them); rank ``r`` runs on host ``r``.
Every node of every rank becomes *units* of one dependency graph:

* a compute node (``COMP_NODE``; memory and other non-communication nodes alike) is a timed
  unit of ``duration_micros x workload.compute_scale``;
* a communication node is an *entry* unit (zero time, after the node's parents) and an *exit*
  unit (zero time, after the node's messages), with messages between them:

  - ``COMM_SEND_NODE`` / ``COMM_RECV_NODE``: the ``k``-th send of rank ``a`` to ``b`` with a
    tag is matched with the ``k``-th receive of ``b`` from ``a`` with that tag; their message
    starts once both nodes are issued (a rendezvous); an unmatched send or receive still makes
    its message, issued by that node alone;
  - ``COMM_COLL_NODE``: the ``k``-th collective of a process group (``pg_name``, its ranks from
    ``workload.trace_groups``, else every rank) on each member is one collective; all-reduce
    runs as a ring, all-to-all as one message to every other member
    (:func:`collective_messages`); a step with no predecessor waits for its sender's and its
    receiver's nodes to be issued, and a rank's node finishes with the last message it sends
    or receives;

* a node's parents are its ``data_deps`` and ``ctrl_deps`` (both must finish first).

A message between ranks of one server (``rank // workload.gpus_per_server``) crosses NVLink: a
timed unit of ``size x 8 / nvlink_gbps``; any other message is a flow on the fabric.  Compute
does not touch the fabric, so the timed units fold into the flows' dependencies: each flow
depends on the flows before it with a gap per dependency, the longest chain of timed units
between them (:attr:`FlowTable.gap_s`), and starts no earlier than the longest chain of timed
units from the start.  The engines release it at ``max(start, finish + gap)``; the timeline
(:func:`fabricsim.workloads.chakra_timeline.replay_timeline`) re-walks the graph with the
flows' times.  A node may run at once with any other whose dependencies allow it (nothing
serializes a rank's compute beyond its dependencies).
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fabricsim.config.models import Scenario
from fabricsim.config.workloads import ChakraWorkload
from fabricsim.errors import ConfigError
from fabricsim.topology.fabric import Fabric
from fabricsim.units import gbps_to_bps
from fabricsim.workloads.base import FabricCounts, FlowTable, WorkloadLoad, register
from fabricsim.workloads.chakra import (
    ALL_TO_ALL,
    COMM_COLL,
    COMM_RECV,
    COMM_SEND,
    COMM_TYPES,
    NODE_TYPES,
    _attrs,
    _check_groups,
    _group,
    _int_attr,
    _peer,
    iter_trace,
    trace_files,
)
from fabricsim.workloads.collective import collective_flows

ALL_REDUCE = 0
REPLAYED = {
    ALL_REDUCE: "all_reduce",
    1: "reduce",
    2: "all_gather",
    5: "broadcast",
    ALL_TO_ALL: "all_to_all",
    7: "reduce_scatter",
    8: "reduce_scatter",  # REDUCE_SCATTER_BLOCK: the same exchange
}
"""The collectives the replay runs (``comm_type`` -> the operation, as NCCL runs it with its
default algorithm: :func:`fabricsim.workloads.collective.collective_flows`)."""
MAX_FOLDED_DEPENDENCIES = 20_000_000
"""The most flow dependencies the folding may make (a dense graph is refused, never swaps)."""


# -- the one place the replay calls the collectives' module ----------------------------------
def collective_messages(
    op: str, ranks: list[int], size_bytes: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[list[int]]]:
    """The messages of one collective over ``ranks``: ``(src, dst, size_bytes, depends_on)``,
    dependencies as indices into these messages.

    ``op`` is run as NCCL runs it with its default algorithm (all_reduce: a ring of ``2(n-1)``
    dependent steps of ``size/n``; all_to_all: ``size/n`` to every other member at once;
    broadcast/reduce: a pipelined chain; all_gather, reduce_scatter: a ring), one channel, the
    root rank 0; ``size_bytes`` is the node's ``comm_size``, read as nccl-tests' size.  This
    adapter is the replay's only call into :mod:`fabricsim.workloads.collective`.
    """
    cf = collective_flows(op, None, np.asarray(ranks, dtype=np.int64), int(size_bytes))
    return cf.src, cf.dst, cf.size_bytes, [list(d) for d in cf.depends_on]


# -- the graph ----------------------------------------------------------------------------------
@dataclass
class ReplayPlan:
    """The replay's dependency graph, for the timeline (``FlowTable.meta["chakra"]``).

    Units ``0..U-1``: ``unit_flow`` (the flow of a fabric message, else -1), ``unit_s`` (a timed
    unit's seconds), ``unit_deps``, ``order`` (a topological order).  Nodes, one row per trace
    node: ``rank``, ``node_id``, ``name``, ``kind``, ``entry`` and ``exit`` (its units: equal
    for a compute node), and ``comm`` (True for a communication node).
    """

    ranks: int
    unit_flow: list[int] = field(default_factory=list)
    unit_s: list[float] = field(default_factory=list)
    unit_deps: list[list[int]] = field(default_factory=list)
    unit_node: list[int] = field(default_factory=list)  # the trace node of a unit, else -1
    order: list[int] = field(default_factory=list)
    rank: list[int] = field(default_factory=list)
    node_id: list[int] = field(default_factory=list)
    name: list[str] = field(default_factory=list)
    kind: list[str] = field(default_factory=list)
    entry: list[int] = field(default_factory=list)
    exit: list[int] = field(default_factory=list)
    comm: list[bool] = field(default_factory=list)
    files: dict[int, str] = field(default_factory=dict)

    def unit(self, seconds: float, deps: list[int], node: int = -1, flow: int = -1) -> int:
        self.unit_flow.append(flow)
        self.unit_s.append(seconds)
        self.unit_deps.append(deps)
        self.unit_node.append(node)
        return len(self.unit_s) - 1

    def where(self, node: int) -> str:
        return f"rank {self.rank[node]} node {self.node_id[node]} ({self.name[node] or 'unnamed'})"


@dataclass
class _Builder:
    sc: Scenario
    fabric: Fabric
    wl: ChakraWorkload
    plan: ReplayPlan
    src: list[int] = field(default_factory=list)
    dst: list[int] = field(default_factory=list)
    size: list[int] = field(default_factory=list)
    flow_node: list[int] = field(default_factory=list)  # the issuing trace node of each flow

    def message(self, src: int, dst: int, size: int, deps: list[int], node: int) -> int:
        """A message's unit: NVLink time inside a server, else a flow on the fabric."""
        gps = self.wl.gpus_per_server
        if src // gps == dst // gps:
            return self.plan.unit(size * 8 / gbps_to_bps(self.wl.nvlink_gbps), deps)
        self.src.append(src)
        self.dst.append(dst)
        self.size.append(size)
        self.flow_node.append(node)
        return self.plan.unit(0.0, deps, flow=len(self.src) - 1)


def _read_nodes(plan: ReplayPlan, files: dict[int, Path], scale: float) -> list[Any]:
    """Every node of every rank into ``plan`` (a compute unit, or entry and exit units), with
    parents checked; returns each node's attributes (for the communication pass)."""
    attrs_of: list[Any] = []
    parents: list[tuple[int, list[int], Path]] = []
    for rank, f in sorted(files.items()):
        plan.files[rank] = f.name
        messages = iter_trace(f)
        next(messages)  # GlobalMetadata
        ids: dict[int, int] = {}
        first = len(plan.rank)
        for node in messages:
            if node.id in ids:
                raise ConfigError(
                    f"workload.path: {f.name}: node id {node.id} appears twice ({node.name!r} "
                    f"and {plan.name[ids[node.id]]!r}); node ids must be unique in a file"
                )
            index = len(plan.rank)
            ids[node.id] = index
            attrs = _attrs(node)
            attrs_of.append((node, attrs))
            plan.rank.append(rank)
            plan.node_id.append(int(node.id))
            plan.name.append(node.name)
            plan.kind.append(_kind(node, attrs, f.name))
            comm = node.type in (COMM_SEND, COMM_RECV, COMM_COLL)
            plan.comm.append(comm)
            seconds = 0.0 if comm else node.duration_micros * 1e-6 * scale
            plan.entry.append(plan.unit(seconds, [], index))
            plan.exit.append(plan.unit(0.0, [], index) if comm else plan.entry[-1])
        for index in range(first, len(plan.rank)):
            node = attrs_of[index][0]
            parents.append((index, _parents(node, ids, f.name), f))
    for index, found, _ in parents:
        plan.unit_deps[plan.entry[index]] = [plan.exit[p] for p in found]
    return attrs_of


def _kind(node: Any, attrs: dict[str, Any], fname: str) -> str:
    if node.type == COMM_SEND:
        return "send"
    if node.type == COMM_RECV:
        return "recv"
    if node.type == COMM_COLL:
        ctype = attrs.get("comm_type")
        if ctype is None:
            raise ConfigError(
                f"workload.path: {fname}: node {node.id} ({node.name or 'unnamed'}) is a "
                f"collective without a comm_type attribute"
            )
        if ctype not in REPLAYED:
            named = COMM_TYPES[ctype] if isinstance(ctype, int) and 0 <= ctype < 10 else ctype
            raise ConfigError(
                f"workload.path: {fname}: node {node.id} ({node.name or 'unnamed'}) is a "
                f"{named} collective; the replay runs "
                + ", ".join(sorted({COMM_TYPES[c] for c in REPLAYED}))
            )
        return REPLAYED[ctype]
    if node.type == 4:
        return "compute"
    return NODE_TYPES[node.type].lower() if 0 <= node.type < len(NODE_TYPES) else "other"


def _parents(node: Any, ids: dict[int, int], fname: str) -> list[int]:
    out: list[int] = []
    for field_name in ("data_deps", "ctrl_deps"):
        for p in getattr(node, field_name):
            if p not in ids:
                raise ConfigError(
                    f"workload.path: {fname}: node {node.id} ({node.name or 'unnamed'}) names "
                    f"parent {p} in {field_name}, which is not a node of that file"
                )
            if ids[p] not in out:
                out.append(ids[p])
    return out


def _point_to_point(b: _Builder, attrs_of: list[Any], n: int) -> None:
    """Sends matched with receives, in file order per (sender, receiver, tag)."""
    plan = b.plan
    sends: dict[tuple[int, int, int], list[int]] = defaultdict(list)
    recvs: dict[tuple[int, int, int], list[int]] = defaultdict(list)
    for index, (node, attrs) in enumerate(attrs_of):
        fname = plan.files[plan.rank[index]]
        if node.type == COMM_SEND:
            key = (plan.rank[index], _peer(attrs, "comm_dst", node, fname, n), _tag(attrs))
            sends[key].append(index)
        elif node.type == COMM_RECV:
            key = (_peer(attrs, "comm_src", node, fname, n), plan.rank[index], _tag(attrs))
            recvs[key].append(index)
    for key in sorted(set(sends) | set(recvs)):
        s_list, r_list = sends.get(key, []), recvs.get(key, [])
        for k in range(max(len(s_list), len(r_list))):
            pair = [x for x in (_at(s_list, k), _at(r_list, k)) if x is not None]
            node, attrs = attrs_of[pair[0]]
            size = _size(attrs, node, plan.files[plan.rank[pair[0]]])
            deps = [plan.entry[x] for x in pair]
            m = b.message(key[0], key[1], size, deps, pair[0])
            for x in pair:
                plan.unit_deps[plan.exit[x]] = [m]


def _tag(attrs: dict[str, Any]) -> int:
    tag = attrs.get("comm_tag", 0)
    return int(tag) if isinstance(tag, int | float) else 0


def _at(items: list[int], k: int) -> int | None:
    return items[k] if k < len(items) else None


def _size(attrs: dict[str, Any], node: Any, fname: str) -> int:
    size = _int_attr(attrs, "comm_size", node, fname)
    if size < 1:
        raise ConfigError(
            f"workload.path: {fname}: node {node.id} ({node.name or 'unnamed'}) has "
            f"comm_size=0; a message carries at least 1 byte"
        )
    return size


def _collectives(b: _Builder, attrs_of: list[Any], n: int) -> None:
    """The ``k``-th collective of each process group on every member rank, as one collective."""
    plan = b.plan
    members = _check_groups(b.wl.trace_groups or {}, n)
    by_group: dict[str, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
    for index, (node, attrs) in enumerate(attrs_of):
        if node.type == COMM_COLL:
            pg = str(attrs.get("pg_name", ""))
            rank = plan.rank[index]
            _group(pg, members, n, rank, plan.files[rank])  # a listed group must hold the rank
            by_group[pg][rank].append(index)
    unused = sorted(set(members) - set(by_group))
    if unused:
        raise ConfigError(
            f"workload.trace_groups.{unused[0]}: no collective of the trace is in process "
            f"group '{unused[0]}' (groups in the trace: {', '.join(map(repr, sorted(by_group)))})"
        )
    for pg in sorted(by_group):
        ranks = [int(r) for r in members.get(pg, np.arange(n))]
        per_rank = by_group[pg]
        counts = {r: len(per_rank.get(r, [])) for r in ranks}
        if len(set(counts.values())) > 1:
            lo = min(ranks, key=lambda r: counts[r])
            hi = max(ranks, key=lambda r: counts[r])
            raise ConfigError(
                f"workload.path: process group '{pg or 'default'}': rank {hi} runs "
                f"{counts[hi]} collectives in it but rank {lo} runs {counts[lo]}; every member "
                f"runs each one (or list the group's ranks in workload.trace_groups)"
            )
        for k in range(counts[ranks[0]]):
            _one_collective(b, attrs_of, ranks, [per_rank[r][k] for r in ranks])


def _one_collective(b: _Builder, attrs_of: list[Any], ranks: list[int], nodes: list[int]) -> None:
    plan = b.plan
    kinds = {plan.kind[x] for x in nodes}
    sizes = [_size(attrs_of[x][1], attrs_of[x][0], plan.files[plan.rank[x]]) for x in nodes]
    first = nodes[0]
    if len(kinds) > 1 or (plan.kind[first] == "all_reduce" and len(set(sizes)) > 1):
        other = next(
            x
            for x in nodes
            if plan.kind[x] != plan.kind[first] or sizes[nodes.index(x)] != sizes[0]
        )
        raise ConfigError(
            f"workload.path: {plan.where(first)} and {plan.where(other)} are one collective "
            f"(the same place in their group's order) but differ: {plan.kind[first]} of "
            f"{sizes[0]} bytes against {plan.kind[other]} of {sizes[nodes.index(other)]} bytes"
        )
    node_of = dict(zip(ranks, nodes, strict=True))
    if len(ranks) == 1:
        plan.unit_deps[plan.exit[first]] = [plan.entry[first]]
        return
    src, dst, size, deps = collective_messages(plan.kind[first], ranks, max(sizes))
    if plan.kind[first] == "all_to_all":  # each rank sends its own comm_size / n to each member
        own = dict(zip(ranks, sizes, strict=True))
        size = np.array([max(1, own[int(s)] // len(ranks)) for s in src], dtype=np.int64)
    units: list[int] = []
    touching: dict[int, list[int]] = defaultdict(list)
    for i in range(len(src)):
        s, d = int(src[i]), int(dst[i])
        before = [units[j] for j in deps[i]] or [
            plan.entry[node_of[s]],
            plan.entry[node_of[d]],
        ]
        units.append(b.message(s, d, int(size[i]), before, node_of[s]))
        touching[s].append(units[-1])
        touching[d].append(units[-1])
    for r in ranks:
        plan.unit_deps[plan.exit[node_of[r]]] = touching[r] or [plan.entry[node_of[r]]]


# -- order and folding ------------------------------------------------------------------------
def _topological(plan: ReplayPlan) -> list[int]:
    """The units in an order where each follows its dependencies; a cycle is refused, naming
    the trace nodes on it."""
    count = len(plan.unit_s)
    waiting = [len(d) for d in plan.unit_deps]
    after: list[list[int]] = [[] for _ in range(count)]
    for u, deps in enumerate(plan.unit_deps):
        for d in deps:
            after[d].append(u)
    ready = [u for u in range(count) if not waiting[u]]
    order: list[int] = []
    while ready:
        u = ready.pop()
        order.append(u)
        for v in after[u]:
            waiting[v] -= 1
            if not waiting[v]:
                ready.append(v)
    if len(order) < count:
        _refuse_cycle(plan, waiting)
    return order


def _refuse_cycle(plan: ReplayPlan, waiting: list[int]) -> None:
    """Walk back from a unit left waiting (each such unit waits on another) until one repeats."""
    left = {u for u, w in enumerate(waiting) if w}
    seen: dict[int, int] = {}
    path: list[int] = []
    u = min(left)
    while u not in seen:
        seen[u] = len(path)
        path.append(u)
        u = next(d for d in plan.unit_deps[u] if d in left)
    loop = path[seen[u] :] + [u]
    nodes: list[int] = []
    for x in reversed(loop):  # parent -> child
        node = plan.unit_node[x]
        if node >= 0 and (not nodes or nodes[-1] != node):
            nodes.append(node)
    ranks = {plan.rank[x] for x in nodes}
    if len(ranks) == 1:
        rank = ranks.pop()
        chain = " -> ".join(plan.where(x).split(" ", 2)[2] for x in nodes)
        raise ConfigError(f"workload.path: {plan.files[rank]}: dependency cycle: {chain}")
    chain = " -> ".join(plan.where(x) for x in nodes)
    raise ConfigError(
        f"workload.path: the ranks wait on each other (a dependency cycle through their "
        f"messages): {chain}"
    )


def _fold(plan: ReplayPlan) -> tuple[np.ndarray, list[list[int]], list[list[float]]]:
    """Each flow's earliest start, the flows it waits for and the gap after each: timed units
    folded away (longest chains, in max-plus)."""
    count = len(plan.unit_s)
    # the longest chain of timed units from the start to the unit (-inf: every chain to it
    # passes a flow)
    base = [-math.inf] * count
    lags: list[dict[int, float]] = [{}] * count  # flow -> the longest gap after it
    flows = sum(1 for f in plan.unit_flow if f >= 0)
    start = np.zeros(flows)
    depends: list[list[int]] = [[] for _ in range(flows)]
    gaps: list[list[float]] = [[] for _ in range(flows)]
    total = 0
    for u in plan.order:
        b = -math.inf if plan.unit_deps[u] else 0.0
        lag: dict[int, float] = {}
        for d in plan.unit_deps[u]:
            f = plan.unit_flow[d]
            if f >= 0:
                lag[f] = max(lag.get(f, 0.0), 0.0)
                continue
            dur = plan.unit_s[d]
            b = max(b, base[d] + dur)
            for g, x in lags[d].items():
                if x + dur > lag.get(g, -1.0):
                    lag[g] = x + dur
        base[u], lags[u] = b, lag
        total += len(lag)
        if total > MAX_FOLDED_DEPENDENCIES:
            raise ConfigError(
                f"workload.path: the trace's dependencies fold into more than "
                f"{MAX_FOLDED_DEPENDENCIES:,} flow dependencies; replay a smaller trace"
            )
        f = plan.unit_flow[u]
        if f >= 0:
            start[f] = max(b, 0.0)
            depends[f] = sorted(lag)
            gaps[f] = [lag[g] for g in depends[f]]
    return start, depends, gaps


# -- the workload ---------------------------------------------------------------------------
def _check_fits(files: dict[int, Path], fabric: Fabric, wl: ChakraWorkload) -> None:
    n, hosts = len(files), fabric.num_hosts
    if n > hosts:
        raise ConfigError(
            f"workload.path: the trace has {n} ranks ({files[0].name} .. {files[n - 1].name}) "
            f"but the fabric has {hosts} hosts; it needs a fabric of at least {n} hosts, one "
            f"per rank (change the topology)"
        )


def _no_fabric_traffic(plan: ReplayPlan, wl: ChakraWorkload) -> ConfigError:
    n, gps = plan.ranks, wl.gpus_per_server
    if not any(plan.comm):
        return ConfigError(
            f"workload.path: {plan.files[0]}: the trace has no send, receive or collective "
            f"node; nothing crosses the fabric"
        )
    if n <= gps:
        return ConfigError(
            f"workload.gpus_per_server: all {n} ranks of the trace sit in one server "
            f"(gpus_per_server={gps}), so every message crosses NVLink and none the fabric; "
            f"set workload.gpus_per_server below {n} (1: each rank a server of its own)"
        )
    return ConfigError(
        f"workload.gpus_per_server: no message of the trace leaves its server "
        f"(gpus_per_server={gps}: ranks r and s share one when r // {gps} == s // {gps})"
    )


def replay_flows(sc: Scenario, fabric: Fabric) -> FlowTable:
    """The flows of a Chakra replay, with their dependencies and gaps (see the module)."""
    wl = sc.workload
    assert isinstance(wl, ChakraWorkload)
    files = trace_files(wl.path)
    _check_fits(files, fabric, wl)
    plan = ReplayPlan(ranks=len(files))
    attrs_of = _read_nodes(plan, files, wl.compute_scale)
    b = _Builder(sc, fabric, wl, plan)
    _point_to_point(b, attrs_of, plan.ranks)
    _collectives(b, attrs_of, plan.ranks)
    plan.order = _topological(plan)
    if not b.src:
        raise _no_fabric_traffic(plan, wl)
    start, depends, gaps = _fold(plan)
    table = FlowTable.build(sc, b.src, b.dst, b.size, start, depends_on=depends, gap_s=gaps)
    table.extra["chakra_node"] = np.array([plan.node_id[x] for x in b.flow_node], dtype=np.int64)
    table.meta["chakra"] = plan
    return table


@functools.cache
def _counted(path: str, stamp: tuple[tuple[str, int, int], ...]) -> tuple[int, int]:
    """The trace's ranks and a bound on its flows (``stamp``: the files' names, sizes and
    times, so a changed file is counted again)."""
    files = trace_files(path)
    n = len(files)
    flows = 0
    for f in files.values():
        messages = iter_trace(f)
        next(messages)
        for node in messages:
            if node.type in (COMM_SEND, COMM_RECV):
                flows += 1
            elif node.type == COMM_COLL:
                flows += 2 * (n - 1)
    return n, flows


def chakra_load(wl: ChakraWorkload, fab: FabricCounts) -> WorkloadLoad:
    """Budget terms: the flows counted from the trace (sends, receives, and each rank's share
    of a collective: at most ``2(n-1)``); bytes are known once the trace is replayed."""
    load = WorkloadLoad(bytes_total=None, busiest=None, packets_key=("workload.path", wl.path))
    load.notes.append("workload.kind=chakra: bytes unknown before replaying the trace")
    try:
        files = trace_files(wl.path)
        stamp = tuple((f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in files.values())
        n, load.flows = _counted(wl.path, stamp)
    except (ConfigError, OSError):  # the replay says what is wrong, in one line
        return load
    load.pairs = min(load.flows, n * (n - 1))
    return load


register("chakra", model=ChakraWorkload, budget=chakra_load)(replay_flows)
