"""DCQCN convergence study of ``docs/dcqcn.md``: 2 and 8 flows into one 100 Gbps port.

N senders on one leaf send long flows to one receiver on the same leaf (its 100 Gbps port is
the only bottleneck), all starting at t = 0 at line rate, as DCQCN flows do (no slow start);
RoCEv2 with PFC, DCQCN with the mlx5 firmware defaults (``nic.dcqcn`` unset) or the paper's
values (:data:`fabricsim.config.roce.DCQCN_PAPER`).  Per run: each flow's sending rate in
``WINDOW_S`` windows, Jain's fairness index of those rates, the receiver port's queue, CNPs
and pauses.  Over seeds (the ECN marks are random): the mean and its 95 % interval
(:mod:`fabricsim.experiments.intervals`).

Run: ``python scripts/dcqcn_convergence.py [--seeds N] [--out docs/dcqcn_flows.png]``
(about 2 minutes as pure Python with 5 seeds).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

import fabricsim
from fabricsim.config.roce import DCQCN_PAPER, dcqcn_ecn_bytes
from fabricsim.experiments.intervals import mean_interval

WINDOW_S = 100e-6
RUN_S = {2: 0.010, 8: 0.020}
"""The span measured; each flow carries 1.3 x its fair share of it, so none ends before."""
SETTLED_S = {2: (0.005, 0.010), 8: (0.010, 0.020)}
"""The window the steady-state numbers average over."""
PROFILES = {"mlx5": {}, "paper": {f"nic.dcqcn.{k}": v for k, v in DCQCN_PAPER.items()}}


def scenario(flows: int, trace: Path, seed: int, profile: str) -> fabricsim.Scenario:
    """``flows`` senders (host0 ...) to host<flows> on one leaf, all from t = 0."""
    size = int(1.3 * 100e9 / flows * RUN_S[flows] / 8)
    rows = [f"host{i},host{flows},{size},0" for i in range(flows)]
    trace.write_text("src,dst,size_bytes,start_s\n" + "\n".join(rows) + "\n")
    sc = fabricsim.load_scenario(
        {
            "name": f"dcqcn-{flows}",
            "seed": seed,
            "engine": {"kind": "packet"},
            "topology": {
                "kind": "leaf_spine",
                "leaves": 2,
                "spines": 1,
                "hosts_per_leaf": flows + 1,
                "host_link_gbps": 100,
                "fabric_link_gbps": 400,
                "link_delay_us": 1.0,
            },
            "workload": {"kind": "trace", "path": str(trace)},
            "nic": {"transport": "roce", "initial_base_rtt_us": "auto"},
            "records": {"uet_monitor": True, "timelines": True, "timeline_interval_us": 10},
        }
    )
    return sc.with_overrides(PROFILES[profile])


def measure(flows: int, seed: int, profile: str, tmp: Path) -> dict:
    """One run: rates per window (Gbps, flows x windows), the settled numbers, counters."""
    sc = scenario(flows, tmp / f"{flows}-{seed}-{profile}.csv", seed, profile)
    res = fabricsim.run(sc)
    wire = sc.nic.rdma_data_mss + sc.nic.header_bytes
    sent = res.tables["uet_monitor"]
    nwin = int(round(RUN_S[flows] / WINDOW_S))
    win = (sent.time_s.to_numpy() // WINDOW_S).astype(int)
    rates = np.zeros((flows, nwin))
    keep = win < nwin
    np.add.at(rates, (sent.flow_id.to_numpy()[keep], win[keep]), wire * 8 / WINDOW_S / 1e9)
    jain = rates.sum(0) ** 2 / (flows * (rates**2).sum(0) + 1e-12)
    a, b = (int(round(x / WINDOW_S)) for x in SETTLED_S[flows])
    tl = res.tables["timeline_links"]
    port = f"leaf0->host{flows}"
    q = tl[
        (tl.link == port) & (tl.time_s >= SETTLED_S[flows][0]) & (tl.time_s < SETTLED_S[flows][1])
    ]
    share = 100 / flows
    within = np.all(np.abs(rates - share) <= 0.2 * share, axis=0)
    settle = next((i for i in range(nwin) if within[i:b].all()), nwin) * WINDOW_S
    s = res.summary
    return {
        "rates": rates,
        "queue": tl[tl.link == port][["time_s", "queue_bytes"]],
        "jain": float(jain[a:b].mean()),
        "util": float(rates[:, a:b].sum(0).mean()),
        "queue_kb": float(q.queue_bytes.mean() / 1e3),
        "queue_max_kb": float(q.queue_bytes.max() / 1e3),
        "settle_ms": settle * 1e3,
        "cnps": s["cnps_sent"],
        "pauses": s["pfc_pauses"],
        "fct_max_ms": s["fct_max_s"] * 1e3,
    }


def _range(values: list[float], fmt: str) -> str:
    """Mean and the seeds' range, for a bounded quantity (Jain's index is at most 1)."""
    x = np.asarray(values, dtype=float)
    return f"{x.mean():{fmt}} ({x.min():{fmt}}-{x.max():{fmt}})"


def _cell(values: list[float], fmt: str) -> str:
    x = np.asarray(values, dtype=float)
    if len(x) < 2 or np.all(x == x[0]) or np.any(x <= 0):
        return f"{x.mean():{fmt}}"
    lo, hi = mean_interval(x)
    return f"{x.mean():{fmt}} [{lo:{fmt}}, {hi:{fmt}}]"


def table(results: dict) -> str:
    """The markdown table of ``docs/dcqcn.md``: mean [95 % interval] over seeds."""
    head = (
        "| flows | parameters | Jain index, settled (seeds' range) | port rate, Gbps | within ±20 % of the "
        "share from, ms | queue mean, KB | queue max, KB | CNPs | pause frames (range) |\n"
        "|---|---|---|---|---|---|---|---|---|"
    )
    lines = [head]
    for (flows, profile), runs in results.items():
        col = {k: [r[k] for r in runs] for k in runs[0] if k not in ("rates", "queue")}
        lines.append(
            f"| {flows} | {profile} | {_range(col['jain'], '.3f')} | {_cell(col['util'], '.1f')} "
            f"| {_cell(col['settle_ms'], '.1f')} | {_cell(col['queue_kb'], '.0f')} "
            f"| {_cell(col['queue_max_kb'], '.0f')} | {_cell(col['cnps'], '.0f')} "
            f"| {_range(col['pauses'], '.0f')} |"
        )
    return "\n".join(lines)


def figure(results: dict, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kmin, kmax = dcqcn_ecn_bytes(100e9)
    keys = list(results)
    fig, axes = plt.subplots(2, len(keys), figsize=(4.2 * len(keys), 6), sharey="row")
    for col, key in enumerate(keys):
        flows, profile = key
        run = results[key][0]  # the first seed
        t = (np.arange(run["rates"].shape[1]) + 0.5) * WINDOW_S * 1e3
        ax = axes[0, col]
        for f in range(flows):
            ax.plot(t, run["rates"][f], lw=0.9)
        ax.axhline(100 / flows, color="grey", ls=":", lw=1)
        ax.set_title(f"{flows} flows, {profile}", fontsize=10)
        ax.set_ylim(0, 105)
        q = run["queue"]
        axes[1, col].plot(q.time_s * 1e3, q.queue_bytes / 1e3, lw=0.7)
        for k in (kmin, kmax):
            axes[1, col].axhline(k / 1e3, color="red", ls="--", lw=0.8)
        axes[1, col].set_xlabel("time, ms")
        axes[1, col].set_xlim(0, RUN_S[flows] * 1e3)
    axes[0, 0].set_ylabel(f"rate, Gbps ({WINDOW_S * 1e6:.0f} us)")
    axes[1, 0].set_ylabel("bottleneck queue, KB (ECN min/max dashed)")
    fig.suptitle("DCQCN on one 100 Gbps port, RoCEv2 + PFC, flows start at line rate")
    fig.tight_layout()
    fig.savefig(out, dpi=100)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--flows", type=int, nargs="+", default=[2, 8])
    ap.add_argument("--profiles", nargs="+", default=list(PROFILES))
    ap.add_argument("--out", type=Path, default=Path("docs/dcqcn_flows.png"))
    args = ap.parse_args()
    results: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for flows in args.flows:
            for profile in args.profiles:
                results[flows, profile] = [
                    measure(flows, seed, profile, Path(tmp)) for seed in range(1, args.seeds + 1)
                ]
    print(table(results))
    figure(results, args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
