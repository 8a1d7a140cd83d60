"""The ARK study (``001_*.txt``): ECMP vs ARK for KV-cache transfers, on paired seeds.

:func:`ark_qps_study` is the default study (``fabricsim run`` with no scenario): the built-in
``ark`` scenario under ``lb.policy=ecmp`` and ``lb.policy=ark`` on the same seeds (same
requests, same prompts, same host pairs, same switch salts) at the paper's request rates, a
paired study (:mod:`.paired`).  :func:`run_study` is the same at one rate with the older
side-by-side table (per-spine peaks, ARK's counters) and every run's output directory;
:func:`qps_sweep` gives one row per run over request rates (the paper's Fig. 2 and Fig. 4).

Examples
--------
>>> runs = paired_runs(load_scenario("ark").with_overrides({"workload.requests": 30}), [1])
>>> sorted(runs)
[('ark', 1), ('ecmp', 1)]
>>> row = comparison(runs)
>>> bool(row.loc["fct_mean_s", "ecmp"] > 0)
True
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fabricsim._compat import pd
from fabricsim.config.loader import effective_scenario, load_scenario, parse_set_options
from fabricsim.config.models import Scenario
from fabricsim.errors import ConfigError
from fabricsim.experiments.backend import check_workers
from fabricsim.experiments.paired import PairedStudy, run_paired
from fabricsim.experiments.plan import plan_qps
from fabricsim.experiments.runner import run
from fabricsim.experiments.runs import run_tasks
from fabricsim.metrics.outdir import prepare_out_dir
from fabricsim.metrics.results import Result, dumps_json
from fabricsim.workloads.kv_cache import kv_bytes_per_token_of
from fabricsim.workloads.kv_models import RankZipf

__all__ = [
    "LABELS",
    "METRICS",
    "POLICIES",
    "Study",
    "comparison",
    "offered_load",
    "paired_runs",
    "qps_sweep",
    "QPS_POINTS",
    "ark_qps_study",
    "run_study",
    "study_scenario",
    "study_seeds",
    "sweep_table",
]

POLICIES = ("ecmp", "ark")
DEFAULT_SEEDS = 8
"""The default study's seeds: with 8 paired seeds every change at QPS 25 (mean and P95 FCT and
TTFT) excludes 0 in each window of 8 consecutive seeds among seeds 1-20; with 3 seeds only half
the windows resolve mean FCT (``scripts/verify_study.py``)."""
QPS_POINTS = (1, 5, 10, 15, 20, 25, 30)
"""The request rates of ``001_*.txt`` Fig. 2 and Fig. 4 (the default study's grid)."""
METRICS = ("fct_mean_s", "fct_p95_s", "ttft_mean_s", "ttft_p95_s")
LABELS = {
    "fct_mean_s": "mean FCT (s)",
    "fct_p95_s": "P95 FCT (s)",
    "ttft_mean_s": "mean TTFT (s)",
    "ttft_p95_s": "P95 TTFT (s)",
}
"""How the study's table and figures name :data:`METRICS`."""


# -- runs --------------------------------------------------------------------------------------
def paired_runs(
    base: Scenario, seeds: Iterable[int], policies: Sequence[str] = POLICIES
) -> dict[tuple[str, int], Result]:
    """Run ``base`` under each policy on each seed (same seed = same workload for all policies).

    A paired study (:func:`~fabricsim.experiments.paired.run_paired`) on the flow engine:
    every run is checked before the first one starts; they run in this process.

    Returns
    -------
    dict
        ``(policy, seed) -> Result``.
    """
    return _by_policy(
        run_paired(base, ("lb.policy", list(policies)), {}, list(seeds), engine="flow")
    )


def _by_policy(study: PairedStudy) -> dict[tuple[str, int], Result]:
    return {(s.tag, s.seed): study.runs[s.id] for s in study.specs}


def _peak(summary: dict[str, Any]) -> dict[str, int]:
    return {str(k): int(v) for k, v in summary.get("spine_peak_flows", {}).items()}


def comparison(runs: dict[tuple[str, int], Result]) -> pd.DataFrame:
    """Seed-averaged metrics, one column per policy and a relative change column.

    Rows: mean/P95 FCT and TTFT (s, the mean over seeds of each run's value), each spine's peak
    of concurrent flows (mean over seeds), the largest of those peaks, and ARK's counters.
    ``change_pct`` is ``100 * (ark / ecmp - 1)`` when both policies are present.
    """
    policies = list(dict.fromkeys(p for p, _ in runs))
    data: dict[str, dict[str, float]] = {}
    for policy in policies:
        summaries = [r.summary for (p, _), r in runs.items() if p == policy]
        col: dict[str, float] = {m: float(np.mean([s[m] for s in summaries])) for m in METRICS}
        peaks = [_peak(s) for s in summaries]
        for spine in peaks[0]:
            col[f"peak_flows_{spine}"] = float(np.mean([p[spine] for p in peaks]))
        col["peak_flows_max"] = float(np.mean([max(p.values()) for p in peaks]))
        for key in ("ark_races", "ark_fallbacks"):
            col[key] = float(np.mean([s.get(key, np.nan) for s in summaries]))
        data[policy] = col
    frame = pd.DataFrame(data)
    if "ecmp" in frame and "ark" in frame:
        frame["change_pct"] = 100.0 * (frame["ark"] / frame["ecmp"] - 1.0)
    return frame


def offered_load(sc: Scenario) -> float:
    """Offered load on the prefill leaf's uplinks: ``qps * E[KV bytes] * 8 / uplink capacity``.

    Uses the exact mean of the prompt distribution (payload only, no headers); NaN when the
    fabric is not a leaf-spine or the prompts come from a trace.  ``ark`` at QPS 25: 0.87; at
    QPS 30: 1.05 (past the spine capacity).
    """
    wl, topo = sc.workload, sc.topology
    if wl.kind != "kv_cache" or topo.kind != "leaf_spine" or wl.prompt == "trace":
        return float("nan")
    if wl.prompt == "zipf":
        mean = RankZipf(wl.prompt_min_tokens, wl.prompt_max_tokens, wl.prompt_theta).mean()
    else:
        mean = float(wl.prompt_tokens)
    uplinks_bps = topo.spines * topo.parallel_links * topo.fabric_link_gbps * 1e9
    return wl.qps * mean * kv_bytes_per_token_of(wl) * 8 / uplinks_bps


# -- the QPS sweep -------------------------------------------------------------------------------
def _sweep_point(task: dict[str, Any]) -> dict[str, Any]:
    sc = effective_scenario(task["scenario"])  # the planner checked the user's keys
    s = run(sc, engine="flow").summary
    row = {
        "qps": task["params"]["workload.qps"],
        "policy": task["tag"],
        "seed": task["seed"],
        "rho": offered_load(sc),
    }
    row.update({m: s[m] for m in METRICS})
    row["peak_flows_max"] = max(_peak(s).values(), default=0)
    row["ark_races"] = s.get("ark_races", 0)
    row["ark_fallbacks"] = s.get("ark_fallbacks", 0)
    return row


def qps_sweep(
    qps_values: Iterable[float] = range(1, 31),
    seeds: Iterable[int] = (1,),
    policies: Sequence[str] = POLICIES,
    base: Scenario | None = None,
    workers: int = 1,
) -> pd.DataFrame:
    """Run every (QPS, policy, seed) of the ``ark`` scenario (or ``base``).

    Parameters
    ----------
    qps_values : iterable of float
        Request rates (requests/s); default 1 ... 30.
    seeds : iterable of int
        Seeds; each is paired across policies and QPS values (same prompts and host pairs;
        the arrival times at QPS ``q`` are those at QPS 1 divided by ``q``).
    policies : sequence of str
        ``lb.policy`` values.
    base : Scenario, optional
        Scenario to sweep (default: the built-in ``ark``).
    workers : int
        Processes (1: run in this process).

    Returns
    -------
    pandas.DataFrame
        One row per run: ``qps``, ``policy``, ``seed``, ``rho`` (offered load),
        ``fct_mean_s``, ``fct_p95_s``, ``ttft_mean_s``, ``ttft_p95_s``, ``peak_flows_max``,
        ``ark_races``, ``ark_fallbacks``.
    """
    check_workers(workers)
    specs = plan_qps(base or load_scenario("ark"), qps_values, list(seeds), policies)
    rows = run_tasks(_sweep_point, [s.task() for s in specs], workers)
    return (
        pd.DataFrame(rows)
        .sort_values(["qps", "policy", "seed"], kind="stable")
        .reset_index(drop=True)
    )


def sweep_table(sweep: pd.DataFrame) -> pd.DataFrame:
    """Seed-averaged ECMP vs ARK per QPS, with ARK's change in percent (the docs table)."""
    mean = sweep.groupby(["qps", "policy"])[[*METRICS, "rho"]].mean().unstack("policy")
    out = pd.DataFrame(index=mean.index)
    out["rho"] = mean[("rho", "ecmp")]
    for m in METRICS:
        out[f"{m}_ecmp"] = mean[(m, "ecmp")]
        out[f"{m}_ark"] = mean[(m, "ark")]
        out[f"{m}_change_pct"] = 100.0 * (mean[(m, "ark")] / mean[(m, "ecmp")] - 1.0)
    return out.reset_index()


# -- the default study --------------------------------------------------------------------------
@dataclass(eq=False)
class Study:
    """What :func:`run_study` produced: its scenario, seeds, runs and seed-averaged table."""

    scenario: Scenario
    seeds: list[int]
    runs: dict[tuple[str, int], Result]
    table: pd.DataFrame
    out: Path


def study_seeds(seed: int | None, seeds: int | Sequence[int] | None) -> list[int]:
    """The study's seeds: ``seeds`` itself if a list, else that many (default :data:`DEFAULT_SEEDS`) from ``seed``."""
    if seeds is not None and not isinstance(seeds, int):
        return [int(s) for s in seeds]
    count = DEFAULT_SEEDS if seeds is None else int(seeds)
    if count < 1:
        raise ConfigError(f"seeds: need at least 1 seed (got {count})")
    if count > 10_000:
        raise ConfigError(f"seeds: at most 10000 seeds (got {count})")
    first = 1 if seed is None else int(seed)
    return list(range(first, first + count))


def study_scenario(sets: Sequence[str] = ()) -> Scenario:
    """The ``ark`` scenario with ``--set`` overrides and spine timelines on.

    ``lb.policy`` is chosen by the study, so setting it is refused.
    """
    overrides = parse_set_options(list(sets))
    if "lb.policy" in overrides:
        raise ConfigError("lb.policy: the ARK study runs both ecmp and ark; do not set it")
    overrides.setdefault("records.timelines", True)
    return load_scenario("ark").with_overrides(overrides)


def run_study(
    out: str | Path,
    sets: Sequence[str] = (),
    seed: int | None = None,
    seeds: int | Sequence[int] | None = None,
    figures: Callable[[Path, Study], None] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Study:
    """ECMP vs ARK on the ``ark`` scenario (QPS 25 unless ``--set workload.qps=...``).

    Parameters
    ----------
    out : str or pathlib.Path
        Output directory: ``<policy>-seed<N>/`` per run, ``comparison.csv`` and
        ``study.json``; checked before anything runs, written whole at the end.
    sets : sequence of str
        ``KEY=VALUE`` overrides of the scenario (not ``lb.policy``).
    seed : int or None
        First seed (default 1).
    seeds : int or sequence of int, optional
        How many consecutive seeds (default 8), or the seeds themselves.
    figures : callable, optional
        Called with the temporary output directory and the :class:`Study` before it is
        swapped in.
    progress : callable, optional
        Called with (runs done, runs in all) before the first run and after each.
    """
    target = prepare_out_dir(out, "study")  # checked before anything runs; written at the end
    base = study_scenario(sets)
    chosen = study_seeds(seed, seeds)
    paired = run_paired(
        base, ("lb.policy", list(POLICIES)), {}, chosen, engine="flow", progress=progress
    )
    runs = _by_policy(paired)
    study = Study(base, chosen, runs, comparison(runs), Path(out))
    with target.staging() as tmp:
        _write_study(tmp, study)
        if figures is not None:
            figures(tmp, study)
    return study


def _write_study(tmp: Path, study: Study) -> None:
    """Every run's directory, ``comparison.csv`` and ``study.json`` into ``tmp``."""
    for (policy, s), res in study.runs.items():
        run_dir = tmp / f"{policy}-seed{s}"
        run_dir.mkdir()
        res.write_files(run_dir)
    study.table.to_csv(tmp / "comparison.csv", index_label="metric")
    base = study.scenario
    record = {
        "scenario": base.name,
        "qps": base.workload.qps,  # type: ignore[union-attr]
        "seeds": study.seeds,
        "offered_load": offered_load(base),
        "mean_over_seeds": study.table.to_dict(),
        "runs": {f"{p}-seed{s}": r.summary for (p, s), r in study.runs.items()},
    }
    (tmp / "study.json").write_text(dumps_json(record))


def ark_qps_study(
    out: str | Path,
    sets: Sequence[str] = (),
    seed: int | None = None,
    seeds: int | Sequence[int] | None = None,
    figures: Callable[[Path, PairedStudy], Any] | None = None,
    progress: Callable[[int, int], None] | None = None,
    workers: int = 1,
) -> PairedStudy:
    """The default study (``fabricsim run``): ECMP vs ARK on ``ark`` over :data:`QPS_POINTS`.

    A paired study (:func:`~fabricsim.experiments.paired.run_paired`): the same seeds give
    both policies the same requests at every QPS; spine timelines are on (the heatmap).
    ``--set workload.qps=Q`` runs that one rate instead of the grid.

    Parameters
    ----------
    out : str or pathlib.Path
        Output directory (checked first, written whole at the end): ``qps<Q>-<policy>-seed<N>/``
        per run, ``study.csv`` and ``study.json``, and what ``figures`` draws.
    sets : sequence of str
        ``KEY=VALUE`` overrides of the scenario (not ``lb.policy``).
    seed, seeds
        First seed (default 1) and how many (default 8), or the seeds themselves.
    figures, progress, workers
        As :func:`~fabricsim.experiments.paired.run_paired`.
    """
    base = study_scenario(sets)
    chosen = study_seeds(seed, seeds)
    given = parse_set_options(list(sets))
    grid: dict[str, Sequence[Any]] = {}
    if "workload.qps" not in given:
        grid["workload.qps"] = list(QPS_POINTS)
    return run_paired(
        base, ("lb.policy", list(POLICIES)), grid, chosen, workers=workers, out=out,
        figures=figures, progress=progress,
    )  # fmt: skip
