"""Flow engine behaviour: time limit, partial delivery, timelines, spraying fluid limits."""

import numpy as np
import pytest

import fabricsim
from fabricsim.errors import EngineRefusal

pytestmark = pytest.mark.usefixtures("both_solvers")


def test_time_limit_reports_unfinished_with_partial_bytes():
    sc = fabricsim.load_scenario("ecmp-collision").with_overrides({"engine.time_limit_s": 40e-6})
    with pytest.warns(UserWarning, match=r"8 of 8 flows did not complete \(time limit 4e-05 s"):
        res = fabricsim.run(sc, engine="flow")
    assert res.summary["flows_completed"] == 0
    assert res.summary["flows_not_completed"] == 8 and res.summary["time_limit_reached"] is True
    assert res.flows["finish_s"].isna().all()
    delivered = res.summary["bytes_delivered"]
    assert 0 < delivered < res.summary["bytes_total"]
    # every flow ran at >= 1/8 of 400 Gbps for 40 us (minus headers): a lower bound
    assert delivered >= 8 * 40e-6 * 400e9 / 8 / 8 * (4096 / 4184) * 0.99
    assert res.summary["sim_end_s"] == pytest.approx(40e-6)


def test_timelines_record_utilization_and_spine_counts():
    sc = fabricsim.load_scenario("ecmp-collision").with_overrides({"records.timelines": True})
    res = fabricsim.run(sc, engine="flow")
    links, spines = res.tables["timeline_links"], res.tables["timeline_spine_flows"]
    assert set(links.columns) == {"link", "time_s", "utilization", "queue_bytes"}
    assert links["utilization"].between(0, 1 + 1e-9).all()
    # host0's uplink carries its flow at 1/k of the rate, k = flows on its spine
    first = links[links["link"] == "host0->leaf0"].sort_values("time_s")
    spine = res.flows["path"][0].split(">")[1]
    k = int((res.flows["path"].str.split(">").str[1] == spine).sum())
    assert first["utilization"].iloc[0] == pytest.approx(1 / k)
    assert first["utilization"].iloc[-1] == 0.0  # idle after the flow ends
    peaks = spines.groupby("spine")["active_flows"].max()
    assert peaks.to_dict() == res.summary["spine_peak_flows"]


def test_default_spraying_fluid_limit_spreads_over_paths():
    sc = fabricsim.load_scenario("ecmp-collision").with_overrides(
        {"nic.packet_spraying_type": "default"}
    )
    res = fabricsim.run(sc, engine="flow")
    # 128 round-robin ports over 8 spines: every flow uses several spines
    assert (res.flows["path"].str.count(";") >= 4).all()
    assert res.summary["step_efficiency"] > 0.6


def test_ideal_spray_is_perfect_on_symmetric_fabric():
    sc = fabricsim.load_scenario("ecmp-collision").with_overrides({"lb.policy": "ideal_spray"})
    res = fabricsim.run(sc, engine="flow")
    assert res.summary["step_efficiency"] == pytest.approx(1.0, rel=1e-9)
    assert np.allclose(res.flows["fct_s"], res.flows["fct_s"][0])


def test_reps_is_refused_on_the_flow_engine():
    sc = fabricsim.load_scenario("ecmp-collision").with_overrides(
        {"nic.packet_spraying_type": "reps"}
    )
    with pytest.raises(EngineRefusal, match="packet engine"):
        fabricsim.run(sc, engine="flow")


def test_pinned_policy_uses_destination_slice():
    sc = fabricsim.load_scenario("ecmp-collision").with_overrides({"lb.policy": "pinned"})
    res = fabricsim.run(sc, engine="flow")
    spines = res.flows["path"].str.split(">").str[1]
    # destination host 8+i is index i on leaf1: pinned to path i -> spine i
    assert spines.tolist() == [f"spine{i}" for i in range(8)]
    assert res.summary["step_efficiency"] == pytest.approx(1.0, rel=1e-9)


def test_hash_random_is_even_split_per_stage():
    sc = fabricsim.load_scenario("ecmp-collision").with_overrides({"switch.hash_method": "random"})
    res = fabricsim.run(sc, engine="flow")
    assert res.summary["step_efficiency"] == pytest.approx(1.0, rel=1e-9)


def test_conservation_is_checked_against_link_counters(monkeypatch):
    from fabricsim.flowsim import engine as fe

    sc = fabricsim.load_scenario("ecmp-collision")
    good = fabricsim.run(sc, engine="flow").summary
    assert good["bytes_conserved"] is True and good["link_counters_match_flows"] is True
    from fabricsim.experiments import engines

    class Leaky(fe.FlowEngine):  # (the compiled engine's methods are overridden, not patched)
        def _complete(self, slot):  # lose 1 % of what host0's uplink carried: it must notice
            super()._complete(slot)
            counters = np.asarray(self.rates.link_bytes)
            counters[self.fabric.host_uplink[0]] *= 0.99

    monkeypatch.setattr(engines, "FlowEngine", Leaky)  # what the flow engine's builder makes
    bad = fabricsim.run(sc, engine="flow").summary
    assert bad["link_counters_match_flows"] is False
    assert bad["bytes_conserved"] is False


def test_reroute_of_unroutable_connection_restores_its_cap(both_solvers):
    from fabricsim.experiments.runner import fabric_of, router_of
    from fabricsim.flowsim.engine import FlowEngine, _Conn
    from fabricsim.lb import PolicyContext, make_policy
    from fabricsim.rng import stream
    from fabricsim.workloads import generate

    sc = fabricsim.load_scenario("ecmp-collision")
    fab = fabric_of(sc)
    router = router_of(sc, fab)
    flows = generate(sc, fab)
    policy = make_policy(PolicyContext(sc, fab, router, flows, stream(1, "policy")))
    eng = FlowEngine(sc, fab, router, flows, policy)
    assert (
        type(eng.rates).__name__
        == {"incremental": "MaxMinKernel", "reference": "ReferenceRates"}[both_solvers]
    )
    conn = _Conn(0, 0, 1000.0, None)
    eng.conns[0] = [conn]
    eng._activate(conn, 5e9)
    assert eng.rates.cap[conn.slot] == 0.0  # unroutable: cannot progress
    eng.rates.settle(0.0)
    assert eng.rates.rate_bps(conn.slot) == 0.0
    eng.reroute(0, 0, int(flows.src_port[0]))
    assert eng.rates.cap[conn.slot] == 5e9
    eng.rates.settle(0.0)
    assert eng.rates.rate_bps(conn.slot) == pytest.approx(5e9)
