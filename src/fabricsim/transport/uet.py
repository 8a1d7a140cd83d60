"""UET (``nic.transport: uet``, the default) and its four delivery modes (``nic.delivery_mode``).

The UET packet delivery sublayer offers four delivery modes; each is a receive rule, a
retransmission rule, what the sender may spray, and the counters it adds to the records:

* ``rud`` -- reliable unordered delivery (the default, the NIC element's own rules,
  :class:`fabricsim.nic.nic.Nic` and :class:`fabricsim.nic.pdc.Pdc`).  The receiver places
  every packet as it arrives (no reorder buffer) and answers with selective ACKs (cumulative
  PSN and a 64-bit bitmap); a duplicate is detected and not placed again.  A trimmed header is
  answered by a NACK at once and the sender resends that packet; a timeout resends the one
  that timed out.  Any spraying type.  No counters of its own.
* ``rod`` -- reliable ordered delivery (:class:`RodNic`, :class:`RodPdc`).  The receiver
  accepts only the expected PSN: a later packet is dropped and answered by a NACK carrying the
  expected PSN (one per expected PSN, again only after one base RTT), a trimmed header of the
  expected (or a later) PSN too.  On a NACK the sender resends every outstanding PSN from the
  one the NACK asks for, in order (go-back-N; a NACK answering a packet sent before the last
  resend of that PSN is ignored); a timeout resends from the first unacknowledged PSN.  One
  path: the spraying type must keep one entropy (unset, it is ``rod``: at most one entropy
  change every ``nic.reroute_rtts`` base RTTs).  Counters ``rod_ooo_dropped`` (receiver) and
  ``rod_go_backs`` (sender).
* ``rudi`` -- reliable unordered delivery for idempotent operations (:class:`RudiNic`,
  :class:`RudiPdc`).  Sending, spraying and retransmission are RUD's.  What differs: the
  receiver keeps no per-PSN state for its answers (an idempotent operation may be applied
  twice), so every packet is ACKed on its own, for its own PSN only (no cumulative PSN, no
  bitmap, no coalescing: a lost ACK is not covered by a later one), and a resent packet whose
  first copy arrived is placed again.  Counter ``rudi_duplicates_placed``.  (The simulator
  still notes which PSNs were placed, to know when the message is complete: that is the
  measurement, not the protocol.)
* ``uud`` -- unreliable unordered delivery (:class:`UudNic`, :class:`UudPdc`).  No ACKs, no
  NACKs, no retransmission: the sender sends each PSN once, at the NIC's pace (no window: no
  ACK would ever open it; ``nic.cc`` must be ``constant``), and closes after its last packet.
  The receiver places what arrives; a trimmed header is a lost packet.  A message that lost a
  packet never completes (``finish_s`` empty).  Any spraying type without feedback.  Counter
  ``uud_packets_lost`` (sender: packets sent that never arrived).

The refusals (``rod`` with a spraying type that sprays, ``uud`` with one that needs feedback
or a controller that needs ACKs) are config's (:mod:`fabricsim.config.delivery`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from fabricsim.engine_api import ACK
from fabricsim.nic.nic import Nic
from fabricsim.nic.pdc import LOST, OUT, Pdc
from fabricsim.transport.base import Transport

if TYPE_CHECKING:
    from fabricsim.config.models import NicConfig
    from fabricsim.nic.pdc import NicEnv, RxState
    from fabricsim.packetsim.packets import Packet


# -- rod ---------------------------------------------------------------------------------------
class RodNic(Nic):
    """ROD's receiver: in order only; a later PSN is dropped and NACKed (go-back-N)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.rod_ooo_dropped = self.rod_go_backs = 0

    def receive(self, pkt: Packet) -> None:
        pdc: Pdc = pkt.pdc
        rx = pdc.rx
        now = self.sim.now
        psn, cum = pkt.psn, rx.cum
        if pkt.kind:  # a trimmed header: its payload is lost; from cum on, ask for cum again
            self.trimmed_received += 1
            if psn < cum:
                self.pool.put(pkt)
            elif psn == cum or rx.nak_psn != cum or now >= rx.nak_at:
                self._nak(pkt, pdc, rx, now)
            else:
                self.pool.put(pkt)
            return
        self.data_received += 1
        urgent = pkt.ecn or (self.ack_request and (pkt.ar or not rx.count))
        if psn < cum:  # (nothing is held beyond cum: the bitmap stays empty)
            rx.dups += 1
            self.duplicates += 1
            urgent = True
        elif psn > cum:  # out of order: dropped; NACK the expected PSN
            self.ooo_events += 1
            self.rod_ooo_dropped += 1
            if rx.nak_psn != cum or now >= rx.nak_at:
                self._nak(pkt, pdc, rx, now)
            else:
                self.pool.put(pkt)
            return
        else:
            self._advance(rx, cum)
            if self._placed(pdc, rx, pkt):
                urgent = True
        self._answer(pkt, pdc, rx, psn, urgent)


class RodPdc(Pdc):
    """ROD's sender: go-back-N on a NACK and on a timeout, one path."""

    def on_nack(self, pkt: Packet) -> None:
        cack, ts, entropy = pkt.cack, pkt.ts, pkt.entropy
        if self.closed:
            self.env.pool.put(pkt)
            return
        state = self.st[cack] if cack < self.npkts else 0
        # a NACK older than the last resend of the PSN it asks for, or one already going back
        stale = state == LOST or (state == OUT and self.sent_ts[cack] > ts)
        self.on_ack(pkt)  # the cumulative part acknowledges as an ACK does
        if self.closed or stale or cack >= self.npkts:
            return
        now = self.env.sim.now
        self.nic.nacks += 1
        cast(RodNic, self.nic).rod_go_backs += 1
        if self.feedback:
            self.spray.on_nack(entropy)
        self.cc.on_nack(now, self.wire_full, now - ts)
        self._go_back(cack)
        if not self.in_active and self.retx:
            self.nic.activate(self)

    def _go_back(self, first: int) -> None:
        """Resend every PSN from ``first`` that is outstanding or lost, in order."""
        st, rq = self.st, self.retx
        rq.clear()
        for psn in range(max(first, self.una), self.next_psn):
            state = st[psn]
            if state == OUT:
                self._lose(psn)
            elif state == LOST:
                rq.append(psn)

    def _timeout(self, psn: int, entropy: int) -> None:
        if not self._retry(psn):
            return
        self._go_back(self.una)
        if self.feedback:
            self.spray.on_path_failure(entropy)
        self.cc.on_timeout(self.env.sim.now)


# -- rudi --------------------------------------------------------------------------------------
class RudiPdc(Pdc):
    """RUDI's sender: RUD's; ``placed`` is the simulator's note of what arrived (not state the
    receiver answers from)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.placed = bytearray(self.npkts)


class RudiNic(Nic):
    """RUDI's receiver: no duplicate detection, one ACK per packet for its own PSN."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.rudi_duplicates_placed = 0

    def receive(self, pkt: Packet) -> None:
        if pkt.kind:  # a trimmed header: NACKed at once, as under rud
            self._on_header(pkt)
            return
        pdc: RudiPdc = pkt.pdc
        rx: RxState = pdc.rx
        psn = pkt.psn
        self.data_received += 1
        if pdc.placed[psn]:  # written again: the operation is idempotent
            rx.dups += 1
            self.duplicates += 1
            self.rudi_duplicates_placed += 1
        else:
            pdc.placed[psn] = 1
            if psn != rx.count:  # (placed beyond the packets placed so far, in PSN order)
                self.ooo_events += 1
            self._placed(pdc, rx, pkt)
        pkt.kind, pkt.cack, pkt.sbase, pkt.sack = ACK, 0, psn, 1  # this PSN only
        self.acks_sent += 1
        self._turn_around(pkt, pdc)


# -- uud ---------------------------------------------------------------------------------------
class UudPdc(Pdc):
    """UUD's sender: each PSN once, no window, no timers; closed after its last packet."""

    def next_packet(self) -> Packet | None:
        if self.closed:
            return None
        psn = self.next_psn
        if psn >= self.npkts:
            return None
        size = self.wire_last if psn == self.npkts - 1 else self.wire_full
        if (self.paced or self.cc.pacing_bps is not None) and not self._pace(size):
            return None
        self.next_psn = psn + 1
        pkt = self._emit(psn, size, False)
        self.inflight = 0  # nothing is awaited: no window to fill
        if self.next_psn == self.npkts:  # nothing more to send or to hear (acked_ps stays -1)
            self._close()
        return pkt

    def _track(self, psn: int, now: int, entropy: int) -> None:
        """No retransmission timeout, no failure detection: nothing is resent."""


class UudNic(Nic):
    """UUD's receiver: places what arrives, answers nothing; a trimmed header is a loss."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.sending: list[Pdc] = []  # its PDCs as a sender (uud_packets_lost)

    def add(self, pdc: Pdc) -> None:
        self.sending.append(pdc)
        super().add(pdc)

    def receive(self, pkt: Packet) -> None:
        pdc: Pdc = pkt.pdc
        if pkt.kind:
            self.trimmed_received += 1
        else:
            self.data_received += 1
            rx = pdc.rx
            if rx.count and pkt.psn != rx.cum:
                self.ooo_events += 1
            rx.cum = pkt.psn + 1  # (the highest PSN seen, + 1: for the count above only)
            self._placed(pdc, rx, pkt)
        self.pool.put(pkt)

    @property
    def uud_packets_lost(self) -> int:
        """Packets its PDCs sent that never arrived (dropped or trimmed; still in flight when
        a time limit cut the run)."""
        return sum(p.sent - p.rx.count for p in self.sending)


# -- the transport -------------------------------------------------------------------------------
MODES: dict[str, tuple[type[Nic], type[Pdc], tuple[str, ...]]] = {
    "rud": (Nic, Pdc, ()),
    "rod": (RodNic, RodPdc, ("rod_ooo_dropped", "rod_go_backs")),
    "rudi": (RudiNic, RudiPdc, ("rudi_duplicates_placed",)),
    "uud": (UudNic, UudPdc, ("uud_packets_lost",)),
}
"""``nic.delivery_mode`` -> its NIC and PDC classes and the counters it adds (to
``uet_transport_stats`` and the run's summary)."""
UNFINISHED = {"uud": "packets lost, not retransmitted (nic.delivery_mode uud)"}
"""Why a mode's message may stay unfinished when nothing else stopped it."""


class Uet(Transport):
    """UET: SACK, out-of-order placement, NACK on trim; the delivery mode picks the rules."""

    name = "uet"
    label = "UET"
    help = (
        "SACK, out-of-order placement, NACK on trim (UET's reliable unordered delivery; "
        "nic.delivery_mode picks rod, rudi or uud instead)"
    )
    receive_rule = "out of order, SACK; a trimmed header is NACKed"
    nic_class = Nic
    pdc_class = Pdc
    knobs = ("nic.delivery_mode",)

    def classes(self, cfg: NicConfig) -> tuple[type[Nic], type[Pdc]]:
        nic, pdc, _ = MODES[cfg.delivery_mode]
        return nic, pdc

    def summary_counters_for(self, cfg: NicConfig) -> tuple[str, ...]:
        return MODES[cfg.delivery_mode][2]

    def unfinished_reason(self, cfg: NicConfig) -> str | None:
        return UNFINISHED.get(cfg.delivery_mode)

    def configure(self, env: NicEnv, cfg: NicConfig) -> None:
        super().configure(env, cfg)
        env.counters = MODES[cfg.delivery_mode][2]
        if cfg.delivery_mode == "rod":  # a NACK repeats for one expected PSN after a base RTT
            env.nak_ps = max(env.base_rtt_ps, 1)
