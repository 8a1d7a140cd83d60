"""Headless Chromium renders every report page of the default study and of the MoE study with
no console error, no uncaught exception and no broken figure (issue 37, item 7).

Every page: the study page and the run page of each of the study's runs, at small settings
(the default study's seven QPS points at 10 requests and one seed; MoE on 2 leaves, 32 tokens
per GPU, on the packet engine and on the flow engine).  Skipped without a browser, except on CI.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fabricsim.cli import main
from fabricsim.experiments.study import ark_qps_study
from fabricsim.report import write_report
from fabricsim.report.browser import check_pages
from fabricsim.report.study_plots import ark_figures


def _pages(study_dir: Path) -> list[Path]:
    """The study page and every run page, written."""
    pages = [write_report(study_dir)]
    for run_dir in sorted(p for p in study_dir.iterdir() if (p / "summary.json").is_file()):
        pages.append(write_report(run_dir))
    return pages


def _check(pages: list[Path], exe: str) -> None:
    for page, check in zip(pages, check_pages(pages, exe), strict=True):
        html = page.read_text()
        assert check.errors == [], (page, check.errors)
        assert check.section_ids == re.findall(r'<section id="([^"]+)"', html), page
        assert check.images and check.broken_images == 0, (page, check.images)
        assert check.title.startswith("fabricsim")


@pytest.mark.full
def test_default_study_pages_render_cleanly(tmp_path: Path, capsys, chromium: str) -> None:
    exe = chromium
    out = tmp_path / "default"
    ark_qps_study(out, ["workload.requests=10"], seeds=1, figures=ark_figures)
    pages = _pages(out)
    assert len(pages) == 1 + 7 * 2  # the study page, 7 QPS points x (ECMP, ARK)
    assert "warning" not in capsys.readouterr().err
    _check(pages, exe)


@pytest.mark.full
@pytest.mark.parametrize("engine", ["packet", "flow"])
def test_moe_study_pages_render_cleanly(engine: str, tmp_path: Path, capsys, chromium: str) -> None:
    exe = chromium
    out = tmp_path / "moe"
    code = main([
        "study", "moe", "--vs", "workload.scheduler=round_robin,rate_based", "--seeds", "1",
        "--engine", engine, "--set", "topology.leaves=2", "--set", "workload.tokens_per_gpu=32",
        "--svg", "--out", str(out), "--quiet",
    ])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    pages = _pages(out)
    assert "warning" not in capsys.readouterr().err
    html = pages[0].read_text()
    assert "hot receiver queue" in html and "receiver utilization" in html
    _check(pages, exe)
