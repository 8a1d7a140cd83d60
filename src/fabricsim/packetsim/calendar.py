# cython: boundscheck=False, wraparound=False
"""The packet engine's clock: the event calendar (:class:`Sim`) and the block random draws
(:class:`RandomPool`) its elements' choices come from.

Time is an integer number of picoseconds.  Events are ``callback(arg)`` at an integer time,
ordered by (time, insertion number): ties break by insertion order.  Their keys live in
``array('q')`` tables, so the compiled build sifts on C integers.  An element (a port) has
at most one pending event, its next departure, and only while it has packets.

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
from collections.abc import Callable
from typing import Any

import numpy as np

from fabricsim.packetsim.packets import Element

try:
    import cython

    COMPILED = cython.compiled
except ImportError:  # pure Python without Cython installed
    COMPILED = False

__all__ = ["RandomPool", "Sim", "wheel_width_bits"]


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
        if COMPILED:  # perf: the slot's items set in place (see put in calendar.pxd)
            put(self.objs, 2 * slot, fn)  # type: ignore[name-defined]  # noqa: F821
            put(self.objs, 2 * slot + 1, arg)  # type: ignore[name-defined]  # noqa: F821
        else:
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
            if COMPILED:  # perf: the slot's items taken, None left (see take in calendar.pxd)
                fn = take(self.objs, 2 * slot)  # type: ignore[name-defined]  # noqa: F821
                arg = take(self.objs, 2 * slot + 1)  # type: ignore[name-defined]  # noqa: F821
            else:
                fn = self.objs[2 * slot]
                arg = self.objs[2 * slot + 1]
                self.objs[2 * slot] = None
                self.objs[2 * slot + 1] = None
            self.free[self.nfree] = slot
            self.nfree += 1
            self._pop_root()
            if COMPILED and self.size:  # perf: the CPU loads the next event's objects
                slot = self.heap[1] & mask  # while this one runs (see prefetch in calendar.pxd)
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
