"""Flows that did not complete are said above the FCT tables (run, study and sweep pages).

The keys ``flows_not_completed`` and ``not_completed_reason`` come from the summary; the tests
write them by hand, so the pages are checked whatever engine branch wrote them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import fabricsim
from fabricsim.cli import main
from fabricsim.experiments.plan import plan_sweep
from fabricsim.experiments.sweep import run_sweep
from fabricsim.report import write_report
from fabricsim.report.run_page import unfinished_line

LINE = (
    "2 of 8 flows did not complete (time limit 1 ms reached); FCT statistics cover the 6 that did"
)


def _section(html: str, sid: str) -> str:
    start = html.index(f'<section id="{sid}">')
    return html[start : html.index("</section>", start)]


def test_the_line_in_words():
    s = {"flows_total": 1024, "flows_completed": 1022, "flows_not_completed": 2,
         "not_completed_reason": "black-holed by failed link(s) leaf0->spine1"}  # fmt: skip
    assert unfinished_line(s) == (
        "2 of 1,024 flows did not complete (black-holed by failed link(s) leaf0->spine1); "
        "FCT statistics cover the 1,022 that did"
    )
    assert unfinished_line({**s, "not_completed_reason": None}).startswith(
        "2 of 1,024 flows did not complete; FCT"
    )
    assert unfinished_line({"flows_total": 5, "flows_completed": 3}).startswith("2 of 5")
    assert (
        unfinished_line({"flows_total": 5, "flows_completed": 5, "flows_not_completed": 0}) is None
    )


def test_run_page_says_it_above_the_fct_tables(tmp_path: Path) -> None:
    res = fabricsim.run("ecmp-collision")
    res.summary.update(flows_completed=6, flows_not_completed=2,
                       not_completed_reason="time limit 1 ms reached")  # fmt: skip
    res.save(tmp_path)
    html = write_report(tmp_path).read_text()
    cdf = _section(html, "fct-cdf")
    assert LINE in cdf and cdf.index(LINE) < cdf.index("<figure")
    assert html.count(LINE) == 1


def test_run_page_without_unfinished_flows_has_no_line(tmp_path: Path) -> None:
    fabricsim.run("ecmp-collision").save(tmp_path)
    assert "did not complete" not in write_report(tmp_path).read_text()


@pytest.fixture(scope="module")
def study_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("study") / "s"
    code = main(
        [
            "study",
            "ecmp-collision",
            "--vs",
            "lb.policy=ecmp,pinned",
            "--seeds",
            "2",
            "--grid",
            "workload.size_bytes=1000000,2000000",
            "--out",
            str(out),
            "--quiet",
        ]
    )
    assert code == 0
    return out


def test_study_page_says_it_for_the_point_with_unfinished_flows(study_dir: Path, tmp_path) -> None:
    import shutil

    d = tmp_path / "s"
    shutil.copytree(study_dir, d)
    record = json.loads((d / "study.json").read_text())
    rid = next(r for r, run in record["runs"].items()
               if run["params"] == {"workload.size_bytes": 2000000} and run["value"] == "pinned"
               and run["seed"] == 2)  # fmt: skip
    record["runs"][rid]["summary"].update(
        flows_completed=6, flows_not_completed=2, not_completed_reason="time limit 1 ms reached"
    )
    (d / "study.json").write_text(json.dumps(record))
    html = write_report(d).read_text()
    point = _section(html, "point-size_bytes2000000")
    assert f"pinned, seed 2: {LINE}" in point
    assert point.index("did not complete") < point.index("<table")
    assert "did not complete" not in _section(html, "point-size_bytes1000000")


def test_sweep_page_says_it_for_the_point_with_unfinished_flows(tmp_path: Path) -> None:
    d = tmp_path / "sw"
    run_sweep(plan_sweep("ecmp-collision", grid=["workload.size_bytes=1000000,2000000"]), d, 1)
    table = pd.read_parquet(d / "sweep.parquet")
    table["flows_not_completed"] = [0, 2]
    table["not_completed_reason"] = [None, "time limit 1 ms reached"]
    table.loc[1, "flows_completed"] = 6
    table.to_parquet(d / "sweep.parquet")
    html = write_report(d).read_text()
    cdf = _section(html, "fct-cdf")
    assert f"point p0001 (message size (B) 2,000,000): {LINE}" in cdf
    assert cdf.index("did not complete") < cdf.index("<figure") and html.count(LINE) == 1
