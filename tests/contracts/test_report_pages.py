"""Every report page builds for every built-in scenario on every engine that accepts it.

For each (built-in scenario, engine) the engine accepts, at tiny settings and with timelines
recorded: the study page (its figures drawn by the study), the run page of one of its runs (a
study's run directory holds what ``fabricsim run`` writes) and the sweep page are written, with no warning (a figure that failed would have been skipped with one) and with the
sections the data calls for.  A built-in scenario without a tiny setting here fails, naming it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from fabricsim.config.loader import builtin_names, load_scenario
from fabricsim.errors import ConfigError, EngineRefusal
from fabricsim.experiments.backend import IN_PROCESS
from fabricsim.experiments.engines import ENGINES, check_supported
from fabricsim.experiments.paired import run_paired
from fabricsim.experiments.plan import plan_sweep
from fabricsim.experiments.sweep import run_sweep
from fabricsim.report import write_report
from fabricsim.report.study_plots import paired_figures

# the smallest settings that still exercise each scenario's pages (a few flows, a small fabric)
TINY: dict[str, dict[str, Any]] = {
    "ark": {"workload.requests": 6, "workload.kv_bytes_per_token": 1024},
    "ark-packet": {"workload.requests": 6},
    "ecmp-collision": {"workload.size_bytes": 200_000},
    "incast": {"topology.k": 4, "workload.senders": 4, "workload.size_bytes": 100_000},
    "moe": {"topology.leaves": 2, "workload.tokens_per_gpu": 32},
    "permutation": {"topology.k": 4, "workload.size_bytes": 100_000},
    "spray-example": {"workload.size_bytes": 200_000},
}
# the key each study and sweep varies (the scenario's own question where it has one)
VARIED: dict[str, tuple[str, list[Any]]] = {
    "ark": ("lb.policy", ["ecmp", "ark"]),
    "moe": ("workload.scheduler", ["round_robin", "rate_based"]),
}
DEFAULT_VARIED = ("topology.link_delay_us", [1.0, 2.0])


def _settings(name: str, engine: str) -> dict[str, Any]:
    return {**TINY[name], "records.timelines": True, "engine.kind": engine}


def _cases() -> list[Any]:
    cases = []
    for name in builtin_names():
        for engine in ENGINES:
            if name not in TINY:  # fails in the test, naming the scenario
                cases.append(pytest.param(name, engine, id=f"{name}-{engine}"))
                continue
            try:
                check_supported(load_scenario(name).with_overrides(_settings(name, engine)), engine)
            except (EngineRefusal, ConfigError):
                continue  # the engine refuses the scenario: no page to build
            cases.append(pytest.param(name, engine, id=f"{name}-{engine}"))
    return cases


CASES = _cases()


def _sections(html: str) -> list[str]:
    return re.findall(r'<section id="([^"]+)"', html)


def _no_warnings(capsys: pytest.CaptureFixture[str]) -> None:
    err = capsys.readouterr().err
    assert "warning" not in err and "Traceback" not in err, err


def test_every_built_in_scenario_has_a_case():
    assert {c.values[0] for c in CASES} == set(builtin_names())
    missing = sorted(set(builtin_names()) - set(TINY))
    assert not missing, f"add a tiny setting to TINY for {missing}"


def _run_page(d: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The run page of one run directory (a study's run: the same files ``fabricsim run``
    writes)."""
    html = write_report(d).read_text()
    _no_warnings(capsys)
    sections = _sections(html)
    assert sections[0] == "summary" and sections[-1] == "config"
    assert {"fct-cdf", "fct-percentiles"} <= set(sections)
    if (d / "timeline_links.parquet").exists():
        assert "link-timelines" in sections
    for fig in (d / "figures").iterdir():
        assert fig.stat().st_size > 1000, fig.name


@pytest.mark.full
@pytest.mark.parametrize(("name", "engine"), CASES)
def test_run_study_and_sweep_pages(name: str, engine: str, tmp_path: Path, capsys) -> None:
    assert name in TINY, f"add a tiny setting to TINY for {name!r}"
    key, values = VARIED.get(name, DEFAULT_VARIED)
    sets = {k: v for k, v in _settings(name, engine).items() if k != "engine.kind"}
    study_dir = tmp_path / "study"
    run_paired(
        name, (key, values), seeds=1, sets=sets, engine=engine, out=study_dir,
        figures=lambda d, s: paired_figures(d, s, "svg"),
    )  # fmt: skip
    html = write_report(study_dir).read_text()
    _no_warnings(capsys)
    sections = _sections(html)
    assert sections[0] == "study" and "point-all" in sections and sections[-1] == "runs"
    assert (study_dir / "cdf_all.svg").is_file()
    assert 'aria-label="CDFs at all runs"' in html
    runs = sorted(p for p in study_dir.iterdir() if (p / "summary.json").is_file())
    assert len(runs) == 2
    _run_page(runs[0], capsys)

    plan = plan_sweep(
        name, grid=[f"{key}={','.join(map(str, values))}"], engine=engine,
        sets=[f"{k}={v}" for k, v in sets.items()],
    )  # fmt: skip
    sweep_dir = tmp_path / "sweep"
    outcome = run_sweep(plan, sweep_dir, workers=IN_PROCESS)
    assert not outcome.failed, outcome.failed
    html = write_report(sweep_dir).read_text()
    _no_warnings(capsys)
    sections = _sections(html)
    assert sections[:2] == ["summary", "sweep-table"] and "fct-cdf" in sections
