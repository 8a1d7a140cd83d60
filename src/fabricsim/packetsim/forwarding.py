"""Switch forwarding: small strategies per switch, and the route cache the hot path reads.

Two kinds of strategy pick the member of the ECMP group toward a packet's destination:

* **Hashing** (:class:`Forwarding`, ``switch.load_balancing_method: ecmp``).  ``EcmpForwarding``
  hashes the 5-tuple whose UDP source port is the packet's entropy with the switch's hash
  (``Router.member`` on ``router.key(src, dst, entropy)``), so a packet's whole
  path is a function of (src, dst, entropy) and the :class:`RouteTable` computes it once and
  caches it.  ``RandomForwarding`` (``hash_method: random``) draws a member per packet at each
  stage, so its routes are drawn per packet.
* **Member choice on live state** (:class:`~fabricsim.lb.switch.MemberChoice`, one object per
  switch, built by :func:`make_member_choices` from the registered switch method in
  :mod:`fabricsim.lb`): ``adaptive`` (per packet, the member whose output port has the least
  queued bytes, ties broken at random), ``flowlet`` (a flow -- the 5-tuple, so one entropy --
  keeps its member until it has been idle longer than ``switch.flowlet_gap_us``, then picks
  anew, at random as LetFlow or the least loaded member: ``switch.flowlet_pick``) and
  ``spray`` (a random member per packet).  Such a choice cannot be precomputed: a data route
  then stops at a :class:`Decider` element at every switch with more than one member; the
  decider picks the member, swaps the packet's ``hops`` for the continuation through that
  member (built once and kept), and hands it to the member's port at once.  Only data packets (and their trimmed
  headers, which are hashed) pass deciders: ACKs and NACKs follow the hashed route of their
  entropy, as small control packets do on switches that balance data adaptively.

A switch knows the state of its own ports: under a live member choice no packet leaves by a
member whose link has failed (unless every member has) -- data packets by the choice, control
packets and trimmed headers by the hash over the live members; under ``ecmp`` hashing keeps
failed members in ``blackhole`` mode (routes are cached; a mid-run failure black-holes).
Every random draw comes from seeded streams (``switch/hash``, ``switch/lb``).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from typing import Any

from fabricsim.config.models import Scenario
from fabricsim.engine_api import DATA, route_key
from fabricsim.lb.switch import MemberChoice, SwitchContext, switch_method
from fabricsim.packetsim.calendar import Sim
from fabricsim.packetsim.packets import Packet, Route
from fabricsim.packetsim.ports import Port
from fabricsim.routing.hashing import hash_method, scalar_hash
from fabricsim.routing.mix import fmix32_int, fmix32_scalar, header_key
from fabricsim.routing.router import Router
from fabricsim.topology.fabric import NIC, Fabric


class Forwarding:
    """Interface: which member of a switch's ECMP group a packet takes, by its header.

    ``key(src, dst, entropy)`` is computed once per packet header (for ECMP: the CRC-32 of the
    5-tuple); ``member(switch, group_size, key)`` is the switch's choice.  ``static``: the
    choice is a function of the packet's header alone (so routes can be cached).
    """

    def __init__(self) -> None:
        self.static = True

    def key(self, src: int, dst: int, entropy: int) -> int:
        return 0

    def member(self, switch: int, group_size: int, key: int) -> int:
        raise NotImplementedError  # pragma: no cover - interface


class EcmpForwarding(Forwarding):
    """Per-flow ECMP: the switch's hash of the 5-tuple (``switch.hash_method``).

    Same result as :meth:`Router.member` on ``router.key(src, dst, entropy)``, with the
    switches' salts and tiers in integer tables.
    """

    def __init__(self, router: Router) -> None:
        super().__init__()
        self.router = router
        self.method = router.method
        self.nodes = router.fabric.num_nodes
        self.bases = router.bases  # the router's cache of Router.base, read here directly
        self.port_ints, self.qp_ints = router.port_ints, router.qp_ints
        self.salts = array("q", [int(x) for x in router.salts])
        self.tiers = array("q", [int(x) for x in router.fabric.node_tier])
        self.scalar = scalar_hash(self.method)  # perf: switch_hash_int without the lookup
        # perf: the default method's scalar is fmix32_int, called directly (a C call compiled)
        self.mixed = self.scalar is fmix32_scalar

    def key(self, src: int, dst: int, entropy: int) -> int:
        """:meth:`Router.key`, reading the router's cache of pair CRCs without a call."""
        base = self.bases.get(src * self.nodes + dst)
        if base is None:
            base = self.router.base(src, dst)
        return header_key(base, self.port_ints, self.qp_ints, entropy)

    def member(self, switch: int, group_size: int, key: int) -> int:
        x = (key ^ self.salts[switch]) & 0xFFFFFFFF
        if self.mixed:
            return fmix32_int(x) % group_size
        return self.scalar(x, self.tiers[switch]) % group_size


class RandomForwarding(Forwarding):
    """``hash_method: random``: a uniformly random member per packet and stage."""

    def __init__(self, rand: Callable[[], float]) -> None:
        super().__init__()
        self.static = False
        self.rand = rand

    def member(self, switch: int, group_size: int, key: int) -> int:
        return int(self.rand() * group_size)


def make_forwarding(sc: Scenario, router: Router, rand: Callable[[], float]) -> Forwarding:
    """The hash of the scenario's switches (every switch the same): routes of control packets,
    and of data packets under ``switch.load_balancing_method: ecmp``."""
    if not hash_method(sc.switch.hash_method).deterministic:  # random: a member per packet
        return RandomForwarding(rand)
    return EcmpForwarding(router)


# -- member choice on live state --------------------------------------------------------------


def make_member_choices(
    sc: Scenario, fabric: Fabric, sim: Sim, rand: Callable[[], float]
) -> list[MemberChoice | None] | None:
    """One :class:`MemberChoice` per node (None for hosts), or None for a ``hashed`` method.

    The method is the registered ``switch.load_balancing_method`` (:mod:`fabricsim.lb.switch`);
    every switch gets its own object, all sharing ``rand``.
    """
    method = switch_method(sc.switch.load_balancing_method)
    if method.hashed:
        return None
    ctx = SwitchContext.of(sc, sim, rand)
    tiers = fabric.node_tier.tolist()  # NIC nodes and NVSwitches are no fabric switches
    return [
        method.for_switch(ctx) if n >= fabric.num_hosts and tiers[n] < NIC else None
        for n in range(fabric.num_nodes)
    ]


# -- routes -------------------------------------------------------------------------------------


class Decider:
    """A route element at a switch with several members: ask the switch's choice, go on.

    One per (source, destination, links so far); ``next[m]`` is the packet's route through
    member ``m`` from the source on (the same prefix, so ``pkt.hop`` stays valid), built on
    first use; ``done[m]`` is the full :class:`Route` when no choice is left after ``m``.
    """

    __slots__ = (
        "table", "switch", "src", "dst", "prefix", "group", "ports", "entries", "next", "done",
        "choice", "fkey",
    )  # fmt: skip

    def __init__(
        self, table: RouteTable, switch: int, src: int, dst: int, prefix: tuple[int, ...]
    ) -> None:
        self.table, self.switch, self.src, self.dst, self.prefix = table, switch, src, dst, prefix
        self.group = table.group(switch, dst)
        self.ports = [table.port_objs[x] for x in self.group]
        self.entries = [table.ports[x] for x in self.group]
        self.next: list[tuple[Callable, ...] | None] = [None] * len(self.group)
        self.done: list[Route | None] = [None] * len(self.group)
        assert table.choices is not None
        choice = table.choices[switch]
        assert choice is not None
        self.choice: MemberChoice = choice
        self.fkey = route_key(src, dst)

    def receive(self, pkt: Packet) -> None:
        if pkt.kind == DATA:
            m = self.choice.pick(self, pkt)
            hops = self.next[m]
            if hops is None:
                hops = self._grow(m)
            route = self.done[m]
            if route is not None:  # the last choice: the packet's path is known
                used = pkt.pdc.routes_used
                used[route] = used.get(route, 0) + 1
                spine = self.table.spine
                if spine is not None:
                    spine.touch(route.tops, pkt.pdc.flow)
        else:  # a trimmed header: hashed like control packets
            m = self._hashed(pkt.entropy)
            hops = self.next[m]
            if hops is None:
                hops = self._grow(m)
        pkt.hops = hops
        self.entries[m](pkt)

    def _hashed(self, entropy: int) -> int:
        """The member the switch's hash gives ``entropy`` (over the live members)."""
        fwd, g = self.table.forwarding, self.group
        key = fwd.key(self.src, self.dst, entropy)
        link = g[fwd.member(self.switch, len(g), key)]
        if self.ports[g.index(link)].failed:
            link = self.table.rehash_live(self.switch, g, key, link)
        return g.index(link)

    def _grow(self, m: int) -> tuple[Callable, ...]:
        links, node = self.table.walk((*self.prefix, self.group[m]), self.dst)
        hops, route = self.table.dynamic_hops(links, node, self.src, self.dst)
        self.next[m], self.done[m] = hops, route
        return hops


class RouteTable:
    """Routes of (src host, dst host, entropy), cached when forwarding is static.

    ``ports[link]`` is the ``receive`` callable of the link's output port; ``nics[host]`` and
    ``nic_ctrl[host]`` are the host NIC's entries for data and for ACKs/NACKs; dead ends finish
    on ``sink``.  ``cache`` keys are ``route_key(src, dst) | entropy``.  With
    ``choices`` (one :class:`MemberChoice` per node; ``port_objs`` the ports themselves) data
    routes run through :class:`Decider` elements; ``spine`` is the spine-flow recorder.

    The ECMP groups a route reads are kept in an integer table by what they depend on
    (:meth:`Fabric.group_key`): a switch's group toward a host is the host's downlink at the
    host's own leaf, else the same for every host of the leaf.  ``gidx[(node - hosts) x leaves
    + row of the leaf]`` is 1 + the group's index in ``glist`` (0: not looked up yet), and
    ``down[dst]`` the downlink group.  # perf: an array read per stage instead of a dict
    lookup keyed by a new tuple (a k = 16 fabric has 300,000 (switch, host) pairs)
    """

    def __init__(
        self,
        fabric: Fabric,
        forwarding: Forwarding,
        ports: list[Callable],
        nics: list[Callable],
        nic_ctrl: list[Callable],
        sink: Callable,
        top_index: dict[int, int],
        choices: list[MemberChoice | None] | None = None,
        port_objs: list[Port] | None = None,
    ) -> None:
        self.fabric, self.forwarding = fabric, forwarding
        self.ports, self.nics, self.nic_ctrl, self.sink = ports, nics, nic_ctrl, sink
        self.choices, self.port_objs = choices, port_objs or []
        self.spine: Any = None
        self.top_of = array("q", [top_index.get(n, -1) for n in range(fabric.num_nodes)])
        self.link_dst = array("q", [int(x) for x in fabric.link_dst])
        self.uplink = array("q", [int(x) for x in fabric.host_uplink])
        # a NIC stage that does not hash (nic.plane_select, PXN): the source NIC's rule
        self.nic_rule = (
            forwarding.router.nic_rule if isinstance(forwarding, EcmpForwarding) else None
        )
        self.nic_stage = bool((fabric.node_tier == NIC).any())  # hosts reach NIC nodes first
        self.namer = fabric.path_label  # a route's label, made when read (Route.label)
        self.cache: dict[int, Route] = {}
        self.paths: dict[tuple[tuple[int, ...], bool], Route] = {}
        self.roots: dict[tuple[int, ...], tuple[tuple[Callable, ...], Route | None]] = {}
        self.built = 0
        self.static = forwarding.static
        self.hosts = fabric.num_hosts
        host_leaf = [int(x) for x in fabric.host_leaf]
        self.host_leaf = array("q", host_leaf)
        leaves = sorted(set(host_leaf))
        row = [-1] * fabric.num_nodes
        for i, leaf in enumerate(leaves):
            row[leaf] = i
        self.leaf_row = array("q", row)
        self.nleaves = len(leaves)
        self.gidx = array("i", bytes(4 * (fabric.num_nodes - self.hosts) * self.nleaves))
        self.glist: list[tuple[int, ...]] = []
        self.special: list[dict[int, int] | None] = [None] * self.nleaves  # see _group_index
        self.up_gi = array("i", bytes(4 * (fabric.num_nodes - self.hosts)))
        self.down: list[tuple[int, ...] | None] = [None] * self.hosts

    def get(self, src: int, dst: int, entropy: int) -> Route:
        """The route of a packet from ``src`` to ``dst`` on ``entropy`` (cached if static)."""
        key = route_key(src, dst) | entropy
        route = self.cache.get(key)
        if route is None:
            route = self._build(src, dst, entropy)
            if self.choices is not None:
                route = self._with_choices(route, src, dst)
            if self.static:
                self.cache[key] = route
        return route

    def group(self, switch: int, dst: int) -> tuple[int, ...]:
        """The ECMP group (out-link ids) of ``switch`` toward host ``dst``."""
        leaf = self.host_leaf[dst]
        if switch == leaf:
            g = self.down[dst]
            if g is None:
                g = self.down[dst] = self._fabric_group(switch, dst)
            return g
        if switch < self.hosts:  # (no host forwards: as the fabric says)
            return self._fabric_group(switch, dst)
        i = (switch - self.hosts) * self.nleaves + self.leaf_row[leaf]
        j = self.gidx[i]
        if not j:
            j = self.gidx[i] = self._group_index(switch, leaf)
        return self.glist[j - 1]

    def _group_index(self, switch: int, leaf: int) -> int:
        """1 + the index in ``glist`` of the group of ``switch`` toward ``leaf`` (not the leaf
        itself): the fabric's group toward the leaf if the switch is one whose group is not
        its up-links (:meth:`Fabric.groups_toward`, read once per leaf), else its up-links
        (:meth:`Fabric.up_groups`, one tuple per switch).  # perf: one fabric call per leaf
        and per switch instead of one per (switch, leaf) pair, and the same tuple for every
        leaf a switch reaches by its up-links
        """
        row = self.leaf_row[leaf]
        special = self.special[row]
        if special is None:
            exc, start, links = self.fabric.groups_toward(leaf)
            cut, ids = start.tolist(), links.tolist()
            special = self.special[row] = {}
            for k, node in enumerate(exc.tolist()):
                self.glist.append(tuple(ids[cut[k] : cut[k + 1]]))
                special[node] = len(self.glist)
        j = special.get(switch)
        if j is None:
            j = self.up_gi[switch - self.hosts]
            if not j:
                up_start, up_links = self.fabric.up_groups()
                ups = up_links[up_start[switch] : up_start[switch + 1]].tolist()
                self.glist.append(tuple(ups))
                j = self.up_gi[switch - self.hosts] = len(self.glist)
        return j

    def _fabric_group(self, switch: int, dst: int) -> tuple[int, ...]:
        """The group as the fabric gives it (once per table entry: ``group`` keeps it)."""
        return tuple([int(x) for x in self.fabric.ecmp_group(switch, dst)])

    def _build(self, src: int, dst: int, entropy: int) -> Route:
        self.built += 1
        fwd, link_dst = self.forwarding, self.link_dst
        hkey = fwd.key(src, dst, entropy)
        link = self.uplink[src]
        links = [link]
        node = link_dst[link]
        ok = True
        while node != dst:
            g = self.group(node, dst)
            n = len(g)
            if n == 0:
                ok = False
                break
            if n == 1:
                link = g[0]
            elif self.nic_rule is not None and len(links) == 1:  # at the source's NIC
                link = g[self.nic_rule.member(src, dst, entropy, g)]
            else:
                link = g[fwd.member(node, n, hkey)]
                if self.choices is not None and self.port_objs[link].failed:
                    link = self.rehash_live(node, g, hkey, link)
            links.append(link)
            node = link_dst[link]
            if len(links) > 64:
                raise RuntimeError("routing loop")
        return self.path_route(tuple(links), ok, dst)

    def rehash_live(self, node: int, g: tuple[int, ...], hkey: int, link: int) -> int:
        """The hash over the group's live members (a switch balancing on live state knows its
        own ports: control packets leave a failed member too)."""
        live = [x for x in g if not self.port_objs[x].failed]
        return live[self.forwarding.member(node, len(live), hkey)] if live else link

    def link_failed(self) -> None:
        """A link failed mid-run: under a live member choice, hashed routes are rebuilt."""
        if self.choices is not None:
            self.cache.clear()  # in place: the NICs hold this dict

    def path_route(self, links: tuple[int, ...], ok: bool, dst: int) -> Route:
        """The shared :class:`Route` of a fixed path (one object per distinct path)."""
        route = self.paths.get((links, ok))
        if route is None:  # perf: one Route object per distinct path, shared by its entropies
            route = self.paths[(links, ok)] = self._route(links, ok, dst)
        return route

    def _route(self, links: tuple[int, ...], ok: bool, dst: int) -> Route:
        ports, top_of, link_dst = self.ports, self.top_of, self.link_dst
        hops = [ports[x] for x in links]
        data = tuple([*hops, self.nics[dst] if ok else self.sink])
        ctrl = tuple([*hops, self.nic_ctrl[dst] if ok else self.sink])
        tops = tuple([top_of[link_dst[x]] for x in links if top_of[link_dst[x]] >= 0])
        return Route(links, data, ctrl, self.namer, ok, tops)

    # -- live member choice ---------------------------------------------------------------------
    def walk(self, links: tuple[int, ...], dst: int) -> tuple[tuple[int, ...], int]:
        """Extend ``links`` through single-member groups: (links, node) where node is ``dst``,
        a switch with a choice to make, or -1 (a dead end)."""
        path = list(links)
        node = self.link_dst[path[-1]]
        while node != dst:
            g = self.group(node, dst)
            if len(g) != 1:
                return tuple(path), (node if g else -1)
            path.append(g[0])
            node = self.link_dst[g[0]]
            if len(path) > 64:
                raise RuntimeError("routing loop")
        return tuple(path), node

    def dynamic_hops(
        self, links: tuple[int, ...], node: int, src: int, dst: int
    ) -> tuple[tuple[Callable, ...], Route | None]:
        """Data hops of a route prefix: the full route, or up to the decider at ``node``."""
        if node == dst or node < 0:
            route = self.path_route(links, node == dst, dst)
            return route.hops, route
        dec = Decider(self, node, src, dst, links)
        return (*(self.ports[x] for x in links), dec.receive), None

    def _with_choices(self, hashed: Route, src: int, dst: int) -> Route:
        """``hashed`` with its data hops replaced by the pair's decider route (if any)."""
        start: tuple[int, ...] = (self.uplink[src],)
        key: tuple[int, ...] = (src, dst)
        if self.nic_stage and len(hashed.links) > 1:  # the NIC's plane, as the packet's header
            start = hashed.links[:2]  # gives it; the switches of the plane choose on live state
            key = (src, dst, start[-1])
        root = self.roots.get(key)
        if root is None:
            links, node = self.walk(start, dst)
            root = self.roots[key] = self.dynamic_hops(links, node, src, dst)
        hops, fixed = root
        if fixed is not None:
            return fixed
        return Route(hashed.links, hops, hashed.ctrl_hops, "", hashed.ok, ())
