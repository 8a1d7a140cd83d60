"""NSCC tuning keys (``nic.nscc.*``): declared, with units and ranges, read only by ``nic.cc: nscc``.

Sizes are in bandwidth-delay products of the sender's path (line rate x initial base RTT) and
times in microseconds, so one setting means the same on any fabric.  ``null`` keeps a value
derived from the path (``docs/nscc.md`` gives every default and its reasoning); the
``htsim-uec`` preset sets htsim's values (``docs/htsim.md``).

Examples
--------
>>> NsccConfig().md_gain, NsccConfig(md_gain=0.8).md_gain
(0.5, 0.8)
>>> try:
...     NsccConfig(initial_cwnd_bdp=2.0, max_cwnd_bdp=1.5)
... except ValueError as exc:
...     print("must be <= max_cwnd_bdp (1.5)" in str(exc))
True
"""

from __future__ import annotations

from pydantic import Field, model_validator

from fabricsim.config.base import StrictModel


class NsccConfig(StrictModel):
    """NSCC's knobs (``nic.nscc``); every one has the spec's value as its default."""

    target_delay_us: float | None = Field(
        None,
        gt=0,
        le=1e6,
        description="queueing delay the window steers to, us; null: base RTT / 4 plus 4 "
        "packets' serialization",
    )
    initial_cwnd_bdp: float | None = Field(
        None, gt=0, le=1000, description="window at the start, x BDP; null: 1 BDP"
    )
    max_cwnd_bdp: float | None = Field(
        None,
        gt=0,
        le=1000,
        description="window ceiling, x BDP; null: 1.5 BDP (at least BDP + target queue + 1 "
        "MTU, and at least the initial window)",
    )
    md_gain: float = Field(
        0.5,
        gt=0,
        le=1,
        description="multiplicative decrease: cwnd x (1 - gain x (avg delay - target) / avg delay)",
    )
    md_min_factor: float = Field(
        0.5, gt=0, le=1, description="multiplicative decrease never cuts below this factor"
    )
    md_wait_sampled_rtt: bool = Field(
        True,
        description="the next decrease also waits the RTT sampled at this one (false: only "
        "one base RTT, as htsim)",
    )
    delay_ewma_gain: float = Field(
        0.125, gt=0, le=1, description="weight of each delay sample in the averaged delay"
    )
    delay_ewma_unmarked_cap: bool = Field(
        False,
        description="a delay above target on an ACK without ECN enters the average as base "
        "RTT / 4 (htsim)",
    )
    proportional_increase_bdp: float = Field(
        0.1,
        ge=0,
        le=100,
        description="growth per round trip at zero delay, x BDP (scaled to 0 at the target)",
    )
    fair_increase_bdp: float = Field(
        0.02, ge=0, le=100, description="growth per round trip above target without ECN, x BDP"
    )
    additive_increase_bdp: float = Field(
        0.0,
        ge=0,
        le=100,
        description="extra growth once per base RTT whatever the signals, x BDP (htsim's eta)",
    )
    fast_increase_delay_us: float | None = Field(
        None,
        ge=0,
        le=1e6,
        description="a delay at or below this is near zero (fast increase), us; null: one "
        "packet's serialization",
    )
    fast_increase_gain: float = Field(
        0.5,
        ge=0,
        le=100,
        description="fast increase: each near-zero ACK adds this fraction of its bytes",
    )
    qa_delay_targets: float = Field(
        4.0, gt=1, le=1e4, description="quick adapt arms at a delay of this many target delays"
    )
    qa_gate_bits: int | None = Field(
        None,
        ge=0,
        le=16,
        description="quick adapt cuts only if a period delivered less than the window "
        "ceiling / 2^bits (htsim 3); null: less than the window",
    )
    qa_period_targets: float = Field(
        0.0,
        ge=0,
        le=1e4,
        description="a quick-adapt period lasts a base RTT plus this many target delays",
    )
    adjust_bytes_mtus: float | None = Field(
        None,
        gt=0,
        le=1e6,
        description="increases are applied every this many MTUs ACKed (or per base RTT); "
        "null: every window ACKed",
    )
    nack_delay_sample: bool = Field(
        False,
        description="a NACK enters the averaged delay as a sample of one base RTT (htsim)",
    )

    delay_ewma_from_zero: bool = Field(
        False, description="the averaged delay starts at 0, not at the first sample (htsim)"
    )
    ambiguous_ack_avg_delay: bool = Field(
        False,
        description="an ACK without an RTT sample (of a retransmission) acts on the averaged "
        "delay (htsim); false: it takes no delay or ECN action",
    )

    base_rtt_from_nack: bool = Field(
        False,
        description="a NACK's RTT may lower the base RTT (a trimmed header returns sooner "
        "than its packet would; htsim)",
    )
    max_cwnd_follows_base_rtt: bool = Field(
        False,
        description="the window ceiling and quick-adapt gate scale with the base RTT as it "
        "falls (htsim: 1.5 x the measured BDP)",
    )
    use_csig: bool = Field(
        False,
        description="CSIG: the queueing delay NSCC steers is the path's worst hop's, stamped by "
        "the switches and echoed in ACKs, instead of the RTT less the base RTT",
    )

    @model_validator(mode="after")
    def _initial_within_ceiling(self) -> NsccConfig:
        lo, hi = self.initial_cwnd_bdp, self.max_cwnd_bdp
        if lo is not None and hi is not None and lo > hi:
            raise ValueError(
                f"initial_cwnd_bdp ({lo}) must be <= max_cwnd_bdp ({hi}): the window starts "
                "within its ceiling"
            )
        return self
