"""The ``report`` verb: DIR/report.html for a run, a study or a sweep (fabricsim.report).

fabricsim.report imports matplotlib only when it draws (report/figures.py), and this module
imports fabricsim.report when the verb runs: the other verbs do without its pages.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from fabricsim._compat import LazyModule
from fabricsim.cli.app import QuietOpt, app

if TYPE_CHECKING:
    from fabricsim import report as reports
else:  # perf: imported when the verb runs, not at every start of `fabricsim`
    reports = LazyModule("fabricsim.report")


@app.command()
def report(
    directory: Annotated[Path, typer.Argument(help="a run, study or sweep output directory")],
    png: Annotated[
        bool,
        typer.Option("--png", help="figures as base64 PNG images instead of inline SVG (default)"),
    ] = False,
    quiet: QuietOpt = False,
) -> None:
    """Write DIR/report.html: a self-contained HTML report of a run, a study or a sweep.

    Figures are inline SVG by default (text stays text, the page scales), or base64 PNG
    with --png; the same figures go to DIR/figures/. No scripts, no external files.
    """
    path = reports.write_report(directory, "png" if png else "svg")
    if not quiet:
        typer.echo(f"wrote {path}")
