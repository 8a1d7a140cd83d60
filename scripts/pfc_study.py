"""Input-port arbitration at lossless switches, measured: a 32 -> 1 incast of 2 MB flows on a
k = 8 fat tree at 100 Gbps, PFC on, no DCQCN (senders at line rate), FIFO against round robin
between ingress ports (``switch.pfc_arbitration``), over seeds (docs/roce.md).

Two placements: the ``incast`` workload (hosts 4-35 -> host0: the receiver's edge has no
sender) and 32 random senders -> 1 random receiver per seed (the cross-check's placement);
then the ``incast`` placement with one short flow (100 kB, host1 -> host0, at 1 ms) that
enters the receiver's switch by its own port: its FCT.

Usage::

    python scripts/pfc_study.py [--seeds 1,2,3,4,5]
"""

from __future__ import annotations

import argparse

import numpy as np

import fabricsim
from fabricsim.experiments.intervals import mean_interval, ratio_interval

BASE = {
    "name": "pfc-arbitration",
    "engine": {"kind": "packet"},
    "topology": {"kind": "fat_tree", "k": 8, "link_gbps": 100, "link_delay_us": 1.0},
    "workload": {"kind": "incast", "senders": 32, "receiver": 0, "size_bytes": 2_000_000},
    "lb": {"policy": "ecmp"},
    # no DCQCN: a constant window far over the BDP (line rate), no spurious timeout
    "nic": {"transport": "roce", "cc": "constant", "cwnd_bdp": 1000, "rto_us": 100_000},
}


def random_incast(seed: int, path: str) -> str:
    """32 random senders -> 1 random receiver (the cross-check's draw), as a trace CSV."""
    hosts = np.random.default_rng(2000 + seed).choice(128, 33, replace=False)
    rows = [f"host{s},host{hosts[0]},2000000,0.0" for s in hosts[1:]]
    with open(path, "w") as f:
        f.write("src,dst,size_bytes,start_s\n" + "\n".join(rows) + "\n")
    return path


def with_short_flow(path: str) -> str:
    """The ``incast`` workload's flows and a 100 kB flow host1 -> host0 at 1 ms."""
    rows = [f"host{s},host0,2000000,0.0" for s in range(4, 36)] + ["host1,host0,100000,0.001"]
    with open(path, "w") as f:
        f.write("src,dst,size_bytes,start_s\n" + "\n".join(rows) + "\n")
    return path


def fcts(seed: int, arbitration: str, placement: str) -> np.ndarray:
    sc = {**BASE, "seed": seed, "switch": {"pfc_arbitration": arbitration}}
    tmp = f"/tmp/pfc_study_{placement}_{seed}.csv"
    if placement != "incast":
        path = random_incast(seed, tmp) if placement == "random" else with_short_flow(tmp)
        sc["workload"] = {"kind": "trace", "path": path}
    res = fabricsim.run(sc)
    s = res.summary
    assert s["flows_completed"] == s["flows_total"] and s["packets_dropped"] == 0
    return (res.flows["finish_s"] - res.flows["start_s"]).to_numpy() * 1e6


def change(base: np.ndarray, x: np.ndarray) -> str:
    ch = ratio_interval(base, x)
    if ch.low_pct != ch.low_pct:  # (NaN: no interval)
        return f"{ch.pct:+.0f} %"
    return f"{ch.pct:+.0f} % ({ch.low_pct:+.0f} … {ch.high_pct:+.0f} %)"


def cell(x: np.ndarray) -> str:
    lo, hi = mean_interval(x)
    return f"{x.mean():,.0f} ({lo:,.0f} … {hi:,.0f})" if hi > lo else f"{x.mean():,.0f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="1,2,3,4,5")
    seeds = [int(s) for s in ap.parse_args().seeds.split(",")]
    print(
        "| placement | arbitration | first FCT (µs) | mean FCT (µs) | last FCT (µs) | "
        "mean vs FIFO |"
    )
    print("|---|---|---|---|---|---|")
    for placement in ("incast", "random"):
        st = {}
        for arb in ("fifo", "round_robin"):
            runs = [fcts(s, arb, placement) for s in seeds]
            st[arb] = np.array([[r.min(), r.mean(), r.max()] for r in runs])
        for arb, x in st.items():
            vs = "baseline" if arb == "fifo" else change(st["fifo"][:, 1], x[:, 1])
            print(
                f"| {placement} | {arb} | {cell(x[:, 0])} | {cell(x[:, 1])} | "
                f"{cell(x[:, 2])} | {vs} |"
            )
    print()
    print("| short flow | arbitration | its FCT (µs) | vs FIFO |")
    print("|---|---|---|---|")
    short = {
        arb: np.array([fcts(s, arb, "short")[-1] for s in seeds]) for arb in ("fifo", "round_robin")
    }
    for arb, x in short.items():
        vs = "baseline" if arb == "fifo" else change(short["fifo"], x)
        print(f"| 100 kB into the incast's port | {arb} | {cell(x)} | {vs} |")


if __name__ == "__main__":
    main()
