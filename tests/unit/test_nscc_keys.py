"""nic.nscc.*: declared NSCC keys, their conversion to the controller's units, the htsim values
of the preset, and the mechanisms the keys switch on (gate, additive step, EWMA cap, NACK sample)."""

from __future__ import annotations

import pytest

import fabricsim
from fabricsim.cc.base import CcParams
from fabricsim.cc.nscc import Nscc, NsccParams
from fabricsim.config.loader import load_scenario
from fabricsim.config.models import NicConfig
from fabricsim.errors import ConfigError, EngineRefusal

RTT = 14_022_720  # htsim's 3-tier 100G unloaded RTT, ps
BDP = 175_284


def _params(**nscc) -> NsccParams:
    nic = NicConfig(cc="nscc", nscc=nscc)
    return NsccParams.from_cc(CcParams(100e9, RTT, 4150, BDP, nic=nic))


def test_defaults_are_the_spec_values():
    p = NsccParams.from_cc(CcParams(100e9, RTT, 4150, BDP))
    assert _params() == p
    assert p.target_delay_ps == RTT // 4 + 4 * 332_000
    assert (p.md_gain, p.delay_ewma_gain, p.initial_cwnd_bytes) == (0.5, 0.125, BDP)
    assert (p.additive_increase_bytes, p.qa_gate_bytes, p.adjust_bytes) == (0.0, None, None)


def test_keys_convert_to_bytes_and_picoseconds():
    p = _params(
        target_delay_us=10.0,
        initial_cwnd_bdp=0.5,
        max_cwnd_bdp=2.0,
        qa_gate_bits=3,
        fair_increase_bdp=0.1,
        adjust_bytes_mtus=8,
        qa_period_targets=1,
    )
    assert p.target_delay_ps == 10_000_000 and p.qa_delay_ps == 40_000_000
    assert p.initial_cwnd_bytes == 0.5 * BDP and p.max_cwnd_bytes == 2 * BDP
    assert p.qa_gate_bytes == 2 * BDP / 8 and p.qa_period_extra_ps == 10_000_000
    assert p.fair_increase_bytes == pytest.approx(0.1 * BDP) and p.adjust_bytes == 8 * 4150
    # the ceiling rises to an initial window above the default 1.5 BDP
    assert _params(initial_cwnd_bdp=3.0).max_cwnd_bytes == 3 * BDP


def test_preset_gives_htsims_nscc_constants():
    """htsim's initNsccParams at 100 Gbps, 3 tiers: fi 23,873.7, eta 716.21, alpha x target
    16,738.7 bytes per RTT, fast-increase scale 0.29214, gate maxwnd >> 3, 8-MTU adjustments."""
    sc = load_scenario({"preset": "htsim-uec", "workload": {"kind": "permutation"}})
    p = NsccParams.from_cc(CcParams(100e9, RTT, 4150, BDP, nic=sc.nic))
    assert p.target_delay_ps == pytest.approx(0.75 * RTT, abs=1)
    assert p.fair_increase_bytes == pytest.approx(23_873.68, abs=0.01)
    assert p.additive_increase_bytes == pytest.approx(716.21, abs=0.01)
    assert p.proportional_increase_bytes == pytest.approx(16_738.7, abs=0.1)
    assert p.fast_increase_gain == pytest.approx(0.29214)
    assert p.initial_cwnd_bytes == p.max_cwnd_bytes == 1.5 * BDP
    assert p.qa_gate_bytes == 1.5 * BDP / 8 and p.adjust_bytes == 8 * 4150
    assert (p.md_gain, p.delay_ewma_gain, p.md_wait_sampled_rtt) == (0.8, 0.0125, False)
    assert p.fast_increase_delay_ps == 1_000_000 and p.qa_period_extra_ps == p.target_delay_ps
    assert p.delay_ewma_unmarked_cap and p.nack_delay_sample
    assert p.delay_ewma_from_zero and p.ambiguous_ack_avg_delay
    own = load_scenario(
        {
            "preset": "htsim-uec",
            "workload": {"kind": "permutation"},
            "nic": {"nscc": {"target_delay_us": 5.0, "md_gain": 0.3}},
        }
    )
    assert own.nic.nscc.md_gain == 0.3  # the scenario wins; derived steps follow its target
    assert own.nic.nscc.proportional_increase_bdp == pytest.approx(4 * 4086 * 5 / 12 / 150_000)


def test_additive_increase_once_per_base_rtt():
    cc = Nscc(
        CcParams(100e9, RTT, 4150, BDP),
        _params(
            additive_increase_bdp=0.01,
            proportional_increase_bdp=0,
            fair_increase_bdp=0,
            initial_cwnd_bdp=0.5,
        ),
    )
    start = cc.cwnd_bytes
    t = 0
    for _ in range(80):  # 2 base RTTs of ACKs at the target delay (fair increase: 0)
        cc.on_ack(t, 4150, RTT + cc.nscc.target_delay_ps, ecn=False, inflight_bytes=0)
        t += RTT // 40
    assert cc.cwnd_bytes == pytest.approx(start + 0.01 * BDP)


def test_quick_adapt_gate_spares_a_period_that_delivered_enough():
    def period(gate_bits):
        cc = Nscc(CcParams(100e9, RTT, 4150, BDP), _params(qa_gate_bits=gate_bits))
        cc.on_ack(0, 4150, RTT, ecn=False, inflight_bytes=0)
        cc.on_nack(1, 4150)  # arms quick adapt
        for i in range(10):  # 41,500 bytes in the period: more than the gate of BDP*1.5/8
            cc.on_ack(2 + i, 4150, None, ecn=False, inflight_bytes=0)
        cc.on_ack(RTT + 10, 4150, None, ecn=False, inflight_bytes=0)  # the period ends
        return cc.quick_adapts

    assert period(None) == 1 and period(3) == 0


def test_unmarked_high_samples_enter_the_average_as_a_quarter_rtt():
    for cap, want in ((False, 30_000_000), (True, RTT / 4)):
        cc = Nscc(CcParams(100e9, RTT, 4150, BDP), _params(delay_ewma_unmarked_cap=cap))
        cc.on_ack(0, 4150, RTT + 30_000_000, ecn=False, inflight_bytes=0)
        assert cc.avg_delay_ps == pytest.approx(want)
        cc.on_ack(1, 4150, RTT + 30_000_000, ecn=True, inflight_bytes=0)  # marked: as measured


def test_nack_enters_the_average_as_one_rtt():
    cc = Nscc(CcParams(100e9, RTT, 4150, BDP), _params(nack_delay_sample=True))
    cc.on_nack(0, 4150)
    assert cc.avg_delay_ps == RTT


def test_bad_and_unread_keys_are_one_line():
    with pytest.raises(ConfigError, match=r"nic\.nscc\.md_gain"):
        load_scenario({"workload": {"kind": "permutation"}, "nic": {"nscc": {"md_gain": 2}}})
    with pytest.raises(ConfigError, match="initial_cwnd_bdp"):
        load_scenario(
            {
                "workload": {"kind": "permutation"},
                "nic": {"nscc": {"initial_cwnd_bdp": 2, "max_cwnd_bdp": 1}},
            }
        )
    sc = load_scenario(
        {
            "workload": {"kind": "permutation", "size_bytes": 10_000},
            "topology": {"kind": "fat_tree", "k": 4},
            "nic": {"nscc": {"md_gain": 0.8}},
        }
    )
    with pytest.raises(
        EngineRefusal, match=r"nic\.nscc\.md_gain=0\.8 is read only by nic\.cc=nscc"
    ):
        fabricsim.run(sc, engine="packet")


def test_average_from_zero_and_ambiguous_acks_on_the_average():
    first = Nscc(CcParams(100e9, RTT, 4150, BDP), _params())
    zero = Nscc(
        CcParams(100e9, RTT, 4150, BDP),
        _params(delay_ewma_from_zero=True, delay_ewma_gain=0.5, ambiguous_ack_avg_delay=True),
    )
    for cc in (first, zero):
        cc.on_ack(0, 4150, RTT + 8_000_000, ecn=False, inflight_bytes=0)
    assert first.avg_delay_ps == 8_000_000 and zero.avg_delay_ps == 4_000_000
    # an ACK without a sample: no action by default, the averaged delay's action with the key
    before = zero.pending_increase_bytes
    zero.on_ack(1, 4150, None, ecn=False, inflight_bytes=0)
    first_before = first.pending_increase_bytes
    first.on_ack(1, 4150, None, ecn=False, inflight_bytes=0)
    assert zero.pending_increase_bytes > before and first.pending_increase_bytes == first_before


def test_a_nack_may_lower_the_base_rtt_and_the_ceiling_follows():
    """htsim: a trimmed header returns sooner than its packet would; its RTT lowers the base
    RTT, and the ceiling stays 1.5 x the measured BDP."""
    plain = Nscc(CcParams(100e9, RTT, 4150, BDP), _params(max_cwnd_bdp=1.5))
    plain.on_nack(0, 4150, rtt_ps=RTT - 1_400_000)
    assert plain.base_rtt_ps == RTT and plain.max_cwnd_bytes == 1.5 * BDP
    cc = Nscc(
        CcParams(100e9, RTT, 4150, BDP),
        _params(
            max_cwnd_bdp=1.5,
            qa_gate_bits=3,
            base_rtt_from_nack=True,
            max_cwnd_follows_base_rtt=True,
        ),
    )
    cc.on_nack(0, 4150, rtt_ps=RTT // 2)
    assert cc.base_rtt_ps == RTT // 2
    assert cc.max_cwnd_bytes == pytest.approx(0.75 * BDP)
    assert cc.qa_gate_bytes == pytest.approx(0.75 * BDP / 8)
    assert cc.cwnd_bytes <= cc.max_cwnd_bytes
