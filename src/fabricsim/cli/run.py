"""The ``run`` verb: one scenario, or with no SCENARIO the default ARK KV-cache study.

The study and its choices are :mod:`fabricsim.experiments.default_study` (ECMP vs ARK on paired
seeds over the paper's QPS points: its scenario, engine, workload, output directory, workers and
trend); :func:`default_study` adds what the command shows: its figures, a progress bar on a
terminal and the trend table.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

import fabricsim
from fabricsim._compat import LazyModule, rich_console, rich_table
from fabricsim.cli.app import (
    EngineOpt,
    PresetOpt,
    QuietOpt,
    SetOpt,
    app,
    single_run,
    skip_teardown,
    with_preset,
)
from fabricsim.cli.common import (
    ProgressBar,
    SimBar,
    engine_option,
    out_path,
    scenario_from_options,
)
from fabricsim.errors import ConfigError
from fabricsim.experiments.describe import describe_fabric, describe_run, describe_workload
from fabricsim.metrics.outdir import claim_out_dir
from fabricsim.metrics.readable import METRIC_LABELS, PRIMARY_MARK, delta_text, summary_rows
from fabricsim.metrics.results import check_table_format, dumps_json
from fabricsim.units import human_number, human_share, seconds_unit

if TYPE_CHECKING:
    from fabricsim.experiments import backend, paired
    from fabricsim.experiments import default_study as defaults
    from fabricsim.experiments.paired import PairedStudy
    from fabricsim.report import study_plots
else:
    # perf: the default study's modules (the paired-study planner, its process pool, the
    # report's figures) are imported when it runs, not by every `fabricsim run SCENARIO`
    backend = LazyModule("fabricsim.experiments.backend")  # --workers' check, when given
    defaults = LazyModule("fabricsim.experiments.default_study")
    paired = LazyModule("fabricsim.experiments.paired")
    study_plots = LazyModule("fabricsim.report.study_plots")


def _is_tty(quiet: bool) -> bool:
    return (not quiet) and sys.stdout.isatty()


def _print_summary(res: Any) -> None:
    sc, s = res.scenario, res.summary
    console = rich_console.Console(width=None if sys.stdout.isatty() else 110)
    console.print(describe_run(sc, str(s.get("engine")), [int(s.get("seed", sc.seed))]))
    console.print(f"fabric:   {describe_fabric(sc)}")
    console.print(f"workload: {describe_workload(sc)}")
    table = rich_table.Table(show_header=False, box=None, padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    for what, value in summary_rows(s):
        table.add_row(what, value)
    console.print(table)
    if "collective_sizes" in res.tables:
        _print_collective_sizes(console, res)


def _print_collective_sizes(console: Any, res: Any) -> None:
    """A collective's nccl-tests table: size, count, time, algbw, busbw per size."""
    wl = res.scenario.workload
    table = rich_table.Table(title=f"{wl.operation} ({wl.algo}, {wl.channels} channel(s))")
    for head in ("size (B)", "count (elements)", "time (us)", "algbw (GB/s)", "busbw (GB/s)"):
        table.add_column(head, justify="right")
    for row in res.tables["collective_sizes"].itertuples(index=False):
        table.add_row(
            f"{row.size_bytes}",
            f"{row.count}",
            f"{row.time_us:.1f}",
            f"{row.algbw_GBps:.2f}",
            f"{row.busbw_GBps:.2f}",
        )
    console.print(table)


def _trend_cell(cell: tuple[dict[str, Any], dict[str, Any]] | None) -> str:
    if cell is None:
        return "-"
    base, other = cell
    factor, unit = seconds_unit(float(base["mean"]))
    text = f"{human_number(base['mean'] / factor)} → {human_number(other['mean'] / factor)} {unit}"
    delta = delta_text(other, short=True)
    return text if delta == "-" else f"{text}  {delta}"


def print_trend(study: PairedStudy) -> None:
    """The default study in one table: per QPS, ECMP → ARK and ARK's change with its 95 % CI."""
    console = rich_console.Console(width=None if sys.stdout.isatty() else 190)
    sc = study.scenario
    head = paired.describe_study(study)
    console.print(describe_run(sc, study.engine, study.seeds))
    console.print(f"fabric:   {head['fabric']}")
    console.print(f"workload: {head['workload']}")
    console.print(f"compared: {head['compared']}")
    n = len(study.seeds)
    table = rich_table.Table(
        title="ECMP → ARK for KV-cache transfers (mean over seeds; Δ: ARK's change, 95 % CI)",
        caption=f"Δ: ARK's change per paired seed (geometric mean of ARK/ECMP) [95 % CI "
        f"over the {n} seeds, log scale: a change stays > -100 %]; "
        f"n.s.: not significant with {n} seeds (the interval holds 0), ≈N seeds: about how many "
        f"would resolve it at the spread seen; {PRIMARY_MARK} {paired.judged_note(sc)[1]}",
    )
    table.add_column("QPS", justify="right")
    table.add_column("load", justify="right")
    primary = paired.judged_note(sc)[0]
    for metric in defaults.TREND_METRICS:
        mark = f" {PRIMARY_MARK}" if metric in primary else ""
        table.add_column(METRIC_LABELS[metric] + mark, justify="right")
    table.add_column("ARK fallbacks", justify="right")
    for row in defaults.trend_rows(study):
        cells = [_trend_cell(row.cells[m]) for m in defaults.TREND_METRICS]
        cells.append(human_share(row.fallbacks, row.flows))
        load = f"{row.load:.2f}" if math.isfinite(row.load) else "-"
        table.add_row(f"{row.qps:g}", load, *cells)
    console.print(table)


def default_study(
    out: Path,
    sets: list[str],
    seed: int | None,
    quiet: bool,
    seeds: int | Sequence[int] | None = None,
    workers: int | None = None,
) -> PairedStudy:
    """The default study as ``fabricsim run`` runs it: ECMP vs ARK over the paper's QPS points.

    Parameters
    ----------
    out : pathlib.Path
        Output directory: what :func:`~fabricsim.experiments.study.ark_qps_study` writes, and
        :func:`~fabricsim.report.study_plots.ark_figures` (FCT and TTFT vs QPS, the spine
        heatmap and CDFs at QPS 25).
    sets : list of str
        ``KEY=VALUE`` overrides of the scenario (not ``lb.policy``; ``workload.qps``: that rate
        alone).
    seed : int or None
        First seed (default 1).
    quiet : bool
        Print nothing.
    seeds : int or sequence of int, optional
        How many consecutive seeds (default 8: what makes the changes at QPS 25 significant),
        or the seeds themselves.
    workers : int, optional
        Local processes (default: up to 4, one per CPU).
    """
    bar = ProgressBar("ARK study", not quiet and sys.stdout.isatty())
    try:
        study = defaults.run_default_study(
            out, sets, seed, seeds, workers, study_plots.ark_figures, bar
        )
    finally:
        bar.stop()
    if not quiet:
        print_trend(study)
        print(f"wrote {out}/ (study.csv, study.json, figures, one directory per run)")
    return study


def check_parallel(workers: int | None, scheduler: str | None, engine: str) -> None:
    """``--workers``/``--scheduler`` of ``run``: only the decomposed engine has tasks to share."""
    if workers is None and scheduler is None:
        return
    option = "--workers" if workers is not None else "--scheduler"
    if engine != "decomposed":
        raise ConfigError(
            f"{option}: a single {engine}-engine run is one process; --workers and --scheduler "
            "spread the decomposed engine's link simulations (--engine decomposed) or a sweep"
        )
    if workers is not None and scheduler is not None:
        raise ConfigError("--workers: give --workers N or --scheduler ADDR, not both")
    backend.check_workers(workers)


@app.command()
def run(
    ctx: typer.Context,
    scenario: Annotated[
        str | None, typer.Argument(help="YAML path, built-in name or htsim .cm matrix")
    ] = None,
    engine: EngineOpt = None,
    set_: SetOpt = None,
    preset: PresetOpt = None,
    seed: Annotated[int | None, typer.Option("--seed", help="override the scenario seed")] = None,
    out: Annotated[str | None, typer.Option("--out", help="output directory")] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="print the run's summary (summary.json) as JSON")
    ] = False,
    table_format: Annotated[
        str, typer.Option("--format", help="tables as parquet (default) or csv")
    ] = "parquet",
    quiet: QuietOpt = False,
    workers: Annotated[
        int | None,
        typer.Option("--workers", help="decomposed engine: local worker processes"),
    ] = None,
    scheduler: Annotated[
        str | None,
        typer.Option("--scheduler", help="decomposed engine: Dask scheduler, tcp://host:8786"),
    ] = None,
) -> None:
    """Run a scenario (no SCENARIO: the default ARK KV-cache study, ECMP vs ARK)."""
    check_table_format(table_format)
    out_dir = out_path(out, "--out")
    engine = engine_option(engine)
    if scenario is None:
        if preset is not None:
            raise ConfigError("--preset: name a scenario (the default study has its own fabric)")
        if table_format != "parquet":
            raise ConfigError(
                f"--format {table_format}: name a scenario (the default study writes Parquet)"
            )
        defaults.check_engine(engine)
        # bad --set/--seed fail before writing
        defaults.check_scenario(scenario_from_options(defaults.SCENARIO, set_, seed))
        target = out_dir or defaults.OUT
        claim_out_dir(target, "study")  # held until the command ends
        default_study(out=target, sets=set_ or [], seed=seed, quiet=quiet)
        return
    sc = scenario_from_options(scenario, with_preset(set_, preset), seed)
    chosen = engine or sc.engine.kind
    check_parallel(workers, scheduler, chosen)
    target = out_dir or Path("runs") / f"{sc.name}-{chosen}"
    claim_out_dir(target)  # before the run: a bad or busy --out fails in milliseconds
    unit = "packets" if chosen == "decomposed" else "seconds"
    bar = SimBar(f"{sc.name} ({chosen})", _is_tty(quiet or as_json), unit)
    single_run(ctx)
    try:
        res = fabricsim.run(
            sc,
            engine=engine,
            progress=bar if bar.progress else None,
            workers=workers,
            scheduler=scheduler,
        )
    finally:
        bar.stop()
    res.save(target, table_format)
    if as_json:
        typer.echo(dumps_json(res.summary), nl=False)
    elif not quiet:
        _print_summary(res)
        typer.echo(f"wrote {target}/ (summary.json has every figure)")
    skip_teardown(ctx)  # one run in this process: nothing left to clean up
