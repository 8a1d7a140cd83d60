"""The decomposed engine against the packet engine on fabrics both can run (same scenario, seeds).

Cases (128 hosts, k = 8 fat tree, 100 Gbps): a permutation of 2 MB messages; a 32-to-1 incast
of 2 MB; Poisson arrivals with uniform pairs and log-uniform sizes 64 KB..16 MB at 30 % and
60 % load (2,000 flows); the same 30 % trace with one aggregation-core link degraded to 25 %
and, separately, one failed (its flows are not completed on either engine: the errors cover the
others); on a 4:1 oversubscribed leaf-spine (8 leaves x 16 hosts, 4 spines); KV-cache transfers
(``ark-packet``: RoCEv2, PFC, DCQCN) under ECMP and ARK; MoE dispatch with round robin
(``moe``).  ``--quick`` runs the first four.  For each case and seed: the mean and p99 FCT on both engines and
the decomposed engine's error; targets: mean within 5 %, p99 within 10 %.  Prints a markdown
table (docs/validation.md keeps the last one) and exits 1 if a target is missed.

Usage: ``python scripts/verify_decomposed.py [--seeds N] [--aggregate bottleneck,scaled,...]``
(several compositions: each is a decomposed run against the same packet run, one table each).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

import fabricsim
from fabricsim.config.loader import load_scenario
from fabricsim.experiments.intervals import ratio_interval

MEAN_TARGET, P99_TARGET = 0.05, 0.10


def poisson_trace(path: Path, hosts: int, load: float, flows: int, seed: int) -> str:
    """Poisson arrivals, uniform pairs, log-uniform sizes 64 KB..16 MB at ``load`` of the
    hosts' 100 Gbps."""
    rng = np.random.default_rng([seed, 34])
    size = np.exp(rng.uniform(np.log(65_536), np.log(16_000_000), flows)).astype(np.int64)
    src = rng.integers(0, hosts, flows)
    dst = (src + rng.integers(1, hosts, flows)) % hosts
    rate = load * hosts * 100e9 / (size.mean() * 8)  # flows per second
    start = np.cumsum(rng.exponential(1 / rate, flows))
    pd.DataFrame({"src": src, "dst": dst, "size_bytes": size, "start_s": start - start[0]}).to_csv(
        path, index=False
    )
    return str(path)


def cases(tmp: Path, seed: int) -> dict[str, dict]:
    base = {"seed": seed}
    out = {
        "permutation 2 MB": ("permutation", base),
        "incast 32-to-1": ("incast", base),
    }
    for load in (0.3, 0.6):
        trace = poisson_trace(tmp / f"p{load}-{seed}.csv", 128, load, 2000, seed)
        out[f"Poisson {load:.0%}"] = (
            "permutation",
            {**base, "workload": {"kind": "trace", "path": trace}},
        )
    if QUICK:
        return out
    p30 = {**base, "workload": {"kind": "trace", "path": str(tmp / f"p0.3-{seed}.csv")}}
    out["Poisson 30 %, a link at 25 %"] = (
        "permutation",
        {**p30, "topology.degraded_links": {"agg0_0->core0": 0.25}},
    )
    out["Poisson 30 %, a failed link"] = (
        "permutation",
        {**p30, "topology.failed_links": ["agg0_0->core0"]},
    )
    out["Poisson 30 %, leaf-spine 4:1"] = (
        "permutation",
        {
            **p30,
            "topology": {"kind": "leaf_spine", "leaves": 8, "hosts_per_leaf": 16, "spines": 4},
        },
    )
    out["KV cache, ECMP"] = ("ark-packet", base)
    out["KV cache, ARK"] = ("ark-packet", {**base, "lb.policy": "ark"})
    # the same flows on both engines: the receiver's ACK bytes counted (auto: packet engine only)
    moe = {**base, "records.timelines": False, "workload.pacing_acks": "on"}
    out["MoE, round robin"] = ("moe", moe)
    return out


QUICK = "--quick" in sys.argv


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--aggregate", default="bottleneck")
    ap.add_argument("--quick", action="store_true", help="the first four cases only")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for seed in range(1, args.seeds + 1):
            for name, (scenario, sets) in cases(Path(d), seed).items():
                sc = load_scenario(scenario).with_overrides(sets)
                t0 = time.perf_counter()
                pk = fabricsim.run(sc, engine="packet").flows["fct_s"].to_numpy()
                t1 = time.perf_counter()
                packet_s = t1 - t0
                for aggregate in args.aggregate.split(","):
                    t1 = time.perf_counter()
                    dsc = sc.with_overrides({"engine.decomposed.aggregate": aggregate})
                    res = fabricsim.run(dsc, engine="decomposed")
                    t2 = time.perf_counter()
                    dc = res.flows["fct_s"].to_numpy()
                    both = ~np.isnan(pk) & ~np.isnan(dc)  # a failed link: both finished them
                    p, c = pk[both], dc[both]
                    rows.append(
                        {
                            "aggregate": aggregate,
                            "case": name,
                            "seed": seed,
                            "mean_err": c.mean() / p.mean() - 1,
                            "p99_err": np.percentile(c, 99) / np.percentile(p, 99) - 1,
                            "packet_s": packet_s,
                            "decomposed_s": t2 - t1,
                            "links_simulated": res.summary["links_simulated"],
                            "links_loaded": res.summary["links_loaded"],
                        }
                    )
                    print(rows[-1], flush=True)
    missed = False
    for aggregate, t in pd.DataFrame(rows).groupby("aggregate", sort=False):
        print(f"\n`engine.decomposed.aggregate: {aggregate}`")
        missed |= table(t)
    return 1 if missed else 0


def table(t: pd.DataFrame) -> bool:
    """Print the markdown table of one composition's rows; True if a target is missed."""

    def geo(errs: pd.Series) -> str:  # the seeds' decomposed / packet, with its 95 % interval
        c = ratio_interval(np.ones(len(errs)), 1 + errs.to_numpy())
        ci = "" if np.isnan(c.low_pct) else f" [{c.low_pct:+.0f}, {c.high_pct:+.0f}]"
        return f"{c.pct:+.0f} %{ci}"

    g = t.groupby("case", sort=False).agg(
        mean_err=("mean_err", "mean"),
        p99_err=("p99_err", "mean"),
        mean_ci=("mean_err", geo),
        p99_ci=("p99_err", geo),
        packet_s=("packet_s", "mean"),
        decomposed_s=("decomposed_s", "mean"),
        sims=("links_simulated", "mean"),
        loaded=("links_loaded", "mean"),
    )
    print(
        "\n| case | mean FCT error [95 % CI] | p99 FCT error [95 % CI] | packet s | decomposed s | links simulated |"
    )
    print("|---|---|---|---|---|---|")
    missed = False
    for case, r in g.iterrows():
        ok = abs(r.mean_err) <= MEAN_TARGET and abs(r.p99_err) <= P99_TARGET
        missed |= not ok
        print(
            f"| {case} | {r.mean_ci} | {r.p99_ci} | {r.packet_s:.1f} | "
            f"{r.decomposed_s:.1f} | {r.sims:.0f} of {r.loaded:.0f} |{'' if ok else ' missed'}"
        )
    return missed


if __name__ == "__main__":
    sys.exit(main())
