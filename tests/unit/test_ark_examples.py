"""Every ARK / KV-cache example in ``examples/`` runs (small settings)."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

import fabricsim

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _run_script(name: str, argv: list[str], monkeypatch) -> None:
    monkeypatch.setattr(sys, "argv", [name, *argv])
    runpy.run_path(str(EXAMPLES / name), run_name="__main__")


def test_controller_example(monkeypatch, capsys):
    _run_script("ark_controller.py", [], monkeypatch)
    out = capsys.readouterr().out
    assert "flow 1 lost the race: re-routed to spine 1" in out
    assert "races=1  tables agree: True" in out
    assert "host 2 sees reserved spines [1]" in out


def test_study_example(monkeypatch, tmp_path, capsys):
    argv = ["--requests", "40", "--seeds", "1", "--out", str(tmp_path), "--quiet"]
    _run_script("ark_study.py", argv, monkeypatch)
    assert (tmp_path / "spine_heatmap_all.png").exists() and (tmp_path / "ark-seed1").is_dir()


def test_sweep_example(monkeypatch, tmp_path, capsys):
    argv = ["--qps", "2", "20", "--workers", "1", "--requests", "40", "--out", str(tmp_path)]
    _run_script("ark_sweep.py", argv, monkeypatch)
    assert (tmp_path / "sweep.png").exists()
    assert "fct_mean_s_change_pct" in capsys.readouterr().out


@pytest.mark.parametrize("policy", ["ecmp", "ark"])
def test_fat_tree_yaml(policy):
    sc = fabricsim.load_scenario(EXAMPLES / "ark_fat_tree.yaml").with_overrides(
        {"lb.policy": policy, "workload.requests": 60}
    )
    res = fabricsim.run(sc)
    assert res.summary["flows_completed"] == 60
    assert set(res.summary["spine_peak_flows"]) == {f"core{i}" for i in range(4)}
    assert all(p.count(">") == 4 for p in res.flows["path"])  # edge>agg>core>agg>edge


def test_small_packet_yaml_loads_and_runs_on_the_flow_engine():
    sc = fabricsim.load_scenario(EXAMPLES / "ark_small_packet.yaml")
    assert sc.engine.kind == "packet" and sc.lb.policy == "ark"
    res = fabricsim.run(sc, engine="flow")
    assert res.summary["flows_completed"] == 40
    assert res.flows["size_bytes"].max() < 4_000_000
