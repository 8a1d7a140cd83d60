#!/usr/bin/env python
"""Full verification of the analysis toolkit; prints measured numbers.

    python scripts/verify_analysis.py [--quick] [--out DIR]

1. ``fabricsim ecmp-math`` reference numbers (002 worked example).
2. Hash polarization on a k = 8 fat tree (every inter-pod host pair x 65,536 ports) for every
   hash method x salt mode, the crc32 per-switch share over several seeds (walk) and its closed
   form over many seeds.
3. Uplink max/mean of ``ecmp-collision`` over many seeds vs the exact E[max load].
4. The ARK sweep (QPS x policy x 3 seeds) on the local pool and on a Dask LocalCluster (same
   table), a SIGKILLed sweep resumed (same table), and both reports in headless Chromium.

The unit tests run reduced versions of each check; this script runs them in full.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

import fabricsim
from fabricsim.analysis.diagnostics import diagnose
from fabricsim.analysis.ecmp_math import ecmp_collision_stats
from fabricsim.analysis.polarization import hash_polarization
from fabricsim.cli import main as cli_main
from fabricsim.config.loader import validate
from fabricsim.experiments.runner import fabric_of
from fabricsim.routing.hashing import switch_salts

FAILURES: list[str] = []


def check(ok: bool, what: str) -> None:
    print(f"  [{'ok' if ok else 'FAIL'}] {what}")
    if not ok:
        FAILURES.append(what)


def ecmp_math() -> None:
    print("\n== ecmp-math (exact) ==")
    for flows, uplinks, q in ((8, 8, 1), (8, 16, 1), (8, 8, 16)):
        s = ecmp_collision_stats(flows, uplinks, q)
        print(
            f"  {flows} flows x {q} QP on {uplinks} uplinks: P(no collision) {s.p_no_collision:.4f}, "
            f"idle {s.expected_idle_uplinks:.2f}, E[max] {s.expected_max_load:.2f}, "
            f"efficiency {s.efficiency:.2f}, slowdown {s.slowdown:.2f}"
        )
    s = ecmp_collision_stats(8, 8)
    check(
        (round(s.p_no_collision, 4), round(s.expected_idle_uplinks, 2), round(s.expected_max_load, 2),
         round(s.efficiency, 2)) == (0.0024, 2.75, 2.60, 0.41),
        "8 on 8: 0.0024, 2.75, 2.60, 0.41",
    )  # fmt: skip
    s16 = ecmp_collision_stats(8, 16)
    check(
        (round(s16.p_no_collision, 3), round(s16.efficiency, 2)) == (0.121, 0.53),
        "8 on 16: 0.121, 0.53",
    )
    check(round(ecmp_collision_stats(8, 8, 16).slowdown, 2) == 1.37, "qp-scaling 16: slowdown 1.37")
    with contextlib.redirect_stdout(io.StringIO()) as buf:
        code = cli_main(["ecmp-math", "--flows", "8", "--uplinks", "8", "--json"])
    check(
        code == 0 and json.loads(buf.getvalue())["p_no_collision"] == s.p_no_collision, "CLI --json"
    )


def _closed_form_dark_share(k: int, seed: int) -> float:
    sc = validate({"topology": {"kind": "fat_tree", "k": k}, "workload": {"kind": "permutation"}})
    fab = fabric_of(sc)
    salts = switch_salts(fab.num_nodes, seed, "per_switch")
    half = k // 2
    dark = 0
    for pod in range(k):
        edges = [fab.node_names.index(f"edge{pod}_{i}") for i in range(half)]
        dark += half * (half - len({int(salts[e]) % half for e in edges}))
    return dark / (k * half * half)


def polarization(seeds: int) -> None:
    print("\n== hash polarization, k = 8 fat tree, every inter-pod pair x 65,536 ports ==")
    print(
        f"  {'hash_method':14s} {'salt_mode':10s} {'dark links':>10s} {'share':>7s} {'per pair':>8s} {'wall s':>7s}"
    )
    results = {}
    for method in ("crc32WithSalt", "crc32", "crc32Offset"):
        for mode in ("per_switch", "shared"):
            r = hash_polarization(k=8, hash_method=method, salt_mode=mode, seed=1)
            results[method, mode] = r
            print(
                f"  {method:14s} {mode:10s} {r.links_unreached:>4d}/{r.links_total:<5d} "
                f"{r.unreached_share:7.4f} {r.pair_unreached_share:8.4f} {r.wall_s:7.2f}"
            )
    check(results["crc32WithSalt", "per_switch"].unreached_share == 0.0, "default hash: 0 dark")
    check(results["crc32", "shared"].unreached_share == 0.75, "crc32, shared salt: 3/4 dark")
    walk = [
        hash_polarization(k=8, hash_method="crc32", seed=s).unreached_share
        for s in range(1, seeds + 1)
    ]
    closed = [_closed_form_dark_share(8, s) for s in range(1, 2001)]
    print(f"  crc32 per_switch, seeds 1..{seeds} (walk): {np.round(walk, 4).tolist()}")
    print(f"    mean {np.mean(walk):.4f}; closed form over 2000 seeds: mean {np.mean(closed):.4f}, "
          f"sd {np.std(closed):.4f}; expectation (3/4)^4 = {0.75**4:.4f}")  # fmt: skip
    check(walk == closed[:seeds], "walk == closed form seed by seed")
    check(abs(np.mean(closed) - 0.75**4) < 0.01, "crc32 per-switch: about a third dark")


def uplinks(seeds: int) -> None:
    print("\n== uplink max/mean, ecmp-collision (8 flows, 8 uplinks) ==")
    ratios = []
    for seed in range(1, seeds + 1):
        res = fabricsim.run(
            fabricsim.load_scenario("ecmp-collision").with_overrides({"seed": seed})
        )
        ratios.append(diagnose(res).to_dict()["uplink_max_over_mean"])
    exact = ecmp_collision_stats(8, 8).expected_max_load
    se = np.std(ratios) / np.sqrt(len(ratios))
    print(
        f"  mean over {seeds} seeds {np.mean(ratios):.4f} (se {se:.4f}); exact E[max load] {exact:.4f}"
    )
    check(abs(np.mean(ratios) - exact) < 4 * se, "hashing gives the exact expectation")


def _sweep_cmd(out: Path, extra: list[str]) -> list[str]:
    return [sys.executable, "-c", "import sys; from fabricsim.cli import main; sys.exit(main())",
            "sweep", "ark", "--grid", "workload.qps=10,25,40", "--grid", "lb.policy=ecmp,ark",
            "--seeds", "3", "--out", str(out), *extra]  # fmt: skip


def sweeps(tmp: Path, requests: int) -> None:
    from distributed import LocalCluster

    print(f"\n== ark sweep: QPS 10,25,40 x ecmp,ark x 3 seeds, {requests} requests ==")
    sets = ["--set", f"workload.requests={requests}"]
    t0 = time.perf_counter()
    subprocess.run(
        _sweep_cmd(tmp / "local", [*sets, "--workers", str(os.cpu_count())]),
        check=True,
        stdout=subprocess.DEVNULL,
    )
    print(f"  local pool: {time.perf_counter() - t0:.1f} s")
    with LocalCluster(
        n_workers=2, threads_per_worker=1, dashboard_address=None, silence_logs=logging.CRITICAL
    ) as cluster:
        t0 = time.perf_counter()
        subprocess.run(
            _sweep_cmd(tmp / "dask", [*sets, "--scheduler", cluster.scheduler_address]), check=True
        )
        print(f"  Dask LocalCluster (2 worker processes): {time.perf_counter() - t0:.1f} s")
    local = pd.read_parquet(tmp / "local" / "sweep.parquet")
    check(
        local.equals(pd.read_parquet(tmp / "dask" / "sweep.parquet")), "Dask table == local table"
    )
    proc = subprocess.Popen(
        _sweep_cmd(tmp / "killed", [*sets, "--workers", "1"]), start_new_session=True
    )
    while len(list((tmp / "killed").glob("points/*/point.json"))) < 5:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done = len(list((tmp / "killed").glob("points/*/point.json")))
    out = subprocess.run(_sweep_cmd(tmp / "killed", [*sets]), capture_output=True, text=True)
    print(f"  killed after {done} of 18 points; rerun: {out.stdout.strip() or out.stderr.strip()}")
    check(
        pd.read_parquet(tmp / "killed" / "sweep.parquet").equals(local),
        "resumed table == local table",
    )
    summary = local.groupby(["workload.qps", "lb.policy"], sort=False)[
        ["fct_p99_s", "ttft_mean_s", "ttft_p95_s"]
    ].mean()
    print(summary.to_string(float_format=lambda v: f"{v:.4f}"))


def reports(tmp: Path) -> None:
    from fabricsim.report import write_report
    from fabricsim.report.browser import check_page, find_browser

    print("\n== reports in headless Chromium ==")
    run_dir = tmp / "run"
    sc = fabricsim.load_scenario("ecmp-collision").with_overrides({"records.timelines": True})
    fabricsim.run(sc).save(run_dir)
    for d in (run_dir, tmp / "local"):
        path = write_report(d)
        if find_browser() is None:
            check(False, "a Chromium browser is installed")
            continue
        page = check_page(path)
        print(f"  {path}: sections {page.section_ids}, errors {page.errors}")
        check(not page.errors and page.broken_images == 0, f"{d.name} report clean in Chromium")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer seeds, fewer requests")
    parser.add_argument("--out", type=Path, help="keep the sweep/report directories here")
    args = parser.parse_args()
    t0 = time.perf_counter()
    ecmp_math()
    polarization(seeds=3 if args.quick else 10)
    uplinks(seeds=300 if args.quick else 3000)
    with tempfile.TemporaryDirectory() as tmp:
        base = args.out or Path(tmp)
        base.mkdir(parents=True, exist_ok=True)
        sweeps(base, requests=100 if args.quick else 1000)
        reports(base)
    print(f"\n{len(FAILURES)} failure(s) in {time.perf_counter() - t0:.0f} s")
    for f in FAILURES:
        print(f"  FAIL: {f}")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
