"""DCQCN (Zhu et al., SIGCOMM 2015): RoCE's rate-based congestion control, the sender's side.

The congestion point is the switch's RED-like ECN marking at dequeue and the notification point
the RoCE receiver (one CNP per QP per ``nic.dcqcn.cnp_interval_us`` while marked packets
arrive, :mod:`fabricsim.nic.nic`); this module is the **reaction point**, a pure state machine
like every controller here: no events of its own.  Its timers are kept as deadlines and caught
up whenever it is called (each packet sent while it paces, each ACK and CNP), so the rates it
gives are those the timers would give, evaluated at the moment they are used.

State: the current rate ``RC`` (``pacing_bps``), the target rate ``RT`` and ``alpha``.

* **CNP**: ``RT = RC``; ``RC = max(RC x (1 - alpha / 2), min_rate)``;
  ``alpha = (1 - g) alpha + g``; the increase timer and byte counter restart from zero.
* **alpha timer**: every ``alpha_interval_us`` without a CNP, ``alpha = (1 - g) alpha``.
* **Increase events**: one every ``rate_timer_us`` (timer ``T``) and one every
  ``byte_counter_bytes`` sent (counter ``B``) since the last CNP.  With ``t`` timer and ``b``
  byte events so far: while ``max(t, b) < F`` fast recovery (``RC = (RT + RC) / 2``); once
  ``min(t, b) > F`` hyper increase (``RT += hai``); otherwise additive increase (``RT += ai``),
  each followed by ``RC = (RT + RC) / 2``; rates never pass the line rate.  Without a byte
  counter only the timer counts (``t`` stands for both), as in ns-3.

A new QP starts at line rate with ``alpha = initial_alpha``.  The window is unlimited: the rate
alone governs (``cwnd_bytes`` is infinite).

Examples
--------
>>> from fabricsim.cc.base import CcParams
>>> from fabricsim.config.models import NicConfig
>>> cc = Dcqcn(CcParams(100e9, 10_000_000, 4184, 125_000, nic=NicConfig()))
>>> cc.pacing_bps / 1e9
100.0
>>> cc.on_cnp(0); cc.pacing_bps / 1e9          # alpha 1: the rate halves
50.0
>>> cc.on_send(55_000_000, 4184); round(cc.pacing_bps / 1e9, 3)  # one timer event: recovery
75.0
"""

from __future__ import annotations

from typing import Any

from fabricsim.cc.base import CcParams, CongestionControl, register_cc
from fabricsim.config.roce import DcqcnConfig
from fabricsim.units import us_to_ps

NEVER = 1 << 62


class Dcqcn(CongestionControl):
    """DCQCN's reaction point (see the module docstring); ``pacing_bps`` is the current rate.

    Attributes
    ----------
    rate_bps : float
        The current rate RC, bit/s (``pacing_bps`` is the same value).
    target_bps : float
        The target rate RT, bit/s.
    alpha : float
        The congestion estimate.
    cnps, decreases, increase_events : int
        CNPs received, rate decreases and increase events so far.
    """

    name = "dcqcn"

    def __init__(self, params: CcParams) -> None:
        super().__init__(params)
        cfg = params.nic.dcqcn if params.nic is not None else DcqcnConfig.model_validate({})
        self.line_bps = float(params.line_rate_bps)
        self.cwnd_bytes = float("inf")
        self.rate_bps = self.line_bps  # RC; ``pacing_bps`` shows it to the sender
        self.pacing_bps = self.rate_bps
        self.target_bps = self.line_bps
        self.alpha = float(cfg.initial_alpha)
        self.g = float(cfg.g)
        self.alpha_ps = max(us_to_ps(cfg.alpha_interval_us), 1)
        self.timer_ps = max(us_to_ps(cfg.rate_timer_us), 1)
        self.bytes_per_event = cfg.byte_counter_bytes or 0
        self.frs = cfg.fast_recovery_steps
        self.clamp = cfg.clamp_target_rate
        self.ai_bps = cfg.ai_mbps * 1e6
        self.hai_bps = cfg.hai_mbps * 1e6
        self.min_bps = min(cfg.min_rate_mbps * 1e6, self.line_bps)
        self.alpha_at = NEVER  # next alpha decay (armed by the first CNP)
        self.timer_at = NEVER  # next timer increase event (armed while below line rate)
        self.t_events = self.b_events = 0
        self.sent_bytes = 0  # since the last CNP (byte counter)
        self.cnps = self.decreases = self.increase_events = 0

    # -- events -------------------------------------------------------------------------------
    def on_cnp(self, now_ps: int) -> None:
        self._catch_up(now_ps)
        self.cnps += 1
        self.decreases += 1
        rate = self.rate_bps
        if self.clamp or self.t_events or self.b_events:  # ns-3: not within a run of CNPs
            self.target_bps = rate
        self.rate_bps = max(rate * (1.0 - self.alpha / 2.0), self.min_bps)
        self.pacing_bps = self.rate_bps
        self.alpha = (1.0 - self.g) * self.alpha + self.g
        self.alpha_at = now_ps + self.alpha_ps
        self.timer_at = now_ps + self.timer_ps
        self.t_events = self.b_events = 0
        self.sent_bytes = 0

    def on_send(self, now_ps: int, wire_bytes: int) -> None:
        self._catch_up(now_ps)
        if not self.bytes_per_event or self.rate_bps >= self.line_bps:
            return
        self.sent_bytes += wire_bytes
        while self.sent_bytes >= self.bytes_per_event:
            self.sent_bytes -= self.bytes_per_event
            self._increase(byte_event=True)

    def on_ack(
        self, now_ps: int, acked_bytes: int, rtt_ps: int | None, ecn: bool, inflight_bytes: int
    ) -> None:
        self._catch_up(now_ps)  # ECN echoes are not DCQCN's signal: CNPs are

    def on_timeout(self, now_ps: int) -> None:
        self._catch_up(now_ps)

    # -- timers ---------------------------------------------------------------------------------
    def _catch_up(self, now_ps: int) -> None:
        """Apply every alpha decay and timer increase event due by ``now_ps``, in time order."""
        while True:
            at = min(self.alpha_at, self.timer_at)
            if at > now_ps:
                return
            if self.alpha_at == at:
                self.alpha *= 1.0 - self.g
                self.alpha_at = at + self.alpha_ps
                if self.alpha < 1e-9:  # nothing left to decay: disarm
                    self.alpha = 0.0
                    self.alpha_at = NEVER
            else:
                self.timer_at = at + self.timer_ps
                self._increase(byte_event=False)

    def _increase(self, byte_event: bool) -> None:
        """One rate-increase event (timer or byte counter)."""
        self.increase_events += 1
        t, b = self.t_events, self.b_events
        if not self.bytes_per_event:
            b = t  # ns-3: the timer alone counts
        line = self.line_bps
        if max(t, b) < self.frs:
            pass  # fast recovery: towards the target rate
        elif min(t, b) > self.frs:
            self.target_bps = min(self.target_bps + self.hai_bps, line)
        else:
            self.target_bps = min(self.target_bps + self.ai_bps, line)
        self.rate_bps = min((self.target_bps + self.rate_bps) / 2.0, line)
        if byte_event:
            self.b_events += 1
        else:
            self.t_events += 1
        if self.rate_bps >= line * (1.0 - 1e-12):  # back at line rate: nothing to recover
            self.rate_bps = self.target_bps = line
            self.timer_at = NEVER
        self.pacing_bps = self.rate_bps

    def state(self) -> dict[str, Any]:
        """The controller's state (for tests and traces)."""
        return {
            "rate_bps": self.rate_bps,
            "target_bps": self.target_bps,
            "alpha": self.alpha,
            "cnps": self.cnps,
        }


register_cc("dcqcn", "DCQCN rate control (RoCE: reacts to CNPs; needs nic.transport roce)")(Dcqcn)
