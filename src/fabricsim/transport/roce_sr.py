"""RoCE with selective repeat, IRN-style (``nic.transport: roce_sr``).

After IRN (Mittal et al., "Revisiting Network Support for RDMA", SIGCOMM 2018): a RoCE NIC
that recovers from loss by itself, so the fabric need not be lossless.

* **Receive** (:class:`RoceSrNic`): a packet beyond the expected PSN is placed at once and
  held in the receive bitmap (bit j: PSN cum + j).  Every out-of-order arrival is answered at
  once by a NAK carrying the cumulative PSN and the 64-bit SACK bitmap of what is held around
  it; in-order packets are ACKed as on ``roce`` (coalesced; duplicates, flagged and last
  packets at once).  CNPs as on ``roce`` (DCQCN's notification point).
* **Retransmission** (:class:`RoceSrPdc`): a NAK acknowledges what its cumulative PSN and
  SACK cover, and resends only the holes below the highest PSN the receiver holds that were
  sent before the packet that triggered it.  A timeout resends every unacknowledged PSN sent
  no later than the one that timed out (the engine's RTO, its backoff and retry limit).
* **Window** (IRN's BDP-FC): a new PSN is sent only while fewer than one BDP of packets
  (``window_cap_bdp`` x the path's base-RTT BDP, in full packets) lie between the first
  unacknowledged PSN and it; retransmissions are never held back by it.
* **Defaults**: DCQCN, DCQCN's ECN thresholds, no trimming, and no PFC (``switch.pfc`` keeps
  its default; set it to compare).  The automatic RTO has RoCE's 4 ms floor only with PFC
  on: without PFC nothing waits that long in a queue.
* **Counts**: NAKs (sent as ``nacks_sent``, received), CNPs sent and received.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from fabricsim.config.roce import RTO_FLOOR_US
from fabricsim.nic.nic import Nic
from fabricsim.nic.pdc import LOST, OUT, Pdc
from fabricsim.transport.base import Transport
from fabricsim.transport.rc import RC_COUNTERS, RC_SUMMARY, configure_rc

if TYPE_CHECKING:
    from fabricsim.cc.base import CongestionControl
    from fabricsim.config.models import NicConfig
    from fabricsim.nic.pdc import NicEnv
    from fabricsim.packetsim.packets import Packet

WINDOW_CAP_BDP = 1.0
"""IRN's BDP-FC: a PDC's new PSNs stay within this many BDPs (in full packets) of its first
unacknowledged one."""


class RoceSrNic(Nic):
    """A RoCE receiver with selective repeat: out-of-order placement, a NAK per gap arrival."""

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
        if psn < cum or (psn > cum and (rx.win >> (psn - cum)) & 1):
            rx.dups += 1
            self.duplicates += 1
            urgent = True
        elif psn > cum:  # placed out of order and held in the bitmap
            self._out_of_order(rx, psn - cum)
            if self._placed(pdc, rx, pkt):
                urgent = True
            else:  # every out-of-order arrival NAKs, with the SACK of what is held
                self._nak(pkt, pdc, rx, now)
                return
        else:
            self._advance(rx, cum)
            if self._placed(pdc, rx, pkt):
                urgent = True
        self._answer(pkt, pdc, rx, psn, urgent)


class RoceSrPdc(Pdc):
    """The sender of a selective-repeat queue pair: holes resent, a BDP window on new PSNs."""

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
        super().__init__(env, nic, flow, index, dst, size, src_port, cc, rate_cap_bps)
        cap = env.window_cap_bdp
        if cap > 0:
            self.cap_pkts = max(1, math.ceil(cap * cc.params.bdp_bytes / self.wire_full))
        else:
            self.cap_pkts = self.npkts + 1  # no cap

    def next_packet(self) -> Packet | None:
        rq = self.retx
        if rq:
            st = self.st
            while rq and st[rq[0]] != LOST:
                rq.popleft()
        if not rq and self.next_psn - self.una >= self.cap_pkts:
            return None  # BDP-FC: feedback brings it back into the round
        return Pdc.next_packet(self)

    def on_nack(self, pkt: Packet) -> None:
        ts = pkt.ts
        hi = pkt.sbase + pkt.sack.bit_length() - 1  # the highest PSN the receiver holds
        if self.closed:
            self.env.pool.put(pkt)
            return
        self.nic.naks_received += 1
        self.on_ack(pkt)  # the cumulative part and the SACK acknowledge as an ACK does
        if self.closed:
            return
        self.nic.nacks += 1
        st, sent = self.st, self.sent_ts
        for psn in range(self.una, min(hi, self.next_psn)):
            if st[psn] == OUT and sent[psn] < ts:
                self._lose(psn)
        if not self.in_active and self.retx:
            self.nic.activate(self)

    def _timeout(self, psn: int, entropy: int) -> None:
        if not self._retry(psn):
            return
        st, sent, t0 = self.st, self.sent_ts, self.sent_ts[psn]
        for p in range(self.una, self.next_psn):  # every hole sent no later than it
            if st[p] == OUT and sent[p] <= t0:
                self._lose(p)
        self.cc.on_timeout(self.env.sim.now)


class RoceSr(Transport):
    """RoCE with selective repeat (IRN-style): out-of-order placement, holes resent, no PFC."""

    name = "roce_sr"
    label = "RoCE-SR"
    help = (
        "RoCE with selective repeat (IRN-style): out-of-order placement with a bitmap, "
        "holes resent on NAK, a BDP window, no PFC needed (unset: nic.cc dcqcn)"
    )
    receive_rule = "out of order, SACK and a NAK per out-of-order arrival"
    nic_class = RoceSrNic
    pdc_class = RoceSrPdc
    counters = RC_COUNTERS
    summary_counters = RC_SUMMARY
    roce_fabric = sends_cnps = True
    window_cap_bdp = WINDOW_CAP_BDP
    rto_floor_us = RTO_FLOOR_US

    def rto_floor_us_for(self, pfc: bool) -> float:
        """RoCE's 4 ms floor only over PFC (its pauses can hold a packet far longer than the
        buffers' drain time); lossy, the engine's RTO (IRN's point: a short timeout)."""
        return self.rto_floor_us if pfc else 0.0

    def configure(self, env: NicEnv, cfg: NicConfig) -> None:
        super().configure(env, cfg)
        configure_rc(env, cfg)
