"""Input-port arbitration at lossless switches, measured: a 32 -> 1 incast of 2 MB flows on a
k = 8 fat tree at 100 Gbps, PFC on, no DCQCN (senders at line rate), FIFO against round robin
between ingress ports (``switch.pfc_arbitration``), over seeds (docs/roce.md).

Two placements: the ``incast`` workload (hosts 4-35 -> host0: the receiver's edge has no
sender) and 32 random senders -> 1 random receiver per seed (the cross-check's placement);
then the ``incast`` placement with one short flow (100 kB, host1 -> host0, at 1 ms) that
enters the receiver's switch by its own port: its FCT.

``--pathologies``: the deadlock and storm examples (``examples/pfc-deadlock.yaml``,
``examples/pfc-storm.yaml``) over the seeds, without and with the PFC watchdog.

Usage::

    python scripts/pfc_study.py [--seeds 1,2,3,4,5] [--pathologies]
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

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


EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def pathologies(seeds: list[int]) -> None:
    """The deadlock and storm examples per seed, without and with the watchdog."""
    print(
        "| example | watchdog | seeds deadlocked | flows completed | run ends (ms) | "
        "max FCT (ms; storm: its victims') | data drops | watchdog triggers |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, dogs in (("pfc-deadlock", (None, 1.0)), ("pfc-storm", (None, 0.5))):
        base = fabricsim.load_scenario(EXAMPLES / f"{name}.yaml")
        for dog in dogs:
            rows = []
            for seed in seeds:
                sc = base.with_overrides({"seed": seed, "switch.pfc_watchdog_ms": dog})
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = fabricsim.run(sc)
                s = res.summary
                done = s["flows_completed"] == s["flows_total"]
                fcts = res.flows["fct_s"]  # the storm's victims: its flows but the first
                fct = (fcts.iloc[1:] if name == "pfc-storm" else fcts).max() * 1e3
                fct = fct if done else np.nan  # (all, or none)
                rows.append(
                    [
                        s["pfc_deadlocks"] > 0,
                        s["flows_completed"],
                        s["flows_total"],
                        s["sim_end_s"] * 1e3,
                        fct,
                        s["packets_dropped"],
                        s["pfc_watchdog_triggers"],
                    ]
                )
            a = np.array(rows, dtype=float)
            done = f"{a[:, 1].sum():.0f} of {a[:, 2].sum():.0f}"
            fct = cell(a[:, 4]) if not np.isnan(a[:, 4]).any() else "—"
            wd = "off" if dog is None else f"{dog:g} ms"
            print(
                f"| {name} | {wd} | {a[:, 0].sum():.0f} of {len(seeds)} | {done} | "
                f"{cell(a[:, 3])} | {fct} | {a[:, 5].mean():,.0f} | {a[:, 6].mean():.1f} |"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="1,2,3,4,5")
    ap.add_argument("--pathologies", action="store_true")
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    if args.pathologies:
        pathologies(seeds)
        return
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
