"""Packet-engine speed: a 128-host three-tier fat tree (k = 8), a random permutation of 2 MB
messages at 100 Gbps with 1 us links, for spraying types ``none``, ``default`` and ``reps``.

Prints, per spraying type: wall seconds of the engine (and CPU seconds of the process, which
shows how much a busy machine stole), events, data packets sent, events per wall second and
data packets per wall second (target: >= 25,000); and a calibration line (a pure-Python heap
loop) so that numbers from different machines can be compared.  Options: ``--types``,
``--size-bytes``, ``--profile`` (cProfile of the first type, top 25 functions by own time),
``--ack-coalesce``.  Run: ``python benchmarks/bench_packet.py``.
"""

from __future__ import annotations

import argparse
import cProfile
import heapq
import pstats
import time

import fabricsim


def scenario(spray: str, size_bytes: int, ack_coalesce: int) -> fabricsim.Scenario:
    return fabricsim.load_scenario("permutation").with_overrides(
        {
            "nic.packet_spraying_type": spray,
            "workload.size_bytes": size_bytes,
            "nic.ack_coalesce": ack_coalesce,
        }
    )


def calibrate(n: int = 300_000) -> float:
    """Million heappush + heappop pairs of int keys per second on this machine (one core)."""
    heap = list(range(0, 2000, 2))
    t0 = time.perf_counter()
    for i in range(n):
        heapq.heappush(heap, heapq.heappop(heap) + 1000 + (i & 7))
    return n / (time.perf_counter() - t0) / 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--types", default="none,default,reps")
    ap.add_argument("--size-bytes", type=int, default=2_000_000)
    ap.add_argument("--ack-coalesce", type=int, default=1)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    print(f"calibration: {calibrate():.2f} M heap push+pop per second")
    print(
        f"{'type':<10}{'wall_s':>8}{'cpu_s':>7}{'events':>11}{'data_pkts':>11}{'events/s':>11}"
        f"{'pkts/s':>10}{'done':>6}{'fct_max_us':>12}"
    )
    for i, spray in enumerate(args.types.split(",")):
        sc = scenario(spray, args.size_bytes, args.ack_coalesce)
        prof = cProfile.Profile() if args.profile and i == 0 else None
        if prof:
            prof.enable()
        cpu0 = time.process_time()
        res = fabricsim.run(sc, engine="packet")
        cpu = time.process_time() - cpu0
        if prof:
            prof.disable()
        t, s = res.timing, res.summary
        print(
            f"{spray:<10}{t['wall_s']:>8.2f}{cpu:>7.2f}{t['events']:>11,}{s['packets_sent']:>11,}"
            f"{t['events_per_s']:>11,.0f}{t['packets_per_s']:>10,.0f}"
            f"{s['flows_completed']:>6}{s['fct_max_s'] * 1e6:>12.1f}"
        )
        if prof:
            pstats.Stats(prof).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
