"""Regenerate every number in docs/ that compares two configurations, from multi-seed studies.

Each comparison the documentation prints is one :class:`Figure` below (scenario, the compared
key and values, grid, seeds, engine, metrics). The script runs each through
``fabricsim.study(...)`` and writes its table into the document between the markers

    <!-- docs_figures:NAME -->
    ...generated table...
    <!-- /docs_figures -->

so a rerun replaces the old numbers instead of leaving them to go stale.

Run (from the repository root, 8-13 minutes on 2 busy cores with one worker)::

    python scripts/docs_figures.py                 # run every figure, rewrite the docs
    python scripts/docs_figures.py ark_flow moe    # only these figures
    python scripts/docs_figures.py --check         # exit 1 if a doc differs from a fresh run
    python scripts/docs_figures.py --list          # the figures, their docs and run counts

Same scenario and seeds give byte-identical runs, so ``--check`` after a run passes until a
change of the simulator moves a number. How a table looks is decided by :func:`format_rows`
alone (the study table's columns are read nowhere else).
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
END = "<!-- /docs_figures -->"


@dataclass(frozen=True)
class Figure:
    """One comparison in the docs: a paired study and how to print it."""

    name: str
    doc: str  # path relative to the repository root
    scenario: str
    vs: tuple[str, tuple[Any, ...]]  # key, values; the first value is the baseline
    seeds: int
    engine: str
    metrics: tuple[str, ...]
    grid: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    sets: dict[str, Any] = field(default_factory=dict)
    unit: str = "s"  # how the metrics (all in seconds) are printed: s, ms or us

    def runs(self) -> int:
        points = 1
        for values in self.grid.values():
            points *= len(values)
        return points * len(self.vs[1]) * self.seeds


FIGURES = [
    Figure(
        "ark_flow", "docs/ark.md", "ark", ("lb.policy", ("ecmp", "ark")), seeds=10,
        engine="flow", grid={"workload.qps": (1, 25)},
        metrics=("fct_mean_s", "fct_p95_s", "ttft_mean_s", "ttft_p95_s"),
    ),
    Figure(
        "ark_sweep", "docs/ark.md", "ark", ("lb.policy", ("ecmp", "ark")), seeds=5,
        engine="flow", grid={"workload.qps": (1, 5, 10, 15, 20, 25, 30)},
        metrics=("fct_mean_s", "fct_p95_s", "ttft_mean_s"),
    ),
    Figure(
        "ark_packet", "docs/ark.md", "ark-packet", ("lb.policy", ("ecmp", "ark")), seeds=3,
        engine="packet", grid={"workload.qps": (32, 800)},
        metrics=("fct_mean_s", "fct_p95_s"), unit="ms",
    ),
    Figure(
        "ark_packet_flow", "docs/ark.md", "ark-packet", ("lb.policy", ("ecmp", "ark")), seeds=3,
        engine="flow", grid={"workload.qps": (32, 800)},
        metrics=("fct_mean_s", "fct_p95_s"), unit="ms",
    ),
    Figure(
        "lb_nic", "docs/load-balancing.md", "permutation",
        ("nic.packet_spraying_type", ("none", "oblivious", "reps")), seeds=5, engine="packet",
        sets={"nic.cc": "nscc"}, metrics=("fct_mean_s", "fct_p99_s"), unit="us",
    ),
    Figure(
        "lb_switch", "docs/load-balancing.md", "permutation",
        ("switch.load_balancing_method", ("ecmp", "spray", "adaptive", "flowlet")), seeds=5,
        engine="packet", sets={"nic.cc": "nscc"}, metrics=("fct_mean_s", "fct_p99_s"),
        unit="us",
    ),
    Figure(
        "lb_flow", "docs/load-balancing.md", "permutation",
        ("lb.policy", ("ecmp", "ideal_spray", "pinned")), seeds=5, engine="flow",
        metrics=("fct_mean_s", "fct_p99_s"), unit="us",
    ),
    Figure(
        "lb_base_rtt", "docs/load-balancing.md", "permutation",
        ("nic.initial_base_rtt_us", ("auto", 6)), seeds=5, engine="packet",
        sets={"nic.cc": "nscc", "nic.packet_spraying_type": "reps"},
        metrics=("fct_mean_s", "fct_p99_s"), unit="us",
    ),
    Figure(
        "moe", "docs/moe.md", "moe", ("workload.scheduler", ("round_robin", "rate_based")),
        seeds=3, engine="packet", metrics=("cct_s",), unit="us",
    ),
]  # fmt: skip

SCALE = {"s": 1.0, "ms": 1e3, "us": 1e6}
UNIT_TEXT = {"s": "s", "ms": "ms", "us": "µs"}
METRIC_TEXT = {
    "fct_mean_s": "mean FCT", "fct_p95_s": "P95 FCT", "fct_p99_s": "P99 FCT",
    "ttft_mean_s": "mean TTFT", "ttft_p95_s": "P95 TTFT", "ttft_p99_s": "P99 TTFT",
    "cct_s": "CCT",
}  # fmt: skip


def _number(x: float, unit: str) -> str:
    v = x * SCALE[unit]
    digits = 3 if abs(v) < 10 else (2 if abs(v) < 100 else 1)
    return f"{v:,.{digits}f}"


def _pct(x: float) -> str:
    return f"{x:+.1f} %".replace("-", "−")


def _verdict(row: Any) -> str:
    """``yes``, or ``no (about N seeds)`` (from the study's significance columns)."""
    if row.get("significant") is None or str(row["significant"]) in ("<NA>", "nan", "None"):
        return "–"
    if bool(row["significant"]):
        return "yes"
    needed = row.get("seeds_needed")
    if needed is None or str(needed) in ("<NA>", "nan", "None"):
        return "no"
    return f"no (about {int(needed)} seeds)"


def format_rows(fig: Figure, table: Any) -> list[str]:
    """The markdown rows of one study table: the only code that reads the study's columns.

    One row per grid point, metric and compared value (not the baseline): the baseline's mean,
    the value's mean, the paired change in per cent and its 95 % interval.
    """
    values = fig.vs[1]
    base, unit = str(values[0]), UNIT_TEXT[fig.unit]
    grid_keys = list(fig.grid)
    head = [*grid_keys, "metric", f"{base} ({unit})", "vs", f"mean ({unit})", "change",
            "95 % CI of the change", "seeds", "resolved"]  # fmt: skip
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for _, row in table.iterrows():
        if row["metric"] not in fig.metrics or str(row["value"]) == base:
            continue
        at = table["metric"] == row["metric"]
        for k in grid_keys:
            at &= table[k] == row[k]
        ref = table[at & (table["value"].astype(str) == base)].iloc[0]
        cells = [*(str(row[k]) for k in grid_keys), METRIC_TEXT[row["metric"]],
                 _number(ref["mean"], fig.unit), str(row["value"]), _number(row["mean"], fig.unit),
                 _pct(row["delta_pct"]),
                 f"{_pct(row['delta_ci_low'])} … {_pct(row['delta_ci_high'])}",
                 str(int(row["seeds"])), _verdict(row)]  # fmt: skip
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def render(fig: Figure, table: Any) -> str:
    """The text between a figure's markers: how it was made, then its table."""
    key, values = fig.vs
    sets = "".join(f" --set {k}={v}" for k, v in fig.sets.items())
    grid = "".join(f" --grid {k}={','.join(map(str, v))}" for k, v in fig.grid.items())
    command = (
        f"fabricsim study {fig.scenario} --vs {key}={','.join(map(str, values))}{grid}"
        f" --seeds {fig.seeds} --engine {fig.engine}{sets}"
    )
    lines = [
        f"*Generated by `python scripts/docs_figures.py {fig.name}`: `{command}`. Paired seeds "
        f"1–{fig.seeds} (every value runs the same seeds); change = the geometric mean of the "
        "per-seed ratios (value / baseline) − 1, with its 95 % Student-t interval on the log "
        f"scale over the {fig.seeds} seeds (never below −100 %). *resolved* says whether the "
        "interval excludes 0, and if not, about how many seeds would resolve it.*",
        "",
        *format_rows(fig, table),
    ]
    return "\n".join(lines)


def run_figure(fig: Figure, workers: int) -> str:
    import fabricsim

    grid = {k: list(v) for k, v in fig.grid.items()}
    table = fabricsim.study(
        fig.scenario, {fig.vs[0]: list(fig.vs[1])}, grid=grid, seeds=fig.seeds,
        engine=fig.engine, sets=dict(fig.sets), workers=workers,
    )  # fmt: skip
    return render(fig, table)


def marker(name: str) -> str:
    return f"<!-- docs_figures:{name} -->"


def replace_block(text: str, name: str, body: str) -> str:
    """``text`` with the block between ``name``'s markers replaced by ``body``."""
    pattern = re.compile(re.escape(marker(name)) + r"\n.*?" + re.escape(END), re.DOTALL)
    if len(pattern.findall(text)) != 1:
        raise ValueError(f"{name}: expected one '{marker(name)}' … '{END}' block")
    return pattern.sub(lambda _: f"{marker(name)}\n{body}\n{END}", text)


def markers_in(text: str) -> list[str]:
    """The figure names whose markers a document holds, in order."""
    return re.findall(r"<!-- docs_figures:([\w-]+) -->", text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="figures to run (default: all)")
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    parser.add_argument("--list", action="store_true", help="list the figures and exit")
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args(argv)
    by_name = {f.name: f for f in FIGURES}
    unknown = [n for n in args.names if n not in by_name]
    if unknown:
        print(f"unknown figure(s) {unknown}; known: {', '.join(by_name)}", file=sys.stderr)
        return 2
    chosen = [by_name[n] for n in args.names] or FIGURES
    if args.list:
        for f in chosen:
            print(f"{f.name:16} {f.doc:24} {f.engine:6} {f.runs():4} runs")
        return 0
    stale = 0
    for fig in chosen:
        path = ROOT / fig.doc
        t0 = time.perf_counter()
        body = run_figure(fig, args.workers)
        old = path.read_text(encoding="utf-8")  # read after the runs: the doc may have changed
        new = replace_block(old, fig.name, body)
        wall = time.perf_counter() - t0
        if new == old:
            print(f"{fig.name}: {fig.doc} up to date ({fig.runs()} runs, {wall:.0f} s)")
        elif args.check:
            stale += 1
            print(f"{fig.name}: {fig.doc} differs from a fresh run ({wall:.0f} s):")
            sys.stdout.writelines(difflib.unified_diff(
                old.splitlines(True), new.splitlines(True), fig.doc, "fresh"))  # fmt: skip
        else:
            path.write_text(new, encoding="utf-8")
            print(f"{fig.name}: {fig.doc} rewritten ({fig.runs()} runs, {wall:.0f} s)")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
