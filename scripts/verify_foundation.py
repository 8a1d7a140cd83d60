"""Full checks of the foundation: ECMP statistics of the flow engine vs the exact model.

The `ecmp-collision` scenario (8 flows leave a leaf over 8 equal uplinks) over ``--trials``
seeds (default 20 000; CI runs 400 in tests/regression/test_ecmp_stats.py), each placement
made by the real hash with the seed's source ports and salts.  Against the exact values of
`fabricsim.analysis.ecmp_math` (N = M = 8), each with a tolerance derived from the trial count
and the exact variance at a two-sided false-alarm rate of ``ALPHA`` per check:

* the max-load distribution (chi-square, bins with < 5 expected pooled);
* P(no collision) (exact binomial test);
* E[max load], E[idle uplinks], E[1/max load] (z-tests);
* run by run, step efficiency set by the busiest uplink: 1/k <= step_efficiency <= 1/k + 0.02
  (the path latency lifts it slightly).

Run: ``python scripts/verify_foundation.py [--trials N] [--workers N]`` (or
``python scripts/verify.py foundation``); prints every measured number, exit code 1 if a check
fails.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
from scipy.stats import binomtest, chisquare, norm

import fabricsim
from fabricsim.analysis.ecmp_math import ecmp_collision_stats

FLOWS = UPLINKS = 8
ALPHA = 1e-4
Z = float(norm.isf(ALPHA / 2))
LATENCY_LIFT = 0.02
FAILURES: list[str] = []


def check(name: str, ok: bool, detail: str) -> None:
    print(f"  [{'PASS' if ok else 'FAIL'}] {name}: {detail}")
    if not ok:
        FAILURES.append(name)


def _trials(seeds: range) -> np.ndarray:
    """Rows ``(max load, idle uplinks, step_efficiency)``, one per seed."""
    sc = fabricsim.load_scenario("ecmp-collision")
    out = np.empty((len(seeds), 3))
    for i, seed in enumerate(seeds):
        res = fabricsim.run(sc.with_overrides({"seed": seed}), engine="flow")
        counts = res.flows["path"].str.split(">").str[1].value_counts()
        out[i] = (int(counts.max()), UPLINKS - len(counts), res.summary["step_efficiency"])
    return out


def measure(trials: int, workers: int) -> np.ndarray:
    step = max(1, min(500, -(-trials // (4 * workers))))
    chunks = [range(a, min(a + step, trials)) for a in range(0, trials, step)]
    if workers <= 1:
        return np.concatenate([_trials(c) for c in chunks])
    with ProcessPoolExecutor(workers) as pool:
        return np.concatenate(list(pool.map(_trials, chunks)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=20_000)
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    args = ap.parse_args(argv)
    n = args.trials

    exact = ecmp_collision_stats(FLOWS, UPLINKS)
    loads = np.array(list(exact.max_load_distribution), dtype=float)
    probs = np.array(list(exact.max_load_distribution.values()))
    sd_max = math.sqrt(float(probs @ loads**2) - exact.expected_max_load**2)
    sd_inv = math.sqrt(float(probs @ loads**-2) - exact.efficiency**2)
    e2 = UPLINKS * (UPLINKS - 1) * (1 - 2 / UPLINKS) ** FLOWS
    sd_idle = math.sqrt(e2 + exact.expected_idle_uplinks - exact.expected_idle_uplinks**2)

    t0 = time.perf_counter()
    rows = measure(n, args.workers)
    wall = time.perf_counter() - t0
    max_load, idle, eff = rows[:, 0], rows[:, 1], rows[:, 2]
    print(
        f"ecmp-collision, flow engine: {n} seeds in {wall:.0f} s ({args.workers} workers); "
        f"tolerances at a two-sided false-alarm rate of {ALPHA:g} per check ({Z:.2f} SE)"
    )

    observed = np.array([np.sum(max_load == k) for k in loads])
    print("  max load  measured   exact")
    for k, o, p in zip(loads.astype(int), observed, probs, strict=True):
        print(f"  {k:8d}  {o / n:.6f}  {p:.6f}")
    obs, exp = [], []
    acc_o = acc_e = 0.0
    for o, e in zip(observed[::-1], probs[::-1] * n, strict=True):
        acc_o, acc_e = acc_o + o, acc_e + e
        if acc_e >= 5:
            obs.append(acc_o)
            exp.append(acc_e)
            acc_o = acc_e = 0.0
    obs[-1] += acc_o
    exp[-1] += acc_e
    p = chisquare(obs, exp).pvalue
    check("max-load distribution", p > ALPHA, f"chi-square p = {p:.3g} over {len(obs)} bins")

    none = int(np.sum(max_load == 1))
    p = binomtest(none, n, exact.p_no_collision).pvalue
    check(
        "P(no collision)",
        p > ALPHA,
        f"measured {none / n:.5f} ({none}/{n}) exact {exact.p_no_collision:.5f}, p = {p:.3g}",
    )
    for name, sample, value, sd in [
        ("E[max load]", max_load, exact.expected_max_load, sd_max),
        ("E[idle uplinks]", idle, exact.expected_idle_uplinks, sd_idle),
        ("E[1/max load]", 1 / max_load, exact.efficiency, sd_inv),
    ]:
        tol = Z * sd / math.sqrt(n)
        got = float(sample.mean())
        check(name, abs(got - value) <= tol, f"measured {got:.4f} exact {value:.4f} +- {tol:.4f}")
    lift = eff - 1 / max_load
    check(
        "step_efficiency set by the busiest uplink",
        bool(lift.min() >= -1e-9 and lift.max() <= LATENCY_LIFT),
        f"step_efficiency - 1/max load in [{lift.min():.4f}, {lift.max():.4f}] "
        f"(allowed [0, {LATENCY_LIFT}]); mean step_efficiency {eff.mean():.4f} "
        f"(exact E[1/k] {exact.efficiency:.4f}; the path latency lifts it)",
    )
    if FAILURES:
        print("failed:", ", ".join(FAILURES))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
