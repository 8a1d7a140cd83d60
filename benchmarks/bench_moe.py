"""MoE dispatch speed: a 512 x 512 GPU matrix on the open-loop and the rate-capped flow engines.

The matrix: DeepSeek-V3 token shape (top-8, 7168 B tokens) with 4 experts per GPU (2,048, so
every GPU receives; ``--model deepseek-v3`` uses its 256), Zipf(0.5) popularity, ``--tokens``
tokens per GPU, 8 GPUs per server (NVLink blocks removed), on a non-blocking
leaf-spine of 16 leaves x 32 hosts and 32 spines at 800 Gbps.  Runs:

1. open loop, round robin (the exponential-incast model);
2. open loop, paced at ``R_ij`` x line rate (rate-based);
3. max-min with per-flow caps (rate-based on the usual flow engine, per-flow ECMP) — the
   caps reach the flow engine through :class:`fabricsim.lb.base.RateCapPolicy`.

Also ``--pure-zipf``: the paper's pure Zipf matrix (N = 512 senders, bipartite, 262,144 flows)
on the open-loop engine.  Prints wall times.  Run: ``python benchmarks/bench_moe.py``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import fabricsim
from fabricsim.experiments.runner import fabric_of, router_of
from fabricsim.flowsim.engine import FlowEngine
from fabricsim.lb import PolicyContext, make_policy
from fabricsim.lb.base import with_rate_caps
from fabricsim.rng import stream
from fabricsim.workloads import generate


def scenario(
    gpus: int, tokens: int, flow_model: str, scheduler: str, model: str | None = None
) -> fabricsim.Scenario:
    return fabricsim.load_scenario(
        {
            "name": "bench-moe",
            "engine": {"kind": "flow", "flow_model": flow_model},
            "topology": {
                "kind": "leaf_spine",
                "leaves": gpus // 32,
                "spines": 32,
                "hosts_per_leaf": 32,
                "link_gbps": 800,
            },
            "workload": {
                "kind": "moe",
                "matrix": "zipf",
                "model": model,
                "zipf_s": 0.5,
                "tokens_per_gpu": tokens,
                "scheduler": scheduler,
            },
            "nic": {"packet_spraying_type": "none"},
        }
    )


def capped_max_min(sc: fabricsim.Scenario) -> tuple[float, float, int]:
    """Max-min with the rate-based caps (wall s, CCT s, flows)."""
    fab = fabric_of(sc)
    router = router_of(sc, fab)
    flows = generate(sc, fab)
    ctx = PolicyContext(sc, fab, router, flows, stream(sc.seed, "policy"))
    eng = FlowEngine(sc, fab, router, flows, with_rate_caps(make_policy(ctx), flows))
    ctx.hooks = eng
    t0 = time.perf_counter()
    out = eng.run()
    return time.perf_counter() - t0, float(np.nanmax(out.finish_s)), len(flows)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpus", type=int, default=512)
    ap.add_argument("--tokens", type=int, default=4096)
    ap.add_argument("--model", default=None, help="a preset (default: 4 experts per GPU)")
    ap.add_argument("--pure-zipf", action="store_true", help="also the 512 x 512 pure Zipf run")
    args = ap.parse_args()
    t0 = time.perf_counter()
    base = scenario(args.gpus, args.tokens, "open_loop", "round_robin", args.model)
    flows = generate(base, fabric_of(base))
    print(
        f"matrix: {args.gpus} GPUs, {len(flows)} flows, {flows.size_bytes.sum() / 1e9:.1f} GB, "
        f"generated in {time.perf_counter() - t0:.1f} s"
    )
    for scheduler in ("round_robin", "rate_based"):
        res = fabricsim.run(scenario(args.gpus, args.tokens, "open_loop", scheduler, args.model))
        s = res.summary
        print(
            f"open_loop {scheduler:11s} engine_wall_s={res.timing['wall_s']:.2f} "
            f"total_wall_s={res.timing['total_wall_s']:.2f} cct_inflation={s['cct_inflation']:.4f} "
            f"peak_backlog_GB={s['peak_backlog_bytes'] / 1e9:.2f}"
        )
    wall, cct, n = capped_max_min(
        scenario(args.gpus, args.tokens, "max_min", "rate_based", args.model)
    )
    print(f"max_min   rate_capped engine_wall_s={wall:.2f} flows={n} cct_s={cct:.6g}")
    if args.pure_zipf:
        n = args.gpus
        sc = fabricsim.load_scenario(
            {
                "engine": {"kind": "flow", "flow_model": "open_loop"},
                "topology": {
                    "kind": "leaf_spine",
                    "leaves": 1,
                    "spines": 1,
                    "hosts_per_leaf": 2 * n,
                    "link_gbps": 800,
                },
                "workload": {"kind": "moe", "matrix": "pure_zipf"},
            }
        )
        res = fabricsim.run(sc)
        print(
            f"pure_zipf N={n} open_loop engine_wall_s={res.timing['wall_s']:.2f} "
            f"total_wall_s={res.timing['total_wall_s']:.2f} flows={res.summary['flows_total']}"
        )


if __name__ == "__main__":
    main()
