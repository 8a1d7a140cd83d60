"""Every load-balancing method on one fabric: ``fabricsim compare``.

:func:`compare` runs a scenario once per method (and seed), each with the overrides of
:func:`~fabricsim.experiments.methods.method_overrides`, saves every run under
``out/<method>/seed-<N>`` and returns one table: completed messages, mean / P99 / max FCT,
retransmissions and trims (packet engine), and the uplinks' utilization during each step
(:func:`fabricsim.analysis.links.uplink_utilization`: max, mean over every uplink, idle ones
included, and their ratio: 1 is perfect balance).

Every run is planned and checked (:func:`fabricsim.experiments.plan.plan_methods`) before the
first one starts.  The output directory is checked first
(:func:`fabricsim.metrics.outdir.check_out_dir`), written into a temporary sibling and swapped
in at the end, so a previous output is replaced whole and an error or Ctrl-C leaves it as it
was.

Examples
--------
>>> res = compare("ecmp-collision", engine="flow", methods=["ecmp", "ideal_spray"])
>>> list(res.table["method"]), int(res.table["runs"].sum())
(['ecmp', 'ideal_spray'], 2)
>>> print(format_table(res.table).splitlines()[0])  # doctest: +NORMALIZE_WHITESPACE
method done mean_us p99_us max_us vs_best retx trims up_max up_mean max/mean
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fabricsim._compat import pd
from fabricsim.analysis.links import uplink_utilization
from fabricsim.config.loader import effective_scenario, load_scenario
from fabricsim.config.models import Scenario
from fabricsim.errors import ConfigError
from fabricsim.experiments.backend import check_workers
from fabricsim.experiments.describe import describe_fabric, describe_run, describe_workload
from fabricsim.experiments.methods import compare_methods, default_methods
from fabricsim.experiments.plan import RunSpec, plan_methods
from fabricsim.experiments.runner import ENGINES, fabric_of, run
from fabricsim.experiments.runs import run_tasks
from fabricsim.metrics.outdir import prepare_out_dir
from fabricsim.units import s_to_us

__all__ = [
    "MAX_SEEDS", "TABLE_COLUMNS", "Comparison", "compare", "format_table", "summarize",
    "to_json_data",
]  # fmt: skip

MAX_SEEDS = 10_000  # runs per method in one comparison

TABLE_COLUMNS = [
    "method", "what", "runs", "completed", "flows", "fct_mean_us", "fct_p99_us", "fct_max_us",
    "vs_best", "retransmissions", "trims", "uplink_util_max", "uplink_util_mean",
    "uplink_max_over_mean",
]  # fmt: skip

Figures = Callable[[Path, "pd.DataFrame", str], None]
"""Draws a comparison's figures into a directory: ``(directory, table, title)``."""


@dataclass(eq=False)
class Comparison:
    """What :func:`compare` produced.

    Attributes
    ----------
    table : DataFrame
        One row per method (:data:`TABLE_COLUMNS`): seeds pooled (means of the per-run
        mean / P99 FCT, maximum of the maxima, mean counters), ``vs_best`` = mean FCT over
        the best method's.
    runs : DataFrame
        One row per run (method, seed and the same metrics).
    out : Path or None
        Where the runs, ``compare.csv`` and ``runs.csv`` (and the figures) were written.
    """

    table: pd.DataFrame
    runs: pd.DataFrame
    out: Path | None = None


def _run_one(task: dict[str, Any]) -> dict[str, Any]:
    """Run one (method, seed); save it under ``task["out"]``; return its table row."""
    sc = effective_scenario(task["scenario"])
    res = run(sc, engine=task["engine"])
    if task.get("out") is not None:  # inside the comparison's staging directory (replaced whole)
        run_dir = Path(task["out"]) / task["id"]
        run_dir.mkdir(parents=True)
        res.write_files(run_dir)
    s = res.summary
    row = {
        "method": task["tag"],
        "seed": task["seed"],
        "completed": int(s["flows_completed"]),
        "flows": int(s["flows_total"]),
        "fct_mean_us": _us(s.get("fct_mean_s")),
        "fct_p99_us": _us(s.get("fct_p99_s")),
        "fct_max_us": _us(s.get("fct_max_s")),
        "retransmissions": s.get("packets_retransmitted", math.nan),
        "trims": s.get("packets_trimmed", math.nan),
    }
    row.update(uplink_utilization(res, fabric_of(sc)))
    return row


def _us(v: Any) -> float:
    return math.nan if v is None else s_to_us(float(v))


def compare(
    scenario: str | Path | dict[str, Any] | Scenario,
    engine: str | None = None,
    overrides: dict[str, Any] | None = None,
    seeds: int = 1,
    out: str | Path | None = None,
    methods: Sequence[str] | None = None,
    workers: int = 1,
    progress: Callable[[dict[str, Any]], None] | None = None,
    figures: Figures | None = None,
) -> Comparison:
    """Run ``scenario`` once per load-balancing method and seed; one comparison table.

    Parameters
    ----------
    scenario
        Built-in name, YAML path, dict or :class:`Scenario`.
    engine
        ``packet`` or ``flow`` (default: the scenario's ``engine.kind``).
    overrides
        Dotted-key overrides applied first (``--set``).
    seeds
        Runs per method, with seeds ``scenario.seed .. scenario.seed + seeds - 1``.
    out
        Directory for the runs (``<method>/seed-<N>/``), ``compare.csv`` and ``runs.csv``
        (None: nothing written); checked first, replaced whole at the end (see above).
    methods
        Subset of the engine's methods (default :func:`.methods.default_methods`).
    workers
        Processes running in parallel (1: in this process); they die with this process.
    progress
        Called with each run's row as it finishes.
    figures
        With ``out``: draws into the output before it is swapped in, given (directory, table,
        title); ``fabricsim compare`` passes :func:`fabricsim.report.plots.compare_figures`.

    Returns
    -------
    Comparison
    """
    target = prepare_out_dir(out, "compare") if out is not None else None
    check_workers(workers)
    sc, engine, specs = _plan(scenario, engine, overrides, seeds, methods)  # all checked first
    with target.staging() if target is not None else contextlib.nullcontext(None) as tmp:
        tasks = [spec.task(out=None if tmp is None else str(tmp)) for spec in specs]
        runs = pd.DataFrame(run_tasks(_run_one, tasks, workers, progress))
        table = summarize(runs, engine)
        if tmp is not None:
            used = list(range(sc.seed, sc.seed + seeds))
            title = (
                f"{describe_run(sc, engine, used)}\n{describe_fabric(sc)}\n{describe_workload(sc)}"
            )
            _write(tmp, runs, table, title, figures)
    return Comparison(table, runs, None if out is None else Path(out))


def _write(
    tmp: Path, runs: pd.DataFrame, table: pd.DataFrame, title: str, figures: Figures | None
) -> None:
    """``runs.csv``, ``compare.csv`` and the figures (titled ``title``) into ``tmp``."""
    (tmp / "runs.csv").write_text(runs.to_csv(index=False, float_format="%.6g"))
    (tmp / "compare.csv").write_text(table.to_csv(index=False, float_format="%.6g"))
    if figures is not None:
        figures(tmp, table, title)


def _plan(
    scenario: str | Path | dict[str, Any] | Scenario,
    engine: str | None,
    overrides: dict[str, Any] | None,
    seeds: int,
    methods: Sequence[str] | None,
) -> tuple[Scenario, str, list[RunSpec]]:
    """The comparison's scenario, engine and runs (every argument checked)."""
    sc = load_scenario(scenario)
    if overrides:
        sc = sc.with_overrides(overrides)
    engine = engine or sc.engine.kind
    if engine not in ENGINES:
        raise ConfigError(f"--engine: must be one of {', '.join(ENGINES)} (got {engine!r})")
    _check_seeds(seeds)
    return sc, engine, plan_methods(sc, engine, _methods(methods, engine), seeds)


def _check_seeds(seeds: Any) -> None:
    """Raise ``ConfigError`` unless ``seeds`` is a whole number in ``1 .. MAX_SEEDS``."""
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
        raise ConfigError(f"--seeds: must be a whole number >= 1 (got {seeds!r})")
    if seeds > MAX_SEEDS:
        raise ConfigError(f"--seeds: at most {MAX_SEEDS} runs per method (got {seeds})")


def _methods(methods: Sequence[str] | None, engine: str) -> list[str]:
    """The methods to run: the engine's defaults, or a non-empty list without repeats."""
    if methods is None:
        return list(default_methods(engine))
    if isinstance(methods, str):
        methods = [m.strip() for m in methods.split(",") if m.strip()]
    chosen = list(methods)
    if not chosen:
        raise ConfigError(
            f"--methods: empty list; give one or more of {', '.join(compare_methods(engine))}"
        )
    repeated = sorted({m for m in chosen if chosen.count(m) > 1})
    if repeated:
        raise ConfigError(f"--methods: {repeated[0]} given twice")
    return chosen


def summarize(runs: pd.DataFrame, engine: str) -> pd.DataFrame:
    """One row per method from the per-run rows (see :class:`Comparison`)."""
    what = compare_methods(engine)
    g = runs.groupby("method", sort=False)
    table = pd.DataFrame(
        {
            "method": list(g.groups),
            "what": [what[str(m)][0] for m in g.groups],
            "runs": g.size().to_numpy(),
            "completed": g["completed"].sum().to_numpy(),
            "flows": g["flows"].sum().to_numpy(),
            "fct_mean_us": g["fct_mean_us"].mean().to_numpy(),
            "fct_p99_us": g["fct_p99_us"].mean().to_numpy(),
            "fct_max_us": g["fct_max_us"].max().to_numpy(),
            "retransmissions": g["retransmissions"].mean().to_numpy(),
            "trims": g["trims"].mean().to_numpy(),
            "uplink_util_max": g["uplink_util_max"].mean().to_numpy(),
            "uplink_util_mean": g["uplink_util_mean"].mean().to_numpy(),
            "uplink_max_over_mean": g["uplink_max_over_mean"].mean().to_numpy(),
        }
    )
    best = table["fct_mean_us"].min()
    table["vs_best"] = table["fct_mean_us"] / best if best and best > 0 else math.nan
    return table[TABLE_COLUMNS].reset_index(drop=True)


def to_json_data(result: Comparison) -> dict[str, Any]:
    """The comparison for ``fabricsim compare --json``: ``methods`` (one object per row of
    :data:`TABLE_COLUMNS`), ``runs`` (one per run) and ``out``; NaN as null."""
    return {
        "methods": result.table.to_dict(orient="records"),
        "runs": result.runs.to_dict(orient="records"),
        "out": None if result.out is None else str(result.out),
    }


def format_table(table: pd.DataFrame) -> str:
    """The comparison as fixed-width text (what ``fabricsim compare`` prints)."""
    head = (
        f"{'method':<12}{'done':>10}{'mean_us':>10}{'p99_us':>10}{'max_us':>10}{'vs_best':>8}"
        f"{'retx':>10}{'trims':>10}{'up_max':>8}{'up_mean':>8}{'max/mean':>9}"
    )
    lines = [head]
    for r in table.itertuples(index=False):
        lines.append(
            f"{r.method:<12}{f'{r.completed}/{r.flows}':>10}{r.fct_mean_us:>10.1f}"
            f"{r.fct_p99_us:>10.1f}{r.fct_max_us:>10.1f}{r.vs_best:>8.3f}{_n(r.retransmissions)}"
            f"{_n(r.trims)}{r.uplink_util_max:>8.3f}{r.uplink_util_mean:>8.3f}"
            f"{r.uplink_max_over_mean:>9.3f}"
        )
    return "\n".join(lines)


def _n(v: Any) -> str:
    return f"{'-':>10}" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:>10.0f}"
