"""Single-path spraying types that repath on congestion: ``plb`` and ``rod`` (packet only).

Both keep one entropy value (starting from the connection's own source port, like ``none``)
and draw a new uniformly random one when their rule says the path is bad.  The rules read the
per-ACK ECN echo, NACKs and timeouts, which the flow engine's fluid model does not have.

* ``plb`` -- Protective Load Balancing (Qureshi et al., SIGCOMM 2022): the ACKs are cut into
  rounds of one base RTT; a round is congested when at least ``nic.plb.congested_fraction`` of
  its ACKed packets carry an ECN echo.  After ``nic.plb.rehash_rounds`` consecutive congested
  rounds it repaths; after ``nic.plb.idle_rehash_rounds`` it repaths as soon as the connection
  has nothing in flight.  With ``nic.plb.idle_only`` only the idle rule applies (a transport
  that needs in-order delivery must not move packets in flight), so a continuous RDMA flow
  never repaths -- the limitation ``001_*.txt`` points out.  A timeout repaths at once (not
  under ``idle_only``).
* ``rod`` -- UEC 1.1's reliable ordered delivery on one path: on an ECN echo, a NACK or a
  timeout the entropy changes, but at most once per ``nic.reroute_rtts`` base RTTs.  It is the
  spraying type ``nic.delivery_mode: rod`` takes when none is set (:mod:`fabricsim.config.
  delivery`); the receive and retransmission rules are the mode's (:mod:`fabricsim.transport.
  uet`).

Examples
--------
>>> class C: now = 0
>>> class P: src_port, inflight, acked_pkts, npkts = 1000, 0, 0, 10
>>> rod = RodSpraying(P(), rand=lambda: 0.25, clock=C(), hold_ps=100)
>>> rod.next_entropy(), rod.on_ack(1000, ecn=True), rod.next_entropy()
(1000, None, 16384)
>>> C.now = 50; rod.on_nack(16384); rod.next_entropy()   # too soon: kept
16384
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fabricsim.lb.spraying import (
    Clock,
    PortOwner,
    SprayContext,
    SprayingStrategy,
    register_spraying,
)


class _Repathing(SprayingStrategy):
    """One live entropy value, replaced by a fresh random one by :meth:`repath`."""

    feedback = True
    single_path = True  # (nic.delivery_mode rod allows it)
    fluid = None

    def __init__(self, creator: PortOwner, rand: Callable[[], float], clock: Clock) -> None:
        self.creator, self.rand, self.clock = creator, rand, clock
        self.entropy = -1  # -1: still the creator's source port (read live, like none)
        self.repaths = 0
        self.repath_ps: list[int] = []  # when it repathed, ps (in order: read by count_repaths)

    def next_entropy(self) -> int:
        return self.creator.src_port if self.entropy < 0 else self.entropy

    def repath(self) -> None:
        """Move to a fresh random entropy value."""
        self.entropy = int(self.rand() * 65536)
        self.repaths += 1
        self.repath_ps.append(self.clock.now)


def count_repaths(
    pdcs: Sequence[Sequence[Any]], start_ps: np.ndarray, now_ps: int
) -> tuple[np.ndarray, dict[int, int]]:
    """Repaths per flow (the ``repaths`` column) and per sending host (``uet_transport_stats``).

    A flow counts every repath of the spraying state its PDCs used (a PDC group's, shared by
    the messages to one peer) from its start until the sender saw it all ACKed (or the run's
    end): each moved the path its packets took.  A host counts each of its spraying states'
    repaths once.  Spraying types that never repath count 0.

    Parameters
    ----------
    pdcs
        Per flow, its sending PDCs (``spray``, ``src``, ``acked_ps``: -1 while unACKed).
    start_ps
        Per flow, when it started (-1: never).
    now_ps
        The run's end.
    """
    flows = np.zeros(len(pdcs), dtype=np.int64)
    hosts: dict[int, int] = {}
    seen: set[int] = set()
    for flow, conns in enumerate(pdcs):
        strategies = {id(p.spray): p for p in conns}
        for key, pdc in strategies.items():
            times = getattr(pdc.spray, "repath_ps", None)
            if times is None:
                continue
            if key not in seen:
                seen.add(key)
                hosts[pdc.src] = hosts.get(pdc.src, 0) + len(times)
            if start_ps[flow] < 0:
                continue
            acked = [p.acked_ps for p in conns]
            end = max(acked) if min(acked) >= 0 else now_ps
            flows[flow] += bisect.bisect_right(times, end) - bisect.bisect_left(
                times, int(start_ps[flow])
            )
    return flows, hosts


class PlbSpraying(_Repathing):
    """``plb``: repath after consecutive congested rounds (see the module docstring).

    Examples
    --------
    >>> class C: now = 0
    >>> class P: src_port, inflight, acked_pkts, npkts = 7, 1, 0, 10
    >>> plb = PlbSpraying(P(), lambda: 0.5, C(), round_ps=10, fraction=0.5, rounds=2,
    ...                   idle_rounds=1, idle_only=False)
    >>> for t in (0, 10, 20):       # three rounds, each all ECN: the third ACK closes round 2
    ...     C.now = t; plb.on_ack(7, ecn=True)
    >>> plb.next_entropy(), plb.repaths
    (32768, 1)
    """

    name = "plb"
    label = "PLB: repath after congested rounds"
    help = "Protective Load Balancing: one path, a new entropy after M congested rounds"
    aliases = ("ProtectiveLoadBalancing",)
    knobs = (
        "nic.plb.congested_fraction",
        "nic.plb.rehash_rounds",
        "nic.plb.idle_rehash_rounds",
        "nic.plb.idle_only",
    )
    packet_only = "PLB reacts to per-ACK ECN echoes"

    def __init__(
        self,
        creator: PortOwner,
        rand: Callable[[], float],
        clock: Clock,
        round_ps: int,
        fraction: float,
        rounds: int,
        idle_rounds: int,
        idle_only: bool,
    ) -> None:
        super().__init__(creator, rand, clock)
        self.round_ps = max(int(round_ps), 1)
        self.fraction, self.rounds, self.idle_rounds = fraction, rounds, idle_rounds
        self.idle_only = idle_only
        self.round_end = -1  # the current round ends at this time (-1: none started)
        self.acked = self.marked = 0  # packets ACKed / ECN-echoed in the round
        self.congested = 0  # consecutive congested rounds

    @classmethod
    def for_group(cls, ctx: SprayContext) -> SprayingStrategy:
        p = ctx.nic.plb
        return cls(
            ctx.creator,
            ctx.rand,
            ctx.clock,
            ctx.base_rtt_ps,
            p.congested_fraction,
            p.rehash_rounds,
            p.idle_rehash_rounds,
            p.idle_only,
        )

    def on_ack(self, entropy: int, ecn: bool) -> None:
        now = self.clock.now
        if self.round_end < 0:
            self.round_end = now + self.round_ps
        elif now >= self.round_end:  # the round is over: judge it, start the next
            if self.acked and self.marked >= self.fraction * self.acked:
                self.congested += 1
            else:
                self.congested = 0
            self.acked = self.marked = 0
            self.round_end = now + self.round_ps
        if entropy == self.next_entropy():  # ACKs of packets sent before a repath do not count
            self.acked += 1
            self.marked += ecn
        idle = self._idle()
        if (self.congested >= self.idle_rounds and idle) or (
            not self.idle_only and self.congested >= self.rounds
        ):
            self.repath()
            self.congested = 0

    def on_path_failure(self, entropy: int) -> None:
        if not self.idle_only or self._idle():
            self.repath()
            self.congested = 0

    def _idle(self) -> bool:
        """Nothing in flight, and more to send (after its last ACK a message needs no path)."""
        c = self.creator
        return c.inflight == 0 and c.acked_pkts < c.npkts


class RodSpraying(_Repathing):
    """``rod``: one entropy, changed on congestion or loss at most every ``hold_ps``.

    ``changes`` lists the times it changed (the monitor shows the values per packet).
    """

    name = "rod"
    label = "ROD: one path, rerouted on congestion"
    help = "reliable ordered delivery: one entropy, changed on ECN/NACK/timeout at most every nic.reroute_rtts RTTs"
    knobs = ("nic.reroute_rtts",)
    packet_only = "ROD reacts to per-ACK ECN echoes, NACKs and timeouts"

    def __init__(
        self, creator: PortOwner, rand: Callable[[], float], clock: Clock, hold_ps: int
    ) -> None:
        super().__init__(creator, rand, clock)
        self.hold_ps = max(int(hold_ps), 1)
        self.last_ps = -(1 << 62)  # when the entropy last changed
        self.changes: list[int] = []

    @classmethod
    def for_group(cls, ctx: SprayContext) -> SprayingStrategy:
        return cls(ctx.creator, ctx.rand, ctx.clock, int(ctx.nic.reroute_rtts * ctx.base_rtt_ps))

    def _signal(self) -> None:
        now = self.clock.now
        if now - self.last_ps >= self.hold_ps:
            self.last_ps = now
            self.changes.append(now)
            self.repath()

    def on_ack(self, entropy: int, ecn: bool) -> None:
        if ecn and entropy == self.next_entropy():
            self._signal()

    def on_nack(self, entropy: int) -> None:
        if entropy == self.next_entropy():
            self._signal()

    def on_path_failure(self, entropy: int) -> None:
        self._signal()


# not as decorators, like the other spraying types
register_spraying(PlbSpraying)
register_spraying(RodSpraying)

REPATHING = (PlbSpraying.name, RodSpraying.name)
"""Spraying types that repath (``nic.packet_spraying_type``): their runs add ``repaths`` to
``summary.json`` and ``uet_transport_stats.json``."""
