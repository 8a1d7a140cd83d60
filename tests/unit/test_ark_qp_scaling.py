"""QP scaling (E-ECMP, ``lb.policy=qp_scaling``, split mode) on the ``ecmp-collision`` setup.

``002_*.txt``: 8 flows on 8 spines, each split over ``q`` queue pairs; the expected penalty
``E[max load] / q`` is 2.60, 2.10, 1.76, 1.53, 1.37 for q = 1, 2, 4, 8, 16.  Here: mean of
``1 / step_efficiency`` over 600 seeds (q = 1) and 200 (the others), within the issue's +-0.1.  The flow engine adds the path latency to every FCT, which pulls
``1 / step_efficiency`` down; the latency-free ratio is checked against the model, and the bias
is checked to be small, negative and shrinking with q.

Two tiers: ``full`` (the issue's seed counts and +-0.1; marked ``slow``, run by
``python scripts/verify.py slow``) and ``fast`` (CI: fewer seeds, each tolerance derived from
the seed count and the exact variance of the busiest uplink's load, ``ecmp_math``, at a
false-alarm rate of 1e-4 per check; the reported penalty may sit up to 0.1 lower: the bias).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

import fabricsim
from fabricsim.analysis.ecmp_math import ecmp_collision_stats
from fabricsim.config import load_scenario

pytestmark = pytest.mark.full  # every test here shares the QP-scaling sweeps (about 10 s)

EXPECTED = {1: 2.60, 2: 2.10, 4: 1.76, 8: 1.53, 16: 1.37}
SEEDS = {1: 600, 2: 200, 4: 200, 8: 200, 16: 200}  # the seed counts (slow tier)
FAST_SEEDS = {1: 240, 2: 120, 4: 60, 8: 40, 16: 30}  # CI tier: about a third of the time
# exact E[max load] / q and its per-seed standard deviation, 8 q sub-flows on 8 uplinks
EXACT = {q: ecmp_collision_stats(8, 8, qp_scaling=q) for q in EXPECTED}
SD = {
    q: math.sqrt(
        sum(p * (k / q) ** 2 for k, p in st.max_load_distribution.items()) - st.slowdown**2
    )
    for q, st in EXACT.items()
}
Z = float(norm.isf(1e-4 / 2))  # two-sided, false-alarm rate 1e-4 per check
BIAS_MAX = 0.1  # the latency bias of the reported penalty: in (-0.1, 0), checked below


def path_latency_s(sc) -> float:
    """Latency the flow engine adds to an FCT: FCT of a 1-byte message alone, less its bytes."""
    one = sc.with_overrides({"workload.size_bytes": 1, "workload.hosts": 1})
    res = fabricsim.run(one)
    wire = 1 + sc.nic.header_bytes
    return float(res.flows["fct_s"].iloc[0]) - wire * 8 / (sc.topology.host_link_gbps * 1e9)


def inverse_step_efficiency(q: int, seeds: int) -> tuple[float, float]:
    """Mean over seeds of 1/step_efficiency: as reported, and with the path latency removed."""
    base = load_scenario("ecmp-collision").with_overrides(
        {"lb.policy": "qp_scaling", "lb.qp_mode": "split", "lb.qp_count": q}
    )
    lat = path_latency_s(base)
    raw, clean = [], []
    for seed in range(1, seeds + 1):
        s = fabricsim.run(base.with_overrides({"seed": seed})).summary
        ideal, slowest = s["step_ideal_s"], s["step_ideal_s"] / s["step_efficiency"]
        raw.append(slowest / ideal)
        clean.append((slowest - lat) / (ideal - lat))
    return float(np.mean(raw)), float(np.mean(clean))


@pytest.fixture(scope="module", params=["fast", pytest.param("full", marks=pytest.mark.slow)])
def tier(request) -> str:
    return request.param


@pytest.fixture(scope="module")
def measured(tier) -> dict[int, tuple[float, float]]:
    seeds = SEEDS if tier == "full" else FAST_SEEDS
    return {q: inverse_step_efficiency(q, n) for q, n in seeds.items()}


@pytest.mark.parametrize("q", sorted(EXPECTED))
def test_latency_free_penalty_matches_the_model(measured, tier, q):
    _, clean = measured[q]
    if tier == "full":
        assert clean == pytest.approx(EXPECTED[q], abs=0.1)
    else:  # 3.89 SE: 0.17, 0.16, 0.15, 0.12, 0.10
        assert clean == pytest.approx(EXACT[q].slowdown, abs=Z * SD[q] / math.sqrt(FAST_SEEDS[q]))


@pytest.mark.parametrize("q", sorted(EXPECTED))
def test_reported_penalty_within_tolerance(measured, tier, q):
    raw, _ = measured[q]
    if tier == "full":
        assert raw == pytest.approx(EXPECTED[q], abs=0.1)
    else:
        tol = Z * SD[q] / math.sqrt(FAST_SEEDS[q])
        assert EXACT[q].slowdown - BIAS_MAX - tol <= raw <= EXACT[q].slowdown + tol


def test_latency_bias_is_small_negative_and_shrinks_with_q(measured):
    bias = [measured[q][0] - measured[q][1] for q in sorted(EXPECTED)]
    assert all(-0.1 < b < 0 for b in bias)
    assert bias == sorted(bias)  # |bias| shrinks as the penalty (and the slowest FCT) shrinks


def test_more_queue_pairs_help(measured):
    clean = [measured[q][1] for q in sorted(EXPECTED)]
    assert clean == sorted(clean, reverse=True)


def test_path_latency_is_the_unloaded_one_way_delay():
    sc = load_scenario("ecmp-collision")
    lat = path_latency_s(sc)
    # 4 links x 1 us propagation + store-and-forward of one full packet on 3 switch hops
    assert lat == pytest.approx(4e-6 + 3 * (4096 + 88) * 8 / 400e9, rel=1e-3)
