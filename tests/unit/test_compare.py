"""``fabricsim compare``: method overrides, uplink utilization, the table and the command."""

import math

import pandas as pd
import pytest

import fabricsim
from fabricsim.analysis.links import step_windows, uplink_utilization, uplinks
from fabricsim.cli import main
from fabricsim.errors import ConfigError
from fabricsim.experiments.compare import compare, format_table
from fabricsim.experiments.methods import compare_methods, default_methods, method_overrides
from fabricsim.experiments.runner import fabric_of
from fabricsim.metrics.results import Result
from fabricsim.report.plots import compare_figures

TINY = {
    "name": "tiny",
    "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 4, "hosts_per_leaf": 4},
    "workload": {"kind": "permutation", "size_bytes": 200_000},
    "nic": {"cc": "nscc", "initial_base_rtt_us": "auto"},
    "seed": 4,
}
TINY_FLOW = {k: v for k, v in TINY.items() if k != "nic"}  # nic.cc is refused on the flow engine


def test_method_overrides():
    assert method_overrides("ecmp", "packet", 1) == {
        "lb.policy": "ecmp",
        "nic.packet_spraying_type": "none",
        "switch.load_balancing_method": "ecmp",
    }
    assert method_overrides("adaptive", "packet", 1)["switch.load_balancing_method"] == "adaptive"
    assert method_overrides("adaptive", "packet", 1)["nic.packet_spraying_type"] == "none"
    assert method_overrides("default", "packet", 1)["switch.load_balancing_method"] == "ecmp"
    qp = method_overrides("qp_scaling", "packet", 1)
    assert qp["lb.qp_count"] == 4 and qp["lb.qp_mode"] == "split"
    assert not qp["nic.pdc_groups_enabled"]
    assert "lb.qp_count" not in method_overrides("qp_scaling", "flow", 8)
    assert method_overrides("ideal_spray", "flow", 1)["lb.policy"] == "ideal_spray"
    with pytest.raises(ConfigError, match="--methods"):
        method_overrides("adaptive", "flow", 1)
    with pytest.raises(ConfigError, match="--methods"):
        method_overrides("ideal_spray", "packet", 1)
    assert set(default_methods("packet")) <= set(compare_methods("packet"))
    assert set(default_methods("flow")) <= set(compare_methods("flow"))


def test_bad_arguments():
    with pytest.raises(ConfigError, match="--engine"):
        compare(TINY, engine="fluid")
    with pytest.raises(ConfigError, match="--seeds"):
        compare(TINY_FLOW, engine="flow", seeds=0)


def test_step_windows():
    flows = pd.DataFrame(
        {"start_s": [0.0, 0.0, 1.0, 1.5], "finish_s": [0.5, 0.9, 2.0, float("nan")]}
    )
    assert step_windows(flows, 3.0) == [(0.0, 3.0)]
    flows["step"] = [0, 0, 1, 1]
    assert step_windows(flows, 3.0) == [(0.0, 0.9), (1.0, 3.0)]


def _result(engine, rows, sc):
    tl = pd.DataFrame(rows, columns=["link", "time_s", "utilization", "queue_bytes"])
    flows = pd.DataFrame({"start_s": [0.0], "finish_s": [1.0]})
    return Result(sc, {"engine": engine, "sim_end_s": 1.0}, flows, tables={"timeline_links": tl})


def test_uplink_utilization_from_both_timeline_kinds():
    sc = fabricsim.load_scenario(TINY).with_overrides({"records.timeline_interval_us": 250_000})
    fab = fabric_of(sc)
    ups = uplinks(fab)
    assert len(ups) == 8 and all(n.startswith("leaf") for n in ups)
    # packet engine: each row is the utilization over the interval that ends at time_s
    rows = [(ups[0], t, 1.0, 0) for t in (0.25, 0.5, 0.75, 1.0)] + [(ups[1], 0.5, 0.5, 0)]
    rows.append(("host0->leaf0", 0.5, 1.0, 0))  # not an uplink: ignored
    got = uplink_utilization(_result("packet", rows, sc), fab)
    assert got["uplink_util_max"] == pytest.approx(1.0)
    # only the uplinks of the switch that sent (leaf0's 4) count in the mean
    assert {u.split("->")[0] for u in ups[:4]} == {"leaf0"}
    mean = (1.0 + 0.5 * 0.25) / 4
    assert got["uplink_util_mean"] == pytest.approx(mean)
    assert got["uplink_max_over_mean"] == pytest.approx(1.0 / mean)
    # flow engine: a row holds until the link's next row
    rows = [(ups[0], 0.0, 1.0, 0), (ups[0], 0.5, 0.0, 0), (ups[2], 0.25, 0.4, 0)]
    got = uplink_utilization(_result("flow", rows, sc), fab)
    assert got["uplink_util_max"] == pytest.approx(0.5)
    assert got["uplink_util_mean"] == pytest.approx((0.5 + 0.4 * 0.75) / 4)
    empty = Result(sc, {"engine": "flow"}, pd.DataFrame({"start_s": [0.0], "finish_s": [1.0]}))
    assert math.isnan(uplink_utilization(empty, fab)["uplink_util_max"])


def test_compare_on_the_packet_engine_writes_every_run(tmp_path):
    res = compare(
        TINY, engine="packet", seeds=2, out=tmp_path, methods=["ecmp", "spray"],
        figures=compare_figures,
    )  # fmt: skip
    t = res.table.set_index("method")
    assert list(t.index) == ["ecmp", "spray"] and (t["runs"] == 2).all()
    assert (t["completed"] == 16).all() and (t["flows"] == 16).all()
    assert t["vs_best"].min() == 1.0 and (t["fct_p99_us"] >= t["fct_mean_us"]).all()
    assert (t["uplink_util_max"] >= t["uplink_util_mean"]).all()
    assert list(res.runs["seed"]) == [4, 5, 4, 5]
    for m in ("ecmp", "spray"):
        for seed in (4, 5):
            d = tmp_path / m / f"seed-{seed}"
            assert (d / "summary.json").exists() and (d / "timeline_links.parquet").exists()
    saved = fabricsim.load_scenario(tmp_path / "spray" / "seed-5" / "config.yaml")
    assert saved.switch.load_balancing_method == "spray" and saved.seed == 5
    for name in ("compare.csv", "runs.csv", "compare.png"):
        assert (tmp_path / name).stat().st_size > 0
    assert (tmp_path / "compare.png").read_bytes()[:4] == b"\x89PNG"
    text = format_table(res.table)
    assert text.splitlines()[0].startswith("method") and "spray" in text
    again = compare(TINY, engine="packet", seeds=2, methods=["ecmp", "spray"])
    pd.testing.assert_frame_equal(again.table, res.table)  # deterministic


def test_compare_on_the_flow_engine(tmp_path):
    res = compare(TINY_FLOW, engine="flow", out=tmp_path)
    t = res.table.set_index("method")
    assert list(t.index) == list(default_methods("flow"))
    assert t["retransmissions"].isna().all()
    assert t.loc["ideal_spray", "fct_mean_us"] <= t.loc["ecmp", "fct_mean_us"]
    assert t.loc["ideal_spray", "uplink_max_over_mean"] <= t.loc["ecmp", "uplink_max_over_mean"]


def test_cli_compare(tmp_path, capsys):
    path = tmp_path / "tiny.yaml"
    import yaml

    path.write_text(yaml.safe_dump(TINY))
    out = tmp_path / "out"
    code = main(["compare", str(path), "--engine", "packet", "--methods", "ecmp,adaptive",
                 "--out", str(out), "--set", "workload.size_bytes=100000"])  # fmt: skip
    text = capsys.readouterr().out
    assert code == 0 and "adaptive" in text and (out / "compare.csv").exists()
    assert main(["compare", str(path), "--engine", "flow", "--methods", "spray"]) == 2
    assert "--methods" in capsys.readouterr().err
    assert main(["compare", str(path), "--set", "nope.key=1"]) == 2


# -- bad values and the output directory (issue 10) -----------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"methods": []}, "--methods: empty"),
        ({"methods": ["ecmp", "ecmp"]}, "twice"),
        ({"workers": 0}, "--workers"),
        ({"workers": 10**6}, "--workers"),
        ({"seeds": 10**8}, "--seeds"),
    ],
)
def test_bad_values_are_refused_before_anything_runs(tmp_path, kwargs, needle):
    import time

    t0 = time.perf_counter()
    with pytest.raises(ConfigError, match=needle):
        compare(TINY_FLOW, engine="flow", out=tmp_path / "c", **kwargs)
    assert time.perf_counter() - t0 < 5 and not (tmp_path / "c").exists()


def test_compare_replaces_its_previous_output_whole(tmp_path):
    out = tmp_path / "c"
    compare(TINY_FLOW, engine="flow", out=out, methods=["ecmp", "pinned"])
    compare(TINY_FLOW, engine="flow", out=out, methods=["ideal_spray"], figures=compare_figures)
    assert {p.name for p in out.iterdir()} == {
        ".fabricsim", "ideal_spray", "compare.csv", "runs.csv", "compare.png"
    }  # fmt: skip
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "a.txt").write_text("mine")
    with pytest.raises(ConfigError, match="not a fabricsim output"):
        compare(TINY_FLOW, engine="flow", out=junk)
    assert [p.name for p in junk.iterdir()] == ["a.txt"]


def test_a_failing_run_leaves_no_partial_comparison(tmp_path, monkeypatch):
    import fabricsim.experiments.compare as cmp

    real = cmp._run_one
    calls = []

    def failing(task):
        calls.append(task["tag"])
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(task)

    monkeypatch.setattr(cmp, "_run_one", failing)
    with pytest.raises(KeyboardInterrupt):
        compare(TINY_FLOW, engine="flow", out=tmp_path / "c", methods=["ecmp", "pinned"])
    assert list(tmp_path.iterdir()) == []


def test_compare_in_worker_processes_matches_serial(tmp_path):
    serial = compare(TINY_FLOW, engine="flow", methods=["ecmp", "pinned"])
    pooled = compare(
        TINY_FLOW, engine="flow", methods=["ecmp", "pinned"], workers=2, out=tmp_path / "c"
    )
    pd.testing.assert_frame_equal(serial.table, pooled.table)
    assert (tmp_path / "c" / "pinned" / "seed-4" / "summary.json").exists()


def test_the_plan_and_an_output_without_figures(tmp_path):
    from fabricsim.experiments.plan import plan_methods

    sc = fabricsim.load_scenario(TINY_FLOW)
    specs = plan_methods(sc, "flow", ["pinned", "ecmp"], 2)
    assert [(s.id, s.tag, s.seed, s.index) for s in specs] == [
        ("pinned/seed-4", "pinned", 4, 0), ("pinned/seed-5", "pinned", 5, 1),
        ("ecmp/seed-4", "ecmp", 4, 2), ("ecmp/seed-5", "ecmp", 5, 3),
    ]  # fmt: skip
    assert specs[0].scenario["lb"]["policy"] == "pinned" and specs[1].scenario["seed"] == 5
    assert specs[0].scenario["records"]["timelines"] is True
    compare(TINY_FLOW, engine="flow", out=tmp_path / "c", methods=["ecmp"])  # experiments: data
    assert {p.name for p in (tmp_path / "c").iterdir()} == {
        ".fabricsim", "ecmp", "compare.csv", "runs.csv"
    }  # fmt: skip
