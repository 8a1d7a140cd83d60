"""The default study (``fabricsim run`` with no scenario): its choices and its trend.

What the study is -- ECMP vs ARK on paired seeds over the paper's QPS points
(:func:`fabricsim.experiments.study.ark_qps_study`) -- and the choices made around it: the
scenario it starts from, the engine it runs on and the workload it needs (one-line refusals),
where it writes by default, how many local processes it uses, and the per-QPS trend its table
shows (:func:`trend_rows`).  The CLI parses the options, draws the progress bar and prints.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fabricsim.config.models import Scenario
from fabricsim.errors import ConfigError
from fabricsim.experiments import study as ark_study
from fabricsim.experiments.paired import PairedStudy

SCENARIO = "ark"
"""The built-in scenario the default study starts from (``--set`` overrides it)."""
OUT = Path("runs/ark-study")
"""Where the default study writes without ``--out``."""
ENGINE = "flow"
"""The engine it runs on (ark on the packet engine is ~4e8 packets)."""
TREND_METRICS = ("fct_mean_s", "fct_p95_s", "ttft_mean_s", "ttft_p95_s")
"""The metrics of the trend table, in its column order."""


def check_engine(engine: str | None) -> None:
    """Refuse (one line) an engine other than :data:`ENGINE` (None: the default)."""
    if engine not in (None, ENGINE):
        raise ConfigError(
            f"--engine {engine}: the default study (ark: ~4e8 packets) runs on the flow "
            "engine; name a scenario to use --engine packet"
        )


def check_scenario(sc: Scenario) -> None:
    """Refuse (one line) a scenario whose workload the study cannot compare (not kv_cache)."""
    if sc.workload.kind != "kv_cache":
        raise ConfigError(
            f"workload.kind={sc.workload.kind}: the default study compares KV-cache "
            "transfers (kv_cache); name a scenario to run another workload"
        )


def workers_for(workers: int | None) -> int:
    """Local processes: ``workers``, else one per CPU up to 4."""
    return workers if workers is not None else max(1, min(4, os.cpu_count() or 1))


def run_default_study(
    out: Path,
    sets: Sequence[str],
    seed: int | None,
    seeds: int | Sequence[int] | None = None,
    workers: int | None = None,
    figures: Callable[[Path, PairedStudy], Any] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> PairedStudy:
    """Run the default study into ``out`` (see :func:`~fabricsim.experiments.study.ark_qps_study`;
    ``workers``: :func:`workers_for`)."""
    return ark_study.ark_qps_study(
        out, list(sets), seed, seeds, figures, progress, workers=workers_for(workers)
    )


@dataclass(frozen=True)
class TrendRow:
    """One QPS point of the trend: the offered load, per metric the baseline's and the other
    policy's rows of the study table (None: not measured), and the other's ARK fallbacks."""

    qps: float
    load: float
    """Offered load (not finite: unknown)."""
    cells: dict[str, tuple[dict[str, Any], dict[str, Any]] | None]
    fallbacks: float
    """Mean ARK fallbacks per run of the other policy."""
    flows: float
    """Mean flows per run of the other policy."""


def trend_rows(study: PairedStudy) -> list[TrendRow]:
    """Per QPS point of ``study``: the baseline (``vs[1][0]``) against the other (``vs[1][1]``)."""
    sc = study.scenario
    names = [str(v) for v in study.vs[1]]
    rows = []
    for params in study.points():
        part = study.table
        qps = params.get("workload.qps", sc.workload.qps)  # type: ignore[union-attr]
        for k, v in params.items():
            part = part[part[k] == v]
        load = ark_study.offered_load(sc.with_overrides({"workload.qps": qps}))
        cells: dict[str, tuple[dict[str, Any], dict[str, Any]] | None] = {}
        for metric in TREND_METRICS:
            found = {r["value"]: dict(r) for _, r in part[part["metric"] == metric].iterrows()}
            cells[metric] = (found[names[0]], found[names[1]]) if found else None
        other = [r.summary for r in study.results(params, names[1])]
        fallbacks = sum(float(x.get("ark_fallbacks", 0)) for x in other) / max(len(other), 1)
        flows = sum(x["flows_total"] for x in other) / max(len(other), 1)
        rows.append(TrendRow(float(qps), load, cells, fallbacks, flows))
    return rows
