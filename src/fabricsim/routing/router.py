"""Per-switch ECMP forwarding of 5-tuples, path enumeration and the inverse hash.

The :class:`Router` binds a fabric to a hash method and per-switch salts.  ``route`` follows
one 5-tuple through every ECMP stage; ``ports_per_path`` is the inverse: for a fixed
(src ip, dst ip, dst port, protocol), which UDP source ports land on each path.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fabricsim.config.models import Scenario
from fabricsim.errors import ConfigError
from fabricsim.routing.hashing import (
    FIVE_TUPLE,
    KEY_LEN,
    QP_KEY_LEN,
    QP_SHIFT,
    UDP,
    base_crc,
    hash_method,
    port_table,
    qp_table,
    switch_hash,
    switch_hash_int,
    switch_salts,
)
from fabricsim.routing.planes import PlaneChoice, PxnChoice, nic_rule
from fabricsim.topology.fabric import NIC, Fabric

Path = tuple[int, ...]
_ALL_PORTS = np.arange(65536, dtype=np.int64)


@dataclass(eq=False)
class Router:
    """ECMP forwarding on a fabric with one hash method and per-switch salts.

    ``fields`` are the header fields the switches hash (``switch.hash_fields``): a field left
    out counts as zero bytes in the key; with ``dst_qp`` the key is 16 bytes (the 5-tuple and a
    3-byte destination QP).  An entropy value is a source port, or ``port | dst_qp << 16`` for
    a connection whose QPs differ in the destination QP (``lb.qp_field: dst_qp``).

    Examples
    --------
    >>> from fabricsim.config import TopologyConfig
    >>> from fabricsim.topology import build_fabric
    >>> r = Router.build(build_fabric(TopologyConfig(spines=4)), seed=1)
    >>> ports = r.ports_per_path(0, 8)
    >>> len(ports), sum(len(p) for p in ports.values())
    (4, 65536)
    """

    fabric: Fabric
    method: str
    salts: np.ndarray
    dst_port: int = 4791
    proto: int = UDP
    fields: tuple[str, ...] = FIVE_TUPLE
    nic_rule: PlaneChoice | PxnChoice | None = None  # a NIC stage that does not hash
    _base: dict[tuple[int, int], int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        f = set(self.fields)
        self.key_len = QP_KEY_LEN if "dst_qp" in f else KEY_LEN
        ports = port_table(self.key_len)
        self.port_table = ports if "src_port" in f else np.zeros_like(ports)
        self.qp_table = qp_table(self.key_len) if "dst_qp" in f else None
        self._port_ints = self.port_table.tolist()  # perf: scalar keys on Python ints
        self._qp_ints = self.qp_table.tolist() if self.qp_table is not None else None

    @classmethod
    def build(
        cls,
        fabric: Fabric,
        seed: int,
        method: str = "crc32WithSalt",
        salt_mode: str = "per_switch",
        dst_port: int = 4791,
        fields: tuple[str, ...] = FIVE_TUPLE,
    ) -> Router:
        salts = switch_salts(fabric.num_nodes, seed, salt_mode)
        return cls(fabric, method, salts, dst_port, fields=tuple(fields))

    @classmethod
    def for_scenario(cls, sc: Scenario, fabric: Fabric) -> Router:
        """The router of a scenario's switches (hash method, salts, ``lb.dst_port``) on ``fabric``."""
        sw = sc.switch
        router = cls.build(
            fabric, sc.seed, sw.hash_method, sw.salt_mode, sc.lb.dst_port, tuple(sw.hash_fields)
        )
        router.nic_rule = nic_rule(sc, fabric)
        return router

    @property
    def deterministic(self) -> bool:
        return self.method != "random"

    def base(self, src: int, dst: int) -> int:
        """CRC-32 of (src ip, dst ip, port 0, dst port, proto[, QP 0]) over the hashed fields;
        :meth:`key` adds an entropy value's source port (and QP)."""
        key = (src, dst)
        b = self._base.get(key)
        if b is None:
            ip, f = self.fabric.host_ip, self.fields
            b = base_crc(
                int(ip[src]) if "src_ip" in f else 0,
                int(ip[dst]) if "dst_ip" in f else 0,
                self.dst_port if "dst_port" in f else 0,
                self.proto if "proto" in f else 0,
                self.key_len,
            )
            self._base[key] = b
        return b

    def key(self, src: int, dst: int, entropy: int) -> int:
        """CRC-32 of the header of a packet from ``src`` to ``dst`` on ``entropy``."""
        crc = self.base(src, dst) ^ self._port_ints[entropy & 0xFFFF]
        qp = entropy >> QP_SHIFT
        if qp and self._qp_ints is not None:
            crc ^= self._qp_ints[qp]
        return crc

    def keys(self, base: np.ndarray | int, entropies: np.ndarray) -> np.ndarray:
        """:meth:`key` of many entropy values (``base``: one CRC or one per value), uint32."""
        e = np.asarray(entropies, dtype=np.int64)
        crc = np.asarray(base, dtype=np.uint32) ^ self.port_table[e & 0xFFFF]
        if self.qp_table is not None:
            crc = crc ^ self.qp_table[e >> QP_SHIFT]
        return crc.astype(np.uint32)

    def member(self, switch: int, group_size: int, crc: int) -> int:
        """Index of the ECMP member switch ``switch`` picks for a key with CRC ``crc``."""
        tier = int(self.fabric.node_tier[switch])
        return switch_hash_int(crc, self.method, int(self.salts[switch]), tier) % group_size

    def route(self, src: int, dst: int, src_port: int) -> Path | None:
        """The path of the 5-tuple (src, dst, src_port) as link ids; None if it dead-ends."""
        if not self.deterministic:
            raise ValueError("switch.hash_method=random picks a member per packet; no fixed path")
        fab = self.fabric
        crc = self.key(src, dst, src_port)
        link = int(fab.host_uplink[src])
        path = [link]
        node = int(fab.link_dst[link])
        while node != dst:
            group = fab.ecmp_group(node, dst)
            if len(group) == 0:
                return None
            if len(group) == 1:
                link = int(group[0])
            elif self.nic_rule is not None and fab.node_tier[node] == NIC:
                link = int(group[self.nic_rule.member(src, dst, src_port, group)])
            else:
                link = int(group[self.member(node, len(group), crc)])
            path.append(link)
            node = int(fab.link_dst[link])
            if len(path) > 64:
                raise RuntimeError("routing loop")
        return tuple(path)

    def route_many(self, src: np.ndarray, dst: np.ndarray, ports: np.ndarray) -> list[Path | None]:
        """:meth:`route` of many 5-tuples at once: the same paths, computed stage by stage on
        arrays (perf: one array pass per destination leaf and stage instead of a Python loop
        per hop of every flow)."""
        if not self.deterministic:
            raise ValueError("switch.hash_method=random picks a member per packet; no fixed path")
        fab = self.fabric
        src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        n = len(src)
        crc = np.fromiter((self.base(int(a), int(b)) for a, b in zip(src, dst, strict=True)),
                          dtype=np.uint32, count=n)  # fmt: skip
        crc = self.keys(crc, ports)
        salts = self.salts.astype(np.uint32)
        first = fab.host_uplink[src].astype(np.int64)
        node = fab.link_dst[first].astype(np.int64)
        leaf = fab.host_leaf[dst].astype(np.int64)
        hops = [first]
        alive = np.ones(n, dtype=bool)
        by_leaf = np.argsort(leaf, kind="stable")
        cuts = np.flatnonzero(np.diff(leaf[by_leaf])) + 1
        groups = [g for g in np.split(by_leaf, cuts) if len(g)]
        up_start, up_links = fab.up_groups()
        array_hash = hash_method(self.method).array
        assert array_hash is not None  # deterministic
        while True:
            moving = alive & (node != dst)
            if not moving.any():
                break
            link = np.full(n, -1, dtype=np.int64)
            down = moving & (node == leaf)  # at the destination's leaf: its downlink
            if down.any():
                dl = fab.host_downlink[dst[down]].astype(np.int64)
                ok = np.array([fab.usable(int(x)) for x in dl], dtype=bool)
                link[np.flatnonzero(down)[ok]] = dl[ok]
            start = up_start[node].copy()  # the group of each flow: its switch's up-links ...
            size = up_start[node + 1] - start
            table = np.zeros(n, dtype=bool)  # ... or a group of its leaf's table
            for idx in groups:
                idx = idx[moving[idx] & ~down[idx]]
                if not len(idx):
                    continue
                exc, estart, elinks = fab.groups_toward(int(leaf[idx[0]]))
                pos = np.minimum(np.searchsorted(exc, node[idx]), max(len(exc) - 1, 0))
                hit = (exc[pos] == node[idx]) if len(exc) else np.zeros(len(idx), dtype=bool)
                sel, p = idx[hit], pos[hit]
                start[sel], size[sel] = estart[p], estart[p + 1] - estart[p]
                table[sel] = True
                member = np.zeros(len(idx), dtype=np.int64)
                multi = np.flatnonzero(size[idx] > 1)
                if len(multi):
                    sub = idx[multi]
                    tiers = fab.node_tier[node[sub]]
                    for tier in np.unique(tiers):
                        t = tiers == tier
                        if tier == NIC and self.nic_rule is not None:  # the NIC's rule, in order
                            member[multi[t]] = self._plane_members(
                                sub[t], src, dst, ports, start, size, table, elinks, up_links
                            )
                            continue
                        x = crc[sub[t]] ^ salts[node[sub[t]]]
                        h = array_hash(x, int(tier))
                        member[multi[t]] = (h % size[sub[t]].astype(np.uint32)).astype(np.int64)
                has = size[idx] > 0
                at = start[idx] + member
                in_table, up = has & table[idx], has & ~table[idx]
                link[idx[in_table]] = elinks[at[in_table]]
                link[idx[up]] = up_links[at[up]]
            dead = moving & (link < 0)
            alive &= ~dead
            hops.append(link)
            node = np.where(link >= 0, fab.link_dst[np.maximum(link, 0)], node)
            if len(hops) > 64:
                raise RuntimeError("routing loop")
        every = np.stack(hops, axis=1)
        depth = (every >= 0).sum(axis=1)
        rows = every.tolist()
        return [
            tuple(row[: int(d)]) if ok else None
            for row, d, ok in zip(rows, depth, alive, strict=True)
        ]

    def _plane_members(self, rows, src, dst, ports, start, size, table, elinks, up_links):
        """The NIC stage of :meth:`route_many` under a plane rule, flow by flow in order."""
        assert self.nic_rule is not None
        out = np.zeros(len(rows), dtype=np.int64)
        ports = np.asarray(ports, dtype=np.int64)
        for i, r in enumerate(rows.tolist()):
            lo, n = int(start[r]), int(size[r])
            group = (elinks if table[r] else up_links)[lo : lo + n]
            out[i] = self.nic_rule.member(int(src[r]), int(dst[r]), int(ports[r]), group)
        return out

    def ports_per_path(self, src: int, dst: int, dst_qp: int = 0) -> dict[Path, np.ndarray]:
        """Source ports (0..65535) that land on each equal-cost path from ``src`` to ``dst``
        (for packets to destination QP ``dst_qp``, if the switches hash it).

        Every path of :meth:`Fabric.paths` is a key, in that order; a path no port reaches maps to
        an empty array.  The arrays partition 0..65535 (ports that dead-end are left out).
        """
        if not self.deterministic:
            raise ConfigError("switch.hash_method=random has no inverse: members are per packet")
        out: dict[Path, np.ndarray] = {
            p: np.empty(0, dtype=np.int64) for p in self.fabric.paths(src, dst)
        }
        for path, ports in self._split(src, dst, _ALL_PORTS | (dst_qp << QP_SHIFT)):
            out[path] = np.sort(ports & 0xFFFF)
        return out

    def port_paths(self, src: int, dst: int, ports: np.ndarray) -> list[tuple[Path, int]]:
        """The paths the source ``ports`` take from ``src`` to ``dst``, with how many ports
        take each, in :meth:`Fabric.paths` order (lexicographic in link ids); ports that
        dead-end are left out (perf: only the given ports are hashed, and no path is visited
        that none of them takes)."""
        if not self.deterministic:
            raise ConfigError("switch.hash_method=random has no inverse: members are per packet")
        return [(path, len(p)) for path, p in self._split(src, dst, np.asarray(ports))]

    def _split(self, src: int, dst: int, ports: np.ndarray) -> list[tuple[Path, np.ndarray]]:
        """(path, the ``ports`` on it) for every path some of them take, in :meth:`Fabric.paths`
        order: the ports are split at every multi-member stage and each part followed, depth
        first, member 0 first."""
        fab = self.fabric
        ports = ports.astype(np.int64)
        crc = self.keys(self.base(src, dst), ports)
        first = int(fab.host_uplink[src])
        out: list[tuple[Path, np.ndarray]] = []
        start = np.arange(len(ports))
        stack: list[tuple[int, Path, np.ndarray]] = [(int(fab.link_dst[first]), (first,), start)]
        while stack:
            node, path, sel = stack.pop()
            if node == dst:
                out.append((path, ports[sel]))
                continue
            group = fab.ecmp_group(node, dst)
            if len(group) == 0:
                continue
            if len(group) == 1:
                stack.append((int(fab.link_dst[group[0]]), (*path, int(group[0])), sel))
                continue
            tier = int(fab.node_tier[node])
            if tier == NIC and self.nic_rule is not None:
                members = self.nic_rule.members(src, dst, ports[sel], group)
            else:
                h = switch_hash(crc[sel], self.method, int(self.salts[node]), tier)
                members = (h % np.uint32(len(group))).astype(np.int64)
            # perf: one stable sort splits the ports by member (not one mask per member);
            # each part keeps the ports' order, as sel[members == m] would
            # (members as uint16: numpy sorts them stably by radix, in linear time)
            if len(group) <= 65536:
                members = members.astype(np.uint16)
            order = np.argsort(members, kind="stable")
            cuts = np.searchsorted(members[order], np.arange(len(group) + 1)).tolist()
            by_member = sel[order]
            for m in range(len(group) - 1, -1, -1):
                chosen = by_member[cuts[m] : cuts[m + 1]]
                if len(chosen):
                    link = int(group[m])
                    stack.append((int(fab.link_dst[link]), (*path, link), chosen))
        return out

    def stage_members(self, src: int, dst: int) -> list[np.ndarray]:
        """Member index chosen at each multi-member ECMP stage, for all 65,536 ports.

        Used to test stage independence: row ``i`` is stage ``i`` along the route of each port.
        Stages are counted along each port's own route, so the list has one array per stage.
        """
        fab = self.fabric
        crc = self.keys(self.base(src, dst), np.arange(65536))
        node = np.full(65536, int(fab.link_dst[fab.host_uplink[src]]), dtype=np.int64)
        stages: list[np.ndarray] = []
        for _ in range(16):
            if np.all(node == dst):
                break
            member = np.zeros(65536, dtype=np.int64)
            nxt = node.copy()
            multi = False
            for sw in np.unique(node[node != dst]):
                sel = node == sw
                group = fab.ecmp_group(int(sw), dst)
                if len(group) > 1:
                    multi = True
                    h = switch_hash(
                        crc[sel], self.method, int(self.salts[sw]), int(fab.node_tier[sw])
                    )
                    member[sel] = (h % np.uint32(len(group))).astype(np.int64)
                nxt[sel] = fab.link_dst[group[member[sel]]] if len(group) else dst
            if multi:
                stages.append(member)
            node = nxt
        return stages
