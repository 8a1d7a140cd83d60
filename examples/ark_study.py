"""ECMP vs ARK on the built-in ``ark`` scenario, paired seeds, table and plots.

The study ``fabricsim run`` (no scenario) runs, from Python, at one request rate and with a
smaller request count by default so it finishes in seconds (``--qps 0``: the paper's QPS
points, as ``fabricsim run``).  Run:
``python examples/ark_study.py [--requests 1000] [--seeds 3] [--qps 25] [--out runs/ark-example]``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fabricsim.cli.run import default_study


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="ECMP vs ARK on the ark scenario")
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--qps", type=float, default=25.0)
    ap.add_argument("--out", type=Path, default=Path("runs/ark-example"))
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    sets = [f"workload.requests={args.requests}"]
    sets += [f"workload.qps={args.qps}"] if args.qps > 0 else []
    default_study(args.out, sets, seed=None, quiet=args.quiet, seeds=args.seeds)


if __name__ == "__main__":
    main()
