"""DCQCN's reaction point as a pure state machine (no event loop), and one packet run.

The rules (Zhu et al., SIGCOMM 2015, with the NIC's rate-decrease interval): a cut
``RC (1 - alpha / 2)`` at most once per ``rate_decrease_interval_us``, alpha's EWMA and its
timer, and the increase events of the timer and the byte counter through fast recovery,
additive and hyper increase (``i x R_HAI``).
"""

from __future__ import annotations

import pytest

import fabricsim
from fabricsim.cc.base import CcParams
from fabricsim.cc.dcqcn import Dcqcn
from fabricsim.config.models import NicConfig
from fabricsim.config.roce import DCQCN_PAPER, DcqcnConfig

GBPS = 1e9
US = 1_000_000  # ps
MBPS = 1e6


def _rp(**dcqcn) -> Dcqcn:
    nic = NicConfig.model_validate({"transport": "roce", "dcqcn": dcqcn})
    return Dcqcn(CcParams(100 * GBPS, 10 * US, 4184, 125_000, nic=nic))


def _timer_only(**more) -> Dcqcn:
    """Timer events only, alpha 1, no decrease interval: each rule can be seen alone."""
    base = {"byte_counter_bytes": None, "initial_alpha": 1.0, "rate_decrease_interval_us": 0.0}
    return _rp(**{**base, **more})


def test_defaults_are_the_mlx5_firmware_defaults():
    cfg = DcqcnConfig()
    assert cfg.cnp_interval_us == 4  # min_time_between_cnps
    assert cfg.g == 1 - 1019 / 1024  # dce_tcp_g
    assert cfg.alpha_interval_us == 1  # dce_tcp_rtt
    assert cfg.rate_decrease_interval_us == 4  # rate_reduce_monitor_period
    assert cfg.rate_timer_us == 300 and cfg.byte_counter_bytes == 32767  # rpg_*_reset
    assert cfg.fast_recovery_steps == 1  # rpg_threshold
    assert (cfg.ai_mbps, cfg.hai_mbps, cfg.min_rate_mbps) == (5, 50, 1)
    assert cfg.initial_alpha == 1023 / 1024 and not cfg.clamp_target_rate
    paper = DcqcnConfig.model_validate(DCQCN_PAPER)
    assert paper.fast_recovery_steps == 5 and paper.byte_counter_bytes == 10_000_000


def test_a_cnp_cuts_by_alpha_over_two_and_updates_alpha():
    g = 1 / 16
    rp = _timer_only(g=g, initial_alpha=0.5)
    rp.on_cnp(0)
    assert rp.pacing_bps == pytest.approx(75 * GBPS)  # 100 x (1 - 0.5 / 2)
    assert rp.target_bps == 100 * GBPS  # the first cut of a run keeps the target (NICs)
    assert rp.alpha == pytest.approx((1 - g) * 0.5 + g)
    clamped = _timer_only(g=g, initial_alpha=0.5, clamp_target_rate=True)
    clamped.on_cnp(0)
    assert clamped.target_bps == 100 * GBPS  # RT = RC before the cut
    clamped.on_cnp(1)
    assert clamped.target_bps == pytest.approx(75 * GBPS)  # clamped: every cut sets RT = RC


def test_alpha_decays_once_per_period_without_cnps_and_a_cnp_restarts_its_timer():
    g = 1 / 16
    rp = _timer_only(g=g, alpha_interval_us=10.0, rate_timer_us=1e6)
    rp.on_cnp(0)
    a1 = rp.alpha
    assert a1 == pytest.approx(1.0)
    rp.on_cnp(35 * US)  # three periods (10, 20, 30 us) ended without a CNP
    a_before = a1 * (1 - g) ** 3
    assert rp.alpha == pytest.approx((1 - g) * a_before + g)
    rp.on_cnp(44 * US)  # timer restarted at 35 us: the period ending at 45 us is not over
    assert rp.alpha == pytest.approx((1 - g) * ((1 - g) * a_before + g) + g)


def test_at_most_one_cut_per_rate_decrease_interval_the_held_cnp_cuts_when_it_ends():
    rp = _rp(initial_alpha=1.0, rate_decrease_interval_us=4.0, g=1 / 256)
    rp.on_cnp(0)
    assert rp.pacing_bps == pytest.approx(50 * GBPS) and rp.decreases == 1
    rp.on_cnp(1 * US)  # inside the interval: held
    rp.on_cnp(2 * US)  # still one held cut, whatever the number of CNPs
    assert rp.pacing_bps == pytest.approx(50 * GBPS) and rp.decreases == 1 and rp.cnps == 3
    rp.on_ack(3 * US, 4184, None, False, 0)
    assert rp.decreases == 1  # the interval has not ended
    rp.on_ack(5 * US, 4184, None, False, 0)  # ended at 4 us: one cut, with alpha as of then
    assert rp.decreases == 2
    assert rp.pacing_bps < 30 * GBPS
    every = _rp(initial_alpha=1.0, rate_decrease_interval_us=0.0)
    for t in range(3):
        every.on_cnp(t * US)
    assert every.decreases == 3  # interval 0: every CNP cuts at once (the paper)


def test_fast_recovery_then_additive_then_hyper_increase_by_i_times_rhai():
    f = 3
    rp = _timer_only(
        fast_recovery_steps=f,
        ai_mbps=10.0,
        hai_mbps=100.0,
        rate_timer_us=10.0,
        g=1 / 256,
        clamp_target_rate=True,
    )
    rp.on_cnp(0)
    rp.on_cnp(1)  # clamped: the target is the rate before this cut (50 Gb/s)
    rc, rt = rp.rate_bps, rp.target_bps
    assert rt == pytest.approx(50 * GBPS)
    targets = []
    for k in range(1, 8):  # timer events at 10, 20, ... 70 us after the last cut
        rp.on_ack(k * 10 * US + 1, 0, None, False, 0)
        targets.append(rp.target_bps - rt)
    # events 1..F fast recovery (RT fixed), F+1 additive, then hyper with i = t - F = 1, 2, 3
    expect = [0, 0, 0, 10 * MBPS, 10 * MBPS + 100 * MBPS, 10 * MBPS + 300 * MBPS]
    assert targets[:6] == pytest.approx(expect)
    assert targets[6] == pytest.approx(10 * MBPS + 600 * MBPS)
    assert rp.hyper_events == 3
    rate = rc
    for _ in range(f):
        rate = (rt + rate) / 2
    assert rp.increase_events == 7 and rate < rp.rate_bps < rp.target_bps


def test_the_byte_counter_drives_increases_and_hyper_needs_both_counters_past_f():
    rp = _rp(
        byte_counter_bytes=10_000,
        fast_recovery_steps=1,
        rate_timer_us=1000.0,
        initial_alpha=1.0,
        ai_mbps=5.0,
        hai_mbps=50.0,
    )
    rp.on_cnp(0)
    for k in range(20):  # 20 x 10 KB in 20 us: 20 byte events, no timer event yet
        rp.on_send((k + 1) * US, 10_000)
    assert rp.b_events == 20 and rp.t_events == 0 and rp.hyper_events == 0
    assert rp.target_bps == pytest.approx(100 * GBPS)  # target unchanged by the first cut
    cut = _rp(byte_counter_bytes=10_000, fast_recovery_steps=1, rate_timer_us=10.0)
    cut.on_cnp(0)
    cut.on_cnp(10 * US)  # a second run: RT = RC after the increase events between
    rt = cut.target_bps
    for k in range(40):  # 2 timer events by 20 us, byte events each 1 us
        cut.on_send(10 * US + (k + 1) * US // 2, 10_000)
    assert cut.t_events >= 2 and cut.b_events >= 2 and cut.hyper_events > 0
    assert cut.target_bps > rt + 5 * MBPS * (cut.b_events - 2)
    cut.on_cnp(100 * US)
    assert cut.t_events == cut.b_events == 0 and cut.sent_bytes == 0  # a cut restarts them


def test_rates_stop_at_line_rate_and_the_timer_stops_there():
    rp = _timer_only(rate_timer_us=10.0, hai_mbps=50_000.0, ai_mbps=5_000.0)
    rp.on_cnp(0)
    rp.on_ack(10_000 * US, 0, None, False, 0)
    assert rp.rate_bps == rp.target_bps == rp.pacing_bps == 100 * GBPS
    events = rp.increase_events
    rp.on_ack(20_000 * US, 0, None, False, 0)
    assert rp.increase_events == events  # disarmed at line rate


def test_min_rate_floor():
    rp = _timer_only(min_rate_mbps=30_000.0)
    for t in range(10):
        rp.on_cnp(t * US)
    assert rp.pacing_bps == pytest.approx(30 * GBPS)


def test_a_slow_qp_paces_its_packet_at_the_mean_rate_over_the_gap():
    """At 1 Gb/s a 4 KB gap is 33 us; with a timer event 10 us away, the packet's gap is the
    one the rising rate gives, not the one the current rate alone gives."""
    rp = _timer_only(min_rate_mbps=1000.0, rate_timer_us=10.0, fast_recovery_steps=5)
    for t in range(12):  # alpha 1: the rate falls to the 1 Gb/s floor
        rp.on_cnp(t * 100)
    assert rp.rate_bps == pytest.approx(1 * GBPS)
    start = 1_100  # ps, just after the last cut: the first timer event is at 1,100 + 10 us
    rp.on_send(start, 4184)
    rc, rt = 1 * GBPS, rp.target_bps
    bits = 4184 * 8
    done, spent, rate = rc * (rp.timer_at - start) / 1e12, rp.timer_at - start, rc
    while True:  # fast recovery events every 10 us until the packet's bits are sent
        rate = (rt + rate) / 2
        need = (bits - done) * 1e12 / rate
        if need <= 10 * US:
            break
        done += rate * 10 * US / 1e12
        spent += 10 * US
    assert rp.pacing_bps == pytest.approx(bits * 1e12 / (spent + need))
    assert rp.pacing_bps > 1.5 * GBPS and rp.rate_bps == pytest.approx(1 * GBPS)


def test_bad_dcqcn_input_is_refused():
    with pytest.raises(ValueError, match="rate_decrease_interval_us"):
        DcqcnConfig.model_validate({"rate_decrease_interval_us": -1})
    with pytest.raises(ValueError, match="hai_mbps"):
        DcqcnConfig.model_validate({"ai_mbps": 60.0})


# -- one packet run ---------------------------------------------------------------------------
def test_two_flows_converge_to_their_share_on_the_packet_engine(tmp_path):
    trace = tmp_path / "two.csv"
    trace.write_text("src,dst,size_bytes,start_s\nhost0,host2,12000000,0\nhost1,host2,12000000,0\n")
    sc = fabricsim.load_scenario(
        {
            "name": "dcqcn-two",
            "engine": {"kind": "packet"},
            "topology": {
                "kind": "leaf_spine",
                "leaves": 2,
                "spines": 1,
                "hosts_per_leaf": 2,
                "host_link_gbps": 100,
                "fabric_link_gbps": 400,
                "link_delay_us": 1.0,
            },
            "workload": {"kind": "trace", "path": str(trace)},
            "nic": {"transport": "roce", "initial_base_rtt_us": "auto"},
            "records": {"uet_monitor": True},
        }
    )
    res = fabricsim.run(sc)
    s = res.summary
    assert s["flows_completed"] == 2 and s["packets_dropped"] == 0 and s["cnps_sent"] > 0
    wire = sc.nic.rdma_data_mss + sc.nic.header_bytes
    sent = res.tables["uet_monitor"]
    t0, t1 = 0.5e-3, 1.5e-3
    win = sent[(sent.time_s >= t0) & (sent.time_s < t1)]
    rates = [(win.flow_id == f).sum() * wire * 8 / (t1 - t0) / GBPS for f in (0, 1)]
    print(f"DCQCN mlx5 defaults, two flows: {rates} Gbps")
    assert sum(rates) > 90 and min(rates) > 0.7 * 50  # the port busy, neither flow starved
