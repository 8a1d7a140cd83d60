"""Flow-engine speed: a 1,024-host k = 16 fat tree with 10,000 flows.

Flows: uniform random host pairs, 1-64 MB sizes (log-uniform), Poisson arrivals at an offered
load of about 40 % of the hosts' NIC capacity, per-flow ECMP.  Prints wall time, events and
flow events per second, for both solvers (``engine.flow_solver``), with their speed ratio and
the largest relative FCT difference.  Run:
``python benchmarks/bench_flow.py [--flows N] [--k K] [--solver both|incremental|reference]
[--policy ideal_spray] [--spray default|oblivious]`` (the multipath fluid forms).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

import fabricsim


def make_trace(path: Path, flows: int, hosts: int, rate_gbps: float, load: float) -> None:
    rng = np.random.default_rng(7)
    src = rng.integers(0, hosts, flows)
    dst = (src + rng.integers(1, hosts, flows)) % hosts
    size = np.exp(rng.uniform(np.log(1e6), np.log(64e6), flows)).astype(np.int64)
    mean_bits = size.mean() * 8
    rate = load * hosts * rate_gbps * 1e9 / mean_bits  # flows per second
    start = np.cumsum(rng.exponential(1 / rate, flows))
    pd.DataFrame({"src": src, "dst": dst, "size_bytes": size, "start_s": start}).to_csv(
        path, index=False
    )


def run_one(
    trace: Path,
    k: int,
    solver: str,
    time_limit_s: float | None = None,
    policy: str = "ecmp",
    spray: str = "none",
) -> tuple[fabricsim.Result, float]:
    engine: dict[str, object] = {"flow_solver": solver}
    if time_limit_s is not None:
        engine["time_limit_s"] = time_limit_s
    sc = fabricsim.load_scenario(
        {
            "name": "bench-flow",
            "topology": {"kind": "fat_tree", "k": k, "link_gbps": 100},
            "workload": {"kind": "trace", "path": str(trace)},
            "nic": {"packet_spraying_type": spray},
            "lb": {"policy": policy},
            "engine": engine,
        }
    )
    t0 = time.perf_counter()
    res = fabricsim.run(sc, engine="flow")
    return res, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--flows", type=int, default=10_000)
    ap.add_argument("--k", type=int, default=16)
    ap.add_argument("--load", type=float, default=0.4)
    ap.add_argument(
        "--solver",
        choices=["both", "incremental", "reference"],
        default="both",
        help="both: incremental then reference, their FCTs compared and the speed ratio printed",
    )
    ap.add_argument(
        "--time-limit",
        type=float,
        default=None,
        help="simulate only this many seconds (both solvers): a prefix of a run too long for "
        "the reference; flows unfinished at the limit are compared as unfinished",
    )
    ap.add_argument("--policy", default="ecmp", help="lb.policy (e.g. ideal_spray)")
    ap.add_argument(
        "--spray", default="none", help="nic.packet_spraying_type: none, default, oblivious"
    )
    args = ap.parse_args()
    hosts = args.k**3 // 4
    solvers = ["incremental", "reference"] if args.solver == "both" else [args.solver]
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "flows.csv"
        make_trace(trace, args.flows, hosts, 100.0, args.load)
        for solver in solvers:
            res, wall = run_one(trace, args.k, solver, args.time_limit, args.policy, args.spray)
            results[solver] = res
            s, tm = res.summary, res.timing
            print(f"[{solver}] hosts={hosts} flows={args.flows} completed={s['flows_completed']}")
            print(
                f"[{solver}] wall_s={wall:.2f} engine_wall_s={tm['wall_s']:.2f} "
                f"events={s['events']} flow_events_per_s={s['events'] / tm['wall_s']:.0f}"
            )
            print(f"[{solver}] fct_mean_s={s['fct_mean_s']:.4g} fct_p99_s={s['fct_p99_s']:.4g}")
    if len(results) == 2:
        inc, ref = results["incremental"], results["reference"]
        a, b = inc.flows["fct_s"].to_numpy(), ref.flows["fct_s"].to_numpy()
        assert np.array_equal(np.isnan(a), np.isnan(b)), "the solvers finished different flows"
        rel = float(np.nanmax(np.abs(a - b) / b, initial=0.0)) if len(a) else 0.0
        speed = ref.timing["wall_s"] / inc.timing["wall_s"]
        print(f"incremental vs reference: engine {speed:.1f}x faster, max FCT rel diff {rel:.2g}")


if __name__ == "__main__":
    main()
