"""The ``run`` verb: one scenario, or with no SCENARIO the default ARK KV-cache study."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

import fabricsim
from fabricsim.cli.app import EngineOpt, QuietOpt, SetOpt, app
from fabricsim.cli.common import engine_option, out_path, scenario_from_options
from fabricsim.errors import ConfigError
from fabricsim.metrics.outdir import check_out_dir
from fabricsim.studies.ark import default_study


def _is_tty(quiet: bool) -> bool:
    return (not quiet) and sys.stdout.isatty()


def _print_summary(summary: dict[str, Any]) -> None:
    table = Table(title=f"{summary.get('scenario')} on the {summary.get('engine')} engine")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in summary.items():
        if isinstance(value, dict | list):
            continue
        table.add_row(key, f"{value:.6g}" if isinstance(value, float) else str(value))
    Console().print(table)


@app.command()
def run(
    scenario: Annotated[str | None, typer.Argument(help="YAML path or built-in name")] = None,
    engine: EngineOpt = None,
    set_: SetOpt = None,
    seed: Annotated[int | None, typer.Option("--seed", help="override the scenario seed")] = None,
    out: Annotated[str | None, typer.Option("--out", help="output directory")] = None,
    quiet: QuietOpt = False,
) -> None:
    """Run a scenario (no SCENARIO: the default ARK KV-cache study, ECMP vs ARK)."""
    out_dir = out_path(out, "--out")
    engine = engine_option(engine)
    if scenario is None:
        if engine not in (None, "flow"):
            raise ConfigError(
                f"--engine {engine}: the default study (ark: ~4e8 packets) runs on the flow "
                "engine; name a scenario to use --engine packet"
            )
        study = scenario_from_options("ark", set_, seed)  # bad --set/--seed fail before writing
        if study.workload.kind != "kv_cache":
            raise ConfigError(
                f"workload.kind={study.workload.kind}: the default study compares KV-cache "
                "transfers (kv_cache); name a scenario to run another workload"
            )
        target = out_dir or Path("runs/ark-study")
        check_out_dir(target, "study")
        default_study(out=target, sets=set_ or [], seed=seed, quiet=quiet)
        return
    sc = scenario_from_options(scenario, set_, seed)
    target = out_dir or Path("runs") / f"{sc.name}-{engine or sc.engine.kind}"
    check_out_dir(target)  # before the run: a bad --out fails in milliseconds
    if _is_tty(quiet):
        with Console().status(f"running {sc.name} on the {engine or sc.engine.kind} engine"):
            res = fabricsim.run(sc, engine=engine)
    else:
        res = fabricsim.run(sc, engine=engine)
    res.save(target)
    if not quiet:
        _print_summary(res.summary)
        typer.echo(f"wrote {target}/")
