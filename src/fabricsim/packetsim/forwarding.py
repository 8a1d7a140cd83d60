"""Switch forwarding: small strategies per switch, and the route cache the hot path reads.

A switch's :class:`Forwarding` strategy picks the member of the ECMP group toward a packet's
destination.  ``EcmpForwarding`` hashes the 5-tuple whose UDP source port is the packet's
entropy value with the switch's hash (``Router.member`` on ``router.base(src, dst) ^
PORT_TABLE[entropy]``), so a packet's whole path is a function of (src, dst, entropy) and the
:class:`RouteTable` computes it once and caches it.  ``RandomForwarding`` (``hash_method:
random``) draws a member per packet at each stage, so its routes are drawn per packet.

Strategies that read queue state (adaptive, flowlet, switch spray) cannot be precomputed; they
would plug in as a switch element ``receive(pkt)`` at the end of a route prefix that picks the
member and continues the packet on the cached route from there.  They are not implemented:
the engine refuses ``switch.load_balancing_method`` other than ``ecmp``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fabricsim.config.models import Scenario
from fabricsim.errors import EngineRefusal
from fabricsim.routing.hashing import PORT_TABLE, switch_hash_int
from fabricsim.routing.router import Router
from fabricsim.topology.fabric import Fabric

_PORTS = PORT_TABLE.tolist()  # perf: Python ints, no numpy scalar per lookup


class Forwarding:
    """Interface: which member of a switch's ECMP group a packet takes.

    ``key(src, dst, entropy)`` is computed once per packet header (for ECMP: the CRC-32 of the
    5-tuple); ``member(switch, group_size, key)`` is the switch's choice.
    """

    static = True  # the choice is a function of the packet's header alone (cacheable)

    def key(self, src: int, dst: int, entropy: int) -> int:
        return 0

    def member(self, switch: int, group_size: int, key: int) -> int:
        raise NotImplementedError  # pragma: no cover - interface


class EcmpForwarding(Forwarding):
    """Per-flow ECMP: the switch's hash of the 5-tuple (``switch.hash_method``).

    Same result as :meth:`Router.member` on ``router.base(src, dst) ^ PORT_TABLE[entropy]``,
    with the switches' salts and tiers held as Python ints.
    """

    def __init__(self, router: Router) -> None:
        self.router = router
        self.method = router.method
        self.salts = [int(x) for x in router.salts]
        self.tiers = [int(x) for x in router.fabric.node_tier]

    def key(self, src: int, dst: int, entropy: int) -> int:
        return self.router.base(src, dst) ^ _PORTS[entropy]

    def member(self, switch: int, group_size: int, key: int) -> int:
        h = switch_hash_int(key, self.method, self.salts[switch], self.tiers[switch])
        return h % group_size


class RandomForwarding(Forwarding):
    """``hash_method: random``: a uniformly random member per packet and stage."""

    static = False

    def __init__(self, rand: Callable[[], float]) -> None:
        self.rand = rand

    def member(self, switch: int, group_size: int, key: int) -> int:
        return int(self.rand() * group_size)


def make_forwarding(sc: Scenario, router: Router, rand: Callable[[], float]) -> Forwarding:
    """The forwarding strategy of the scenario's switches (every switch the same for now)."""
    method = sc.switch.load_balancing_method
    if method != "ecmp":
        raise EngineRefusal(
            f"switch.load_balancing_method={method} is not implemented in the packet engine yet; "
            "use ecmp"
        )
    if sc.switch.hash_method == "random":
        return RandomForwarding(rand)
    return EcmpForwarding(router)


@dataclass(eq=False, slots=True)
class Route:
    """One path: link ids, the callables a packet visits, and its label.

    ``hops`` ends with the destination NIC's data entry, ``ctrl_hops`` (same path) with its
    ACK/NACK entry, so the NIC needs no dispatch on the packet kind.
    """

    links: tuple[int, ...]
    hops: tuple[Callable, ...]
    ctrl_hops: tuple[Callable, ...]
    label: str
    ok: bool  # False: dead-ends (the last hop drops the packet)
    tops: tuple[int, ...] = ()  # indices of top-tier switches on it (spine timeline)


class RouteTable:
    """Routes of (src host, dst host, entropy), cached when forwarding is static.

    ``ports[link]`` is the ``receive`` callable of the link's output port; ``nics[host]`` and
    ``nic_ctrl[host]`` are the host NIC's entries for data and for ACKs/NACKs; dead ends finish
    on ``sink``.  ``cache`` keys are ``((src << 20 | dst) << 16) | entropy``.
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
    ) -> None:
        self.fabric, self.forwarding = fabric, forwarding
        self.ports, self.nics, self.nic_ctrl, self.sink = ports, nics, nic_ctrl, sink
        self.top_of = [top_index.get(n, -1) for n in range(fabric.num_nodes)]
        self.link_dst = [int(x) for x in fabric.link_dst]
        self.uplink = [int(x) for x in fabric.host_uplink]
        self.cache: dict[int, Route] = {}
        self.groups: dict[tuple[int, int], tuple[int, ...]] = {}
        self.paths: dict[tuple[tuple[int, ...], bool], Route] = {}
        self.built = 0

    def get(self, src: int, dst: int, entropy: int) -> Route:
        """The route of a packet from ``src`` to ``dst`` on ``entropy`` (cached if static)."""
        key = ((src << 20) | dst) << 16 | entropy
        route = self.cache.get(key)
        if route is None:
            route = self._build(src, dst, entropy)
            if self.forwarding.static:
                self.cache[key] = route
        return route

    def group(self, switch: int, dst: int) -> tuple[int, ...]:
        """The ECMP group (out-link ids) of ``switch`` toward host ``dst``."""
        key = (switch, dst)
        g = self.groups.get(key)
        if g is None:
            g = self.groups[key] = tuple(int(x) for x in self.fabric.ecmp_group(switch, dst))
        return g

    def _build(self, src: int, dst: int, entropy: int) -> Route:
        self.built += 1
        fwd, link_dst = self.forwarding, self.link_dst
        hkey = fwd.key(src, dst, entropy)
        link = self.uplink[src]
        links = [link]
        node = link_dst[link]
        ok = True
        while node != dst:
            g = self.groups.get((node, dst)) or self.group(node, dst)
            if not g:
                ok = False
                break
            link = g[fwd.member(node, len(g), hkey)] if len(g) > 1 else g[0]
            links.append(link)
            node = link_dst[link]
            if len(links) > 64:
                raise RuntimeError("routing loop")
        key = tuple(links)
        route = self.paths.get((key, ok))
        if route is None:  # perf: one Route object per distinct path, shared by its entropies
            route = self.paths[(key, ok)] = self._route(key, ok, dst)
        return route

    def _route(self, links: tuple[int, ...], ok: bool, dst: int) -> Route:
        hops = tuple(self.ports[x] for x in links)
        data = (*hops, self.nics[dst] if ok else self.sink)
        ctrl = (*hops, self.nic_ctrl[dst] if ok else self.sink)
        link_dst = self.link_dst
        tops = tuple(self.top_of[link_dst[x]] for x in links if self.top_of[link_dst[x]] >= 0)
        return Route(links, data, ctrl, self.fabric.path_label(links), ok, tops)
