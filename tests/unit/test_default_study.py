"""The default study's choices live in the experiments layer; the CLI only parses and prints."""

from __future__ import annotations

import math

import pytest

from fabricsim.config.loader import load_scenario
from fabricsim.errors import ConfigError
from fabricsim.experiments import default_study as defaults


def test_the_study_refuses_another_engine_or_workload_in_one_line() -> None:
    defaults.check_engine(None)
    defaults.check_engine("flow")
    with pytest.raises(ConfigError) as exc:
        defaults.check_engine("packet")
    assert str(exc.value) == (
        "--engine packet: the default study (ark: ~4e8 packets) runs on the flow engine; "
        "name a scenario to use --engine packet"
    )
    defaults.check_scenario(load_scenario(defaults.SCENARIO))
    with pytest.raises(ConfigError) as exc:
        defaults.check_scenario(load_scenario("permutation"))
    assert str(exc.value) == (
        "workload.kind=permutation: the default study compares KV-cache transfers (kv_cache); "
        "name a scenario to run another workload"
    )


def test_workers_default_to_one_per_cpu_up_to_four() -> None:
    assert defaults.workers_for(3) == 3
    assert 1 <= defaults.workers_for(None) <= 4


def test_the_trend_is_computed_here(tmp_path) -> None:
    study = defaults.run_default_study(
        tmp_path / "s", ["workload.requests=20", "workload.qps=10"], seed=2, seeds=1, workers=1
    )
    (row,) = defaults.trend_rows(study)
    assert row.qps == 10 and math.isfinite(row.load) and row.load > 0
    assert set(row.cells) == set(defaults.TREND_METRICS)
    base, other = row.cells["fct_mean_s"]
    assert base["value"] == "ecmp" and other["value"] == "ark" and base["mean"] > 0
    assert row.flows == 20 and 0 <= row.fallbacks <= row.flows


def test_the_cli_prints_the_study_refusals(tmp_path, capsys) -> None:
    from fabricsim.cli import main

    assert main(["run", "--engine", "packet", "--out", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert "--engine packet: the default study (ark: ~4e8 packets) runs on the flow" in err
    assert main(["run", "--set", "workload.kind=incast", "--out", str(tmp_path / "b")]) == 2
    assert "workload.kind=incast: the default study compares KV-cache" in capsys.readouterr().err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
