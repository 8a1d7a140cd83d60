"""Full checks of the foundation: ECMP statistics of the flow engine vs the exact model."""

from __future__ import annotations

import sys

import numpy as np
from scipy.stats import chisquare

import fabricsim
from fabricsim.analysis.ecmp_math import ecmp_collision_stats

TRIALS = 20_000


def main() -> int:
    exact = ecmp_collision_stats(8, 8)
    sc = fabricsim.load_scenario("ecmp-collision")
    loads, idle, eff = [], [], []
    for seed in range(TRIALS):
        res = fabricsim.run(sc.with_overrides({"seed": seed}), engine="flow")
        counts = res.flows["path"].str.split(">").str[1].value_counts()
        loads.append(int(counts.max()))
        idle.append(8 - len(counts))
        eff.append(res.summary["step_efficiency"])
    loads_a, idle_a, eff_a = np.array(loads), np.array(idle), np.array(eff)
    obs = np.bincount(loads_a, minlength=9)[1:]
    exp = np.array([exact.max_load_distribution[k] for k in range(1, 9)]) * TRIALS
    obs_p = np.append(obs[:4], obs[4:].sum())
    exp_p = np.append(exp[:4], exp[4:].sum())
    p = chisquare(obs_p, exp_p).pvalue
    print(f"trials={TRIALS}")
    print(f"P(no collision) measured {np.mean(loads_a == 1):.5f} exact {exact.p_no_collision:.5f}")
    print(f"E[max load]     measured {loads_a.mean():.4f} exact {exact.expected_max_load:.4f}")
    print(f"E[idle uplinks] measured {idle_a.mean():.4f} exact {exact.expected_idle_uplinks:.4f}")
    print(f"chi-square p = {p:.3g}")
    print(
        f"step_efficiency mean {eff_a.mean():.4f} (exact E[1/k] {exact.efficiency:.4f}; "
        "path latency biases it up)"
    )
    ok = p > 1e-3 and abs(eff_a.mean() - 0.41) <= 0.02
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
