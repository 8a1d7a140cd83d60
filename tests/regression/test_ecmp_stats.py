"""ECMP collision statistics of the flow engine against the exact model of 002_*.txt.

8 flows leave a leaf over 8 equal uplinks (the `ecmp-collision` scenario: host i -> host 8+i);
each run draws fresh source ports and switch salts from its seed, and the real hash places the
flows.  Exact values (N = M = 8) come from `fabricsim.analysis.ecmp_math` (exact enumeration):
P(no collision) = 8!/8^8 = 0.00240326, E[max load] = 2.59723, E[idle uplinks] = 2.74887,
E[1/max load] = 0.40999.

Reduced for CI: 400 seeds (2-3 s on an idle core, under 20 s on a loaded one).  Every check
tests the null hypothesis "the hash places the 8 flows independently and uniformly", with a
tolerance derived from the trial count and the exact variance at a false-alarm rate of
``ALPHA`` per check (5 checks: at most 5e-4 in all): a chi-square test of the max-load
distribution, a two-sided binomial test of P(no collision) and z-tests of E[max load],
E[idle uplinks] and E[1/max load]; and, run by run, the busiest uplink must set the step
efficiency.  At 400 trials this rejects, for example, a hash that never picks one of the 8
uplinks, or one that puts two given flows on the same uplink every time
(`test_the_checks_reject_a_broken_hash`).  The full check (20 000 seeds, the same statistics,
printed) is ``python scripts/verify.py foundation``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binomtest, chisquare, norm

import fabricsim
from fabricsim.analysis.ecmp_math import ecmp_collision_stats

FLOWS = UPLINKS = 8
TRIALS = 400  # seeds 0..399; the full 20 000 are in scripts/verify_foundation.py
ALPHA = 1e-4  # false-alarm rate of each check (two-sided)
Z = float(norm.isf(ALPHA / 2))  # 3.89
# the path latency (about 4 us on an 85 us transfer) lifts step_efficiency above 1/max load, by at most
# (L/T) / (2 (2 + L/T)) = 0.012 (at max load 2); it never lowers it
LATENCY_LIFT = 0.02

EXACT = ecmp_collision_stats(FLOWS, UPLINKS)
LOADS = np.array(list(EXACT.max_load_distribution), dtype=float)
PROBS = np.array(list(EXACT.max_load_distribution.values()))
SD_MAX_LOAD = math.sqrt(float(PROBS @ LOADS**2) - EXACT.expected_max_load**2)  # 0.685
SD_INV_MAX_LOAD = math.sqrt(float(PROBS @ LOADS**-2) - EXACT.efficiency**2)  # 0.099
# idle uplinks X = sum of M indicators: E[X(X-1)] = M (M-1) (1 - 2/M)^N
_E2 = UPLINKS * (UPLINKS - 1) * (1 - 2 / UPLINKS) ** FLOWS
SD_IDLE = math.sqrt(_E2 + EXACT.expected_idle_uplinks - EXACT.expected_idle_uplinks**2)  # 0.894


def collision_checks(max_load: np.ndarray, idle: np.ndarray) -> dict[str, tuple[bool, str]]:
    """Each check of the samples against the exact math: ``{name: (passed, detail)}``."""
    n = len(max_load)
    out: dict[str, tuple[bool, str]] = {}

    def z_test(name: str, sample: np.ndarray, exact: float, sd: float) -> None:
        tol = Z * sd / math.sqrt(n)
        got = float(sample.mean())
        out[name] = (abs(got - exact) <= tol, f"{got:.4f} vs exact {exact:.4f} +- {tol:.4f}")

    z_test("E[max load]", max_load, EXACT.expected_max_load, SD_MAX_LOAD)
    z_test("E[idle uplinks]", idle, EXACT.expected_idle_uplinks, SD_IDLE)
    z_test("E[1/max load]", 1.0 / max_load, EXACT.efficiency, SD_INV_MAX_LOAD)
    none = int(np.sum(max_load == 1))
    p = binomtest(none, n, EXACT.p_no_collision).pvalue
    detail = f"{none}/{n} vs exact {EXACT.p_no_collision:.5f}, p={p:.3g}"
    out["P(no collision)"] = (bool(p > ALPHA), detail)
    # max-load histogram; bins with fewer than 5 expected pooled into their neighbour
    observed = np.array([np.sum(max_load == k) for k in LOADS])
    obs, exp = [], []
    acc_o = acc_e = 0.0
    for o, e in zip(observed[::-1], PROBS[::-1] * n, strict=True):
        acc_o, acc_e = acc_o + o, acc_e + e
        if acc_e >= 5:
            obs.append(acc_o)
            exp.append(acc_e)
            acc_o = acc_e = 0.0
    obs[-1] += acc_o
    exp[-1] += acc_e
    p = chisquare(obs, exp).pvalue
    out["max-load distribution"] = (bool(p > ALPHA), f"chi-square p={p:.3g} over {len(obs)} bins")
    return out


def _failures(checks: dict[str, tuple[bool, str]]) -> list[str]:
    return [f"{name}: {detail}" for name, (ok, detail) in checks.items() if not ok]


@pytest.mark.full
def test_ecmp_collisions_match_the_exact_math():
    """One test, so that xdist runs the seeds once."""
    sc = fabricsim.load_scenario("ecmp-collision")
    max_load, idle, eff = [], [], []
    for seed in range(TRIALS):
        res = fabricsim.run(sc.with_overrides({"seed": seed}), engine="flow")
        spines = res.flows["path"].str.split(">").str[1]
        counts = spines.value_counts().reindex([f"spine{i}" for i in range(8)], fill_value=0)
        max_load.append(int(counts.max()))
        idle.append(int((counts == 0).sum()))
        eff.append(res.summary["step_efficiency"])
    max_load_a, idle_a, eff_a = np.array(max_load), np.array(idle), np.array(eff)

    failed = _failures(collision_checks(max_load_a, idle_a))
    # the busiest uplink sets the pace, run by run: 1/k <= step_efficiency <= 1/k + lift
    lift = eff_a - 1.0 / max_load_a
    if not (lift.min() >= -1e-9 and lift.max() <= LATENCY_LIFT):
        failed.append(f"step_efficiency - 1/max load in [{lift.min():.4f}, {lift.max():.4f}]")
    assert not failed, f"{TRIALS} trials: " + "; ".join(failed)


def test_the_checks_reject_a_broken_hash():
    """The checks at 400 trials can fail: placements drawn from wrong models are rejected."""
    rng = np.random.default_rng(11)

    def stats(choice: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        loads = np.stack([np.bincount(row, minlength=UPLINKS) for row in choice])
        return loads.max(axis=1), (loads == 0).sum(axis=1)

    ideal = rng.integers(0, UPLINKS, size=(TRIALS, FLOWS))
    assert not _failures(collision_checks(*stats(ideal)))
    seven_uplinks = rng.integers(0, UPLINKS - 1, size=(TRIALS, FLOWS))
    assert _failures(collision_checks(*stats(seven_uplinks)))
    two_flows_one_hash = rng.integers(0, UPLINKS, size=(TRIALS, FLOWS))
    two_flows_one_hash[:, 1] = two_flows_one_hash[:, 0]
    assert _failures(collision_checks(*stats(two_flows_one_hash)))
    four_hashes = np.repeat(rng.integers(0, UPLINKS, size=(TRIALS, FLOWS // 2)), 2, axis=1)
    assert _failures(collision_checks(*stats(four_hashes)))
