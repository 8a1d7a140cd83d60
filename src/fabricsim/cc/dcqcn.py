"""DCQCN (Zhu et al., SIGCOMM 2015): RoCE's rate-based congestion control, the sender's side.

The congestion point is the switch's RED-like ECN marking at dequeue and the notification point
the RoCE receiver (one CNP per QP per ``nic.dcqcn.cnp_interval_us`` while marked packets
arrive, :mod:`fabricsim.nic.nic`); this module is the **reaction point**, a pure state machine
like every controller here: no events of its own.  Its timers are kept as deadlines and caught
up whenever it is called (each packet sent while it paces, each ACK and CNP), in time order, so
the rates it gives are those the timers would give, evaluated at the moment they are used.

State: the current rate ``RC`` (``pacing_bps``), the target rate ``RT`` and ``alpha``.

* **CNP**: ``alpha = (1 - g) alpha + g`` and the alpha timer restarts; then a **rate cut**,
  at most one per ``rate_decrease_interval_us``: a CNP inside the interval after a cut is held
  and cuts when the interval ends (one cut for any number of CNPs held).  A cut: ``RT = RC``
  (see ``clamp_target_rate``); ``RC = max(RC x (1 - alpha / 2), min_rate)``; the increase
  timer, the byte counter and both event counts restart from zero.
* **alpha timer**: every ``alpha_interval_us`` without a CNP, ``alpha = (1 - g) alpha``.
* **Increase events**: one every ``rate_timer_us`` (timer) and one every
  ``byte_counter_bytes`` sent (byte counter) since the last cut.  With ``t`` timer and ``b``
  byte events before this one and ``F = fast_recovery_steps``: while ``max(t, b) < F`` fast
  recovery (``RC = (RT + RC) / 2``); once ``min(t, b) > F`` hyper increase
  (``RT += i x hai`` with ``i = min(t, b) - F``, the QCN rule the paper follows); otherwise
  additive increase (``RT += ai``), each followed by ``RC = (RT + RC) / 2``; rates never pass
  the line rate.  Without a byte counter only the timer counts (``b = t``).

A new QP starts at line rate with ``alpha = initial_alpha``.  The window is unlimited: the rate
alone governs (``cwnd_bytes`` is infinite).

Examples
--------
>>> from fabricsim.cc.base import CcParams
>>> from fabricsim.config.models import NicConfig
>>> nic = NicConfig.model_validate({"dcqcn": {"initial_alpha": 1.0, "byte_counter_bytes": None}})
>>> cc = Dcqcn(CcParams(100e9, 10_000_000, 4184, 125_000, nic=nic))
>>> cc.pacing_bps / 1e9
100.0
>>> cc.on_cnp(0); cc.pacing_bps / 1e9          # alpha 1: the rate halves
50.0
>>> cc.on_send(300_000_000, 4184); round(cc.pacing_bps / 1e9, 3)  # one timer event: recovery
75.0
"""

from __future__ import annotations

from typing import Any

from fabricsim.cc.base import CcParams, CongestionControl, register_cc
from fabricsim.config.roce import DcqcnConfig
from fabricsim.units import us_to_ps

NEVER = 1 << 62
MAX_GAP_EVENTS = 64
"""Timer events a paced gap may look ahead over (beyond: paced at the rate reached)."""


class Dcqcn(CongestionControl):
    """DCQCN's reaction point (see the module docstring); ``pacing_bps`` is the current rate.

    Attributes
    ----------
    rate_bps : float
        The current rate RC, bit/s (``pacing_bps`` is the same value).
    target_bps : float
        The target rate RT, bit/s.
    alpha : float
        The congestion estimate (as of the last call: its decays are caught up then).
    cnps, decreases, increase_events, hyper_events : int
        CNPs received, rate cuts, increase events and hyper-increase events so far.
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
        self.dec_ps = us_to_ps(cfg.rate_decrease_interval_us)
        self.bytes_per_event = cfg.byte_counter_bytes or 0
        self.frs = cfg.fast_recovery_steps
        self.clamp = cfg.clamp_target_rate
        self.ai_bps = cfg.ai_mbps * 1e6
        self.hai_bps = cfg.hai_mbps * 1e6
        self.min_bps = min(cfg.min_rate_mbps * 1e6, self.line_bps)
        self.alpha_at = NEVER  # next alpha decay (armed by the first CNP)
        self.timer_at = NEVER  # next timer increase event (armed while below line rate)
        self.dec_at = 0  # the next cut may happen from here on
        self.held = False  # a CNP arrived inside the decrease interval: cut at ``dec_at``
        self.t_events = self.b_events = 0
        self.sent_bytes = 0  # since the last cut (byte counter)
        self.cnps = self.decreases = self.increase_events = self.hyper_events = 0

    # -- events -------------------------------------------------------------------------------
    def on_cnp(self, now_ps: int) -> None:
        self._catch_up(now_ps)
        self.cnps += 1
        alpha = self.alpha
        if now_ps >= self.dec_at:
            self._cut(now_ps)  # with alpha as it was before this CNP (the paper's order)
        else:
            self.held = True  # cut once when the interval ends
        self.alpha = (1.0 - self.g) * alpha + self.g
        self.alpha_at = now_ps + self.alpha_ps

    def on_send(self, now_ps: int, wire_bytes: int) -> None:
        self._catch_up(now_ps)
        if self.rate_bps >= self.line_bps:
            return
        if not self.bytes_per_event:
            self.pacing_bps = self._gap_rate(now_ps, wire_bytes)
            return
        self.sent_bytes += wire_bytes
        while self.sent_bytes >= self.bytes_per_event:
            self.sent_bytes -= self.bytes_per_event
            self._increase(byte_event=True)
        self.pacing_bps = self._gap_rate(now_ps, wire_bytes)

    def on_ack(
        self, now_ps: int, acked_bytes: int, rtt_ps: int | None, ecn: bool, inflight_bytes: int
    ) -> None:
        self._catch_up(now_ps)  # ECN echoes are not DCQCN's signal: CNPs are

    def on_timeout(self, now_ps: int) -> None:
        self._catch_up(now_ps)

    # -- timers ---------------------------------------------------------------------------------
    def _catch_up(self, now_ps: int) -> None:
        """Apply the held cut and every timer increase event due by ``now_ps``, in time order,
        then alpha's decays."""
        while True:
            if self.held and self.dec_at <= self.timer_at:
                if self.dec_at > now_ps:
                    break
                self.held = False
                self._decay_alpha(self.dec_at)
                self._cut(self.dec_at)
            elif self.timer_at <= now_ps:
                self.timer_at += self.timer_ps
                self._increase(byte_event=False)
            else:
                break
        self._decay_alpha(now_ps)

    def _decay_alpha(self, now_ps: int) -> None:
        """Every alpha period ended by ``now_ps`` without a CNP: ``alpha x= (1 - g)``."""
        at = self.alpha_at
        if at <= now_ps:
            n = (now_ps - at) // self.alpha_ps + 1
            self.alpha *= (1.0 - self.g) ** n
            self.alpha_at = at + n * self.alpha_ps

    def _cut(self, now_ps: int) -> None:
        """One rate decrease at ``now_ps``."""
        self.decreases += 1
        rate = self.rate_bps
        if self.clamp or self.t_events or self.b_events:  # not within a run of cuts (NICs)
            self.target_bps = rate
        self.rate_bps = max(rate * (1.0 - self.alpha / 2.0), self.min_bps)
        self.pacing_bps = self.rate_bps
        self.dec_at = now_ps + self.dec_ps
        self.timer_at = now_ps + self.timer_ps
        self.t_events = self.b_events = 0
        self.sent_bytes = 0

    def _increase(self, byte_event: bool) -> None:
        """One rate-increase event (timer or byte counter)."""
        self.increase_events += 1
        t, b = self.t_events, self.b_events
        if not self.bytes_per_event:
            b = t  # the timer alone counts
        if min(t, b) > self.frs:
            self.hyper_events += 1
        self.rate_bps, self.target_bps = self._step(self.rate_bps, self.target_bps, t, b)
        if byte_event:
            self.b_events += 1
        else:
            self.t_events += 1
        if self.rate_bps >= self.line_bps:  # back at line rate: nothing to recover
            self.timer_at = NEVER
        self.pacing_bps = self.rate_bps

    def _step(self, rate: float, target: float, t: int, b: int) -> tuple[float, float]:
        """(RC, RT) after an increase event with ``t`` timer and ``b`` byte events before it."""
        line = self.line_bps
        low = min(t, b)
        if max(t, b) < self.frs:
            pass  # fast recovery: towards the target rate
        elif low > self.frs:  # hyper increase, stage i = min(t, b) - F
            target = min(target + (low - self.frs) * self.hai_bps, line)
        else:
            target = min(target + self.ai_bps, line)
        rate = min((target + rate) / 2.0, line)
        if rate >= line * (1.0 - 1e-12):
            return line, line
        return rate, target

    def _gap_rate(self, now_ps: int, wire_bytes: int) -> float:
        """The rate that paces this packet: RC, or RC's mean over the packet's gap when timer
        increase events fall inside it (at a low rate one gap spans several timer periods)."""
        rate = self.rate_bps
        at = self.timer_at
        bits = wire_bytes * 8.0
        if at >= NEVER or bits * 1e12 <= rate * (at - now_ps):
            return rate
        target, t, b = self.target_bps, self.t_events, self.b_events
        done = rate * (at - now_ps) / 1e12  # bits sent before the first event
        spent = float(at - now_ps)
        for _ in range(MAX_GAP_EVENTS):
            rate, target = self._step(rate, target, t, b if self.bytes_per_event else t)
            t += 1
            need = (bits - done) * 1e12 / rate
            if need <= self.timer_ps or rate >= self.line_bps:
                return bits * 1e12 / (spent + need)
            done += rate * self.timer_ps / 1e12
            spent += self.timer_ps
        return bits * 1e12 / spent

    def state(self) -> dict[str, Any]:
        """The controller's state (for tests and traces)."""
        return {
            "rate_bps": self.rate_bps,
            "target_bps": self.target_bps,
            "alpha": self.alpha,
            "cnps": self.cnps,
            "decreases": self.decreases,
        }


register_cc("dcqcn", "DCQCN rate control (RoCE: reacts to CNPs; needs nic.transport roce)")(Dcqcn)
