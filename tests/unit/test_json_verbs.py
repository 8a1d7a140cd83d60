"""``compare`` and ``sweep`` take ``--json`` like ``run``, ``study`` and ``keys`` (issue 37)."""

import json

import pandas as pd

from fabricsim.cli import main


def test_compare_json_is_the_table(tmp_path, capsys):
    out = tmp_path / "c"
    code = main(["compare", "ecmp-collision", "--engine", "flow", "--methods", "ecmp,ideal_spray",
                 "--out", str(out), "--json"])  # fmt: skip
    text = capsys.readouterr().out
    assert code == 0
    data = json.loads(text)  # nothing but the JSON on stdout
    table = pd.read_csv(out / "compare.csv")
    assert (
        [m["method"] for m in data["methods"]] == list(table["method"]) == ["ecmp", "ideal_spray"]
    )
    for row, (_, want) in zip(data["methods"], table.iterrows(), strict=True):
        assert row["completed"] == want["completed"] == 8
        assert abs(row["fct_mean_us"] - want["fct_mean_us"]) <= 1e-5 * want["fct_mean_us"]
        assert row["retransmissions"] is None  # NaN (flow engine) is null, not NaN
    assert len(data["runs"]) == 2 and data["out"] == str(out)


def test_sweep_json_is_the_outcome_and_table(tmp_path, capsys):
    out = tmp_path / "s"
    argv = ["sweep", "ecmp-collision", "--grid", "topology.spines=4,8", "--out", str(out),
            "--workers", "1", "--json"]  # fmt: skip
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    table = pd.read_parquet(out / "sweep.parquet")
    assert data["points"] == 2 and data["ran"] == ["p0000", "p0001"] and data["failed"] == {}
    assert [r["topology.spines"] for r in data["table"]] == list(table["topology.spines"])
    assert [r["fct_mean_s"] for r in data["table"]] == list(table["fct_mean_s"])
    assert main(argv) == 0  # resumed: the same table, every point found done
    again = json.loads(capsys.readouterr().out)
    assert again["ran"] == [] and again["skipped"] == ["p0000", "p0001"]
    assert again["table"] == data["table"]
