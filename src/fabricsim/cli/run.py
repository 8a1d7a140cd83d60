"""The ``run`` verb: one scenario, or with no SCENARIO the default ARK KV-cache study.

The study itself is :func:`fabricsim.experiments.study.run_study`; :func:`default_study` adds
what the command shows: its figures, a progress bar on a terminal and the side-by-side table.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import pandas as pd
import typer
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

import fabricsim
from fabricsim.cli.app import EngineOpt, PresetOpt, QuietOpt, SetOpt, app, with_preset
from fabricsim.cli.common import engine_option, out_path, scenario_from_options
from fabricsim.config.models import Scenario
from fabricsim.errors import ConfigError
from fabricsim.experiments.study import LABELS, run_study
from fabricsim.metrics.outdir import check_out_dir
from fabricsim.report.plots import study_figures


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


class _StudyBar:
    """The study's progress bar (transient, on a terminal): a ``progress(done, total)``."""

    def __init__(self, enabled: bool) -> None:
        self.progress = Progress(transient=True) if enabled else None
        self.task: Any = None

    def __call__(self, done: int, total: int) -> None:
        if self.progress is None:
            return
        if self.task is None:
            self.progress.start()
            self.task = self.progress.add_task("ARK study", total=total)
        self.progress.update(self.task, completed=done)
        if done >= total:  # the runs are done: the bar goes before anything is written
            self.stop()

    def stop(self) -> None:
        if self.progress is not None and self.task is not None:
            self.progress.stop()
        self.progress = None


def _print_study(frame: pd.DataFrame, seeds: list[int], sc: Scenario) -> None:
    """The side-by-side table of the study (rich)."""
    table = Table(
        title=f"ARK vs ECMP: {sc.workload.requests} requests at QPS {sc.workload.qps:g}, "  # type: ignore[union-attr]
        f"seeds {', '.join(map(str, seeds))} (mean over seeds)"
    )
    table.add_column("metric")
    for name in frame.columns:
        table.add_column("ARK vs ECMP" if name == "change_pct" else name.upper(), justify="right")
    for key, row in frame.iterrows():
        label = LABELS.get(str(key), str(key).replace("_", " "))
        cells = []
        for col, value in row.items():
            if not np.isfinite(value):
                cells.append("-")
            elif col == "change_pct":
                cells.append(f"{value:+.1f} %")
            elif str(key).startswith(("peak", "ark_")):
                cells.append(f"{value:.1f}")
            else:
                cells.append(f"{value:.3f}")
        table.add_row(label, *cells)
    Console().print(table)


def default_study(
    out: Path,
    sets: list[str],
    seed: int | None,
    quiet: bool,
    seeds: int | Sequence[int] | None = None,
) -> None:
    """The default study as ``fabricsim run`` runs it: runs, tables, figures and the table.

    Parameters
    ----------
    out : pathlib.Path
        Output directory: what :func:`~fabricsim.experiments.study.run_study` writes, and
        ``fct_ttft.png`` (CDFs) and ``spine_heatmap.png`` (first seed, as Fig. 3).
    sets : list of str
        ``KEY=VALUE`` overrides of the scenario (not ``lb.policy``).
    seed : int or None
        First seed (default 1).
    quiet : bool
        Print nothing.
    seeds : int or sequence of int, optional
        How many consecutive seeds (default 3), or the seeds themselves.
    """
    bar = _StudyBar(not quiet and sys.stdout.isatty())
    try:
        study = run_study(out, sets, seed, seeds, figures=study_figures, progress=bar)
    finally:
        bar.stop()
    if not quiet:
        _print_study(study.table, study.seeds, study.scenario)
        print(f"wrote {out}/ (runs, comparison.csv, study.json, plots)")


@app.command()
def run(
    scenario: Annotated[
        str | None, typer.Argument(help="YAML path, built-in name or htsim .cm matrix")
    ] = None,
    engine: EngineOpt = None,
    set_: SetOpt = None,
    preset: PresetOpt = None,
    seed: Annotated[int | None, typer.Option("--seed", help="override the scenario seed")] = None,
    out: Annotated[str | None, typer.Option("--out", help="output directory")] = None,
    quiet: QuietOpt = False,
) -> None:
    """Run a scenario (no SCENARIO: the default ARK KV-cache study, ECMP vs ARK)."""
    out_dir = out_path(out, "--out")
    engine = engine_option(engine)
    if scenario is None:
        if preset is not None:
            raise ConfigError("--preset: name a scenario (the default study has its own fabric)")
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
    sc = scenario_from_options(scenario, with_preset(set_, preset), seed)
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
