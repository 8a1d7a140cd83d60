"""A figure or report step that fails never discards finished runs: the runs are written, the
figure is skipped with one warning line naming it (issue 37, item 1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import fabricsim
from fabricsim.cli import main
from fabricsim.report import figures, write_report
from fabricsim.report.guard import guarded

# the MoE scenario at its smallest: 2 leaves x 8 hosts, 32 tokens per GPU
SMALL_MOE = ["--set", "topology.leaves=2", "--set", "workload.tokens_per_gpu=32"]


def _study(tmp_path: Path, *extra: str) -> tuple[int, Path]:
    out = tmp_path / "study"
    args = ["study", "moe", "--vs", "workload.scheduler=round_robin,rate_based", "--seeds", "1"]
    code = main([*args, *SMALL_MOE, *extra, "--out", str(out), "--quiet"])
    return code, out


@pytest.mark.full
@pytest.mark.parametrize("engine", [["--engine", "flow"], ["--set", "engine.kind=flow"]])
def test_flow_engine_moe_study_draws_its_figures(tmp_path, capsys, engine):
    """The flow engine's MoE timeline has no ``hot_utilization``: the figure draws what it has
    (before: ``internal error: KeyError: 'hot_utilization'``, exit 1, nothing written)."""
    code, out = _study(tmp_path, *engine)
    assert code == 0, capsys.readouterr().err
    assert "warning" not in capsys.readouterr().err
    for name in ("study.json", "cdf_all.png", "moe_queue_all.png", "moe_utilization_all.png"):
        assert (out / name).is_file(), name
    assert write_report(out).is_file()


def test_flow_engine_moe_run_report(tmp_path):
    sc = fabricsim.load_scenario("moe").with_overrides(
        {"topology.leaves": 2, "workload.tokens_per_gpu": 32, "engine.kind": "flow"}
    )
    d = fabricsim.run(sc).save(tmp_path / "r")
    html = write_report(d).read_text()
    assert '<section id="moe-incast">' in html
    assert "all receivers" in (d / "figures" / "moe-utilization.svg").read_text()


def _broken(*_args, **_kwargs):
    raise RuntimeError("drawing\nfailed")


def test_a_failing_figure_keeps_the_runs_and_warns_once(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(figures, "moe_queue_png", _broken)
    code, out = _study(tmp_path, "--engine", "flow")
    err = capsys.readouterr().err
    assert code == 0, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines == ["warning: figure moe_queue_all skipped (RuntimeError: drawing failed)"]
    record = json.loads((out / "study.json").read_text())
    assert len(record["runs"]) == 2 and all((out / rid).is_dir() for rid in record["runs"])
    assert not (out / "moe_queue_all.png").exists()
    assert (out / "moe_utilization_all.png").is_file() and (out / "cdf_all.png").is_file()


def test_a_failing_report_section_is_left_out_with_one_warning(tmp_path, capsys, monkeypatch):
    sc = fabricsim.load_scenario("ecmp-collision").with_overrides({"records.timelines": True})
    d = fabricsim.run(sc).save(tmp_path / "r")
    monkeypatch.setattr(figures, "link_timelines_png", _broken)
    html = write_report(d).read_text()
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["warning: section link-timelines skipped (RuntimeError: drawing failed)"]
    assert '<section id="link-timelines">' not in html
    assert '<section id="fct-cdf">' in html and '<section id="diagnostics">' in html


def test_bad_input_is_not_swallowed():
    from fabricsim.errors import ConfigError

    def bad() -> None:
        raise ConfigError("x: bad")

    with pytest.raises(ConfigError):
        guarded("figure x", bad)
    assert guarded("figure y", lambda: 1 / 0) is None


@pytest.mark.full
def test_figure_names_keep_the_values_decimals(tmp_path, capsys):
    """``cdf_zipf_s0.25.png`` beside ``moe_queue_zipf_s0.25.png`` (before: ``cdf_zipf_s0.png``,
    and the grid values 0.25 and 0.5 both wrote ``cdf_zipf_s0.png``); the page shows each."""
    code, out = _study(tmp_path, "--engine", "flow", "--grid", "workload.zipf_s=0.25,0.5")
    assert code == 0, capsys.readouterr().err
    names = sorted(p.name for p in out.glob("*.png"))
    for label in ("zipf_s0.25", "zipf_s0.5"):
        for stem in ("cdf", "moe_queue", "moe_utilization"):
            assert f"{stem}_{label}.png" in names, (stem, label, names)
    assert "cdf_zipf_s0.png" not in names
    html = write_report(out).read_text()
    for label in ("zipf_s0.25", "zipf_s0.5"):
        assert (out / "figures" / f"cdf_{label}.png").is_file()
        assert f'<section id="point-{label}">' in html
