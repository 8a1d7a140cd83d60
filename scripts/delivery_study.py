"""UET's delivery modes (``nic.delivery_mode``) on a sprayed permutation with loss, measured.

A k = 4 fat tree (16 hosts) at 100 Gb/s, 1 us links, a permutation of 1 MB messages, the
constant window (1.5 BDP: ``nic.cc: constant``, the one controller every mode can run; ``uud``
refuses one that needs ACKs).  Five cases: the default buffers (sprayed, nothing is lost; on one
path, collisions still overflow them); 24 KB per switch port with trimming on; the same with
trimming off (drops); trimming with NSCC (every mode but ``uud``); drops with a short RTO
(``nic.rto_us`` 12: spurious timeouts resend packets that had arrived).  Variants:

* ``rud``, ``rudi``, ``uud``: sprayed (``nic.packet_spraying_type: oblivious``);
* ``rod``: its own spraying type (one path, at most one entropy change every
  ``nic.reroute_rtts`` = 10 base RTTs);
* ``rud 1 path``: RUD's rules on ROD's path rule (``nic.packet_spraying_type: rod``), which
  separates what ROD pays for its single path from what it pays for go-back-N.

Each (case, variant) runs the same seeds; the table gives the mean over seeds of the mean and
P99 FCT of the completed messages (95 % intervals: :func:`fabricsim.experiments.intervals.
mean_interval`), the paired change of the mean FCT against ``rud``, the share of messages
completed, data packets lost (trimmed + dropped) and retransmitted, and the mode's own counter.
It rewrites the table between the markers in ``docs/delivery-modes.md``::

    <!-- delivery_study -->
    ...
    <!-- /delivery_study -->

Run from the repository root (about 30 s with the compiled core)::

    python scripts/delivery_study.py             # 8 seeds: run, print and rewrite the table
    python scripts/delivery_study.py --seeds 2   # quicker, print only
"""

from __future__ import annotations

import argparse
import re
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

import fabricsim
from fabricsim.experiments.intervals import mean_interval, ratio_interval

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "delivery-modes.md"
START, END = "<!-- delivery_study -->", "<!-- /delivery_study -->"
BASE: dict[str, Any] = {
    "name": "delivery-modes",
    "engine": {"kind": "packet"},
    "topology": {"kind": "fat_tree", "k": 4, "link_gbps": 100, "link_delay_us": 1.0},
    "workload": {"kind": "permutation", "size_bytes": 1_000_000},
    "nic": {"initial_base_rtt_us": "auto"},
}
CASES: dict[str, dict[str, Any]] = {
    "default buffers": {},
    "trimming": {"switch": {"trimming": True, "buffer_bytes": 24_000}},
    "drops": {"switch": {"trimming": False, "buffer_bytes": 24_000}},
    "trimming, NSCC": {
        "switch": {"trimming": True, "buffer_bytes": 24_000},
        "nic": {"cc": "nscc"},
    },
    "drops, RTO 12 us": {
        "switch": {"trimming": False, "buffer_bytes": 24_000},
        "nic": {"rto_us": 12.0},
    },
}
SPRAYED = {"packet_spraying_type": "oblivious"}
VARIANTS: dict[str, dict[str, Any]] = {
    "rud": {"delivery_mode": "rud", **SPRAYED},
    "rudi": {"delivery_mode": "rudi", **SPRAYED},
    "uud": {"delivery_mode": "uud", **SPRAYED},
    "rod": {"delivery_mode": "rod"},
    "rud 1 path": {"delivery_mode": "rud", "packet_spraying_type": "rod"},
}
ACK_DRIVEN = [v for v in VARIANTS if v != "uud"]
"""The variants a case with an ACK-driven controller runs (``uud`` refuses one)."""
COUNTER = {
    "rod": "rod_go_backs",
    "rudi": "rudi_duplicates_placed",
    "uud": "uud_packets_lost",
    "rud 1 path": "repaths",
}


def run_one(case: str, variant: str, seed: int) -> dict[str, float]:
    """One run's figures (FCTs over its completed messages, us)."""
    extra = CASES[case]
    nic = {**BASE["nic"], **extra.get("nic", {}), **VARIANTS[variant]}
    sc = fabricsim.load_scenario({**BASE, **extra, "nic": nic, "seed": seed})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # uud's unfinished messages are the point
        res = fabricsim.run(sc)
    s = res.summary
    fct = res.flows["fct_s"].dropna().to_numpy() * 1e6
    counter = COUNTER.get(variant)
    return {
        "mean": float(fct.mean()) if len(fct) else float("nan"),
        "p99": float(np.percentile(fct, 99)) if len(fct) else float("nan"),
        "completed": s["flows_completed"] / s["flows_total"],
        "lost": s["packets_trimmed"] + s["packets_dropped"],
        "resent": s["packets_retransmitted"],
        "counter": float(s.get(counter, 0)) if counter else float("nan"),
    }


def _ci(x: np.ndarray, digits: int = 0) -> str:
    """Mean and interval over the seeds that completed a message (``(n seeds)`` if not all)."""
    kept = x[~np.isnan(x)]
    if not len(kept):
        return "--"
    lo, hi = mean_interval(kept) if len(kept) > 1 else (np.nan, np.nan)
    some = "" if len(kept) == len(x) else f" ({len(kept)} seeds)"
    return f"{np.mean(kept):.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]{some}"


def _vs(base: np.ndarray, x: np.ndarray) -> str:
    """The paired change of ``x`` against ``base`` over the seeds where both are defined."""
    both = ~np.isnan(base) & ~np.isnan(x)
    if both.sum() < 2:
        return "--"
    c = ratio_interval(base[both], x[both])
    return f"{c.pct:+.0f} % [{c.low_pct:+.0f}, {c.high_pct:+.0f}]"


def table(seeds: int) -> str:
    rows = [
        "| case | mode | mean FCT, us [95 %] | P99 FCT, us [95 %] | mean FCT vs rud | "
        "completed | packets lost | resent | its counter |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for case in CASES:
        runs_of = VARIANTS if "cc" not in CASES[case].get("nic", {}) else ACK_DRIVEN
        got = {v: [run_one(case, v, seed) for seed in range(1, seeds + 1)] for v in runs_of}
        rud = np.array([r["mean"] for r in got["rud"]])
        for variant, runs in got.items():
            col = {k: np.array([r[k] for r in runs]) for k in runs[0]}
            vs = "--" if variant == "rud" else _vs(rud, col["mean"])
            counter = COUNTER.get(variant)
            shown = f"{counter} {np.mean(col['counter']):.0f}" if counter else ""
            rows.append(
                f"| {case} | {variant} | {_ci(col['mean'])} | {_ci(col['p99'])} | {vs} | "
                f"{100 * np.mean(col['completed']):.0f} % | {np.mean(col['lost']):.0f} | "
                f"{np.mean(col['resent']):.0f} | {shown} |"
            )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=8)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    text = table(args.seeds)
    print(text)
    print(f"({args.seeds} seeds, {time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    if args.seeds >= 5:
        doc = DOC.read_text()
        new = re.sub(
            rf"{re.escape(START)}.*?{re.escape(END)}",
            lambda _: f"{START}\n{text}\n{END}",
            doc,
            flags=re.S,
        )
        DOC.write_text(new)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
