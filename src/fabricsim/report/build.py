"""Assemble and write the report of a run directory or a sweep directory."""

from __future__ import annotations

import json
from pathlib import Path

from fabricsim.errors import ConfigError
from fabricsim.metrics.results import atomic_write as _write
from fabricsim.report.html import Section, render_page

FIGURES = "figures"
REPORT = "report.html"


def _kind(directory: Path) -> str:
    if (directory / "manifest.json").exists():
        return "sweep"
    if (directory / "summary.json").exists():
        return "run"
    raise ConfigError(
        f"report {directory}: neither a run output directory (summary.json) nor a sweep "
        "directory (manifest.json)"
    )


def build_report(directory: str | Path) -> tuple[str, list[Section]]:
    """The report's HTML text and its sections (nothing written)."""
    d = Path(directory)
    if not d.is_dir():
        raise ConfigError(f"report {d}: no such directory")
    if _kind(d) == "sweep":
        from fabricsim.report.sweep_page import sweep_sections

        manifest = json.loads((d / "manifest.json").read_text())
        sections = sweep_sections(d)
        title = f"fabricsim sweep: {manifest['spec']['scenario']}"
    else:
        from fabricsim.report.run_page import run_sections

        summary = json.loads((d / "summary.json").read_text())
        sections = run_sections(d)
        title = f"fabricsim run: {summary.get('scenario', d.name)} ({summary.get('engine', '?')} engine)"
    return render_page(title, str(d.resolve()), sections), sections


def write_report(directory: str | Path) -> Path:
    """Write ``DIR/report.html`` and ``DIR/figures/*.png``; return the HTML path.

    Examples
    --------
    >>> import tempfile, fabricsim
    >>> d = fabricsim.run("ecmp-collision").save(tempfile.mkdtemp())
    >>> write_report(d).name
    'report.html'
    """
    d = Path(directory)
    text, sections = build_report(d)
    figdir = d / FIGURES
    pngs = [(name, png) for sec in sections for name, png in sec.figures]
    if pngs:
        figdir.mkdir(exist_ok=True)
    for name, png in pngs:
        _write(figdir / f"{name}.png", png)
    path = d / REPORT
    _write(path, text.encode("utf-8"))
    return path
