"""The ``compare`` verb: every load-balancing method on one fabric (experiments/compare.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from fabricsim._compat import LazyModule
from fabricsim.cli.app import EngineOpt, PresetOpt, QuietOpt, ScenarioArg, SetOpt, app, with_preset
from fabricsim.cli.common import engine_option
from fabricsim.config.loader import load_scenario, parse_set_options
from fabricsim.metrics.outdir import claim_out_dir
from fabricsim.metrics.results import dumps_json

if TYPE_CHECKING:
    from fabricsim.experiments import backend
    from fabricsim.experiments import compare as comparison
    from fabricsim.report import plots
else:  # perf: imported when the verb runs, not at every start of `fabricsim`
    backend = LazyModule("fabricsim.experiments.backend")
    comparison = LazyModule("fabricsim.experiments.compare")
    plots = LazyModule("fabricsim.report.plots")


def print_progress(row: dict[str, Any]) -> None:
    """One line per finished run on stderr (the progress on a terminal)."""
    print(
        f"  {row['method']:<12} seed {row['seed']}: mean FCT {row['fct_mean_us']:.1f} us",
        file=sys.stderr,
    )


@app.command()
def compare(
    scenario: ScenarioArg,
    engine: EngineOpt = None,
    set_: SetOpt = None,
    preset: PresetOpt = None,
    seeds: Annotated[int, typer.Option("--seeds", help="runs per method (seed, seed+1, ...)")] = 1,
    out: Annotated[str | None, typer.Option("--out", help="output directory")] = None,
    methods: Annotated[
        str | None, typer.Option("--methods", help="comma-separated subset of the methods")
    ] = None,
    workers: Annotated[int, typer.Option("--workers", help="parallel processes")] = 1,
    as_json: Annotated[
        bool, typer.Option("--json", help="print the comparison (methods and runs) as JSON")
    ] = False,
    quiet: QuietOpt = False,
) -> None:
    """Every load-balancing method on one fabric: one table and a bar chart.

    Packet engine: ecmp, default, oblivious, reps (NIC spraying), adaptive, flowlet, spray
    (switch); pinned and qp_scaling on request.  Flow engine: ecmp, ideal_spray, pinned,
    qp_scaling.
    """
    if out is not None:
        claim_out_dir(out, "compare")  # before loading anything: a bad --out fails at once
    backend.check_workers(workers)
    sc = load_scenario(scenario)
    chosen = None if methods is None else [m.strip() for m in methods.split(",") if m.strip()]
    target = Path(out) if out is not None else Path("runs") / f"compare-{sc.name}"
    claim_out_dir(target, "compare")  # held until the command ends
    result = comparison.compare(
        sc,
        engine=engine_option(engine),
        overrides=parse_set_options(with_preset(set_, preset)),
        seeds=seeds,
        out=target,
        methods=chosen,
        workers=workers,
        progress=print_progress if not (quiet or as_json) and sys.stderr.isatty() else None,
        figures=plots.compare_figures,
    )
    if as_json:
        typer.echo(dumps_json(comparison.to_json_data(result)), nl=False)
    elif not quiet:
        typer.echo(comparison.format_table(result.table))
        typer.echo(f"wrote {target}/ (compare.csv, runs.csv, compare.png, one directory per run)")
