"""Entropy selection of a PDC group: the spraying types of ``nic.packet_spraying_type``.

Each strategy is a small state machine with no event loop inside (htsim's ``nextEntropy`` /
``processEv``).  The NIC asks :meth:`SprayingStrategy.next_entropy` for the UDP source port of
every data packet and every retransmission, and reports feedback: a data ACK
(:meth:`~SprayingStrategy.on_ack`, with its ECN echo), a NACK for an outstanding packet
(:meth:`~SprayingStrategy.on_nack`), and a path failure -- a retransmission timeout or REPS's
early failure detection (:meth:`~SprayingStrategy.on_path_failure`).  Every argument named
``ev`` is an entropy value, 0..65535.

* ``none``: the local UDP port of the PDC that created the group, for the group's whole life.
* ``default``: strict round robin over ``2^EntropyMaskBits`` values from ``StartingPortOffset``,
  modulo 65,536, one step per data packet or retransmission.
* ``oblivious``: a fresh uniformly random value (0..65535) per packet.
* ``reps``: Recycled Entropy Packet Spraying, a circular cache of ``2^REPSBufferSizeMaskBits``
  values with freezing and an exploration window (:class:`RepsSpraying`).

After each :meth:`~SprayingStrategy.next_entropy` the attributes ``explored`` (bool) and
``reason`` (``"cache_empty"``, ``"window"`` or None) describe the choice, for the UET monitor.

Examples
--------
>>> s = DefaultSpraying(starting_port_offset=65535, entropy_mask_bits=8)
>>> [s.next_entropy() for _ in range(3)]
[65535, 0, 1]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from fabricsim.config.models import NicConfig
from fabricsim.units import ps_to_s


class Clock(Protocol):
    """Anything with the current simulated time ``now`` in integer picoseconds."""

    now: int


class _Port(Protocol):
    local_port: int


class SprayingStrategy:
    """Base class and interface: every packet on one fixed value, feedback ignored."""

    name = "base"
    feedback = False  # whether on_ack / on_nack / on_path_failure do anything
    explored = False
    reason: str | None = None

    def next_entropy(self) -> int:  # pragma: no cover - interface
        """Entropy value (UDP source port) of the next data packet or retransmission."""
        raise NotImplementedError

    def on_ack(self, ev: int, ecn: bool) -> None:
        """A data ACK arrived carrying ``ev``; ``ecn`` is its ECN echo."""

    def on_nack(self, ev: int) -> None:
        """A NACK arrived for an outstanding packet sent on ``ev``."""

    def on_path_failure(self, ev: int) -> None:
        """The packet sent on ``ev`` timed out or missed its early-failure deadline."""


class NoSpraying(SprayingStrategy):
    """``none``: the local port of the group's creating PDC (read live, so a re-route moves it).

    Examples
    --------
    >>> class P: local_port = 4242
    >>> NoSpraying(P()).next_entropy()
    4242
    """

    name = "none"

    def __init__(self, creator: _Port) -> None:
        self.creator = creator

    def next_entropy(self) -> int:
        return self.creator.local_port


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

    def __init__(self, starting_port_offset: int = 256, entropy_mask_bits: int = 7) -> None:
        self.start = starting_port_offset
        self.mask = (1 << entropy_mask_bits) - 1
        self.step = 0

    def next_entropy(self) -> int:
        i = self.step
        self.step = i + 1
        return (self.start + (i & self.mask)) & 0xFFFF


class ObliviousSpraying(SprayingStrategy):
    """``oblivious``: a fresh uniformly random value in 0..65535 for every packet."""

    name = "oblivious"

    def __init__(self, rand: Callable[[], float]) -> None:
        self.rand = rand

    def next_entropy(self) -> int:
        return int(self.rand() * 65536)


class RepsSpraying(SprayingStrategy):
    """Recycled Entropy Packet Spraying (REPS) with freezing and the exploration window.

    Parameters
    ----------
    buffer_size_mask_bits
        The cache holds ``2^bits`` values (REPSBufferSizeMaskBits).
    entropy_value_set_size
        Exploration draws uniformly from ``0 .. size - 1`` (EntropyValueSetSize).
    freezing_timeout_ps
        Minimum length of freezing, picoseconds (FreezingTimeout).
    window_packets
        Packets in the exploration window after freezing: floor(link rate x InitialBaseRTT /
        ((RdmaDataMSS + 88 B) x 8)); see :func:`exploration_window_packets`.
    rand
        Uniform [0, 1) draws (a reproducible stream).
    clock
        Object whose ``now`` is the simulated time in picoseconds.

    Notes
    -----
    Choice of a value, outside the window: take (and remove) the oldest cached value; if the
    cache is empty, explore (reason ``cache_empty``) -- except while freezing once a value has
    ever been cached, when the cache's slots are reused in turn.  In the window of ``W``
    packets, packet ``i`` (1-based) explores with reason ``window`` when ``(W - i)`` is a
    multiple of the cache size, and chooses as usual otherwise.  An ACK without ECN echo
    recycles its value (overwriting the oldest when full); an ACK with ECN echo, or a NACK,
    discards it.  A path failure starts freezing unless already freezing or in the window;
    freezing ends at the first recycle at least ``freezing_timeout_ps`` after it began, and the
    window opens then.

    Examples
    --------
    >>> class C: now = 0
    >>> r = RepsSpraying(3, 65536, 100_000_000, 71, rand=lambda: 0.5, clock=C())
    >>> r.next_entropy(), r.explored, r.reason
    (32768, True, 'cache_empty')
    >>> r.on_ack(7, ecn=False); r.next_entropy(), r.explored
    (7, False)
    """

    name = "reps"
    feedback = True

    def __init__(
        self,
        buffer_size_mask_bits: int,
        entropy_value_set_size: int,
        freezing_timeout_ps: int,
        window_packets: int,
        rand: Callable[[], float],
        clock: Clock,
    ) -> None:
        self.size = 1 << buffer_size_mask_bits
        self.buf = [0] * self.size
        self.head = 0  # slot of the oldest cached value
        self.count = 0  # values cached now
        self.recycled = 0  # values ever recycled (slots 0..min(recycled, size)-1 are written)
        self.value_set = entropy_value_set_size
        self.freezing_timeout_ps = freezing_timeout_ps
        self.window = window_packets
        self.rand = rand
        self.clock = clock
        self.freezing = False
        self.freeze_start_ps = 0
        self.win_pos = 0  # 0 outside the window, else the 1-based index of the next packet
        self.reuse = 0
        self.freezes = 0
        self.explorations = 0

    @property
    def state(self) -> str:
        """``normal``, ``freezing`` or ``window`` (for the monitor)."""
        if self.freezing:
            return "freezing"
        return "window" if self.win_pos else "normal"

    def _explore(self, reason: str) -> int:
        self.explored = True
        self.reason = reason
        self.explorations += 1
        return int(self.rand() * self.value_set)

    def _take_oldest(self) -> int:
        self.explored = False
        self.reason = None
        head = self.head
        self.head = (head + 1) % self.size
        self.count -= 1
        return self.buf[head]

    def _choose(self) -> int:
        if self.count:
            return self._take_oldest()
        if self.freezing and self.recycled:
            slots = min(self.recycled, self.size)
            k = self.reuse
            self.reuse = k + 1
            self.explored = False
            self.reason = None
            return self.buf[(self.head + k) % slots]
        return self._explore("cache_empty")

    def next_entropy(self) -> int:
        i = self.win_pos
        if i:
            self.win_pos = i + 1 if i < self.window else 0
            if (self.window - i) % self.size == 0:
                return self._explore("window")
        elif self.count:  # perf: the common case, _take_oldest inlined
            self.explored = False
            self.reason = None
            head = self.head
            self.head = (head + 1) % self.size
            self.count -= 1
            return self.buf[head]
        return self._choose()

    def on_ack(self, ev: int, ecn: bool) -> None:
        if ecn:
            return
        if self.count < self.size:
            self.buf[(self.head + self.count) % self.size] = ev
            self.count += 1
        else:
            self.buf[self.head] = ev
            self.head = (self.head + 1) % self.size
        self.recycled += 1
        if self.freezing and self.clock.now - self.freeze_start_ps >= self.freezing_timeout_ps:
            self.freezing = False
            self.win_pos = 1 if self.window > 0 else 0

    def on_path_failure(self, ev: int) -> None:
        if self.freezing or self.win_pos:
            return
        self.freezing = True
        self.freeze_start_ps = self.clock.now
        self.reuse = 0
        self.freezes += 1


def exploration_window_packets(
    link_rate_bps: float, base_rtt_ps: int, mss: int, hdr: int = 88
) -> int:
    """Packets in REPS's exploration window: one BDP of nominal packets, rounded down.

    Examples
    --------
    >>> exploration_window_packets(400e9, 6_000_000, 4096)
    71
    """
    bits = ps_to_s(link_rate_bps * base_rtt_ps)
    return int(bits // ((mss + hdr) * 8))


class _Builder(Protocol):
    def __call__(
        self,
        nic: NicConfig,
        creator: _Port,
        rand: Callable[[], float],
        clock: Clock,
        window_packets: int,
        freezing_timeout_ps: int,
    ) -> SprayingStrategy: ...


SPRAYING: dict[str, _Builder] = {
    "none": lambda nic, creator, rand, clock, w, f: NoSpraying(creator),
    "default": lambda nic, creator, rand, clock, w, f: DefaultSpraying(
        nic.starting_port_offset, nic.entropy_mask_bits
    ),
    "oblivious": lambda nic, creator, rand, clock, w, f: ObliviousSpraying(rand),
    "reps": lambda nic, creator, rand, clock, w, f: RepsSpraying(
        nic.reps_buffer_size_mask_bits, nic.entropy_value_set_size, f, w, rand, clock
    ),
}
"""Spraying type name -> builder of a fresh strategy (one per PDC group)."""


def make_spraying(
    nic: NicConfig,
    creator: _Port,
    rand: Callable[[], float],
    clock: Clock,
    window_packets: int,
    freezing_timeout_ps: int,
) -> SprayingStrategy:
    """A fresh spraying state for a new PDC group (``nic.packet_spraying_type``)."""
    return SPRAYING[nic.packet_spraying_type](
        nic, creator, rand, clock, window_packets, freezing_timeout_ps
    )
