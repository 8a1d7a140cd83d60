"""Collectives as NCCL runs them: operations, algorithms, channels, servers, a size sweep.

A collective is a DAG of flows (:mod:`fabricsim.workloads.collective_algos` builds each
algorithm): a flow starts when the flows whose data it needs have finished, on both engines.
``channels`` parallel rings/trees each carry ``1/channels`` of the data.  Where ranks sit in
servers (``gpus_per_server``; a rail-optimized fabric's ``rails``), channel ``k``'s ring
rotates every server's GPUs by ``k``, so its hops between servers leave by rail ``k``'s NIC
(with ``topology.pxn`` the fabric sends them there over NVLink, as NCCL's PXN does).
``hierarchical`` runs the servers' part over NVLink first (all_reduce: reduce_scatter inside
each server, all_reduce across servers among the GPUs of one local index, all_gather inside).
A size sweep runs its sizes one after another: each size starts when the previous one ended.

:func:`collective_flows` is the one entry point for other workloads (a Chakra trace's
collective node).  Sizes, formulas and bus-bandwidth factors: ``docs/collectives.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from fabricsim.config.models import Scenario
from fabricsim.config.workloads import COLLECTIVE_ALGORITHMS, CollectiveWorkload
from fabricsim.errors import ConfigError
from fabricsim.topology.fabric import Fabric
from fabricsim.workloads import collective_algos as algos
from fabricsim.workloads.base import FabricCounts, FlowTable, WorkloadLoad, register

BUS_FACTORS: dict[str, Callable[[int], float]] = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "send_recv": lambda n: 1.0,
}
"""busbw = algbw x factor(n), as nccl-tests' PERFORMANCE.md defines it (send_recv: 1)."""


@dataclass(eq=False)
class CollectiveFlows:
    """One collective's flows (ids ``0..len-1``), as :func:`collective_flows` returns them.

    ``depends_on`` holds ids within these flows; ``first`` the flows where a rank's part
    begins (each waits for no earlier flow of its own sender: make them wait for whatever
    must precede the collective); ``last`` the flows nothing waits for (when they are done,
    the collective is); ``step`` each flow's depth in the DAG, ``channel`` its channel,
    ``phase`` its phase (hierarchical: 0 inside servers, 1 across, 2 inside again).
    """

    src: np.ndarray
    dst: np.ndarray
    size_bytes: np.ndarray
    depends_on: list[list[int]]
    first: np.ndarray
    last: np.ndarray
    step: np.ndarray
    channel: np.ndarray
    phase: np.ndarray

    def __len__(self) -> int:
        return len(self.src)


def collective_flows(
    op: str,
    algorithm: str | None,
    ranks: np.ndarray,
    size_bytes: int,
    channels: int = 1,
    *,
    root: int = 0,
    chunk_bytes: int = 1024**2,
    gpus_per_server: int = 1,
    hierarchical: bool = False,
) -> CollectiveFlows:
    """The flows of one collective over ``ranks`` (host ids, in rank order).

    Parameters
    ----------
    op : str
        ``all_reduce``, ``all_gather``, ``reduce_scatter``, ``broadcast``, ``reduce``,
        ``all_to_all`` or ``send_recv``.
    algorithm : str or None
        ``ring``, ``tree``, ``pairwise`` or ``direct`` (None: the operation's default).
    ranks : numpy.ndarray
        Distinct host ids, at least 2.
    size_bytes : int
        nccl-tests' size: the buffer per rank (all_reduce, broadcast, reduce, send_recv) or the
        whole array of ``n`` chunks (all_gather, reduce_scatter, all_to_all).
    channels : int
        Parallel rings/trees, each with ``1/channels`` of the bytes.
    root : int
        broadcast/reduce: the root's index in ``ranks``.
    chunk_bytes : int
        Pipeline piece of tree, broadcast and reduce (at most 64 pieces per channel).
    gpus_per_server : int
        Host ``h`` sits in server ``h // gpus_per_server``; rings go rail by rail.
    hierarchical : bool
        Inside servers first, then across them (needs every server to hold as many ranks).

    Examples
    --------
    >>> import numpy as np
    >>> c = collective_flows("all_reduce", "ring", np.arange(4), 4096)
    >>> len(c), c.first.tolist(), c.last.tolist(), int(c.step.max())
    (24, [0, 1, 2, 3], [20, 21, 22, 23], 5)
    """
    ranks = np.asarray(ranks, dtype=np.int64)
    algorithm = algorithm or COLLECTIVE_ALGORITHMS[op][0]
    if algorithm not in COLLECTIVE_ALGORITHMS[op]:
        raise ConfigError(
            f"workload.algorithm: {op} runs with {', '.join(COLLECTIVE_ALGORITHMS[op])} "
            f"(got {algorithm})"
        )
    if not 0 <= root < len(ranks):
        raise ConfigError(f"workload.root: a rank index in 0..{len(ranks) - 1} (got {root})")
    spec = _Spec(op, algorithm, size_bytes, channels, chunk_bytes, gpus_per_server)
    dag = algos.Dag()
    phase: list[int] = []
    if hierarchical:
        prev: list[tuple[np.ndarray, np.ndarray]] = []  # (group ranks, its sinks)
        for i, (sub, groups, sub_root) in enumerate(_hier_phases(spec, ranks, int(ranks[root]))):
            done = []
            for group in groups:
                if len(group) < 2:
                    continue
                lo = len(dag)
                _flat(dag, sub, group, _root_in(group, sub_root))
                done.append((group, _wait_for(dag, lo, prev)))
            phase.extend([i] * (len(dag) - len(phase)))
            prev = done or prev
    else:
        _flat(dag, spec, ranks, int(ranks[root]))
        phase = [0] * len(dag)
    src = np.array(dag.src, dtype=np.int64)
    return CollectiveFlows(
        src,
        np.array(dag.dst, dtype=np.int64),
        np.array(dag.size, dtype=np.int64),
        dag.deps,
        algos.entries(src, dag.deps),
        algos.sinks(len(dag), dag.deps),
        algos.levels(dag.deps),
        np.array(dag.channel, dtype=np.int64),
        np.array(phase, dtype=np.int64),
    )


@dataclass(frozen=True)
class _Spec:
    op: str
    algorithm: str
    size: int
    channels: int
    chunk_bytes: int
    gpus_per_server: int

    def but(self, op: str, algorithm: str, size: int) -> _Spec:
        return _Spec(
            op, algorithm, max(1, size), self.channels, self.chunk_bytes, self.gpus_per_server
        )


def _flat(dag: algos.Dag, spec: _Spec, ranks: np.ndarray, root_host: int) -> None:
    """One algorithm over ``ranks``, channel by channel."""
    for k, ch_bytes in enumerate(algos.split_bytes(spec.size, spec.channels)):
        dag.ch = k
        order = ring_order(ranks, k, spec.gpus_per_server)
        if spec.op in ("broadcast", "reduce"):
            start = int(np.flatnonzero(order == root_host)[0])
            if spec.algorithm == "tree":
                algos.tree(dag, spec.op, np.roll(order, -start), ch_bytes, spec.chunk_bytes)
            else:  # broadcast from the root along the ring; reduce along it into the root
                shift = start if spec.op == "broadcast" else start + 1
                algos.chain(dag, np.roll(order, -shift), ch_bytes, spec.chunk_bytes)
        elif spec.algorithm == "tree":
            algos.tree(dag, spec.op, order, ch_bytes, spec.chunk_bytes)
        elif spec.algorithm == "direct":
            algos.direct(dag, ranks, ch_bytes)
        else:
            algos.ring(dag, spec.op, ranks if spec.op == "all_to_all" else order, ch_bytes)


def ring_order(ranks: np.ndarray, channel: int, gpus_per_server: int) -> np.ndarray:
    """Channel ``channel``'s ring: ``ranks``, each server's run of GPUs rotated by the channel.

    A ring then leaves every server from GPU ``channel - 1`` to the next server's GPU
    ``channel`` (mod the GPUs per server), so channels spread over the rails as NCCL's rings
    do; ranks not in whole runs of ``gpus_per_server`` keep their order.

    >>> ring_order(np.arange(8), 1, 4).tolist()
    [1, 2, 3, 0, 5, 6, 7, 4]
    """
    g = gpus_per_server
    if g <= 1 or len(ranks) % g or len(ranks) == g:
        return ranks
    grid = ranks.reshape(-1, g)
    if np.any(grid // g != grid[:, :1] // g):
        return ranks
    return np.roll(grid, -(channel % g), axis=1).reshape(-1)


def servers_grid(ranks: np.ndarray, gpus_per_server: int) -> np.ndarray:
    """Ranks as a (servers, GPUs each) grid by ``host // gpus_per_server``, in rank order."""
    server = ranks // gpus_per_server
    keys, counts = np.unique(server, return_counts=True)
    if gpus_per_server <= 1 or len(set(counts.tolist())) != 1:
        raise ConfigError(
            "workload.hierarchical: needs ranks in servers of equal size; set "
            f"workload.gpus_per_server (now {gpus_per_server}) or use a rail_optimized fabric "
            "(its topology.rails)"
        )
    return np.stack([ranks[server == k] for k in keys])


_Phase = tuple[_Spec, list[np.ndarray], "int | np.ndarray | None"]


def _hier_phases(spec: _Spec, ranks: np.ndarray, root: int) -> list[_Phase]:
    """(spec, groups, root) per phase of the hierarchical collective."""
    grid = servers_grid(ranks, spec.gpus_per_server)
    per = grid.shape[1]
    intra = list(grid)
    inter = list(grid.T)
    col = int(np.nonzero(grid == root)[1][0])
    s = spec
    phases: dict[str, list[_Phase]] = {
        "all_reduce": [
            (s.but("reduce_scatter", "ring", s.size), intra, None),
            (s.but("all_reduce", s.algorithm, s.size // per), inter, None),
            (s.but("all_gather", "ring", s.size), intra, None),
        ],
        "reduce_scatter": [
            (s.but("reduce_scatter", "ring", s.size), intra, None),
            (s.but("reduce_scatter", "ring", s.size // per), inter, None),
        ],
        "all_gather": [
            (s.but("all_gather", "ring", s.size // per), inter, None),
            (s.but("all_gather", "ring", s.size), intra, None),
        ],
        "broadcast": [
            (s.but("broadcast", s.algorithm, s.size), [grid[:, col]], root),
            (s.but("broadcast", s.algorithm, s.size), intra, grid[:, col]),
        ],
        "reduce": [
            (s.but("reduce", s.algorithm, s.size), intra, grid[:, col]),
            (s.but("reduce", s.algorithm, s.size), [grid[:, col]], root),
        ],
    }
    return phases[spec.op]


def _root_in(group: np.ndarray, roots: int | np.ndarray | None) -> int:
    """The group's root: the one of ``roots`` it holds (unrooted phases: its first rank)."""
    if roots is None:
        return int(group[0])
    hit = np.intersect1d(group, np.atleast_1d(roots))
    return int(hit[0])


def _wait_for(dag: algos.Dag, lo: int, prev: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Make the group's flows ``lo..`` begin after the previous phase's groups their senders
    were in; return the group's sinks (global ids)."""
    n = len(dag) - lo
    deps = [[d - lo for d in dag.deps[i]] for i in range(lo, len(dag))]
    src = np.array(dag.src[lo:], dtype=np.int64)
    for i in algos.entries(src, deps):
        before = [sinks for group, sinks in prev if src[i] in group]
        if before:
            dag.deps[lo + i] = sorted(set(dag.deps[lo + i]).union(*(s.tolist() for s in before)))
    return algos.sinks(n, deps) + lo


# -- the workload kind ------------------------------------------------------------------------
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
    if wl.root >= len(hosts):
        raise ConfigError(f"workload.root: a rank index in 0..{len(hosts) - 1} (got {wl.root})")
    return hosts


def gpus_per_server(sc: Scenario) -> int:
    """``workload.gpus_per_server``, else the rail-optimized fabric's rails, else 1."""
    wl = sc.workload
    assert isinstance(wl, CollectiveWorkload)
    if wl.gpus_per_server is not None:
        return wl.gpus_per_server
    return sc.topology.rails if sc.topology.kind == "rail_optimized" else 1


def collective_load(wl: CollectiveWorkload, fab: FabricCounts) -> WorkloadLoad:
    """Budget terms from the config: flows and bytes per size, summed over the sweep."""
    n = len(wl.hosts) if wl.hosts is not None else fab.hosts
    n = max(n, 2)
    op, algo, c = wl.operation, wl.algo, wl.channels
    flows = 0
    total = busiest = 0.0
    for size in wl.size_list:  # hierarchical: at most the flat collective's flows and bytes
        p = algos.pieces(max(1, size // c), wl.chunk_bytes)  # a chain's pieces
        half = algos.pieces(max(1, size // (2 * c)), wl.chunk_bytes)  # a tree's, per half
        tree = algo == "tree"
        per_channel = {
            "all_reduce": 4 * (n - 1) * half if tree else 2 * (n - 1) * n,
            "send_recv": n,
            "broadcast": 2 * (n - 1) * half if tree else (n - 1) * p,
            "reduce": 2 * (n - 1) * half if tree else (n - 1) * p,
        }.get(op, (n - 1) * n)
        flows += per_channel * c
        moved = {"all_reduce": 2 * (n - 1), "send_recv": n}.get(op, n - 1) * float(size)
        total += moved
        busiest += max(moved / n, float(size))
    return WorkloadLoad(
        flows=flows,
        pairs=min(flows, n * (n - 1)),
        bytes_total=total,
        busiest=busiest,
        last_start_s=float(wl.start_s),
        flows_key=None if wl.hosts is None else ("workload.hosts", f"[{len(wl.hosts)} hosts]"),
        packets_key=("workload.sizes", len(wl.size_list))
        if wl.sizes is not None
        else ("workload.size_bytes", wl.size_bytes),
    )


@register("collective", model=CollectiveWorkload, budget=collective_load)
def collective(sc: Scenario, fabric: Fabric) -> FlowTable:
    """The scenario's collective (each size of a sweep after the previous one)."""
    wl = sc.workload
    assert isinstance(wl, CollectiveWorkload)
    hosts = _hosts(wl, fabric)
    g = gpus_per_server(sc)
    cols: dict[str, list[np.ndarray]] = {
        k: [] for k in ("src", "dst", "size", "step", "channel", "phase", "size_index")
    }
    deps: list[list[int]] = []
    before: list[int] = []  # the previous size's last flows
    steps = 0  # a sweep's steps continue from size to size (a step is one in the whole run)
    for k, size in enumerate(wl.size_list):
        c = collective_flows(
            wl.operation, wl.algo, hosts, size, wl.channels, root=wl.root,
            chunk_bytes=wl.chunk_bytes, gpus_per_server=g, hierarchical=wl.hierarchical,
        )  # fmt: skip
        base = len(deps)
        deps.extend([d + base for d in dep] for dep in c.depends_on)
        for i in c.first:
            deps[base + int(i)] = before + deps[base + int(i)]
        before = (c.last + base).tolist()
        for name, col in (("src", c.src), ("dst", c.dst), ("size", c.size_bytes),
                          ("step", c.step + steps), ("channel", c.channel),
                          ("phase", c.phase)):  # fmt: skip
            cols[name].append(col)
        steps += int(c.step.max()) + 1
        cols["size_index"].append(np.full(len(c), k, dtype=np.int64))
    joined = {k: np.concatenate(v) for k, v in cols.items()}
    table = FlowTable.build(
        sc,
        joined["src"],
        joined["dst"],
        joined["size"],
        np.full(len(deps), wl.start_s),
        depends_on=deps,
    )
    for name in ("step", "channel", "phase", "size_index"):
        table.extra[name] = joined[name]
    table.meta.update(
        {
            "collective": wl.operation,
            "algorithm": wl.algo,
            "participants": len(hosts),
            "buffer_bytes": wl.size_list[-1],
            "sizes": wl.size_list,
        }
    )
    return table
