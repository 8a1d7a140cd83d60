"""REPS, Recycled Entropy Packet Spraying (``nic.packet_spraying_type: reps``): packet only.

REPS recycles the entropy of every data ACK without ECN echo and explores fresh values when its
cache is empty, freezing its choices after a path failure (:class:`RepsSpraying`).  Its choices
react to per-packet ACK feedback, which the flow engine's fluid model does not have: its fluid
form is None, declared by ``packet_only`` (the flow engine's refusal reads it).

Examples
--------
>>> RepsSpraying.engines(), RepsSpraying.packet_only
(('packet',), 'REPS reacts to per-packet ACK feedback')
"""

from __future__ import annotations

from collections.abc import Callable

from fabricsim.lb.spraying import Clock, SprayContext, SprayingStrategy, register_spraying
from fabricsim.units import ps_to_s


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
    label = "NIC recycled entropies (REPS)"
    help = "Recycled Entropy Packet Spraying: recycle the entropies of ACKs without ECN"
    aliases = ("RecycledEntropyPacketSpraying",)
    knobs = (
        "nic.reps_buffer_size_mask_bits",
        "nic.entropy_value_set_size",
        "nic.freezing_timeout_us",
        "nic.failure_detection_rtt_multiplier",
        "nic.reps_recycle_last_hop_nack",
    )
    feedback = True
    early_failure_detection = True
    fluid = None
    packet_only = "REPS reacts to per-packet ACK feedback"

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
        self.explored = False  # how the last value was chosen (for the monitor)
        self.reason: str | None = None
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

    @classmethod
    def for_group(cls, ctx: SprayContext) -> SprayingStrategy:
        nic = ctx.nic
        return cls(
            nic.reps_buffer_size_mask_bits,
            nic.entropy_value_set_size,
            ctx.freezing_timeout_ps,
            ctx.window_packets,
            ctx.rand,
            ctx.clock,
        )

    def _explore(self, reason: str) -> int:
        self.explored = True
        self.reason = reason
        self.explorations += 1
        r = self.rand()  # (a C double compiled: no Python float arithmetic)
        return int(r * self.value_set)

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

    def on_ack(self, entropy: int, ecn: bool) -> None:
        if ecn:
            return
        if self.count < self.size:
            self.buf[(self.head + self.count) % self.size] = entropy
            self.count += 1
        else:
            self.buf[self.head] = entropy
            self.head = (self.head + 1) % self.size
        self.recycled += 1
        if self.freezing and self.clock.now - self.freeze_start_ps >= self.freezing_timeout_ps:
            self.freezing = False
            self.win_pos = 1 if self.window > 0 else 0

    def on_path_failure(self, entropy: int) -> None:
        if self.freezing or self.win_pos:
            return
        self.freezing = True
        self.freeze_start_ps = self.clock.now
        self.reuse = 0
        self.freezes += 1


register_spraying(RepsSpraying)  # not a decorator: compiled, it is a C type


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
