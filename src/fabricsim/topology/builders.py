"""Builders of leaf-spine and fat-tree fabrics from a :class:`TopologyConfig`."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from fabricsim.config.models import TopologyConfig
from fabricsim.config.suggest import closest
from fabricsim.errors import ConfigError
from fabricsim.topology.fabric import CORE, HOST, LEAF, NIC, NVSWITCH, SPINE, Fabric
from fabricsim.units import gbps_to_bps, us_to_ps


@dataclass
class _Draft:
    names: list[str] = field(default_factory=list)
    tiers: list[int] = field(default_factory=list)
    pods: list[int] = field(default_factory=list)
    src: list[int] = field(default_factory=list)
    dst: list[int] = field(default_factory=list)
    rate: list[float] = field(default_factory=list)
    link_names: list[str] = field(default_factory=list)
    ranks: list[int] = field(default_factory=list)
    planes: list[int] = field(default_factory=list)
    internal: list[bool] = field(default_factory=list)  # a host's link to its NIC: no delay
    delay_us: dict[int, float] = field(default_factory=dict)  # links not at link_delay_us
    oversub_leaves: list[int] | None = None  # the leaves oversubscription is measured at

    def node(self, name: str, tier: int, pod: int = -1, rank: int | None = None, plane=-1) -> int:
        self.names.append(name)
        self.tiers.append(tier)
        self.pods.append(pod)
        self.ranks.append(tier if rank is None else rank)
        self.planes.append(plane)
        return len(self.names) - 1

    def duplex(
        self,
        a: int,
        b: int,
        rate_bps: float,
        suffix: str = "",
        internal: bool = False,
        delay_us: float | None = None,
    ) -> tuple[int, int]:
        ids = []
        for x, y in ((a, b), (b, a)):
            self.src.append(x)
            self.dst.append(y)
            self.rate.append(rate_bps)
            self.link_names.append(f"{self.names[x]}->{self.names[y]}{suffix}")
            self.internal.append(internal)
            if internal or delay_us is not None:
                self.delay_us[len(self.src) - 1] = 0.0 if internal else float(delay_us or 0.0)
            ids.append(len(self.src) - 1)
        return ids[0], ids[1]


def build_fabric(cfg: TopologyConfig) -> Fabric:
    """Build the fabric a topology config describes.

    Examples
    --------
    >>> from fabricsim.config import TopologyConfig
    >>> fab = build_fabric(TopologyConfig(kind="fat_tree", k=4))
    >>> fab.num_hosts, len(fab.paths(0, 15))
    (16, 4)
    """
    draft = _Draft()
    host_rate = float(gbps_to_bps(cfg.host_link_gbps))
    fabric_rate = float(gbps_to_bps(cfg.fabric_link_gbps))
    if cfg.kind == "leaf_spine":
        leaves, top, oversub = _leaf_spine(draft, cfg, host_rate, fabric_rate)
        pod_nodes = draft.pods
    elif cfg.kind == "rail_optimized":
        leaves, top, oversub = _rail_optimized(draft, cfg, host_rate, fabric_rate)
        pod_nodes = draft.pods
    elif cfg.kind == "multi_plane":
        leaves, top, oversub = _multi_plane(draft, cfg, host_rate, fabric_rate)
        pod_nodes = draft.pods
    else:
        leaves, top, oversub = _fat_tree(draft, cfg, host_rate, fabric_rate)
        pod_nodes = draft.pods
    return _finish(draft, cfg, leaves, top, oversub, pod_nodes)


def fabric_for(cfg: TopologyConfig) -> Fabric:
    """The fabric of ``cfg``, built once per distinct topology in a process (do not mutate it).

    Examples
    --------
    >>> from fabricsim.config import TopologyConfig
    >>> fabric_for(TopologyConfig(spines=4)) is fabric_for(TopologyConfig(spines=4))
    True
    """
    return _cached_fabric(json.dumps(cfg.model_dump(mode="json"), sort_keys=True))


@functools.lru_cache(maxsize=32)
def _cached_fabric(topology_json: str) -> Fabric:
    return build_fabric(TopologyConfig.model_validate(json.loads(topology_json)))


def _leaf_spine(d: _Draft, cfg: TopologyConfig, host_rate: float, fab_rate: float):
    hosts = cfg.leaves * cfg.hosts_per_leaf
    for h in range(hosts):
        d.node(f"host{h}", HOST)
    leaves = [d.node(f"leaf{i}", LEAF) for i in range(cfg.leaves)]
    spines = [d.node(f"spine{i}", SPINE) for i in range(cfg.spines)]
    for h in range(hosts):
        d.duplex(h, leaves[h // cfg.hosts_per_leaf], host_rate)
    for leaf in leaves:
        for spine in spines:
            for p in range(cfg.parallel_links):
                d.duplex(leaf, spine, fab_rate, suffix=f"#{p}" if p else "")
    up = cfg.spines * cfg.parallel_links * fab_rate
    oversub = cfg.hosts_per_leaf * host_rate / up if cfg.leaves > 1 else 1.0  # one leaf: a crossbar
    return leaves, spines, oversub


def rail_leaves_per_rail(cfg: TopologyConfig) -> int:
    """Leaves per rail of a rail-optimized fabric: ceil(servers / servers_per_leaf)."""
    per = cfg.servers_per_leaf or cfg.servers
    return -(-cfg.servers // per)


def _rail_optimized(d: _Draft, cfg: TopologyConfig, host_rate: float, fab_rate: float):
    """GPU ``r`` of server ``s`` is host ``s x rails + r`` (named ``host<i>``), on leaf
    ``rail<r>_leaf<s // servers_per_leaf>``; every leaf connects to every spine.

    With ``pxn`` every GPU sends through its NIC node ``nic<h>`` (an internal link at the NIC
    rate: the GPU's injection budget) whose ports are the rail leaf and the server's NVSwitch
    ``nvs<s>`` (``nvlink_gbps``, ``nvlink_delay_us``); the source NIC stage sends cross-rail
    traffic over NVLink to the NIC of the destination's rail when that is as short
    (:class:`fabricsim.routing.planes.PxnChoice`).
    """
    rails, per = cfg.rails, cfg.servers_per_leaf or cfg.servers
    hosts = cfg.servers * rails
    for h in range(hosts):
        d.node(f"host{h}", HOST)
    nics = [d.node(f"nic{h}", NIC, rank=1) for h in range(hosts)] if cfg.pxn else list(range(hosts))
    groups = rail_leaves_per_rail(cfg)
    rank = 2 if cfg.pxn else None
    leaf = {
        (r, j): d.node(f"rail{r}_leaf{j}", LEAF, rank=rank)
        for r in range(rails)
        for j in range(groups)
    }
    spines = [d.node(f"spine{i}", SPINE, rank=3 if cfg.pxn else None) for i in range(cfg.spines)]
    if cfg.pxn:
        nvs = [d.node(f"nvs{s}", NVSWITCH, rank=2) for s in range(cfg.servers)]
        for h in range(hosts):
            d.duplex(h, nics[h], host_rate, internal=True)
    for h in range(hosts):
        server, rail = divmod(h, rails)
        d.duplex(nics[h], leaf[(rail, server // per)], host_rate)
    for node in leaf.values():
        for spine in spines:
            for p in range(cfg.parallel_links):
                d.duplex(node, spine, fab_rate, suffix=f"#{p}" if p else "")
    if cfg.pxn:
        nvlink = float(gbps_to_bps(cfg.nvlink_gbps))
        for h in range(hosts):
            d.duplex(nics[h], nvs[h // rails], nvlink, delay_us=cfg.nvlink_delay_us)
        d.oversub_leaves = list(leaf.values())
        return (
            nics,
            spines,
            min(per, cfg.servers) * host_rate / (cfg.spines * cfg.parallel_links * fab_rate)
            if len(leaf) > 1
            else 1.0,
        )
    up = cfg.spines * cfg.parallel_links * fab_rate
    oversub = min(per, cfg.servers) * host_rate / up if len(leaf) > 1 else 1.0
    return list(leaf.values()), spines, oversub


def _multi_plane(d: _Draft, cfg: TopologyConfig, host_rate: float, fab_rate: float):
    """``planes`` copies of the ``plane_kind`` fabric sharing the hosts.

    Host ``h`` reaches its NIC node ``nic<h>`` over an internal link (no delay, ``planes`` x
    ``host_link_gbps``); the NIC has one port (``host_link_gbps``) into each plane, to the leaf
    or edge the host has in that plane.  Plane ``p``'s switches are the plane fabric's names
    with the prefix ``p<p>_`` (``p1_leaf0``, ``p0_spine3``, ``p1_edge2_0``).  The NIC nodes
    are the ECMP stage where a packet's plane is chosen (``nic.plane_select``).
    """
    base = _Draft()
    builder = _fat_tree if cfg.plane_kind == "fat_tree" else _leaf_spine
    _, base_top, oversub = builder(base, cfg, host_rate, fab_rate)
    hosts = base.tiers.count(HOST)
    for h in range(hosts):
        d.node(f"host{h}", HOST, base.pods[h])
    nics = [d.node(f"nic{h}", NIC, base.pods[h], rank=1) for h in range(hosts)]
    for h in range(hosts):
        d.duplex(h, nics[h], cfg.planes * host_rate, internal=True)
    tops: list[int] = []
    tors: list[int] = []
    for plane in range(cfg.planes):
        node = {h: nics[h] for h in range(hosts)}
        for b in range(hosts, len(base.names)):
            node[b] = d.node(
                f"p{plane}_{base.names[b]}", base.tiers[b], base.pods[b], base.ranks[b] + 1, plane
            )
            if base.tiers[b] == LEAF:
                tors.append(node[b])
        for link in range(0, len(base.src), 2):  # the base's duplex pairs, in build order
            a, b = base.src[link], base.dst[link]
            name = base.link_names[link]
            suffix = name[name.rindex("#") :] if "#" in name else ""
            d.duplex(node[a], node[b], base.rate[link], suffix=suffix)
        tops.extend(node[t] for t in base_top)
    d.oversub_leaves = tors
    return nics, tops, oversub


def _fat_tree(d: _Draft, cfg: TopologyConfig, host_rate: float, fab_rate: float):
    k = cfg.k
    half = k // 2
    per_edge = cfg.hosts_per_edge or half
    core_rate = fab_rate if cfg.core_link_gbps is None else float(gbps_to_bps(cfg.core_link_gbps))
    hosts = k * half * per_edge
    for h in range(hosts):
        d.node(f"host{h}", HOST, pod=h // (half * per_edge))
    edges = [[d.node(f"edge{p}_{i}", LEAF, p) for i in range(half)] for p in range(k)]
    aggs = [[d.node(f"agg{p}_{i}", SPINE, p) for i in range(half)] for p in range(k)]
    cores = [d.node(f"core{c}", CORE) for c in range(half * half)]
    for h in range(hosts):
        pod, rem = divmod(h, half * per_edge)
        d.duplex(h, edges[pod][rem // per_edge], host_rate)
    for p in range(k):
        for e in edges[p]:
            for a in aggs[p]:
                d.duplex(e, a, fab_rate)
        for i, a in enumerate(aggs[p]):
            for j in range(half):
                d.duplex(a, cores[i * half + j], core_rate)
    leaves = [e for pod in edges for e in pod]
    return leaves, cores, per_edge * host_rate / (half * fab_rate)


def _host_rates(cfg: TopologyConfig, num_hosts: int) -> dict[int, float]:
    """``topology.host_nic_gbps`` as host -> bit/s (empty: every host at ``host_link_gbps``)."""
    given = cfg.host_nic_gbps
    if given is None:
        return {}
    if isinstance(given, list):
        if len(given) != num_hosts:
            raise ConfigError(
                f"topology.host_nic_gbps: {len(given)} rates for {num_hosts} hosts; give one per "
                "host, or a map {host index: Gbps}"
            )
        given = dict(enumerate(given))
    bad = [h for h in given if not 0 <= h < num_hosts]
    if bad:
        raise ConfigError(
            f"topology.host_nic_gbps: host {bad[0]} does not exist (hosts are 0..{num_hosts - 1})"
        )
    return {int(h): float(gbps_to_bps(g)) for h, g in given.items()}


def _finish(d: _Draft, cfg: TopologyConfig, leaves, top, oversub, pods) -> Fabric:
    names = d.link_names
    index = {n: i for i, n in enumerate(names)}
    nominal = np.array(d.rate, dtype=np.float64)
    src = np.array(d.src, dtype=np.int32)
    dst = np.array(d.dst, dtype=np.int32)
    tiers = np.array(d.tiers, dtype=np.int8)
    num_hosts = int((tiers == HOST).sum())
    ranks = np.array(d.ranks, dtype=np.int8)
    internal = np.array(d.internal, dtype=bool)
    per_host = _host_rates(cfg, num_hosts)
    if per_host:
        ports = cfg.planes if cfg.kind == "multi_plane" else 1
        _set_host_rates(nominal, per_host, ports, src, dst, tiers, internal, num_hosts)
        oversub = _oversubscription(nominal, src, dst, ranks, d.oversub_leaves or leaves)
    rate = nominal.copy()
    failed = np.zeros(len(names), dtype=bool)
    for name in cfg.failed_links:
        failed[_lookup(index, name, "topology.failed_links")] = True
    withdrawn = _failed_switches(cfg, d, src, dst)
    failed |= withdrawn
    for name, frac in cfg.degraded_links.items():
        rate[_lookup(index, name, "topology.degraded_links")] *= frac
    for failure in cfg.link_failures:  # checked here, with the other link names, before a run
        _lookup(index, failure.link, "topology.link_failures")
    uplink = np.zeros(num_hosts, dtype=np.int64)
    downlink = np.zeros(num_hosts, dtype=np.int64)
    host_leaf = np.zeros(num_hosts, dtype=np.int64)
    for link in range(len(names)):
        if src[link] < num_hosts:
            uplink[src[link]] = link
            host_leaf[src[link]] = dst[link]
        elif dst[link] < num_hosts:
            downlink[dst[link]] = link
    ips = (np.uint32(10) << np.uint32(24)) + np.arange(1, num_hosts + 1, dtype=np.uint32)
    return Fabric(
        kind=cfg.kind,
        node_names=list(d.names),
        node_tier=tiers,
        num_hosts=num_hosts,
        host_ip=ips.astype(np.uint32),
        link_src=src,
        link_dst=dst,
        link_rate_bps=rate,
        link_nominal_bps=nominal,
        link_delay_ps=_delays(d, cfg, len(names)),
        link_failed=failed,
        link_names=list(names),
        host_leaf=host_leaf,
        host_uplink=uplink,
        host_downlink=downlink,
        leaves=np.array(leaves, dtype=np.int64),
        top_switches=np.array(top, dtype=np.int64),
        withdraw_failed=cfg.failed_link_mode == "withdraw",
        oversubscription=float(oversub),
        pod_of_node=np.array(pods, dtype=np.int64),
        node_rank=ranks,
        link_withdrawn=withdrawn if withdrawn.any() else None,
        planes=cfg.planes if cfg.kind == "multi_plane" else 1,
        node_plane=np.array(d.planes, dtype=np.int64) if cfg.kind == "multi_plane" else None,
        rails=cfg.rails if cfg.kind == "rail_optimized" and cfg.pxn else 0,
    )


def _set_host_rates(nominal, per_host, planes, src, dst, tiers, internal, num_hosts) -> None:
    """``per_host`` rates on each host's own links: to its leaf, or (multi_plane) its NIC's
    ports into the planes, the NIC's internal link carrying all of them."""
    port = np.flatnonzero(tiers == NIC)
    nic_host = np.full(len(tiers), -1, dtype=np.int64)
    nic_host[:num_hosts] = np.arange(num_hosts)
    nic_host[port] = port - num_hosts  # NIC nodes follow the hosts, in host order
    ends = tiers[src] == NIC if len(port) else src < num_hosts
    host_end = np.where(ends, nic_host[src], -1)
    down = tiers[dst] == NIC if len(port) else dst < num_hosts
    host_end = np.where(down, nic_host[dst], host_end)
    host_end[internal | (tiers[src] == NVSWITCH) | (tiers[dst] == NVSWITCH)] = -1  # not NVLink
    for at in np.flatnonzero(host_end >= 0):
        nominal[at] = per_host.get(int(host_end[at]), nominal[at])
    for at in np.flatnonzero(internal):
        h = int(min(src[at], dst[at]))
        nominal[at] = planes * per_host.get(h, nominal[at] / planes)


def _delays(d: _Draft, cfg: TopologyConfig, n: int) -> np.ndarray:
    """Per link, ps: ``topology.link_delay_us``, none inside a host, NVLink its own."""
    out = np.full(n, us_to_ps(cfg.link_delay_us), dtype=np.int64)
    for link, us in d.delay_us.items():
        out[link] = us_to_ps(us)
    return out


def _failed_switches(cfg: TopologyConfig, d: _Draft, src, dst) -> np.ndarray:
    """Links of ``topology.failed_switches`` (down and withdrawn from routing)."""
    out = np.zeros(len(src), dtype=bool)
    if not cfg.failed_switches:
        return out
    node = {n: i for i, n in enumerate(d.names)}
    for name in cfg.failed_switches:
        at = node.get(name)
        if at is None or d.tiers[at] in (HOST, NIC):
            example = next(n for n in d.names if "leaf" in n or "edge" in n)
            raise ConfigError(
                f"topology.failed_switches: unknown switch '{name}' (switches are named like "
                f"'{example}')"
            )
        out |= (src == at) | (dst == at)
    return out


def _oversubscription(nominal, src, dst, ranks, leaves) -> float:
    """The largest leaf's host-side capacity over its uplink capacity (one leaf: 1, a
    crossbar); host side = links into the leaf from below it, up = links to above it."""
    worst = 1.0 if len(leaves) <= 1 else 0.0
    for leaf in leaves:
        hosts = float(nominal[(dst == leaf) & (ranks[src] < ranks[leaf])].sum())
        up = float(nominal[(src == leaf) & (ranks[dst] > ranks[leaf])].sum())
        if up > 0 and len(leaves) > 1:
            worst = max(worst, hosts / up)
    return worst


def _lookup(index: dict[str, int], name: str, field_name: str) -> int:
    if name not in index:
        best = closest(name, index)
        if best is not None:
            raise ConfigError(f"{field_name}: unknown link '{name}'; did you mean '{best}'?")
        example = next(n for n in index if "leaf" in n or "edge" in n)
        raise ConfigError(f"{field_name}: unknown link '{name}' (links are named like '{example}')")
    return index[name]


def build_dumbbell(
    sender_bps: Sequence[float] | np.ndarray,
    sender_delay_ps: Sequence[int] | np.ndarray,
    middle_bps: float,
    middle_delay_ps: int,
    receiver_bps: Sequence[float] | np.ndarray,
    receiver_delay_ps: Sequence[int] | np.ndarray,
    degraded: dict[str, float] | None = None,
    sender_feeder: Sequence[int] | np.ndarray | None = None,
    feeder_bps: Sequence[float] | np.ndarray = (),
    feeder_delay_ps: Sequence[int] | np.ndarray = (),
) -> Fabric:
    """Hosts behind switch ``leaf0``, one link ``leaf0->leaf1``, hosts behind ``leaf1``.

    Senders are hosts ``0 .. S-1`` (each with its own link rate and delay), receivers
    ``S .. S+R-1`` behind ``leaf1``; every link is duplex with the given rate in both
    directions.  A sender whose ``sender_feeder`` is ``k >= 0`` sits behind feeder switch
    ``feed<k>`` (linked to ``leaf0`` at ``feeder_bps[k]``), the others on ``leaf0`` itself.
    ``degraded`` maps a link name to the fraction of its rate it keeps (as
    ``topology.degraded_links``).  The small fabric of a link simulation of the decomposed
    engine (:mod:`fabricsim.decomposed.link_fabric`).

    Examples
    --------
    >>> fab = build_dumbbell([1e11, 1e11], [1_000_000] * 2, 1e11, 1_000_000, [1e11], [0])
    >>> fab.num_hosts, fab.link_names[:3], [len(fab.paths(0, 2)), len(fab.paths(1, 2))]
    (3, ['host0->leaf0', 'leaf0->host0', 'host1->leaf0'], [1, 1])
    >>> fab = build_dumbbell([1e11] * 2, [0, 0], 1e11, 0, [1e11], [0], None, [0, -1], [5e10], [0])
    >>> fab.node_names[fab.host_leaf[0]], fab.node_names[fab.host_leaf[1]]
    ('feed0', 'leaf0')
    """
    d = _Draft()
    senders, receivers = len(sender_bps), len(receiver_bps)
    feeder = list(sender_feeder) if sender_feeder is not None else [-1] * senders
    for h in range(senders + receivers):
        d.node(f"host{h}", HOST)
    a, b = d.node("leaf0", LEAF), d.node("leaf1", LEAF)
    feeds = [d.node(f"feed{k}", LEAF) for k in range(len(feeder_bps))]
    for h in range(senders):
        at = a if feeder[h] < 0 else feeds[feeder[h]]
        d.duplex(h, at, float(sender_bps[h]), delay_us=int(sender_delay_ps[h]) / 1e6)
    for j in range(receivers):
        h = senders + j
        d.duplex(h, b, float(receiver_bps[j]), delay_us=int(receiver_delay_ps[j]) / 1e6)
    d.duplex(a, b, float(middle_bps), delay_us=int(middle_delay_ps) / 1e6)
    for k, node in enumerate(feeds):
        d.duplex(node, a, float(feeder_bps[k]), delay_us=int(feeder_delay_ps[k]) / 1e6)
    d.oversub_leaves = [a]
    cfg = TopologyConfig.model_validate(
        {"kind": "leaf_spine", "degraded_links": dict(degraded or {})}
    )
    return _finish(d, cfg, [a, b, *feeds], [b], 1.0, d.pods)
