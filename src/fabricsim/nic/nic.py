"""A UET-style host NIC: PDC groups, the transmit scheduler, and the receive side.

* **PDC groups** (``PDCGroupsEnabled``): a group holds the spraying state of the NIC toward
  one peer.  A message to a peer with which the NIC has no other message in flight, in either
  direction (sending: not yet fully acknowledged; receiving: first packet seen, not yet
  complete), starts a new group; later messages to that peer join it while it lives.  With
  groups disabled every PDC is a group of its own.  The spraying state is created when the
  group's first sending PDC joins (its ``src_port`` is the group's entropy under ``none``), by
  the registered spraying type of ``nic.packet_spraying_type`` (:mod:`fabricsim.lb.spraying`).
* **Transmit scheduler**: the NIC's uplink pulls a packet whenever the wire is free: ACKs and
  NACKs first (with ``nic.control_per_data``, one data packet after that many in a row), then
  the PDCs with something to send in round robin, one packet each (htsim's NIC round robin;
  MoE's ``round_robin`` sender); a PDC blocked by its window leaves the round until feedback
  brings it back; a paced PDC (``rate_cap_bps``: MoE's ``rate_based``
  sender) leaves it after each packet and rejoins at the end when its next packet is due.
* **Receive**: data is written as it arrives (no reorder buffer); every ``nic.ack_coalesce``
  data packets (``nic.ack_bytes``: every that many wire bytes), and at once for a duplicate,
  ECN-marked or last packet -- with ``nic.ack_request`` also for the first packet and every
  packet the sender flagged (its window is full after it, or it is a retransmission) -- the
  receiver returns a selective ACK (cumulative PSN, and a 64-bit bitmap whose base is chosen
  so that it covers the PSN answered) that carries the entropy and ECN mark of the packet
  it answers and that packet's send time.  A trimmed header is answered by a NACK at once.
  ACK and NACK objects are the data packet turned around (no allocation).
* **Other transports** (``nic.transport``): a transport module (:mod:`fabricsim.transport`)
  subclasses :class:`Nic` for its receive rule (RoCE: in order with NAK and go-back-N; RoCE
  with selective repeat: out of order with SACK and a NAK per out-of-order arrival) and uses
  the parts here: ACK coalescing (:meth:`Nic._held`), placement, the SACK fields, NAKs and
  CNPs (DCQCN's notification point, at most one per QP per ``nic.dcqcn.cnp_interval_us``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from fabricsim.engine_api import ACK, CNP, NACK
from fabricsim.lb.spraying import SprayingStrategy, make_spraying
from fabricsim.nic.pdc import NicEnv, Pdc, RxState

if TYPE_CHECKING:  # the packet engine imports the NIC; the NIC sees its parts as types only
    from fabricsim.packetsim.packets import Packet
    from fabricsim.packetsim.ports import HostPort

_MASK64 = (1 << 64) - 1


class PdcGroup:
    """Spraying state shared by the PDCs of one NIC toward one peer."""

    __slots__ = ("peer", "count", "spray", "serial")

    def __init__(self, peer: int, serial: int) -> None:
        self.peer, self.serial = peer, serial
        self.count = 0
        self.spray: SprayingStrategy | None = None


class Nic:
    """One host's NIC: ``receive(pkt)`` for arriving packets, ``pull()`` for its uplink."""

    def __init__(self, env: NicEnv, host: int, port: HostPort) -> None:
        self.env, self.host, self.port = env, host, port
        self.ctrl: deque[Packet] = deque()
        self.active: deque[Pdc] = deque()
        self.groups: dict[int, PdcGroup] = {}
        self.groups_created = 0
        self.ooo_events = self.max_ooo = self.nacks = self.timeouts = 0
        self.early_failures = self.duplicates = self.trimmed_received = 0
        self.acks_sent = self.nacks_sent = self.data_received = self.retransmissions = 0
        self.cnps_sent = self.cnps_received = self.naks_received = 0
        self.nak_ps, self.cnp_ps = env.nak_ps, env.cnp_ps
        self._rand: Callable[[], float] | None = None
        # perf: the shared settings the receive path reads, as the NIC's own fields (reading
        # them through env measured 8-12 % slower in the compiled build)
        self.hdr, self.coalesce, self.rcache = env.hdr, env.coalesce, env.routes.cache
        self.ack_by_bytes, self.ack_request = env.ack_by_bytes, env.ack_request
        self.sim, self.pool = env.sim, env.pool
        self.groups_enabled = env.cfg.pdc_groups_enabled
        self.ctrl_run = 0  # control packets sent since the last data packet
        self.ctrl_per_data = env.ctrl_per_data
        port.pull = self.pull
        port.ctrlq, port.activeq = self.ctrl, self.active

    # -- groups ----------------------------------------------------------------------------
    def join(self, peer: int, pdc: Pdc | None) -> PdcGroup:
        """The group a new message to/from ``peer`` belongs to (``pdc``: a sending PDC)."""
        if pdc is not None and not self.env.cfg.pdc_groups_enabled:
            group = PdcGroup(peer, self.groups_created)
            self.groups_created += 1
        else:
            group = self.groups.get(peer)  # type: ignore[assignment]
            if group is None:
                group = self.groups[peer] = PdcGroup(peer, self.groups_created)
                self.groups_created += 1
        group.count += 1
        if pdc is not None:
            if group.spray is None:
                group.spray = self._new_spraying(pdc)
            pdc.group, pdc.spray = group, group.spray
            pdc.feedback = group.spray.feedback
        return group

    def _new_spraying(self, creator: Pdc) -> SprayingStrategy:
        env = self.env
        if self._rand is None:
            self._rand = env.rand_of(self.host)
        return make_spraying(
            env.cfg,
            creator,
            self._rand,
            env.sim,
            env.window_packets(self.host),
            env.freezing_ps,
            env.base_rtt_ps,
        )

    def release(self, group: PdcGroup | None) -> None:
        """A message of ``group`` is no longer in flight at this NIC."""
        if group is None:
            return
        group.count -= 1
        if group.count == 0 and self.groups.get(group.peer) is group:
            del self.groups[group.peer]

    # -- transmit ----------------------------------------------------------------------------
    def add(self, pdc: Pdc) -> None:
        """A new connection starts sending."""
        self.join(pdc.dst, pdc)
        self.activate(pdc)

    def activate(self, pdc: Pdc) -> None:
        if not pdc.in_active:
            pdc.in_active = True
            self.active.append(pdc)
        self.port.kick()

    def pull(self) -> Packet | None:
        """The packet to put on the wire now: control first (up to ``nic.control_per_data``
        in a row while data waits), then PDCs in round robin."""
        ctrl = self.ctrl
        if ctrl and self.ctrl_run < self.ctrl_per_data:
            self.ctrl_run += 1
            return ctrl.popleft()
        if self.port.paused:  # PFC paused the data priority: control only
            return ctrl.popleft() if ctrl else None
        pkt = self._next_data()
        if pkt is not None:
            self.ctrl_run = 0
            return pkt
        if ctrl:
            return ctrl.popleft()
        return None

    def _next_data(self) -> Packet | None:
        """The next data packet of the PDCs in round robin, or None."""
        active = self.active
        while active:
            pdc = active[0]
            pkt = pdc.next_packet()
            if pkt is not None:
                if pdc.paced and pdc.next_send_ps > self.sim.now:
                    # a paced PDC leaves the round after each packet; its timer brings it
                    # back (to the end of the round) when the next one is due
                    active.popleft()
                    pdc.in_active = False
                    pdc.sleep()
                else:
                    active.rotate(-1)
                return pkt
            active.popleft()
            pdc.in_active = False
        return None

    # -- receive ---------------------------------------------------------------------------
    def receive(self, pkt: Packet) -> None:
        """A data packet (or its trimmed header) arrives from the fabric."""
        if pkt.kind:
            self._on_header(pkt)
            return
        pdc: Pdc = pkt.pdc
        rx = pdc.rx
        psn, cum = pkt.psn, rx.cum
        urgent = pkt.ecn
        if self.ack_request and (pkt.ar or not rx.count):  # flagged, or the first packet
            urgent = True
        self.data_received += 1
        if psn < cum or (rx.win >> (psn - cum)) & 1:
            rx.dups += 1
            self.duplicates += 1
            urgent = True
        else:
            if psn == cum:
                w = rx.win | 1
                t = ((~w) & (w + 1)).bit_length() - 1
                rx.win = w >> t
                rx.cum = cum + t
                if rx.hole_ar and not rx.win:  # the hole below a flagged packet is filled
                    rx.hole_ar = False
                    urgent = True
            else:
                if pkt.ar:
                    rx.hole_ar = True
                self._out_of_order(rx, psn - cum)
            if self._placed(pdc, rx, pkt):
                urgent = True
        if self._held(pkt, rx, urgent):
            return
        self._sack(pkt, rx, psn, ACK)
        self.acks_sent += 1
        # perf: turn-around inlined
        pkt.size = self.hdr
        route = self.rcache.get(pdc.rkey_back | pkt.entropy)
        if route is None:
            route = self.env.routes.get(self.host, pdc.src, pkt.entropy)
        pkt.hops, pkt.hop, pkt.dst = route.ctrl_hops, 0, pdc.src
        self.ctrl.append(pkt)
        if not self.port.pending:
            self.port.kick()

    def receive_ctrl(self, pkt: Packet) -> None:
        """An ACK, NACK (NAK) or CNP for one of this NIC's PDCs."""
        pdc = pkt.pdc
        if pkt.kind == ACK:
            pdc.on_ack(pkt)
        elif pkt.kind == CNP:
            self.cnps_received += 1
            pdc.on_cnp(pkt)
        else:
            pdc.on_nack(pkt)

    # -- parts the transports' receive rules share -----------------------------------------
    def _advance(self, rx: RxState, cum: int) -> None:
        """The expected PSN ``cum`` arrived: the cumulative point moves past what is held."""
        w = rx.win | 1
        t = ((~w) & (w + 1)).bit_length() - 1
        rx.win = w >> t
        rx.cum = cum + t

    def _answer(self, pkt: Packet, pdc: Pdc, rx: RxState, psn: int, urgent: bool) -> None:
        """ACK ``pkt`` (turned around) unless coalescing absorbs it."""
        if self._held(pkt, rx, urgent):
            return
        self._sack(pkt, rx, psn, ACK)
        self.acks_sent += 1
        self._turn_around(pkt, pdc)

    def _out_of_order(self, rx: RxState, offset: int) -> None:
        """A packet ``offset`` PSNs past the cumulative point is held in the bitmap."""
        self.ooo_events += 1
        w = rx.win | (1 << offset)
        rx.win = w
        held = w.bit_count()
        if held > self.max_ooo:
            self.max_ooo = held

    def _held(self, pkt: Packet, rx: RxState, urgent: bool) -> bool:
        """ACK coalescing: True when ``pkt`` is absorbed (recycled) without an ACK of its own."""
        rx.unacked += pkt.size if self.ack_by_bytes else 1
        if not urgent and rx.unacked < self.coalesce:
            self.pool.put(pkt)
            return True
        rx.unacked = 0
        return False

    def _placed(self, pdc: Pdc, rx: RxState, pkt: Packet) -> bool:
        """A new packet's payload is written (in order, or placed out of order); True when it
        completes the message."""
        rx.count += 1
        rx.bytes += pkt.payload
        if rx.count == 1 and self.groups_enabled:
            rx.group = self.join(pdc.src, None)
        if rx.count == pdc.npkts:
            self._rx_complete(pdc)
            return True
        return False

    def _sack(self, pkt: Packet, rx: RxState, psn: int, kind: int) -> None:
        """Turn ``pkt`` into an ACK or NAK: cumulative PSN and the bitmap covering ``psn``."""
        cum = rx.cum
        base = cum if psn - cum < 64 else psn - 63
        pkt.kind, pkt.cack, pkt.sbase = kind, cum, base
        pkt.sack = (rx.win >> (base - cum)) & _MASK64

    def _nak(self, pkt: Packet, pdc: Pdc, rx: RxState, now: int) -> None:
        rx.nak_psn, rx.nak_at = rx.cum, now + self.nak_ps
        rx.unacked = 0
        self.nacks_sent += 1
        self._sack(pkt, rx, pkt.psn, NACK)
        self._turn_around(pkt, pdc)

    def _send_cnp(self, pdc: Pdc, entropy: int) -> None:
        """A CNP to the sender of ``pdc``, on the entropy of the marked packet."""
        cnp = self.pool.get()
        cnp.kind, cnp.pdc, cnp.psn, cnp.entropy, cnp.ts = CNP, pdc, 0, entropy, 0
        cnp.ecn = cnp.ar = cnp.last_hop = False
        self.cnps_sent += 1
        self._turn_around(cnp, pdc)

    def _rx_complete(self, pdc: Pdc) -> None:
        rx = pdc.rx
        rx.done_ps = self.env.sim.now
        self.release(rx.group)
        rx.group = None
        self.env.on_rx_done(pdc)

    def _on_header(self, pkt: Packet) -> None:
        self.trimmed_received += 1
        self.nacks_sent += 1
        pkt.kind = NACK
        self._turn_around(pkt, pkt.pdc)

    def _turn_around(self, pkt: Packet, pdc: Pdc) -> None:
        """Send ``pkt`` back to the sender on the entropy it came with."""
        pkt.size = self.hdr
        route = self.rcache.get(pdc.rkey_back | pkt.entropy)
        if route is None:
            route = self.env.routes.get(self.host, pdc.src, pkt.entropy)
        pkt.hops = route.ctrl_hops
        pkt.hop = 0
        pkt.dst = pdc.src
        self.ctrl.append(pkt)
        self.port.kick()

    def rx_abandoned(self, pdc: Pdc) -> None:
        """The sender of ``pdc`` gave up: the message is no longer in flight here."""
        if pdc.rx.group is not None:
            self.release(pdc.rx.group)
            pdc.rx.group = None

    def stats(self) -> dict[str, int]:
        """Transport counters of this NIC (``uet_transport_stats``).

        As a receiver: out-of-order events, the most packets one PDC held beyond its cumulative
        point, data packets, duplicates and trimmed headers received, ACKs and NACKs sent.  As
        a sender: retransmissions, trims of its packets (NACKs received), timeouts, REPS early
        failure detections, PDC groups created (both sides).  Then the counters the transport
        declares (RoCE: CNPs sent and received, NAKs received; there ``nacks_sent`` counts NAKs).
        """
        out = {
            "num_out_of_order_events_on_nic": self.ooo_events,
            "max_out_of_order_on_flow": self.max_ooo,
            "data_packets_received": self.data_received,
            "duplicates_received": self.duplicates,
            "trimmed_received": self.trimmed_received,
            "acks_sent": self.acks_sent,
            "nacks_sent": self.nacks_sent,
            "nacks_received": self.nacks,
            "retransmissions": self.retransmissions,
            "trims": self.nacks,
            "timeouts": self.timeouts,
            "early_failure_detections": self.early_failures,
            "pdc_groups_created": self.groups_created,
        }
        for name in self.env.counters:
            out[name] = getattr(self, name)
        return out
