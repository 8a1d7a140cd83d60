"""The ARK study: ``fabricsim run`` with no scenario, the QPS sweep, plots and helpers."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from fabricsim.analysis.links import spine_grid
from fabricsim.cli import main
from fabricsim.cli.run import default_study
from fabricsim.config import load_scenario
from fabricsim.errors import ConfigError
from fabricsim.experiments.study import (
    comparison,
    offered_load,
    paired_runs,
    qps_sweep,
    sweep_table,
)

PNG = b"\x89PNG\r\n\x1a\n"


QPS = (1, 5, 10, 15, 20, 25, 30)


@pytest.mark.full
def test_default_study_runs_the_qps_grid_paired_with_figures(tmp_path, capsys):
    study = default_study(tmp_path, ["workload.requests=40"], seed=None, quiet=True, seeds=2)
    assert capsys.readouterr().out == ""
    dirs = sorted(p.name for p in tmp_path.iterdir() if p.is_dir())
    assert dirs == sorted(
        f"qps{q}-{p}-seed{s}" for q in QPS for p in ("ecmp", "ark") for s in (1, 2)
    )
    assert (tmp_path / "qps25-ark-seed1" / "timeline_spine_flows.parquet").exists()
    for png in ("fct_vs_qps.png", "ttft_vs_qps.png", "spine_heatmap_qps25.png", "cdf_qps25.png"):
        assert (tmp_path / png).read_bytes()[:8] == PNG
    record = json.loads((tmp_path / "study.json").read_text())
    assert record["seeds"] == [1, 2] and record["grid"] == {"workload.qps": list(QPS)}
    assert record["vs"]["values"] == ["ecmp", "ark"]
    table = pd.read_csv(tmp_path / "study.csv")
    row = table.query("`workload.qps` == 25 and metric == 'fct_mean_s' and value == 'ark'")
    ark = [
        json.loads((tmp_path / f"qps25-ark-seed{s}" / "summary.json").read_text()) for s in (1, 2)
    ]
    assert float(row["mean"].iloc[0]) == pytest.approx(np.mean([a["fct_mean_s"] for a in ark]))
    assert {"fct_mean_s", "fct_p95_s", "ttft_mean_s", "ttft_p95_s"} <= set(table["metric"])
    assert study.grid == {"workload.qps": list(QPS)}


@pytest.mark.full
def test_default_study_prints_the_trend_table(tmp_path, capsys):
    default_study(tmp_path, ["workload.requests=30"], seed=4, quiet=False, seeds=1)
    out = capsys.readouterr().out
    for needle in ("mean FCT", "P95 FCT", "mean TTFT", "P95 TTFT", "QPS", "ECMP → ARK"):
        assert needle in out
    assert "fabric:   leaf-spine, 16 hosts" in out
    # the header names the QPS the study sweeps, not the base scenario's QPS 25 (issue 37)
    assert "at QPS {1, 5, 10, 15, 20, 25, 30}," in out and "at QPS 25," not in out
    assert "compared: lb.policy = ecmp vs ark (baseline ecmp)" in out
    assert "mean FCT ★" in out and "mean TTFT ★" in out and "P95 FCT ★" not in out
    assert (tmp_path / "qps25-ark-seed4").is_dir()


@pytest.mark.full
def test_a_set_qps_runs_that_rate_alone(tmp_path):
    default_study(tmp_path, ["workload.requests=20", "workload.qps=10"], None, True, seeds=1)
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["ark-seed1", "ecmp-seed1"]
    assert (tmp_path / "spine_heatmap_all.png").exists()


@pytest.mark.full
def test_cli_run_without_scenario_runs_the_study(tmp_path, capsys):
    code = main([
        "run", "--set", "workload.requests=25", "--set", "workload.qps=25", "--seed", "7",
        "--out", str(tmp_path),
    ])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == sorted(
        f"{pol}-seed{s}" for pol in ("ark", "ecmp") for s in range(7, 15)
    )  # the default study's 8 seeds
    assert "mean TTFT" in captured.out


@pytest.mark.full
def test_cli_study_quiet_prints_nothing(tmp_path, capsys):
    argv = ["run", "--set", "workload.requests=20", "--set", "workload.qps=5", "--quiet"]
    assert main([*argv, "--out", str(tmp_path)]) == 0
    assert capsys.readouterr().out == ""


def test_study_refuses_a_policy_override(tmp_path, capsys):
    with pytest.raises(ConfigError, match="lb.policy"):
        default_study(tmp_path, ["lb.policy=ark"], seed=None, quiet=True)
    assert main(["run", "--set", "lb.policy=ecmp", "--out", str(tmp_path)]) == 2
    assert "lb.policy" in capsys.readouterr().err


def test_paired_runs_share_the_workload():
    runs = paired_runs(load_scenario("ark").with_overrides({"workload.requests": 40}), [3])
    e, a = runs[("ecmp", 3)].flows, runs[("ark", 3)].flows
    for col in ("src", "dst", "size_bytes", "start_s", "prompt_tokens", "prefill_s"):
        np.testing.assert_array_equal(e[col], a[col])
    table = comparison(runs)
    assert list(table.columns) == ["ecmp", "ark", "change_pct"]
    assert table.loc["fct_mean_s", "change_pct"] == pytest.approx(
        100 * (a["fct_s"].mean() / e["fct_s"].mean() - 1)
    )


def test_qps_sweep_rows_and_table():
    base = load_scenario("ark").with_overrides({"workload.requests": 40})
    sweep = qps_sweep([1, 25], seeds=[1, 2], base=base)
    assert len(sweep) == 2 * 2 * 2
    assert set(sweep["policy"]) == {"ecmp", "ark"}
    assert (sweep.loc[sweep["policy"] == "ecmp", "ark_fallbacks"] == 0).all()
    table = sweep_table(sweep)
    assert list(table["qps"]) == [1.0, 25.0]
    assert table["rho"].tolist() == pytest.approx([0.0349, 0.872], abs=1e-3)
    row = table.iloc[1]
    assert row["fct_mean_s_change_pct"] == pytest.approx(
        100 * (row["fct_mean_s_ark"] / row["fct_mean_s_ecmp"] - 1)
    )


def test_qps_sweep_in_worker_processes_matches_serial():
    base = load_scenario("ark").with_overrides({"workload.requests": 30})
    serial = qps_sweep([5, 20], base=base)
    parallel = qps_sweep([5, 20], base=base, workers=2)
    pd.testing.assert_frame_equal(serial, parallel)


def test_offered_load():
    sc = load_scenario("ark")
    assert offered_load(sc.with_overrides({"workload.qps": 30})) == pytest.approx(1.04615, abs=1e-4)
    assert offered_load(sc) == pytest.approx(0.87179, abs=1e-4)


def test_spine_grid_keeps_peaks_and_carries_values():
    timeline = pd.DataFrame(
        {
            "spine": ["spine0", "spine1", "spine0", "spine0", "spine1"],
            "time_s": [0.0, 0.0, 0.05, 0.06, 0.25],
            "active_flows": [1, 2, 5, 0, 3],
        }
    )
    spines, grid = spine_grid(timeline, bin_s=0.1, end_s=0.3)
    assert spines == ["spine0", "spine1"]
    np.testing.assert_array_equal(grid, [[5, 0, 0], [2, 2, 3]])


@pytest.mark.full
def test_study_replaces_a_previous_output_whole_and_refuses_a_foreign_dir(tmp_path, capsys):
    out = tmp_path / "study"
    default_study(out, ["workload.requests=20", "workload.qps=5"], None, True, seeds=2)
    default_study(out, ["workload.requests=20", "workload.qps=5"], seed=5, quiet=True, seeds=1)
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["ark-seed5", "ecmp-seed5"]
    assert (out / ".fabricsim").exists() and [p.name for p in tmp_path.iterdir()] == ["study"]
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "a.txt").write_text("mine")
    with pytest.raises(ConfigError, match="not a fabricsim output"):
        default_study(junk, ["workload.requests=20"], seed=None, quiet=True, seeds=1)
    assert [p.name for p in junk.iterdir()] == ["a.txt"]


def test_a_bad_seed_creates_no_study_directory(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--seed", "-4", "--quiet"]) == 2
    assert "seed" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ConfigError, match="seed"):
        default_study(tmp_path / "s", [], seed=-4, quiet=True, seeds=1)
    with pytest.raises(ConfigError, match="at most"):
        default_study(tmp_path / "s", [], seed=None, quiet=True, seeds=10**9)
    assert list(tmp_path.iterdir()) == []


def test_the_study_plans_and_writes_data_only(tmp_path):
    from fabricsim.experiments.plan import plan_qps, plan_study
    from fabricsim.experiments.study import run_study

    base = load_scenario("ark").with_overrides({"workload.requests": 20})
    pairs = plan_study(base, ("lb.policy", ["ecmp", "ark"]), {}, [3, 4], "flow")
    assert [s.id for s in pairs] == ["ecmp-seed3", "ark-seed3", "ecmp-seed4", "ark-seed4"]
    qps = plan_qps(base, [5, 10], [1, 2], ("ecmp", "ark"))
    assert [(s.params["workload.qps"], s.seed, s.tag) for s in qps[:3]] == [
        (5.0, 1, "ecmp"), (5.0, 1, "ark"), (5.0, 2, "ecmp"),
    ]  # fmt: skip
    assert qps[-1].scenario["workload"]["qps"] == 10.0 and qps[-1].scenario["lb"]["policy"] == "ark"
    seen = []
    study = run_study(
        tmp_path / "s", ["workload.requests=20"], seeds=1, progress=lambda *a: seen.append(a)
    )
    assert seen == [(0, 2), (1, 2), (2, 2)] and study.seeds == [1]
    assert not list((tmp_path / "s").glob("*.png")) and (tmp_path / "s" / "study.json").exists()
