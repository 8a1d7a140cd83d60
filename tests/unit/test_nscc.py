"""Unit tests of fabricsim.cc.nscc: the NSCC-style window controller, without an event loop."""

from __future__ import annotations

import doctest
from collections import deque

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricsim.cc import make_cc, nscc
from fabricsim.cc.base import CcParams
from fabricsim.cc.nscc import Nscc, NsccParams
from fabricsim.errors import ConfigError

# 100 Gb/s, 6 us base RTT, 4184-byte packets: BDP 75,000 bytes; one packet = 334,720 ps.
MTU = 4184
BASE = 6_000_000
CC = CcParams(100e9, BASE, MTU, 75_000)
TARGET = 2_838_880  # 6 us / 4 + 4 x 334,720 ps


def make(**overrides: object) -> Nscc:
    return Nscc(CC, NsccParams.from_cc(CC, **overrides))


def feed(
    cc: Nscc, start_ps: int, count: int, rtt_ps: int | None, ecn: bool, gap_ps: int = 100_000
) -> int:
    """``count`` full-packet ACKs ``gap_ps`` apart from ``start_ps``; returns the next time."""
    t = start_ps
    for _ in range(count):
        cc.on_ack(t, MTU, rtt_ps, ecn, int(cc.cwnd_bytes))
        t += gap_ps
    return t


# --------------------------------------------------------------------------- parameters


def test_registered_window_only_and_defaults() -> None:
    cc = make_cc("nscc", CC)
    assert isinstance(cc, Nscc) and cc.name == "nscc"
    assert cc.pacing_bps is None
    p = cc.nscc
    assert p.target_delay_ps == TARGET
    assert (p.min_cwnd_bytes, p.max_cwnd_bytes, p.initial_cwnd_bytes) == (
        4184.0,
        114_670.0,  # max(1.5 x BDP, BDP + target queue 35,486 + one packet)
        75_000.0,
    )
    assert (p.proportional_increase_bytes, p.fair_increase_bytes) == (7500.0, 1500.0)
    assert p.fast_increase_delay_ps == 334_720
    assert p.qa_delay_ps == 4 * TARGET
    assert cc.cwnd_bytes == 75_000.0 and cc.base_rtt_ps == BASE


def test_derived_defaults_follow_overrides() -> None:
    p = NsccParams.from_cc(CC, target_delay_ps=6_000_000, min_cwnd_bytes=1046)
    assert p.qa_delay_ps == 24_000_000
    assert p.max_cwnd_bytes == 75_000 + 75_000 + MTU  # BDP + target queue + one packet
    assert p.min_cwnd_bytes == 1046.0


@pytest.mark.parametrize(
    "overrides",
    [
        {"no_such_knob": 1},
        {"md_min_factor": 0.0},
        {"md_gain": 1.5},
        {"min_cwnd_bytes": 200_000.0},
        {"qa_delay_ps": 1_000},
        {"delay_ewma_gain": 0.0},
    ],
)
def test_bad_parameters_raise_config_error(overrides: dict[str, object]) -> None:
    with pytest.raises(ConfigError, match=r"^nscc\."):
        NsccParams.from_cc(CC, **overrides)


# --------------------------------------------------------------------------- the four quadrants


def test_low_delay_no_ecn_increases_in_proportion_to_room() -> None:
    half, quarter = make(), make()
    feed(half, 0, 18, BASE + TARGET // 2, ecn=False)  # 18 x 4184 = 75,312 >= cwnd
    feed(quarter, 0, 18, BASE + 3 * TARGET // 4, ecn=False)
    # 7500 bytes per window at zero delay, scaled by the room left below target
    assert half.cwnd_bytes == pytest.approx(75_000 + 7500 * 0.5 * 75_312 / 75_000, rel=1e-4)
    assert quarter.cwnd_bytes == pytest.approx(75_000 + 7500 * 0.25 * 75_312 / 75_000, rel=1e-3)
    assert half.decreases == quarter.decreases == 0


def test_high_delay_no_ecn_is_fair_additive_increase() -> None:
    a, b = make(), make()
    feed(a, 0, 18, BASE + 2 * TARGET, ecn=False)
    feed(b, 0, 18, BASE + 3 * TARGET, ecn=False)
    assert a.cwnd_bytes == pytest.approx(75_000 + 1500 * 75_312 / 75_000)
    assert b.cwnd_bytes == a.cwnd_bytes  # independent of how far above target


def test_high_delay_with_ecn_decreases_by_averaged_excess() -> None:
    cc = make()
    cc.on_ack(0, MTU, BASE + 2 * TARGET, True, 70_000)
    # avg delay = 2 x target: factor 1 - 0.5 * (2T - T) / 2T = 0.75
    assert cc.cwnd_bytes == pytest.approx(56_250.0)
    assert cc.decreases == 1


def test_decrease_is_bounded_by_min_factor() -> None:
    cc = make(md_gain=1.0, md_min_factor=0.6)
    cc.on_ack(0, MTU, BASE + 3 * TARGET, True, 70_000)  # 1 - 2/3 = 0.33 -> bounded at 0.6
    assert cc.cwnd_bytes == pytest.approx(45_000.0)


def test_low_delay_with_ecn_leaves_window_unchanged() -> None:
    cc = make()
    feed(cc, 0, 60, BASE + TARGET // 2, ecn=True, gap_ps=400_000)  # four base RTTs
    assert cc.cwnd_bytes == 75_000.0
    assert cc.pending_increase_bytes == 0.0 and cc.decreases == 0


# --------------------------------------------------------------------------- decrease pacing


def test_at_most_one_decrease_per_base_rtt() -> None:
    cc = make(md_wait_sampled_rtt=False)
    rtt = BASE + 2 * TARGET
    cc.on_ack(0, MTU, rtt, True, 0)
    cc.on_ack(BASE // 2, MTU, rtt, True, 0)
    cc.on_ack(BASE - 1, MTU, rtt, True, 0)
    assert cc.decreases == 1
    assert cc.cwnd_bytes == pytest.approx(56_250.0)
    cc.on_ack(BASE, MTU, rtt, True, 0)  # a base RTT later: allowed again
    assert cc.decreases == 2
    assert cc.cwnd_bytes < 56_250.0


def test_default_next_decrease_waits_for_the_sampled_rtt() -> None:
    cc = make()
    rtt = BASE + 2 * TARGET  # 11.7 us
    cc.on_ack(0, MTU, rtt, True, 0)
    cc.on_ack(BASE, MTU, rtt, True, 0)  # one base RTT later, but the cut is not visible yet
    assert cc.decreases == 1
    cc.on_ack(rtt, MTU, rtt, True, 0)
    assert cc.decreases == 2


# --------------------------------------------------------------------------- quick adapt, NACK, timeout


def test_nack_shrinks_by_nacked_bytes_and_timeout_by_one_packet() -> None:
    cc = make()
    cc.on_nack(0, 3000)
    assert cc.cwnd_bytes == 72_000.0
    cc.on_timeout(10)
    assert cc.cwnd_bytes == 72_000.0 - MTU
    for i in range(100):
        cc.on_timeout(20 + i)
    assert cc.cwnd_bytes == 4184.0  # never below the minimum window


def test_quick_adapt_after_nack_sets_window_to_bytes_acked_in_period() -> None:
    cc = make()
    feed(cc, 0, 6, BASE + TARGET // 2, ecn=False, gap_ps=1_000_000)  # 25,104 bytes in [0, 6 us)
    cc.on_nack(5_500_000, MTU)
    assert cc.cwnd_bytes == 75_000.0 - MTU
    cc.on_ack(BASE, MTU, BASE + TARGET // 2, False, 0)  # the period ends: quick adapt
    assert cc.cwnd_bytes == 6 * MTU
    assert cc.quick_adapts == 1


def test_quick_adapt_after_very_high_delay() -> None:
    cc = make()
    very_high = BASE + 5 * TARGET  # above qa_delay_ps = 4 x target; no ECN, so no decrease
    feed(cc, 0, 4, very_high, ecn=False, gap_ps=1_000_000)
    assert cc.decreases == 0 and cc.cwnd_bytes > 75_000.0 - 1  # only fair increase pending
    cc.on_ack(BASE, MTU, very_high, False, 0)
    assert cc.cwnd_bytes == 4 * MTU
    # a base RTT of hold: late ACKs of packets sent before the cut change nothing
    feed(cc, BASE + 1, 5, very_high, ecn=True, gap_ps=1_000_000)
    assert cc.cwnd_bytes == 4 * MTU and cc.decreases == 0


def test_quick_adapt_is_bounded_below_and_needs_a_trigger() -> None:
    cc = make()
    cc.on_ack(0, 500, BASE, False, 0)
    cc.on_nack(1, 500)
    cc.on_ack(BASE, 500, BASE, False, 0)
    assert cc.cwnd_bytes == 4184.0  # 500 bytes acked in the period; bounded by the minimum
    calm = make()
    feed(calm, 0, 3, BASE + TARGET // 2, ecn=False, gap_ps=2_500_000)  # periods with few bytes
    assert calm.quick_adapts == 0 and calm.cwnd_bytes >= 75_000.0


# --------------------------------------------------------------------------- fast increase


def test_fast_increase_engages_after_a_window_of_near_zero_delay() -> None:
    cc = make(initial_cwnd_bytes=20_000.0)
    t = feed(cc, 0, 4, BASE, ecn=False)  # 16,736 bytes < one window
    assert not cc.fast_increase
    t = feed(cc, t, 1, BASE, ecn=False)  # 20,920 >= 20,000: engaged; pending applied
    assert cc.fast_increase and cc.fast_increases == 1
    before = cc.cwnd_bytes
    cc.on_ack(t, MTU, BASE, False, 0)
    assert cc.cwnd_bytes == pytest.approx(before + 0.5 * MTU)  # immediate, per ACK
    cc.on_ack(t + 1, MTU, BASE + TARGET // 2, False, 0)  # a queue appears: fast increase ends
    assert not cc.fast_increase


def test_no_fast_increase_when_delay_is_not_near_zero() -> None:
    cc = make(initial_cwnd_bytes=20_000.0)
    feed(cc, 0, 40, BASE + 2 * 334_720, ecn=False)  # two packets of queue: proportional only
    assert cc.fast_increases == 0


# --------------------------------------------------------------------------- samples and base RTT


def test_ambiguous_samples_take_no_delay_action_but_count_bytes() -> None:
    cc = make()
    feed(cc, 0, 50, None, ecn=True, gap_ps=500_000)  # ECN on ambiguous samples: ignored
    assert cc.cwnd_bytes == 75_000.0 and cc.decreases == 0 and cc.base_rtt_ps == BASE
    assert cc.pending_increase_bytes == 0.0 and not cc.fast_increase
    counted = make()
    feed(counted, 0, 4, None, ecn=False, gap_ps=1_000_000)  # 4 packets in [0, 6 us)
    counted.on_nack(3_500_000, MTU)
    counted.on_ack(BASE, MTU, None, False, 0)
    assert counted.cwnd_bytes == 4 * MTU  # quick adapt counted the ambiguous ACKs' bytes


def test_base_rtt_falls_to_lowest_sample() -> None:
    cc = make()
    cc.on_ack(0, MTU, 5_000_000, False, 0)
    cc.on_ack(1, MTU, 9_000_000, False, 0)
    assert cc.base_rtt_ps == 5_000_000


BURST = st.tuples(
    st.sampled_from(["ack", "ack", "ack", "ambiguous", "nack", "timeout"]),
    st.integers(1, 40),  # events in the burst, all alike
    st.one_of(st.integers(0, BASE // 20), st.integers(0, 3 * BASE)),  # time step, ps
    st.integers(1, 4 * MTU),  # bytes
    st.one_of(st.integers(0, 300_000), st.integers(-BASE // 2, 12 * TARGET)),  # RTT - base
    st.booleans(),  # ECN echo
)


def replay(cc: Nscc, bursts: list[tuple[str, int, int, int, int, bool]]) -> list[float]:
    now, trace = 0, []
    for kind, count, step, size, extra, ecn in bursts:
        for _ in range(count):
            now += step
            if kind == "nack":
                cc.on_nack(now, size)
            elif kind == "timeout":
                cc.on_timeout(now)
            else:
                cc.on_ack(now, size, None if kind == "ambiguous" else BASE + extra, ecn, 0)
            trace.append(cc.cwnd_bytes)
    return trace


@settings(max_examples=150, deadline=None)
@given(st.lists(BURST, max_size=60), st.sampled_from([0.25, 0.5, 1.0]))
def test_window_stays_within_bounds(bursts: list, min_packets: float) -> None:
    cc = make(min_cwnd_bytes=min_packets * MTU)
    for w in replay(cc, bursts):
        assert cc.nscc.min_cwnd_bytes <= w <= cc.nscc.max_cwnd_bytes


@settings(max_examples=30, deadline=None)
@given(st.lists(BURST, min_size=1, max_size=30))
def test_deterministic(bursts: list) -> None:
    a, b = make(), make()
    assert replay(a, bursts) == replay(b, bursts)
    assert (a.decreases, a.quick_adapts, a.avg_delay_ps) == (
        b.decreases,
        b.quick_adapts,
        b.avg_delay_ps,
    )


# --------------------------------------------------------------------------- fluid check


def fluid(n: int, steps: int, ecn_queue_targets: float = 1.5) -> tuple[list[float], float, float]:
    """N NSCC senders through one FIFO bottleneck, step = base RTT / 8, feedback one RTT late.

    Returns each sender's mean window over the second half, the queue's peak there (bytes),
    and the link utilization there.
    """
    lag, dt = 8, BASE // 8
    senders = [make(initial_cwnd_bytes=75_000 * (i + 1) / n) for i in range(n)]
    cap = 100e9 / 8 / 1e12 * dt  # bytes per step
    kmin = ecn_queue_targets * TARGET * 100e9 / 8 / 1e12  # ECN threshold, bytes
    q, seen, sums, peak, served = 0.0, deque([0.0] * lag), [0.0] * n, 0.0, 0.0
    for step in range(steps):
        rtt, ecn = BASE + int(seen[0] / cap * dt), seen[0] > kmin
        rates = [s.cwnd_bytes / (lag + q / cap) for s in senders]  # bytes per step
        out = min(q + sum(rates), cap)
        q += sum(rates) - out
        seen.append(q)
        seen.popleft()
        for s, r in zip(senders, rates, strict=True):
            s.on_ack(step * dt, int(out * r / sum(rates)), rtt, ecn, int(s.cwnd_bytes))
        if step >= steps // 2:
            sums = [a + s.cwnd_bytes for a, s in zip(sums, senders, strict=True)]
            peak, served = max(peak, q), served + out
    half = steps - steps // 2
    return [x / half for x in sums], peak, served / (cap * half)


@pytest.mark.parametrize("n", [2, 4, 8])
def test_fluid_bottleneck_converges_to_fair_share(n: int) -> None:
    means, peak, util = fluid(n, 2400)
    target_bytes = TARGET * 100e9 / 8 / 1e12  # 35,486 bytes
    fair = sum(means) / n
    assert all(abs(m - fair) < 0.1 * fair for m in means)  # started from 1/n .. 1 BDP
    assert 75_000 / n < fair < (75_000 + 3 * target_bytes) / n  # BDP share + bounded queue
    assert peak < 3 * target_bytes
    assert util > 0.97


def test_doctests() -> None:
    result = doctest.testmod(nscc)
    assert result.attempted >= 4 and result.failed == 0
