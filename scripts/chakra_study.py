"""ECMP against REPS against ARK on the example Chakra traces (docs/chakra.md), several seeds.

Each example scenario (examples/chakra-training-step, examples/chakra-moe-layer) runs on the
packet engine with NSCC (``nic.cc: nscc``, ``nic.initial_base_rtt_us: auto``) under three
path schemes:

* ``ecmp``: one path per flow (``lb.policy: ecmp``, ``nic.packet_spraying_type: none``);
* ``reps``: REPS per-packet entropy (``nic.packet_spraying_type: reps``);
* ``ark``: ARK's reserved paths (``lb.policy: ark``).

Seed ``i`` of every scheme replays the same trace with the same seed (ports, switch draws), so
the schemes are compared pair-wise per seed.  Printed: per trace and scheme, the mean
iteration time and exposed communication with their 95 % intervals, and each scheme's change
against ECMP (:mod:`fabricsim.experiments.intervals`).

    python scripts/chakra_study.py --seeds 5 [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

import fabricsim
from fabricsim.experiments.intervals import mean_interval, ratio_interval

ROOT = Path(__file__).resolve().parent.parent
TRACES = {
    "training step": ROOT / "examples/chakra-training-step/training-step.yaml",
    "MoE layers": ROOT / "examples/chakra-moe-layer/moe-layer.yaml",
}
COMMON = {"nic.cc": "nscc", "nic.initial_base_rtt_us": "auto"}
SCHEMES = {
    "ecmp": {"lb.policy": "ecmp", "nic.packet_spraying_type": "none"},
    "reps": {"lb.policy": "ecmp", "nic.packet_spraying_type": "reps"},
    "ark": {"lb.policy": "ark", "nic.packet_spraying_type": "none"},
}
METRICS = ("iteration_time_s", "exposed_comm_s")


def run_one(path: Path, scheme: str, seed: int) -> dict[str, float]:
    sc = fabricsim.load_scenario(path).with_overrides({**COMMON, **SCHEMES[scheme], "seed": seed})
    s = fabricsim.run(sc, engine="packet").summary
    return {m: float(s[m]) for m in METRICS}


def study(seeds: int) -> dict[str, dict[str, dict[str, list[float]]]]:
    out: dict[str, dict[str, dict[str, list[float]]]] = {}
    for trace, path in TRACES.items():
        out[trace] = {}
        for scheme in SCHEMES:
            rows = [run_one(path, scheme, seed) for seed in range(1, seeds + 1)]
            out[trace][scheme] = {m: [r[m] for r in rows] for m in METRICS}
            print(f"{trace} / {scheme}: done", file=sys.stderr, flush=True)
    return out


def table(results: dict[str, dict[str, dict[str, list[float]]]]) -> str:
    lines = [
        "| trace | scheme | iteration time, ms [95 %] | vs ECMP | exposed comm, ms [95 %] | vs ECMP |",
        "|---|---|---|---|---|---|",
    ]
    for trace, schemes in results.items():
        for scheme, vals in schemes.items():
            cells = [trace, scheme]
            for m in METRICS:
                x = np.asarray(vals[m])
                lo, hi = mean_interval(x)
                cells.append(f"{1e3 * x.mean():.3f} [{1e3 * lo:.3f}, {1e3 * hi:.3f}]")
                if scheme == "ecmp":
                    cells.append("-")
                else:
                    c = ratio_interval(np.asarray(schemes["ecmp"][m]), x)
                    cells.append(f"{c.pct:+.1f} % [{c.low_pct:+.1f}, {c.high_pct:+.1f}]")
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--json", type=Path, help="write the per-seed numbers here")
    args = ap.parse_args()
    results = study(args.seeds)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    print(table(results))


if __name__ == "__main__":
    main()
