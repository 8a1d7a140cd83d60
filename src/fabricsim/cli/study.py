"""The ``study`` verb: a scenario under A vs B on paired seeds, over an optional grid
(:mod:`fabricsim.experiments.paired`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from fabricsim._compat import LazyModule, rich_console, rich_table
from fabricsim.cli.app import EngineOpt, PresetOpt, QuietOpt, ScenarioArg, SetOpt, app, with_preset
from fabricsim.cli.common import ProgressBar, engine_option, out_path
from fabricsim.config.loader import load_scenario, parse_set_options
from fabricsim.errors import ConfigError
from fabricsim.experiments.describe import describe_run
from fabricsim.metrics.outdir import claim_out_dir
from fabricsim.metrics.readable import PRIMARY_MARK, study_point_rows

if TYPE_CHECKING:
    from fabricsim.experiments import backend, paired
    from fabricsim.experiments.paired import PairedStudy
    from fabricsim.report import study_plots
else:  # perf: imported when the verb runs, not at every start of `fabricsim`
    backend = LazyModule("fabricsim.experiments.backend")
    paired = LazyModule("fabricsim.experiments.paired")
    study_plots = LazyModule("fabricsim.report.study_plots")


def print_study(study: PairedStudy, console: rich_console.Console | None = None) -> None:
    """One table per grid point: each value's mean [95 % CI] and each change vs the baseline."""
    console = console or rich_console.Console(width=None if sys.stdout.isatty() else 120)
    key, values = study.vs
    names = [str(v) for v in values]
    sc = study.scenario
    head = paired.describe_study(study)
    console.print(describe_run(sc, study.engine, study.seeds))
    console.print(f"fabric:   {head['fabric']}")
    console.print(f"workload: {head['workload']}")
    console.print(f"compared: {head['compared']}")
    left = study.unfinished()
    if left:
        console.print(
            f"warning: {len(left)} of {len(study.specs)} runs left flows unfinished "
            f"({sum(left.values()):,} flows; first {next(iter(left))}): their FCT figures count "
            "finished flows only (study.json lists them)"
        )
    caption = study_caption(study)
    for params in study.points():
        part = study.table
        for k, v in params.items():
            part = part[part[k] == v]
        at = f" at {paired.point_title(params)}" if params else ""
        table = rich_table.Table(title=f"{key}: {' vs '.join(names)}{at}", caption=caption)
        table.add_column("metric")
        for name in names:
            table.add_column(name, justify="right")
        for name in names[1:]:
            table.add_column(f"Δ {name}", justify="right")
        for line in study_point_rows(part.to_dict(orient="records"), names):
            table.add_row(*line.values())
        console.print(table)


def study_caption(study: PairedStudy) -> str:
    """What a study table's numbers are: the intervals, the significance mark, ★ and its note."""
    names = [str(v) for v in study.vs[1]]
    text = (
        f"mean [95 % CI] over {len(study.seeds)} paired seeds; Δ: the change vs {names[0]} "
        "per paired seed (geometric mean of the ratios) [95 % CI; log scale, so times stay > 0 "
        "and changes > -100 %]; an interval holding 0 is not significant"
    )
    primary, note = paired.judged_note(study.scenario)
    if note and set(primary) & set(study.table["metric"]):
        text += f"\n{PRIMARY_MARK} {note}"
    return text


@app.command()
def study(
    scenario: ScenarioArg,
    vs: Annotated[
        str, typer.Option("--vs", help="KEY=A,B[,...]: the values compared (A: baseline)")
    ],
    grid: Annotated[
        list[str] | None, typer.Option("--grid", help="KEY=V1,V2,... a grid axis; repeatable")
    ] = None,
    seeds: Annotated[int, typer.Option("--seeds", help="paired seeds (seed, seed+1, ...)")] = 3,
    out: Annotated[str | None, typer.Option("--out", help="output directory")] = None,
    engine: EngineOpt = None,
    set_: SetOpt = None,
    preset: PresetOpt = None,
    workers: Annotated[int, typer.Option("--workers", help="parallel processes")] = 1,
    scheduler: Annotated[
        str | None, typer.Option("--scheduler", help="Dask scheduler, e.g. tcp://host:8786")
    ] = None,
    svg: Annotated[bool, typer.Option("--svg", help="figures as SVG instead of PNG")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the table as JSON")] = False,
    quiet: QuietOpt = False,
) -> None:
    """Compare two (or more) values of one key on the same seeds: mean, P95, P99 FCT (TTFT,
    CCT) with 95 % confidence intervals and the change against the first value."""
    out_dir = out_path(out, "--out")
    backend.check_workers(workers)
    if workers != 1 and scheduler is not None:
        raise ConfigError("--workers: give --workers N or --scheduler ADDR, not both")
    vs_axis = paired.parse_vs(vs)
    sets = parse_set_options(with_preset(set_, preset))
    name = load_scenario(scenario).name
    target = out_dir or Path("runs") / f"study-{name}"
    claim_out_dir(target, "study")  # held until the command ends
    bar = ProgressBar("study", enabled=not quiet and not as_json and sys.stdout.isatty())
    try:
        result = paired.run_paired(
            scenario, vs_axis, grid or [], seeds, sets=sets, engine=engine_option(engine),
            workers=workers, scheduler=scheduler, out=target,
            figures=lambda d, s: study_plots.paired_figures(d, s, "svg" if svg else "png"),
            progress=bar,
        )  # fmt: skip
    finally:
        bar.stop()
    if as_json:
        record: dict[str, Any] = paired.study_record(result)
        record.pop("runs")
        typer.echo(json.dumps(record, indent=1, ensure_ascii=False, default=str))
        return
    if not quiet:
        print_study(result)
        typer.echo(f"wrote {target}/ (study.csv, study.json, figures, one directory per run)")
