"""Paired studies (``fabricsim study``): one scenario under A vs B on the same seeds, over a grid.

Every run of one grid point and seed differs from its partners only in the ``--vs`` key (same
workload, same switch salts), so the per-seed differences B - A carry the comparison; the
table reports, per grid point and metric, each value's mean over seeds with a 95 % Student-t
confidence interval, and each value's change against the first (the baseline)::

    delta_pct = 100 * mean(B - A) / mean(A)          (= 100 * (mean B / mean A - 1))
    CI        = 100 * (mean(B - A) +- t(0.975, n-1) * sd(B - A) / sqrt(n)) / mean(A)

(the interval of the paired difference, scaled by the baseline's mean taken as fixed); with
one seed the intervals are NaN.

Examples
--------
>>> st = run_paired("ecmp-collision", ("lb.policy", ["ecmp", "pinned"]), seeds=2)
>>> row = st.table.query("metric == 'fct_mean_s' and value == 'pinned'").iloc[0]
>>> bool(row.delta_pct < 0), int(row.seeds)
(True, 2)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fabricsim._compat import pd
from fabricsim.config.loader import effective_scenario, load_scenario, parse_set_options
from fabricsim.config.models import Scenario
from fabricsim.errors import ConfigError
from fabricsim.experiments.describe import describe_fabric, describe_run, describe_workload
from fabricsim.experiments.plan import RunSpec, parse_axis, plan_study, point_label
from fabricsim.experiments.runner import run
from fabricsim.experiments.runs import run_tasks
from fabricsim.metrics.outdir import prepare_out_dir
from fabricsim.metrics.results import Result, dumps_json

__all__ = [
    "METRICS", "PairedStudy", "paired_table", "parse_vs", "point_label", "point_title",
    "run_paired", "study", "study_record", "write_study",
]  # fmt: skip

METRICS = (
    "fct_mean_s", "fct_p95_s", "fct_p99_s",
    "ttft_mean_s", "ttft_p95_s", "ttft_p99_s",
    "cct_s",
)  # fmt: skip
"""The metrics a study compares, those every run's summary has (TTFT: KV caches; CCT: MoE)."""

MAX_RUNS = 10_000
CONFIDENCE = 0.95


@dataclass(eq=False)
class PairedStudy:
    """What :func:`run_paired` produced.

    Attributes
    ----------
    scenario : Scenario
        The base scenario (``--set`` applied, before the ``--vs`` and grid keys).
    vs : tuple
        ``(key, values)``; the first value is the baseline.
    grid : dict
        Grid key -> values (empty: one point).
    seeds : list of int
        The seeds, shared by every value and grid point.
    engine : str
        The engine every run used.
    runs : dict
        Run id -> :class:`~fabricsim.metrics.Result`.
    specs : list of RunSpec
        The plan, in run order.
    table : pandas.DataFrame
        One row per (grid point, metric, value): the grid keys, ``metric``, ``value``,
        ``mean``, ``ci_low``, ``ci_high``, ``delta_pct``, ``delta_ci_low``, ``delta_ci_high``
        (NaN for the baseline), ``seeds``.
    """

    scenario: Scenario
    vs: tuple[str, list[Any]]
    grid: dict[str, list[Any]]
    seeds: list[int]
    engine: str
    runs: dict[str, Result]
    specs: list[RunSpec]
    table: pd.DataFrame

    def points(self) -> list[dict[str, Any]]:
        """The grid points in order (``[{}]`` without a grid)."""
        return [dict(p) for p in dict.fromkeys(_freeze(s.params) for s in self.specs)]

    def unfinished(self) -> dict[str, int]:
        """Run id -> flows not completed, for the runs that left any (their FCT metrics count
        the finished flows only)."""
        out = {}
        for s in self.specs:
            sm = self.runs[s.id].summary
            left = int(sm.get("flows_total", 0)) - int(sm.get("flows_completed", 0))
            if left:
                out[s.id] = left
        return out

    def results(self, params: dict[str, Any], value: Any) -> list[Result]:
        """The runs of one grid point under one ``vs`` value, in seed order."""
        return [self.runs[s.id] for s in self.specs if s.params == params and s.tag == str(value)]


def _freeze(params: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(params.items())


def parse_vs(item: str) -> tuple[str, list[Any]]:
    """``KEY=A,B[,C...]`` -> (key, values); at least two distinct values."""
    key, values = parse_axis(item, "--vs")
    if len(values) < 2:
        raise ConfigError(f"--vs {key}: give at least two values to compare, e.g. {key}=A,B")
    return key, values


def _interval(x: np.ndarray) -> tuple[float, float]:
    """The (low, high) 95 % Student-t interval of the mean of ``x``; NaN for n < 2."""
    n = len(x)
    if n < 2:
        return math.nan, math.nan
    # perf: scipy.special, only when an interval is computed (stdtrit is what stats.t.ppf
    # evaluates; importing scipy.stats costs 0.9 s, scipy.special 0.3 s)
    from scipy import special

    half = float(special.stdtrit(n - 1, 0.5 + CONFIDENCE / 2) * np.std(x, ddof=1) / math.sqrt(n))
    m = float(np.mean(x))
    return m - half, m + half


def paired_table(
    summaries: dict[tuple[tuple[tuple[str, Any], ...], str], list[dict[str, Any]]],
    grid_keys: Sequence[str],
    values: Sequence[str],
) -> pd.DataFrame:
    """The study table from each (grid point, value)'s summaries (in the same seed order)."""
    rows: list[dict[str, Any]] = []
    points = list(dict.fromkeys(p for p, _ in summaries))
    every = [s for runs in summaries.values() for s in runs]
    metrics = [m for m in METRICS if all(_finite(s.get(m)) for s in every)]
    for point in points:
        base = None
        for value in values:
            runs = summaries[(point, value)]
            for metric in metrics:
                x = np.array([float(s[metric]) for s in runs])
                row: dict[str, Any] = dict(point)
                low, high = _interval(x)
                row.update(metric=metric, value=value, mean=float(np.mean(x)), ci_low=low,
                           ci_high=high)  # fmt: skip
                row.update(_delta(x, None if base is None else base[metric]))
                row["seeds"] = len(x)
                rows.append(row)
            if base is None:
                base = {m: np.array([float(s[m]) for s in runs]) for m in metrics}
    columns = [*grid_keys, "metric", "value", "mean", "ci_low", "ci_high", "delta_pct",
               "delta_ci_low", "delta_ci_high", "seeds"]  # fmt: skip
    return pd.DataFrame(rows, columns=columns)


def _finite(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _delta(x: np.ndarray, base: np.ndarray | None) -> dict[str, float]:
    if base is None:
        return {"delta_pct": math.nan, "delta_ci_low": math.nan, "delta_ci_high": math.nan}
    d = x - base
    ref = float(np.mean(base))
    if ref == 0:
        return {"delta_pct": math.nan, "delta_ci_low": math.nan, "delta_ci_high": math.nan}
    low, high = _interval(d)
    return {
        "delta_pct": 100.0 * float(np.mean(d)) / ref,
        "delta_ci_low": 100.0 * low / ref,
        "delta_ci_high": 100.0 * high / ref,
    }


def _run_result(task: dict[str, Any]) -> Result:
    return run(effective_scenario(task["scenario"]), engine=task["engine"])


def run_paired(
    scenario: str | Path | dict[str, Any] | Scenario,
    vs: tuple[str, Sequence[Any]] | str,
    grid: dict[str, Sequence[Any]] | Sequence[str] | None = None,
    seeds: int | Sequence[int] = 3,
    *,
    sets: dict[str, Any] | Sequence[str] | None = None,
    engine: str | None = None,
    workers: int = 1,
    scheduler: str | None = None,
    out: str | Path | None = None,
    figures: Callable[[Path, PairedStudy], Any] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> PairedStudy:
    """Run a paired study: ``scenario`` under each ``vs`` value, on the same seeds, per grid point.

    Parameters
    ----------
    scenario
        Built-in name, YAML or ``.cm`` path, dict or Scenario.
    vs
        ``(key, [A, B, ...])`` or ``"KEY=A,B"``; the first value is the baseline.
    grid
        ``{key: [v1, v2, ...]}`` or ``["KEY=v1,v2", ...]``: a cartesian grid (first key slowest).
    seeds
        How many seeds (the scenario's seed, seed + 1, ...) or the seeds themselves.
    sets
        Overrides of every run (``{key: value}`` or ``--set`` strings); not the study's keys.
    engine
        ``flow`` or ``packet``; default: the scenario's.
    workers, scheduler
        Local processes, or a Dask scheduler address.
    out
        Output directory (checked before anything runs; written whole at the end): a
        directory per run, ``study.csv`` (the table) and ``study.json``.
    figures
        Called with the staging directory and the study before it is swapped in.
    progress
        Called with (runs done, runs in all) before the first run and after each.
    """
    target = prepare_out_dir(out, "study") if out is not None else None
    key, values, axes, base, chosen = _checked(scenario, vs, grid, seeds, sets)
    specs = plan_study(base, (key, values), axes, chosen, engine)
    total, done = len(specs), [0]

    def advance(_: Result) -> None:
        done[0] += 1
        if progress:
            progress(done[0], total)

    if progress:
        progress(0, total)
    results = run_tasks(_run_result, [s.task() for s in specs], workers, advance, scheduler)
    runs = {s.id: r for s, r in zip(specs, results, strict=True)}
    summaries: dict[Any, list[dict[str, Any]]] = {}
    for s in specs:
        summaries.setdefault((_freeze(s.params), s.tag), []).append(runs[s.id].summary)
    table = paired_table(summaries, list(axes), [str(v) for v in values])
    used = engine or base.engine.kind
    study = PairedStudy(base, (key, values), axes, chosen, used, runs, specs, table)
    if target is not None:
        with target.staging() as tmp:
            write_study(tmp, study)
            if figures is not None:
                figures(tmp, study)
    return study


def _checked(
    scenario: str | Path | dict[str, Any] | Scenario,
    vs: tuple[str, Sequence[Any]] | str,
    grid: dict[str, Sequence[Any]] | Sequence[str] | None,
    seeds: int | Sequence[int],
    sets: dict[str, Any] | Sequence[str] | None,
) -> tuple[str, list[Any], dict[str, list[Any]], Scenario, list[int]]:
    """The study's inputs checked: (vs key, its values, grid axes, base scenario, seeds)."""
    key, values = parse_vs(vs) if isinstance(vs, str) else (vs[0], list(vs[1]))
    if len(values) < 2 or len({str(v) for v in values}) != len(values):
        raise ConfigError(f"--vs {key}: give at least two distinct values to compare")
    axes = _grid(grid)
    if key in axes:
        raise ConfigError(f"--grid {key}: also the --vs key; vary it in one place")
    overrides = sets if isinstance(sets, dict) else parse_set_options(list(sets or []))
    for k in overrides:
        if k == key or k in axes:
            raise ConfigError(f"--set {k}: also a study key (--vs/--grid); give it in one place")
    base = load_scenario(scenario)
    base = base.with_overrides(dict(overrides)) if overrides else base
    chosen = _seeds(base.seed, seeds)
    if "seed" in axes or key == "seed":
        option = "--vs" if key == "seed" else "--grid"
        raise ConfigError(f"{option} seed: a study pairs runs on its seeds; use --seeds N")
    count = len(chosen) * len(values) * math.prod(len(v) for v in axes.values())
    if count > MAX_RUNS:
        raise ConfigError(f"--vs/--grid/--seeds: {count} runs in one study; at most {MAX_RUNS}")
    return key, values, axes, base, chosen


def study(
    scenario: str | Path | dict[str, Any] | Scenario,
    vs: dict[str, Sequence[Any]],
    grid: dict[str, Sequence[Any]] | None = None,
    seeds: int | Sequence[int] = 3,
    **options: Any,
) -> pd.DataFrame:
    """The Python form of ``fabricsim study``: dicts in, the study table out.

    ``vs`` is ``{key: [A, B, ...]}`` (one key), ``grid`` ``{key: [values]}``; ``options`` are
    those of :func:`run_paired` (``sets`` as a dict, ``engine``, ``workers``, ``out`` ...).

    Examples
    --------
    >>> t = study("ecmp-collision", {"lb.policy": ["ecmp", "pinned"]}, seeds=2)
    >>> list(t.columns[:3]), sorted(set(t["value"]))
    (['metric', 'value', 'mean'], ['ecmp', 'pinned'])
    """
    if not isinstance(vs, dict) or len(vs) != 1:
        raise ConfigError("vs: give one key and its values, e.g. {'lb.policy': ['ecmp', 'ark']}")
    ((key, values),) = vs.items()
    return run_paired(scenario, (key, list(values)), grid or {}, seeds, **options).table


def _grid(grid: dict[str, Sequence[Any]] | Sequence[str] | None) -> dict[str, list[Any]]:
    if grid is None:
        return {}
    if isinstance(grid, dict):
        return {str(k): list(v) for k, v in grid.items()}
    out: dict[str, list[Any]] = {}
    for item in grid:
        k, vals = parse_axis(item, "--grid")
        if k in out:
            raise ConfigError(f"--grid {k}: key given twice")
        out[k] = vals
    return out


def _seeds(first: int, seeds: int | Sequence[int]) -> list[int]:
    if isinstance(seeds, bool):
        raise ConfigError(f"--seeds: expected a whole number (got {seeds!r})")
    if isinstance(seeds, int):
        if not 1 <= seeds <= MAX_RUNS:
            raise ConfigError(f"--seeds: must be 1 … {MAX_RUNS} (got {seeds})")
        return list(range(first, first + seeds))
    chosen = [int(s) for s in seeds]
    if not chosen or len(set(chosen)) != len(chosen):
        raise ConfigError("--seeds: give distinct seeds")
    return chosen


def write_study(tmp: Path, study: PairedStudy) -> None:
    """Every run's directory, ``study.csv`` and ``study.json`` into ``tmp``."""
    for s in study.specs:
        run_dir = tmp / s.id
        run_dir.mkdir()
        study.runs[s.id].write_files(run_dir)
    study.table.to_csv(tmp / "study.csv", index=False)
    (tmp / "study.json").write_text(dumps_json(study_record(study)))


def study_record(study: PairedStudy) -> dict[str, Any]:
    """The study as JSON-able data (what ``study.json`` and ``fabricsim study --json`` hold)."""
    key, values = study.vs
    sc = study.scenario
    return {
        "scenario": sc.name,
        "engine": study.engine,
        "title": describe_run(sc, study.engine, study.seeds),
        "fabric": describe_fabric(sc),
        "workload": describe_workload(sc),
        "vs": {"key": key, "values": [str(v) for v in values], "baseline": str(values[0])},
        "grid": {k: v for k, v in study.grid.items()},
        "seeds": study.seeds,
        "confidence": CONFIDENCE,
        "unfinished_flows": study.unfinished(),
        "table": [
            {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}
            for row in study.table.to_dict(orient="records")
        ],
        "runs": {
            s.id: {
                "value": s.tag,
                "params": s.params,
                "seed": s.seed,
                "summary": study.runs[s.id].summary,
            }
            for s in study.specs
        },  # fmt: skip
    }


def point_title(params: dict[str, Any]) -> str:
    """A grid point for people: ``workload.qps = 25`` (or ``all runs`` without a grid)."""
    return ", ".join(f"{k} = {v}" for k, v in params.items()) or "all runs"
