"""ARK: distributed path reservation for KV-cache elephant flows (``lb.policy=ark``, ``001``).

Every host runs an :class:`ArkController` holding its own replica of the reservation table
``R``: reservation unit -> ``(timestamp s, host id)`` of the reservation that holds it.  When a
flow arrives the controller takes the lowest unit no one holds in its replica and sends the flow
on a source port that the switches' real ECMP hash puts there (the inverse hash, computed once
per peer: the paper's *Initialize*); it records the reservation and broadcasts RESERVE.  Peers
apply RESERVE/RELEASE after ``lb.ark_control_delay_us``.  Two hosts that reserve the same unit
within one delay race: the smaller ``(timestamp, host id)`` keeps it and the loser re-hashes its
running flow to another unit (a re-route of the flow's connection).  When every unit is held
the flow falls back to ECMP: a random path of the port table, no reservation.  A completed flow
releases its own reservation; a RELEASE names the reservation's key, so it never frees a unit
another host holds.  A race loser also withdraws its lost reservation with a RELEASE (not in
the paper's Algorithm 1: without it a peer that saw the winner's RESERVE and RELEASE before the
loser's RESERVE would keep the loser's stamp, and the unit, reserved forever).

Reservation unit.  On a two-tier leaf-spine a path is its spine (``K`` = spines), exactly the
paper's table.  On deeper Clos fabrics the inverse hash walks every ECMP stage
(:meth:`~fabricsim.routing.router.Router.ports_per_path`), and the unit is the path's *top
switch* (its highest-tier node: the core of an inter-pod path of a fat tree, the aggregation
switch of an intra-pod one).  On a k-ary fat tree a core fixes both aggregation switches of an
inter-pod path, so a core is exactly one path per pod pair; reserving top switches rather than
link sets keeps the paper's one-flow-per-spine rule and its table size.  A host pair with a
single path (same leaf) is not managed: its flow keeps its own port and reserves nothing.

The controllers are plain objects: the broadcast medium (:class:`ArkControlPlane`) takes a
``schedule(at_s, callback)`` and a ``reroute(flow, src_port)`` function, so tests drive it with
a toy event queue and no engine.

``examples/ark_controller.py`` drives a plane on a virtual clock: a race, its resolution
and a release.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fabricsim.errors import ConfigError
from fabricsim.lb.base import Connection, PathPolicy, PolicyContext, register_policy
from fabricsim.units import us_to_s

Stamp = tuple[float, int]  # (timestamp s, host id): smaller wins a race
RESERVE, RELEASE = "reserve", "release"

__all__ = [
    "RELEASE",
    "RESERVE",
    "ArkControlPlane",
    "ArkController",
    "ArkMessage",
    "ArkPolicy",
    "PortTable",
    "port_table",
]


@dataclass(frozen=True, slots=True)
class ArkMessage:
    """A broadcast: ``op`` (RESERVE or RELEASE) of reservation unit ``key`` with ``stamp``."""

    op: str
    key: int
    stamp: Stamp


@dataclass(slots=True)
class PortTable:
    """The paper's ``M_{h_j}`` for one (host, peer) pair: source ports per reservation unit.

    ``keys`` are the units in path order (lowest first); ``ports[i]`` the sorted source ports
    the switches' hash sends onto unit ``keys[i]``.  Units no port reaches are left out.
    """

    keys: list[int]
    ports: list[np.ndarray]
    _next: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._next = [0] * len(self.keys)

    @property
    def managed(self) -> bool:
        """Whether there is a choice to make (at least two reachable units)."""
        return len(self.keys) >= 2

    def take_port(self, i: int) -> int:
        """A port of unit ``keys[i]`` ("any offset of the bucket"): the bucket in turn."""
        bucket = self.ports[i]
        j = self._next[i]
        self._next[i] = (j + 1) % len(bucket)
        return int(bucket[j])


def port_table(router: Any, src: int, dst: int) -> PortTable:
    """Initialize: hash all 65,536 source ports toward ``dst`` and bucket them by unit.

    Parameters
    ----------
    router : fabricsim.routing.router.Router
        The fabric's router (real switch hashes and salts).
    src, dst : int
        Host ids.

    Returns
    -------
    PortTable
        Units (top switches, by node id) with their ports.
    """
    fab = router.fabric
    buckets: dict[int, list[np.ndarray]] = {}
    for path, ports in router.ports_per_path(src, dst).items():
        nodes = fab.path_nodes(path)[1:-1]
        rank = fab.node_rank if fab.node_rank is not None else fab.node_tier
        top = max(nodes, key=lambda n: (int(rank[n]), -n)) if nodes else -1
        buckets.setdefault(int(top), []).append(ports)
    keys, ports_out = [], []
    for key in sorted(buckets):
        parts = buckets[key]
        merged = parts[0] if len(parts) == 1 else np.sort(np.concatenate(parts))
        if len(merged):
            keys.append(key)
            ports_out.append(merged.astype(np.uint16))  # perf: 128 KB per peer, not 512 KB
    return PortTable(keys, ports_out)


@dataclass(slots=True)
class _LocalFlow:
    peer: int
    key: int | None  # the unit it holds (None: ECMP fallback or unmanaged)
    stamp: Stamp | None
    port: int


class ArkController:
    """One host's ARK controller with its own replica of the reservation table.

    Parameters
    ----------
    host : int
        This host's id (the tie-breaker of races).
    tables : callable
        ``tables(src, dst) -> PortTable``; called once per peer (Initialize).
    broadcast : callable
        ``broadcast(sender, message)``: hands a message to the control plane.
    reroute : callable
        ``reroute(flow, src_port)``: moves a running local flow to a new source port.
    rng : numpy.random.Generator
        Source of the ECMP fallback's random path.
    """

    def __init__(
        self,
        host: int,
        tables: Callable[[int, int], PortTable],
        broadcast: Callable[[int, ArkMessage], None],
        reroute: Callable[[int, int], None],
        rng: np.random.Generator,
    ) -> None:
        self.host = host
        self.table: dict[int, Stamp] = {}  # R: unit -> stamp of the reservation holding it
        self.owned: dict[int, int] = {}  # unit -> local flow holding it
        self.flows: dict[int, _LocalFlow] = {}
        self.peers: dict[int, PortTable] = {}
        self._tables, self._broadcast, self._reroute, self._rng = tables, broadcast, reroute, rng
        self.races = self.fallbacks = self.reservations = 0

    def initialize(self, peer: int) -> PortTable:
        """The port table toward ``peer`` (computed on first use, then kept)."""
        table = self.peers.get(peer)
        if table is None:
            table = self._tables(self.host, peer)
            self.peers[peer] = table
        return table

    def on_flow_arrival(self, flow: int, peer: int, now_s: float, own_port: int = 0) -> int:
        """Choose the flow's unit and source port (Algorithm 1, OnFlowArrival).

        Returns the source port; ``own_port`` is used for an unmanaged pair (one path).
        """
        table = self.initialize(peer)
        if not table.managed:
            self.flows[flow] = _LocalFlow(peer, None, None, own_port)
            return own_port
        return self._assign(flow, table, peer, now_s)

    def _assign(self, flow: int, table: PortTable, peer: int, now_s: float) -> int:
        held = self.table
        for i, key in enumerate(table.keys):  # k* = min{k : p_k not in R}
            if key not in held:
                stamp: Stamp = (now_s, self.host)
                held[key] = stamp
                self.owned[key] = flow
                self.reservations += 1
                port = table.take_port(i)
                self.flows[flow] = _LocalFlow(peer, key, stamp, port)
                self._broadcast(self.host, ArkMessage(RESERVE, key, stamp))
                return port
        self.fallbacks += 1  # |R| = K: vanilla ECMP, a random path, no reservation
        i = int(self._rng.integers(len(table.keys)))
        port = table.take_port(i)
        self.flows[flow] = _LocalFlow(peer, None, None, port)
        return port

    def on_flow_completion(self, flow: int) -> None:
        """Release the flow's own reservation, if it still holds one, and broadcast RELEASE."""
        local = self.flows.pop(flow, None)
        if local is None or local.key is None:
            return
        if self.table.get(local.key) == local.stamp:
            del self.table[local.key]
            self.owned.pop(local.key, None)
            assert local.stamp is not None
            self._broadcast(self.host, ArkMessage(RELEASE, local.key, local.stamp))

    def on_remote_update(self, msg: ArkMessage, now_s: float) -> None:
        """Apply a peer's RESERVE or RELEASE (Algorithm 1, OnRemoteUpdate).

        A RELEASE frees the unit only if the table still shows that very reservation.  A
        RESERVE with a smaller ``(timestamp, host)`` than the holder wins; if the holder was a
        local flow, that flow re-hashes now (a lost race) and this host withdraws its lost
        reservation with a RELEASE of its own stamp.
        """
        cur = self.table.get(msg.key)
        if msg.op == RELEASE:
            if cur == msg.stamp:
                del self.table[msg.key]
            return
        if cur is not None and not msg.stamp < cur:
            return  # the holder wins; the sender will learn it from the holder's broadcast
        self.table[msg.key] = msg.stamp
        flow = self.owned.pop(msg.key, None) if cur is not None and cur[1] == self.host else None
        if flow is None:
            return
        self.races += 1
        assert cur is not None
        # withdraw the lost reservation: a peer that saw the winner's RESERVE and RELEASE before
        # ours would otherwise keep our stamp forever (a hole in the paper's Algorithm 1)
        self._broadcast(self.host, ArkMessage(RELEASE, msg.key, cur))
        local = self.flows[flow]
        port = self._assign(flow, self.peers[local.peer], local.peer, now_s)
        if port != local.port:
            self._reroute(flow, port)

    def key_of(self, flow: int) -> int | None:
        """The unit a running local flow holds (None: fallback, unmanaged or unknown)."""
        local = self.flows.get(flow)
        return None if local is None else local.key


class ArkControlPlane:
    """The hosts' controllers and the broadcast channel between them.

    Parameters
    ----------
    hosts : int
        Number of hosts (one controller each).
    delay_s : float
        RESERVE/RELEASE delivery delay to every other host (s).
    tables : callable
        ``tables(src, dst) -> PortTable`` (Initialize).
    schedule : callable
        ``schedule(at_s, callback)`` of the event loop driving the plane.
    now : callable
        ``now() -> float``, the current time (s).
    reroute : callable
        ``reroute(flow, src_port)`` of the engine.
    rng : numpy.random.Generator
        Fallback randomness (shared by the controllers, drawn in event order).
    """

    def __init__(
        self,
        hosts: int,
        delay_s: float,
        tables: Callable[[int, int], PortTable],
        schedule: Callable[[float, Callable[[], None]], None],
        now: Callable[[], float],
        reroute: Callable[[int, int], None],
        rng: np.random.Generator,
    ) -> None:
        self.delay_s, self._schedule, self._now = delay_s, schedule, now
        self.messages = 0
        self.controllers = [
            ArkController(h, tables, self._send, reroute, rng) for h in range(hosts)
        ]
        self._src: dict[int, int] = {}

    def _send(self, sender: int, msg: ArkMessage) -> None:
        self.messages += 1
        self._schedule(self._now() + self.delay_s, lambda: self._deliver(sender, msg))

    def _deliver(self, sender: int, msg: ArkMessage) -> None:
        now = self._now()
        for ctl in self.controllers:
            if ctl.host != sender:
                ctl.on_remote_update(msg, now)

    def arrive(self, flow: int, src: int, dst: int, now_s: float, own_port: int = 0) -> int:
        """A flow from ``src`` to ``dst`` arrives; returns its source port."""
        self._src[flow] = src
        return self.controllers[src].on_flow_arrival(flow, dst, now_s, own_port)

    def finish(self, flow: int) -> None:
        """A flow delivered its last byte: its host releases the flow's reservation."""
        self.controllers[self._src.pop(flow)].on_flow_completion(flow)

    def key_of(self, flow: int) -> int | None:
        """The unit a running flow holds in its own host's table."""
        src = self._src.get(flow)
        return None if src is None else self.controllers[src].key_of(flow)

    @property
    def races(self) -> int:
        """Lost races (re-hashed flows) over all hosts."""
        return sum(c.races for c in self.controllers)

    @property
    def fallbacks(self) -> int:
        """Flows (arrivals and re-hashes) that found every unit held and fell back to ECMP."""
        return sum(c.fallbacks for c in self.controllers)

    @property
    def reservations(self) -> int:
        """Reservations made (arrivals and re-hashes)."""
        return sum(c.reservations for c in self.controllers)


@register_policy
class ArkPolicy(PathPolicy):
    """``lb.policy=ark``: each flow gets the source port of the lowest unreserved path.

    Summary keys: ``ark_races`` (flows re-hashed after losing a race), ``ark_fallbacks``
    (arrivals or re-hashes that found every path reserved and used ECMP), ``ark_reservations``
    and ``ark_messages`` (RESERVE + RELEASE broadcasts).
    """

    name = "ark"
    compared = False  # ARK vs ECMP is its own paired study (fabricsim run ark)
    help = "ARK: each flow on the source port of the lowest unreserved path"
    knobs = ("lb.ark_control_delay_us",)

    def __init__(self, ctx: PolicyContext) -> None:
        super().__init__(ctx)
        sc = ctx.scenario
        if sc.nic.packet_spraying_type != "none":
            raise ConfigError(
                "lb.policy=ark pins each flow to one path through its source port; set "
                f"nic.packet_spraying_type=none (got {sc.nic.packet_spraying_type})"
            )
        if not ctx.router.deterministic:
            raise ConfigError(
                "lb.policy=ark needs a deterministic switch hash to invert; "
                f"switch.hash_method={sc.switch.hash_method} picks a member per packet"
            )
        self._tables: dict[tuple[int, int], PortTable] = {}
        self.plane = ArkControlPlane(
            ctx.fabric.num_hosts,
            us_to_s(ctx.scenario.lb.ark_control_delay_us),
            self._table,
            self._schedule,
            self._now,
            self._reroute,
            ctx.rng,
        )

    def _table(self, src: int, dst: int) -> PortTable:
        key = (src, dst)
        if key not in self._tables:
            self._tables[key] = port_table(self.ctx.router, src, dst)
        return self._tables[key]

    def _now(self) -> float:
        hooks = self.ctx.hooks
        return hooks.now_s() if hooks is not None else 0.0

    def _schedule(self, at_s: float, callback: Callable[[], None]) -> None:
        if self.ctx.hooks is None:
            raise RuntimeError("lb.policy=ark needs an engine that offers timers")
        self.ctx.hooks.schedule(at_s, callback)

    def _reroute(self, flow: int, src_port: int) -> None:
        if self.ctx.hooks is not None:
            self.ctx.hooks.reroute(flow, 0, src_port)

    def connections(self, flow: int) -> list[Connection]:
        f = self.ctx.flows
        src, dst = int(f.src[flow]), int(f.dst[flow])
        now = self._now() if self.ctx.hooks is not None else float(f.start_s[flow])
        port = self.plane.arrive(flow, src, dst, now, int(f.src_port[flow]))
        return [Connection(int(f.size_bytes[flow]), port)]

    def on_finish(self, flow: int) -> None:
        self.plane.finish(flow)

    def summary(self) -> dict[str, object]:
        p = self.plane
        return {
            "ark_races": p.races,
            "ark_fallbacks": p.fallbacks,
            "ark_reservations": p.reservations,
            "ark_messages": p.messages,
        }
