"""Builders of leaf-spine and fat-tree fabrics from a :class:`TopologyConfig`."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field

import numpy as np

from fabricsim.config.models import TopologyConfig
from fabricsim.errors import ConfigError
from fabricsim.topology.fabric import CORE, HOST, LEAF, SPINE, Fabric
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

    def node(self, name: str, tier: int, pod: int = -1) -> int:
        self.names.append(name)
        self.tiers.append(tier)
        self.pods.append(pod)
        return len(self.names) - 1

    def duplex(self, a: int, b: int, rate_bps: float, suffix: str = "") -> tuple[int, int]:
        ids = []
        for x, y in ((a, b), (b, a)):
            self.src.append(x)
            self.dst.append(y)
            self.rate.append(rate_bps)
            self.link_names.append(f"{self.names[x]}->{self.names[y]}{suffix}")
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
    ``rail<r>_leaf<s // servers_per_leaf>``; every leaf connects to every spine."""
    rails, per = cfg.rails, cfg.servers_per_leaf or cfg.servers
    hosts = cfg.servers * rails
    for h in range(hosts):
        d.node(f"host{h}", HOST)
    groups = rail_leaves_per_rail(cfg)
    leaf = {(r, j): d.node(f"rail{r}_leaf{j}", LEAF) for r in range(rails) for j in range(groups)}
    spines = [d.node(f"spine{i}", SPINE) for i in range(cfg.spines)]
    for h in range(hosts):
        server, rail = divmod(h, rails)
        d.duplex(h, leaf[(rail, server // per)], host_rate)
    for node in leaf.values():
        for spine in spines:
            for p in range(cfg.parallel_links):
                d.duplex(node, spine, fab_rate, suffix=f"#{p}" if p else "")
    up = cfg.spines * cfg.parallel_links * fab_rate
    oversub = min(per, cfg.servers) * host_rate / up if len(leaf) > 1 else 1.0
    return list(leaf.values()), spines, oversub


def _fat_tree(d: _Draft, cfg: TopologyConfig, host_rate: float, fab_rate: float):
    k = cfg.k
    half = k // 2
    per_edge = cfg.hosts_per_edge or half
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
                d.duplex(a, cores[i * half + j], fab_rate)
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
    per_host = _host_rates(cfg, num_hosts)
    if per_host:
        host_end = np.where(src < num_hosts, src, np.where(dst < num_hosts, dst, -1))
        for at in np.flatnonzero(host_end >= 0):
            nominal[at] = per_host.get(int(host_end[at]), nominal[at])
        oversub = _oversubscription(nominal, src, dst, num_hosts, leaves)
    rate = nominal.copy()
    failed = np.zeros(len(names), dtype=bool)
    for name in cfg.failed_links:
        failed[_lookup(index, name, "topology.failed_links")] = True
    for name, frac in cfg.degraded_links.items():
        rate[_lookup(index, name, "topology.degraded_links")] *= frac
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
        link_delay_ps=np.full(len(names), us_to_ps(cfg.link_delay_us), dtype=np.int64),
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
    )


def _oversubscription(nominal, src, dst, num_hosts: int, leaves) -> float:
    """The largest leaf's host capacity over its uplink capacity (one leaf: 1, a crossbar)."""
    worst = 1.0 if len(leaves) <= 1 else 0.0
    for leaf in leaves:
        hosts = float(nominal[(dst == leaf) & (src < num_hosts)].sum())
        up = float(nominal[(src == leaf) & (dst >= num_hosts)].sum())
        if up > 0 and len(leaves) > 1:
            worst = max(worst, hosts / up)
    return worst


def _lookup(index: dict[str, int], name: str, field_name: str) -> int:
    if name not in index:
        example = next(n for n in index if "leaf" in n or "edge" in n)
        raise ConfigError(f"{field_name}: unknown link '{name}' (links are named like '{example}')")
    return index[name]
