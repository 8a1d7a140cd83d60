"""Unfinished flows are counted, explained and warned about; shares never round to 100 %.

Issue 37, items 1-3: ``flows_not_completed`` / ``not_completed_reason`` on every engine,
``time_limit_reached`` on both, automatic time limits from the slowest link and the last
start, and records that never move the end of a run.
"""

import math
import warnings

import numpy as np
import pytest

import fabricsim
from fabricsim.metrics.readable import summary_rows
from fabricsim.metrics.summaries import completion_keys, not_completed_warning
from fabricsim.units import human_share, share_pct

FAILED = {"topology.failed_links": ["leaf0->spine1"]}


def _run(scenario, overrides, engine):
    sc = fabricsim.load_scenario(scenario).with_overrides(overrides)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = fabricsim.run(sc, engine=engine)
    lines = [str(w.message) for w in caught if "did not complete" in str(w.message)]
    return res, lines


# -- item 1: counts, reason, warning, shares --------------------------------------------------
@pytest.mark.parametrize(
    ("engine", "extra", "why"),
    [
        ("flow", {}, "black-holed by failed link(s) leaf0->spine1"),
        ("packet", {"workload.size_bytes": 200_000}, "retries exhausted"),
    ],
)
def test_blackholed_flows_are_counted_and_explained(engine, extra, why):
    res, lines = _run("ecmp-collision", {**FAILED, **extra}, engine)
    s = res.summary
    left = s["flows_total"] - s["flows_completed"]
    assert left >= 1
    assert s["flows_not_completed"] == left == int(res.flows["finish_s"].isna().sum())
    assert "leaf0->spine1" in s["not_completed_reason"] and why in s["not_completed_reason"]
    assert s["time_limit_reached"] is False
    assert s.get("flows_failed", 0) <= s["flows_not_completed"]  # given up: among them
    assert lines == [
        f"{left} of 8 flows did not complete ({s['not_completed_reason']}); "
        f"FCT statistics cover the {8 - left} that did"
    ]
    rows = dict(summary_rows(s))
    assert rows["not completed"].startswith(f"{left} (black-holed")
    assert rows["not completed"].endswith(f"FCT: the {8 - left} completed only")


@pytest.mark.parametrize("engine", ["flow", "packet"])
def test_complete_runs_say_so_and_do_not_warn(engine):
    res, lines = _run("ecmp-collision", {"workload.size_bytes": 100_000}, engine)
    s = res.summary
    assert (s["flows_not_completed"], s["not_completed_reason"]) == (0, None)
    assert s["time_limit_reached"] is False
    assert lines == []
    assert "not completed" not in dict(summary_rows(s))


def test_open_loop_runs_have_the_keys_too():
    res, _ = _run("moe", {"workload.tokens_per_gpu": 8}, "flow")
    assert res.summary["flows_not_completed"] == 0
    assert "not_completed_reason" in res.summary


def test_shares_never_round_a_shortfall_to_100_or_a_count_to_0():
    assert human_share(1022, 1024) == "1,022 of 1,024 = 99.8 %"
    assert share_pct(99_999, 100_000) == "99.999"
    assert share_pct(1, 10**6) == "0.0001"
    assert (share_pct(7, 8), share_pct(8, 8), share_pct(0, 8)) == ("88", "100", "0")
    for n in (3, 999, 10**5, 10**9):
        assert share_pct(n - 1, n) != "100" and share_pct(1, n) != "0"
    s = {"flows_total": 1024, "flows_completed": 1022}
    assert dict(summary_rows(s))["flows completed"] == "1,022 of 1,024 = 99.8 %"


def test_completion_keys_and_warning_agree_with_the_counts():
    s = {"flows_total": 1024, "flows_completed": 1022}
    s.update(completion_keys(s))
    assert s["flows_not_completed"] == 2 and s["not_completed_reason"] == "unknown"
    assert not_completed_warning(s).startswith("2 of 1,024 flows did not complete (unknown)")
    full = {"flows_total": 4, "flows_completed": 4, "not_completed_reason": "stale"}
    assert completion_keys(full) == {"flows_not_completed": 0, "not_completed_reason": None}


# -- item 2: time limits --------------------------------------------------------------------
@pytest.mark.parametrize("engine", ["flow", "packet"])
def test_explicit_time_limit_is_flagged_and_named(engine):
    res, lines = _run(
        "ecmp-collision", {"engine.time_limit_s": 20e-6, "workload.size_bytes": 2_000_000}, engine
    )
    s = res.summary
    assert s["flows_completed"] == 0 and s["flows_not_completed"] == 8
    assert s["time_limit_reached"] is True
    assert s["not_completed_reason"] == "time limit 2e-05 s reached"
    assert len(lines) == 1 and "no FCT statistics" in lines[0]
    assert "time limit" in dict(summary_rows(s))


def test_flow_engine_limit_covers_a_degraded_link():
    """A link degraded to 1e-6 of 400 Gbps (400 kbps) carries a 1 MB flow in 21 s; the old
    limit (host rate only: about 1 s) cut the run there with no flag and no reason."""
    sc = {"topology.degraded_links": {"leaf1->host9": 1e-6}, "workload.size_bytes": 1_000_000}
    res, lines = _run("ecmp-collision", sc, "flow")
    s = res.summary
    assert s["flows_completed"] == 8 and lines == []
    assert s["time_limit_reached"] is False
    assert res.flows["fct_s"].max() > 20


def test_flow_engine_limit_covers_a_slow_fabric():
    res, _ = _run(
        "ecmp-collision", {"topology.fabric_link_gbps": 0.01, "workload.size_bytes": 2_000_000},
        "flow",
    )  # fmt: skip
    assert res.summary["flows_completed"] == 8
    assert res.flows["fct_s"].max() > 1.5


def test_flow_engine_limit_covers_a_slow_nvlink():
    """PXN over 10 Mbps NVLink: the old limit cut 22 of 64 flows at 1.0 s (done at 1.64 s)."""
    from pathlib import Path

    path = Path(__file__).parents[2] / "examples" / "rails_pxn.yaml"
    over = {
        "topology.nvlink_gbps": 0.01,
        "records.port_stats": False,
        "nic.packet_spraying_type": "none",
        "workload.size_bytes": 1_000_000,
    }
    res, lines = _run(str(path), over, "flow")
    assert res.summary["flows_completed"] == 64 and lines == []
    assert res.flows["fct_s"].max() > 1.5


def test_packet_engine_runs_flows_that_start_at_the_largest_start_time():
    res, lines = _run(
        "ecmp-collision", {"workload.start_s": 1e6, "workload.size_bytes": 20_000}, "packet"
    )
    s = res.summary
    assert s["flows_completed"] == 8 and s["time_limit_reached"] is False and lines == []
    assert (res.flows["finish_s"] > 1e6).all()
    assert math.isfinite(s["sim_end_s"]) and s["sim_end_s"] > 1e6


# -- item 3: records never move the end -------------------------------------------------------
BASE = {"workload.size_bytes": 50_000}
RECORD_KEYS = {"config_hash"}  # the config differs by its records.* keys


@pytest.mark.parametrize("interval_us", [1e12, 1000.0, 100.0, 1.0])
def test_packet_timelines_do_not_change_the_run(interval_us):
    plain, _ = _run("ecmp-collision", BASE, "packet")
    rec = {**BASE, "records.timelines": True, "records.timeline_interval_us": interval_us}
    timed, lines = _run("ecmp-collision", rec, "packet")
    a = {k: v for k, v in plain.summary.items() if k not in RECORD_KEYS}
    b = {k: v for k, v in timed.summary.items() if k not in RECORD_KEYS}
    assert b == a
    assert b["time_limit_reached"] is False and lines == []
    assert timed.flows.equals(plain.flows)
    links = timed.tables["timeline_links"]
    assert len(links) > 0 or interval_us > b["sim_end_s"] * 1e6
    if interval_us == 1.0:  # samples cover the run, each within an interval past its end
        assert links["time_s"].max() <= b["sim_end_s"] + interval_us * 1e-6
        assert np.isclose(links["utilization"].max(), 1.0, atol=0.05)


def test_packet_timelines_with_progress_calls_match_the_plain_run():
    rec = {**BASE, "records.timelines": True, "records.timeline_interval_us": 2.0}
    sc = fabricsim.load_scenario("ecmp-collision").with_overrides(rec)
    calls = []
    watched = fabricsim.run(sc, engine="packet", progress=lambda now, end: calls.append(now))
    quiet = fabricsim.run(sc, engine="packet")
    assert calls and calls[-1] == watched.summary["sim_end_s"]
    assert watched.summary == quiet.summary and watched.flows.equals(quiet.flows)
    for name in ("timeline_links", "timeline_spine_flows"):
        assert watched.tables[name].equals(quiet.tables[name])


def test_cli_run_shows_the_shortfall_and_warns_once(tmp_path, capsys):
    from fabricsim.cli import main

    args = ["run", "ecmp-collision", "--set", "topology.failed_links=[leaf0->spine1]"]
    assert main([*args, "--out", str(tmp_path / "o")]) == 0
    captured = capsys.readouterr()
    out, err = captured.out, captured.err
    # the CLI says a warning as one plain line
    assert [ln for ln in err.splitlines() if "did not complete" in ln] == [
        "warning: 1 of 8 flows did not complete (black-holed by failed link(s) leaf0->spine1); "
        "FCT statistics cover the 7 that did"
    ]
    assert "7 of 8 = 88 %" in out
    assert "not completed" in out and "black-holed by failed link(s) leaf0->spine1" in out


def test_open_loop_time_limit_is_flagged_and_named():
    res, lines = _run("moe", {"workload.tokens_per_gpu": 8, "engine.time_limit_s": 1e-6}, "flow")
    s = res.summary
    assert s["flows_not_completed"] > 0 and s["time_limit_reached"] is True
    assert s["not_completed_reason"] == "time limit 1e-06 s reached" and len(lines) == 1


def test_every_packet_record_only_observes():
    every = {
        "records.timelines": True,
        "records.uet_monitor": True,
        "records.port_stats": True,
        "records.switch_lb_stats": True,
        "records.uet_transport_stats": True,
    }
    plain, _ = _run("ecmp-collision", BASE, "packet")
    recorded, _ = _run("ecmp-collision", {**BASE, **every}, "packet")
    a = {k: v for k, v in plain.summary.items() if k not in RECORD_KEYS}
    b = {k: v for k, v in recorded.summary.items() if k not in RECORD_KEYS}
    assert b == a and recorded.flows.equals(plain.flows)
    assert {"uet_monitor", "port_stats", "switch_lb_stats", "timeline_links"} <= set(
        recorded.tables
    )
