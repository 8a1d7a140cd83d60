"""Full verification of the KV-cache workload, ARK and QP scaling (the test suite runs reduced).

Checks, each printed with its measured numbers and PASS/FAIL:

1. workload: the prompt mean of >= 25,000 rank-Zipf samples within 3 % of the analytic mean
   (13,302.5 tokens), flow sizes within [131,072,000, 6,894,387,200] B, Llama-3-8B 131,072 B/token;
2. ARK vs ECMP on the ``ark`` scenario over paired seeds: at QPS 25 mean and P95 FCT at least
   10 % lower, at QPS 1 within 5 %, ECMP's largest per-spine peak >= 1.2x ARK's;
3. a forced race on the flow engine: one flow keeps the spine, the other is re-routed;
4. QP scaling (split) on ``ecmp-collision``: mean 1/step_efficiency for q = 1, 2, 4, 8, 16
   within 0.1 of 2.60, 2.10, 1.76, 1.53, 1.37 over 600 (q = 1) and 200 seeds, as reported and
   with the path latency removed, and the size of the latency bias;
5. with ``--sweep``: the QPS 1 ... 30 sweep table (markdown, as in docs/ark.md).

Run: ``python scripts/verify_ark.py [--seeds N] [--sweep] [--sweep-seeds N] [--workers N]``.
Exit code 1 if a check fails.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

import fabricsim
from fabricsim.config import load_scenario
from fabricsim.experiments.runner import fabric_of
from fabricsim.experiments.study import qps_sweep, sweep_table
from fabricsim.workloads.kv_cache import kv_cache
from fabricsim.workloads.kv_models import RankZipf

FAILED: list[str] = []


def check(name: str, ok: bool, detail: str) -> None:
    print(f"[{'PASS' if ok else 'FAIL'}] {name}: {detail}")
    if not ok:
        FAILED.append(name)


def verify_workload() -> None:
    analytic = RankZipf().mean()
    for seed in (1, 2, 3):
        sc = load_scenario("ark").with_overrides({"workload.requests": 25_000, "seed": seed})
        table = kv_cache(sc, fabric_of(sc))
        tokens, size = table.extra["prompt_tokens"], table.size_bytes
        err = tokens.mean() / analytic - 1
        check(
            f"prompt mean, 25,000 samples, seed {seed}",
            abs(err) < 0.03,
            f"{tokens.mean():.1f} vs analytic {analytic:.1f} tokens ({100 * err:+.2f} %)",
        )
        check(
            f"flow sizes, seed {seed}",
            size.min() >= 131_072_000 and size.max() <= 6_894_387_200,
            f"{size.min():,} ... {size.max():,} B (mean {size.mean() / 2**30:.3f} GiB)",
        )
    per_token = table.meta["kv_cache"]["kv_bytes_per_token"]
    check("Llama-3-8B KV bytes per token", per_token == 131_072, f"{per_token:,} B")


def paired(qps: float, seeds: int) -> pd.DataFrame:
    rows = []
    for seed in range(1, seeds + 1):
        for policy in ("ecmp", "ark"):
            sc = load_scenario("ark").with_overrides(
                {"workload.qps": qps, "seed": seed, "lb.policy": policy}
            )
            s = fabricsim.run(sc).summary
            rows.append(
                {
                    "seed": seed,
                    "policy": policy,
                    "fct_mean_s": s["fct_mean_s"],
                    "fct_p95_s": s["fct_p95_s"],
                    "ttft_mean_s": s["ttft_mean_s"],
                    "ttft_p95_s": s["ttft_p95_s"],
                    "peak": max(s["spine_peak_flows"].values()),
                    "fallbacks": s.get("ark_fallbacks", 0),
                    "races": s.get("ark_races", 0),
                }
            )
    return pd.DataFrame(rows)


def verify_ark(seeds: int) -> None:
    for qps, limit in ((25, -0.10), (1, 0.05)):
        df = paired(qps, seeds)
        mean = df.groupby("policy").mean(numeric_only=True)
        print(f"\nQPS {qps}, seeds 1..{seeds} (mean over seeds):")
        print(mean[["fct_mean_s", "fct_p95_s", "ttft_mean_s", "ttft_p95_s", "peak"]].round(4))
        for key in ("fct_mean_s", "fct_p95_s", "ttft_mean_s", "ttft_p95_s"):
            change = mean.loc["ark", key] / mean.loc["ecmp", key] - 1
            per_seed = (
                df[df.policy == "ark"][key].to_numpy() / df[df.policy == "ecmp"][key].to_numpy() - 1
            )
            detail = f"{100 * change:+.1f} % (per seed {np.round(100 * per_seed, 1).tolist()})"
            if key.startswith("ttft"):
                print(f"       ARK vs ECMP {key}: {detail}")
            elif qps == 25:
                check(f"QPS 25 ARK {key} <= -10 %", change <= limit, detail)
            else:
                check(f"QPS 1 |ARK - ECMP| {key} <= 5 %", abs(change) <= limit, detail)
        if qps == 25:
            ratio = mean.loc["ecmp", "peak"] / mean.loc["ark", "peak"]
            check(
                "QPS 25 ECMP spine peak >= 1.2x ARK's",
                ratio >= 1.2,
                f"{mean.loc['ecmp', 'peak']:.1f} vs {mean.loc['ark', 'peak']:.1f} ({ratio:.2f}x); "
                f"ARK fallbacks {mean.loc['ark', 'fallbacks']:.0f}, races "
                f"{mean.loc['ark', 'races']:.1f} per 1000 requests",
            )


def verify_race() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "race.csv"
        path.write_text("src,dst,size_bytes,start_s\n0,8,1000000000,0\n1,9,1000000000,2e-6\n")
        data = load_scenario("ark").to_dict()
        data["workload"] = {"kind": "trace", "path": str(path)}
        data["lb"]["policy"] = "ark"
        res = fabricsim.run(data)
    spines = [p.split(">")[1] for p in res.flows["path"]]
    check(
        "forced race (2 us apart, 5 us control delay)",
        res.summary["ark_races"] == 1 and spines == ["spine0", "spine1"],
        f"races {res.summary['ark_races']}, final spines {spines}",
    )


def _latency_s(sc) -> float:
    one = fabricsim.run(sc.with_overrides({"workload.size_bytes": 1, "workload.hosts": 1}))
    wire = 1 + sc.nic.header_bytes
    return float(one.flows["fct_s"].iloc[0]) - wire * 8 / (sc.topology.host_link_gbps * 1e9)


def verify_qp_scaling() -> None:
    expected = {1: 2.60, 2: 2.10, 4: 1.76, 8: 1.53, 16: 1.37}
    print()
    for q, target in expected.items():
        seeds = 600 if q == 1 else 200
        base = load_scenario("ecmp-collision").with_overrides(
            {"lb.policy": "qp_scaling", "lb.qp_mode": "split", "lb.qp_count": q}
        )
        lat = _latency_s(base)
        raw, clean = [], []
        for seed in range(1, seeds + 1):
            s = fabricsim.run(base.with_overrides({"seed": seed})).summary
            slowest = s["step_ideal_s"] / s["step_efficiency"]
            raw.append(slowest / s["step_ideal_s"])
            clean.append((slowest - lat) / (s["step_ideal_s"] - lat))
        r, c = float(np.mean(raw)), float(np.mean(clean))
        se = float(np.std(raw) / np.sqrt(seeds))
        check(
            f"QP scaling q={q:2d} ({seeds} seeds)",
            abs(r - target) <= 0.1 and abs(c - target) <= 0.1,
            f"1/step_efficiency {r:.3f} +- {se:.3f} (latency-free {c:.3f}; model {target}); "
            f"latency bias {r - c:+.3f}",
        )


def print_sweep(seeds: int, workers: int) -> None:
    sweep = qps_sweep(range(1, 31), seeds=range(1, seeds + 1), workers=workers)
    table = sweep_table(sweep)
    print(f"\nQPS sweep, seeds 1..{seeds} (mean over seeds; FCT and TTFT in s):\n")
    print(
        "| QPS | rho | ECMP mean FCT | ARK mean FCT | change | ECMP P95 FCT | ARK P95 FCT | "
        "change | TTFT mean change | TTFT P95 change |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in table.itertuples():
        print(
            f"| {r.qps:.0f} | {r.rho:.2f} | {r.fct_mean_s_ecmp:.3f} | {r.fct_mean_s_ark:.3f} | "
            f"{r.fct_mean_s_change_pct:+.1f} % | {r.fct_p95_s_ecmp:.3f} | {r.fct_p95_s_ark:.3f} | "
            f"{r.fct_p95_s_change_pct:+.1f} % | {r.ttft_mean_s_change_pct:+.1f} % | "
            f"{r.ttft_p95_s_change_pct:+.1f} % |"
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10, help="paired seeds of the ARK checks (>= 5)")
    ap.add_argument("--sweep", action="store_true", help="also print the QPS sweep table")
    ap.add_argument("--sweep-seeds", type=int, default=5)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    verify_workload()
    verify_ark(max(args.seeds, 5))
    verify_race()
    verify_qp_scaling()
    if args.sweep:
        print_sweep(args.sweep_seeds, args.workers)
    print(f"\n{'all checks passed' if not FAILED else 'FAILED: ' + ', '.join(FAILED)}")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
