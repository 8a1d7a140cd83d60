"""Link Layer Retry vs end-to-end recovery of corrupted frames, measured.

A 16-host permutation of 16 MB flows on a k = 4 fat tree at 100 Gb/s (1 us per link), in
three cases:

* ``reps``: UET with NSCC and REPS spraying: the fabric is not congested, so corrupted frames
  are the only loss;
* ``ecmp``: UET with NSCC, one path per flow by ECMP: colliding flows congest the fabric (trims,
  or drops without trimming) and the corrupted frames come on top;
* ``roce``: RoCEv2 RC (go-back-N, PFC, DCQCN; ECMP): a lost frame costs the window behind it
  (no trimming under PFC, so only trimming off).

Each (case, trimming, error rate, LLR) runs the same seeds; ``topology.link_error_rate`` is the
probability a frame is corrupted, on every link.  The table gives the mean over seeds of the
corrupted frames, the transport's retransmissions and timeouts, mean and P99 FCT, each with
its 95 % interval (:func:`fabricsim.experiments.intervals.mean_interval`), the paired change
of P99 FCT with LLR against without it, and LLR's frames replayed and fullest replay buffer.
It rewrites the table between the markers in ``docs/llr.md``::

    <!-- llr_study -->
    ...
    <!-- /llr_study -->

Run from the repository root (about 8 minutes on one core with the compiled core)::

    python scripts/llr_study.py            # run, print and rewrite docs/llr.md
    python scripts/llr_study.py --seeds 2  # quicker, print only
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import fabricsim
from fabricsim.experiments.intervals import mean_interval, ratio_interval

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "llr.md"
START, END = "<!-- llr_study -->", "<!-- /llr_study -->"
SEEDS = 8
BASE: dict[str, Any] = {
    "name": "llr-permutation",
    "engine": {"kind": "packet"},
    "topology": {"kind": "fat_tree", "k": 4, "link_gbps": 100, "link_delay_us": 1.0},
    "workload": {"kind": "permutation", "size_bytes": 16_000_000},
    "lb": {"policy": "ecmp"},
    "nic": {"initial_base_rtt_us": "auto", "cc": "nscc"},
}
CASES: dict[str, dict[str, Any]] = {  # case -> its nic settings, and the trimming it runs
    "reps": {"packet_spraying_type": "reps"},
    "ecmp": {"packet_spraying_type": "none"},
    "roce": {"transport": "roce", "cc": "dcqcn"},
}
TRIMMING: dict[str, tuple[bool, ...]] = {"reps": (True, False), "ecmp": (True, False),
                                         "roce": (False,)}  # fmt: skip
RATES = (0.0, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4)
METRICS = ("link_frame_errors", "packets_retransmitted", "timeouts", "fct_mean_s", "fct_p99_s",
           "llr_retries", "llr_replay_peak_bytes")  # fmt: skip


def measure(case: str, trimming: bool, rate: float, llr: bool, seed: int) -> dict[str, float]:
    """One run's numbers."""
    d = {**BASE, "seed": seed}
    d["nic"] = {**BASE["nic"], **CASES[case]}
    d["topology"] = {**BASE["topology"], "link_error_rate": rate}
    d["switch"] = {"trimming": trimming, "llr": llr}
    s = fabricsim.run(fabricsim.load_scenario(d)).summary
    assert s["flows_completed"] == s["flows_total"] and s["bytes_conserved"], (case, rate, llr)
    return {m: float(s.get(m, 0)) for m in METRICS}


def _cell(x: np.ndarray, scale: float, digits: int) -> str:
    m = float(np.mean(x)) * scale
    if float(np.ptp(x)) == 0 or np.any(x <= 0):
        return f"{m:,.{digits}f}"
    lo, hi = (v * scale for v in mean_interval(x))
    return f"{m:,.{digits}f} ({lo:,.{digits}f} … {hi:,.{digits}f})"


Key = tuple[str, bool, float, bool]


def table(results: dict[Key, list[dict[str, float]]]) -> list[str]:
    head = ["case", "trimming", "error rate", "LLR", "corrupted frames", "retransmitted",
            "timeouts", "mean FCT (µs)", "P99 FCT (µs)", "P99 FCT with LLR vs without",
            "LLR frames replayed", "replay buffer peak (KB)"]  # fmt: skip
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for case in CASES:
        for trimming in TRIMMING[case]:
            for rate in RATES:
                off = np.array([r["fct_p99_s"] for r in results[(case, trimming, rate, False)]])
                for llr in (False, True):
                    runs = results[(case, trimming, rate, llr)]
                    col = {m: np.array([r[m] for r in runs]) for m in METRICS}
                    change = ""
                    if llr:
                        c = ratio_interval(off, col["fct_p99_s"])
                        change = f"{c.pct:+.1f} % ({c.low_pct:+.1f} … {c.high_pct:+.1f} %)"
                        if float(np.ptp(col["fct_p99_s"] / off)) == 0:
                            change = f"{c.pct:+.1f} % (every seed)"
                    cells = [case, "on" if trimming else "off", f"{rate:g}",
                             "on" if llr else "off",
                             _cell(col["link_frame_errors"], 1, 1),
                             _cell(col["packets_retransmitted"], 1, 0),
                             _cell(col["timeouts"], 1, 1),
                             _cell(col["fct_mean_s"], 1e6, 0), _cell(col["fct_p99_s"], 1e6, 0),
                             change.replace("-", "−"),
                             _cell(col["llr_retries"], 1, 0) if llr else "",
                             _cell(col["llr_replay_peak_bytes"], 1e-3, 1) if llr else ""]  # fmt: skip
                    rows.append("| " + " | ".join(cells) + " |")
    return rows


def render(rows: list[str], seeds: int) -> str:
    note = (
        f"*Generated by `python scripts/llr_study.py`: seeds 1–{seeds}, every variant the same "
        "seeds; each cell is the mean over seeds with its 95 % interval (log scale; none where "
        "every seed gave the same value or one gave 0); the change of P99 FCT with LLR is "
        "paired by seed against the same case, trimming and error rate without LLR (geometric "
        "mean of the per-seed ratios, 95 % interval).*"
    )
    return "\n".join([note, "", *rows])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=SEEDS)
    ap.add_argument("--no-write", action="store_true", help="print the table only")
    args = ap.parse_args(argv)
    t0 = time.time()
    results: dict[Key, list[dict[str, float]]] = {}
    for case in CASES:
        for trimming in TRIMMING[case]:
            for rate in RATES:
                for llr in (False, True):
                    results[(case, trimming, rate, llr)] = [
                        measure(case, trimming, rate, llr, seed)
                        for seed in range(1, args.seeds + 1)
                    ]
            print(f"{case} trimming={trimming}: {time.time() - t0:.0f} s", file=sys.stderr)
    text = render(table(results), args.seeds)
    print(text)
    if not args.no_write and args.seeds == SEEDS:
        doc = DOC.read_text()
        pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.S)
        if not pattern.search(doc):
            raise SystemExit(f"{DOC}: no {START} ... {END} markers")
        DOC.write_text(pattern.sub(lambda _: f"{START}\n{text}\n{END}", doc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
