"""``fabricsim study``: paired runs of A vs B over a grid, Δ % and 95 % CIs, figures, errors."""

import json
import math
import os

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import fabricsim
from fabricsim.cli import main


def _run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def _t(n):
    return stats.t.ppf(0.975, n - 1)


def _ci(x):
    """The mean's interval on the log scale (delta method): m exp(+-t sd / (m sqrt n))."""
    m = np.mean(x)
    h = _t(len(x)) * np.std(x, ddof=1) / (m * math.sqrt(len(x)))
    return m * math.exp(-h), m * math.exp(h)


def _ratio_ci(a, b):
    """100 (G - 1), G the geometric mean of b_i / a_i, and its t interval on the log scale (%)."""
    d = np.log(b / a)
    h = _t(len(d)) * np.std(d, ddof=1) / math.sqrt(len(d))
    return tuple(100 * (math.exp(d.mean() + k * h) - 1) for k in (0, -1, 1))


def test_ecmp_vs_pinned_json_matches_a_direct_computation(capsys, tmp_path):
    code, out, err = _run(
        capsys, "study", "ecmp-collision", "--vs", "lb.policy=ecmp,pinned", "--seeds", "5",
        "--json", "--out", str(tmp_path / "st"),
    )  # fmt: skip
    assert code == 0, err
    record = json.loads(out)
    assert record["vs"] == {"key": "lb.policy", "values": ["ecmp", "pinned"], "baseline": "ecmp"}
    assert record["seeds"] == [1, 2, 3, 4, 5]
    rows = {(r["metric"], r["value"]): r for r in record["table"]}
    for metric in ("fct_mean_s", "fct_p95_s", "fct_p99_s"):
        direct = {
            p: np.array([
                fabricsim.run(fabricsim.load_scenario("ecmp-collision").with_overrides(
                    {"lb.policy": p, "seed": s})).summary[metric]
                for s in range(1, 6)
            ])
            for p in ("ecmp", "pinned")
        }  # fmt: skip
        a, b = direct["ecmp"], direct["pinned"]
        base, other = rows[(metric, "ecmp")], rows[(metric, "pinned")]
        assert base["mean"] == pytest.approx(a.mean(), rel=1e-12)
        assert (base["ci_low"], base["ci_high"]) == pytest.approx(_ci(a), rel=1e-9)
        assert base["delta_pct"] is None
        pct, lo, hi = _ratio_ci(a, b)
        assert other["delta_pct"] == pytest.approx(pct, rel=1e-9)
        assert other["delta_ci_low"] == pytest.approx(lo, rel=1e-9)
        assert other["delta_ci_high"] == pytest.approx(hi, rel=1e-9)
        assert other["significant"] is bool(hi < 0 or lo > 0)
        assert other["seeds"] == 5
    assert "ttft_mean_s" not in {r["metric"] for r in record["table"]}  # not a KV workload
    files = {p.name for p in (tmp_path / "st").iterdir()}
    assert {"study.csv", "study.json", "cdf_all.png", "ecmp-seed1", "pinned-seed5"} <= files


@pytest.mark.full
def test_ark_qps_grid_per_point_delta_and_figures(capsys, tmp_path):
    out_dir = tmp_path / "ark"
    code, out, err = _run(
        capsys, "study", "ark", "--vs", "lb.policy=ecmp,ark", "--grid", "workload.qps=5,25",
        "--seeds", "3", "--set", "workload.requests=120", "--set", "records.timelines=true",
        "--out", str(out_dir),
    )  # fmt: skip
    assert code == 0, err
    assert "at workload.qps = 5" in out and "at workload.qps = 25" in out
    assert "fabric:   leaf-spine, 16 hosts" in out and "workload: KV cache" in out
    assert "requests at QPS {5, 25}," in out  # what the study varies, not the base QPS 25
    record = json.loads((out_dir / "study.json").read_text())
    runs = record["runs"]
    for qps in (5, 25):
        for metric in ("fct_mean_s", "ttft_p95_s"):
            per = {
                p: np.array([runs[f"qps{qps}-{p}-seed{s}"]["summary"][metric] for s in (1, 2, 3)])
                for p in ("ecmp", "ark")
            }
            row = next(r for r in record["table"] if r["workload.qps"] == qps
                       and r["metric"] == metric and r["value"] == "ark")  # fmt: skip
            pct, lo, hi = _ratio_ci(per["ecmp"], per["ark"])
            assert row["delta_pct"] == pytest.approx(pct)
            assert (row["delta_ci_low"], row["delta_ci_high"]) == pytest.approx((lo, hi))
        # the same seed gives both policies the same requests: equal request counts and bytes
        for s in (1, 2, 3):
            e, a = (runs[f"qps{qps}-{p}-seed{s}"]["summary"] for p in ("ecmp", "ark"))
            assert e["bytes_total"] == a["bytes_total"]
    for name in ("cdf_qps5.png", "cdf_qps25.png", "vs_grid.png", "heatmap_qps25.png"):
        assert (out_dir / name).stat().st_size > 10_000, name


def test_python_api_takes_dicts_and_returns_the_table():
    table = fabricsim.study(
        "ecmp-collision", {"lb.policy": ["ecmp", "pinned"]}, grid={"topology.spines": [4, 8]},
        seeds=2,
    )  # fmt: skip
    assert list(table.columns[:3]) == ["topology.spines", "metric", "value"]
    assert sorted(set(table["topology.spines"])) == [4, 8]
    assert table["seeds"].eq(2).all()


BAD = [
    (["--vs", "lb.policy=ecmp"], "--vs lb.policy: give at least two values"),
    (["--vs", "lb.polcy=ecmp,ark"], "did you mean lb.policy?"),
    (["--vs", "lb.policy=ecmp,ECMPX"], "--vs lb.policy:"),
    (["--vs", "lb.policy=ecmp,ark", "--grid", "lb.policy=ecmp,ark"], "also the --vs key"),
    (["--vs", "lb.policy=ecmp,ark", "--set", "lb.policy=ark"], "--set lb.policy: also a study key"),
    (["--vs", "lb.policy=ecmp,ark", "--seeds", "0"], "--seeds"),
    (["--vs", "lb.policy=ecmp,ark", "--grid", "workload.qps=0,5"], "--grid workload.qps"),
    (["--vs", "lb.policy"], "expected KEY=V1,V2"),
]


@pytest.mark.parametrize(("args", "needle"), BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_study_input_is_one_line_exit_2_nothing_written(capsys, tmp_path, args, needle):
    target = tmp_path / "st"
    code, out, err = _run(capsys, "study", "ark", *args, "--out", str(target))
    assert code == 2 and out == "", err
    assert err.count("\n") == 1 and needle in err, err
    assert not target.exists()


@pytest.mark.full
def test_study_report_page(capsys, tmp_path):
    """`fabricsim report` on a study: the A-vs-B table per point, its figures, no empty section."""
    import re

    from fabricsim.report.browser import check_page, find_browser

    d = tmp_path / "st"
    code, _, err = _run(
        capsys, "study", "ark", "--vs", "lb.policy=ecmp,ark", "--grid", "workload.qps=5,25",
        "--seeds", "2", "--set", "workload.requests=60", "--set", "records.timelines=true",
        "--svg", "--quiet", "--out", str(d),
    )  # fmt: skip
    assert code == 0, err
    assert main(["report", str(d)]) == 0
    html = (d / "report.html").read_text()
    ids = re.findall(r'<section id="([^"]+)"', html)
    assert ids == ["study", "point-qps5", "point-qps25", "grid", "runs"]
    assert html.count("<svg") == 5  # 2 CDFs, 2 heatmaps, the grid figure: inline SVG
    assert "Δ ark" in html and "mean FCT" in html and "leaf-spine, 16 hosts" in html
    assert re.search(r"<td>[-+]\d+(\.\d)? % \[[-+]", html), "Δ with its CI"
    assert sorted(p.name for p in (d / "figures").iterdir()) == [
        "cdf_qps25.svg", "cdf_qps5.svg", "heatmap_qps25.svg", "heatmap_qps5.svg", "vs_grid.svg",
    ]  # fmt: skip
    exe = find_browser()
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("CI is set but no Chromium browser is installed (apt-get install chromium)")
        return
    check = check_page(d / "report.html", exe)
    assert check.errors == [] and check.section_ids == ids
    assert len(check.images) == 5 and check.broken_images == 0  # the inline SVG figures


@pytest.mark.full
def test_study_on_local_workers_and_on_dask_gives_the_same_table(tmp_path):
    from fabricsim.experiments.paired import run_paired

    distributed = pytest.importorskip("distributed")
    args = ("ecmp-collision", ("lb.policy", ["ecmp", "pinned"]), {"topology.spines": [4, 8]}, 2)
    here = run_paired(*args).table
    pool = run_paired(*args, workers=2).table
    with distributed.LocalCluster(
        processes=True, n_workers=2, threads_per_worker=1, dashboard_address=None
    ) as cluster:
        dask = run_paired(*args, scheduler=cluster.scheduler_address).table
    pd.testing.assert_frame_equal(here, pool)
    pd.testing.assert_frame_equal(here, dask)


def test_runs_with_unfinished_flows_are_reported(capsys, tmp_path):
    d = tmp_path / "st"
    code, out, err = _run(
        capsys, "study", "incast", "--vs", "switch.trimming=true,false", "--engine", "packet",
        "--seeds", "1", "--set", "topology.k=4", "--set", "workload.senders=8",
        "--set", "workload.size_bytes=200000", "--set", "engine.time_limit_s=0.0001",
        "--out", str(d),
    )  # fmt: skip
    assert code == 0, err
    assert "warning: 2 of 2 runs left flows unfinished" in out
    record = json.loads((d / "study.json").read_text())
    assert set(record["unfinished_flows"]) == {"True-seed1", "False-seed1"}


def test_two_key_grid_draws_metric_vs_the_first_key(tmp_path):
    from fabricsim.experiments.paired import run_paired
    from fabricsim.report.study_plots import paired_figures

    st = run_paired(
        "ecmp-collision", ("lb.policy", ["ecmp", "pinned"]),
        {"workload.size_bytes": [1_000_000, 4_000_000], "topology.spines": [4, 8]}, 2,
    )  # fmt: skip
    names = sorted(p.name for p in paired_figures(tmp_path, st, "svg"))
    assert "vs_grid.svg" in names and len([n for n in names if n.startswith("cdf_")]) == 4
    svg = (tmp_path / "vs_grid.svg").read_text()
    assert "pinned, spines 8" in svg and "workload.size_bytes" in svg  # legends for people
