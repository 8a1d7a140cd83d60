"""NSCC's cost in the packet engine: the k = 8 permutation with ``nic.cc: nscc`` vs ``constant``.

The built-in ``permutation`` scenario (128-host three-tier fat tree, 100 Gbps, 1 us links,
2 MB messages, trimming, 1-BDP queues, ``nic.initial_base_rtt_us: auto``) runs with each
congestion controller under each load-balancing method of ``--methods`` (default: per-flow
ECMP, REPS, switch adaptive).  Prints, per run, the engine's wall seconds (best of
``--repeat``), CPU seconds, events, data packets sent and mean FCT, and per method the ratio
of NSCC's wall time to the constant window's (target: <= 1.5).  Wall time follows the work
done: NSCC adds a few calls per ACK, but it also changes how many packets are sent (no
retransmission storms under ECMP collisions).  Run: ``python benchmarks/bench_nscc.py``.
"""

from __future__ import annotations

import argparse
import time

import fabricsim
from fabricsim.experiments.methods import method_overrides

TARGET = 1.5


def scenario(method: str, cc: str) -> fabricsim.Scenario:
    base = fabricsim.load_scenario("permutation")
    return base.with_overrides({**method_overrides(method, "packet", 1), "nic.cc": cc})


def measure(sc: fabricsim.Scenario, repeat: int) -> tuple[float, float, dict]:
    """Best wall and CPU seconds of the engine over ``repeat`` runs, and the summary."""
    best_wall = best_cpu = float("inf")
    summary: dict = {}
    for _ in range(repeat):
        cpu0 = time.process_time()
        res = fabricsim.run(sc, engine="packet")
        best_cpu = min(best_cpu, time.process_time() - cpu0)
        best_wall = min(best_wall, res.timing["wall_s"])
        summary = {**res.summary, "events": res.timing["events"]}
    return best_wall, best_cpu, summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--methods", default="ecmp,reps,adaptive")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(
        f"{'method':<10}{'cc':<10}{'wall_s':>8}{'cpu_s':>7}{'events':>11}{'data_pkts':>11}"
        f"{'retx':>8}{'mean_us':>9}"
    )
    worst = 0.0
    for method in args.methods.split(","):
        walls = {}
        for cc in ("constant", "nscc"):
            wall, cpu, s = measure(scenario(method, cc), args.repeat)
            walls[cc] = wall
            print(
                f"{method:<10}{cc:<10}{wall:>8.2f}{cpu:>7.2f}{s['events']:>11,}"
                f"{s['packets_sent']:>11,}{s['packets_retransmitted']:>8,}"
                f"{s['fct_mean_s'] * 1e6:>9.1f}"
            )
        ratio = walls["nscc"] / walls["constant"]
        worst = max(worst, ratio)
        print(f"{method:<10}{'nscc/const':<10}{ratio:>8.2f}")
    verdict = "PASS" if worst <= TARGET else "FAIL"
    print(f"[{verdict}] worst NSCC / constant wall time {worst:.2f} (target <= {TARGET})")


if __name__ == "__main__":
    main()
