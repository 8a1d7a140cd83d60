"""Full verification of the packet engine (the CI tests run reduced versions).

Checks, each printed with its measured numbers and PASS/FAIL:

1. ``ecmp-collision`` step efficiency over ``--seeds`` seeds (default 200): per-flow ECMP
   (``none``) within +-0.03 of the exact 0.40999; ``default`` >= 0.85; ``reps`` >= 0.9.
2. The worked example of 000_*.txt (256 packets on 256..383, twice each; the wrap; one value).
3. REPS after a link failure at the seed's defaults: freezing without exploration, then
   windows of 71 packets exploring exactly the 7th, 15th, ..., 71st.
4. One spine link black-holed: ``none`` gives up on the messages hashed onto it; ``default``
   and ``reps`` finish, with their retransmission counts.
5. Engines agree: 16 x 20 MB on a leaf-spine under ECMP (lossless buffers): same paths,
   per-flow FCT within 10 %, sum within 5 %; the parking lot where they differ; and the same
   layout with the default 1-BDP buffers (trimming), for information.

Run: ``python scripts/verify_packet.py [--seeds N] [--workers N]``; exit code 1 if a check
fails.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

import fabricsim
from fabricsim.experiments.runner import build_engine

EXACT = 0.40999
FAILURES: list[str] = []


def check(name: str, ok: bool, detail: str) -> None:
    print(f"  [{'PASS' if ok else 'FAIL'}] {name}: {detail}")
    if not ok:
        FAILURES.append(name)


def _efficiency(args: tuple[str, int]) -> tuple[float, int]:
    spray, seed = args
    sc = fabricsim.load_scenario("ecmp-collision").with_overrides(
        {"seed": seed, "nic.packet_spraying_type": spray}
    )
    res = fabricsim.run(sc, engine="packet")
    return float(res.summary["step_efficiency"]), int(res.summary["packets_sent"])


def ecmp_collision(seeds: int, workers: int) -> None:
    print(f"1. ecmp-collision step efficiency, {seeds} seeds per spraying type")
    targets = {"none": None, "default": 0.85, "reps": 0.9, "oblivious": None}
    with ProcessPoolExecutor(workers) as pool:
        for spray, floor in targets.items():
            t0 = time.perf_counter()
            got = list(pool.map(_efficiency, [(spray, s) for s in range(seeds)], chunksize=4))
            eff = np.array([e for e, _ in got])
            pkts = sum(p for _, p in got)
            wall = time.perf_counter() - t0
            se = eff.std(ddof=1) / np.sqrt(len(eff))
            detail = (
                f"mean {eff.mean():.4f} (SE {se:.4f}), min {eff.min():.3f}, "
                f"{pkts:,} data packets in {wall:.1f} s"
            )
            if spray == "none":
                check("per-flow ECMP vs exact 0.41", abs(eff.mean() - EXACT) <= 0.03, detail)
            elif floor is not None:
                check(f"{spray} >= {floor}", eff.mean() >= floor, detail)
            else:
                print(f"  [info] {spray}: {detail}")


def worked_example() -> None:
    print("2. worked example (spray-example)")
    sc = fabricsim.load_scenario("spray-example")
    mon = fabricsim.run(sc, engine="packet").tables["uet_monitor"]
    counts = mon["entropy_value"].value_counts()
    check(
        "256 packets on 256..383, twice each",
        len(mon) == 256 and sorted(counts.index) == list(range(256, 384)) and set(counts) == {2},
        f"{len(mon)} packets, values {counts.index.min()}.."
        f"{counts.index.max()}, counts {sorted(set(counts))}",
    )
    wrap = fabricsim.run(
        sc.with_overrides({"nic.starting_port_offset": 65535, "nic.entropy_mask_bits": 8}),
        engine="packet",
    )
    vals = list(wrap.tables["uet_monitor"]["entropy_value"])
    check(
        "offset 65535, 8 bits", vals == [65535, *range(255)], f"first {vals[:4]}, last {vals[-1]}"
    )
    one = fabricsim.run(sc.with_overrides({"nic.entropy_mask_bits": 0}), engine="packet")
    check(
        "0 bits: one value",
        one.tables["uet_monitor"]["entropy_value"].nunique() == 1,
        f"{one.tables['uet_monitor']['entropy_value'].unique().tolist()}",
    )


def reps_window() -> None:
    print("3. REPS freezing and exploration window after spine3->leaf1 fails at 20 us")
    sc = fabricsim.load_scenario("spray-example").with_overrides(
        {"nic.packet_spraying_type": "reps", "workload.size_bytes": 32 << 20, "seed": 3}
    )
    eng = build_engine(sc, "packet")
    eng.fail_link_at("spine3->leaf1", 20e-6)
    out = eng.run()
    mon = out.tables["uet_monitor"]
    state = mon["reps_state"].astype(str).to_numpy()
    frz = mon[state == "freezing"]
    check(
        "no exploration while freezing",
        len(frz) > 0 and not frz["explored"].any(),
        f"{len(frz)} packets sent while freezing, {int(frz['explored'].sum())} explored",
    )
    idx = np.flatnonzero(state == "window")
    runs = [r for r in np.split(idx, np.flatnonzero(np.diff(idx) != 1) + 1) if r[-1] + 1 < len(mon)]
    ok, lens = True, []
    for r in runs:
        rows = mon.iloc[r]
        win = rows["explore_reason"].astype(str).to_numpy() == "window"
        pos = list(np.flatnonzero(win) + 1)
        other = rows[rows["explored"].to_numpy() & ~win]
        lens.append(len(r))
        ok &= len(r) == 71 and pos == list(range(7, 72, 8))
        ok &= bool((other["reps_cache_values"] == 0).all())
    check(
        "windows of 71 packets exploring 7th..71st",
        ok and bool(runs),
        f"{len(runs)} windows, lengths {sorted(set(lens))}, {out.summary['early_failure_detections']}"
        f" early failure detections, {out.summary['packets_retransmitted']} retransmissions",
    )


def failure() -> None:
    print("4. spine0->leaf1 black-holed on ecmp-collision (4 MiB messages), seeds 0..4")
    for spray in ("none", "default", "reps"):
        done, retx, tmo, fct = [], [], [], []
        for seed in range(5):
            sc = fabricsim.load_scenario("ecmp-collision").with_overrides(
                {
                    "seed": seed,
                    "nic.packet_spraying_type": spray,
                    "topology.failed_links": ["spine0->leaf1"],
                }
            )
            s = fabricsim.run(sc, engine="packet").summary
            done.append(s["flows_completed"])
            retx.append(s["packets_retransmitted"])
            tmo.append(s["timeouts"])
            fct.append(s["fct_max_s"] * 1e6 if s["fct_max_s"] else float("nan"))
        detail = (
            f"completed {done}, retransmissions {retx} (mean {np.mean(retx):.0f}), "
            f"timeouts {tmo}, slowest FCT us {[round(x) for x in fct]}"
        )
        if spray == "none":
            check("none: messages on the failed link give up", min(done) < 8, detail)
        else:
            check(f"{spray}: every message finishes", min(done) == 8, detail)


def agreement() -> None:
    print("5. engines agree: 16 x 20 MB, leaf-spine 2 x 16 hosts, 4 spines, 100 Gbps, ECMP")
    base = {
        "topology.hosts_per_leaf": 16,
        "topology.spines": 4,
        "topology.link_gbps": 100,
        "workload.size_bytes": 20_000_000,
        "nic.initial_base_rtt_us": "auto",
    }
    for label, extra in (
        ("lossless (buffer 24 BDP)", {"switch.buffer_bdp": 24}),
        ("default 1-BDP buffers (trimming)", {}),
    ):
        for seed in (1, 2, 3):
            sc = fabricsim.load_scenario("ecmp-collision").with_overrides(
                {**base, **extra, "seed": seed}
            )
            p, f = fabricsim.run(sc, engine="packet"), fabricsim.run(sc, engine="flow")
            ratio = (p.flows["fct_s"] / f.flows["fct_s"]).to_numpy()
            total = p.flows["fct_s"].sum() / f.flows["fct_s"].sum()
            same = bool((p.flows["path"] == f.flows["path"]).all())
            detail = (
                f"seed {seed}: paths equal {same}, per-flow ratio {ratio.min():.3f}.."
                f"{ratio.max():.3f}, sum ratio {total:.4f}, trims "
                f"{p.summary['packets_trimmed']}, {p.timing['packets_per_s']:,.0f} pkts/s"
            )
            if extra:
                check(
                    f"{label}",
                    same and np.abs(ratio - 1).max() <= 0.1 and abs(total - 1) <= 0.05,
                    detail,
                )
            else:
                print(f"  [info] {label}: {detail}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    t0 = time.perf_counter()
    worked_example()
    reps_window()
    failure()
    agreement()
    ecmp_collision(args.seeds, args.workers)
    print(f"{len(FAILURES)} failed check(s) in {time.perf_counter() - t0:.0f} s")
    sys.exit(1 if FAILURES else 0)


if __name__ == "__main__":
    main()
