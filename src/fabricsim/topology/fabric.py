"""The immutable fabric description: nodes, directed links, and ECMP groups.

Hosts are nodes ``0 .. num_hosts - 1``.  A link is one direction with a rate, a delay and a
name ``A->B`` (``A->B#p`` for the ``p``-th extra parallel link between the same two switches).
ECMP groups are derived from hop distances over the usable links: the group of switch ``s``
toward host ``d`` is every out-link of ``s`` that brings it one hop closer to ``d``'s leaf (or
the leaf's downlink to ``d``).

A path's label (the ``path`` column) names the switches it crosses, joined by ``>``; a switch
reached over a parallel link carries that link's suffix, so the label names every link:
``leaf0>spine1#1>leaf3`` went up ``leaf0->spine1#1`` and down ``spine1->leaf3``.  Without
parallel links, labels are plain switch names.  :func:`label_nodes` and :func:`label_links`
read a label back.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from fabricsim.units import ps_to_s, transmit_ps

HOST, LEAF, SPINE, CORE, NIC, NVSWITCH = 0, 1, 2, 3, 4, 5
TIER_NAMES = {
    HOST: "host",
    LEAF: "leaf",
    SPINE: "spine",
    CORE: "core",
    NIC: "nic",
    NVSWITCH: "nvswitch",
}
"""Tiers name a node's role (and feed the tier-dependent hashes).  A multi-plane fabric's NIC
nodes (``nic<h>``, the host's ports into the planes) are tier ``NIC``, as are a PXN rail
fabric's (each GPU's NIC, with a port to its server's NVSwitch ``nvs<s>``, tier
``NVSWITCH``).  The order of nodes from the hosts up is their *rank*
(:attr:`Fabric.node_rank`): the tier, except where there are NIC nodes: they are rank 1, and
the switches above them one rank above their tier (an NVSwitch is rank 2)."""
#: separates a parallel link's index from the node name in link names and path labels
PARALLEL_MARK = "#"


def label_hops(label: str) -> list[str]:
    """The hops of one path label: each switch name with its parallel-link suffix, if any.

    Examples
    --------
    >>> label_hops("leaf0>spine1#1>leaf3")
    ['leaf0', 'spine1#1', 'leaf3']
    """
    return label.split(">") if label else []


def label_nodes(label: str) -> list[str]:
    """Switch names along one path label, parallel-link suffixes dropped.

    Examples
    --------
    >>> label_nodes("leaf0>spine1#1>leaf3#1")
    ['leaf0', 'spine1', 'leaf3']
    """
    return [hop.partition(PARALLEL_MARK)[0] for hop in label_hops(label)]


def label_links(label: str) -> list[str]:
    """Names of the switch-to-switch links along one path label (host links not included).

    Examples
    --------
    >>> label_links("leaf0>spine1#1>leaf3")
    ['leaf0->spine1#1', 'spine1->leaf3']
    >>> label_links("leaf0")
    []
    """
    hops = label_hops(label)
    return [f"{a.partition(PARALLEL_MARK)[0]}->{b}" for a, b in zip(hops, hops[1:], strict=False)]


@dataclass(eq=False)
class Fabric:
    """A built fabric.  Treat as read-only once built."""

    kind: str
    node_names: list[str]
    node_tier: np.ndarray  # int8: HOST, LEAF (leaf/edge), SPINE (spine/agg), CORE
    num_hosts: int
    host_ip: np.ndarray  # uint32
    link_src: np.ndarray  # int32 node ids
    link_dst: np.ndarray
    link_rate_bps: np.ndarray  # float64, degradation applied
    link_nominal_bps: np.ndarray  # float64, before degradation
    link_delay_ps: np.ndarray  # int64
    link_failed: np.ndarray  # bool
    link_names: list[str]
    host_leaf: np.ndarray  # node id of each host's leaf
    host_uplink: np.ndarray  # link id host -> leaf
    host_downlink: np.ndarray  # link id leaf -> host
    leaves: np.ndarray  # node ids of leaf/edge switches
    top_switches: np.ndarray  # node ids whose flows the spine timeline counts
    withdraw_failed: bool
    oversubscription: float
    pod_of_node: np.ndarray  # pod index (fat tree) or -1
    node_rank: np.ndarray | None = None  # distance from the hosts up (None: the tier)
    link_withdrawn: np.ndarray | None = None  # bool: down and out of routing (failed switches)
    planes: int = 1  # multi_plane: plane fabrics (1 otherwise)
    node_plane: np.ndarray | None = None  # multi_plane: plane of each switch, -1 hosts and NICs
    rails: int = 0  # a PXN rail fabric: GPUs per server (its NVSwitch forwards by rail)
    out_links: list[np.ndarray] = field(default_factory=list)
    link_index: dict[str, int] = field(default_factory=dict)
    _dist: np.ndarray | None = None  # (num_leaves, switches) hops to each leaf
    _leaf_row: dict[int, int] = field(default_factory=dict)
    _groups: dict[int, np.ndarray] = field(default_factory=dict)
    _leaf_groups: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=dict)
    # usable switch-to-switch links by (src, id), their ends, whether each goes up a tier
    _fabric_links: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
    _n_up: np.ndarray | None = None  # usable up-links per node
    _up: tuple[np.ndarray, np.ndarray] = (np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64))
    _hop_cache: dict[int, tuple[list[int], list[int]]] = field(default_factory=dict)
    _into_nic: np.ndarray | None = None  # per usable switch link: into a NIC node
    _nv_rail: np.ndarray | None = None  # per usable switch link from an NVSwitch: its NIC's rail
    link_hop: list[str] = field(default_factory=list)  # label of the node each link reaches

    def __post_init__(self) -> None:
        n = len(self.node_names)
        order = np.argsort(self.link_src, kind="stable")
        bounds = np.searchsorted(self.link_src[order], np.arange(n + 1))
        self.out_links = [order[bounds[i] : bounds[i + 1]] for i in range(n)]
        self.link_index = {name: i for i, name in enumerate(self.link_names)}
        if self.node_rank is None:
            self.node_rank = self.node_tier
        self.link_hop = self._hops()
        self._leaf_row = {int(leaf): i for i, leaf in enumerate(self.leaves)}
        self._dist = self._distances()

    # -- basic facts -----------------------------------------------------------------------
    @property
    def num_nodes(self) -> int:
        return len(self.node_names)

    @property
    def num_links(self) -> int:
        return len(self.link_names)

    @property
    def host_names(self) -> list[str]:
        return self.node_names[: self.num_hosts]

    def usable(self, link: int) -> bool:
        """Whether routing may use ``link`` (failed links are withdrawn only in withdraw mode;
        the links of a failed switch always)."""
        if self.link_withdrawn is not None and self.link_withdrawn[link]:
            return False
        return not (self.withdraw_failed and self.link_failed[link])

    def usable_links(self) -> np.ndarray:
        """:meth:`usable` of every link, as a bool array."""
        ok = ~self.link_failed if self.withdraw_failed else np.ones(self.num_links, dtype=bool)
        if self.link_withdrawn is not None:
            ok &= ~self.link_withdrawn
        return ok

    def host_rate_bps(self, host: int) -> float:
        return float(self.link_rate_bps[self.host_uplink[host]])

    def _hops(self) -> list[str]:
        """Per link, the node it reaches, with the link's parallel suffix (``spine1#1``) if any."""
        names = self.node_names
        dst = self.link_dst.tolist()
        hops = [names[d] for d in dst]
        for link, name in enumerate(self.link_names):
            if PARALLEL_MARK in name:  # node names never hold the mark; link names may
                hops[link] += name[name.rindex(PARALLEL_MARK) :]
        return hops

    # -- routing ---------------------------------------------------------------------------
    def _distances(self, direct: bool = False) -> np.ndarray:
        """Hops from every switch to every leaf over usable switch-to-switch links (-1: none):
        row = the leaf's row (``_leaf_row``), column = switch id - ``num_hosts`` (perf: no
        host columns, which were 93 % of the table at k = 64: 580 MB).

        A breadth-first search from the leaves over the reversed links, one level per step on
        arrays of (leaf row, node) pairs, a block of leaves at a time so that a level's pairs
        stay within ``BFS_PAIRS`` (perf: no graph library to import, which cost a third of a
        second of every run's start).
        """
        h = self.num_hosts
        n = self.num_nodes - h
        ok = self.usable_links() & (self.link_src >= h) & (self.link_dst >= h)
        # reversed links: into each switch, from the switches linked to it (ids - h)
        order = np.argsort(self.link_dst[ok], kind="stable")
        into = self.link_dst[ok][order].astype(np.int64) - h
        frm = self.link_src[ok][order].astype(np.int64) - h
        first = np.searchsorted(into, np.arange(n))
        count = np.searchsorted(into, np.arange(n), side="right") - first
        leaves = np.asarray(self.leaves, dtype=np.int64) - h
        if direct or not (self.node_tier[self.leaves] == NIC).all():
            return _bfs(leaves, n, first, count, frm, int(ok.sum()))
        # NIC nodes (one per host) are the leaves: search from the switches linked into them
        # (a few per leaf, perf: 4x fewer rows at 2 planes) and take a NIC's distance as one
        # more than its nearest such neighbour's: d(v, nic) = 1 + min over u -> nic of d(v, u)
        is_leaf = np.zeros(n, dtype=bool)
        is_leaf[leaves] = True
        pairs = is_leaf[into]  # reversed links into a leaf: (leaf, the switch it comes from)
        attach, back = np.unique(frm[pairs], return_inverse=True)
        near = _bfs(attach, n, first, count, frm, int(ok.sum()))
        near = np.where(near < 0, np.iinfo(np.int32).max - 1, near)
        row_of = np.full(n, -1, dtype=np.int64)
        row_of[leaves] = np.arange(len(leaves))
        best = np.full((len(leaves), n), np.iinfo(np.int32).max - 1, dtype=np.int32)
        rows, via = row_of[into[pairs]], back
        while len(rows):  # one in-neighbour per leaf per round (a NIC has one per plane)
            head = np.unique(rows, return_index=True)[1]
            best[rows[head]] = np.minimum(best[rows[head]], near[via[head]] + 1)
            keep = np.ones(len(rows), dtype=bool)
            keep[head] = False
            rows, via = rows[keep], via[keep]
        best[np.arange(len(leaves)), leaves] = 0
        return np.where(best >= np.iinfo(np.int32).max - 1, -1, best).astype(np.int32)

    def ecmp_group(self, switch: int, dst_host: int) -> np.ndarray:
        """Out-link ids of ``switch`` toward ``dst_host`` (the ECMP group; may be empty)."""
        key = self.group_key(switch, dst_host)
        group = self._groups.get(key)
        if group is None:
            group = self._compute_group(switch, dst_host)
            if len(self._groups) < GROUP_CACHE:  # perf: bounded (k = 64 has 10^8 keys)
                self._groups[key] = group
        return group

    def group_key(self, switch: int, dst_host: int) -> int:
        """What the ECMP group of ``switch`` toward ``dst_host`` depends on, as one int: the
        host itself at its own leaf (the downlink), else only the host's leaf (perf: one group
        shared by every host of a leaf)."""
        leaf = int(self.host_leaf[dst_host])
        if switch == leaf:
            return -1 - dst_host
        return switch * self.num_nodes + leaf

    def _compute_group(self, switch: int, dst_host: int) -> np.ndarray:
        leaf = int(self.host_leaf[dst_host])
        if switch == leaf:
            down = int(self.host_downlink[dst_host])
            return np.array([down] if self.usable(down) else [], dtype=np.int64)
        return self._group_toward_leaf(switch, leaf)

    def _group_toward_leaf(self, switch: int, leaf: int) -> np.ndarray:
        exc, start, links = self.groups_toward(leaf)
        i = int(np.searchsorted(exc, switch))
        if i < len(exc) and exc[i] == switch:
            return links[start[i] : start[i + 1]]
        up_start, up_links = self._up
        return up_links[up_start[switch] : up_start[switch + 1]]

    def up_groups(self) -> tuple[np.ndarray, np.ndarray]:
        """Every node's usable up-links (to a higher tier) as CSR: (``start`` per node, links)."""
        if self._fabric_links is None:
            self._switch_links()
        return self._up

    def _switch_links(self) -> None:
        """The usable switch-to-switch links sorted by (source, id), their ends, which of them
        lead to a higher tier, and every switch's usable up-links as CSR (``_up``)."""
        h = self.num_hosts
        ok = self.usable_links() & (self.link_src >= h) & (self.link_dst >= h)
        cand = np.flatnonzero(ok)
        cand = cand[np.argsort(self.link_src[cand], kind="stable")]
        src, dst = self.link_src[cand].astype(np.int64), self.link_dst[cand].astype(np.int64)
        rank = self.node_rank if self.node_rank is not None else self.node_tier
        up = rank[dst] > rank[src]
        self._fabric_links = (cand, src, dst, up)
        if (self.node_tier == NIC).any():
            self._into_nic = self.node_tier[dst] == NIC
            from_nv = self.node_tier[src] == NVSWITCH
            self._nv_rail = np.where(from_nv, (dst - h) % max(self.rails, 1), -1)
        self._n_up = np.bincount(src[up], minlength=self.num_nodes)
        start = np.concatenate(([0], np.cumsum(self._n_up))).astype(np.int64)
        self._up = (start, cand[up].astype(np.int64))

    def groups_toward(self, leaf: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The ECMP groups toward ``leaf`` that are not simply the switch's up-links: (the
        switches, sorted; CSR ``start``; their links).

        A switch's group is its out-links to a switch one hop closer, in link-id order.  For
        most switches of a fabric and most leaves it is all of the switch's up-links, so only
        the others are stored (perf: at k = 64 a full table per leaf was 1.1 MB, 2.3 GB in all;
        one array pass per leaf finds them).
        """
        hit = self._leaf_groups.get(leaf)
        if hit is not None:
            return hit
        if self._fabric_links is None:
            self._switch_links()
        assert self._dist is not None and self._fabric_links is not None
        cand, src, dst, up = self._fabric_links
        dist = self._dist[self._leaf_row[leaf]]
        h = self.num_hosts
        here = dist[src - h]
        sel = (here >= 0) & (dist[dst - h] == here - 1)
        if self._into_nic is not None:  # a NIC forwards for its own host (and PXN's proxy)
            sel &= ~self._into_nic | (dst == leaf)
            nv = self._nv_rail
            if self.rails and nv is not None:  # an NVSwitch hands a packet to the NIC on the
                rail = (leaf - h) % self.rails  # destination's rail (NICs follow the hosts)
                sel = np.where(nv >= 0, nv == rail, sel)
        n = self.num_nodes
        n_sel = np.bincount(src[sel], minlength=n)
        n_sel_up = np.bincount(src[sel & up], minlength=n)
        special = (n_sel != self._n_up) | (n_sel_up != n_sel)
        exc = np.flatnonzero(special).astype(np.int64)
        keep = sel & special[src]
        count = n_sel[exc]
        start = np.concatenate(([0], np.cumsum(count))).astype(np.int64)
        hit = (exc, start, cand[keep].astype(np.int64))
        self._leaf_groups[leaf] = hit
        return hit

    def paths(self, src_host: int, dst_host: int) -> list[tuple[int, ...]]:
        """Every equal-cost path from ``src_host`` to ``dst_host`` as tuples of link ids."""
        if src_host == dst_host:
            return []
        first = int(self.host_uplink[src_host])
        out: list[tuple[int, ...]] = []
        stack: list[tuple[int, tuple[int, ...]]] = [(int(self.link_dst[first]), (first,))]
        while stack:
            node, path = stack.pop()
            if node == dst_host:
                out.append(path)
                continue
            if node < self.num_hosts:
                continue
            for link in self.ecmp_group(node, dst_host)[::-1]:
                stack.append((int(self.link_dst[link]), (*path, int(link))))
        return out

    def path_nodes(self, path: tuple[int, ...]) -> list[int]:
        """Node ids along a path of link ids (source host first)."""
        if not path:
            return []
        return [int(self.link_src[path[0]]), *(int(self.link_dst[link]) for link in path)]

    def path_label(self, path: tuple[int, ...]) -> str:
        """Switch names along the path joined by ``>`` (the ``path`` column).

        Only switches are named: the NIC nodes of a multi-plane or PXN fabric (a host's ports)
        are left out, so every label starts at the first switch and ends at the last.

        A switch reached over a parallel link carries the link's suffix (``spine1#1``), so
        two paths over different parallel links have different labels.

        Examples
        --------
        >>> from fabricsim.config import TopologyConfig
        >>> from fabricsim.topology import build_fabric
        >>> fab = build_fabric(TopologyConfig(leaves=2, spines=1, parallel_links=2))
        >>> for p in fab.paths(0, 8):
        ...     print(fab.path_label(p))
        leaf0>spine0>leaf1
        leaf0>spine0>leaf1#1
        leaf0>spine0#1>leaf1
        leaf0>spine0#1>leaf1#1
        """
        if len(path) < 2:
            return ""
        hop, tier, dst = self.link_hop, self.node_tier, self.link_dst
        # one format on every fabric: switches only, so a NIC node (multi-plane, PXN) is left
        # out and every label starts at the first switch, as on a fabric without NIC nodes
        return ">".join([hop[link] for link in path[:-1] if tier[dst[link]] != NIC])

    def path_delay_ps(self, path: tuple[int, ...]) -> int:
        return int(sum(int(self.link_delay_ps[link]) for link in path))

    def unloaded_delay_ps(
        self, links: Sequence[int], packet_bytes: int, *, first_hop: bool = True
    ) -> int:
        """One packet's unloaded delay over ``links``, in integer picoseconds.

        The one formula of the unloaded delay: every link's propagation plus the packet's
        serialization at :attr:`link_rate_bps` (degradation applied), each link's
        serialization truncated to whole picoseconds.  ``first_hop=False`` leaves out the
        first link's serialization (the flow engine counts a flow's own transmission at its
        rate; what remains is the pipeline delay of its last packet).

        Examples
        --------
        >>> from fabricsim.config.loader import load_scenario
        >>> from fabricsim.topology import build_fabric
        >>> fab = build_fabric(load_scenario("ecmp-collision").topology)
        >>> path = fab.paths(0, fab.num_hosts - 1)[0]
        >>> fab.unloaded_delay_ps(path, 4184) > fab.unloaded_delay_ps(path, 4184, first_hop=False)
        True
        """
        delay, serial = self.hop_ps(packet_bytes)
        links = list(links)
        total = sum(delay[link] for link in links)
        return total + sum(serial[link] for link in (links if first_hop else links[1:]))

    def hop_ps(self, packet_bytes: int) -> tuple[list[int], list[int]]:
        """Per link: propagation and one packet's serialization, whole picoseconds (as lists
        of Python ints, computed once per packet size: perf, the flow engine asks per path)."""
        hit = self._hop_cache.get(packet_bytes)
        if hit is None:
            rate = np.maximum(self.link_rate_bps.astype(np.float64), 1.0)
            serial = transmit_ps(packet_bytes, rate).astype(np.int64)  # truncated, as int()
            hit = (self.link_delay_ps.astype(np.int64).tolist(), serial.tolist())
            self._hop_cache[packet_bytes] = hit
        return hit

    def unloaded_latency_s(
        self, paths: Iterable[Sequence[int]], packet_bytes: int, *, worst: bool
    ) -> float:
        """The pipeline delay (:meth:`unloaded_delay_ps` without the first hop) over ``paths``.

        ``worst``: the largest over ``paths`` (the last byte of a split flow), else the
        smallest (a lower bound); seconds, 0.0 without paths.
        """
        delays = [self.unloaded_delay_ps(p, packet_bytes, first_hop=False) for p in paths]
        if not delays:
            return 0.0
        return ps_to_s(max(delays) if worst else min(delays))

    def unloaded_rtt_ps(self, mss_bytes: int, header_bytes: int, ack_bytes: int = 88) -> int:
        """Round trip of one full packet over the longest host-to-host path, and its ACK back."""
        src, dst = 0, self.num_hosts - 1
        paths = self.paths(src, dst) or self.paths(0, 1)
        path = paths[0]
        back = self.paths(dst, src)[0] if self.paths(dst, src) else path
        there = self.unloaded_delay_ps(path, mss_bytes + header_bytes)
        return there + self.unloaded_delay_ps(back, ack_bytes)


GROUP_CACHE = 1 << 20
"""Most ECMP groups :meth:`Fabric.ecmp_group` keeps (about 150 MB); past it, groups are sliced
from the per-leaf tables on every call (a few microseconds)."""

BFS_PAIRS = 1 << 19
"""Most (leaf, link) pairs one block of the leaf-distance search holds (about 30 MB)."""


def _bfs(targets, n: int, first, count, frm, links: int) -> np.ndarray:
    """Hops from every switch to each of ``targets`` (ids - num_hosts): one row per target."""
    dist = np.full((len(targets), n), -1, dtype=np.int32)
    block = max(1, BFS_PAIRS // max(1, links))  # a target visits each link once
    for lo in range(0, len(targets), block):
        rows = np.arange(lo, min(lo + block, len(targets)), dtype=np.int64)
        _bfs_levels(dist, rows, targets[rows], first, count, frm)
    return dist


def _bfs_levels(
    dist: np.ndarray,
    rows: np.ndarray,
    nodes: np.ndarray,
    first: np.ndarray,
    count: np.ndarray,
    frm: np.ndarray,
) -> None:
    """Fill ``dist[rows]`` level by level from ``nodes`` (distance 0) over the links into each
    node (``frm[first[v] : first[v] + count[v]]``); unreached entries stay -1."""
    dist[rows, nodes] = 0
    level = 0
    while nodes.size:
        level += 1
        k = count[nodes]
        at = np.repeat(first[nodes] - np.cumsum(k) + k, k) + np.arange(int(k.sum()))
        rows, nodes = np.repeat(rows, k), frm[at]
        fresh = dist[rows, nodes] == -1
        rows, nodes = rows[fresh], nodes[fresh]
        # a node reached over several links joins the next level once: each pair writes its
        # own tag, the pair whose tag stayed is the one kept
        tag = -2 - np.arange(rows.size, dtype=np.int32)
        dist[rows, nodes] = tag
        kept = dist[rows, nodes] == tag
        rows, nodes = rows[kept], nodes[kept]
        dist[rows, nodes] = level
