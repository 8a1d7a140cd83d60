"""Per-switch ECMP forwarding of 5-tuples, path enumeration and the inverse hash.

The :class:`Router` binds a fabric to a hash method and per-switch salts.  ``route`` follows
one 5-tuple through every ECMP stage; ``ports_per_path`` is the inverse: for a fixed
(src ip, dst ip, dst port, protocol), which UDP source ports land on each path.
"""

from __future__ import annotations

import functools
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
from fabricsim.routing.mix import header_key
from fabricsim.routing.planes import PlaneChoice, PxnChoice, nic_rule
from fabricsim.topology.fabric import NIC, Fabric

Path = tuple[int, ...]
_ALL_PORTS = np.arange(65536, dtype=np.int64)
_MAX_HOPS = 64  # a longer path is a routing loop
_DEAD = -1  # the node of a slot of Router._walk whose path met an empty group: its ports drop


def _ports_in(label: np.ndarray | None, slots: list[int], count: int) -> slice | np.ndarray:
    """The ports of :meth:`Router._walk` in ``slots`` (of ``count``): all of them, as a
    slice, if these are all the slots."""
    if label is None or len(slots) == count:
        return slice(None)
    if len(slots) == 1:
        return np.flatnonzero(label == slots[0])
    mark = np.zeros(count, dtype=bool)
    mark[slots] = True
    return np.flatnonzero(mark[label])


def _compact(
    label: np.ndarray, at: list[int], paths: list[Path]
) -> tuple[np.ndarray, list[int], list[Path]]:
    """Drop the slots of :meth:`Router._walk` no port is in; the rest keep their order."""
    count = np.bincount(label, minlength=len(at))
    used = np.flatnonzero(count).tolist()
    if len(used) < len(at):
        label = (np.cumsum(count > 0) - 1)[label]
    return label, [at[i] for i in used], [paths[i] for i in used]


def _modulo(h: np.ndarray, size: int | np.ndarray, work: np.ndarray) -> np.ndarray:
    """``h % size`` of uint32 hash values, by one group size or one per value, in place
    (``work``: an array like ``h``; perf: by one size as ``h & (size - 1)`` for a power of
    two, else ``h - h // size * size``: numpy divides by a scalar with libdivide, 5x faster
    than its ``%``)."""
    if h.dtype != np.uint32:  # (a registered hash of another type)
        return h % size
    if isinstance(size, int) and size & (size - 1) == 0:
        return np.bitwise_and(h, size - 1, out=h)
    if isinstance(size, int):
        np.floor_divide(h, size, out=work)
        work *= size
        h -= work
        return h
    return np.remainder(h, size, out=h)


def _by_value(values: np.ndarray) -> list[np.ndarray]:
    """Indices of ``values`` grouped by value (groups by increasing value, indices in order)."""
    order = np.argsort(values, kind="stable")
    cuts = np.flatnonzero(np.diff(values[order])) + 1
    return [g for g in np.split(order, cuts) if len(g)]


def _paths_of(hops: list[np.ndarray], alive: np.ndarray) -> list[Path | None]:
    """Per flow, its link at each stage (-1 past its end) as a path; None where it died."""
    every = np.stack(hops, axis=1)
    depth = (every >= 0).sum(axis=1)
    rows = every.tolist()
    return [
        tuple(row[: int(d)]) if ok else None for row, d, ok in zip(rows, depth, alive, strict=True)
    ]


@functools.lru_cache(maxsize=8)
def _as_ints(key_len: int, hashed: bool, which: str) -> list[int]:
    """A port (or QP) CRC table as Python ints, built once per process and shared, read only
    (perf: every router rebuilt its 65,536-entry list; the decomposed engine builds one per
    link simulation, 2.5 s of a profiled run)."""
    if which == "qp":
        return qp_table(key_len).tolist()
    table = port_table(key_len)
    return table.tolist() if hashed else np.zeros_like(table).tolist()


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
    # base CRC of each host pair met so far, by ``src x num_nodes + dst`` (see base; the
    # packet engine's forwarding reads it too)
    bases: dict[int, int] = field(default_factory=dict)
    _work: dict[str, np.ndarray] = field(default_factory=dict)  # see _scratch
    _link_dst: list[int] = field(default_factory=list)  # perf: fabric.link_dst, as ints

    def __post_init__(self) -> None:
        f = set(self.fields)
        self.key_len = QP_KEY_LEN if "dst_qp" in f else KEY_LEN
        ports = port_table(self.key_len)
        self.port_table = ports if "src_port" in f else np.zeros_like(ports)
        self.qp_table = qp_table(self.key_len) if "dst_qp" in f else None
        self.port_ints = _as_ints(self.key_len, "src_port" in f, "port")  # perf: Python ints
        self.qp_ints = _as_ints(self.key_len, True, "qp") if self.qp_table is not None else None

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
        key = src * self.fabric.num_nodes + dst
        b = self.bases.get(key)
        if b is None:
            ip, f = self.fabric.host_ip, self.fields
            b = base_crc(
                int(ip[src]) if "src_ip" in f else 0,
                int(ip[dst]) if "dst_ip" in f else 0,
                self.dst_port if "dst_port" in f else 0,
                self.proto if "proto" in f else 0,
                self.key_len,
            )
            self.bases[key] = b
        return b

    def key(self, src: int, dst: int, entropy: int) -> int:
        """CRC-32 of the header of a packet from ``src`` to ``dst`` on ``entropy``."""
        return header_key(self.base(src, dst), self.port_ints, self.qp_ints, entropy)

    def keys(
        self, base: np.ndarray | int, entropies: np.ndarray, out: np.ndarray | None = None
    ) -> np.ndarray:
        """:meth:`key` of many entropy values (``base``: one CRC or one per value), uint32
        (in ``out``, if given: then in work arrays of the router too, see :meth:`_scratch`)."""
        e = np.asarray(entropies, dtype=np.int64)
        work = None if out is None else self._scratch("port", len(e), np.int64)
        port = np.bitwise_and(e, 0xFFFF, out=work)
        crc = np.take(self.port_table, port, out=out, mode="clip")  # (ports are in range)
        crc ^= np.asarray(base, dtype=np.uint32)
        if self.qp_table is not None:
            crc ^= self.qp_table[e >> QP_SHIFT]
        return crc

    def _scratch(self, name: str, n: int, dtype: type[np.generic]) -> np.ndarray:
        """A work array of ``n`` values, kept on the router from call to call (perf: with its
        ~2 MB of arrays allocated anew for each host pair, the inverse hash made the C library
        hand the memory back to the system and fault it in again, page by page: at k = 8, 630
        page faults and 3/4 of the time of a port_paths call).  Valid until the next call that
        asks for ``name``."""
        work = self._work.get(name)
        if work is None or len(work) < n or work.dtype != dtype:
            work = self._work[name] = np.empty(max(n, len(_ALL_PORTS)), dtype=dtype)
        return work[:n]

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
        groups = _by_value(leaf)
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
        return _paths_of(hops, alive)

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
        if dst_qp == 0:  # (_split returns parts of _ALL_PORTS as views of one array)
            return dict(self._split(src, dst, _ALL_PORTS, every=True))
        every = _ALL_PORTS | (dst_qp << QP_SHIFT)
        return {path: ports & 0xFFFF for path, ports in self._split(src, dst, every, every=True)}

    def port_paths(self, src: int, dst: int, ports: np.ndarray) -> list[tuple[Path, int]]:
        """The paths the source ``ports`` take from ``src`` to ``dst``, with how many ports
        take each, in :meth:`Fabric.paths` order (lexicographic in link ids); ports that
        dead-end are left out (perf: the ports are counted on each path, not sorted)."""
        if not self.deterministic:
            raise ConfigError("switch.hash_method=random has no inverse: members are per packet")
        _, paths, counts = self._walk(src, dst, np.asarray(ports, dtype=np.int64))
        return [(path, n) for path, n in zip(paths, counts, strict=True) if path is not None]

    def _split(
        self, src: int, dst: int, ports: np.ndarray, every: bool = False
    ) -> list[tuple[Path, np.ndarray]]:
        """(path, the ``ports`` on it) for every path some of them take (``every``: every path
        of :meth:`Fabric.paths`, so none is walked twice), in that order, each part keeping
        the ports' order.

        :meth:`_walk` labels every port with its path; one stable sort by label then cuts the
        ports into the parts (:meth:`_positions`; perf: not one sort per branch of the ECMP
        tree).
        """
        ports = np.asarray(ports, dtype=np.int64)
        label, paths, counts = self._walk(src, dst, ports, every)
        if label is None:
            parts = [ports.copy()]
        elif ports is _ALL_PORTS:  # perf: the positions of its ports are the ports
            parts = self._positions(label, counts)
        else:
            parts = [ports[at] for at in self._positions(label, counts)]
        return [(path, part) for path, part in zip(paths, parts, strict=True) if path is not None]

    def _positions(self, label: np.ndarray, counts: list[int]) -> list[np.ndarray]:
        """Per slot of :meth:`_walk`, the positions of its ports, ascending (int64 views of one
        array): one stable sort by label, cut by the counts (perf: labels of one or two bytes
        are sorted by radix, in linear time)."""
        if len(counts) <= 65536:
            key = self._scratch("key", len(label), np.uint8 if len(counts) <= 256 else np.uint16)
            np.copyto(key, label, casting="unsafe")
            label = key
        order = np.argsort(label, kind="stable")
        ends = np.cumsum(counts).tolist()
        return [order[lo:hi] for lo, hi in zip([0, *ends], ends, strict=False)]

    def _walk(
        self, src: int, dst: int, ports: np.ndarray, every: bool = False
    ) -> tuple[np.ndarray | None, list[Path | None], list[int]]:
        """Follow all ``ports`` from ``src`` toward ``dst`` at once, one hop per step.

        The paths so far are slots in depth-first order (member 0 first), and every port
        carries the label (index) of its slot.  A hop replaces each slot by one per member of
        its group, in order (one that has arrived, or met an empty group, stays), which keeps
        that order; where a group has several members the ports' labels follow their members.
        A hop without such a group touches no port.  A path that meets an empty group is a
        dead end, and so are its ports.  Slots no port is in are dropped as soon as they
        outnumber the ports (:func:`_compact`), unless ``every`` path is asked for.

        Returns
        -------
        labels : np.ndarray or None
            Per port the slot of its path (int64, a work array: valid until the next walk);
            None if no group split the ports (all on the one path).
        paths : list of tuple or None
            Per slot its path, in :meth:`Fabric.paths` order, or None if no port arrives on
            it (a path no port takes is kept if ``every`` path is asked for, or no group split
            the ports).
        counts : list of int
            The number of ports in each slot.
        """
        fab = self.fabric
        crc = self.keys(self.base(src, dst), ports, self._scratch("crc", len(ports), np.uint32))
        first = int(fab.host_uplink[src])
        at = [int(fab.link_dst[first])]  # per slot: the node its path has reached (or _DEAD)
        paths: list[Path] = [(first,)]
        label: np.ndarray | None = None
        toward: dict[int, list[int]] = {}  # the ECMP group of each node toward dst (link ids)
        for _ in range(_MAX_HOPS):
            for node in set(at).difference(toward):
                if node >= 0 and node != dst:
                    toward[node] = fab.ecmp_group(node, dst).tolist()
            groups = [toward.get(node) for node in at]  # None: the slot stays
            if all(group is None for group in groups):
                break
            next_at, next_paths = self._next_hops(at, paths, groups)
            if any(group is not None and len(group) > 1 for group in groups):
                label = self._relabel(label, src, dst, ports, crc, at, groups)
                if not every and len(next_at) > len(ports):
                    label, next_at, next_paths = _compact(label, next_at, next_paths)
            at, paths = next_at, next_paths
        else:
            raise RuntimeError("routing loop")
        if label is None:
            return None, [paths[0] if at[0] == dst else None], [len(ports)]
        counts = np.bincount(label, minlength=len(at)).tolist()
        arrived = [node == dst and (n > 0 or every) for node, n in zip(at, counts, strict=True)]
        return label, [p if a else None for p, a in zip(paths, arrived, strict=True)], counts

    def _next_hops(
        self, at: list[int], paths: list[Path], groups: list[list[int] | None]
    ) -> tuple[list[int], list[Path]]:
        """The slots of :meth:`_walk` one hop on: one per member of each slot's group, in
        order; a slot that has arrived stays, one at an empty group becomes a dead end."""
        if not self._link_dst:
            self._link_dst = self.fabric.link_dst.tolist()
        link_dst = self._link_dst
        next_at: list[int] = []
        next_paths: list[Path] = []
        for node, path, group in zip(at, paths, groups, strict=True):
            if not group:  # stays: arrived, or a dead end
                next_at.append(node if group is None else _DEAD)
                next_paths.append(path)
            elif len(group) == 1:
                next_at.append(link_dst[group[0]])
                next_paths.append((*path, group[0]))
            else:
                next_at += [link_dst[link] for link in group]
                next_paths += [(*path, link) for link in group]
        return next_at, next_paths

    def _relabel(
        self,
        label: np.ndarray | None,
        src: int,
        dst: int,
        ports: np.ndarray,
        crc: np.ndarray,
        at: list[int],
        groups: list[list[int] | None],
    ) -> np.ndarray:
        """The ports' slots after a hop of :meth:`_walk` where some group has several
        members: the first of their slot's children, plus their member."""
        member = self._members(src, dst, ports, crc, label, at, groups)
        if label is None:
            label = self._scratch("label", len(ports), np.int64)
            label[:] = member
            return label
        children = [max(len(g), 1) if g is not None else 1 for g in groups]
        if len(set(children)) == 1:  # perf: slot i's children start at i * radix
            label *= children[0]
        else:
            start = np.cumsum([0, *children[:-1]])
            label = start[label]
        label += member
        return label

    def _members(
        self,
        src: int,
        dst: int,
        ports: np.ndarray,
        crc: np.ndarray,
        label: np.ndarray | None,
        at: list[int],
        groups: list[list[int] | None],
    ) -> np.ndarray:
        """The member of its slot's group each port takes at one stage of :meth:`_walk` (0 if
        the group has one member, or none): the NIC rule's, or its switch's hash (one array pass
        per tier of the stage's switches, over the ports at them)."""
        fab = self.fabric
        ruled: list[int] = []  # slots at a NIC whose rule picks the member
        by_tier: dict[int, list[int]] = {}  # slots whose switch hashes, by its tier
        for i, (node, group) in enumerate(zip(at, groups, strict=True)):
            if group is not None and len(group) > 1:
                node_tier = int(fab.node_tier[node])
                if node_tier == NIC and self.nic_rule is not None:
                    ruled.append(i)
                else:
                    by_tier.setdefault(node_tier, []).append(i)
        picks: list[tuple[list[int], int | None]] = [(rows, t) for t, rows in by_tier.items()]
        picks += [([i], None) for i in ruled]  # tier None: the NIC's rule
        member = None
        for rows, tier in picks:
            sel = _ports_in(label, rows, len(at))
            if tier is None:
                assert self.nic_rule is not None
                picked = self.nic_rule.members(src, dst, ports[sel], groups[rows[0]])
            else:
                picked = self._hashed(tier, rows, at, groups, crc[sel], label, sel)
            if isinstance(sel, slice):  # these slots are all of them
                return picked
            if member is None:
                member = self._scratch("member", len(ports), np.int64)
                member.fill(0)
            member[sel] = picked
        assert member is not None
        return member

    def _hashed(
        self,
        tier: int,
        rows: list[int],
        at: list[int],
        groups: list[list[int] | None],
        crc: np.ndarray,
        label: np.ndarray | None,
        sel: slice | np.ndarray,
    ) -> np.ndarray:
        """The members the switches of slots ``rows`` (all at ``tier``) pick for the keys
        ``crc``: those of the ports ``sel``, in slots ``label[sel]``."""
        nodes = [at[i] for i in rows]
        sizes = [len(g) for i in rows if (g := groups[i]) is not None]
        if len(rows) == 1:
            salt: int | np.ndarray = int(self.salts[nodes[0]])
        else:
            assert label is not None  # several slots: the ports were split
            salts = np.zeros(len(at), dtype=np.uint32)
            salts[rows] = self.salts[nodes]
            salt = np.take(salts, label[sel], out=self._scratch("salt", len(crc), np.uint32))
        h = switch_hash(crc, self.method, salt, tier, self._scratch("hash", len(crc), np.uint32))
        work = self._scratch("work", len(crc), np.uint32)
        if len(set(sizes)) == 1:
            return _modulo(h, sizes[0], work)
        size = np.ones(len(at), dtype=np.uint32)
        size[rows] = sizes
        assert label is not None
        return _modulo(h, size[label[sel]], work)

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
