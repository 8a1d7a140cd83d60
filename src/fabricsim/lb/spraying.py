"""NIC spraying types (``nic.packet_spraying_type``): the registry, ``none``, ``default``, ``oblivious``.

A spraying type is one :class:`SprayingStrategy` subclass carrying both of its forms:

* **packet form** -- the class itself: a small state machine with no event loop inside
  (htsim's ``nextEntropy`` / ``processEv``), one instance per PDC group, built by
  :meth:`SprayingStrategy.for_group`.  The NIC asks :meth:`~SprayingStrategy.next_entropy`
  for the entropy of every data packet and every retransmission, and reports feedback: a data
  ACK (:meth:`~SprayingStrategy.on_ack`, with its ECN echo), a NACK for an outstanding packet
  (:meth:`~SprayingStrategy.on_nack`), and a path failure -- a retransmission timeout or an
  early failure detection (:meth:`~SprayingStrategy.on_path_failure`).  After each
  ``next_entropy`` the attributes ``explored`` (bool) and ``reason`` (``"cache_empty"``,
  ``"window"`` or None) describe the choice, for the UET monitor (absent: False, None).
* **fluid form** -- ``fluid``: the :class:`FluidForm` the flow engine splits a connection's
  bytes with (the entropies a connection's packets use, as shares of its bytes), or None for a
  type only the packet engine can run; then ``packet_only`` says why, and that declaration is
  what the flow engine's refusal reads.

The built-in types: ``none`` (the creating PDC's source port for the group's whole life),
``default`` (strict round robin over ``2^EntropyMaskBits`` values from ``StartingPortOffset``,
modulo 65,536, one step per data packet or retransmission), ``oblivious`` (a fresh uniformly
random value per packet) and ``reps`` (:mod:`fabricsim.lb.reps`, packet only).

Examples
--------
>>> s = DefaultSpraying(starting_port_offset=65535, entropy_mask_bits=8)
>>> [s.next_entropy() for _ in range(3)]
[65535, 0, 1]
>>> spraying_type("oblivious").engines()
('flow', 'packet', 'decomposed')
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Protocol

import numpy as np

from fabricsim.config.delivery import NEEDS_FEEDBACK, SINGLE_PATH
from fabricsim.config.models import NicConfig
from fabricsim.lb.registry import Method, Registry, describe_extras, help_of
from fabricsim.routing.router import Path, Router

WeightedPaths = list[tuple[Path, float]]
_ALL_PORTS = np.arange(65536, dtype=np.int64)
"""Paths of a connection with the share of its bytes on each (shares sum to 1)."""


class Clock(Protocol):
    """Anything with the current simulated time ``now`` in integer picoseconds."""

    now: int


class PortOwner(Protocol):
    """The PDC that created a group: its configured UDP source port (read live), and its
    progress (wire bytes in flight, packets acknowledged of all; PLB's idleness)."""

    src_port: int
    inflight: int
    acked_pkts: int
    npkts: int


@dataclass(frozen=True, slots=True)
class SprayContext:
    """What a new PDC group's spraying state may use.

    ``creator`` is the PDC that created the group, ``rand`` the NIC's uniform [0, 1) draws,
    ``clock`` the simulation, ``window_packets`` REPS's exploration window of this NIC,
    ``freezing_timeout_ps`` ``nic.freezing_timeout_us`` in picoseconds and ``base_rtt_ps`` the
    path's base RTT (``nic.initial_base_rtt_us`` or the unloaded RTT; PLB's round, ROD's hold).
    """

    nic: NicConfig
    creator: PortOwner
    rand: Callable[[], float]
    clock: Clock
    window_packets: int
    freezing_timeout_ps: int
    base_rtt_ps: int = 0


# -- fluid forms ---------------------------------------------------------------------------------


class FluidForm:
    """Interface: a spraying type's fluid limit, the flow engine's view of it (built from
    ``nic``, the scenario's NIC section).

    ``weights(router, src, dst, src_port)`` is the connection's weighted paths (empty if it
    cannot be routed); ``per_connection`` says whether they depend on the connection's own
    ``src_port`` (else one result serves every connection of the pair); ``first_entropy``
    is the entropy the flows table shows for a connection on ``src_port``.
    """

    per_connection = False

    def __init__(self, nic: NicConfig) -> None:
        pass

    def weights(self, router: Router, src: int, dst: int, src_port: int) -> WeightedPaths:
        raise NotImplementedError  # pragma: no cover - interface

    def first_entropy(self, src_port: int) -> int:
        return src_port


class OnePort(FluidForm):
    """Every packet on the connection's own source port: the one path the hash gives it."""

    per_connection = True

    def weights(self, router: Router, src: int, dst: int, src_port: int) -> WeightedPaths:
        path = router.route(src, dst, src_port)
        return [(path, 1.0)] if path is not None else []


class PortSet(FluidForm):
    """The ``default`` round robin's ports, each path weighted by the ports that reach it."""

    def __init__(self, nic: NicConfig) -> None:
        count = 2**nic.entropy_mask_bits
        self.ports = (nic.starting_port_offset + np.arange(count)) % 65536

    def weights(self, router: Router, src: int, dst: int, src_port: int) -> WeightedPaths:
        total = len(self.ports)
        ports = self.ports | (src_port & ~0xFFFF)  # the connection's destination QP, if any
        return [(path, n / total) for path, n in router.port_paths(src, dst, ports)]

    def first_entropy(self, src_port: int) -> int:
        return int(self.ports[0])


class AllPorts(FluidForm):
    """All 65,536 values equally: each path weighted by the share of ports that reach it."""

    def weights(self, router: Router, src: int, dst: int, src_port: int) -> WeightedPaths:
        ports = _ALL_PORTS | (src_port & ~0xFFFF)  # the connection's destination QP, if any
        return [(p, n / 65536) for p, n in router.port_paths(src, dst, ports)]


# -- packet forms and the registry ---------------------------------------------------------------


class SprayingStrategy:
    """Base class and interface: every packet on one fixed value, feedback ignored.

    Class attributes a spraying type declares: ``name`` (the config value), ``help`` (one
    line), ``aliases`` (other accepted spellings; case, spaces and ``_`` are ignored),
    ``knobs`` (the ``nic.*`` keys it reads), ``feedback`` (whether the ``on_*`` methods do
    anything), ``single_path`` (one entropy value at a time: ``nic.delivery_mode rod`` allows
    only these), ``early_failure_detection`` (whether the NIC runs
    ``nic.failure_detection_rtt_multiplier`` deadlines for it), ``fluid`` and ``packet_only``
    (see the module docstring).
    """

    name = "base"
    help = ""
    aliases: ClassVar[tuple[str, ...]] = ()
    knobs: ClassVar[tuple[str, ...]] = ()
    feedback = False
    single_path = False
    early_failure_detection = False
    fluid: ClassVar[type[FluidForm] | None] = None
    packet_only: ClassVar[str | None] = None
    # ``explored`` and ``reason`` are instance attributes of the types that set them (REPS);
    # readers default to False and None (the compiled build declares them in spraying.pxd)

    @classmethod
    def for_group(cls, ctx: SprayContext) -> SprayingStrategy:  # pragma: no cover - interface
        """A fresh spraying state for a new PDC group."""
        raise NotImplementedError

    @classmethod
    def engines(cls) -> tuple[str, ...]:
        """The engines that run it: the flow engine too when it has a fluid form (and the
        decomposed engine, which routes as the flow engine does)."""
        return ("flow", "packet", "decomposed") if cls.fluid is not None else ("packet",)

    def next_entropy(self) -> int:  # pragma: no cover - interface
        """Entropy (UDP source port) of the next data packet or retransmission."""
        raise NotImplementedError

    def on_ack(self, entropy: int, ecn: bool) -> None:
        """A data ACK arrived carrying ``entropy``; ``ecn`` is its ECN echo."""

    def on_nack(self, entropy: int) -> None:
        """A NACK arrived for an outstanding packet sent on ``entropy``."""

    def on_path_failure(self, entropy: int) -> None:
        """The packet sent on ``entropy`` timed out or missed its early-failure deadline."""


def _describe(cls: type[SprayingStrategy]) -> Method:
    why = None if cls.packet_only is None else f"needs the packet engine ({cls.packet_only})"
    return Method(
        "nic.packet_spraying_type",
        cls.name,
        help_of(cls),
        cls.engines(),
        why,
        cls.knobs,
        **describe_extras(cls),
    )


def _traits(cls: type[SprayingStrategy]) -> tuple[str, ...]:
    """The traits config reads (:mod:`fabricsim.config.delivery`): one entropy at a time (what
    ``nic.delivery_mode rod`` allows), and reacting to feedback (what ``uud`` cannot give)."""
    return (SINGLE_PATH,) * cls.single_path + (NEEDS_FEEDBACK,) * cls.feedback


SPRAYING: Registry[type[SprayingStrategy]] = Registry(
    "nic.packet_spraying_type", _describe, _traits
)
"""The spraying types by ``nic.packet_spraying_type`` name."""


def register_spraying(cls: type[SprayingStrategy]) -> type[SprayingStrategy]:
    """Class decorator: register a spraying type under its ``name``."""
    if cls.fluid is None and not cls.packet_only:
        raise ValueError(f"spraying type {cls.name}: declare a fluid form or why packet only")
    return SPRAYING.register(cls)


def unregister_spraying(name: str) -> None:
    """Remove the spraying type ``name`` (and its config name)."""
    SPRAYING.unregister(name)


def registered_spraying() -> dict[str, type[SprayingStrategy]]:
    """The registered spraying types by name, in registration order."""
    return SPRAYING.items()


def spraying_type(name: str) -> type[SprayingStrategy]:
    """The spraying type registered as ``name`` (:class:`ConfigError` listing them if none)."""
    return SPRAYING.get(name)


def make_spraying(
    nic: NicConfig,
    creator: PortOwner,
    rand: Callable[[], float],
    clock: Clock,
    window_packets: int,
    freezing_timeout_ps: int,
    base_rtt_ps: int = 0,
) -> SprayingStrategy:
    """A fresh spraying state for a new PDC group (``nic.packet_spraying_type``)."""
    ctx = SprayContext(nic, creator, rand, clock, window_packets, freezing_timeout_ps, base_rtt_ps)
    return SPRAYING.get(nic.packet_spraying_type).for_group(ctx)


class NoSpraying(SprayingStrategy):
    """``none``: the source port of the group's creating PDC (read live: a re-route moves it).

    Examples
    --------
    >>> class P: src_port = 4242
    >>> NoSpraying(P()).next_entropy()
    4242
    """

    name = "none"
    compared = False  # the baseline: lb.policy ecmp
    single_path = True
    help = "no spraying: every packet on its connection's own source port (per-flow ECMP)"
    fluid = OnePort

    def __init__(self, creator: PortOwner) -> None:
        self.creator = creator

    @classmethod
    def for_group(cls, ctx: SprayContext) -> SprayingStrategy:
        return cls(ctx.creator)

    def next_entropy(self) -> int:
        return self.creator.src_port


class DefaultSpraying(SprayingStrategy):
    """``default``: round robin over ``2^entropy_mask_bits`` ports from ``starting_port_offset``.

    Examples
    --------
    >>> s = DefaultSpraying(256, 7)
    >>> vals = [s.next_entropy() for _ in range(256)]
    >>> min(vals), max(vals), vals.count(256)
    (256, 383, 2)
    """

    name = "default"
    label = "NIC round robin over entropies"
    help = "round robin over 2^EntropyMaskBits entropies from StartingPortOffset"
    aliases = ("DefaultPacketSpraying",)
    knobs = ("nic.entropy_mask_bits", "nic.starting_port_offset")
    fluid = PortSet

    def __init__(self, starting_port_offset: int = 256, entropy_mask_bits: int = 7) -> None:
        self.start = starting_port_offset
        self.mask = (1 << entropy_mask_bits) - 1
        self.step = 0

    @classmethod
    def for_group(cls, ctx: SprayContext) -> SprayingStrategy:
        return cls(ctx.nic.starting_port_offset, ctx.nic.entropy_mask_bits)

    def next_entropy(self) -> int:
        i = self.step
        self.step = i + 1
        return (self.start + (i & self.mask)) & 0xFFFF


class ObliviousSpraying(SprayingStrategy):
    """``oblivious``: a fresh uniformly random value in 0..65535 for every packet.

    With ``nic.oblivious_values`` = N (a power of two; htsim's ``-paths``) it walks a cycle of N
    values instead: the low bits run through 0..N-1 XOR a random mask drawn anew at every wrap,
    the high bits are a random constant of the group, so every N consecutive packets use N
    distinct values.  The flow engine's fluid form is the same either way (all 65,536 ports
    evenly: the expectation over the random high bits).

    Examples
    --------
    >>> import random
    >>> s = ObliviousSpraying(random.Random(1).random, values=4)
    >>> len({s.next_entropy() for _ in range(4)})
    4
    """

    name = "oblivious"
    label = "NIC random entropy per packet"
    help = "a fresh uniformly random entropy per packet"
    aliases = ("ObliviousPacketSpraying",)
    knobs = ("nic.oblivious_values",)
    fluid = AllPorts

    def __init__(self, rand: Callable[[], float], values: int | None = None) -> None:
        self.rand = rand
        self.values = values or 0
        if self.values:
            self.high = int(rand() * 65536) & ~(self.values - 1) & 0xFFFF
            self.xor = int(rand() * self.values)
            self.i = 0

    @classmethod
    def for_group(cls, ctx: SprayContext) -> SprayingStrategy:
        return cls(ctx.rand, ctx.nic.oblivious_values)

    def next_entropy(self) -> int:
        n = self.values
        if not n:
            return int(self.rand() * 65536)
        i = self.i
        if i == n:
            self.xor = int(self.rand() * n)
            i = 0
        self.i = i + 1
        return self.high | (i ^ self.xor)


# not as decorators: the compiled build makes these C types, which take none
register_spraying(NoSpraying)
register_spraying(DefaultSpraying)
register_spraying(ObliviousSpraying)
