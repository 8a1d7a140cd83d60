"""Paired studies (``fabricsim study``): one scenario under A vs B on the same seeds, over a grid.

Every run of one grid point and seed differs from its partners only in the ``--vs`` key (same
workload, same switch salts), so the per-seed pairs (A_i, B_i) carry the comparison; the table
reports, per grid point and metric, each value's mean over seeds with a 95 % confidence
interval, and each value's change against the first (the baseline)::

    delta_pct = 100 * (G - 1),   G = exp(mean_i log(B_i / A_i))

(the per-seed change, averaged on the log scale). Both intervals are Student-t on the log scale
(:mod:`.intervals`: a time's interval stays > 0, a change's > -100 %); with one seed they are
NaN. A change whose interval holds 0 % is not ``significant``;
``seeds_needed`` then estimates how many seeds would resolve it. ``primary`` marks the
metrics the workload is judged by (:data:`JUDGED_BY`).

Examples
--------
>>> st = run_paired("ecmp-collision", ("lb.policy", ["ecmp", "pinned"]), seeds=2)
>>> row = st.table.query("metric == 'fct_mean_s' and value == 'pinned'").iloc[0]
>>> bool(row.delta_pct < 0), int(row.seeds)
(True, 2)
"""

from __future__ import annotations

import math
import re
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
from fabricsim.experiments.intervals import (
    CONFIDENCE,
    INTERVAL_METHOD,
    NO_CHANGE,
    mean_interval,
    ratio_interval,
)
from fabricsim.experiments.plan import RunSpec, parse_axis, plan_study, point_label
from fabricsim.experiments.runner import run
from fabricsim.experiments.runs import run_tasks
from fabricsim.metrics.outdir import prepare_out_dir
from fabricsim.metrics.results import Result, dumps_json

__all__ = [
    "JUDGED_BY", "METRICS", "PairedStudy", "describe_study", "judged_note", "paired_table",
    "parse_vs", "point_label", "point_title", "run_paired", "study", "study_record", "write_study",
]  # fmt: skip

METRICS = (
    "fct_mean_s", "fct_p95_s", "fct_p99_s",
    "ttft_mean_s", "ttft_p95_s", "ttft_p99_s",
    "cct_s",
)  # fmt: skip
"""The metrics a study compares, those every run's summary has (TTFT: KV caches; CCT: MoE)."""

MAX_RUNS = 10_000

JUDGED_BY: dict[str, tuple[tuple[str, ...], str]] = {
    "moe": (
        ("cct_s",),
        "MoE is judged by CCT (the dispatch's end); mean FCT may rise by design: a rate-based "
        "scheduler paces every flow so they share the links and end together, each lasting "
        "longer while the dispatch ends sooner",
    ),
    "kv_cache": (
        ("fct_mean_s", "ttft_mean_s"),
        "KV-cache transfers are judged by FCT (the KV transfer) and TTFT (what a user waits: "
        "prefill + transfer + first decode step, so the same absolute change is a smaller %)",
    ),
}
"""Workload kind -> (the metrics it is judged by, one line on reading the others)."""


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
        ``mean``, ``ci_low``, ``ci_high`` (95 % CI of the mean, > 0), ``delta_pct``,
        ``delta_ci_low``, ``delta_ci_high`` (the change vs the baseline, per paired seed and
        averaged on the log scale, and its 95 % CI, > -100; NaN for the baseline), ``seeds``, ``significant`` (the change's CI excludes
        0; None for the baseline and with one seed), ``seeds_needed`` (if not significant:
        about how many seeds would resolve it; NaN if not estimable or over 1000),
        ``primary`` (the workload is judged by this metric, :data:`JUDGED_BY`).
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


def paired_table(
    summaries: dict[tuple[tuple[tuple[str, Any], ...], str], list[dict[str, Any]]],
    grid_keys: Sequence[str],
    values: Sequence[str],
    primary: Sequence[str] = (),
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
                low, high = mean_interval(x)
                row.update(metric=metric, value=value, mean=float(np.mean(x)), ci_low=low,
                           ci_high=high)  # fmt: skip
                row.update(_change(x, None if base is None else base[metric]))
                row.update(seeds=len(x), primary=metric in primary)
                rows.append(row)
            if base is None:
                base = {m: np.array([float(s[m]) for s in runs]) for m in metrics}
    columns = [*grid_keys, "metric", "value", "mean", "ci_low", "ci_high", "delta_pct",
               "delta_ci_low", "delta_ci_high", "seeds", "significant", "seeds_needed",
               "primary"]  # fmt: skip
    return pd.DataFrame(rows, columns=columns).astype({"seeds_needed": "Int64"})


def _finite(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _change(x: np.ndarray, base: np.ndarray | None) -> dict[str, Any]:
    """The change columns of a row: ``delta_*``, ``significant``, ``seeds_needed``."""
    c = NO_CHANGE if base is None else ratio_interval(base, x)
    return {
        "delta_pct": c.pct, "delta_ci_low": c.low_pct, "delta_ci_high": c.high_pct,
        "significant": c.significant,
        "seeds_needed": math.nan if c.seeds_needed is None else c.seeds_needed,
    }  # fmt: skip


def judged_note(sc: Scenario) -> tuple[tuple[str, ...], str | None]:
    """The metrics ``sc``'s workload is judged by and the line on reading the others."""
    metrics, note = JUDGED_BY.get(sc.workload.kind, ((), None))
    return metrics, note


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
    primary = judged_note(base)[0]
    table = paired_table(summaries, list(axes), [str(v) for v in values], primary)
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
        **describe_study(study),
        "vs": {"key": key, "values": [str(v) for v in values], "baseline": str(values[0])},
        "grid": {k: v for k, v in study.grid.items()},
        "seeds": study.seeds,
        "confidence": CONFIDENCE,
        "interval": INTERVAL_METHOD,
        "judged_by": list(judged_note(sc)[0]),
        "note": judged_note(sc)[1],
        "unfinished_flows": study.unfinished(),
        "table": [
            {
                k: (None if v is pd.NA or isinstance(v, float) and math.isnan(v) else v)
                for k, v in row.items()
            }  # fmt: skip
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


def describe_study(study: PairedStudy) -> dict[str, str]:
    """The study's header for people: ``fabric`` and ``workload`` lines that show the values the
    study varies (``at QPS {5, 25}``, not the base scenario's fixed ``QPS 25``) and a
    ``compared`` line (the ``--vs`` values, the baseline, the grid, the paired seeds)."""
    key, values = study.vs
    axes: dict[str, list[Any]] = {key: list(values), **study.grid}
    sc = study.scenario
    names = [str(v) for v in values]
    grid = "".join(
        f"; at each {k} = {', '.join(map(str, v))}" for k, v in study.grid.items()
    )  # fmt: skip
    n = len(study.seeds)
    return {
        "fabric": _varied(describe_fabric, sc, axes, key),
        "workload": _varied(describe_workload, sc, axes, key),
        "compared": f"{key} = {' vs '.join(names)} (baseline {names[0]}){grid}; "
        f"{n} paired {'seed' if n == 1 else 'seeds'} per point",
    }


_SEP = re.compile(r"(\s+|, |; )")


def _varied(
    describe: Callable[[Scenario], str], sc: Scenario, axes: dict[str, list[Any]], vs_key: str
) -> str:
    """``describe(sc)`` with the part each axis changes replaced by all its values."""
    tokens = _SEP.split(describe(sc))
    spans: list[tuple[int, int, str]] = []
    for key, values in axes.items():
        try:
            texts = [_SEP.split(describe(sc.with_overrides({key: v}))) for v in values]
        except ValueError:  # a value valid only with the grid's other keys: leave it
            continue
        if all(t == tokens for t in texts):
            continue
        lo = min(_common(tokens, t) for t in texts)
        hi = min(_common(tokens[lo:][::-1], t[lo:][::-1]) for t in texts)
        middles = ["".join(t[lo : len(t) - hi]) for t in texts]
        end = len(tokens) - hi
        if any(lo <= b and a <= end for a, b, _ in spans):
            continue  # overlaps another axis's part: the first axis wins
        one_word = all(len(t) - hi - lo == 1 for t in texts)
        joined = (" vs " if key == vs_key else ", " if one_word else " | ").join(middles)
        spans.append((lo, end, f"{{{joined}}}"))
    for lo, hi, text in sorted(spans, reverse=True):
        tokens[lo:hi] = [text]
    return "".join(tokens)


def _common(a: list[str], b: list[str]) -> int:
    """How many leading tokens ``a`` and ``b`` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def point_title(params: dict[str, Any]) -> str:
    """A grid point for people: ``workload.qps = 25`` (or ``all runs`` without a grid)."""
    return ", ".join(f"{k} = {v}" for k, v in params.items()) or "all runs"
