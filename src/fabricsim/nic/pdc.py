"""Packet Delivery Contexts: the sender's reliability state of one connection, and its receiver.

A :class:`Pdc` sends one connection's bytes (a message, or one share of it) as PSNs
``0 .. npkts-1`` of ``RdmaDataMSS`` payload bytes plus a header.  Per PSN it keeps a state
(unsent, outstanding, lost awaiting retransmission, acknowledged), the send time of its latest
transmission (which identifies it), and its timeout count.

* Window: ``inflight`` wire bytes of outstanding packets may not exceed the congestion
  controller's ``cwnd_bytes`` (one packet always fits in an empty window; a paced PDC's
  window has a floor, below).
* ACKs are selective: a cumulative PSN plus a 64-bit bitmap from a base PSN; every newly
  acknowledged PSN is counted once.  A NACK (trimmed packet) of the latest transmission of an
  outstanding PSN, or a retransmission timeout (``rto << timeouts``: exponential backoff),
  marks it lost; a PSN that times out more than ``nic.max_retries`` times fails the connection.
* REPS's early failure detection: a transmission unacknowledged ``FailureDetectionRTTMultiplier``
  x base RTT after it is one path failure for its entropy (nothing is resent).
* Timers: one pending event per PDC for each of the RTO and failure-detection deadlines; the
  deadlines sit in send-ordered queues (one per timeout level) checked when the timer fires.
* Pacing (``Connection.rate_cap_bps``, or the controller's ``pacing_bps``): a token bucket on
  wire bytes (headers and retransmissions included).  Packet ``k`` is due at
  ``phase + (wire bytes before it) x 8 / rate``, kept as an exact fractional schedule, not
  restarted at each send: a packet that leaves late (the NIC was busy with another PDC's
  packet) does not delay the ones after it, as long as the lag stays within the bucket's
  depth (``PACE_SLACK_PACKETS`` packet intervals); beyond that the schedule restarts (a PDC
  that was stalled by its window does not burst).  ``phase`` is a fixed fraction of the last
  packet's interval, spread over connections by the golden-ratio sequence (no randomness), so
  that paced connections starting together do not all send their first packet at once; every
  packet still leaves by ``start + wire bytes x 8 / rate``.
* Paced window floor: a paced PDC's window is at least ``rate x PACED_WINDOW_BASE_RTTS x
  base RTT`` (its paced rate sustained through a queueing delay of one base RTT), so a
  congestion controller reacting to ECN and delay (NSCC) does not throttle a flow below a
  rate that a scheduler already made feasible; severe congestion (longer delays) still
  limits it, and its pacing keeps its load at or below its rate in any case.

:class:`RxState` is the receiver's side: received PSNs as a cumulative point plus a bitmap of
what arrived beyond it (no reorder buffer: payload is written as it arrives).
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fabricsim.config.models import NicConfig
from fabricsim.engine_api import DATA, route_key
from fabricsim.lb.spraying import spraying_type
from fabricsim.units import transmit_ps, transmitted_bytes

if TYPE_CHECKING:
    from fabricsim.cc.base import CongestionControl
    from fabricsim.lb.spraying import SprayingStrategy
    from fabricsim.nic.nic import Nic, PdcGroup
    from fabricsim.packetsim.calendar import Sim
    from fabricsim.packetsim.forwarding import RouteTable
    from fabricsim.packetsim.packets import Packet, PacketPool, Route

UNSENT, OUT, LOST, ACKED = 0, 1, 2, 3
PACE_SLACK_PACKETS = 2
"""Depth of the pacing token bucket, in packet intervals at the paced rate: how far a paced
PDC may fall behind its schedule (NIC contention) and still catch up."""
PACED_WINDOW_BASE_RTTS = 2.0
"""A paced PDC may keep its paced rate's bytes of this many base RTTs in flight whatever its
congestion controller's window: the controller slows it below its rate only once queueing
delay passes ``(PACED_WINDOW_BASE_RTTS - 1)`` base RTTs (0 = off: the window always rules)."""
NEVER_PS = 1 << 62
"""A timer this far out never fires (beyond any run's limit): backed-off RTOs are capped here."""
_GOLDEN = 0.6180339887498949  # phases of successive connections: frac(i x golden ratio)


def doubled(ints: Any, start: int) -> array:
    """An int64 table twice as long as ``ints``, its values from index ``start`` on first
    (then those before it) and zeros after.  # perf: copied as bytes (an int at a time, the
    growth of 2,048 PDCs' rings was 2 % of a 1,024-host run)"""
    raw = bytes(ints)
    out = array("q")
    out.frombytes(raw[8 * start :] + raw[: 8 * start] + bytes(len(raw)))
    return out


class TxQueue:
    """Transmissions in the order they were sent, each (deadline, psn, send time, entropy):
    one ring of integers that doubles when full (perf: no tuple or int objects per packet).

    ``n`` entries from ``head``; :meth:`first` reads field ``k`` of the oldest.

    Examples
    --------
    >>> q = TxQueue()
    >>> for psn in range(20):
    ...     q.push(100 + psn, psn, 7, 3)
    >>> q.pop(); q.n, q.first(0), q.first(1)
    (19, 101, 1)
    """

    __slots__ = ("buf", "head", "n", "mask")

    def __init__(self) -> None:
        self.buf = array("q", bytes(8 * 4 * 16))
        self.head = 0
        self.n = 0
        self.mask = 15

    def push(self, deadline: int, psn: int, t0: int, entropy: int) -> None:
        if self.n > self.mask:
            self._grow()
        i = 4 * ((self.head + self.n) & self.mask)
        # perf: self.buf indexed in place: compiled, a local view would be acquired (an
        # atomic count) on every call
        self.buf[i] = deadline
        self.buf[i + 1] = psn
        self.buf[i + 2] = t0
        self.buf[i + 3] = entropy
        self.n += 1

    def first(self, k: int) -> int:
        return self.buf[4 * self.head + k]

    def pop(self) -> None:
        self.head = (self.head + 1) & self.mask
        self.n -= 1

    def clear(self) -> None:
        self.head = self.n = 0

    def _grow(self) -> None:
        """Double the ring, its entries from ``head`` first."""
        self.buf = doubled(self.buf, 4 * self.head)
        self.head, self.mask = 0, 2 * self.mask + 1


class MonitorLog:
    """The ``uet_monitor`` record's rows in columns: per data packet sent, its integers in one
    int64 ring of ``INTS`` per row (send time ps, retransmission, flow, PSN, entropy value,
    explored, REPS's cached values before the choice: -1 for none), and the references it
    shares in lists (REPS's reason and state strings, the route: labelled at output).

    perf: one row was a 10-tuple and its ints (about 250 bytes); here 80.

    Examples
    --------
    >>> log = MonitorLog()
    >>> for psn in range(300):
    ...     log.add(10 * psn, False, 3, psn, 7, True, "cache_empty", None, "normal", -1)
    >>> log.n, list(log.ints[7 * 299 : 7 * 300])
    (300, [2990, 0, 3, 299, 7, 1, -1])
    """

    __slots__ = ("ints", "n", "reasons", "states", "routes")

    INTS = 7  # (add and the doctest write the literal: compiled, C arithmetic)

    def __init__(self) -> None:
        self.ints = array("q", bytes(8 * 7 * 256))
        self.n = 0
        self.reasons: list[str | None] = []
        self.states: list[str | None] = []
        self.routes: list[Any] = []

    def add(
        self,
        time_ps: int,
        retx: bool,
        flow: int,
        psn: int,
        entropy: int,
        explored: bool,
        reason: str | None,
        route: Any,
        state: str | None,
        cached: int,
    ) -> None:
        i = 7 * self.n
        if i + 7 > len(self.ints):
            self._grow()
        self.ints[i] = time_ps
        self.ints[i + 1] = 1 if retx else 0
        self.ints[i + 2] = flow
        self.ints[i + 3] = psn
        self.ints[i + 4] = entropy
        self.ints[i + 5] = 1 if explored else 0
        self.ints[i + 6] = cached
        self.reasons.append(reason)
        self.routes.append(route)
        self.states.append(state)
        self.n += 1

    def _grow(self) -> None:
        self.ints = doubled(self.ints, 0)


class NicEnv:
    """What every NIC and PDC of one simulation shares (no global state): the simulation,
    routes, packet pool and NIC keys, the engine's callbacks, and settings derived once from
    the keys (``mss``, ``hdr``, ACK coalescing, REPS's failure-detection multiplier, ...)."""

    # fmt: off

    __slots__ = (
        "sim", "routes", "rcache", "pool", "cfg", "rto_ps", "window_packets", "freezing_ps",
        "on_rx_done", "on_tx_failed", "rand_of", "monitor", "spine", "mss", "hdr",
        "max_retries", "fd_mult", "coalesce", "ack_by_bytes", "ack_request", "rto_backoff",
        "ctrl_per_data", "recycle_last_hop", "nak_ps", "cnp_ps", "base_rtt_ps", "counters",
        "window_cap_bdp", "csig_cc", "csig_reps_ps",
    )

    # fmt: on

    def __init__(
        self,
        sim: Sim,
        routes: RouteTable,
        pool: PacketPool,
        cfg: NicConfig,
        rto_ps: int,
        window_packets: Callable[[int], int],  # host -> REPS exploration window, packets
        freezing_ps: int,
        on_rx_done: Callable[[Pdc], None],
        on_tx_failed: Callable[[Pdc], None],
        rand_of: Callable[[int], Callable[[], float]],  # host -> uniform draws
        monitor: MonitorLog | None = None,
        spine: Any = None,  # spine-flow recorder with touch(tops, flow), or None
        base_rtt_ps: int = 0,  # the path's base RTT (PLB's round, ROD's hold)
    ) -> None:
        self.base_rtt_ps = base_rtt_ps
        self.sim, self.routes, self.pool, self.cfg = sim, routes, pool, cfg
        self.rcache = routes.cache  # perf: the route cache itself (cleared in place only)
        self.window_packets, self.freezing_ps = window_packets, freezing_ps
        self.rto_ps = min(rto_ps, NEVER_PS)  # (a timer past NEVER_PS never fires anyway)
        self.on_rx_done, self.on_tx_failed, self.rand_of = on_rx_done, on_tx_failed, rand_of
        self.monitor, self.spine = monitor, spine
        c = cfg
        self.mss, self.hdr, self.max_retries = c.rdma_data_mss, c.header_bytes, c.max_retries
        self.rto_backoff = c.rto_backoff
        self.ack_by_bytes = c.ack_bytes is not None
        self.coalesce = c.ack_bytes if c.ack_bytes is not None else c.ack_coalesce
        # perf: without coalescing every packet is answered anyway: no flag to set or read
        self.ack_request = c.ack_request and (self.ack_by_bytes or self.coalesce > 1)
        detects = spraying_type(c.packet_spraying_type).early_failure_detection
        self.fd_mult = c.failure_detection_rtt_multiplier if detects else 0.0
        self.ctrl_per_data = c.control_per_data or 1 << 62  # null: control strictly first
        self.recycle_last_hop = c.reps_recycle_last_hop_nack
        # the transport's settings (:meth:`fabricsim.transport.base.Transport.configure`)
        self.nak_ps = self.cnp_ps = 0  # a NAK's repeat interval; CNPs' (0: none sent)
        self.counters: tuple[str, ...] = ()  # the NIC counters the transport adds to its stats
        self.window_cap_bdp = 0.0  # a cap on a PDC's bytes in flight, in BDPs (0: none)
        # CSIG (packetsim/csig.py): NSCC's queueing delay is the path's worst hop's; REPS
        # takes a path whose worst hop queues this long for a congested one (else never)
        self.csig_cc = c.nscc.use_csig and c.cc == "nscc"
        self.csig_reps_ps = max(base_rtt_ps // 5, 1) if c.reps.use_csig else NEVER_PS


class RxState:
    """Receiver side of a PDC: ``cum`` = first PSN not received; bit j of ``win`` = PSN cum+j."""

    __slots__ = (
        "cum", "win", "count", "bytes", "done_ps", "unacked", "group", "dups", "hole_ar",
        "nak_psn", "nak_at", "cnp_at",
    )  # fmt: skip

    def __init__(self) -> None:
        self.cum = self.win = self.count = self.bytes = self.unacked = self.dups = 0
        self.nak_psn = -1  # RoCE: the expected PSN last NAKed, and when it may be NAKed again
        self.nak_at = self.cnp_at = 0  # ... and when the next CNP may go (DCQCN's NP)
        self.hole_ar = False  # a flagged packet arrived with a hole below: ACK when it fills
        self.done_ps = -1
        self.group: PdcGroup | None = None


class Pdc:
    """Sender state of one connection (see the module docstring)."""

    # fmt: off

    __slots__ = (
        "flow", "index", "src", "dst", "src_port", "size", "npkts", "mss", "wire_full",
        "wire_last", "last_payload", "next_psn", "st", "sent_ts", "tmo", "una", "ack_w",
        "acked_pkts", "acked_bytes", "inflight", "retx", "group", "spray", "cc", "nic", "env",
        "in_active", "closed", "failed", "rx", "rto_q", "rto_at", "rto_tok", "fd_q", "fd_at",
        "rate_cap_bps", "next_send_ps", "wake_pending", "first_entropy", "routes_used", "sent",
        "last_route", "last_run",
        "retransmitted", "paced", "rkey", "rkey_back", "floor_bytes", "acked_ps", "feedback",
        "qp_bits",
    )

    # fmt: on

    def __init__(
        self,
        env: NicEnv,
        nic: Nic,
        flow: int,
        index: int,
        dst: int,
        size: int,
        src_port: int,
        cc: CongestionControl,
        rate_cap_bps: float = float("inf"),
    ) -> None:
        mss, hdr = env.mss, env.hdr
        self.env, self.nic, self.flow, self.index = env, nic, flow, index
        self.src, self.dst, self.src_port, self.size = nic.host, dst, src_port, size
        self.npkts = max(1, -(-size // mss))
        self.mss = mss
        self.last_payload = size - (self.npkts - 1) * mss
        self.wire_full, self.wire_last = mss + hdr, self.last_payload + hdr
        self.next_psn = 0
        self.st = bytearray(self.npkts)
        self.sent_ts = array("q", bytes(8 * self.npkts))  # perf: 8 bytes a PSN, not a list of ints
        self.tmo = bytearray(self.npkts)
        self.una = self.ack_w = 0
        self.acked_pkts = self.acked_bytes = self.inflight = 0
        self.retx: deque[int] = deque()
        self.group: PdcGroup | None = None
        self.spray: SprayingStrategy | Any = None
        self.feedback = False  # the spraying type's ``feedback`` (set with ``spray``)
        self.cc = cc
        self.in_active = self.closed = self.failed = self.wake_pending = False
        self.acked_ps = -1  # when the sender saw every packet acknowledged
        self.rx = RxState()
        self.rto_q: list[TxQueue] = [TxQueue()]  # one per RTO back-off level
        self.rto_at = -1
        self.rto_tok = 0
        self.fd_q = TxQueue()
        self.fd_at = -1
        self.rate_cap_bps = rate_cap_bps
        self.paced = rate_cap_bps != float("inf")
        self.next_send_ps = 0.0  # pacing: when the next packet is due (fractional ps)
        self.floor_bytes = 0.0  # paced: window kept for the paced rate whatever the controller
        if self.paced and PACED_WINDOW_BASE_RTTS:
            self.floor_bytes = transmitted_bytes(
                rate_cap_bps * PACED_WINDOW_BASE_RTTS, cc.base_rtt_ps
            )
        if self.paced:
            self.next_send_ps = env.sim.now + pace_phase_ps(
                flow * 64 + index, self.wire_last, rate_cap_bps
            )
        self.rkey = route_key(self.src, dst)  # | entropy: the route cache key
        self.rkey_back = route_key(dst, self.src)  # ... of its ACKs
        self.qp_bits = src_port & ~0xFFFF  # lb.qp_field dst_qp: the QP, on every entropy
        self.first_entropy = -1  # entropy of its first data packet (-1: none sent yet)
        # the routes its data took, in first-use order (their labels: path_labels), with the
        # packets sent on each before the current run (route_packets adds the run)
        self.routes_used: dict[Route, int] = {}
        self.last_route: Route | None = None  # the route of the current run of packets
        self.last_run = 0  # packets sent in that run
        self.sent = self.retransmitted = 0

    def path_labels(self) -> dict[str, None]:
        """The labels of the paths its data took, in first-use order (empty: a live member
        choice's route before its switches chose)."""
        return dict.fromkeys([route.label for route in self.routes_used])

    def route_packets(self) -> dict[Route, int]:
        """Data packets (retransmissions included) sent on each route, in first-use order.

        A live member choice's packets count twice: on the route the NIC hashed (label
        empty) and, when the switches have chosen, on the route they took (forwarding).
        """
        counts = dict(self.routes_used)
        if self.last_route is not None:
            counts[self.last_route] += self.last_run
        return counts

    def _new_run(self, route: Route) -> None:
        """Start a run of packets on ``route``: the previous run is added to its route."""
        used = self.routes_used
        last = self.last_route
        if last is not None:
            used[last] += self.last_run
        if route not in used:
            used[route] = 0
        self.last_route, self.last_run = route, 0

    # -- sending ---------------------------------------------------------------------------
    def sendable(self) -> bool:
        """Whether it has anything to send (ignoring window and pacing)."""
        return not self.closed and (bool(self.retx) or self.next_psn < self.npkts)

    def next_packet(self) -> Packet | None:
        """The next data packet if the window and pacing allow, else None."""
        if self.closed:
            return None
        rq = self.retx
        if rq:
            st = self.st
            while rq and st[rq[0]] != LOST:
                rq.popleft()
        if rq:
            psn = rq[0]
        else:
            psn = self.next_psn
            if psn >= self.npkts:
                return None
        size = self.wire_last if psn == self.npkts - 1 else self.wire_full
        cc = self.cc
        if self.inflight and self.inflight + size > max(cc.cwnd_bytes, self.floor_bytes):
            return None
        if (self.paced or cc.pacing_bps is not None) and not self._pace(size):
            return None
        retx = bool(rq)
        if retx:
            rq.popleft()
            self.retransmitted += 1
            self.nic.retransmissions += 1
        else:
            self.next_psn = psn + 1
        pkt = self._emit(psn, size, retx)
        if self.env.ack_request:
            pkt.ar = (
                retx
                or psn == self.npkts - 1
                or self.inflight + self.wire_full > max(cc.cwnd_bytes, self.floor_bytes)
            )
        return pkt

    def _emit(self, psn: int, size: int, retx: bool) -> Packet:
        """Build and account the data packet of ``psn`` on a fresh entropy."""
        env = self.env
        now = env.sim.now
        spray = self.spray
        if env.monitor is not None:
            state, cached = getattr(spray, "state", None), getattr(spray, "count", None)
        entropy = (spray.next_entropy() & 0xFFFF) | self.qp_bits
        route = env.rcache.get(self.rkey | entropy)
        if route is None:
            route = env.routes.get(self.src, self.dst, entropy)
        pkt = env.pool.get()
        pkt.kind = DATA
        pkt.pdc = self
        pkt.dst = self.dst
        pkt.psn = psn
        pkt.size = size
        pkt.payload = size - env.hdr
        pkt.entropy = entropy
        pkt.hops = route.hops
        pkt.hop = 0
        pkt.ts = now
        self.st[psn] = OUT
        self.sent_ts[psn] = now
        self.inflight += size
        self._track(psn, now, entropy)
        self.sent += 1
        if self.first_entropy < 0:
            self.first_entropy = entropy
        if route is not self.last_route:  # perf: a run on one route costs one C increment
            self._new_run(route)
        self.last_run += 1
        if env.monitor is not None:
            env.monitor.add(
                now,
                retx,
                self.flow,
                psn,
                entropy & 0xFFFF,
                getattr(spray, "explored", False),
                getattr(spray, "reason", None),
                route,
                state,
                -1 if cached is None else cached,
            )
        if env.spine is not None:
            env.spine.touch(route.tops, self.flow)
        return pkt

    def _track(self, psn: int, now: int, entropy: int) -> None:
        """Queue the transmission's RTO and early-failure deadlines; arm the timers."""
        env = self.env
        level = self.tmo[psn] if env.rto_backoff else 0
        if level:
            deadline = now + backed_off(env.rto_ps, level)
            while level >= len(self.rto_q):
                self.rto_q.append(TxQueue())
        else:  # perf: C integers compiled (a first transmission)
            deadline = now + env.rto_ps
        q = self.rto_q[level]
        q.push(deadline, psn, now, entropy)
        if self.rto_at < 0 or deadline < self.rto_at:
            self._arm_rto(deadline)
        if env.fd_mult:
            fd = now + int(env.fd_mult * self.cc.base_rtt_ps)
            self.fd_q.push(fd, psn, now, entropy)
            if self.fd_at < 0:
                self.fd_at = fd
                env.sim.at(fd, self._on_fd)

    def _pace(self, size: int) -> bool:
        """Whether a ``size``-byte packet may leave now; if not, wake up when it is due."""
        now = self.env.sim.now
        due = self.next_send_ps
        if now < due:
            if not self.wake_pending:
                self.wake_pending = True
                self.env.sim.at(-int(-due // 1), self._wake)  # ceil: never early
            return False
        rate = self.rate_cap_bps
        if self.cc.pacing_bps is not None:
            self.cc.on_send(now, size)  # a rate-based controller catches up on its timers
            rate = min(rate, self.cc.pacing_bps)
        rate = max(rate, 1.0)
        late = now - due
        if late > 0:
            slack = transmit_ps(PACE_SLACK_PACKETS * self.wire_full, rate)
            if late > slack:  # too far behind (stalled): restart the schedule, no burst
                due = now - slack
        self.next_send_ps = due + transmit_ps(size, rate)
        return True

    def sleep(self) -> None:
        """Leave the NIC's round until the next packet is due (a paced PDC that just sent)."""
        if not self.wake_pending:
            self.wake_pending = True
            self.env.sim.at(-int(-self.next_send_ps // 1), self._wake)

    def _wake(self, _: Any) -> None:
        self.wake_pending = False
        if self.sendable():
            self.nic.activate(self)

    # -- feedback --------------------------------------------------------------------------
    def on_ack(self, pkt: Packet) -> None:
        """Selective ACK: cumulative ``cack``, bitmap ``sack`` (bit j = PSN ``sbase`` + j)."""
        env = self.env
        if self.closed:
            env.pool.put(pkt)
            return
        una = self.una
        d = pkt.cack - una
        full = (1 << d) - 1 if d > 0 else 0
        d = pkt.sbase - una
        full |= pkt.sack << d if d >= 0 else pkt.sack >> -d
        new = full & ~self.ack_w
        acked = 0
        if new:
            w = self.ack_w | new
            st, last = self.st, self.npkts - 1
            while new:
                low = new & -new
                new ^= low
                psn = una + low.bit_length() - 1
                size = self.wire_last if psn == last else self.wire_full
                if st[psn] == OUT:
                    self.inflight -= size
                st[psn] = ACKED
                acked += size
                self.acked_pkts += 1
                self.acked_bytes += size - env.hdr
            if w & 1:
                t = ((~w) & (w + 1)).bit_length() - 1
                w >>= t
                self.una = una + t
            self.ack_w = w
        entropy, ecn, ts, csig = pkt.entropy, pkt.ecn, pkt.ts, pkt.csig
        env.pool.put(pkt)
        if self.feedback:
            self.spray.on_ack(entropy, ecn or csig >= env.csig_reps_ps)
        now = env.sim.now
        rtt = now - ts
        if env.csig_cc:  # CSIG: the worst hop's queueing delay, not the whole RTT's
            rtt = self.cc.base_rtt_ps + csig
        self.cc.on_ack(now, acked, rtt, ecn, self.inflight)
        if self.acked_pkts == self.npkts:
            self.acked_ps = now
            self._close()
        elif not (self.in_active or self.wake_pending) and (
            self.retx or self.next_psn < self.npkts
        ):
            self.nic.activate(self)  # perf: a paced PDC waiting for its time wakes by itself

    def on_nack(self, pkt: Packet) -> None:
        """NACK of a trimmed packet: if it is the latest transmission, retransmit the PSN."""
        psn, ts, entropy, ecn = pkt.psn, pkt.ts, pkt.entropy, pkt.ecn
        # the path delivered it to the receiver's own port: its entropy was fine
        path_ok = pkt.last_hop and self.env.recycle_last_hop
        self.env.pool.put(pkt)
        if self.closed or self.st[psn] != OUT or self.sent_ts[psn] != ts:
            return
        size = self._lose(psn)
        self.nic.nacks += 1
        if self.feedback:
            if path_ok:
                self.spray.on_ack(entropy, ecn)
            else:
                self.spray.on_nack(entropy)
        self.cc.on_nack(self.env.sim.now, size, self.env.sim.now - ts)
        if not self.in_active:
            self.nic.activate(self)

    def on_cnp(self, pkt: Packet) -> None:
        """A congestion notification (RoCE, DCQCN) for this connection."""
        self.env.pool.put(pkt)
        if not self.closed:
            self.cc.on_cnp(self.env.sim.now)

    def _lose(self, psn: int) -> int:
        size = self.wire_last if psn == self.npkts - 1 else self.wire_full
        self.st[psn] = LOST
        self.inflight -= size
        self.retx.append(psn)
        return size

    # -- timers ----------------------------------------------------------------------------
    def _arm_rto(self, deadline: int) -> None:
        self.rto_at = deadline
        self.rto_tok += 1
        self.env.sim.at(deadline, self._on_rto, self.rto_tok)

    def _on_rto(self, tok: int) -> None:
        if tok != self.rto_tok or self.closed:
            return
        self.rto_at = -1
        now = self.env.sim.now
        st, ts = self.st, self.sent_ts
        nxt = -1
        for q in self.rto_q:
            while q.n:
                psn = q.first(1)
                if st[psn] != OUT or ts[psn] != q.first(2):
                    q.pop()
                    continue
                if q.first(0) > now:
                    break
                entropy = q.first(3)
                q.pop()
                self._timeout(psn, entropy)
                if self.closed:
                    return
            if q.n and (nxt < 0 or q.first(0) < nxt):
                nxt = q.first(0)
        if nxt >= 0 and (self.rto_at < 0 or nxt < self.rto_at):
            self._arm_rto(nxt)
        if not self.in_active and self.retx:
            self.nic.activate(self)

    def _retry(self, psn: int) -> bool:
        """Count a timeout of ``psn``; past ``nic.max_retries`` the connection fails (False)."""
        self.tmo[psn] += 1
        self.nic.timeouts += 1
        if self.tmo[psn] > self.env.max_retries:
            self.fail()
            return False
        return True

    def _timeout(self, psn: int, entropy: int) -> None:
        if not self._retry(psn):
            return
        self._lose(psn)
        if self.feedback:
            self.spray.on_path_failure(entropy)
        self.cc.on_timeout(self.env.sim.now)

    def _on_fd(self, _: Any) -> None:
        self.fd_at = -1
        if self.closed:
            return
        now = self.env.sim.now
        st, ts, q = self.st, self.sent_ts, self.fd_q
        while q.n:
            psn = q.first(1)
            if st[psn] != OUT or ts[psn] != q.first(2):
                q.pop()
                continue
            if q.first(0) > now:
                break
            entropy = q.first(3)
            q.pop()
            self.nic.early_failures += 1
            self.spray.on_path_failure(entropy)
        if q.n:
            self.fd_at = q.first(0)
            self.env.sim.at(self.fd_at, self._on_fd)

    # -- end -------------------------------------------------------------------------------
    def _close(self) -> None:
        self.closed = True
        self.rto_q = [TxQueue()]
        self.fd_q.clear()
        self.nic.release(self.group)

    def fail(self) -> None:
        """Give up (retry limit): the message is reported unfinished."""
        if self.closed:
            return
        self.failed = True
        self._close()
        self.env.on_tx_failed(self)


def backed_off(rto_ps: int, level: int) -> int:
    """The RTO after ``level`` timeouts, ``rto_ps << level`` capped at :data:`NEVER_PS` (Python
    ints: the shift may pass 64 bits)."""
    return min(rto_ps << level, NEVER_PS)


def pace_phase_ps(serial: int, wire_last: int, rate_bps: float) -> float:
    """Offset of a paced connection's first packet, ps: a fraction ``frac(serial x 0.618...)``
    of its last packet's interval at ``rate_bps`` (so its last packet still leaves in time).

    Examples
    --------
    >>> round(pace_phase_ps(0, 1000, 8e9)), round(pace_phase_ps(1, 1000, 8e9))
    (0, 618034)
    """
    if not rate_bps < float("inf"):
        return 0.0
    return transmit_ps(((serial * _GOLDEN) % 1.0) * wire_last, max(rate_bps, 1.0))
