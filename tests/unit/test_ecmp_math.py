"""Tests of fabricsim.analysis.ecmp_math: exact ECMP collision statistics."""

from __future__ import annotations

import doctest
import itertools
import json
import math
import re
import time
from fractions import Fraction

import numpy as np
import pytest

from fabricsim.analysis import ecmp_math
from fabricsim.analysis.ecmp_math import (
    EcmpCollisionStats,
    ecmp_collision_stats,
    max_load_distribution,
    monte_carlo_collision_stats,
)
from fabricsim.errors import ConfigError

# --------------------------------------------------------------------------- reference values

REF_8_8_DISTRIBUTION = {
    1: 0.00240325927734375,
    2: 0.49837589263916016,
    3: 0.40935516357421875,
    4: 0.08002519607543945,
    5: 0.009159088134765625,
    6: 0.0006542205810546875,
    7: 2.6702880859375e-05,
    8: 4.76837158203125e-07,
}


def test_reference_8_flows_8_uplinks() -> None:
    stats = ecmp_collision_stats(8, 8)
    assert stats.flows == 8 and stats.uplinks == 8 and stats.qp_scaling == 1
    assert stats.p_no_collision == pytest.approx(0.00240325927734375, rel=1e-12)
    assert stats.expected_idle_uplinks == pytest.approx(2.748871326446533, rel=1e-12)
    assert stats.expected_max_load == pytest.approx(2.5972328186035156, rel=1e-12)
    assert stats.efficiency == pytest.approx(0.4099939544995626, rel=1e-12)
    assert stats.slowdown == pytest.approx(2.5972328186035156, rel=1e-12)  # N/M == 1
    assert list(stats.max_load_distribution) == list(REF_8_8_DISTRIBUTION)
    for k, p in REF_8_8_DISTRIBUTION.items():
        assert stats.max_load_distribution[k] == pytest.approx(p, rel=1e-12)


def test_reference_8_flows_16_uplinks() -> None:
    stats = ecmp_collision_stats(8, 16)
    assert stats.p_no_collision == pytest.approx(0.12082010507583618, rel=1e-12)
    assert stats.expected_idle_uplinks == pytest.approx(9.547511581331491, rel=1e-12)
    assert stats.expected_max_load == pytest.approx(2.062916487455368, rel=1e-12)
    assert stats.efficiency == pytest.approx(0.5310361032108111, rel=1e-12)
    assert stats.slowdown == pytest.approx(2.062916487455368 / 0.5, rel=1e-12)
    assert list(stats.max_load_distribution) == list(range(1, 9))


@pytest.mark.parametrize(
    ("qp_scaling", "slowdown"), [(1, 2.597), (2, 2.101), (4, 1.762), (8, 1.529), (16, 1.369)]
)
def test_reference_qp_scaling_slowdown(qp_scaling: int, slowdown: float) -> None:
    stats = ecmp_collision_stats(8, 8, qp_scaling=qp_scaling)
    assert round(stats.slowdown, 3) == slowdown
    assert stats.qp_scaling == qp_scaling
    assert stats.slowdown == pytest.approx(stats.expected_max_load / (8 * qp_scaling / 8))


def test_qp_scaling_statistics_are_those_of_the_sub_flows() -> None:
    scaled = ecmp_collision_stats(8, 8, qp_scaling=2)
    plain = ecmp_collision_stats(16, 8)
    assert scaled.p_no_collision == plain.p_no_collision == 0.0
    assert scaled.expected_idle_uplinks == plain.expected_idle_uplinks
    assert scaled.expected_max_load == plain.expected_max_load
    assert scaled.efficiency == plain.efficiency
    assert scaled.max_load_distribution == plain.max_load_distribution
    assert list(scaled.max_load_distribution) == list(range(2, 17))


# --------------------------------------------------------------------------- brute force


def _brute_force(balls: int, bins: int) -> dict[str, object]:
    """Exact statistics by enumerating all bins**balls assignments."""
    max_counts: dict[int, int] = {}
    idle_total = 0
    distinct = 0
    for assignment in itertools.product(range(bins), repeat=balls):
        loads = [0] * bins
        for b in assignment:
            loads[b] += 1
        busiest = max(loads)
        max_counts[busiest] = max_counts.get(busiest, 0) + 1
        idle_total += loads.count(0)
        distinct += busiest == 1
    total = bins**balls
    low = -(-balls // bins)
    distribution = {k: Fraction(max_counts.get(k, 0), total) for k in range(low, balls + 1)}
    return {
        "distribution": distribution,
        "p_no_collision": Fraction(distinct, total),
        "idle": Fraction(idle_total, total),
        "max": sum(k * p for k, p in distribution.items()),
        "efficiency": sum(p / k for k, p in distribution.items()),
    }


def test_exact_matches_brute_force_enumeration() -> None:
    start = time.perf_counter()
    for balls, bins in itertools.product(range(1, 7), repeat=2):
        brute = _brute_force(balls, bins)
        assert max_load_distribution(balls, bins) == brute["distribution"], (balls, bins)
        stats = ecmp_collision_stats(balls, bins)
        # the statistics are exact rationals rounded once, so they equal the rounded truth
        assert stats.p_no_collision == float(brute["p_no_collision"]), (balls, bins)
        assert stats.expected_idle_uplinks == float(brute["idle"]), (balls, bins)
        assert stats.expected_max_load == float(brute["max"]), (balls, bins)
        assert stats.efficiency == float(brute["efficiency"]), (balls, bins)
        assert stats.slowdown == float(brute["max"] * bins / balls), (balls, bins)
        assert stats.max_load_distribution == {
            k: float(p) for k, p in brute["distribution"].items()
        }
    assert time.perf_counter() - start < 5.0


def test_closed_forms() -> None:
    for balls, bins in [(3, 5), (5, 3), (10, 10), (20, 7), (7, 40)]:
        stats = ecmp_collision_stats(balls, bins)
        p = Fraction(math.perm(bins, balls), bins**balls) if balls <= bins else Fraction(0)
        assert stats.p_no_collision == float(p)
        assert stats.expected_idle_uplinks == float(bins * Fraction(bins - 1, bins) ** balls)
        if balls <= bins:
            assert max_load_distribution(balls, bins)[1] == p


def test_counting_methods_agree() -> None:
    """The recurrence and the inclusion-exclusion give the same counts for every cap."""
    for balls in range(1, 41):
        rows = ecmp_math._binomial_rows(balls)
        for bins in (1, 2, 3, 7, 40):
            coefficients = [
                [bins * row[i] - row[i + 1] for i in range(n + 1)]
                for n, row in enumerate(rows[:balls])
            ]
            for cap in range(1, balls):
                by_recurrence = ecmp_math._count_at_most_recurrence(balls, bins, cap, coefficients)
                by_overflow = ecmp_math._count_at_most_overflow(balls, bins, cap, rows)
                assert by_recurrence == by_overflow, (balls, bins, cap)
                if cap * bins < balls:
                    assert by_recurrence == 0


@pytest.mark.parametrize(
    ("balls", "bins"), [(1, 1), (9, 1), (1, 9), (50, 7), (37, 100), (120, 120)]
)
def test_distribution_sums_to_exactly_one(balls: int, bins: int) -> None:
    dist = max_load_distribution(balls, bins)
    assert all(isinstance(p, Fraction) and p >= 0 for p in dist.values())
    assert sum(dist.values()) == 1
    assert list(dist) == list(range(-(-balls // bins), balls + 1))
    assert dist[balls] == Fraction(bins, bins**balls)  # everything on one bin


def test_degenerate_cases() -> None:
    one_uplink = ecmp_collision_stats(5, 1)
    assert one_uplink.max_load_distribution == {5: 1.0}
    assert one_uplink.p_no_collision == 0.0
    assert one_uplink.expected_idle_uplinks == 0.0
    assert one_uplink.expected_max_load == 5.0
    assert one_uplink.efficiency == 0.2
    assert one_uplink.slowdown == 1.0
    one_flow = ecmp_collision_stats(1, 6)
    assert one_flow.max_load_distribution == {1: 1.0}
    assert one_flow.p_no_collision == 1.0
    assert one_flow.expected_idle_uplinks == 5.0
    assert one_flow.efficiency == 1.0
    assert one_flow.slowdown == 6.0


def test_large_case_is_fast_and_sane() -> None:
    start = time.process_time()  # CPU seconds: a loaded machine does not stretch them
    stats = ecmp_collision_stats(300, 300)
    elapsed = time.process_time() - start
    assert elapsed < 2.0, f"N=M=300 took {elapsed:.2f} s of CPU"
    dist = stats.max_load_distribution
    assert list(dist) == list(range(1, 301))
    assert math.fsum(dist.values()) == pytest.approx(1.0, abs=1e-12)
    assert 4.0 < stats.expected_max_load < 6.0
    assert stats.expected_idle_uplinks == pytest.approx(300 * (299 / 300) ** 300, rel=1e-12)
    assert stats.efficiency == pytest.approx(sum(p / k for k, p in dist.items()), rel=1e-12)


# --------------------------------------------------------------------------- Monte Carlo


def _exact_moments(flows: int, uplinks: int) -> dict[str, tuple[float, float]]:
    """(mean, standard deviation) of each per-trial statistic, from the exact distribution."""
    dist = max_load_distribution(flows, uplinks)
    mean_max = sum(k * p for k, p in dist.items())
    mean_inv = sum(p / k for k, p in dist.items())
    var_max = sum(k * k * p for k, p in dist.items()) - mean_max**2
    var_inv = sum(p / (k * k) for k, p in dist.items()) - mean_inv**2
    p1 = dist.get(1, Fraction(0))
    m, n = Fraction(uplinks), flows
    mean_idle = m * (1 - 1 / m) ** n
    var_idle = mean_idle + m * (m - 1) * (1 - 2 / m) ** n - mean_idle**2
    return {
        "p_no_collision": (float(p1), math.sqrt(p1 * (1 - p1))),
        "expected_idle_uplinks": (float(mean_idle), math.sqrt(var_idle)),
        "expected_max_load": (float(mean_max), math.sqrt(var_max)),
        "efficiency": (float(mean_inv), math.sqrt(var_inv)),
    }


def test_monte_carlo_agrees_with_exact() -> None:
    trials = 100_000
    mc = monte_carlo_collision_stats(8, 8, trials=trials)
    assert isinstance(mc, EcmpCollisionStats)
    for name, (mean, std) in _exact_moments(8, 8).items():
        error = abs(getattr(mc, name) - mean)
        assert error <= 4 * std / math.sqrt(trials), (name, getattr(mc, name), mean)
    exact = ecmp_collision_stats(8, 8)
    max_std = _exact_moments(8, 8)["expected_max_load"][1]
    assert abs(mc.slowdown - exact.slowdown) <= 4 * max_std / math.sqrt(trials)  # N/M == 1
    assert list(mc.max_load_distribution) == list(exact.max_load_distribution)
    for k, p in exact.max_load_distribution.items():
        se = math.sqrt(p * (1 - p) / trials)
        assert abs(mc.max_load_distribution[k] - p) <= 4 * se + 1e-9, k
    assert math.fsum(mc.max_load_distribution.values()) == pytest.approx(1.0)


def test_monte_carlo_with_qp_scaling_and_custom_rng() -> None:
    trials = 50_000
    mc = monte_carlo_collision_stats(
        4, 8, qp_scaling=4, trials=trials, rng=np.random.default_rng(7)
    )
    exact = ecmp_collision_stats(4, 8, qp_scaling=4)
    std = _exact_moments(16, 8)["expected_max_load"][1]
    assert abs(mc.expected_max_load - exact.expected_max_load) <= 4 * std / math.sqrt(trials)
    assert mc.p_no_collision == 0.0
    assert list(mc.max_load_distribution) == list(range(2, 17))


def test_monte_carlo_is_reproducible_and_leaves_global_state_alone() -> None:
    # the legacy global state is what must stay untouched
    np.random.seed(123)  # noqa: NPY002
    before = np.random.get_state()[1].copy()  # noqa: NPY002
    first = monte_carlo_collision_stats(5, 6, trials=2_000)
    second = monte_carlo_collision_stats(5, 6, trials=2_000)
    assert first == second
    assert np.array_equal(np.random.get_state()[1], before)  # noqa: NPY002


# --------------------------------------------------------------------------- API details


def test_to_dict_is_json_ready() -> None:
    stats = ecmp_collision_stats(8, 8, qp_scaling=2)
    d = stats.to_dict()
    assert set(d) == {
        "flows",
        "uplinks",
        "qp_scaling",
        "p_no_collision",
        "expected_idle_uplinks",
        "expected_max_load",
        "efficiency",
        "slowdown",
        "max_load_distribution",
    }
    again = json.loads(json.dumps(d))
    assert again == d
    assert again["max_load_distribution"] == {
        str(k): p for k, p in stats.max_load_distribution.items()
    }
    assert (again["flows"], again["uplinks"], again["qp_scaling"]) == (8, 8, 2)


def test_stats_are_frozen_and_hashable() -> None:
    stats = ecmp_collision_stats(3, 3)
    with pytest.raises(AttributeError):
        stats.flows = 4  # type: ignore[misc]
    assert hash(stats) == hash(ecmp_collision_stats(3, 3))


def test_numpy_integers_are_accepted() -> None:
    assert ecmp_collision_stats(np.int64(8), np.int32(8)) == ecmp_collision_stats(8, 8)


@pytest.mark.parametrize("bad", [0, -1, 2.5, "3", True, None, 8.0])
def test_bad_inputs_raise_value_error(bad: object) -> None:
    message = rf"must be an integer >= 1 \(got {re.escape(repr(bad))}\)$"
    with pytest.raises(ValueError, match="^flows " + message):
        ecmp_collision_stats(bad, 8)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="^uplinks " + message):
        ecmp_collision_stats(8, bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="^qp_scaling " + message):
        ecmp_collision_stats(8, 8, qp_scaling=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="^balls " + message):
        max_load_distribution(bad, 8)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="^bins " + message):
        max_load_distribution(8, bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="^trials " + message):
        monte_carlo_collision_stats(8, 8, trials=bad)  # type: ignore[arg-type]


def test_error_message_example() -> None:
    with pytest.raises(ValueError) as info:
        ecmp_collision_stats(0, 8)
    assert str(info.value) == "flows must be an integer >= 1 (got 0)"


def test_docstring_examples_run() -> None:
    result = doctest.testmod(ecmp_math)
    assert result.attempted > 0
    assert result.failed == 0


# --------------------------------------------------------------------------- bounds and methods


@pytest.mark.parametrize(
    ("balls", "bins"),
    [(300, 2), (250, 7), (256, 16), (300, 64), (300, 65), (300, 300), (200, 1000), (50, 10**6)],
)
def test_numeric_method_matches_exact(balls: int, bins: int) -> None:
    """The float64 method against exact rationals, on cases both can do."""
    exact = max_load_distribution(balls, bins)
    numeric = ecmp_math._numeric_stats(balls, bins, 1, balls)
    assert numeric.method == "numeric"
    for k, p in exact.items():
        if p >= Fraction(1, 10**300):
            assert numeric.max_load_distribution[k] == pytest.approx(float(p), rel=2e-9), k
        else:
            assert numeric.max_load_distribution.get(k, 0.0) == 0.0, k
    stats = ecmp_collision_stats(balls, bins)
    for name in ("expected_max_load", "efficiency", "expected_idle_uplinks", "p_no_collision"):
        assert getattr(numeric, name) == pytest.approx(getattr(stats, name), rel=1e-11), name
    assert math.fsum(numeric.max_load_distribution.values()) == pytest.approx(1.0, abs=1e-11)


def test_large_case_switches_to_numeric_and_stays_fast() -> None:
    start = time.perf_counter()
    stats = ecmp_collision_stats(100_000, 64)
    assert time.perf_counter() - start < 5.0
    assert stats.method == "numeric" and stats.to_dict()["method"] == "numeric"
    dist = stats.max_load_distribution
    assert min(dist) == 1563 and math.fsum(dist.values()) == pytest.approx(1.0, abs=1e-11)
    # the busiest of 64 binomial(1e5, 1/64) loads: about mean + 2.4 sd
    assert 1650 < stats.expected_max_load < 1665
    assert stats.slowdown == pytest.approx(stats.expected_max_load * 64 / 100_000)


def test_small_cases_stay_exact_and_keep_their_dict() -> None:
    for balls, bins in [(8, 8), (300, 300), (1000, 2), (300, 10**9), (5000, 1)]:
        assert ecmp_collision_stats(balls, bins).method == "exact", (balls, bins)
    assert "method" not in ecmp_collision_stats(8, 8).to_dict()
    assert ecmp_collision_stats(5000, 1).max_load_distribution == {5000: 1.0}


@pytest.mark.parametrize(
    ("flows", "uplinks", "qp"), [(10**6, 64, 1), (10**12, 8, 1), (5000, 10**7, 1), (10**5, 8, 64)]
)
def test_past_both_bounds_is_refused_at_once(flows: int, uplinks: int, qp: int) -> None:
    start = time.perf_counter()
    with pytest.raises(ConfigError, match="^--flows/--uplinks: .* past what ecmp-math computes"):
        ecmp_collision_stats(flows, uplinks, qp_scaling=qp)
    assert time.perf_counter() - start < 1.0


def test_work_estimates_order_the_methods() -> None:
    assert ecmp_math.exact_work(300, 300) <= ecmp_math.EXACT_WORK_MAX
    assert ecmp_math.exact_work(1000, 64) > ecmp_math.EXACT_WORK_MAX
    assert ecmp_math.exact_work(ecmp_math.EXACT_MAX_BALLS + 1, 2) == math.inf
    assert ecmp_math.numeric_work(100_000, 64) <= ecmp_math.NUMERIC_WORK_MAX
    assert ecmp_math.numeric_work(10**6, 64) > ecmp_math.NUMERIC_WORK_MAX
    assert ecmp_math.numeric_work(10, ecmp_math.NUMERIC_MAX_UPLINKS + 1) == math.inf


def test_monte_carlo_trials_are_bounded() -> None:
    with pytest.raises(ConfigError, match=r"^--monte-carlo: at most 937500 trials"):
        monte_carlo_collision_stats(8, 8, trials=10**8)
    with pytest.raises(ConfigError, match="--monte-carlo"):
        monte_carlo_collision_stats(10**8, 64, trials=1)
    mc = monte_carlo_collision_stats(8, 8, trials=1000)
    assert mc.method == "monte_carlo" and mc.to_dict()["method"] == "monte_carlo"
