"""The packet engine's hot path: event loop, packets, output-queued ports.

Kept in one small module so it can later be compiled (Cython / mypyc).  Conventions:

* time is an integer number of picoseconds, sizes are bytes, rates bits per second;
* events are ``callback(arg)`` at an integer time; a heap of distinct times and one FIFO list
  of events per time (a calendar) gives exactly the order of a heap of ``(time, seq)``: ties
  break by insertion order.  With uniform link rates and packet sizes many events share a
  time (about five per distinct time in the fat-tree benchmark), so this does a fraction of
  the heap operations, on plain ints;
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

from collections import deque
from collections.abc import Callable
from heapq import heappop, heappush
from typing import Any

import numpy as np

from fabricsim.engine_api import ACK, DATA, HDR, NACK
from fabricsim.units import PS_PER_S

# fmt: off
__all__ = [
    "ACK", "DATA", "HDR", "NACK",  # the packet kinds (defined in fabricsim.engine_api)
    "DropSink", "HostPort", "Packet", "PacketPool", "Port", "RandomPool", "Route", "Sim",
]
# fmt: on


class Packet:
    """Header fields only (htsim style); objects are recycled through :class:`PacketPool`."""

    # fmt: off

    __slots__ = (
        "kind", "pdc", "src", "dst", "psn", "size", "payload", "entropy",
        "hops", "hop", "ecn", "ts", "cack", "sbase", "sack", "ar", "last_hop",
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


class Route:
    """One path: link ids, the callables a packet visits, and its label.

    ``hops`` ends with the destination NIC's data entry, ``ctrl_hops`` (same path) with its
    ACK/NACK entry, so the NIC needs no dispatch on the packet kind.  Under a live member
    choice ``hops`` may stop at a decider (then ``label`` is empty and ``links`` the hashed
    path that ``ctrl_hops`` follows).  ``ok`` is False for a route that dead-ends (its last
    hop drops the packet); ``tops`` are the indices of the top-tier switches on it (spine
    timeline).  Built by the route table (:mod:`fabricsim.packetsim.forwarding`).
    """

    __slots__ = ("links", "hops", "ctrl_hops", "label", "ok", "tops")

    def __init__(
        self,
        links: tuple[int, ...],
        hops: tuple[Callable, ...],
        ctrl_hops: tuple[Callable, ...],
        label: str,
        ok: bool,
        tops: tuple[int, ...] = (),
    ) -> None:
        self.links, self.hops, self.ctrl_hops = links, hops, ctrl_hops
        self.label, self.ok, self.tops = label, ok, tops


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

    __slots__ = ("gen", "buf", "block")

    def __init__(self, gen: np.random.Generator, block: int = 4096) -> None:
        self.gen = gen
        self.block = block
        self.buf: list[float] = []

    def random(self) -> float:
        buf = self.buf
        if not buf:
            buf = self.buf = self.gen.random(self.block).tolist()[::-1]
        return buf.pop()


class Sim:
    """Clock and event calendar shared by every element of one simulation (no global state).

    ``times`` is a heap of the distinct pending times; ``buckets[t]`` the flat list
    ``[callback, arg, callback, arg, ...]`` due at ``t`` in insertion order (no tuple per
    event).  Scheduling at the current time
    appends to the bucket being processed, so it runs in this pass, after what came before.
    """

    __slots__ = ("now", "times", "buckets", "events", "stopped")

    def __init__(self) -> None:
        self.now = 0
        self.times: list[int] = []
        self.buckets: dict[int, list[Any]] = {}
        self.events = 0
        self.stopped = False

    def at(self, t_ps: int, fn: Callable[[Any], None], arg: Any = None) -> None:
        """Call ``fn(arg)`` at time ``t_ps`` (never earlier than now)."""
        if t_ps < self.now:
            t_ps = self.now
        key = t_ps  # perf (compiled): one Python int for the lookup, the bucket and the heap
        bucket = self.buckets.get(key)
        if bucket is None:
            self.buckets[key] = [fn, arg]
            heappush(self.times, key)
        else:
            bucket.append(fn)
            bucket.append(arg)

    @property
    def pending(self) -> int:
        """Events scheduled and not yet processed."""
        return sum(len(b) for b in self.buckets.values()) // 2

    def run(self, limit_ps: int) -> int:
        """Process events in time order until none is left or the next is after ``limit_ps``.

        Returns the number of events processed; ``stopped`` tells whether the limit cut the run.
        """
        times, buckets = self.times, self.buckets
        limit = limit_ps  # perf (compiled): times stay Python ints, compared as such
        n = 0
        while times:
            t = times[0]
            if t > limit:
                self.stopped = True
                break
            self.now = t
            bucket = buckets[t]
            i = 0
            while i < len(bucket):  # events appended at time t during the pass run too
                bucket[i](bucket[i + 1])
                i += 2
            n += i >> 1
            del buckets[t]
            heappop(times)
        self.events += n
        return n


class Port:
    """Output queue of one directed link: byte buffer, ECN at dequeue, trimming or drop-tail.

    Data packets wait in a FIFO of ``cap_bytes``; trimmed headers, ACKs and NACKs wait in a
    priority FIFO of ``hcap_bytes`` served first.  A data packet that finds the data queue full
    is trimmed to ``hdr_bytes`` and queued as a header (``trimming``) or dropped; with
    probability ``tail_victim`` the last packet queued is trimmed (or dropped) instead and the
    arriving one takes its place (htsim's coin flip).  ECN: RED-like
    marking of data packets as they leave, with probability rising linearly from 0 at
    ``kmin_bytes`` to 1 at ``kmax_bytes`` of data left queued.  A failed link drops everything
    (:meth:`fail`).  Serialization takes ``ceil(bytes x 8 / rate)`` ps; a packet reaches the
    next element ``delay_ps`` after its last bit left.
    """

    # fmt: off

    __slots__ = (
        "sim", "times", "buckets", "link", "rate_bps", "delay_ps", "ppb", "q", "hq", "qbytes",
        "hbytes", "busy_until", "pending", "cap", "hcap", "kmin", "kmax", "trimming", "failed",
        "hdr", "rand", "tx_bytes", "tx_pkts", "marks", "trims", "drops", "data_drops", "peak",
        "_complete", "lbrec", "tail_victim",
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
    ) -> None:
        self.sim, self.times, self.buckets = sim, sim.times, sim.buckets
        self.tail_victim = tail_victim  # chance a full queue trims its last packet instead
        self.link, self.rate_bps, self.delay_ps = link, float(rate_bps), int(delay_ps)
        rate = max(int(rate_bps), 1)
        # perf: whole picoseconds per byte when the rate allows (100 Gbps: 80), else 0
        self.ppb = 8 * PS_PER_S // rate if (8 * PS_PER_S) % rate == 0 else 0
        self.q: deque[Packet] = deque()
        self.hq: deque[Packet] = deque()
        self.qbytes = self.hbytes = 0
        self.busy_until = 0
        self.pending = False
        self.cap, self.hcap = cap_bytes, hcap_bytes
        self.kmin, self.kmax = kmin_bytes, max(kmax_bytes, kmin_bytes + 1)
        self.trimming, self.failed, self.hdr, self.rand = trimming, False, hdr_bytes, rand
        self.tx_bytes = self.tx_pkts = self.marks = self.trims = 0
        self.drops = self.data_drops = self.peak = 0
        self._complete = self.complete
        self.lbrec: dict[int, list[int]] = {}  # dst host -> [packets, bytes] (receive_counted)
        if failed:
            self.fail()

    def ser_ps(self, size: int) -> int:
        """Serialization time of ``size`` bytes, ps (ceiling)."""
        if self.ppb:
            return size * self.ppb
        return -(-(size * 8 * PS_PER_S) // max(int(self.rate_bps), 1))

    def fail(self) -> None:
        """The link fails now: queued packets are lost and every later arrival is dropped."""
        self.failed = True
        for q in (self.q, self.hq):
            while q:
                self.drop(q.popleft())
        self.qbytes = self.hbytes = 0
        # perf: a failed port looks busy forever with no room, so receive() needs no check
        self.pending = True
        self.busy_until = 1 << 62
        self.cap = self.hcap = -1
        self.trimming = False

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
        if not self.pending and self.busy_until <= now:
            # perf: send() inlined -- the idle port starts the packet at once
            size = pkt.size
            t = now + (size * self.ppb if self.ppb else self.ser_ps(size))
            self.busy_until = t
            self.tx_bytes += size
            self.tx_pkts += 1
            h = pkt.hop + 1
            pkt.hop = h
            # perf: Sim.at inlined
            at = t + self.delay_ps
            nxt = pkt.hops[h]
            bucket = self.buckets.get(at)
            if bucket is None:
                self.buckets[at] = [nxt, pkt]
                heappush(self.times, at)
            else:
                bucket.append(nxt)
                bucket.append(pkt)
            return
        size = pkt.size
        if pkt.kind:
            if self.hbytes + size > self.hcap:
                self.drop(pkt)
                return
            self.hq.append(pkt)
            self.hbytes += size
        elif self.qbytes + size > self.cap:
            if self.tail_victim and self.q and self.rand() < self.tail_victim:
                pkt = self._swap_tail(pkt)
            if not self.trimming or self.hbytes + self.hdr > self.hcap:
                self.drop(pkt)
                return
            pkt.last_hop = pkt.hop + 2 == len(pkt.hops)
            pkt.kind = HDR
            pkt.size = self.hdr
            self.trims += 1
            self.hq.append(pkt)
            self.hbytes += self.hdr
        else:
            q = self.qbytes + size
            self.qbytes = q
            self.q.append(pkt)
            if q > self.peak:
                self.peak = q
        if not self.pending:
            self.pending = True
            # perf: Sim.at inlined
            at = self.busy_until
            bucket = self.buckets.get(at)
            if bucket is None:
                self.buckets[at] = [self._complete, None]
                heappush(self.times, at)
            else:
                bucket.append(self._complete)
                bucket.append(None)

    def _swap_tail(self, pkt: Packet) -> Packet:
        """The arriving ``pkt`` takes the last queued packet's place if it fits there; the
        packet returned is the one to trim or drop."""
        victim = self.q[-1]
        if self.qbytes - victim.size + pkt.size > self.cap:
            return pkt
        self.q[-1] = pkt
        self.qbytes += pkt.size - victim.size
        return victim

    def send(self, pkt: Packet, now: int) -> None:
        """Start serializing ``pkt`` now; it reaches its next element a delay later."""
        size = pkt.size
        t = now + (size * self.ppb if self.ppb else self.ser_ps(size))
        self.busy_until = t
        self.tx_bytes += size
        self.tx_pkts += 1
        h = pkt.hop + 1
        pkt.hop = h
        # perf: Sim.at inlined
        at = t + self.delay_ps
        nxt = pkt.hops[h]
        bucket = self.buckets.get(at)
        if bucket is None:
            self.buckets[at] = [nxt, pkt]
            heappush(self.times, at)
        else:
            bucket.append(nxt)
            bucket.append(pkt)

    def complete(self, _: Any) -> None:
        """The packet on the wire has left: start the next one (priority queue first)."""
        if self.failed:
            return
        if self.hq:
            pkt = self.hq.popleft()
            self.hbytes -= pkt.size
            q = self.qbytes
        else:
            pkt = self.q.popleft()
            q = self.qbytes = self.qbytes - pkt.size
            # ECN at dequeue, RED-like on the data left queued
            if q > self.kmin and (
                q >= self.kmax or self.rand() * (self.kmax - self.kmin) < q - self.kmin
            ):
                if not pkt.ecn:
                    self.marks += 1
                pkt.ecn = True
        # perf: send() inlined
        size = pkt.size
        t = self.sim.now + (size * self.ppb if self.ppb else self.ser_ps(size))
        self.busy_until = t
        self.tx_bytes += size
        self.tx_pkts += 1
        h = pkt.hop + 1
        pkt.hop = h
        # perf: Sim.at inlined
        at = t + self.delay_ps
        nxt = pkt.hops[h]
        bucket = self.buckets.get(at)
        if bucket is None:
            self.buckets[at] = [nxt, pkt]
            heappush(self.times, at)
        else:
            bucket.append(nxt)
            bucket.append(pkt)
        if q or self.hq:
            # perf: Sim.at inlined
            key = t  # one Python int (compiled: t is a C integer)
            bucket = self.buckets.get(key)
            if bucket is None:
                self.buckets[key] = [self._complete, None]
                heappush(self.times, key)
            else:
                bucket.append(self._complete)
                bucket.append(None)
        else:
            self.pending = False

    @property
    def queued_bytes(self) -> int:
        return self.qbytes + self.hbytes


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
        self.sim.at(self.busy_until, self._complete)

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
            # perf: Sim.at inlined
            at = self.busy_until
            bucket = self.buckets.get(at)
            if bucket is None:
                self.buckets[at] = [self._complete, None]
                heappush(self.times, at)
            else:
                bucket.append(self._complete)
                bucket.append(None)
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
