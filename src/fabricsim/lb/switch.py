"""Switch load-balancing methods (``switch.load_balancing_method``): the registry and ``ecmp``.

A method is one :class:`MemberChoice` subclass: which member of an ECMP group a switch sends
a data packet to.  It declares the engines that run it (``engines``) and, when the flow
engine cannot, why (``packet_only``, the phrase of the flow engine's refusal).  ``ecmp`` is
``hashed``: the switch's hash of the packet's header decides, so the packet engine caches
whole routes and builds no choice objects (the flow engine's fluid model is the hash).  The
other methods choose on live state (one object per switch, built by
:meth:`MemberChoice.for_switch`): a data route then stops at a *decider* at every switch with
more than one member (:class:`fabricsim.packetsim.forwarding.Decider`), which asks
``pick(dec, pkt)``.  ``dec`` is seen through :class:`DeciderView` (the member ports, the flow
key), ``pkt`` through :class:`PacketView` (its entropy): this layer never imports the packet
engine.  A member whose link has failed is never chosen unless every member has failed.

The built-in methods: ``ecmp`` (here), ``adaptive`` (:mod:`.switch_adaptive`), ``flowlet``
(:mod:`.switch_flowlet`) and ``spray`` (:mod:`.switch_spray`).

Examples
--------
>>> switch_method("ecmp").hashed, switch_method("ecmp").engines
(True, ('flow', 'packet', 'decomposed'))
>>> class P:
...     def __init__(self, q, failed=False): self.qbytes, self.hbytes, self.failed = q, 0, failed
>>> least_loaded([P(0, failed=True), P(5000), P(100)], 1, lambda: 0.5)
2
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol

from fabricsim.config.models import Scenario, SwitchConfig
from fabricsim.lb.registry import Method, Registry, describe_extras, help_of
from fabricsim.units import us_to_ps


class PortState(Protocol):
    """What a switch sees of one member's output port."""

    @property
    def failed(self) -> bool: ...

    @property
    def qbytes(self) -> int: ...  # data bytes queued

    @property
    def hbytes(self) -> int: ...  # priority (header/ACK) bytes queued


class DeciderView(Protocol):
    """What a member choice sees of the decider asking it."""

    @property
    def ports(self) -> Sequence[PortState]: ...  # the group's member ports, in member order

    @property
    def fkey(self) -> int: ...  # ``((src << 20) | dst) << 16``: or'ed with the entropy, a flow


class PacketView(Protocol):
    """What a member choice sees of a data packet."""

    @property
    def entropy(self) -> int: ...


class Clock(Protocol):
    @property
    def now(self) -> int: ...  # simulated time, integer picoseconds


@dataclass(frozen=True, slots=True)
class SwitchContext:
    """What one switch's member choice may use: the knobs, ``rand`` (the seeded
    ``switch/lb`` stream, shared by every switch), the clock, and the resolved
    ``quantum_bytes`` (``switch.adaptive_quantum_bytes``, default one full packet) and
    ``flowlet_gap_ps``."""

    switch: SwitchConfig
    rand: Callable[[], float]
    clock: Clock
    quantum_bytes: int
    flowlet_gap_ps: int

    @classmethod
    def of(cls, sc: Scenario, clock: Clock, rand: Callable[[], float]) -> SwitchContext:
        sw, nic = sc.switch, sc.nic
        quantum = sw.adaptive_quantum_bytes or nic.rdma_data_mss + nic.header_bytes
        return cls(sw, rand, clock, quantum, us_to_ps(sw.flowlet_gap_us))


class MemberChoice:
    """Interface: a switch's choice among the members of a group, per data packet.

    Class attributes a method declares: ``name`` (the config value), ``help`` (one line),
    ``knobs`` (the ``switch.*`` keys only it reads), ``engines``, ``packet_only`` (why the
    flow engine cannot run it) and ``hashed`` (True: no choice, the hash decides).
    """

    name = "base"
    help = ""
    knobs: ClassVar[tuple[str, ...]] = ()
    engines: ClassVar[tuple[str, ...]] = ("packet",)
    packet_only: ClassVar[str | None] = "acts per packet on queue state"
    hashed: ClassVar[bool] = False

    @classmethod
    def for_switch(cls, ctx: SwitchContext) -> MemberChoice:  # pragma: no cover - interface
        """The choice object of one switch."""
        raise NotImplementedError

    def pick(self, dec: DeciderView, pkt: PacketView) -> int:  # pragma: no cover - interface
        """Index in ``dec.ports`` of the member ``pkt`` leaves by."""
        raise NotImplementedError


def _describe(cls: type[MemberChoice]) -> Method:
    why = None if "flow" in cls.engines else cls.packet_only
    return Method(
        "switch.load_balancing_method",
        cls.name,
        help_of(cls),
        cls.engines,
        why,
        cls.knobs,
        **describe_extras(cls),
    )


SWITCH_METHODS: Registry[type[MemberChoice]] = Registry("switch.load_balancing_method", _describe)
"""The switch methods by ``switch.load_balancing_method`` name."""


def register_switch_method(cls: type[MemberChoice]) -> type[MemberChoice]:
    """Class decorator: register a switch method under its ``name``."""
    return SWITCH_METHODS.register(cls)


def unregister_switch_method(name: str) -> None:
    """Remove the switch method ``name`` (and its config name)."""
    SWITCH_METHODS.unregister(name)


def registered_switch_methods() -> dict[str, type[MemberChoice]]:
    """The registered switch methods by name, in registration order."""
    return SWITCH_METHODS.items()


def switch_method(name: str) -> type[MemberChoice]:
    """The switch method registered as ``name`` (:class:`ConfigError` listing them if none)."""
    return SWITCH_METHODS.get(name)


@register_switch_method
class EcmpChoice(MemberChoice):
    """``ecmp``: no choice object -- the switch's hash of the 5-tuple (``switch.hash_method``)."""

    name = "ecmp"
    compared = False  # the baseline: lb.policy ecmp
    help = "per-flow ECMP: the switch's hash of the packet's 5-tuple picks the member"
    engines = ("flow", "packet", "decomposed")
    packet_only = None
    hashed = True


def random_live(ports: Sequence[PortState], rand: Callable[[], float]) -> int:
    """Index of a uniformly random port among those whose link has not failed (any if none)."""
    m = int(rand() * len(ports))
    if ports[m].failed:
        live = [i for i, p in enumerate(ports) if not p.failed] or [m]
        m = live[int(rand() * len(live))]
    return m


def least_loaded(ports: Sequence[PortState], quantum: int, rand: Callable[[], float]) -> int:
    """Index of the live port with the fewest queued ``quantum`` units (ties: at random)."""
    best = -1
    m = ties = 0
    for i, p in enumerate(ports):
        if p.failed:
            continue
        q = (p.qbytes + p.hbytes) // quantum
        if best < 0 or q < best:
            best, m, ties = q, i, 1
        elif q == best:
            ties += 1
            if rand() * ties < 1.0:  # reservoir sampling: each tied member equally likely
                m = i
    return m
