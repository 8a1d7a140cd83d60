"""A host pair's equal-cost paths as one DAG of ECMP groups: link shares without enumeration.

The flow engine's multipath fluid forms need, for a connection, the share of its bytes on each
link, how many paths it spreads over, its slowest path's pipeline delay and the switches it
crosses -- not the paths themselves.  A k = 32 fat tree has 256 paths between two pods (a
k = 64 one 1,024); enumerating them per host pair in Python is what made a large multipath
run slow.  Here the paths are the DAG the ECMP groups span from the source's first switch to
the destination's leaf, and every figure is one pass over the DAG's edges, stage by stage:

* ``even`` -- every path equally (``lb.policy: ideal_spray``): a link ``u -> v`` carries
  ``F(u) * R(v) / P`` of the connection, with ``F`` the paths from the source to ``u``, ``R``
  those from ``v`` to the destination and ``P`` all of them (exact integer counts);
* ``per_stage`` -- an even split at every ECMP stage (``switch.hash_method: random``): a
  path's weight is the product of ``1 / |group|`` over its stages, and paths into a dead end
  (a group with no usable member) carry nothing, as a packet sent there is lost.

Below the first switch the DAG depends only on that switch and the destination's leaf (ECMP
groups toward a host depend on its leaf except at the leaf itself: :meth:`Fabric.group_key`),
so one DAG serves every host pair of a (first switch, leaf) pair and is cached (bounded).
The fastest delay alone (:meth:`PairDags.shortest_s_many`) needs no DAG per pair: one array
relaxation over every switch's group gives it from every node toward a leaf at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fabricsim.topology.fabric import Fabric
from fabricsim.units import ps_to_s

__all__ = ["LinkShares", "PairDags", "MAX_PATH_LABELS"]

MAX_PATH_LABELS = 8
"""Paths a flow's ``path`` column lists by name; a flow on more has an empty ``path`` (its
``paths`` column counts them; the packet engine's ``flow_paths`` table names them)."""

_CACHE = 4096  # (first switch, leaf) DAGs kept (perf: bounded; a k = 64 fabric has 4 M pairs)
_BEST_LEAVES = 64  # leaves whose fastest delays are kept (perf: bounded, a node count each)
_NO_PATH = np.int64(2**62)  # a fastest delay not found yet, ps (plus any hop: no overflow)


@dataclass(frozen=True, slots=True)
class LinkShares:
    """One connection's use of the fabric: its share of the bytes on each link it crosses."""

    links: np.ndarray  # distinct link ids, int64
    coefs: np.ndarray  # the connection's share on each (float64; 1.0 on a link every path takes)
    paths: int  # how many paths carry it
    named: tuple[tuple[int, ...], ...]  # the paths, when at most MAX_PATH_LABELS (else empty)
    # indices into fabric.top_switches of the top switches it crosses (distinct; an int64
    # array past _MANY_TOPS, else a tuple: perf, see _tops)
    tops: Sequence[int] | np.ndarray
    worst_ps: int  # the slowest path's unloaded pipeline delay (Fabric.unloaded_delay_ps,
    best_ps: int  # first_hop=False) and the fastest's, for the packet size of PairDags


_MANY_TOPS = 16


def _tops(indices: list[int]) -> Sequence[int] | np.ndarray:
    """A connection's top-switch indices: a tuple (a short Python loop per change is
    cheapest) or, past ``_MANY_TOPS``, an array (one array update per change: a k = 32
    ``ideal_spray`` connection crosses 288 top switches)."""
    if len(indices) > _MANY_TOPS:
        return np.array(indices, dtype=np.int64)
    return tuple(indices)


class PairDags:
    """Link shares of host pairs on ``fabric`` for packets of ``packet_bytes`` (delays).

    Examples
    --------
    A 2-leaf, 3-spine leaf-spine: every path takes the hosts' own links, and a third of the
    bytes crosses each spine.

    >>> from fabricsim.config import TopologyConfig
    >>> from fabricsim.topology import build_fabric
    >>> fab = build_fabric(TopologyConfig(leaves=2, spines=3, hosts_per_leaf=2))
    >>> s = PairDags(fab, 4096).shares(0, 3, even=True)
    >>> s.paths, sorted(s.coefs.round(4).tolist())
    (3, [0.3333, 0.3333, 0.3333, 0.3333, 0.3333, 0.3333, 1.0, 1.0])
    """

    def __init__(self, fabric: Fabric, packet_bytes: int) -> None:
        self.fabric = fabric
        delay, serial = fabric.hop_ps(packet_bytes)
        self._delay = delay
        self._hop = [d + s for d, s in zip(delay, serial, strict=True)]  # delay + serialization
        # the part below a first switch toward a leaf (its sink), without the pair's own links
        self._dags: dict[tuple[int, int, bool], LinkShares] = {}
        self._best: dict[int, np.ndarray] = {}  # leaf -> every node's fastest delay to it, ps
        self._arrays: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self.top_index = {int(s): i for i, s in enumerate(fabric.top_switches)}

    def shares(self, src: int, dst: int, *, even: bool) -> LinkShares | None:
        """The connection ``src -> dst`` spread ``even`` over its paths (else per stage);
        None if no path reaches ``dst``."""
        fab = self.fabric
        if src == dst:
            return None
        first = int(fab.host_uplink[src])
        v0, leaf = int(fab.link_dst[first]), int(fab.host_leaf[dst])
        down = fab.ecmp_group(leaf, dst)  # the leaf's downlink to dst (if usable)
        if len(down) == 0:
            return None
        key = (v0, leaf, even)
        dag = self._dags.get(key)
        if dag is None:
            dag = self._dag(v0, leaf, dst, even)
            if len(self._dags) >= _CACHE:
                self._dags.clear()
            self._dags[key] = dag
        if not dag.paths:
            return None
        d = int(down[0])
        links = np.concatenate(([first], dag.links, [d])).astype(np.int64)
        coefs = np.concatenate(([1.0], dag.coefs, [1.0]))
        tail = self._hop[d]
        return LinkShares(
            links,
            coefs,
            dag.paths,
            tuple(fab.paths(src, dst)) if dag.paths <= MAX_PATH_LABELS else (),
            dag.tops,
            self._delay[first] + dag.worst_ps + tail,
            self._delay[first] + dag.best_ps + tail,
        )

    def _dag(self, v0: int, leaf: int, dst: int, even: bool) -> LinkShares:
        """From ``v0`` down the ECMP groups to ``leaf``, then two passes over the nodes in
        topological order (a depth-first post-order: ECMP forwarding has no loops)."""
        out, weight, post = self._expand(v0, leaf, dst, even)
        reach, count, worst, best = self._toward_leaf(out, weight, post, leaf)
        total = reach.get(v0, 0.0)
        if total <= 0.0:
            empty = np.empty(0, dtype=np.int64)
            return LinkShares(empty, np.empty(0), 0, (), (), 0, 0)
        ahead: dict[int, float] = {v0: 1.0}  # F: paths (share) from v0 to a node
        links: list[int] = []
        coefs: list[float] = []
        nodes: list[int] = []
        for u in reversed(post):
            f = ahead.get(u, 0.0)
            if u not in out or f <= 0.0 or u not in reach:
                continue
            nodes.append(u)
            group, heads = out[u]
            fw = f * weight[u]
            for link, v in zip(group, heads, strict=True):
                rv = reach.get(v, 0.0)
                if rv > 0.0:
                    ahead[v] = ahead.get(v, 0.0) + fw
                    links.append(link)
                    coefs.append(fw * rv / total if even else fw * rv)
        if leaf != v0:
            nodes.append(leaf)
        return LinkShares(
            np.array(links, dtype=np.int64),
            np.array(coefs, dtype=np.float64),
            count[v0],
            (),
            _tops([self.top_index[n] for n in nodes if n in self.top_index]),
            worst[v0],
            best[v0],
        )

    def _expand(
        self, v0: int, leaf: int, dst: int, even: bool
    ) -> tuple[dict[int, tuple[list[int], list[int]]], dict[int, float], list[int]]:
        """The nodes below ``v0`` toward ``leaf``: (node -> (its group's links, their heads),
        node -> the weight of each of its members, every node after all the nodes below it)."""
        fab = self.fabric
        hosts = fab.num_hosts
        link_dst = fab.link_dst
        out: dict[int, tuple[list[int], list[int]]] = {}
        weight: dict[int, float] = {}
        post: list[int] = []
        seen = {v0}
        stack = [(v0, 0)]
        while stack:
            u, i = stack.pop()
            if i == 0 and u != leaf and u >= hosts:  # not the sink nor a dead end: expand
                group = fab.ecmp_group(u, dst).tolist()
                out[u] = (group, [int(link_dst[link]) for link in group])
                weight[u] = 1.0 if even else 1.0 / len(group) if group else 0.0
            heads = out[u][1] if u in out else []
            if i < len(heads):
                stack.append((u, i + 1))
                v = heads[i]
                if v not in seen:
                    seen.add(v)
                    stack.append((v, 0))
            else:
                post.append(u)
        return out, weight, post

    def _toward_leaf(
        self,
        out: dict[int, tuple[list[int], list[int]]],
        weight: dict[int, float],
        post: list[int],
        leaf: int,
    ) -> tuple[dict[int, float], dict[int, int], dict[int, int], dict[int, int]]:
        """Per node that reaches ``leaf``: R (paths, as a share, to the leaf), the path count,
        the slowest and the fastest path's unloaded delay."""
        reach: dict[int, float] = {leaf: 1.0}
        count: dict[int, int] = {leaf: 1}
        worst: dict[int, int] = {leaf: 0}
        best: dict[int, int] = {leaf: 0}
        hop = self._hop
        for u in post:
            if u not in out:
                continue
            group, heads = out[u]
            r, c = 0.0, 0
            hi, lo = -1, -1
            for link, v in zip(group, heads, strict=True):
                rv = reach.get(v, 0.0)
                if rv > 0.0:
                    r += rv
                    c += count[v]
                    t = hop[link]
                    hi = max(hi, t + worst[v])
                    lo = t + best[v] if lo < 0 else min(lo, t + best[v])
            if r > 0.0:
                reach[u], count[u], worst[u], best[u] = r * weight[u], c, hi, lo
        return reach, count, worst, best

    def shortest_s(self, src: int, dst: int) -> float:
        """The fastest path's unloaded pipeline delay from ``src`` to ``dst``, s (0.0 without
        a path): :meth:`Fabric.unloaded_latency_s` of every path, ``worst=False``."""
        return float(self.shortest_s_many(np.array([src]), np.array([dst]))[0])

    def shortest_s_many(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """:meth:`shortest_s` of every pair ``(src[i], dst[i])``, s.

        ``shares(src, dst, even=True).best_ps`` with the pair's own links, from one
        :meth:`_best_to` per destination leaf (perf: no link shares; the open-loop engine asks
        for every leaf pair, 16,384 of them at k = 16).
        """
        fab = self.fabric
        src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        first = fab.host_uplink[src]
        down = fab.host_downlink[dst]  # the leaf's group toward dst (if usable)
        leaf = fab.host_leaf[dst]
        out = np.zeros(len(src))
        delay, hop, usable = self._link_arrays()
        ask = np.flatnonzero((src != dst) & usable[down])
        ask = ask[np.argsort(leaf[ask], kind="stable")]
        cuts = np.flatnonzero(np.diff(leaf[ask])) + 1
        for part in np.split(ask, cuts) if len(ask) else []:
            best = self._best_to(int(leaf[part[0]]))[fab.link_dst[first[part]]]
            part, best = part[best >= 0], best[best >= 0]
            out[part] = ps_to_s(delay[first[part]] + best + hop[down[part]])
        return out

    def _link_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per link, as arrays (made once): propagation, propagation plus serialization (ps),
        whether routing may use it."""
        if self._arrays is None:
            delay = np.asarray(self._delay, dtype=np.int64)
            hop = np.asarray(self._hop, dtype=np.int64)
            self._arrays = (delay, hop, self.fabric.usable_links())
        return self._arrays

    def _best_to(self, leaf: int) -> np.ndarray:
        """Every node's fastest pipeline delay down the ECMP groups to ``leaf``, ps (-1 if no
        path gets there), as :meth:`_dag`'s ``best`` (the groups toward any host of ``leaf``
        but at ``leaf`` itself, the sink).

        Relaxes every group member ``u -> v`` (``best[u] <= hop + best[v]``) until nothing
        changes: as many passes as the longest path has hops, plus one.  The figures of
        ``_BEST_LEAVES`` leaves are kept.
        """
        hit = self._best.get(leaf)
        if hit is not None:
            return hit
        fab, n = self.fabric, self.fabric.num_nodes
        exc, start, links = fab.groups_toward(leaf)
        up_start, up_links = fab.up_groups()  # every other switch's group: its up-links
        special = np.zeros(n, dtype=bool)
        special[exc] = True
        up_src = np.repeat(np.arange(n), np.diff(up_start))
        tail = np.r_[up_src[~special[up_src]], np.repeat(exc, np.diff(start))]
        link = np.r_[up_links[~special[up_src]], links]
        tail, link = tail[tail != leaf], link[tail != leaf]
        head, w = fab.link_dst[link], self._link_arrays()[1][link]
        best = np.full(n, _NO_PATH)
        best[leaf] = 0
        for _ in range(n):
            new = best.copy()
            np.minimum.at(new, tail, w + best[head])
            if np.array_equal(new, best):
                break
            best = new
        best = np.where(best >= _NO_PATH, -1, best)
        if len(self._best) >= _BEST_LEAVES:
            self._best.clear()
        self._best[leaf] = best
        return best

    def of_paths(self, weighted: list[tuple[tuple[int, ...], float]]) -> LinkShares | None:
        """The shares of explicit weighted paths (a hashed source port's one path, or the
        paths of a spraying type's ports): each link's share is the weights of the paths on
        it summed in path order; None without paths."""
        if not weighted:
            return None
        fab, delay, hop = self.fabric, self._delay, self._hop
        link_src, link_dst = fab.link_src, fab.link_dst
        use: dict[int, float] = {}
        nodes: set[int] = set()
        worst, best = -1, -1
        for path, w in weighted:
            for link in path:
                use[link] = use.get(link, 0.0) + w
            nodes.add(int(link_src[path[0]]))
            nodes.update(int(link_dst[link]) for link in path)
            t = delay[path[0]] + sum(hop[link] for link in path[1:])
            worst = max(worst, t)
            best = t if best < 0 else min(best, t)
        count = len(weighted)
        return LinkShares(
            np.fromiter(use, dtype=np.int64, count=len(use)),
            np.fromiter(use.values(), dtype=np.float64, count=len(use)),
            count,
            tuple(p for p, _ in weighted) if count <= MAX_PATH_LABELS else (),
            _tops([self.top_index[n] for n in nodes if n in self.top_index]),
            worst,
            best,
        )
