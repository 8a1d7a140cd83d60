"""The ``report`` verb: DIR/report.html for a run or a sweep (fabricsim.report)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from fabricsim.cli.app import QuietOpt, app


@app.command()
def report(
    directory: Annotated[Path, typer.Argument(help="a run or sweep output directory")],
    quiet: QuietOpt = False,
) -> None:
    """Write DIR/report.html: a self-contained HTML report of a run or a sweep."""
    # Lazy: fabricsim.report imports matplotlib, which would add ~0.4 s to every start-up
    # (``fabricsim --help``, ``--version``, each verb) for the one verb that draws.
    from fabricsim.report import write_report

    path = write_report(directory)
    if not quiet:
        typer.echo(f"wrote {path}")
