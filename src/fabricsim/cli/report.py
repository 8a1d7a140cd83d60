"""The ``report`` verb: DIR/report.html for a run, a study or a sweep (fabricsim.report).

fabricsim.report imports matplotlib only when it draws (report/figures.py), so importing it
here costs every start-up (``fabricsim --help``, ``--version``, each verb) next to nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from fabricsim.cli.app import QuietOpt, app
from fabricsim.report import write_report


@app.command()
def report(
    directory: Annotated[Path, typer.Argument(help="a run, study or sweep output directory")],
    png: Annotated[
        bool, typer.Option("--png", help="figures as PNG instead of inline SVG")
    ] = False,
    quiet: QuietOpt = False,
) -> None:
    """Write DIR/report.html: a self-contained HTML report of a run, a study or a sweep."""
    path = write_report(directory, "png" if png else "svg")
    if not quiet:
        typer.echo(f"wrote {path}")
