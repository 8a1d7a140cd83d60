"""Full verification of a study's intervals (the test suite checks them on a few samples).

Checks, each printed with its measured numbers and PASS/FAIL:

1. coverage on log-normal seeds (``--trials`` simulated studies per case): the change's interval
   (geometric mean of paired ratios, shared seed load of log-sd 0 ... 0.8) covers the true
   change in 93-97 % of studies with 3, 5 and 8 seeds; the mean's interval covers the true mean
   in >= 88 % and is never <= 0, and the plain t interval's share below zero is printed beside;
2. the default study's seed count (:data:`~fabricsim.experiments.study.DEFAULT_SEEDS`): ARK's
   change at QPS 25 (mean and P95 FCT and TTFT) is significant in every window of that many
   consecutive seeds among seeds 1 ... ``--seeds`` (default 20); the share of 3-seed windows
   that are is printed beside.

Run: ``python scripts/verify_study.py [--trials N] [--seeds N] [--workers N]``.
Exit code 1 if a check fails.
"""

from __future__ import annotations

import argparse
import math
import sys

import numpy as np

from fabricsim.experiments.intervals import mean_interval, plain_interval, ratio_interval
from fabricsim.experiments.paired import run_paired
from fabricsim.experiments.study import DEFAULT_SEEDS, study_scenario

FAILED: list[str] = []
QPS_METRICS = ("fct_mean_s", "fct_p95_s", "ttft_mean_s", "ttft_p95_s")


def check(name: str, ok: bool, detail: str) -> None:
    print(f"[{'PASS' if ok else 'FAIL'}] {name}: {detail}")
    if not ok:
        FAILED.append(name)


def verify_coverage(trials: int) -> None:
    rng = np.random.default_rng(37)
    for load_sd in (0.0, 0.4, 0.8):
        for n in (3, 5, 8):
            hits = 0
            for _ in range(trials):
                load = rng.lognormal(0.0, load_sd, n)  # a seed's load slows A and B alike
                a = load * rng.lognormal(0.0, 0.2, n)
                b = 0.7 * load * rng.lognormal(0.0, 0.2, n)
                c = ratio_interval(a, b)
                hits += c.low_pct <= -30.0 <= c.high_pct
            share = hits / trials
            check(
                f"change coverage, seed load sd {load_sd}, {n} seeds",
                0.93 <= share <= 0.97,
                f"{100 * share:.1f} % of {trials} studies hold the true -30 %",
            )
    for sd in (0.2, 0.5, 0.8):
        for n in (3, 5, 8):
            true = math.exp(sd**2 / 2)
            hits = below = plain_below = 0
            for _ in range(trials):
                x = rng.lognormal(0.0, sd, n)
                low, high = mean_interval(x)
                hits += low <= true <= high
                below += low <= 0
                plain_below += plain_interval(x)[0] < 0
            share = hits / trials
            check(
                f"mean coverage, log-sd {sd}, {n} seeds",
                share >= 0.88 and below == 0,
                f"{100 * share:.1f} % hold the true mean, {below} at or below 0 "
                f"(plain t: {100 * plain_below / trials:.0f} % below 0)",
            )


def verify_default_seeds(seeds: int, workers: int) -> None:
    st = run_paired(
        study_scenario([]), ("lb.policy", ["ecmp", "ark"]), {"workload.qps": [25]},
        list(range(1, seeds + 1)), engine="flow", workers=workers,
    )  # fmt: skip
    point = {"workload.qps": 25}
    ecmp, ark = (st.results(point, p) for p in ("ecmp", "ark"))
    for metric in QPS_METRICS:
        a = np.array([r.summary[metric] for r in ecmp])
        b = np.array([r.summary[metric] for r in ark])
        for n in (3, DEFAULT_SEEDS):
            changes = [ratio_interval(a[s : s + n], b[s : s + n]) for s in range(seeds - n + 1)]
            sig = sum(bool(c.significant) for c in changes)
            worst = max(c.high_pct for c in changes)
            text = (
                f"{sig} of {len(changes)} windows of {n} seeds significant, "
                f"worst upper bound {worst:+.0f} %"
            )
            if n == DEFAULT_SEEDS:
                first = changes[0]
                text += (
                    f"; seeds 1-{n}: {first.pct:+.0f} % [{first.low_pct:+.0f}, "
                    f"{first.high_pct:+.0f}]"
                )
                check(f"QPS 25 {metric}, {n} seeds", sig == len(changes), text)
            else:
                print(f"       QPS 25 {metric}: {text}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=4000)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    verify_coverage(args.trials)
    verify_default_seeds(args.seeds, args.workers)
    print("FAILED: " + ", ".join(FAILED) if FAILED else "all checks passed")
    sys.exit(1 if FAILED else 0)


if __name__ == "__main__":
    main()
