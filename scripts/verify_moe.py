"""Full verification of the MoE dispatch work (``003_*.txt``); the test suite runs reduced.

Checks, each printed with its measured numbers and PASS/FAIL:

1. the paper's 3 x 3 example: M = 4000 (column 3; the row maximum is 3000) and R as printed;
   5,000 random matrices (uniform and mixed 200/400/800 Gbps ports): no row or column of R
   above 1, the busiest exactly 1;
2. the exponential incast, open loop, round robin, pure Zipf (s = 1), N = 64, 128, 512: active
   destinations per sender, hot-receiver arrival rate and total backlog against the paper's
   closed forms, the corrected continuum and the exact fluid solution (PASS: every exact
   error <= 1 %); PNG plots in ``--out``;
3. rate-based (paced) senders: no backlog, CCT at its lower bound, on pure Zipf and on
   DeepSeek-V3 / Qwen3-235B dispatches (Zipf s = 0.25, 0.5; top-k 1, 2, 4, 8), also with
   mixed NIC rates; round robin's peak backlog and the max-min engine's CCT inflation beside;
4. a Chakra trace written from a dispatch matrix reads back as the same matrix.

Run: ``python scripts/verify_moe.py [--out DIR] [--gpus N]``.  Exit code 1 if a check fails.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

import fabricsim
from fabricsim.analysis import moe_incast as mi
from fabricsim.experiments.runner import fabric_of
from fabricsim.report.plots import plot_incast
from fabricsim.workloads import generate
from fabricsim.workloads.chakra import chakra_matrix, send_node, write_trace
from fabricsim.workloads.moe import (
    normalization_factor,
    normalized_rates,
    remove_intra_server,
    resolve_shape,
    token_matrix,
)

FAILED: list[str] = []


def check(name: str, ok: bool, detail: str) -> None:
    print(f"  [{'PASS' if ok else 'FAIL'}] {name}: {detail}")
    if not ok:
        FAILED.append(name)


def paper_example_and_properties() -> None:
    print("1. normalization")
    d = np.array([[0, 1000, 2000], [800, 0, 2000], [2000, 1000, 0]], dtype=float)
    r = normalized_rates(d)
    check(
        "paper 3x3",
        normalization_factor(d) == 4000
        and r.tolist() == [[0, 0.25, 0.5], [0.2, 0, 0.5], [0.5, 0.25, 0]],
        f"M = {normalization_factor(d):g} (row max {d.sum(1).max():g}, column max "
        f"{d.sum(0).max():g}), R = {r.tolist()}",
    )
    rng = np.random.default_rng(11)
    worst, tight = 0.0, 0.0
    for trial in range(5000):
        n = int(rng.integers(2, 40))
        m = rng.pareto(1.0, (n, n)) * (rng.random((n, n)) < rng.random())
        m[rng.integers(n), rng.integers(n)] += 1.0
        if trial % 2:
            send, recv = rng.choice([200e9, 400e9, 800e9], n), rng.choice([200e9, 400e9, 800e9], n)
            rr = normalized_rates(m, (send, recv))
            use = np.r_[rr.sum(1), (rr * send[:, None]).sum(0) / recv]
        else:
            rr = normalized_rates(m)
            use = np.r_[rr.sum(1), rr.sum(0)]
        worst = max(worst, use.max() - 1)
        tight = max(tight, abs(use.max() - 1))
    check(
        "R rows/columns",
        worst <= 1e-12 and tight <= 1e-12,
        f"5000 matrices: largest excess over 1 = {worst:.1e}, |max - 1| <= {tight:.1e}",
    )


def pure_zipf(n: int, flow_model: str = "open_loop", scheduler: str = "round_robin") -> dict:
    return {
        "engine": {"kind": "flow", "flow_model": flow_model},
        "topology": {
            "kind": "leaf_spine",
            "leaves": 1,
            "spines": 1,
            "hosts_per_leaf": 2 * n,
            "link_gbps": 800,
            "link_delay_us": 0.0,
        },
        "workload": {
            "kind": "moe",
            "matrix": "pure_zipf",
            "total_bytes_per_sender": 4_000_000,
            "scheduler": scheduler,
        },
        "nic": {"header_bytes": 0, "packet_spraying_type": "none"},
    }


def incast(out: Path) -> None:
    print("2. exponential incast (pure Zipf, open loop, round robin)")
    pd.set_option("display.width", 200)
    for n in (64, 128, 512):
        res = fabricsim.run(pure_zipf(n))
        tl = res.tables["timeline_backlog"]
        total = float(res.flows[res.flows["src"] == "host0"]["size_bytes"].sum())
        cmp = mi.compare(tl, n, total, 800e9)
        print(f"  N = {n}, T = {total:.0f} B, alpha = H_N = {mi.harmonic(n):.4f}")
        shown = cmp[
            [
                "quantity",
                "t_over_T",
                "measured",
                "paper",
                "corrected",
                "exact",
                "err_paper",
                "err_corrected",
                "err_exact",
            ]
        ]
        print(
            "    "
            + shown.to_string(index=False, float_format=lambda v: f"{v:.4g}").replace(
                "\n", "\n    "
            )
        )
        err = float(cmp["err_exact"].abs().max())
        check(f"N={n} exact fluid", err <= 0.01, f"largest |error| vs exact = {err:.2e}")
        png = plot_incast(tl, n, total, 800e9, out / f"moe_incast_{n}.png")
        print(f"    plot: {png}")


def capped_max_min_cct(sc: fabricsim.Scenario) -> float:
    """CCT inflation on the max-min engine with the rate-based caps (the runner applies them)."""
    sc = sc.with_overrides({"engine.flow_model": "max_min"})
    return float(fabricsim.run(sc, engine="flow").summary["cct_inflation"])


def dispatch(gpus: int, model: str, s: float, k: int, degraded: dict | None = None) -> dict:
    return {
        "engine": {"kind": "flow", "flow_model": "open_loop"},
        "topology": {
            "kind": "leaf_spine",
            "leaves": gpus // 16,
            "spines": 16,
            "hosts_per_leaf": 16,
            "link_gbps": 800,
            "degraded_links": degraded or {},
        },
        "workload": {
            "kind": "moe",
            "matrix": "zipf",
            "model": model,
            "zipf_s": s,
            "top_k": k,
            "tokens_per_gpu": 1024,
        },
        "nic": {"packet_spraying_type": "none"},
    }


def rate_based(gpus: int) -> None:
    print("3. rate-based vs round robin")
    res = fabricsim.run(pure_zipf(512, scheduler="rate_based"))
    check(
        "pure Zipf N=512 paced",
        res.summary["peak_backlog_bytes"] == 0.0,
        f"peak backlog {res.summary['peak_backlog_bytes']:g} B, cct_inflation "
        f"{res.summary['cct_inflation']:.6f}",
    )
    rows = []
    degraded = {"host0->leaf0": 0.25, "host5->leaf0": 0.5, "leaf1->host17": 0.5}
    cases = [
        (m, s, k, None)
        for m in ("deepseek-v3", "qwen3-235b")
        for s in (0.25, 0.5)
        for k in (1, 2, 4, 8)
    ] + [("deepseek-v3", 0.5, 8, degraded)]
    for model, s, k, deg in cases:
        base = fabricsim.load_scenario(dispatch(gpus, model, s, k, deg))
        rr = fabricsim.run(base).summary
        paced = fabricsim.run(base.with_overrides({"workload.scheduler": "rate_based"})).summary
        mm_rr = fabricsim.run(base.with_overrides({"engine.flow_model": "max_min"})).summary
        mm_rb = capped_max_min_cct(
            base.with_overrides(
                {"engine.flow_model": "max_min", "workload.scheduler": "rate_based"}
            )
        )
        rows.append(
            (
                model,
                s,
                k,
                "mixed" if deg else "800G",
                rr["peak_backlog_bytes"] / 1e6,
                rr["hot_receiver_peak_queue_bytes"] / 1e6,
                paced["peak_backlog_bytes"],
                paced["cct_inflation"],
                paced["cct_s"] / paced_ideal_s(base) - 1,
                mm_rr["cct_inflation"],
                mm_rb,
            )
        )
    df = pd.DataFrame(
        rows,
        columns=[
            "model",
            "zipf_s",
            "top_k",
            "nics",
            "rr_peak_backlog_MB",
            "rr_hot_queue_MB",
            "paced_backlog_B",
            "paced_inflation",
            "paced_vs_ideal",
            "maxmin_rr_inflation",
            "maxmin_capped_inflation",
        ],
    )
    print(
        "    "
        + df.to_string(index=False, float_format=lambda v: f"{v:.4g}").replace("\n", "\n    ")
    )
    check(
        "paced: no backlog",
        bool((df["paced_backlog_B"] == 0).all()),
        f"largest paced backlog {df['paced_backlog_B'].max():g} B over {len(df)} dispatches",
    )
    check(
        "paced: all flows end at M",
        bool(df["paced_vs_ideal"].abs().max() < 1e-9),
        f"paced CCT / (M + the longest path delay) - 1 within {df['paced_vs_ideal'].abs().max():.1e}"
        f"; cct_inflation (bound with the shortest path) in [{df['paced_inflation'].min():.4f}, "
        f"{df['paced_inflation'].max():.4f}]",
    )


def paced_ideal_s(sc: fabricsim.Scenario) -> float:
    """Paced senders all end at M: CCT = M + the longest unloaded path delay of any flow."""
    fab = fabric_of(sc)
    flows = generate(sc.with_overrides({"workload.scheduler": "rate_based"}), fab)
    pairs = {
        (int(fab.host_leaf[a]), int(fab.host_leaf[b])): (int(a), int(b))
        for a, b in zip(flows.src, flows.dst, strict=True)
    }
    mss, hdr = sc.nic.rdma_data_mss, sc.nic.header_bytes
    lat = max(
        fab.unloaded_latency_s(fab.paths(a, b), mss + hdr, worst=False) for a, b in pairs.values()
    )
    return float(flows.meta["moe"]["m_s"]) + lat


def chakra_round_trip(gpus: int) -> None:
    print("4. Chakra round trip")
    sc = fabricsim.load_scenario(dispatch(gpus, "deepseek-v3", 0.5, 8))
    shape = resolve_shape(sc.workload, gpus)  # type: ignore[arg-type]
    counts = token_matrix(gpus, 256, shape, 0.5, np.random.default_rng(5))
    d, _ = remove_intra_server(counts * float(shape.token_bytes), 8)
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(gpus):
            nodes = [send_node(j + 1, dst=int(j), size=int(d[r, j])) for j in np.flatnonzero(d[r])]
            write_trace(Path(tmp) / f"dispatch.{r}.et", nodes)
        back = chakra_matrix(tmp)
    check(
        "chakra",
        np.array_equal(back, d),
        f"{gpus} ranks, {int((d > 0).sum())} sends, "
        f"{d.sum() / 1e6:.1f} MB: identical = {np.array_equal(back, d)}",
    )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--out", type=Path, default=Path(tempfile.gettempdir()) / "fabricsim-verify-moe"
    )
    ap.add_argument("--gpus", type=int, default=64, help="GPU-level dispatches (multiple of 16)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    paper_example_and_properties()
    incast(args.out)
    rate_based(args.gpus)
    chakra_round_trip(args.gpus)
    print("FAILED: " + ", ".join(FAILED) if FAILED else "all MoE checks passed")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
