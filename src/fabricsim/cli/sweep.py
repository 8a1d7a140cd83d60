"""The ``sweep`` verb: a scenario over a parameter grid x seeds (experiments/sweep.py)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from fabricsim._compat import LazyModule
from fabricsim.cli.app import EngineOpt, QuietOpt, ScenarioArg, SetOpt, app
from fabricsim.cli.common import engine_option
from fabricsim.errors import ConfigError
from fabricsim.metrics.outdir import claim_out_dir
from fabricsim.metrics.results import check_table_format, dumps_json

if TYPE_CHECKING:
    from fabricsim.experiments import backend
    from fabricsim.experiments import plan as planner
    from fabricsim.experiments import sweep as sweeps
else:  # perf: imported when the verb runs, not at every start of `fabricsim`
    backend = LazyModule("fabricsim.experiments.backend")
    planner = LazyModule("fabricsim.experiments.plan")
    sweeps = LazyModule("fabricsim.experiments.sweep")

ListOpt = list[str] | None


@app.command()
def sweep(
    scenario: ScenarioArg,
    out: Annotated[str, typer.Option("--out", help="sweep directory (resumed if it exists)")],
    grid: Annotated[
        ListOpt, typer.Option("--grid", help="KEY=V1,V2,... a grid axis; repeatable")
    ] = None,
    zip_: Annotated[
        ListOpt, typer.Option("--zip", help="KEY=V1,V2,... keys varied together; repeatable")
    ] = None,
    seeds: Annotated[int, typer.Option("--seeds", help="seeds per parameter set")] = 1,
    workers: Annotated[
        int | None, typer.Option("--workers", help="local worker processes (default: CPUs)")
    ] = None,
    scheduler: Annotated[
        str | None, typer.Option("--scheduler", help="Dask scheduler, e.g. tcp://host:8786")
    ] = None,
    connect_timeout: Annotated[
        float, typer.Option("--connect-timeout", help="seconds to reach the scheduler")
    ] = 5.0,
    engine: EngineOpt = None,
    set_: SetOpt = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="print the outcome and the sweep table as JSON")
    ] = False,
    table_format: Annotated[
        str, typer.Option("--format", help="points' tables as parquet (default) or csv")
    ] = "parquet",
    quiet: QuietOpt = False,
) -> None:
    """Run a scenario over a parameter grid x seeds; one result per point, sweep.parquet."""
    claim_out_dir(out, "sweep")  # before planning: a bad or busy --out fails at once
    check_table_format(table_format)
    if workers is not None and scheduler is not None:
        raise ConfigError("--workers: give --workers N or --scheduler ADDR, not both")
    backend.check_workers(workers)
    backend.check_timeout(connect_timeout)
    plan = planner.plan_sweep(
        scenario, grid or [], zip_ or [], seeds, set_ or [], engine_option(engine)
    )
    outcome = sweeps.run_sweep(
        plan, out, workers=workers, scheduler=scheduler, timeout_s=connect_timeout,
        progress=not (quiet or as_json) and sys.stderr.isatty(), table_format=table_format,
    )  # fmt: skip
    if as_json:
        typer.echo(dumps_json(sweeps.to_json_data(outcome)), nl=False)
    elif not quiet and not outcome.removed:
        typer.echo(sweeps.describe(outcome))
    error = sweeps.failure_error(outcome)
    if error is not None:
        raise error
