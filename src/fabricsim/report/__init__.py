"""The HTML report of a run, a study or a sweep directory (``fabricsim report DIR``).

:func:`write_report` writes ``DIR/report.html`` — one self-contained page (figures inline as
SVG by default, or as base64 PNG with ``fmt="png"`` / ``--png``; no scripts, no external
files) — and the same figures as files in ``DIR/figures/``.  Each section is a
``<section id="...">`` with a stable id (see :data:`SECTION_IDS`) and appears only when the
run has its data.
"""

from __future__ import annotations

from fabricsim.report.build import build_report, write_report
from fabricsim.report.run_page import SECTION_IDS

__all__ = ["SECTION_IDS", "build_report", "write_report"]
