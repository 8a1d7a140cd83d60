"""NSCC-style congestion control: a byte window driven by ECN echoes and queueing delay.

A pure state machine after the Ultra Ethernet NSCC design as publicly described (see
``docs/nscc.md`` for the algorithm, the defaults and their reasoning, and what differs from the
UEC specification).  The packet engine calls :meth:`Nscc.on_ack`, :meth:`Nscc.on_nack` and
:meth:`Nscc.on_timeout` with integer picosecond timestamps and reads ``cwnd_bytes``; there is no
event loop inside and no randomness, so a sequence of calls always gives the same windows.

Each unambiguous ACK measures ``delay = rtt - base_rtt`` and takes one of four actions:

============  ==================  =========================================================
ECN echo      delay vs target     action
============  ==================  =========================================================
no            below               proportional increase (fast increase after a window near 0)
no            at or above         fair (additive) increase
yes           at or above         multiplicative decrease, at most once per base RTT
yes           below               no change (left to load balancing)
============  ==================  =========================================================

Increases accumulate and are applied once per base RTT or once per window of ACKed bytes.
Quick adapt cuts the window to the bytes ACKed in the last base-RTT period after a NACK, a
timeout or a very high delay.

Examples
--------
>>> from fabricsim.cc.base import CcParams
>>> cc = Nscc(CcParams(100e9, 6_000_000, 4184, 75_000))
>>> cc.cwnd_bytes, cc.nscc.target_delay_ps
(75000.0, 2838880)
>>> cc.on_ack(0, 4184, 12_000_000, ecn=True, inflight_bytes=70_000)  # far above target
>>> round(cc.cwnd_bytes)
55243
>>> cc.on_nack(1_000, 4184); round(cc.cwnd_bytes)
51059
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from fabricsim.cc.base import CcParams, CongestionControl, register_cc
from fabricsim.config.nscc import NsccConfig
from fabricsim.errors import ConfigError
from fabricsim.units import PS_PER_S, serialization_ps, us_to_ps

# Defaults, as multiples of the path's BDP, base RTT or one packet's serialization time.
TARGET_RTT_FRACTION = 0.25  # target queueing delay: this fraction of the base RTT ...
TARGET_PACKETS = 4  # ... plus this many full packets' serialization at line rate
MAX_CWND_BDP = 1.5  # window ceiling (raised to BDP + target queue + 1 MTU if larger)
PROPORTIONAL_INCREASE_BDP = 0.1  # per base RTT at zero delay
FAIR_INCREASE_BDP = 0.02  # per base RTT, above the target delay
QA_DELAY_TARGETS = 4  # "very high delay" for quick adapt, in target delays


@dataclass(frozen=True, slots=True)
class NsccParams:
    """NSCC knobs; build with :meth:`from_cc` to derive the defaults from the path.

    Attributes
    ----------
    mtu_bytes : int
        Wire bytes of one full packet; a timeout shrinks the window by this much.
    target_delay_ps : int
        Queueing delay (RTT minus base RTT) the controller steers towards, ps.
    min_cwnd_bytes, max_cwnd_bytes : float
        Window bounds, bytes.
    initial_cwnd_bytes : float
        Window at creation, bytes.
    proportional_increase_bytes : float
        Window growth per base RTT while the delay is zero; scaled down linearly to nothing
        at the target delay, bytes.
    fair_increase_bytes : float
        Additive window growth per base RTT when the delay is at or above target without
        ECN, bytes.
    fast_increase_delay_ps : int
        A delay at or below this counts as "near zero" for fast increase, ps.
    fast_increase_gain : float
        In fast increase each ACK grows the window by this fraction of the ACKed bytes, on
        top of the proportional increase (0.5: the window grows 1.5 x per round trip).
    md_gain : float
        Multiplicative decrease: the window is multiplied by
        ``1 - md_gain * (avg_delay - target) / avg_delay`` ...
    md_min_factor : float
        ... but never by less than this factor.
    md_wait_sampled_rtt : bool
        If True, after a decrease the next one also waits for the RTT sample that triggered
        it (so packets sent after the cut can report back); if False, only one base RTT.
    delay_ewma_gain : float
        Weight of each new delay sample in the averaged delay (per ACK).
    qa_delay_ps : int
        A delay sample at or above this arms quick adapt, ps.
    additive_increase_bytes : float
        Added to the window once per base RTT whatever the signals (htsim's eta), bytes.
    qa_gate_bytes : float or None
        Quick adapt cuts only if the period delivered less than this; None: less than the
        window, bytes.
    qa_period_extra_ps : int
        A quick-adapt period lasts a base RTT plus this, ps.
    adjust_bytes : float or None
        Pending increases are applied every this many ACKed bytes (or per base RTT); None:
        every window of ACKed bytes.
    delay_ewma_unmarked_cap : bool
        A sample above target on an ACK without ECN enters the average as base RTT / 4.
    nack_delay_sample : bool
        A NACK enters the average as a delay sample of the initial base RTT.
    delay_ewma_from_zero : bool
        The averaged delay starts at 0 (else at the first sample).
    ambiguous_ack_avg_delay : bool
        An ACK without an RTT sample acts on the averaged delay (else it takes no action).
    base_rtt_from_nack : bool
        A NACK's RTT may lower the base RTT.
    max_cwnd_follows_base_rtt : bool
        The window ceiling and the quick-adapt gate scale with the base RTT as it falls.
    """

    mtu_bytes: int
    target_delay_ps: int
    min_cwnd_bytes: float
    max_cwnd_bytes: float
    initial_cwnd_bytes: float
    proportional_increase_bytes: float
    fair_increase_bytes: float
    fast_increase_delay_ps: int
    fast_increase_gain: float
    md_gain: float
    md_min_factor: float
    md_wait_sampled_rtt: bool
    delay_ewma_gain: float
    qa_delay_ps: int
    additive_increase_bytes: float = 0.0
    qa_gate_bytes: float | None = None
    qa_period_extra_ps: int = 0
    adjust_bytes: float | None = None
    delay_ewma_unmarked_cap: bool = False
    nack_delay_sample: bool = False
    delay_ewma_from_zero: bool = False
    ambiguous_ack_avg_delay: bool = False
    base_rtt_from_nack: bool = False
    max_cwnd_follows_base_rtt: bool = False

    def __post_init__(self) -> None:
        checks = [
            ("mtu_bytes", self.mtu_bytes > 0, "must be > 0"),
            ("target_delay_ps", self.target_delay_ps > 0, "must be > 0"),
            ("min_cwnd_bytes", self.min_cwnd_bytes > 0, "must be > 0"),
            ("max_cwnd_bytes", self.max_cwnd_bytes >= self.min_cwnd_bytes, ">= min_cwnd_bytes"),
            (
                "initial_cwnd_bytes",
                self.min_cwnd_bytes <= self.initial_cwnd_bytes <= self.max_cwnd_bytes,
                "must lie in [min_cwnd_bytes, max_cwnd_bytes]",
            ),
            ("proportional_increase_bytes", self.proportional_increase_bytes >= 0, ">= 0"),
            ("fair_increase_bytes", self.fair_increase_bytes >= 0, ">= 0"),
            ("fast_increase_delay_ps", self.fast_increase_delay_ps >= 0, ">= 0"),
            ("fast_increase_gain", self.fast_increase_gain >= 0, ">= 0"),
            ("md_gain", 0 < self.md_gain <= 1, "must lie in (0, 1]"),
            ("md_min_factor", 0 < self.md_min_factor <= 1, "must lie in (0, 1]"),
            ("delay_ewma_gain", 0 < self.delay_ewma_gain <= 1, "must lie in (0, 1]"),
            ("qa_delay_ps", self.qa_delay_ps > self.target_delay_ps, "> target_delay_ps"),
            ("additive_increase_bytes", self.additive_increase_bytes >= 0, ">= 0"),
            ("qa_period_extra_ps", self.qa_period_extra_ps >= 0, ">= 0"),
        ]
        for name, ok, allowed in checks:
            if not ok:
                raise ConfigError(f"nscc.{name}: {getattr(self, name)!r} is invalid; {allowed}")

    @classmethod
    def from_cc(cls, cc: CcParams, **overrides: Any) -> NsccParams:
        """The NIC's ``nic.nscc`` keys (or their defaults) on this path, then ``overrides``.

        Sizes in BDPs become bytes of ``cc.bdp_bytes``, times in µs become ps; a value left
        null is derived from the path.  Derived values follow the overrides they depend on (a
        larger ``target_delay_ps`` raises ``qa_delay_ps`` and the window ceiling).

        Examples
        --------
        >>> cc = CcParams(100e9, 6_000_000, 4184, 75_000)
        >>> p = NsccParams.from_cc(cc, target_delay_ps=3_000_000)
        >>> p.qa_delay_ps, p.max_cwnd_bytes
        (12000000, 116684.0)
        """
        allowed = {f.name for f in fields(cls)}
        for key in sorted(set(overrides) - allowed):
            raise ConfigError(
                f"nscc.{key}: unknown parameter; allowed: {', '.join(sorted(allowed))}"
            )
        k = cc.nic.nscc if cc.nic is not None else NsccConfig.model_validate({})
        mtu = int(overrides.get("mtu_bytes", cc.mtu_bytes))
        packet_ps = serialization_ps(mtu, max(1, int(cc.line_rate_bps)))
        spec_target = int(cc.base_rtt_ps * TARGET_RTT_FRACTION) + TARGET_PACKETS * packet_ps
        target = int(
            overrides.get(
                "target_delay_ps",
                spec_target if k.target_delay_us is None else us_to_ps(k.target_delay_us),
            )
        )
        bdp = float(cc.bdp_bytes)
        target_bytes = cc.line_rate_bps * target / PS_PER_S / 8
        min_cwnd = float(overrides.get("min_cwnd_bytes", mtu))
        initial = None if k.initial_cwnd_bdp is None else k.initial_cwnd_bdp * bdp
        ceiling = max(MAX_CWND_BDP * bdp, bdp + target_bytes + mtu, initial or 0.0)
        max_cwnd = float(
            overrides.get(
                "max_cwnd_bytes", ceiling if k.max_cwnd_bdp is None else k.max_cwnd_bdp * bdp
            )
        )
        values = {
            "mtu_bytes": mtu,
            "target_delay_ps": target,
            "min_cwnd_bytes": min_cwnd,
            "max_cwnd_bytes": max_cwnd,
            "initial_cwnd_bytes": min(max_cwnd, max(min_cwnd, bdp if initial is None else initial)),
            "fast_increase_delay_ps": (
                packet_ps
                if k.fast_increase_delay_us is None
                else us_to_ps(k.fast_increase_delay_us)
            ),
            "qa_gate_bytes": None if k.qa_gate_bits is None else max_cwnd / 2**k.qa_gate_bits,
            "adjust_bytes": None if k.adjust_bytes_mtus is None else k.adjust_bytes_mtus * mtu,
            **_scaled(k, bdp, target),
        }
        values.update(overrides)
        return cls(**values)


def _scaled(k: NsccConfig, bdp: float, target_ps: int) -> dict[str, Any]:
    """The keys that are plain numbers, or multiples of the BDP or of the target delay."""
    return {
        "proportional_increase_bytes": k.proportional_increase_bdp * bdp,
        "fair_increase_bytes": k.fair_increase_bdp * bdp,
        "additive_increase_bytes": k.additive_increase_bdp * bdp,
        "fast_increase_gain": k.fast_increase_gain,
        "md_gain": k.md_gain,
        "md_min_factor": k.md_min_factor,
        "md_wait_sampled_rtt": k.md_wait_sampled_rtt,
        "delay_ewma_gain": k.delay_ewma_gain,
        "delay_ewma_unmarked_cap": k.delay_ewma_unmarked_cap,
        "nack_delay_sample": k.nack_delay_sample,
        "delay_ewma_from_zero": k.delay_ewma_from_zero,
        "ambiguous_ack_avg_delay": k.ambiguous_ack_avg_delay,
        "base_rtt_from_nack": k.base_rtt_from_nack,
        "max_cwnd_follows_base_rtt": k.max_cwnd_follows_base_rtt,
        "qa_delay_ps": int(k.qa_delay_targets * target_ps),
        "qa_period_extra_ps": int(k.qa_period_targets * target_ps),
    }


class Nscc(CongestionControl):
    """NSCC-style window control (window only: ``pacing_bps`` stays None).

    Parameters
    ----------
    params : CcParams
        What the sender knows of its path (line rate, initial base RTT, MTU, BDP).
    nscc : NsccParams, optional
        Knobs; default ``NsccParams.from_cc(params)``.

    Attributes
    ----------
    cwnd_bytes : float
        The sending window, bytes, always within ``[min_cwnd_bytes, max_cwnd_bytes]``.
    base_rtt_ps : int
        The lowest RTT seen (starts at ``params.base_rtt_ps``), ps.
    avg_delay_ps : float
        EWMA of the queueing delay samples, ps.
    pending_increase_bytes : float
        Increase accumulated since the last application to the window, bytes.
    fast_increase : bool
        Whether fast increase is engaged.
    decreases, quick_adapts, fast_increases : int
        How many multiplicative decreases, quick-adapt cuts and fast-increase entries so far.
    """

    name = "nscc"

    def __init__(self, params: CcParams, nscc: NsccParams | None = None) -> None:
        super().__init__(params)
        self.nscc = nscc if nscc is not None else NsccParams.from_cc(params)
        self.cwnd_bytes = float(self.nscc.initial_cwnd_bytes)
        self.pacing_bps = None
        self.avg_delay_ps = 0.0  # starts at the first sample
        self._samples = 0
        self.pending_increase_bytes = 0.0
        self.fast_increase = False
        self.decreases = 0
        self.quick_adapts = 0
        self.fast_increases = 0
        self.acked_in_period_bytes = 0  # bytes ACKed since the quick-adapt period began
        self._near_zero_bytes = 0  # bytes ACKed in a row with near-zero delay
        self._acked_since_apply = 0  # bytes ACKed since increases were last applied
        self._apply_start_ps: int | None = None  # when increases were last applied
        self._period_start_ps: int | None = None  # when the quick-adapt period began
        self._qa_armed = False
        self._hold_until_ps = 0  # after a quick-adapt cut, delay actions pause until then
        self._last_md_ps: int | None = None
        self._md_gap_ps = 0
        self._additive_ps = 0  # when the additive increase was last applied
        self.max_cwnd_bytes = self.nscc.max_cwnd_bytes  # follows the base RTT if asked to
        self.qa_gate_bytes = self.nscc.qa_gate_bytes

    # ------------------------------------------------------------------ engine calls

    def on_ack(
        self, now_ps: int, acked_bytes: int, rtt_ps: int | None, ecn: bool, inflight_bytes: int
    ) -> None:
        """An ACK for ``acked_bytes`` arrived; ``rtt_ps`` is an unambiguous sample or None.

        Ambiguous ACKs (``rtt_ps`` None, e.g. for a retransmitted packet) count towards the
        quick-adapt period and the increase window but take no delay or ECN action (with
        ``ambiguous_ack_avg_delay``: they act on the averaged delay).
        """
        self._tick(now_ps)
        self.acked_in_period_bytes += acked_bytes
        self._acked_since_apply += acked_bytes
        if rtt_ps is not None:
            self._on_sample(now_ps, acked_bytes, rtt_ps, ecn)
        elif self.nscc.ambiguous_ack_avg_delay and self._samples:
            self._act(now_ps, acked_bytes, int(self.avg_delay_ps), ecn)
        self._maybe_apply(now_ps)
        self._clamp()

    def on_nack(self, now_ps: int, nacked_bytes: int, rtt_ps: int | None = None) -> None:
        """A NACK (trimmed packet): shrink by ``nacked_bytes`` and arm quick adapt.

        With ``base_rtt_from_nack`` its ``rtt_ps`` may lower the base RTT: a header trimmed on
        the way returns sooner than its full packet would have.
        """
        if self.nscc.base_rtt_from_nack and rtt_ps is not None and rtt_ps < self.base_rtt_ps:
            self._lower_base_rtt(rtt_ps)
        if self.nscc.nack_delay_sample:  # a trimmed packet met a full queue: about one RTT
            self._average(self.params.base_rtt_ps)
        self._on_loss(now_ps, nacked_bytes)

    def on_timeout(self, now_ps: int) -> None:
        """A retransmission timeout: shrink by one packet (MTU) and arm quick adapt."""
        self._on_loss(now_ps, self.nscc.mtu_bytes)

    # ------------------------------------------------------------------ internals

    def _tick(self, now_ps: int) -> None:
        """Start the clocks on the first call; close the quick-adapt period once it is over."""
        if self._period_start_ps is None or self._apply_start_ps is None:
            self._period_start_ps = now_ps
            self._apply_start_ps = now_ps
            return
        if now_ps - self._period_start_ps >= self.base_rtt_ps + self.nscc.qa_period_extra_ps:
            if self._qa_armed:
                self._quick_adapt(now_ps)
            self._period_start_ps = now_ps
            self.acked_in_period_bytes = 0

    def _quick_adapt(self, now_ps: int) -> None:
        """Cut the window to what was ACKed in the period that just ended (if under the gate)."""
        self._qa_armed = False
        achieved = float(self.acked_in_period_bytes)
        gate = self.qa_gate_bytes
        if achieved >= (self.cwnd_bytes if gate is None else min(gate, self.cwnd_bytes)):
            return
        self.cwnd_bytes = max(self.nscc.min_cwnd_bytes, achieved)
        self.quick_adapts += 1
        self._hold_until_ps = now_ps + self.base_rtt_ps
        self._restart_increase(now_ps)
        self._stop_fast_increase()

    def _on_sample(self, now_ps: int, acked_bytes: int, rtt_ps: int, ecn: bool) -> None:
        """Delay bookkeeping and the four-quadrant action for one unambiguous RTT sample."""
        p = self.nscc
        if rtt_ps < self.base_rtt_ps:
            self._lower_base_rtt(rtt_ps)
        delay = rtt_ps - self.base_rtt_ps
        if p.delay_ewma_unmarked_cap and not ecn and delay > p.target_delay_ps:
            self._average(self.base_rtt_ps / 4)
        else:
            self._average(delay)
        self._act(now_ps, acked_bytes, delay, ecn)

    def _act(self, now_ps: int, acked_bytes: int, delay: int, ecn: bool) -> None:
        """The four-quadrant action for one ACK whose queueing delay is ``delay``."""
        p = self.nscc
        if now_ps < self._hold_until_ps:  # ACKs of packets sent before the last cut
            self._stop_fast_increase()
            return
        if delay >= p.qa_delay_ps:
            self._qa_armed = True
        high = delay >= p.target_delay_ps
        if ecn and high:
            self._multiplicative_decrease(now_ps, self.base_rtt_ps + delay)
        elif ecn:
            self._stop_fast_increase()  # congestion on this path only: load balancing's job
        elif high:
            self._stop_fast_increase()
            self.pending_increase_bytes += p.fair_increase_bytes * acked_bytes / self.cwnd_bytes
        else:
            self._proportional_increase(acked_bytes, delay)

    def _lower_base_rtt(self, rtt_ps: int) -> None:
        """A new lowest RTT; with ``max_cwnd_follows_base_rtt`` the window ceiling (and the
        quick-adapt gate) scale with it, as a ceiling in BDPs of the measured path does."""
        self.base_rtt_ps = rtt_ps
        p = self.nscc
        if p.max_cwnd_follows_base_rtt:
            scale = rtt_ps / self.params.base_rtt_ps
            self.max_cwnd_bytes = max(p.min_cwnd_bytes, p.max_cwnd_bytes * scale)
            if p.qa_gate_bytes is not None:
                self.qa_gate_bytes = p.qa_gate_bytes * scale

    def _average(self, delay_ps: float) -> None:
        """Fold one delay sample into the averaged delay (the first sample sets it)."""
        if self._samples == 0 and not self.nscc.delay_ewma_from_zero:
            self.avg_delay_ps = float(delay_ps)
        else:
            self.avg_delay_ps += self.nscc.delay_ewma_gain * (delay_ps - self.avg_delay_ps)
        self._samples += 1

    def _proportional_increase(self, acked_bytes: int, delay_ps: int) -> None:
        """Grow in proportion to the room below target; fast increase near zero delay."""
        p = self.nscc
        if delay_ps <= p.fast_increase_delay_ps:
            if self.fast_increase:  # on top of the proportional increase below
                self.cwnd_bytes += p.fast_increase_gain * acked_bytes
            else:
                self._near_zero_bytes += acked_bytes
                if self._near_zero_bytes >= self.cwnd_bytes:
                    self.fast_increase = True
                    self.fast_increases += 1
        else:
            self._stop_fast_increase()
        room = (p.target_delay_ps - delay_ps) / p.target_delay_ps
        self.pending_increase_bytes += (
            p.proportional_increase_bytes * room * acked_bytes / self.cwnd_bytes
        )

    def _multiplicative_decrease(self, now_ps: int, rtt_ps: int) -> None:
        """Cut by how far the averaged delay exceeds target, at most once per base RTT.

        With ``md_wait_sampled_rtt`` the next cut also waits ``rtt_ps`` (the RTT now), so
        that it can see the effect of this one.
        """
        p = self.nscc
        self._stop_fast_increase()
        if self._last_md_ps is not None and now_ps < self._last_md_ps + self._md_gap_ps:
            return
        avg = self.avg_delay_ps
        if avg <= p.target_delay_ps:
            return  # the average has not caught up yet; the next ECN-marked ACK retries
        factor = max(p.md_min_factor, 1.0 - p.md_gain * (avg - p.target_delay_ps) / avg)
        self.cwnd_bytes *= factor
        self.decreases += 1
        self._last_md_ps = now_ps
        self._md_gap_ps = rtt_ps if p.md_wait_sampled_rtt else self.base_rtt_ps
        self._restart_increase(now_ps)

    def _on_loss(self, now_ps: int, lost_bytes: int) -> None:
        """Shared by NACK and timeout: shrink now, and quick adapt at the period's end."""
        self._tick(now_ps)
        self.cwnd_bytes -= lost_bytes
        if now_ps >= self._hold_until_ps:
            self._qa_armed = True
        self.pending_increase_bytes = 0.0
        self._stop_fast_increase()
        self._clamp()

    def _maybe_apply(self, now_ps: int) -> None:
        """Apply the pending increase once per window (or ``adjust_bytes``) of ACKed bytes
        or per base RTT; the additive increase at most once per base RTT."""
        assert self._apply_start_ps is not None
        p = self.nscc
        every = self.cwnd_bytes if p.adjust_bytes is None else p.adjust_bytes
        if self._acked_since_apply >= every or now_ps - self._apply_start_ps >= self.base_rtt_ps:
            self.cwnd_bytes += self.pending_increase_bytes
            if p.additive_increase_bytes and now_ps - self._additive_ps >= self.base_rtt_ps:
                self.cwnd_bytes += p.additive_increase_bytes
                self._additive_ps = now_ps
            self._restart_increase(now_ps)

    def _restart_increase(self, now_ps: int) -> None:
        self.pending_increase_bytes = 0.0
        self._acked_since_apply = 0
        self._apply_start_ps = now_ps

    def _stop_fast_increase(self) -> None:
        self.fast_increase = False
        self._near_zero_bytes = 0

    def _clamp(self) -> None:
        self.cwnd_bytes = min(self.max_cwnd_bytes, max(self.nscc.min_cwnd_bytes, self.cwnd_bytes))


# not as a decorator: the compiled build makes Nscc a C type, which takes none
register_cc("nscc", "NSCC: a window driven by ECN marks and queueing delay")(Nscc)
