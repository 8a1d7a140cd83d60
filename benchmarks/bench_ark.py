"""ARK speed: one 1000-request ``ark`` run, the QPS sweep, and controller costs (Table 1).

Prints wall times of

* one 1000-request run of the built-in ``ark`` scenario under ECMP and under ARK (best of 3);
* the QPS sweep, QPS 1 ... 30 x {ECMP, ARK}, in ``--workers`` processes (default 2);
* the ARK controller against the paper's Table 1 (Intel i9, one core): hashing one 5-tuple,
  one reservation-table lookup, Initialize (the inverse hash of 2^16 source ports toward one
  peer) and OnFlowArrival in its worst case (K - 1 paths reserved, so the scan probes all K)
  at K = 4 and K = 1,000 paths.

Run: ``python benchmarks/bench_ark.py [--workers N] [--skip-sweep]``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

import fabricsim
from fabricsim.config import TopologyConfig
from fabricsim.experiments.study import qps_sweep
from fabricsim.lb.ark import RESERVE, ArkController, ArkMessage, PortTable, port_table
from fabricsim.routing.hashing import PORT_TABLE, switch_hash_int
from fabricsim.routing.router import Router
from fabricsim.topology import build_fabric

PAPER_US = {
    "hash": 4.10,
    "lookup": 0.87,
    "initialize": 326_000.0,
    "arrival_k4": 3.48,
    "arrival_k1000": 870.0,
}


def per_call_us(fn: Callable[[], object], calls: int, repeat: int = 5) -> float:
    """Best-of-``repeat`` mean time of one call (us)."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t0) / calls)
    return best * 1e6


def bench_runs() -> None:
    for policy in ("ecmp", "ark"):
        sc = fabricsim.load_scenario("ark").with_overrides({"lb.policy": policy})
        walls = []
        for _ in range(3):
            t0 = time.perf_counter()
            res = fabricsim.run(sc)
            walls.append(time.perf_counter() - t0)
        print(
            f"ark scenario, 1000 requests, {policy:4s}: wall {min(walls):.3f} s "
            f"(engine {res.timing['wall_s']:.3f} s, {res.summary['events']} events)"
        )


def bench_sweep(workers: int) -> None:
    t0 = time.perf_counter()
    sweep = qps_sweep(range(1, 31), seeds=(1,), workers=workers)
    wall = time.perf_counter() - t0
    print(f"QPS sweep 1..30 x 2 policies ({len(sweep)} runs, {workers} workers): {wall:.1f} s")


def _controller(table: PortTable) -> ArkController:
    return ArkController(
        0, lambda s, d: table, lambda h, m: None, lambda f, p: None, np.random.default_rng(0)
    )


def bench_arrival(k: int) -> float:
    """Worst-case OnFlowArrival at K paths: K - 1 held by peers, the scan reaches the last."""
    table = PortTable(list(range(k)), [np.arange(i, 65536, k) for i in range(k)])
    ctl = _controller(table)
    for key in range(k - 1):
        ctl.on_remote_update(ArkMessage(RESERVE, key, (0.0, 1)), 0.0)
    ctl.initialize(1)

    def arrive_and_release() -> None:
        ctl.on_flow_arrival(0, 1, 1.0)
        ctl.on_flow_completion(0)

    def release_only() -> None:  # the completion half, to subtract
        ctl.table[k - 1] = (1.0, 0)
        ctl.owned[k - 1] = 0
        ctl.flows[0] = ctl_flow
        ctl.on_flow_completion(0)

    ctl.on_flow_arrival(0, 1, 1.0)
    ctl_flow = ctl.flows[0]
    ctl.on_flow_completion(0)
    both = per_call_us(arrive_and_release, 20_000 if k < 100 else 2_000)
    release = per_call_us(release_only, 20_000)
    return max(both - release, 0.0)


def bench_controller() -> None:
    fab = build_fabric(TopologyConfig(spines=4, leaves=2, hosts_per_leaf=8))
    router = Router.build(fab, seed=1)
    base, salt, tier = router.base(0, 8), int(router.salts[16]), int(fab.node_tier[16])
    ports = iter(np.random.default_rng(0).integers(0, 65536, 10**7).tolist())
    hash_us = per_call_us(
        lambda: (
            switch_hash_int(base ^ int(PORT_TABLE[next(ports)]), "crc32WithSalt", salt, tier) % 4
        ),
        100_000,
    )
    table = {0: (0.0, 1), 2: (0.0, 3)}
    lookup_us = per_call_us(lambda: 1 in table, 200_000)
    init_us = per_call_us(lambda: port_table(router, 0, 8), 50, repeat=3)
    big = build_fabric(TopologyConfig(spines=1000, leaves=2, hosts_per_leaf=1))
    big_router = Router.build(big, seed=1)
    init_k1000_us = per_call_us(lambda: port_table(big_router, 0, 1), 3, repeat=2)
    rows = [
        ("Hash computation (one 5-tuple, one stage)", hash_us, PAPER_US["hash"]),
        ("Reservation-table lookup", lookup_us, PAPER_US["lookup"]),
        ("Initialize, 2^16 ports, one peer, K = 4", init_us, PAPER_US["initialize"]),
        ("Initialize, 2^16 ports, one peer, K = 1000", init_k1000_us, float("nan")),
        ("OnFlowArrival, worst case, K = 4", bench_arrival(4), PAPER_US["arrival_k4"]),
        ("OnFlowArrival, worst case, K = 1000", bench_arrival(1000), PAPER_US["arrival_k1000"]),
    ]
    print(f"{'ARK controller (per call)':46s} {'ours':>12s} {'paper':>12s}")
    for name, ours, paper in rows:
        print(f"{name:46s} {ours:10.2f} us {paper:10.2f} us")
    kv_s = 1.6e9 * 8 / 100e9
    print(
        f"reference 1.6 GB KV transfer at 100 Gbps: {kv_s * 1e3:.0f} ms; K = 4 arrival / "
        f"transfer = {rows[4][1] * 1e-6 / kv_s:.2e} ({rows[4][1] * 1e-4 / kv_s:.5f} %)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--skip-sweep", action="store_true")
    args = ap.parse_args()
    bench_runs()
    if not args.skip_sweep:
        bench_sweep(args.workers)
    bench_controller()


if __name__ == "__main__":
    main()
