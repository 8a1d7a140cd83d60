"""Full verification of load balancing on the packet engine (the CI tests run reduced versions).

Fabric: the 128-host three-tier fat tree (k = 8, 100 Gbps, 1 us links, 4 KiB MSS, trimming,
one-BDP queues, NSCC, ``nic.initial_base_rtt_us: auto``), i.e. the built-in ``permutation``
scenario with ``nic.cc: nscc``.  Checks, each printed with its measured numbers and PASS/FAIL:

1. Random permutations of 2 MB messages, ``--seeds`` seeds (default 5), every method of
   ``fabricsim compare``: ECMP's mean FCT >= 1.6 x switch per-packet spraying's (and the
   NIC's oblivious spraying's); ``reps`` within 2 % of ``oblivious`` or better on mean and
   P99; switch ``adaptive`` the best or within 5 % of it; ``flowlet`` (10 us gap) within 15 %
   of ECMP.  ``flowlet`` with ``flowlet_pick: least_loaded`` and NSCC with the seed's 6 us
   base RTT are printed for information.
2. Incast 32 -> 1 and 127 -> 1 of 2 MB, NSCC with trimming: every message finishes, the
   receiver's link >= 90 % busy from the first arrival to the last, retransmissions reported;
   drop-tail for comparison.
3. Four core links degraded to 25 %: the rise of ECMP's max FCT over the healthy run is
   >= 2 x the rise of REPS's (seeds as in 1).
4. A ring all-reduce of 64 MiB over 16 hosts reaches >= 90 % of the link's bus bandwidth.
5. A link failing mid-run (information): per-flow ECMP, REPS, switch adaptive.

Run: ``python scripts/verify_lb.py [--seeds N] [--workers N] [--out DIR]``; exit code 1 if a
check fails.  About 6 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

import fabricsim
from fabricsim.analysis.links import receiver_busy_fraction
from fabricsim.experiments.compare import compare, format_table
from fabricsim.experiments.runner import fabric_of
from fabricsim.report.plots import compare_figures

FAILURES: list[str] = []
BASE = fabricsim.load_scenario("permutation").with_overrides({"nic.cc": "nscc"})
DEGRADED = {"core0->agg1_0": 0.25, "core5->agg3_1": 0.25, "core10->agg5_2": 0.25, "core15->agg7_3": 0.25}  # fmt: skip


def check(name: str, ok: bool, detail: str) -> None:
    print(f"  [{'PASS' if ok else 'FAIL'}] {name}: {detail}")
    if not ok:
        FAILURES.append(name)


def permutation(seeds: int, workers: int, out: str | None) -> None:
    print(f"1. k = 8 permutation of 2 MB, NSCC, seeds {BASE.seed}..{BASE.seed + seeds - 1}")
    t0 = time.perf_counter()
    res = compare(
        BASE, engine="packet", seeds=seeds, workers=workers, out=out, figures=compare_figures
    )
    print(format_table(res.table))
    print(f"  ({time.perf_counter() - t0:.0f} s)")
    t = res.table.set_index("method")
    mean, p99 = t["fct_mean_us"], t["fct_p99_us"]
    done = bool((res.runs["completed"] == res.runs["flows"]).all())
    check("every message finishes", done, f"{int(t['completed'].sum())}/{int(t['flows'].sum())}")
    r = mean["ecmp"] / mean["spray"]
    check("ECMP mean >= 1.6 x switch spray", r >= 1.6, f"{r:.2f} x")
    r = mean["ecmp"] / mean["oblivious"]
    check("ECMP mean >= 1.6 x oblivious", r >= 1.6, f"{r:.2f} x")
    rm, rp = mean["reps"] / mean["oblivious"], p99["reps"] / p99["oblivious"]
    check("reps <= 1.02 x oblivious (mean, P99)", rm <= 1.02 and rp <= 1.02, f"{rm:.3f}, {rp:.3f}")
    r = mean["adaptive"] / mean.min()
    check("adaptive best or within 5 %", r <= 1.05, f"{r:.3f} x the best ({mean.idxmin()})")
    r = mean["flowlet"] / mean["ecmp"]
    check("flowlet within 15 % of ECMP", abs(r - 1) <= 0.15, f"{r:.3f} x ECMP")
    extra = compare(
        BASE.with_overrides({"switch.flowlet_pick": "least_loaded"}),
        engine="packet", seeds=seeds, workers=workers, methods=["flowlet"],
    )  # fmt: skip
    r = extra.table["fct_mean_us"][0] / mean["ecmp"]
    print(f"  (info) flowlet_pick least_loaded: {r:.3f} x ECMP")
    six = compare(
        BASE.with_overrides({"nic.initial_base_rtt_us": 6.0}),
        engine="packet", seeds=seeds, workers=workers, methods=["ecmp", "reps", "adaptive"],
    )  # fmt: skip
    for m, v in zip(six.table["method"], six.table["fct_mean_us"], strict=True):
        print(f"  (info) base RTT 6 us instead of auto: {m} mean {v:.1f} us ({v / mean[m]:.3f} x)")


def _incast(args: tuple[int, bool]) -> tuple[dict, float, float]:
    senders, trimming = args
    sc = fabricsim.load_scenario("incast").with_overrides(
        {
            "nic.cc": "nscc",
            "workload.senders": senders,
            "switch.trimming": trimming,
            "records.port_stats": True,
        }
    )
    res = fabricsim.run(sc, engine="packet")
    busy = receiver_busy_fraction(res, fabric_of(sc), sc.workload.receiver)
    return res.summary, busy, res.timing["wall_s"]


def incast(workers: int) -> None:
    print("2. incast of 2 MB messages, NSCC")
    jobs = [(32, True), (127, True), (32, False), (127, False)]
    with ProcessPoolExecutor(workers) as pool:
        results = list(pool.map(_incast, jobs))
    for (n, trimming), (s, busy, wall) in zip(jobs, results, strict=True):
        kind = "trimming" if trimming else "drop-tail"
        detail = (
            f"{s['flows_completed']}/{n} done, receiver busy {busy:.4f}, max FCT "
            f"{s['fct_max_s'] * 1e3:.3f} ms, retransmissions {s['packets_retransmitted']} "
            f"(trims {s['packets_trimmed']}, drops {s['packets_dropped']}, timeouts "
            f"{s['timeouts']}), data packets sent {s['packets_sent']} ({wall:.1f} s)"
        )
        if trimming:
            ok = s["flows_completed"] == n and busy >= 0.9
            check(f"{n} -> 1 {kind}", ok, detail)
        else:
            print(f"  (info) {n} -> 1 {kind}: {detail}")


def _max_fct(args: tuple[int, str, bool]) -> float:
    seed, spray, degraded = args
    over = {"seed": seed, "nic.packet_spraying_type": spray}
    if degraded:
        over["topology.degraded_links"] = DEGRADED
    res = fabricsim.run(BASE.with_overrides(over), engine="packet")
    assert res.summary["flows_completed"] == res.summary["flows_total"]
    return float(res.summary["fct_max_s"])


def degraded(seeds: int, workers: int) -> None:
    print(f"3. four core links at 25 %: {', '.join(DEGRADED)}")
    rise = {}
    with ProcessPoolExecutor(workers) as pool:
        for spray, name in (("none", "ECMP"), ("reps", "REPS")):
            seed_list = range(BASE.seed, BASE.seed + seeds)
            healthy = list(pool.map(_max_fct, [(s, spray, False) for s in seed_list]))
            deg = list(pool.map(_max_fct, [(s, spray, True) for s in seed_list]))
            rise[name] = float(np.mean(np.subtract(deg, healthy)))
            print(
                f"  {name}: max FCT healthy {np.mean(healthy) * 1e6:.1f} us, degraded "
                f"{np.mean(deg) * 1e6:.1f} us, rise {rise[name] * 1e6:.1f} us"
            )
    r = rise["ECMP"] / max(rise["REPS"], 1e-12)
    check("ECMP's rise >= 2 x REPS's", r >= 2, f"{r:.1f} x")


def ring() -> None:
    print("4. ring all-reduce, 64 MiB over 16 hosts (2 leaves x 8 spines, 100 Gbps)")
    sc = fabricsim.load_scenario("examples/ring_allreduce.yaml").with_overrides(
        {"nic.cc": "nscc", "nic.initial_base_rtt_us": "auto"}
    )
    for engine in ("packet", "flow"):
        s = fabricsim.run(sc, engine=engine).summary
        detail = (
            f"{engine} engine: busbw {s['busbw_gbps']:.2f} Gbps = "
            f"{s['busbw_fraction_of_link']:.4f} of the link, {s['collective_time_s'] * 1e3:.3f} ms"
        )
        if engine == "packet":
            check("busbw >= 0.9 of the link", s["busbw_fraction_of_link"] >= 0.9, detail)
        else:
            print(f"  (info) {detail}")


def failure() -> None:
    print("5. agg0_0->core0 fails at 50 us (information), seed 1")
    fail = [{"link": "agg0_0->core0", "at_s": 50e-6}]
    for name, over in (
        ("ECMP", {"nic.packet_spraying_type": "none"}),
        ("REPS", {"nic.packet_spraying_type": "reps"}),
        ("adaptive", {"switch.load_balancing_method": "adaptive"}),
    ):
        sc = BASE.with_overrides({**over, "topology.link_failures": fail})
        s = fabricsim.run(sc, engine="packet").summary
        print(
            f"  {name}: {s['flows_completed']}/{s['flows_total']} done, retransmissions "
            f"{s['packets_retransmitted']}, timeouts {s['timeouts']}, max FCT "
            f"{(s['fct_max_s'] or float('nan')) * 1e6:.0f} us"
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--workers", type=int, default=min(4, os.cpu_count() or 1))
    ap.add_argument("--out", default=None, help="keep the comparison's runs here")
    args = ap.parse_args()
    t0 = time.perf_counter()
    permutation(args.seeds, args.workers, args.out)
    incast(args.workers)
    degraded(args.seeds, args.workers)
    ring()
    failure()
    print(f"done in {time.perf_counter() - t0:.0f} s; {len(FAILURES)} failed")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
