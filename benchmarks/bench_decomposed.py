"""Decomposed-engine speed, scale and accuracy on a loaded Poisson workload.

Workload: Poisson arrivals, uniform random host pairs (never a host to itself), log-uniform
sizes 64 KB..16 MB (mean about 2.9 MB), at ``--load`` of the hosts' 100 Gbps NIC capacity,
written to a CSV trace and run as ``workload.kind: trace`` on a k-ary fat tree (100 Gbps,
per-flow ECMP, the packet engine's default UET transport).  The same trace and seed go to
every engine.

Cases (``--case``):

* ``a``: k = 16 (1,024 hosts), 20,000 flows at 40 %: the packet engine against the decomposed
  engine (``--workers 2``), wall time, mean and p99 FCT overall and per size class (classes
  with at least 100 flows), for each ``--tolerances`` value of
  ``engine.decomposed.cluster_tolerance``.
* ``b``: k = 32 (8,192 hosts), 200,000 flows at 40 %: decomposed only, wall time and peak RSS.
* ``c``: k = 64 (65,536 hosts), 1,000,000 flows: decomposed on local processes, then on a
  ``dask.distributed`` LocalCluster with each of ``--cluster`` worker counts (speed-up
  against the first).

``--k``, ``--flows`` and ``--load`` override a case's size.  Peak RSS is this process's and its
children's (``getrusage``); run under ``/usr/bin/time -v`` for the whole tree's maximum.
Each decomposed row carries ``fct_sha256``, a digest of the flows' FCTs: equal on every backend
and worker count.  ``--profile FILE`` runs the decomposed engine in this process under pyinstrument (one worker,
so the profile sees the link simulations) and writes the text profile to FILE.

Run: ``python benchmarks/bench_decomposed.py --case a [--tolerances 0.1,0.3,1.0]
[--skip-packet] [--profile FILE] [--json FILE]``
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import fabricsim

CASES = {"a": (16, 20_000, 0.4), "b": (32, 200_000, 0.4), "c": (64, 1_000_000, 0.4)}
MIN_B, MAX_B = 65_536, 16_000_000
CLASSES = [(65_536, 262_144), (262_144, 1_048_576), (1_048_576, 4_194_304), (4_194_304, 16_000_001)]
"""Size classes (bytes, [low, high)): 64-256 KB, 256 KB-1 MB, 1-4 MB, 4-16 MB."""
MIN_CLASS_FLOWS = 100


def make_trace(path: Path, k: int, flows: int, load: float, seed: int) -> int:
    """Write the Poisson trace for a k-ary fat tree; return the number of hosts."""
    hosts = k**3 // 4
    rng = np.random.default_rng([seed, 34, k])
    size = np.exp(rng.uniform(np.log(MIN_B), np.log(MAX_B), flows)).astype(np.int64)
    src = rng.integers(0, hosts, flows)
    dst = (src + rng.integers(1, hosts, flows)) % hosts
    rate = load * hosts * 100e9 / (size.mean() * 8)  # flows per second
    start = np.cumsum(rng.exponential(1 / rate, flows))
    pd.DataFrame({"src": src, "dst": dst, "size_bytes": size, "start_s": start - start[0]}).to_csv(
        path, index=False
    )
    return hosts


MAX_MEMORY_GB = [16.0]
"""``engine.max_memory_gb`` of every run (``--max-memory-gb``)."""


def scenario(trace: Path, k: int, seed: int, tolerance: float | None = None) -> Any:
    engine: dict[str, Any] = {"max_packets": 10**12, "max_memory_gb": MAX_MEMORY_GB[0]}
    if tolerance is not None:
        engine["decomposed"] = {"cluster_tolerance": tolerance}
    return fabricsim.load_scenario(
        {
            "name": f"bench-decomposed-k{k}",
            "seed": seed,
            "topology": {"kind": "fat_tree", "k": k, "link_gbps": 100},
            "workload": {"kind": "trace", "path": str(trace)},
            "engine": engine,
        }
    )


def peak_rss_mb() -> float:
    """Peak RSS (MB) of this process and of its largest waited-for child."""
    me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(me, kids) / 1024


def fct_stats(flows: pd.DataFrame) -> dict[str, Any]:
    """Mean and p99 FCT (s) overall and per size class; flows unfinished counted apart."""
    fct = flows["fct_s"].to_numpy(dtype=float)
    size = flows["size_bytes"].to_numpy()
    done = ~np.isnan(fct)
    out: dict[str, Any] = {
        "flows": int(len(fct)),
        "unfinished": int((~done).sum()),
        "mean_s": float(fct[done].mean()),
        "p99_s": float(np.percentile(fct[done], 99)),
        "classes": {},
    }
    for lo, hi in CLASSES:
        sel = done & (size >= lo) & (size < hi)
        if sel.sum() >= MIN_CLASS_FLOWS:
            out["classes"][f"{lo // 1024}K-{hi // 1024}K"] = {
                "flows": int(sel.sum()),
                "mean_s": float(fct[sel].mean()),
                "p99_s": float(np.percentile(fct[sel], 99)),
            }
    return out


class Ticker:
    """Progress of the link simulations on stderr, at every 5 % of the packets to simulate."""

    def __init__(self) -> None:
        self.t0, self.next = time.perf_counter(), 0.0

    def __call__(self, done: float, total: float) -> None:
        frac = done / total if total else 1.0
        if frac >= self.next:
            self.next = frac + 0.05
            print(
                f"  [{time.perf_counter() - self.t0:7.1f} s] link simulations "
                f"{int(done):,} of {int(total):,} packets ({frac:.0%})",
                file=sys.stderr,
                flush=True,
            )


def timed_run(sc: Any, engine: str, **kw: Any) -> tuple[Any, float]:
    if engine == "decomposed":
        kw["progress"] = Ticker()
    t0 = time.perf_counter()
    res = fabricsim.run(sc, engine=engine, **kw)
    return res, time.perf_counter() - t0


def profiled_run(sc: Any, path: Path) -> tuple[Any, float]:
    from pyinstrument import Profiler

    prof = Profiler(interval=0.01)
    prof.start()
    res, wall = timed_run(sc, "decomposed")
    prof.stop()
    path.write_text(prof.output_text(unicode=False, color=False, show_all=False))
    return res, wall


def decomposed_row(res: Any, wall: float, label: str) -> dict[str, Any]:
    s, t = res.summary, res.timing
    row = {
        "run": label,
        "wall_s": round(wall, 2),
        "peak_rss_mb": round(peak_rss_mb(), 0),
        **{
            k: round(float(t[k]), 2)
            for k in ("routing_s", "planning_s", "link_sims_s", "link_sims_cpu_s", "composition_s")
            if k in t
        },
        **{
            k: s.get(k)
            for k in (
                "links_loaded",
                "links_quiet",
                "links_simulated",
                "link_sim_packets",
                "events",
            )
        },
        "largest": s.get("largest_link_simulation"),
        "fct_sha256": hashlib.sha256(res.flows["fct_s"].to_numpy().tobytes()).hexdigest()[:16],
    }
    print(json.dumps(row), flush=True)
    return row


def compare(pk: dict[str, Any], dc: dict[str, Any]) -> dict[str, Any]:
    """Relative errors of the decomposed engine's mean and p99, overall and per class."""
    err = {
        "mean_err": dc["mean_s"] / pk["mean_s"] - 1,
        "p99_err": dc["p99_s"] / pk["p99_s"] - 1,
        "classes": {},
    }
    for name, c in pk["classes"].items():
        d = dc["classes"].get(name)
        if d is not None:
            err["classes"][name] = {
                "flows": c["flows"],
                "mean_err": d["mean_s"] / c["mean_s"] - 1,
                "p99_err": d["p99_s"] / c["p99_s"] - 1,
            }
    return err


def case_a(args: argparse.Namespace, trace: Path, k: int) -> dict[str, Any]:
    out: dict[str, Any] = {"decomposed": {}}
    if not args.skip_packet:
        res, wall = timed_run(scenario(trace, k, args.seed), "packet")
        out["packet"] = {
            "wall_s": round(wall, 2),
            "peak_rss_mb": round(peak_rss_mb(), 0),
            "events": res.summary.get("events"),
            **fct_stats(res.flows),
        }
        print(json.dumps({"packet": out["packet"]}), flush=True)
    elif args.packet_json:
        out["packet"] = json.loads(Path(args.packet_json).read_text())["packet"]
    for tol in args.tolerances:
        sc = scenario(trace, k, args.seed, tol)
        if args.profile:
            res, wall = profiled_run(sc, Path(f"{args.profile}.tol{tol}.txt"))
        else:
            res, wall = timed_run(sc, "decomposed", workers=args.workers)
        row = decomposed_row(res, wall, f"tolerance {tol}")
        row["fct"] = fct_stats(res.flows)
        if "packet" in out:
            row["vs_packet"] = compare(out["packet"], row["fct"])
            row["speedup"] = out["packet"]["wall_s"] / wall
            print(
                json.dumps({"tolerance": tol, "speedup": row["speedup"], **row["vs_packet"]}),
                flush=True,
            )
        out["decomposed"][str(tol)] = row
    return out


def case_scale(args: argparse.Namespace, trace: Path, k: int) -> dict[str, Any]:
    sc = scenario(trace, k, args.seed, args.tolerances[0])
    out: dict[str, Any] = {}
    if args.profile:
        res, wall = profiled_run(sc, Path(args.profile))
    else:
        res, wall = timed_run(sc, "decomposed", workers=args.workers)
    out["local"] = decomposed_row(res, wall, f"--workers {1 if args.profile else args.workers}")
    out["local"]["fct"] = fct_stats(res.flows)
    if args.cluster:
        from dask.distributed import LocalCluster

        out["cluster"] = {}
        for n in args.cluster:
            with LocalCluster(
                n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None
            ) as cluster:
                res, wall = timed_run(sc, "decomposed", scheduler=cluster.scheduler_address)
            row = decomposed_row(res, wall, f"LocalCluster {n} workers")
            out["cluster"][str(n)] = row
        base = out["cluster"][str(args.cluster[0])]["link_sims_s"]
        for row in out["cluster"].values():
            row["link_sims_speedup"] = base / row["link_sims_s"]
        print(json.dumps({n: r["link_sims_speedup"] for n, r in out["cluster"].items()}))
    return out


def floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--case", choices=sorted(CASES), default="a")
    ap.add_argument("--k", type=int, default=None)
    ap.add_argument("--flows", type=int, default=None)
    ap.add_argument("--load", type=float, default=None)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument(
        "--tolerances",
        type=floats,
        default=[0.1],
        help="engine.decomposed.cluster_tolerance values, comma-separated",
    )
    ap.add_argument(
        "--cluster",
        type=lambda t: [int(x) for x in t.split(",") if x],
        default=[],
        help="LocalCluster worker counts (cases b, c), e.g. 1,2,4",
    )
    ap.add_argument("--skip-packet", action="store_true", help="case a: no packet-engine run")
    ap.add_argument(
        "--packet-json",
        default=None,
        help="case a with --skip-packet: compare against this earlier --json output",
    )
    ap.add_argument("--profile", default=None, help="pyinstrument text profile to this file")
    ap.add_argument("--json", default=None, help="write the measurements to this file")
    ap.add_argument(
        "--max-memory-gb",
        type=float,
        default=16.0,
        help="engine.max_memory_gb (the budget refuses a run whose estimate is over it)",
    )
    args = ap.parse_args()
    MAX_MEMORY_GB[0] = args.max_memory_gb
    k0, n0, l0 = CASES[args.case]
    k, n, load = args.k or k0, args.flows or n0, args.load or l0
    with tempfile.TemporaryDirectory() as d:
        trace = Path(d) / "trace.csv"
        hosts = make_trace(trace, k, n, load, args.seed)
        print(
            json.dumps({"case": args.case, "k": k, "hosts": hosts, "flows": n, "load": load}),
            flush=True,
        )
        body = case_a(args, trace, k) if args.case == "a" else case_scale(args, trace, k)
    result = {
        "case": args.case,
        "k": k,
        "hosts": hosts,
        "flows": n,
        "load": load,
        "seed": args.seed,
        **body,
    }
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
