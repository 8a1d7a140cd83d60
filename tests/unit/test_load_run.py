"""``fabricsim.load_run(DIR)``: a saved run read back as the Result ``run`` returned, from
Parquet or CSV tables (``--format csv``); anything that is not a run's output is one clear
error (issue 37, item 1)."""

import json

import numpy as np
import pandas as pd
import pytest

import fabricsim
from fabricsim.cli import main
from fabricsim.errors import ConfigError

PACKET = {
    "workload.size_bytes": 60_000,
    "nic.packet_spraying_type": "reps",
    "records.port_stats": True,
    "records.uet_transport_stats": True,
    "records.uet_monitor": True,
}


def _same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    assert list(a.columns) == list(b.columns)
    for col in a.columns:
        x, y = a[col].to_numpy(), b[col].to_numpy()
        if x.dtype.kind in "fc":
            assert np.array_equal(x, y, equal_nan=True), col  # exact, not approximately
        else:
            assert [*map(str, x)] == [*map(str, y)], col


@pytest.fixture(scope="module")
def packet_run():
    sc = fabricsim.load_scenario("ecmp-collision").with_overrides(PACKET)
    return fabricsim.run(sc, engine="packet")


@pytest.mark.parametrize("table_format", ["parquet", "csv"])
def test_run_save_load_run_gives_the_same_result(packet_run, tmp_path, table_format):
    res = packet_run
    back = fabricsim.load_run(res.save(tmp_path / "run", table_format=table_format))
    assert isinstance(back, fabricsim.Result)
    assert back.summary == res.summary and back.timing == res.timing
    assert back.scenario.to_dict() == res.scenario.to_dict()
    _same(back.flows, res.flows)
    assert set(back.tables) == set(res.tables) >= {"port_stats", "uet_monitor"}
    for name, df in res.tables.items():
        _same(back.tables[name], df.reset_index(drop=True))
    assert back.json_records == json.loads(json.dumps(res.json_records))
    suffix = ".csv" if table_format == "csv" else ".parquet"
    assert {p.suffix for p in (tmp_path / "run").iterdir() if p.stem == "flows"} == {suffix}


def test_cli_format_csv_writes_no_parquet(tmp_path, capsys):
    out = tmp_path / "r"
    assert main(["run", "ecmp-collision", "--out", str(out), "--format", "csv", "--quiet"]) == 0
    assert not list(out.glob("*.parquet")) and (out / "flows.csv").is_file()
    flows = pd.read_csv(out / "flows.csv")
    assert list(flows.columns[:4]) == ["flow_id", "src", "dst", "size_bytes"]
    res = fabricsim.load_run(out)
    assert res.summary == json.loads((out / "summary.json").read_text())
    assert main(["run", "ecmp-collision", "--out", str(out), "--format", "xlsx"]) == 2
    assert "--format: must be one of parquet, csv" in capsys.readouterr().err


def test_sweep_format_csv(tmp_path):
    out = tmp_path / "s"
    argv = ["sweep", "ecmp-collision", "--grid", "topology.spines=4,8", "--out", str(out),
            "--workers", "1", "--format", "csv", "--quiet"]  # fmt: skip
    assert main(argv) == 0
    table = pd.read_csv(out / "sweep.csv")
    assert list(table["topology.spines"]) == [4, 8]
    _same(table[["fct_mean_s"]], pd.read_parquet(out / "sweep.parquet")[["fct_mean_s"]])
    point = fabricsim.load_run(out / "points" / "p0001")
    assert (out / "points" / "p0001" / "flows.csv").is_file()
    assert point.summary["fct_mean_s"] == table["fct_mean_s"][1]


def test_load_run_refuses_what_is_not_a_run(tmp_path):
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("hello")
    cases = {
        tmp_path / "missing": "no such directory",
        foreign: "not a fabricsim run output",
        foreign / "notes.txt": "not a directory",
    }
    sweep = tmp_path / "sweep"
    fabricsim.sweep("ecmp-collision", {"topology.spines": [4]}, out=sweep)
    cases[sweep] = "a fabricsim sweep, not one run"
    for path, needle in cases.items():
        with pytest.raises(ConfigError, match=needle) as err:
            fabricsim.load_run(path)
        assert str(path) in str(err.value) and "\n" not in str(err.value)
    broken = fabricsim.run(fabricsim.load_scenario("ecmp-collision")).save(tmp_path / "b")
    (broken / "flows.parquet").write_bytes(b"not parquet")
    with pytest.raises(ConfigError, match=r"flows.parquet: not a readable table"):
        fabricsim.load_run(broken)


def test_report_reads_a_run_saved_as_csv(tmp_path):
    """``fabricsim report`` of a ``run --format csv`` directory: the tables it reads are the CSV
    beside each missing Parquet file (it refused the run as 'flows.parquet: missing')."""
    from fabricsim.cli import main

    out = tmp_path / "r"
    assert main(["run", "ecmp-collision", "--format", "csv", "--out", str(out), "--quiet"]) == 0
    assert not (out / "flows.parquet").exists() and (out / "flows.csv").exists()
    assert main(["report", str(out)]) == 0
    assert (out / "report.html").stat().st_size > 0
