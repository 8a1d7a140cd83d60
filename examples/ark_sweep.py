"""The QPS sweep of the ARK study (paper Fig. 2 and Fig. 4): ECMP vs ARK at QPS 1 ... 30.

Writes ``sweep.csv``, ``sweep_table.csv`` and ``sweep.png`` and prints the seed-averaged
changes.  The defaults (7 rates, 200 requests) take seconds; the paper's full sweep is
``python examples/ark_sweep.py --qps $(seq 1 30) --requests 1000 --seeds 5``.
Options: ``--qps Q ...``, ``--seeds N``, ``--workers N``, ``--requests N``, ``--out DIR``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fabricsim.config import load_scenario
from fabricsim.experiments.study import qps_sweep, sweep_table
from fabricsim.report.plots import plot_sweep


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="ARK QPS sweep")
    ap.add_argument("--qps", type=float, nargs="+", default=[1, 5, 10, 15, 20, 25, 30])
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--out", type=Path, default=Path("runs/ark-sweep"))
    args = ap.parse_args(argv)
    base = load_scenario("ark").with_overrides({"workload.requests": args.requests})
    sweep = qps_sweep(args.qps, seeds=range(1, args.seeds + 1), base=base, workers=args.workers)
    args.out.mkdir(parents=True, exist_ok=True)
    sweep.to_csv(args.out / "sweep.csv", index=False)
    table = sweep_table(sweep)
    table.to_csv(args.out / "sweep_table.csv", index=False)
    plot_sweep(sweep, args.out / "sweep.png")
    cols = ["qps", "rho", "fct_mean_s_change_pct", "fct_p95_s_change_pct", "ttft_mean_s_change_pct"]
    print(table[cols].round(3).to_string(index=False))
    print(f"wrote {args.out}/")


if __name__ == "__main__":
    main()
