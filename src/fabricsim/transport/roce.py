"""RoCEv2 reliable connection with go-back-N (``nic.transport: roce``).

* **Receive** (:class:`RoceNic`): the RC receiver expects PSNs in order.  An out-of-sequence
  packet is dropped and answered by a NAK carrying the expected PSN, once per expected PSN
  (again only after ``nic.roce.nak_interval_us``).  ACKs coalesce as UET's do (ECN marks do
  not hasten them: a CNP answers those); duplicates, flagged and last packets are ACKed at
  once.  A trimmed header is of no use to it: the payload is lost.  With ``nic.cc: dcqcn`` the
  receiver is DCQCN's notification point: an ECN-marked arrival sends the sender a CNP, at
  most one per QP per ``nic.dcqcn.cnp_interval_us``.
* **Retransmission** (:class:`RocePdc`): on a NAK, everything below its ``cack`` is
  acknowledged and every PSN from ``cack`` on that is outstanding is resent, in order (a NAK
  older than the last resend of ``cack`` is ignored); a timeout resends from the first
  unacknowledged PSN.  Backoff and the retry limit are the UET sender's.
* **Defaults**: PFC on, DCQCN, DCQCN's ECN thresholds, no trimming, an RTO of at least 4 ms
  (:mod:`fabricsim.config.roce`).  ``nic.roce.retransmit: selective`` keeps these defaults and
  recovers with :mod:`fabricsim.transport.roce_sr`'s rules (without its window cap).
* **Counts**: NAKs (sent as ``nacks_sent``, received), CNPs sent and received.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fabricsim.config.roce import RTO_FLOOR_US
from fabricsim.nic.nic import Nic
from fabricsim.nic.pdc import LOST, OUT, Pdc
from fabricsim.transport.base import Transport
from fabricsim.transport.rc import RC_COUNTERS, RC_SUMMARY, configure_rc
from fabricsim.transport.roce_sr import RoceSrNic, RoceSrPdc

if TYPE_CHECKING:
    from fabricsim.config.models import NicConfig
    from fabricsim.nic.pdc import NicEnv
    from fabricsim.packetsim.packets import Packet


class RoceNic(Nic):
    """A RoCE RC receiver: in order, NAK and go-back-N (see the module notes)."""

    def receive(self, pkt: Packet) -> None:
        pdc: Pdc = pkt.pdc
        if pkt.kind:  # a trimmed header: RoCE has no use for it, the payload is lost
            self.trimmed_received += 1
            self.pool.put(pkt)
            return
        rx = pdc.rx
        now = self.sim.now
        psn, cum = pkt.psn, rx.cum
        self.data_received += 1
        if pkt.ecn and self.cnp_ps and now >= rx.cnp_at:  # DCQCN's notification point
            rx.cnp_at = now + self.cnp_ps
            self._send_cnp(pdc, pkt.entropy)
        urgent = self.ack_request and (pkt.ar or not rx.count)
        if psn < cum:  # (nothing is held beyond cum: the bitmap stays empty)
            rx.dups += 1
            self.duplicates += 1
            urgent = True
        elif psn > cum:  # out of sequence: dropped; NAK the expected PSN
            self.ooo_events += 1
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


class RocePdc(Pdc):
    """The sender of a RoCE RC queue pair: go-back-N on NAK and timeout."""

    def on_nack(self, pkt: Packet) -> None:
        cack, ts = pkt.cack, pkt.ts
        if self.closed:
            self.env.pool.put(pkt)
            return
        self.nic.naks_received += 1
        stale = (  # a NAK older than the last resend of the PSN it asks for
            cack < self.npkts and self.st[cack] == OUT and self.sent_ts[cack] > ts
        )
        self.on_ack(pkt)  # the cumulative part acknowledges as an ACK does
        if self.closed or stale:
            return
        self.nic.nacks += 1
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
        self.cc.on_timeout(self.env.sim.now)


class Roce(Transport):
    """RoCEv2 RC: in-order delivery, NAK and go-back-N, lossless (PFC) by default."""

    name = "roce"
    label = "RoCE"
    help = "RoCEv2 RC: in-order delivery, NAK + go-back-N (unset: switch.pfc true, nic.cc dcqcn)"
    receive_rule = "in order; an out-of-sequence packet is dropped and NAKed (go-back-N)"
    nic_class = RoceNic
    pdc_class = RocePdc
    knobs = ("nic.roce.retransmit", "nic.roce.nak_interval_us")
    counters = RC_COUNTERS
    summary_counters = RC_SUMMARY
    pfc_by_default = roce_fabric = sends_cnps = True
    rto_floor_us = RTO_FLOOR_US

    def classes(self, cfg: NicConfig) -> tuple[type[Nic], type[Pdc]]:
        if cfg.roce.retransmit == "selective":  # selective repeat under RoCE's defaults
            return RoceSrNic, RoceSrPdc
        return self.nic_class, self.pdc_class

    def configure(self, env: NicEnv, cfg: NicConfig) -> None:
        super().configure(env, cfg)
        configure_rc(env, cfg)
