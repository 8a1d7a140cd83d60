"""The open-loop fluid engine against closed forms: round robin, pacing, the Zipf incast."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import fabricsim
from fabricsim.analysis import moe_incast as mi
from fabricsim.errors import EngineRefusal
from fabricsim.flowsim.open_loop import _processor_sharing, round_robin_ends

GBPS = 800.0
RATE = GBPS * 1e9 / 8  # bytes/s


def pure_zipf(n: int, total: int = 4_000_000) -> fabricsim.Scenario:
    return fabricsim.load_scenario(
        {
            "engine": {"kind": "flow", "flow_model": "open_loop"},
            "topology": {
                "kind": "leaf_spine",
                "leaves": 1,
                "spines": 1,
                "hosts_per_leaf": 2 * n,
                "link_gbps": GBPS,
                "link_delay_us": 0.0,
            },
            "workload": {"kind": "moe", "matrix": "pure_zipf", "total_bytes_per_sender": total},
            "nic": {"header_bytes": 0, "packet_spraying_type": "none"},
        }
    )


def trace_scenario(tmp_path, rows, **extra) -> fabricsim.Scenario:
    pd.DataFrame(rows, columns=["src", "dst", "size_bytes", "start_s"]).to_csv(
        tmp_path / "t.csv", index=False
    )
    data = {
        "engine": {"kind": "flow", "flow_model": "open_loop"},
        "topology": {
            "kind": "leaf_spine",
            "leaves": 1,
            "spines": 1,
            "hosts_per_leaf": 8,
            "link_gbps": GBPS,
            "link_delay_us": 0.0,
        },
        "workload": {"kind": "trace", "path": str(tmp_path / "t.csv")},
        "nic": {"header_bytes": 0, "packet_spraying_type": "none"},
    }
    for key, val in extra.items():
        data.setdefault(key, {}).update(val)
    return fabricsim.load_scenario(data)


# -- the sender side --------------------------------------------------------------------------
def test_round_robin_closed_form_equals_processor_sharing_loop():
    rng = np.random.default_rng(4)
    for _ in range(20):
        w = rng.integers(1, 1000, rng.integers(1, 40)).astype(float)
        t0 = np.full(len(w), 2.0)
        np.testing.assert_allclose(round_robin_ends(t0, w, 3.0), _processor_sharing(t0, w, 3.0))


def test_processor_sharing_with_a_late_arrival():
    # flow 0 (4 B) alone at rate 1 until t=1, then shares with flow 1 (1 B): both at 1/2
    ends = round_robin_ends(np.array([0.0, 1.0]), np.array([4.0, 1.0]), 1.0)
    assert ends.tolist() == [5.0, 3.0]


# -- the receiver side: closed forms -----------------------------------------------------------
def test_incast_backlog_and_completion(tmp_path):
    k, size = 4, 1_000_000
    sc = trace_scenario(tmp_path, [(i, 7, size, 0.0) for i in range(k)])
    res = fabricsim.run(sc)
    s = res.summary
    assert s["peak_backlog_bytes"] == pytest.approx((k - 1) * size)  # (k-1) c t until t = S/c
    assert s["injection_end_s"] == pytest.approx(size / RATE)
    # fluid FIFO: every last byte arrives at S/c behind (k-1) S of queue; plus one packet's
    # store-and-forward on the downlink
    np.testing.assert_allclose(res.flows["finish_s"], k * size / RATE + 4096 / RATE)
    maxmin = fabricsim.run(sc.with_overrides({"engine.flow_model": "max_min"}))
    assert maxmin.flows["finish_s"].max() == pytest.approx(res.flows["finish_s"].max())


def test_one_flow_agrees_with_the_max_min_engine(tmp_path):
    sc = trace_scenario(
        tmp_path,
        [(0, 5, 3_000_000, 1e-6)],
        topology={"link_delay_us": 1.0},
        nic={"header_bytes": 88},
    )
    a = fabricsim.run(sc).flows["finish_s"][0]
    b = fabricsim.run(sc.with_overrides({"engine.flow_model": "max_min"})).flows["finish_s"][0]
    assert a == pytest.approx(b, rel=1e-12)


def test_time_limit_leaves_flows_unfinished(tmp_path):
    sc = trace_scenario(
        tmp_path, [(0, 5, 10_000_000, 0.0), (1, 5, 10_000, 0.0)], engine={"time_limit_s": 50e-6}
    )
    res = fabricsim.run(sc)
    assert res.summary["flows_completed"] == 1
    assert 0 < res.summary["bytes_delivered"] < 10_010_000 and res.summary["bytes_conserved"]


def test_refusals():
    sc = fabricsim.load_scenario("moe").with_overrides(
        {"engine.kind": "flow", "nic.packet_spraying_type": "none"}
    )
    with pytest.raises(EngineRefusal, match="oversubscribed"):
        fabricsim.run(sc.with_overrides({"topology.spines": 4}))
    with pytest.raises(EngineRefusal, match="failed links"):
        fabricsim.run(sc.with_overrides({"topology.failed_links": ["leaf0->spine1"]}))
    with pytest.raises(EngineRefusal, match="lb.policy=ark"):
        fabricsim.run(sc.with_overrides({"lb.policy": "ark"}))


def test_timelines_and_determinism():
    sc = fabricsim.load_scenario("moe").with_overrides({"engine.kind": "flow"})
    a, b = fabricsim.run(sc), fabricsim.run(sc)
    assert a.summary == b.summary
    links = a.tables["timeline_links"]
    assert set(links.columns) == {"link", "time_s", "utilization", "queue_bytes"}
    hot = a.summary["hot_receiver"]
    down = links[links["link"] == f"leaf{int(hot[4:]) // 8}->{hot}"]
    assert down["queue_bytes"].max() == pytest.approx(
        a.summary["hot_receiver_peak_queue_bytes"], rel=0.05
    )
    assert links["utilization"].between(0, 1 + 1e-9).all()


def test_paced_senders_leave_no_backlog_with_mixed_nic_rates():
    sc = fabricsim.load_scenario("moe").with_overrides(
        {
            "workload.scheduler": "rate_based",
            "engine.kind": "flow",
            "topology.degraded_links": {"host3->leaf0": 0.25, "leaf1->host9": 0.5},
        }
    )
    res = fabricsim.run(sc)
    s = res.summary
    assert s["peak_backlog_bytes"] == 0.0 and s["hot_receiver_peak_queue_bytes"] == 0.0
    assert s["cct_inflation"] == pytest.approx(1.0, abs=1e-6)
    rr = fabricsim.run(sc.with_overrides({"workload.scheduler": "round_robin"}))
    assert rr.summary["peak_backlog_bytes"] > 1e6


# -- the exponential incast: engine vs the exact fluid solution and the paper -----------------
@pytest.mark.full
@pytest.mark.parametrize("n", [64, 128, 512])
def test_pure_zipf_incast_matches_the_exact_fluid_solution(n):
    res = fabricsim.run(pure_zipf(n))
    tl = res.tables["timeline_backlog"]
    row = res.flows[res.flows["src"] == "host0"]["size_bytes"].to_numpy(float)
    total = row.sum()
    frac = np.array([0.1, 0.25, 0.5, 0.75, 0.9, 0.97])
    got = mi.measure(tl, frac * total / RATE)
    k_exact = mi.exact_active_destinations(frac * total, n, total, sizes=row)
    np.testing.assert_allclose(got["active_destinations"], k_exact, rtol=0.01)
    np.testing.assert_allclose(got["hot_arrival_norm"], n / k_exact, rtol=0.01)
    np.testing.assert_allclose(
        got["backlog_bytes"], mi.exact_backlog(frac * total, n, total, row), rtol=0.01
    )
    at_end = res.summary["backlog_at_injection_end_bytes"]
    assert at_end == pytest.approx(mi.exact_backlog_at_end(n, 4_000_000), rel=0.01)
    # CCT: the hot receiver never idles, so round robin open loop meets the bound
    assert res.summary["cct_s"] == pytest.approx(n * row.max() / RATE + 4096 / RATE, rel=1e-9)
    assert res.summary["cct_inflation"] == pytest.approx(1.0, rel=1e-9)
    # the paper's forms: k(t) too small by about e, Q(T) too small
    cmp = mi.compare(tl, n, total, GBPS * 1e9).set_index(["quantity", "t_over_T"])
    assert (
        cmp.loc[("active_destinations", 0.5), "measured"]
        / cmp.loc[("active_destinations", 0.5), "paper"]
        > 2.0
    )
    assert 0 < cmp.loc[("backlog_at_T_bytes", 1.0), "err_paper"] < 0.15  # paper's Q(T) is low


def test_exact_fluid_formulas_agree_with_each_other():
    n, total = 100, 1.0
    t = mi.zipf_end_times(n, total)
    assert t[-1] == pytest.approx(total / mi.harmonic(n)) and t[0] == pytest.approx(total)
    np.testing.assert_allclose(np.sort(mi.end_times(mi.pure_row(n, total))), np.sort(t))
    assert mi.exact_backlog(total, n, total) == pytest.approx(mi.exact_backlog_at_end(n, total))
    assert mi.exact_backlog(0.5 * total / mi.harmonic(n), n, total) == 0.0  # no flow ended yet
    k = mi.corrected_active_destinations(np.array([0.0, 0.5]) * total, n, total)
    assert k[0] == n and k[1] == pytest.approx(n * np.e ** (1 - mi.harmonic(n) / 2))
