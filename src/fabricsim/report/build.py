"""Assemble and write the report of a run directory or a sweep directory.

Everything is read and checked before anything is written: a missing, corrupt or foreign
input file is a :class:`~fabricsim.errors.ConfigError` naming it, and the directory is left
as it was.  The report is then written whole: the figures into a temporary directory renamed
over ``figures/`` (so no figure of an earlier report survives), then ``report.html`` via a
temporary file and :func:`os.replace`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

from fabricsim.errors import ConfigError
from fabricsim.metrics.results import atomic_write as _write
from fabricsim.report.figures import FIGURE_FORMAT
from fabricsim.report.html import Section, render_page
from fabricsim.report.run_page import read_summary, run_sections
from fabricsim.report.study_page import is_study, read_study, study_sections
from fabricsim.report.sweep_page import read_manifest, sweep_sections

FIGURES = "figures"
REPORT = "report.html"


def _kind(directory: Path) -> str:
    if (directory / "manifest.json").exists():
        return "sweep"
    if is_study(directory):
        return "study"
    if (directory / "summary.json").exists():
        return "run"
    raise ConfigError(
        f"report {directory}: not a fabricsim run, study or sweep output directory "
        "(it has no summary.json, study.json or manifest.json)"
    )


def _check_dir(d: Path) -> None:
    if not d.exists():
        raise ConfigError(f"report {d}: no such directory")
    if not d.is_dir():
        raise ConfigError(f"report {d}: not a directory (give a run or sweep output directory)")


def build_report(directory: str | Path) -> tuple[str, list[Section]]:
    """The report's HTML text and its sections (nothing written)."""
    d = Path(directory)
    _check_dir(d)
    kind = _kind(d)
    if kind == "study":
        record = read_study(d)
        sections = study_sections(d, record)
        title = f"fabricsim study: {record.get('scenario', d.name)} ({record.get('engine', '?')} engine)"
    elif kind == "sweep":
        manifest = read_manifest(d)
        sections = sweep_sections(d, manifest)
        title = f"fabricsim sweep: {manifest['spec']['scenario']}"
    else:
        summary = read_summary(d)
        sections = run_sections(d)
        title = f"fabricsim run: {summary.get('scenario', d.name)} ({summary.get('engine', '?')} engine)"
    return render_page(title, str(d.resolve()), sections), sections


def _write_figures(d: Path, pngs: list[tuple[str, bytes]]) -> None:
    """Replace ``d/figures`` whole by these figures ((file name, bytes); removed if none)."""
    figdir = d / FIGURES
    new = Path(tempfile.mkdtemp(prefix=f".{FIGURES}.new-{os.getpid()}-", dir=d)) if pngs else None
    old = d / f".{FIGURES}.old-{os.getpid()}"
    shutil.rmtree(old, ignore_errors=True)  # left by a killed report of the same pid
    try:
        for name, data in pngs:
            assert new is not None
            (new / name).write_bytes(data)
        if figdir.exists():
            os.rename(figdir, old)
        if new is not None:
            os.rename(new, figdir)
    except BaseException:
        if new is not None:
            shutil.rmtree(new, ignore_errors=True)
        if old.exists() and not figdir.exists():
            with contextlib.suppress(OSError):
                os.rename(old, figdir)
        raise
    shutil.rmtree(old, ignore_errors=True)


def write_report(directory: str | Path, fmt: str = "svg") -> Path:
    """Write ``DIR/report.html`` and ``DIR/figures/*.<fmt>``; return the HTML path.

    ``fmt``: ``svg`` (inline in the page) or ``png`` (embedded as data URIs).

    Examples
    --------
    >>> import tempfile, fabricsim
    >>> d = fabricsim.run("ecmp-collision").save(tempfile.mkdtemp())
    >>> write_report(d).name
    'report.html'
    """
    d = Path(directory)
    _check_dir(d)
    if not os.access(d, os.W_OK | os.X_OK):
        raise ConfigError(f"report {d}: directory is not writable (report.html goes there)")
    _kind(d)  # not a fabricsim output: say so first
    for name in (FIGURES, REPORT):
        path = d / name
        if path.exists() and path.is_dir() != (name == FIGURES):
            what = "a file" if name == FIGURES else "a directory"
            raise ConfigError(f"report {d}: {name} is {what}; the report writes it there")
    if fmt not in ("svg", "png"):
        raise ConfigError(f"report: figure format must be svg or png (got {fmt!r})")
    token = FIGURE_FORMAT.set(fmt)
    try:
        text, sections = build_report(d)
    finally:
        FIGURE_FORMAT.reset(token)
    pngs = [(name, png) for sec in sections for name, png in sec.figures]
    path = d / REPORT
    try:
        _write_figures(d, pngs)
        _write(path, text.encode("utf-8"))
    except OSError as exc:
        raise ConfigError(f"report {d}: cannot write the report ({exc.strerror or exc})") from None
    return path
