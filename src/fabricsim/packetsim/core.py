# cython: boundscheck=False, wraparound=False
"""The packet engine's hot path: event loop, packets, output-queued ports.

Kept in one small module so it can later be compiled (Cython / mypyc).  Conventions:

* time is an integer number of picoseconds, sizes are bytes, rates bits per second;
* events are ``callback(arg)`` at an integer time, in a 4-ary heap ordered by (time,
  insertion number): ties break by insertion order.  Its keys live in ``array('q')`` tables,
  so the compiled build sifts on C integers;
* every element that receives a packet offers ``receive(pkt)``; a packet carries its route as
  the tuple of ``receive`` callables of the elements it visits (``hops``) and the index of the
  element holding it (``hop``), so forwarding is one tuple index per hop;
* a port has at most one pending event (its next departure), and only while it has packets.

Examples
--------
>>> sim = Sim()
>>> out = []
>>> sim.at(5, out.append, "b"); sim.at(5, out.append, "c"); sim.at(1, out.append, "a")
>>> sim.run(100), out
(3, ['a', 'b', 'c'])
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

from fabricsim.engine_api import ACK, DATA, HDR, NACK
from fabricsim.units import PS_PER_S

try:
    import cython

    COMPILED = cython.compiled
except ImportError:  # pure Python without Cython installed
    COMPILED = False

# fmt: off
__all__ = [
    "ACK", "DATA", "HDR", "NACK",  # the packet kinds (defined in fabricsim.engine_api)
    "DropSink", "Element", "HostPort", "Packet", "PacketPool", "Port", "RandomPool", "Route",
    "SharedBuffer", "Sim", "wheel_width_bits",
]
# fmt: on


class Packet:
    """Header fields only (htsim style); objects are recycled through :class:`PacketPool`."""

    # fmt: off

    __slots__ = (
        "kind", "pdc", "src", "dst", "psn", "size", "payload", "entropy",
        "hops", "hop", "ecn", "ts", "cack", "sbase", "sack", "ar", "last_hop", "prev", "nxt",
        "bk",
    )

    # fmt: on

    def __init__(self) -> None:
        self.kind = DATA
        self.pdc: Any = None
        self.src = self.dst = self.psn = self.size = self.payload = self.entropy = 0
        self.hops: tuple[Callable[[Packet], None], ...] = ()
        self.hop = 0
        self.ecn = False
        self.ar = False  # data: the sender asks for an immediate ACK (nic.ack_request)
        self.last_hop = False  # header / NACK: trimmed at the port before the receiver
        self.ts = 0  # send time of the data transmission (echoed by its ACK / NACK)
        self.cack = 0  # ACK: every PSN below is received
        self.sbase = 0  # ACK: first PSN of the SACK bitmap (>= cack, covers the PSN answered)
        self.sack = 0  # ACK: bit j = PSN sbase + j received (64 bits)
        self.prev: Port | None = None  # PFC: the port that sent it last (its ingress link)
        # perf: a port's FIFOs are linked through their packets (no deque, no allocation)
        self.nxt: Packet | None = None  # the packet queued after it
        self.bk: Packet | None = None  # ... and before it


class Route:
    """One path: link ids, the callables a packet visits, and its label.

    ``hops`` ends with the destination NIC's data entry, ``ctrl_hops`` (same path) with its
    ACK/NACK entry, so the NIC needs no dispatch on the packet kind.  Under a live member
    choice ``hops`` may stop at a decider (then ``label`` is empty and ``links`` the hashed
    path that ``ctrl_hops`` follows).  ``ok`` is False for a route that dead-ends (its last
    hop drops the packet); ``tops`` are the indices of the top-tier switches on it (spine
    timeline).  Built by the route table (:mod:`fabricsim.packetsim.forwarding`).

    ``label`` is the path's label, or a callable that names ``links`` (the fabric's
    ``path_label``): then the label is made when first read.  # perf: most routes of a
    sprayed run are never labelled one by one (a flow's ``path`` column counts them past
    eight), and naming each new path was 2 % of a 1,024-host run
    """

    __slots__ = ("links", "hops", "ctrl_hops", "name", "ok", "tops", "user")

    def __init__(
        self,
        links: tuple[int, ...],
        hops: tuple[Callable, ...],
        ctrl_hops: tuple[Callable, ...],
        label: str | Callable[[tuple[int, ...]], str],
        ok: bool,
        tops: tuple[int, ...] = (),
    ) -> None:
        self.links, self.hops, self.ctrl_hops = links, hops, ctrl_hops
        self.name: Any = label  # the label, or what makes it (see ``label``)
        self.ok, self.tops = ok, tops
        # perf: the sender that last recorded this route (one check per packet instead of a
        # dict insert)
        self.user: Any = None

    @property
    def label(self) -> str:
        """Switch names along the path joined by ``>`` (empty before a live choice)."""
        name = self.name
        if not isinstance(name, str):
            name = self.name = name(self.links)
        return name


class PacketPool:
    """Free list of :class:`Packet` objects (``get`` / ``put``)."""

    __slots__ = ("free",)

    def __init__(self) -> None:
        self.free: list[Packet] = []

    def get(self) -> Packet:
        free = self.free
        if free:
            return free.pop()
        return Packet()

    def put(self, pkt: Packet) -> None:
        pkt.ecn = False
        self.free.append(pkt)


class RandomPool:
    """Uniform [0, 1) draws from a numpy generator, fetched in blocks (fast per draw).

    Examples
    --------
    >>> from fabricsim.rng import stream
    >>> a = RandomPool(stream(1, "nic")); b = RandomPool(stream(1, "nic"))
    >>> [a.random() for _ in range(3)] == [b.random() for _ in range(3)]
    True
    """

    __slots__ = ("gen", "buf", "block", "i")

    def __init__(self, gen: np.random.Generator, block: int = 4096) -> None:
        self.gen = gen
        self.block = block
        # perf: the draws as one array of doubles (compiled: read as a C array), not a list
        # of float objects (1,024 NICs held 6 MB of them)
        self.buf = np.empty(0)
        self.i = 0  # the next draw's index in buf

    def random(self) -> float:
        i = self.i
        if i == len(self.buf):
            self.buf = self.gen.random(self.block)
            i = 0
        self.i = i + 1
        return float(self.buf[i])


_SLOT_BITS = 26
"""Bits of a calendar key that hold the event's slot: at most 2**26 events pending at once."""
_SEQ_LIMIT = 1 << 37  # 1 << (63 - _SLOT_BITS), a literal: compiled, C would shift an int
"""Events one calendar can schedule in a run (2**37, about 1.4e11)."""
_ALL = 0xFFFFFFFFFFFFFFFF
"""A bucket bitmap's word with every bit set."""
_TIME_MAX = 1 << 62
"""The latest time an event may have, ps (about 53 days; the window arithmetic stays in int64)."""
_BUCKET_MAX = 1024
"""Events a wheel's bucket may hold (a calendar's wheel table stays within 32 MB)."""


def _draw(rand: Callable[[], float]) -> float:
    """One draw of ``rand`` (compiled: a C double, so the arithmetic on it is C's)."""
    return rand()


def _low_bit(w: int) -> int:
    """The index of the lowest set bit of the 64-bit word ``w`` (not 0).

    >>> _low_bit(1), _low_bit(0b1011000), _low_bit(1 << 63)
    (0, 3, 63)
    """
    n = 0
    half = 32
    one = 1
    while half:  # halve the span that holds it
        if not w & ((one << half) - 1):
            n += half
            w >>= half
        half >>= 1
    return n


def wheel_width_bits(horizon_ps: int, wheel_bits: int = 11) -> int:
    """The bucket width (``2**result`` ps) of a wheel of ``2**wheel_bits`` buckets that reaches
    at least 1.5 x ``horizon_ps`` ahead (at most 2**30 ps a bucket): most events then land
    on the wheel, not in the overflow heap.

    >>> wheel_width_bits(1_000_000 + 4184 * 80)  # a 1 us link and a 4 KB packet at 100 Gbps
    10
    >>> wheel_width_bits(10_000_000)  # 10 us links: 8 ns buckets
    13
    """
    wb = 0
    while (2 << (wheel_bits + wb)) < 3 * horizon_ps and wb < 30:
        wb += 1
    return wb


class Sim:
    """Clock and event calendar shared by every element of one simulation (no global state).

    Events run in the order of (time, insertion number): ties at one time run in the order
    they were scheduled, including events scheduled at the current time while it is being
    processed.  The calendar is a timing wheel beside two 4-ary heaps:

    * the **current heap** (``heap`` from 0, ``size`` entries): every event of the current
      window ``[lo, cut)`` (and none later), ordered;
    * the **wheel**: ``nb`` buckets of ``2**wb`` ps each (default 2,048 of 1.024 ns: 2.1 us
      ahead, a link's delay and a packet's serialization; the engine sizes the buckets to its
      fabric, :func:`wheel_width_bits`).  Bucket ``b`` holds up to ``bk``
      events of its window, in insertion order, side by side in ``wheel`` from ``2 x b x bk``
      (``count[b]`` of them; bit ``b`` of ``bits`` says whether it holds any).  A bucket that
      fills doubles every bucket's room if the wheel holds a quarter of its room or more (up
      to ``bmax`` each, :data:`_BUCKET_MAX`); otherwise its further events go to the overflow
      heap;
    * the **overflow heap** (``heap`` from ``cap``, ``osize`` entries): events at ``end`` =
      ``lo + nb x 2**wb`` or later, and those of full buckets; they move into the wheel as it
      turns.

    When the current heap is empty the next window holding an event (the wheel's next
    non-empty bucket, else the overflow heap's first event's) becomes current and its
    events move into the current heap.  Heap position ``i`` is the pair ``heap[2i]`` = the
    event's time and ``heap[2i + 1]`` = its key, the insertion number shifted left by
    :data:`_SLOT_BITS` plus its slot (so keys order as insertion numbers do); a bucket's
    entries are such pairs too; slot ``k`` holds the callback ``objs[2k]`` and argument
    ``objs[2k + 1]`` (heaps and buckets move integers, never the objects); ``free[:nfree]``
    lists the unused slots.  The integer tables are ``array`` objects (the compiled build reads
    them as C arrays); they double when full.  # perf: at 1,024 hosts ~31,000 events are
    pending, and popping the root of one heap of them (seven levels, the lower ones cold) was
    12 % of the run; a window holds a few dozen, and a bucket is read front to back (a list
    linked through the slots was as slow as the heap: each next entry a cold load).  A heap
    node's four children are 64 bytes side by side, so a step of a sift touches one cache line
    """

    # fmt: off
    __slots__ = (
        "now", "events", "stopped", "seq", "size", "nfree", "heap", "free", "objs", "cap",
        "osize", "wn", "wb", "nb", "bk", "bmax", "width", "lo", "cut", "end", "wheel", "count",
        "bits",
    )
    # fmt: on

    def __init__(
        self,
        capacity: int = 1024,
        width_bits: int = 10,
        wheel_bits: int = 11,
        bucket_max: int = _BUCKET_MAX,
    ) -> None:
        if not 6 <= wheel_bits <= 16 or not 0 <= width_bits <= 30 or bucket_max < 8:
            raise ValueError("a wheel of 2**6 to 2**16 buckets of 2**0 to 2**30 ps, 8 or more each")
        self.now = 0
        self.events = 0
        self.stopped = False
        self.seq = 0  # insertion number of the next event
        self.cap = capacity  # slots
        self.size = 0  # events in the current heap
        self.osize = 0  # ... in the overflow heap
        self.wn = 0  # ... in the wheel's buckets
        self.heap = array("q", bytes(32 * capacity))  # current heap, then the overflow heap
        self.free = array("q", range(capacity - 1, -1, -1))
        self.nfree = capacity
        # callback and argument of each slot side by side (None: a free slot); perf: one
        # cache line holds both
        self.objs: list[Any] = [None] * (2 * capacity)
        self.wb, self.nb, self.bk, self.bmax = width_bits, 1 << wheel_bits, 8, bucket_max
        self.width = 1 << width_bits  # (a field: compiled, C would shift a 32-bit 1)
        self.wheel = array("q", bytes(16 * self.nb * self.bk))
        self.count = array("q", bytes(8 * self.nb))
        self.bits = array("Q", bytes(self.nb // 8))
        self._open(0)  # the current window [lo, cut); the wheel reaches to end

    def at(self, t_ps: int, fn: Callable[[Any], None], arg: Any = None) -> None:
        """Call ``fn(arg)`` at time ``t_ps`` (never earlier than now)."""
        if t_ps < self.now:
            t_ps = self.now
        elif t_ps > _TIME_MAX:
            raise ValueError(f"an event at {t_ps:,} ps: the calendar's times end at 2**62")
        if not self.nfree:
            self._grow()
        self.nfree -= 1
        slot = self.free[self.nfree]
        self.objs[2 * slot] = fn
        self.objs[2 * slot + 1] = arg
        seq = self.seq
        if seq >= _SEQ_LIMIT:
            raise RuntimeError(f"more than {_SEQ_LIMIT:,} events scheduled in one run")
        self.seq = seq + 1
        key = (seq << _SLOT_BITS) | slot
        if t_ps < self.cut:
            self._push(0, self.size, t_ps, key)
            self.size += 1
        elif t_ps >= self.end or not self._bucket(t_ps, key):
            self._push(self.cap, self.osize, t_ps, key)
            self.osize += 1

    def _bucket(self, t: int, key: int) -> bool:
        """Append the event to the wheel's bucket of ``t`` (within the wheel, past the
        current window); False if the bucket is full and may not grow."""
        b = (t >> self.wb) & (self.nb - 1)
        c = self.count[b]
        if c == self.bk:
            if 2 * self.bk > self.bmax or 4 * self.wn < self.nb * self.bk:
                return False  # perf: the room follows the wheel's load, not one crowded bucket
            self._widen()
        i = 2 * (b * self.bk + c)
        self.wheel[i] = t
        self.wheel[i + 1] = key
        self.count[b] = c + 1
        if not c:
            one = 1
            self.bits[b >> 6] |= one << (b & 63)
        self.wn += 1
        return True

    def _widen(self) -> None:
        """Double every bucket's room."""
        bk = self.bk
        old = self.wheel
        wheel = array("q", bytes(32 * self.nb * bk))
        for b in range(self.nb):
            for i in range(2 * self.count[b]):
                wheel[4 * b * bk + i] = old[2 * b * bk + i]
        self.wheel = wheel
        self.bk = 2 * bk

    def _push(self, base: int, n: int, t: int, key: int) -> None:
        """Add (t, key) to the heap of ``n`` entries from position ``base``: it sifts up
        (later events usually stop at once)."""
        i = n
        while i:
            up = (i - 1) >> 2
            tu = self.heap[2 * (base + up)]
            if tu < t or (tu == t and self.heap[2 * (base + up) + 1] < key):
                break
            self.heap[2 * (base + i)] = tu
            self.heap[2 * (base + i) + 1] = self.heap[2 * (base + up) + 1]
            i = up
        self.heap[2 * (base + i)] = t
        self.heap[2 * (base + i) + 1] = key

    def _grow(self) -> None:
        """Double the tables (the new slots are free)."""
        cap = self.cap
        if 2 * cap > 1 << _SLOT_BITS:
            raise RuntimeError(f"more than {1 << _SLOT_BITS:,} events pending at once")
        old = self.heap
        heap = array("q", bytes(64 * cap))
        for i in range(2 * self.size):  # the current heap, then the overflow heap's new place
            heap[i] = old[i]
        for i in range(2 * self.osize):
            heap[4 * cap + i] = old[2 * cap + i]
        self.heap = heap
        free = array("q", range(2 * cap - 1, cap - 1, -1))  # (none was free before)
        free.frombytes(bytes(8 * cap))  # room for every slot
        self.free = free
        self.nfree = cap
        self.objs.extend([None] * (2 * cap))
        self.cap = 2 * cap

    @property
    def pending(self) -> int:
        """Events scheduled and not yet processed."""
        return self.size + self.wn + self.osize

    def pending_args(self) -> list[Any]:
        """The arguments of the events scheduled and not yet processed (in slot order)."""
        objs = self.objs
        return [objs[2 * k + 1] for k in range(self.cap) if objs[2 * k] is not None]

    def run(self, limit_ps: int) -> int:
        """Process events in time order until none is left or the next is after ``limit_ps``.

        Returns the number of events processed; ``stopped`` tells whether the limit cut the run.
        """
        n = 0
        mask = (1 << _SLOT_BITS) - 1
        while True:
            if not self.size:
                if not self.wn and not self.osize:
                    break
                self._turn()
            t = self.heap[0]
            if t > limit_ps:
                self.stopped = True
                break
            self.now = t
            slot = self.heap[1] & mask
            fn = self.objs[2 * slot]
            arg = self.objs[2 * slot + 1]
            self.objs[2 * slot] = None
            self.objs[2 * slot + 1] = None
            self.free[self.nfree] = slot
            self.nfree += 1
            self._pop_root()
            if COMPILED and self.size:  # perf: the CPU loads the next event's objects
                slot = self.heap[1] & mask  # while this one runs (see prefetch in core.pxd)
                prefetch(self.objs, 2 * slot, 4)  # type: ignore[name-defined]  # noqa: F821
                prefetch(self.objs, 2 * slot + 1, 3)  # type: ignore[name-defined]  # noqa: F821
            if isinstance(fn, Element):  # perf: a C call compiled (see Element)
                el = fn
                if arg is None:
                    el.wake()
                else:
                    el.receive(arg)
            else:
                fn(arg)
            n += 1
        self.events += n
        return n

    def _turn(self) -> None:
        """The current heap is empty and events are pending: the next window that holds an
        event becomes current (the wheel's next non-empty bucket, else the overflow heap's
        first event's), and its events fill the current heap."""
        wb, nb = self.wb, self.nb
        if not self.wn:  # the wheel is empty: the overflow heap's first event opens the window
            self._open(self.heap[2 * self.cap] >> wb << wb)
            return
        # (events a full bucket sent to the overflow heap are not earlier than that bucket:
        # the wheel reaches them first, and _open moves them)
        b = ((self.lo >> wb) + 1) & (nb - 1)
        w = b >> 6
        word = self.bits[w] & (_ALL << (b & 63))
        while not word:  # (the wheel holds an event: some bucket is not empty)
            w = (w + 1) & ((nb >> 6) - 1)
            word = self.bits[w]
        b = (w << 6) + _low_bit(word)
        self._open(self.lo + (((b - (self.lo >> wb)) & (nb - 1)) << wb))
        one = 1
        self.bits[b >> 6] ^= one << (b & 63)
        c = self.count[b]
        self.count[b] = 0
        i = 2 * b * self.bk
        size = self.size
        for k in range(c):
            self._push(0, size + k, self.wheel[i + 2 * k], self.wheel[i + 2 * k + 1])
        self.size = size + c
        self.wn -= c

    def _open(self, lo: int) -> None:
        """Make ``[lo, lo + 2**wb)`` the current window: the overflow heap's events in it
        move into the current heap, and those the wheel now reaches into their buckets while
        these have room."""
        self.lo = lo
        self.cut = lo + self.width
        self.end = lo + self.nb * self.width
        cap = self.cap
        while self.osize:
            t, key = self.heap[2 * cap], self.heap[2 * cap + 1]
            if t < self.cut:
                self._push(0, self.size, t, key)
                self.size += 1
            elif t >= self.end or not self._bucket(t, key):
                break
            self._pop(cap, self.osize)
            self.osize -= 1

    def _pop_root(self) -> None:
        """Remove the current heap's first entry."""
        self._pop(0, self.size)
        self.size -= 1

    def _pop(self, base: int, n: int) -> None:
        """Remove the first entry of the heap of ``n`` entries from ``base``: the last one
        sifts down from the root."""
        size = n - 1
        if not size:
            return
        t, key = self.heap[2 * (base + size)], self.heap[2 * (base + size) + 1]
        i = 0
        while True:
            first = 4 * i + 1  # the children: first .. first + 3
            if first >= size:
                break
            child, tc = first, self.heap[2 * (base + first)]
            stop = min(first + 4, size)
            j = first + 1
            while j < stop:  # the earliest child
                tj = self.heap[2 * (base + j)]
                if tj < tc or (
                    tj == tc and self.heap[2 * (base + j) + 1] < self.heap[2 * (base + child) + 1]
                ):
                    child, tc = j, tj
                j += 1
            if t < tc or (t == tc and key < self.heap[2 * (base + child) + 1]):
                break
            self.heap[2 * (base + i)] = tc
            self.heap[2 * (base + i) + 1] = self.heap[2 * (base + child) + 1]
            i = child
        self.heap[2 * (base + i)] = t
        self.heap[2 * (base + i) + 1] = key


class SharedBuffer:
    """A switch's buffer shared by its ingress ports (PFC's dynamic thresholds).

    ``used`` counts the bytes its ingresses hold; an ingress pauses its upstream sender when it
    holds ``alpha x (size - used)`` (the free buffer scaled by ``alpha``: the more the switch
    holds, the sooner each ingress pauses), and a packet that would pass ``size`` is dropped.
    """

    __slots__ = ("size", "used", "alpha", "peak")

    def __init__(self, size: int, alpha: float) -> None:
        self.size, self.alpha = size, alpha
        self.used = self.peak = 0

    def threshold(self) -> int:
        """The XOFF threshold of each of its ingresses now, bytes."""
        return int(self.alpha * (self.size - self.used))


class Element:
    """What a packet is handed to: a route's hop, or the calendar's event (one contract).

    ``receive(pkt)`` takes a packet; ``wake()`` is an event without one (a port's next
    transmission).  The calendar calls these methods on the element itself, any other
    callable as ``fn(arg)``; calling an element is ``receive``.  # perf: compiled, a C call
    on the element instead of a Python call of a bound method (at 1,024 hosts the first touch
    of the method object, a cache miss, was 7 % of the loop)
    """

    __slots__ = ()

    def receive(self, pkt: Packet) -> None:
        raise NotImplementedError  # pragma: no cover - interface

    def wake(self) -> None:
        raise NotImplementedError  # pragma: no cover - interface

    def __call__(self, pkt: Packet) -> None:
        self.receive(pkt)


class Port(Element):
    """Output queue of one directed link: byte buffer, ECN at dequeue, trimming or drop-tail.

    Data packets wait in a FIFO of ``cap_bytes``; trimmed headers, ACKs and NACKs wait in a
    priority FIFO of ``hcap_bytes`` served first.  Each FIFO is a list linked through its
    packets (``head``/``tail``, ``hhead``/``htail``; :meth:`queued` lists them).  A data packet that finds the data queue full
    is trimmed to ``hdr_bytes`` and queued as a header (``trimming``) or dropped; with
    probability ``tail_victim`` the last packet queued is trimmed (or dropped) instead and the
    arriving one takes its place (htsim's coin flip).  ECN: RED-like
    marking of data packets as they leave, with probability rising linearly from 0 at
    ``kmin_bytes`` to 1 at ``kmax_bytes`` of data left queued.  A failed link drops everything
    (:meth:`fail`).  Serialization takes ``ceil(bytes x 8 / rate)`` ps; a packet reaches the
    next element ``delay_ps`` after its last bit left.

    **PFC** (:meth:`set_pfc`): data is lossless.  A port object also stands for its link's far
    end as an *ingress*: ``ing`` counts the data bytes that came over this link and wait in the
    next switch's output queues (added when a packet is queued there, taken off when it starts
    to leave).  At ``xoff`` bytes the far end sends this port an XOFF frame, at ``xon`` an XON;
    each takes the link's delay to arrive.  A paused port sends control packets only (their
    priority is not paused) and finishes the packet on the wire; an XOFF pauses for
    ``pause_len`` ps (65,535 quanta) unless refreshed (every half of that while the ingress
    stays above XON) or lifted by XON.  A packet that finds its ingress past ``xoff +
    hroom`` (the headroom) is dropped: a headroom too small for the link shows up as drops.
    With a :class:`SharedBuffer` (``pool``: dynamic thresholds) XOFF is the pool's threshold at
    the time, XON that less ``xon`` bytes, and the headroom counts from where the pause began.
    """

    # fmt: off

    __slots__ = (
        "sim", "link", "rate_bps", "delay_ps", "ppb", "head", "tail", "hhead", "htail", "qbytes",
        "hbytes", "busy_until", "pending", "cap", "hcap", "kmin", "kmax", "trimming", "failed",
        "hdr", "rand", "tx_bytes", "tx_pkts", "marks", "trims", "drops", "data_drops", "peak",
        "lbrec", "tail_victim", "pmax", "pfc", "ing", "xoff", "xon", "hroom",
        "xoff_sent", "paused", "pause_len", "pause_tok", "refresh_tok", "paused_since",
        "pfc_pauses", "pfc_paused_ps", "peak_ing", "pool", "pause_at",
    )

    # fmt: on

    def __init__(
        self,
        sim: Sim,
        link: int,
        rate_bps: float,
        delay_ps: int,
        cap_bytes: int,
        hcap_bytes: int,
        kmin_bytes: int,
        kmax_bytes: int,
        trimming: bool,
        failed: bool,
        hdr_bytes: int,
        rand: Callable[[], float],
        tail_victim: float = 0.0,
        ecn_max_prob: float = 1.0,
    ) -> None:
        self.sim = sim
        self.pmax = ecn_max_prob  # marking probability at kmax (RED P_max)
        self.tail_victim = tail_victim  # chance a full queue trims its last packet instead
        self.link, self.rate_bps, self.delay_ps = link, float(rate_bps), int(delay_ps)
        rate = max(int(rate_bps), 1)
        # perf: whole picoseconds per byte when the rate allows (100 Gbps: 80), else 0
        self.ppb = 8 * PS_PER_S // rate if (8 * PS_PER_S) % rate == 0 else 0
        self.head: Packet | None = None  # the data FIFO, linked through Packet.nxt / .bk
        self.tail: Packet | None = None
        self.hhead: Packet | None = None  # the priority FIFO (headers, ACKs, NACKs)
        self.htail: Packet | None = None
        self.qbytes = self.hbytes = 0
        self.busy_until = 0
        self.pending = False
        self.cap, self.hcap = cap_bytes, hcap_bytes
        self.kmin, self.kmax = kmin_bytes, max(kmax_bytes, kmin_bytes + 1)
        self.trimming, self.failed, self.hdr, self.rand = trimming, False, hdr_bytes, rand
        self.tx_bytes = self.tx_pkts = self.marks = self.trims = 0
        self.drops = self.data_drops = self.peak = 0
        self.lbrec: dict[int, list[int]] = {}  # dst host -> [packets, bytes] (receive_counted)
        self.pfc = self.xoff_sent = self.paused = False
        self.ing = self.xoff = self.xon = self.hroom = self.peak_ing = 0
        self.pause_len = self.pause_tok = self.refresh_tok = self.paused_since = 0
        self.pfc_pauses = self.pfc_paused_ps = 0
        self.pool: SharedBuffer | None = None  # PFC's dynamic thresholds (None: static)
        self.pause_at = 0  # bytes the ingress held when it paused (dynamic headroom)
        if failed:
            self.fail()

    def set_pfc(
        self, xoff: int, xon: int, headroom: int, pause_ps: int, pool: SharedBuffer | None = None
    ) -> None:
        """Make data lossless on this port and on its link's ingress (see the class notes).

        With ``pool`` (dynamic thresholds) ``xoff`` is unused and ``xon`` is the gap below the
        pool's threshold at which the ingress resumes its sender."""
        self.pfc = True
        self.xoff, self.xon, self.hroom, self.pause_len = xoff, min(xon, xoff), headroom, pause_ps
        self.pool = pool
        if pool is not None:
            self.xon = xon
        if not self.failed:
            self.cap = 1 << 62  # the ingress thresholds bound the queue, not the port
            self.trimming = False

    def wake(self) -> None:
        """The calendar's event of this port: the packet on the wire has left."""
        self.complete(None)

    def ser_ps(self, size: int) -> int:
        """Serialization time of ``size`` bytes, ps (ceiling)."""
        if self.ppb:
            return size * self.ppb
        return -(-(size * 8 * PS_PER_S) // max(int(self.rate_bps), 1))

    def fail(self) -> None:
        """The link fails now: queued packets are lost and every later arrival is dropped."""
        self.failed = True
        if self.pfc:  # what it held no longer occupies the ingress it came from
            for pkt in self.queued(False):
                self._pfc_release(pkt)
            self.pfc = False
        for pkt in self.queued(True) + self.queued(False):
            pkt.nxt = pkt.bk = None
            self.drop(pkt)
        self.head = self.tail = self.hhead = self.htail = None
        self.qbytes = self.hbytes = 0
        # perf: a failed port looks busy forever with no room, so receive() needs no check
        self.pending = True
        self.busy_until = 1 << 62
        self.cap = self.hcap = -1
        self.trimming = False

    def queued(self, priority: bool) -> list[Packet]:
        """The packets waiting in the priority FIFO (``priority``) or the data FIFO, in order."""
        out = []
        pkt = self.hhead if priority else self.head
        while pkt is not None:
            out.append(pkt)
            pkt = pkt.nxt
        return out

    def _push(self, pkt: Packet) -> None:
        """Append ``pkt`` to the data FIFO."""
        last = self.tail
        pkt.bk = last
        if last is None:
            self.head = pkt
        else:
            last.nxt = pkt
        self.tail = pkt

    def _hpush(self, pkt: Packet) -> None:
        """Append ``pkt`` to the priority FIFO."""
        # perf: _push on the other FIFO's ends, kept as fields of the port: a FIFO object
        # shared by both would add a pointer (and a likely cache miss) to every access
        last = self.htail
        pkt.bk = last
        if last is None:
            self.hhead = pkt
        else:
            last.nxt = pkt
        self.htail = pkt

    def drop(self, pkt: Packet) -> None:
        self.drops += 1
        if pkt.kind < ACK:
            self.data_drops += 1

    def receive_counted(self, pkt: Packet) -> None:
        """:meth:`receive`, counting the packet for ``switch_lb_stats`` first."""
        rec = self.lbrec.get(pkt.dst)
        if rec is None:
            rec = self.lbrec[pkt.dst] = [0, 0]
        rec[0] += 1
        rec[1] += pkt.size
        self.receive(pkt)

    def receive(self, pkt: Packet) -> None:
        now = self.sim.now
        if not self.pending and self.busy_until <= now and not self.paused:
            # perf: send() inlined -- the idle port starts the packet at once
            if self.pfc:
                pkt.prev = self
            size = pkt.size
            t = now + (size * self.ppb if self.ppb else self.ser_ps(size))
            self.busy_until = t
            self.tx_bytes += size
            self.tx_pkts += 1
            h = pkt.hop + 1
            pkt.hop = h
            self.sim.at(t + self.delay_ps, pkt.hops[h], pkt)
            return
        size = pkt.size
        if pkt.kind:
            if self.hbytes + size > self.hcap:
                self.drop(pkt)
                return
            self._hpush(pkt)
            self.hbytes += size
        elif self.pfc:
            if not self._pfc_admit(pkt):
                return
            q = self.qbytes + size
            self.qbytes = q
            self._push(pkt)
            if q > self.peak:
                self.peak = q
        elif self.qbytes + size > self.cap:
            if self.tail_victim and self.tail is not None and self.rand() < self.tail_victim:
                pkt = self._swap_tail(pkt)
            if not self.trimming or self.hbytes + self.hdr > self.hcap:
                self.drop(pkt)
                return
            pkt.last_hop = pkt.hop + 2 == len(pkt.hops)
            pkt.kind = HDR
            pkt.size = self.hdr
            self.trims += 1
            self._hpush(pkt)
            self.hbytes += self.hdr
        else:
            q = self.qbytes + size
            self.qbytes = q
            self._push(pkt)
            if q > self.peak:
                self.peak = q
        if not self.pending:
            self.pending = True
            self.sim.at(self.busy_until, self)

    def _swap_tail(self, pkt: Packet) -> Packet:
        """The arriving ``pkt`` takes the last queued packet's place if it fits there; the
        packet returned is the one to trim or drop."""
        victim = self.tail
        assert victim is not None
        if self.qbytes - victim.size + pkt.size > self.cap:
            return pkt
        before = victim.bk
        pkt.bk = before
        if before is None:
            self.head = pkt
        else:
            before.nxt = pkt
        self.tail = pkt
        victim.bk = None
        self.qbytes += pkt.size - victim.size
        return victim

    def send(self, pkt: Packet, now: int) -> None:
        """Start serializing ``pkt`` now; it reaches its next element a delay later."""
        if self.pfc:
            pkt.prev = self
        size = pkt.size
        t = now + (size * self.ppb if self.ppb else self.ser_ps(size))
        self.busy_until = t
        self.tx_bytes += size
        self.tx_pkts += 1
        h = pkt.hop + 1
        pkt.hop = h
        self.sim.at(t + self.delay_ps, pkt.hops[h], pkt)

    def complete(self, _: Any) -> None:
        """The packet on the wire has left: start the next one (priority queue first)."""
        if self.failed:
            return
        pkt = self.hhead
        if pkt is not None:
            nxt = pkt.nxt
            self.hhead = nxt
            if nxt is None:
                self.htail = None
            else:
                pkt.nxt = nxt.bk = None
            self.hbytes -= pkt.size
            q = self.qbytes
        elif self.paused:  # PFC: data waits for the XON (or the pause to expire)
            self.pending = False
            return
        else:
            pkt = self.head
            assert pkt is not None  # a completion is pending only while a packet waits
            nxt = pkt.nxt
            self.head = nxt
            if nxt is None:
                self.tail = None
            else:
                pkt.nxt = nxt.bk = None
            q = self.qbytes = self.qbytes - pkt.size
            # ECN at dequeue, RED-like on the data left queued
            if q > self.kmin and (
                q >= self.kmax
                or _draw(self.rand) * (self.kmax - self.kmin) < self.pmax * (q - self.kmin)
            ):
                if not pkt.ecn:
                    self.marks += 1
                pkt.ecn = True
            if self.pfc:
                self._pfc_release(pkt)
                pkt.prev = self
        # perf: send() inlined
        size = pkt.size
        t = self.sim.now + (size * self.ppb if self.ppb else self.ser_ps(size))
        self.busy_until = t
        self.tx_bytes += size
        self.tx_pkts += 1
        h = pkt.hop + 1
        pkt.hop = h
        self.sim.at(t + self.delay_ps, pkt.hops[h], pkt)
        if q or self.hhead is not None:
            self.sim.at(t, self)
        else:
            self.pending = False

    @property
    def queued_bytes(self) -> int:
        return self.qbytes + self.hbytes

    # -- PFC: ``self`` is the ingress link's own port (the sender a pause stops) ----------------
    def _pfc_admit(self, pkt: Packet) -> bool:
        """Account a data packet queued here on the ingress it came from (False: dropped)."""
        up = pkt.prev
        if up is None:
            return True
        ing = up.ing + pkt.size
        pool = up.pool
        if pool is None:
            if ing > up.xoff + up.hroom:  # the headroom did not cover the pause's trip
                self.drop(pkt)
                return False
            xoff = up.xoff
        else:
            used = pool.used + pkt.size
            if used > pool.size or (up.xoff_sent and ing > up.pause_at + up.hroom):
                self.drop(pkt)
                return False
            pool.used = used
            if used > pool.peak:
                pool.peak = used
            xoff = pool.threshold()
        up.ing = ing
        if ing > up.peak_ing:
            up.peak_ing = ing
        if ing >= xoff and not up.xoff_sent:
            up.pause_at = ing
            up._send_pause(True)
        return True

    def _pfc_release(self, pkt: Packet) -> None:
        """A data packet leaves this port's queue: its ingress holds it no more."""
        up = pkt.prev
        if up is None:
            return
        up.ing -= pkt.size
        pool = up.pool
        if pool is None:
            xon = up.xon
        else:
            pool.used -= pkt.size
            xon = pool.threshold() - up.xon
        if up.xoff_sent and up.ing <= xon:
            up._send_pause(False)

    def _send_pause(self, xoff: bool) -> None:
        """The far end of this port's link sends it XOFF (or XON): it arrives a delay later."""
        sim = self.sim
        self.xoff_sent = xoff
        self.refresh_tok += 1
        sim.at(sim.now + self.delay_ps, self.on_pause, self.pause_len if xoff else 0)
        if xoff:
            sim.at(sim.now + self.pause_len // 2, self._refresh, self.refresh_tok)

    def _refresh(self, tok: int) -> None:
        """Half a pause later and still over XON: the far end repeats the XOFF."""
        if tok != self.refresh_tok or not self.xoff_sent:
            return
        sim = self.sim
        sim.at(sim.now + self.delay_ps, self.on_pause, self.pause_len)
        sim.at(sim.now + self.pause_len // 2, self._refresh, tok)

    def on_pause(self, pause_ps: int) -> None:
        """A pause frame arrives: stop data for ``pause_ps`` (0: XON, resume now)."""
        now = self.sim.now
        if pause_ps:
            self.pfc_pauses += 1
            self.pause_tok += 1
            if not self.paused:
                self.paused = True
                self.paused_since = now
            self.sim.at(now + pause_ps, self._expire, self.pause_tok)
        elif self.paused:
            self._resume()

    def _expire(self, tok: int) -> None:
        if tok == self.pause_tok and self.paused:
            self._resume()

    def _resume(self) -> None:
        self.paused = False
        self.pfc_paused_ps += self.sim.now - self.paused_since
        self.restart()

    def restart(self) -> None:
        """Data may leave again: start the queue if it waits."""
        if (self.head is not None or self.hhead is not None) and not self.pending:
            self.pending = True
            self.sim.at(max(self.busy_until, self.sim.now), self)

    def paused_ps(self, now: int) -> int:
        """Total time this port has been paused by PFC up to ``now``, ps."""
        return self.pfc_paused_ps + (now - self.paused_since if self.paused else 0)


class HostPort(Port):
    """A host NIC's uplink: it pulls the next packet from its NIC whenever the wire is free.

    The NIC decides what to send (ACKs first, then its PDCs in round robin) at the moment the
    packet goes on the wire, so entropy values and windows see the latest feedback.
    """

    __slots__ = ("pull", "ctrlq", "activeq")

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.pull: Callable[[], Packet | None] = lambda: None
        # the NIC's queues: a completion event is needed only while either is non-empty
        self.ctrlq: deque[Packet] = deque()
        self.activeq: deque[Any] = deque()

    def fail(self) -> None:
        self.failed = True  # the NIC keeps sending; everything is lost on the wire

    def kick(self) -> None:
        """The NIC has something new to send."""
        if self.pending:
            return
        now = self.sim.now
        if self.busy_until <= now:
            pkt = self.pull()
            if pkt is None:
                return
            if self.failed:
                self._lost(pkt, now)
            else:
                self.send(pkt, now)
            if not (self.ctrlq or self.activeq):
                return
        self.pending = True
        self.sim.at(self.busy_until, self)

    def restart(self) -> None:
        self.kick()

    def _lost(self, pkt: Packet, now: int) -> None:
        self.busy_until = now + self.ser_ps(pkt.size)
        self.drop(pkt)

    def complete(self, _: Any) -> None:
        pkt = self.pull()
        if pkt is None:
            self.pending = False
            return
        if self.failed:
            self._lost(pkt, self.sim.now)
        else:
            self.send(pkt, self.sim.now)
        if self.ctrlq or self.activeq:
            self.sim.at(self.busy_until, self)
        else:
            self.pending = False


class DropSink:
    """End of a route that dead-ends (a withdrawn link left no way on): counts and drops."""

    __slots__ = ("drops", "data_drops")

    def __init__(self) -> None:
        self.drops = self.data_drops = 0

    def receive(self, pkt: Packet) -> None:
        self.drops += 1
        if pkt.kind < ACK:
            self.data_drops += 1
