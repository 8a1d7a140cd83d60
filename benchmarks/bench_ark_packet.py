"""ARK on its own baseline: ``ark-packet`` under RoCEv2 + PFC + DCQCN, packet engine vs flow engine.

``ark-packet`` is the ``ark`` study scaled by S = 32: KV bytes per token / S and the Poisson rate
x S (its QPS 32 and 800 are ark's QPS 1 and 25 in offered bytes per second).  On a fluid model
this scaling is exact (every time / S), so the flow engine's FCTs of ``ark-packet`` x S are those
of ``ark`` on the same seed and requests; the packet engine adds what the fluid model leaves out
(PFC pauses, DCQCN's rates, queueing).  TTFT adds the unscaled GPU times, so FCT is the metric
to compare.

For each QPS point and ``lb.policy`` (ecmp, ark) it prints mean and P95 FCT (x S: in ``ark``'s
time), on the packet engine with pause frames, paused time and CNPs, and on the flow engine;
and checks the scaling against ``ark`` on the flow engine.

Run: ``python benchmarks/bench_ark_packet.py [--requests N] [--qps 32,800]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import fabricsim

SCALE = 32


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--qps", default="32,800", help="ark-packet QPS points (ark's x 32)")
    args = ap.parse_args()
    print(
        f"{'qps':>5} {'(ark)':>6} {'policy':6} {'engine':6} {'mean_ms':>9} {'p95_ms':>9} "
        f"{'pauses':>7} {'paused_ms':>9} {'cnps':>7} {'retx':>6} {'wall_s':>7}"
    )
    for qps in (float(q) for q in args.qps.split(",")):
        for policy in ("ecmp", "ark"):
            sc = fabricsim.load_scenario("ark-packet").with_overrides(
                {"workload.qps": qps, "workload.requests": args.requests, "lb.policy": policy}
            )
            for engine in ("packet", "flow"):
                t0 = time.perf_counter()
                res = fabricsim.run(sc, engine=engine)
                wall = time.perf_counter() - t0
                s = res.summary
                assert s["flows_completed"] == s["flows_total"], s
                print(
                    f"{qps:5g} {qps / SCALE:6g} {policy:6} {engine:6} "
                    f"{s['fct_mean_s'] * SCALE * 1e3:9.2f} {s['fct_p95_s'] * SCALE * 1e3:9.2f} "
                    f"{s.get('pfc_pauses', '-'):>7} "
                    f"{s.get('pfc_paused_s', 0) * 1e3:9.3f} {s.get('cnps_sent', '-'):>7} "
                    f"{s.get('packets_retransmitted', '-'):>6} {wall:7.1f}"
                )
            ark = fabricsim.load_scenario("ark").with_overrides(
                {
                    "workload.qps": qps / SCALE,
                    "workload.requests": args.requests,
                    "lb.policy": policy,
                }
            )
            a = fabricsim.run(ark, engine="flow").flows["fct_s"].to_numpy()
            b = fabricsim.run(sc, engine="flow").flows["fct_s"].to_numpy() * SCALE
            print(
                f"      flow engine: ark-packet FCT x {SCALE} vs ark at QPS {qps / SCALE:g} "
                f"({policy}): max relative difference {np.max(np.abs(a - b) / a):.2e}"
            )


if __name__ == "__main__":
    main()
