"""CSIG beside ECN-only NSCC and REPS, measured on an incast and on a degraded link.

Two cases on a k = 4 fat tree at 100 Gb/s (1 us per link), UET with NSCC:

* ``incast``: 15 senders -> 1 receiver, 1 MB each (the receiver's link is the bottleneck);
* ``degraded``: a 16-host permutation of 4 MB flows sprayed by REPS, with one aggregation-core
  link (``agg0_0->core0``) at 10 % of its rate.

Variants: NSCC as the seed specifies it (ECN and the RTT's queueing delay: the in-band signal
is the ECN bit only), NSCC reading CSIG (``nic.nscc.use_csig``: the worst hop's queueing
delay), and on the degraded case REPS reading CSIG (``nic.reps.use_csig``) and both.  Each
variant runs the same seeds; the table gives the mean over seeds of mean and P99 FCT, the
largest queue of any switch port, packets trimmed, and the bytes the degraded link carried,
each with its 95 % interval, and the paired change of P99 FCT against ECN-only NSCC.  It
rewrites the table between the markers in ``docs/csig.md``::

    <!-- csig_study -->
    ...
    <!-- /csig_study -->

Run from the repository root (about 2 minutes on one core with the compiled core)::

    python scripts/csig_study.py            # run, print and rewrite docs/csig.md
    python scripts/csig_study.py --seeds 2  # quicker, print only
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
DOC = ROOT / "docs" / "csig.md"
START, END = "<!-- csig_study -->", "<!-- /csig_study -->"
SEEDS = 8
SLOW = "agg0_0->core0"
BASE: dict[str, Any] = {
    "engine": {"kind": "packet"},
    "topology": {"kind": "fat_tree", "k": 4, "link_gbps": 100, "link_delay_us": 1.0},
    "lb": {"policy": "ecmp"},
    "records": {"port_stats": True},
}
CASES: dict[str, dict[str, Any]] = {
    "incast": {
        "name": "csig-incast",
        "workload": {"kind": "incast", "senders": 15, "receiver": 0, "size_bytes": 1_000_000},
        "nic": {"initial_base_rtt_us": "auto", "cc": "nscc", "packet_spraying_type": "none"},
    },
    "degraded": {
        "name": "csig-degraded",
        "topology": {**BASE["topology"], "degraded_links": {SLOW: 0.1}},
        "workload": {"kind": "permutation", "size_bytes": 4_000_000},
        "nic": {"initial_base_rtt_us": "auto", "cc": "nscc", "packet_spraying_type": "reps"},
    },
}
VARIANTS: dict[str, dict[str, Any]] = {  # name -> its nic settings
    "ECN-only NSCC": {},
    "NSCC + CSIG": {"nscc": {"use_csig": True}},
    "REPS + CSIG": {"reps": {"use_csig": True}},
    "NSCC + REPS + CSIG": {"nscc": {"use_csig": True}, "reps": {"use_csig": True}},
}
RUNS = {"incast": ("ECN-only NSCC", "NSCC + CSIG"), "degraded": tuple(VARIANTS)}
METRICS = ("fct_mean_s", "fct_p99_s", "peak_queue_bytes", "packets_trimmed", "slow_link_bytes")


def measure(case: str, variant: str, seed: int) -> dict[str, float]:
    """One run's numbers."""
    d = {**BASE, **CASES[case], "seed": seed}
    d["nic"] = {**CASES[case]["nic"], **VARIANTS[variant]}
    res = fabricsim.run(fabricsim.load_scenario(d))
    s, ports = res.summary, res.tables["port_stats"].set_index("link")
    assert s["flows_completed"] == s["flows_total"] and s["bytes_conserved"], (case, variant)
    return {
        "fct_mean_s": float(s["fct_mean_s"]),
        "fct_p99_s": float(s["fct_p99_s"]),
        "peak_queue_bytes": float(ports["peak_queue_bytes"][ports["buffer_bytes"] < 1 << 40].max()),
        "packets_trimmed": float(s["packets_trimmed"]),
        "slow_link_bytes": float(ports.loc[SLOW, "bytes"]) if case == "degraded" else 0.0,
    }


def _cell(x: np.ndarray, scale: float, digits: int) -> str:
    m = float(np.mean(x)) * scale
    if float(np.ptp(x)) == 0 or np.any(x <= 0):
        return f"{m:,.{digits}f}"
    lo, hi = (v * scale for v in mean_interval(x))
    return f"{m:,.{digits}f} ({lo:,.{digits}f} … {hi:,.{digits}f})"


def table(results: dict[tuple[str, str], list[dict[str, float]]]) -> list[str]:
    head = ["case", "variant", "mean FCT (µs)", "P99 FCT (µs)", "P99 FCT vs ECN-only NSCC",
            "largest switch queue (KB)", "trimmed", "degraded link (MB)"]  # fmt: skip
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for case, variants in RUNS.items():
        base = np.array([r["fct_p99_s"] for r in results[(case, variants[0])]])
        for variant in variants:
            col = {m: np.array([r[m] for r in results[(case, variant)]]) for m in METRICS}
            change = "baseline"
            if variant != variants[0]:
                c = ratio_interval(base, col["fct_p99_s"])
                change = f"{c.pct:+.1f} % ({c.low_pct:+.1f} … {c.high_pct:+.1f} %)"
            cells = [case, variant, _cell(col["fct_mean_s"], 1e6, 0),
                     _cell(col["fct_p99_s"], 1e6, 0), change.replace("-", "−"),
                     _cell(col["peak_queue_bytes"], 1e-3, 1),
                     _cell(col["packets_trimmed"], 1, 0),
                     _cell(col["slow_link_bytes"], 1e-6, 1) if case == "degraded" else ""]  # fmt: skip
            rows.append("| " + " | ".join(cells) + " |")
    return rows


def render(rows: list[str], seeds: int) -> str:
    note = (
        f"*Generated by `python scripts/csig_study.py`: seeds 1–{seeds}, every variant the same "
        "seeds; each cell is the mean over seeds with its 95 % interval (log scale; none where "
        "every seed gave the same value or one gave 0); the change of P99 FCT is paired by seed "
        "against ECN-only NSCC of the same case (geometric mean of the per-seed ratios, 95 % "
        "interval).*"
    )
    return "\n".join([note, "", *rows])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=SEEDS)
    ap.add_argument("--no-write", action="store_true", help="print the table only")
    args = ap.parse_args(argv)
    t0 = time.time()
    results: dict[tuple[str, str], list[dict[str, float]]] = {}
    for case, variants in RUNS.items():
        for variant in variants:
            results[(case, variant)] = [
                measure(case, variant, seed) for seed in range(1, args.seeds + 1)
            ]
            print(f"{case} {variant}: {time.time() - t0:.0f} s", file=sys.stderr)
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
