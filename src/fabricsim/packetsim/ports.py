# cython: boundscheck=False, wraparound=False
"""Ports and buffers: the output queue of each directed link (:class:`Port`), a host NIC's
uplink (:class:`HostPort`) and the end of a dead route (:class:`DropSink`).

Sizes are bytes and rates bits per second.  A port has at most one pending event (its next
departure), and only while it has packets.  A lossless port holds a
:class:`~fabricsim.packetsim.pfc.Pfc` (``pfc``); a lossy port holds None and its path reads
no PFC state.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from fabricsim.engine_api import ACK, HDR
from fabricsim.packetsim.calendar import Sim
from fabricsim.packetsim.packets import Element, Packet
from fabricsim.packetsim.pfc import Pfc, SharedBuffer
from fabricsim.units import PS_PER_S

__all__ = ["DropSink", "HostPort", "InputArbiter", "Port"]


def _draw(rand: Callable[[], float]) -> float:
    """One draw of ``rand`` (compiled: a C double, so the arithmetic on it is C's)."""
    return rand()


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

    **PFC** (:meth:`set_pfc`): data is lossless.  The port then holds a
    :class:`~fabricsim.packetsim.pfc.Pfc` (``pfc``: thresholds, the count of its link's
    ingress at the far end, pause timers, counters); data it queues is accounted on the
    ingress it came over (``pkt.prev``) instead of being trimmed or dropped at ``cap_bytes``.
    A pause closes the port's data gate (``paused``): control packets still leave, and the
    packet on the wire finishes.  A lossy port holds None (and its gate stays open).  The
    PFC figures the records read (``pfc_pauses``, ``paused_ps``, ``peak_ing``, ``xoff``,
    ``hroom``, ``pause_len``) are read-only properties, 0 without PFC.

    **Input-port arbitration** (:meth:`set_arbitration`, a lossless switch port): the data
    queue is one FIFO per ingress its packets came over (``arb``, an :class:`InputArbiter`),
    served round robin a packet at a time, as the switches that deploy PFC schedule between
    their input ports; without it (``arb`` None) one FIFO in arrival order.
    """

    # fmt: off

    __slots__ = (
        "sim", "link", "rate_bps", "delay_ps", "ppb", "head", "tail", "hhead", "htail", "qbytes",
        "hbytes", "busy_until", "pending", "cap", "hcap", "kmin", "kmax", "trimming", "failed",
        "hdr", "rand", "tx_bytes", "tx_pkts", "marks", "trims", "drops", "data_drops", "peak",
        "lbrec", "tail_victim", "pmax", "paused", "pfc", "pfc_kept", "arb", "llr",
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
        self.paused = False  # the data gate: closed only by a PFC pause
        self.pfc: Pfc | None = None  # PFC, while the port is lossless (None: lossy or failed)
        # ... and after a failure took it off the hot path (its counters stay readable)
        self.pfc_kept: Pfc | None = None
        self.arb: InputArbiter | None = None  # round robin between ingresses (None: FIFO)
        self.llr: Any = None  # frame errors / Link Layer Retry of the link (packetsim/llr.py)
        if failed:
            self.fail()

    def set_pfc(
        self, xoff: int, xon: int, headroom: int, pause_ps: int, pool: SharedBuffer | None = None
    ) -> None:
        """Make data lossless on this port and on its link's ingress (see the class notes).

        With ``pool`` (dynamic thresholds) ``xoff`` is unused and ``xon`` is the gap below the
        pool's threshold at which the ingress resumes its sender."""
        pfc = self.pfc_kept
        if pfc is None:
            pfc = self.pfc_kept = Pfc(self, self.sim, self.delay_ps)
        pfc.configure(xoff, xon, headroom, pause_ps, pool)
        self.pfc = pfc
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
        if self.pfc is not None:  # what it held no longer occupies the ingress it came from
            for pkt in self.queued(False):
                if pkt.prev is not None:
                    pkt.prev.release(pkt.size)
            self.pfc = None
        for pkt in self.queued(True) + self.queued(False):
            pkt.nxt = pkt.bk = None
            self.drop(pkt)
        self.head = self.tail = self.hhead = self.htail = None
        self.qbytes = self.hbytes = 0
        if self.arb is not None:
            self.arb = InputArbiter()
        # perf: a failed port looks busy forever with no room, so receive() needs no check
        self.pending = True
        self.busy_until = 1 << 62
        self.cap = self.hcap = -1
        self.trimming = False

    def queued(self, priority: bool) -> list[Packet]:
        """The packets waiting in the priority FIFO (``priority``) or the data FIFO, in order."""
        if not priority and self.arb is not None:
            return self.arb.packets()
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
            if self.pfc is not None:
                pkt.prev = self.pfc
            size = pkt.size
            t = now + (size * self.ppb if self.ppb else self.ser_ps(size))
            self.busy_until = t
            self.tx_bytes += size
            self.tx_pkts += 1
            h = pkt.hop + 1
            pkt.hop = h
            if self.llr is None:
                self.sim.at(t + self.delay_ps, pkt.hops[h], pkt)
            else:  # frame errors / LLR: the link delivers it (and may hold the wire longer)
                self.busy_until = self.llr.carry(pkt, t)
            return
        size = pkt.size
        if pkt.kind:
            if self.hbytes + size > self.hcap:
                self.drop(pkt)
                return
            self._hpush(pkt)
            self.hbytes += size
        elif self.pfc is not None:
            up = pkt.prev
            if up is not None and not up.admit(size):  # past the ingress's headroom
                self.drop(pkt)
                return
            q = self.qbytes + size
            self.qbytes = q
            if self.arb is None:
                self._push(pkt)
            else:
                self.arb.push(pkt)
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
        if self.pfc is not None:
            pkt.prev = self.pfc
        size = pkt.size
        t = now + (size * self.ppb if self.ppb else self.ser_ps(size))
        self.busy_until = t
        self.tx_bytes += size
        self.tx_pkts += 1
        h = pkt.hop + 1
        pkt.hop = h
        if self.llr is None:
            self.sim.at(t + self.delay_ps, pkt.hops[h], pkt)
        else:
            self.busy_until = self.llr.carry(pkt, t)

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
            if self.arb is None:
                pkt = self.head
                assert pkt is not None  # a completion is pending only while a packet waits
                nxt = pkt.nxt
                self.head = nxt
                if nxt is None:
                    self.tail = None
                else:
                    pkt.nxt = nxt.bk = None
            else:
                pkt = self.arb.pop()
            q = self.qbytes = self.qbytes - pkt.size
            # ECN at dequeue, RED-like on the data left queued
            if q > self.kmin and (
                q >= self.kmax
                or _draw(self.rand) * (self.kmax - self.kmin) < self.pmax * (q - self.kmin)
            ):
                if not pkt.ecn:
                    self.marks += 1
                pkt.ecn = True
            if self.pfc is not None:  # (no local: a lossy port takes no reference)
                up = pkt.prev
                if up is not None:
                    up.release(pkt.size)
                pkt.prev = self.pfc
        # perf: send() inlined
        size = pkt.size
        t = self.sim.now + (size * self.ppb if self.ppb else self.ser_ps(size))
        self.busy_until = t
        self.tx_bytes += size
        self.tx_pkts += 1
        h = pkt.hop + 1
        pkt.hop = h
        if self.llr is None:
            self.sim.at(t + self.delay_ps, pkt.hops[h], pkt)
        else:
            t = self.busy_until = self.llr.carry(pkt, t)
        if q or self.hhead is not None:
            self.sim.at(t, self)
        else:
            self.pending = False

    @property
    def queued_bytes(self) -> int:
        return self.qbytes + self.hbytes

    def restart(self) -> None:
        """Data may leave again: start the queue if it waits."""
        waits = self.head is not None or self.hhead is not None
        if (waits or (self.arb is not None and self.qbytes)) and not self.pending:
            self.pending = True
            self.sim.at(max(self.busy_until, self.sim.now), self)

    # -- lossless switches: input-port arbitration and the PFC watchdog -----------------------
    def set_arbitration(self) -> None:
        """Serve the data queue round robin between the ingresses it came over (lossless)."""
        if self.head is None and self.arb is None:
            self.arb = InputArbiter()

    def bytes_from(self, ingress: Pfc) -> int:
        """The data bytes queued here that came over ``ingress`` (PFC's deadlock check)."""
        if self.arb is not None:
            pkt = self.arb.first_from(ingress)
            total = 0
            while pkt is not None:
                total += pkt.size
                pkt = pkt.nxt
            return total
        total = 0
        pkt = self.head
        while pkt is not None:
            if pkt.prev is ingress:
                total += pkt.size
            pkt = pkt.nxt
        return total

    def watchdog_drop(self) -> None:
        """The PFC watchdog fired (SONiC's ``drop`` action): the queued data is dropped (it
        leaves its ingresses), and so is every data packet arriving until
        :meth:`watchdog_restore`; control packets still leave."""
        for pkt in self.queued(False):
            if pkt.prev is not None:
                pkt.prev.release(pkt.size)
            pkt.nxt = pkt.bk = None
            self.drop(pkt)
        self.head = self.tail = None
        self.qbytes = 0
        if self.arb is not None:
            self.arb = InputArbiter()
        self.pfc = None  # data meets a full queue, not an ingress: dropped (no trimming)
        self.cap = -1
        self.paused = True  # (the gate stays shut: data goes to the drop, never onto the wire)

    def watchdog_restore(self) -> None:
        """The storm is over: the port is lossless again and honours pauses."""
        if self.failed:
            return
        self.pfc = self.pfc_kept
        self.cap = 1 << 62
        self.paused = False
        self.restart()

    # -- PFC's figures, read by the records (0 without PFC) ------------------------------------
    def paused_ps(self, now: int) -> int:
        """Total time this port has been paused by PFC up to ``now``, ps."""
        pfc = self.pfc_kept
        return 0 if pfc is None else pfc.paused_ps(now)

    @property
    def pfc_pauses(self) -> int:
        """XOFF frames this port received."""
        pfc = self.pfc_kept
        return 0 if pfc is None else pfc.pauses

    @property
    def pfc_paused_ps(self) -> int:
        """Time this port was paused, ps, up to its latest resume (:meth:`paused_ps`: to now)."""
        pfc = self.pfc_kept
        return 0 if pfc is None else pfc.paused_total_ps

    @property
    def peak_ing(self) -> int:
        """The most data bytes this link's ingress held at the far end."""
        pfc = self.pfc_kept
        return 0 if pfc is None else pfc.peak_ing

    @property
    def xoff(self) -> int:
        """PFC's XOFF threshold of this link's ingress, bytes."""
        pfc = self.pfc_kept
        return 0 if pfc is None else pfc.xoff

    @property
    def hroom(self) -> int:
        """PFC's headroom of this link's ingress, bytes."""
        pfc = self.pfc_kept
        return 0 if pfc is None else pfc.hroom

    @property
    def pause_len(self) -> int:
        """How long one XOFF frame pauses this port, ps."""
        pfc = self.pfc_kept
        return 0 if pfc is None else pfc.pause_len


class InputArbiter:
    """A lossless port's data queue as one FIFO per ingress, served round robin.

    ``lanes`` maps an ingress (the :class:`~fabricsim.packetsim.pfc.Pfc` a packet came over,
    ``pkt.prev``) to its FIFO, a two-item list ``[head, tail]`` linked through the packets;
    ``ring`` holds the FIFOs with packets in their turn order: :meth:`pop` takes the head of
    the first and puts that FIFO last if it still holds any.
    """

    __slots__ = ("lanes", "ring")

    def __init__(self) -> None:
        self.lanes: dict[Any, list[Any]] = {}
        self.ring: deque[list[Any]] = deque()

    def push(self, pkt: Packet) -> None:
        """Queue ``pkt`` at the tail of its ingress's FIFO."""
        lane = self.lanes.get(pkt.prev)
        if lane is None:
            lane = self.lanes[pkt.prev] = [None, None]
        last = lane[1]
        pkt.bk = last
        if last is None:
            lane[0] = pkt
            self.ring.append(lane)
        else:
            last.nxt = pkt
        lane[1] = pkt

    def pop(self) -> Packet:
        """The next packet to send (the queue holds one: a completion is pending)."""
        lane = self.ring.popleft()
        pkt = lane[0]
        nxt = pkt.nxt
        lane[0] = nxt
        if nxt is None:
            lane[1] = None
        else:
            pkt.nxt = nxt.bk = None
            self.ring.append(lane)
        return pkt

    def first_from(self, ingress: Any) -> Packet | None:
        """The first queued packet that came over ``ingress`` (None if none waits)."""
        lane = self.lanes.get(ingress)
        return None if lane is None else lane[0]

    def packets(self) -> list[Packet]:
        """Every queued packet, FIFO by FIFO in their turn order."""
        out = []
        for lane in self.ring:
            pkt = lane[0]
            while pkt is not None:
                out.append(pkt)
                pkt = pkt.nxt
        return out


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
