"""The flow engine's incremental kernel alone: a run's kernel calls recorded, then replayed.

Runs the ``bench_flow.py`` trace once (1,024-host k = 16 fat tree, 10,000 flows by default)
with a recording subclass of ``MaxMinKernel``, then replays every call (add, remove, settle,
next_done, done, ...) on a fresh kernel ``--repeats`` times and prints the CPU seconds of the
replays (min and median) and a digest of everything the kernel returned and its final link
byte counters.  The digest tells whether two source trees compute bit-identical results;
the CPU time isolates the kernel from the Python around it (policy, paths, the flows table),
so a change to the kernel shows at a resolution the whole-engine time does not give on a
shared machine.  Compare two trees by alternating runs with each one's ``PYTHONPATH``.
Run: ``python benchmarks/bench_flow_kernel.py [--flows N] [--k K] [--policy ideal_spray]
[--repeats R]``.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_flow  # noqa: E402  (the trace and the scenario of the flow benchmark)

import fabricsim.flowsim.engine as flow_engine  # noqa: E402
from fabricsim.flowsim.kernel import MaxMinKernel  # noqa: E402

Call = tuple


def record(k: int, flows: int, policy: str) -> list[Call]:
    """The kernel calls of one incremental run of the flow benchmark's trace."""
    log: list[Call] = []

    class Recording(MaxMinKernel):
        def __init__(self, capacity, fallback=0.5):
            log.append(("init", np.array(capacity, dtype=np.float64), fallback))
            super().__init__(capacity, fallback)

        def add(self, links, coefs, cap, wire, now):
            a, c = np.array(links, dtype=np.int64), np.array(coefs, dtype=np.float64)
            log.append(("add", a, c, cap, wire, now))
            return super().add(links, coefs, cap, wire, now)

        def reroute(self, slot, links, coefs, cap, now):
            a, c = np.array(links, dtype=np.int64), np.array(coefs, dtype=np.float64)
            log.append(("reroute", slot, a, c, cap, now))
            return super().reroute(slot, links, coefs, cap, now)

        def remove(self, slot, now):
            log.append(("remove", slot, now))
            return super().remove(slot, now)

        def settle(self, now):
            log.append(("settle", now))
            return super().settle(now)

        def next_done(self, now):
            log.append(("next_done", now))
            return super().next_done(now)

        def done(self, now):
            log.append(("done", now))
            return super().done(now)

        def link_loads(self, every=False):
            log.append(("link_loads", every))
            return super().link_loads(every)

        def remaining_bytes(self, slot, now):
            log.append(("remaining_bytes", slot, now))
            return super().remaining_bytes(slot, now)

        def finalize(self, now):
            log.append(("finalize", now))
            return super().finalize(now)

    kept = flow_engine.MaxMinKernel
    flow_engine.MaxMinKernel = Recording
    try:
        with tempfile.TemporaryDirectory() as tmp:
            trace = Path(tmp) / "flows.csv"
            bench_flow.make_trace(trace, flows, k**3 // 4, 100.0, 0.4)
            bench_flow.run_one(trace, k, "incremental", policy=policy)
    finally:
        flow_engine.MaxMinKernel = kept
    return log


def replay(log: list[Call]) -> tuple[float, str]:
    """(CPU seconds of the calls, digest of what they returned and of the final counters)."""
    outs: list[object] = []
    kern = MaxMinKernel(np.zeros(0))
    t0 = time.process_time()
    for call in log:
        op = call[0]
        if op == "settle":
            kern.settle(call[1])
        elif op == "add":
            outs.append(kern.add(*call[1:]))
        elif op == "remove":
            kern.remove(call[1], call[2])
        elif op == "next_done":
            outs.append(kern.next_done(call[1]))
        elif op == "done":
            outs.append(kern.done(call[1]))
        elif op == "init":
            kern = MaxMinKernel(call[1], call[2])
        elif op == "link_loads":
            outs.append(kern.link_loads(call[1]))
        elif op == "reroute":
            kern.reroute(*call[1:])
        elif op == "remaining_bytes":
            outs.append(kern.remaining_bytes(call[1], call[2]))
        elif op == "finalize":
            kern.finalize(call[1])
    cpu = time.process_time() - t0
    h = hashlib.sha256()
    for out in outs:
        if isinstance(out, tuple):
            h.update(np.asarray(out[0]).tobytes() + np.asarray(out[1]).tobytes())
        else:
            h.update(repr(out).encode())
    h.update(np.asarray(kern.link_bytes).tobytes() + np.asarray(kern.rate).tobytes())
    return cpu, h.hexdigest()[:16]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--flows", type=int, default=10_000)
    ap.add_argument("--k", type=int, default=16)
    ap.add_argument("--policy", default="ecmp", help="lb.policy (e.g. ideal_spray)")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    log = record(args.k, args.flows, args.policy)
    runs = [replay(log) for _ in range(args.repeats)]
    cpu = [c for c, _ in runs]
    digests = {d for _, d in runs}
    assert len(digests) == 1, "replays of one log disagree"
    print(
        f"kernel calls={len(log)} cpu_min_s={min(cpu):.4f} "
        f"cpu_median_s={statistics.median(cpu):.4f} digest={digests.pop()}"
    )


if __name__ == "__main__":
    main()
