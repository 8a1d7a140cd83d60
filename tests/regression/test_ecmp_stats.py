"""ECMP collision statistics of the flow engine against the exact model of 002_*.txt.

8 flows leave a leaf over 8 equal uplinks (the `ecmp-collision` scenario: host i -> host 8+i);
each run draws fresh source ports and switch salts from its seed, and the real hash places the
flows.  Exact values (N = M = 8), derived by exact enumeration in `analysis.ecmp_math`:
P(no collision) = 8!/8^8 = 0.00240326, E[max load] = 2.59723, E[idle uplinks] = 2.74887,
E[1/max load] = 0.40999.
"""

import numpy as np
import pytest
from scipy.stats import chisquare

import fabricsim

EXACT_MAX_LOAD = {
    1: 0.00240325927734375,
    2: 0.49837589263916016,
    3: 0.40935516357421875,
    4: 0.08002519607543945,
    5: 0.009159088134765625,
    6: 0.0006542205810546875,
    7: 2.6702880859375e-05,
    8: 4.76837158203125e-07,
}
TRIALS = 10_000


@pytest.fixture(scope="module")
def trials():
    sc = fabricsim.load_scenario("ecmp-collision")
    max_load, idle, none, eff = [], [], [], []
    for seed in range(TRIALS):
        res = fabricsim.run(sc.with_overrides({"seed": seed}), engine="flow")
        spines = res.flows["path"].str.split(">").str[1]
        counts = spines.value_counts().reindex([f"spine{i}" for i in range(8)], fill_value=0)
        max_load.append(int(counts.max()))
        idle.append(int((counts == 0).sum()))
        none.append(bool(counts.max() == 1))
        eff.append(res.summary["step_efficiency"])
    return np.array(max_load), np.array(idle), np.array(none), np.array(eff)


def _within_4se(sample, expected):
    se = sample.std(ddof=1) / np.sqrt(len(sample))
    return abs(sample.mean() - expected) <= 4 * max(se, 1e-12)


def test_max_load_distribution_chi_square(trials):
    max_load = trials[0]
    observed = np.bincount(max_load, minlength=9)[1:]
    expected = np.array([EXACT_MAX_LOAD[k] for k in range(1, 9)]) * TRIALS
    # pool bins with fewer than 5 expected into their neighbour
    obs, exp = [], []
    acc_o = acc_e = 0.0
    for o, e in zip(observed[::-1], expected[::-1], strict=True):
        acc_o, acc_e = acc_o + o, acc_e + e
        if acc_e >= 5:
            obs.append(acc_o)
            exp.append(acc_e)
            acc_o = acc_e = 0.0
    obs[-1] += acc_o
    exp[-1] += acc_e
    assert chisquare(obs, exp).pvalue > 1e-3


def test_collision_means_within_4_standard_errors(trials):
    max_load, idle, none, _ = trials
    assert _within_4se(none.astype(float), 40320 / 8**8)
    assert _within_4se(max_load.astype(float), 2.5972328186035156)
    assert _within_4se(idle.astype(float), 8 * (7 / 8) ** 8)


def test_step_efficiency_over_500_seeds(trials):
    eff = trials[3][:500]
    # exact E[1/k] = 0.40999; path latency (3 us on an 85 us transfer) biases it up by ~0.01
    assert abs(eff.mean() - 0.41) <= 0.02
