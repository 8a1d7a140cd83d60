"""Whole runs of the packet engine: worked examples, conservation, failures, records, hooks."""

import math
import warnings

import numpy as np
import pytest

import fabricsim
from fabricsim.experiments.runner import build_engine
from fabricsim.lb.base import Connection, PathPolicy
from fabricsim.packetsim.engine import PacketEngine

SPRAY = fabricsim.load_scenario("spray-example")


def run(sc, **overrides):
    return fabricsim.run(sc.with_overrides(overrides) if overrides else sc, engine="packet")


# -- worked example of 000_*.txt ------------------------------------------------------------
def test_spray_example_uses_256_to_383_twice_each():
    res = run(SPRAY)
    mon = res.tables["uet_monitor"]
    assert len(mon) == 256 and (mon["direction"] == "Tx").all()
    counts = mon["entropy_value"].value_counts()
    assert sorted(counts.index) == list(range(256, 384)) and set(counts) == {2}
    assert list(mon["psn"]) == list(range(256))
    assert res.flows["entropy"][0] == 256
    assert res.summary["packets_sent"] == 256 and res.summary["packets_retransmitted"] == 0
    # 8 spines: the default hash spreads the 128 values over all of them
    assert mon["path"].nunique() == 8 and res.flows["path"][0].count(";") == 7


def test_spray_example_fct_is_serialization_plus_path_latency():
    res = run(SPRAY)
    wire = 1048576 + 256 * 88
    expected = wire * 8 / 400e9 + 4 * 1e-6 + 3 * 4184 * 8 / 400e9
    assert res.flows["fct_s"][0] == pytest.approx(expected, rel=1e-9)


def test_spray_example_wraps_and_single_value():
    mon = run(SPRAY, **{"nic.starting_port_offset": 65535, "nic.entropy_mask_bits": 8}).tables[
        "uet_monitor"
    ]
    assert list(mon["entropy_value"]) == [65535, *range(0, 255)]
    mon = run(SPRAY, **{"nic.entropy_mask_bits": 0}).tables["uet_monitor"]
    assert set(mon["entropy_value"]) == {256} and mon["path"].nunique() == 1


def test_none_uses_the_connections_port_and_one_path():
    sc = SPRAY.with_overrides({"nic.packet_spraying_type": "none"})
    res = run(sc)
    mon = res.tables["uet_monitor"]
    flow_res = fabricsim.run(sc.with_overrides({"records.uet_monitor": False}), engine="flow")
    port = int(flow_res.flows["entropy"][0])
    assert set(mon["entropy_value"]) == {port} and res.flows["entropy"][0] == port
    assert res.flows["path"][0] == flow_res.flows["path"][0]
    assert mon["path"].nunique() == 1


# -- determinism and conservation --------------------------------------------------------------
def test_same_scenario_and_seed_same_monitor():
    sc = SPRAY.with_overrides({"nic.packet_spraying_type": "reps", "workload.size_bytes": 4 << 20})
    a, b = run(sc), run(sc)
    assert a.tables["uet_monitor"].equals(b.tables["uet_monitor"])
    assert a.summary == b.summary
    c = run(sc, seed=2)
    assert not a.tables["uet_monitor"]["entropy_value"].equals(
        c.tables["uet_monitor"]["entropy_value"]
    )


@pytest.mark.parametrize("spray", ["none", "default", "reps"])
def test_counters_add_up_and_bytes_are_acknowledged_once(spray):
    sc = fabricsim.load_scenario("ecmp-collision").with_overrides(
        {"seed": 2, "nic.packet_spraying_type": spray, "workload.size_bytes": 1 << 20}
    )
    eng = build_engine(sc, "packet")
    out = eng.run()
    s = out.summary
    assert s["packets_sent"] == (
        s["packets_received"]
        + s["headers_received"]
        + s["packets_dropped"]
        + s["packets_in_flight_at_end"]
    )
    assert s["packets_in_flight_at_end"] == 0
    first = sum(p.npkts for ps in eng.pdcs for p in ps)
    assert s["packets_sent"] == first + s["packets_retransmitted"]
    assert s["nacks_sent"] == s["headers_received"]
    for flow, pdcs in enumerate(eng.pdcs):
        size = int(eng.flows.size_bytes[flow])
        assert sum(p.acked_bytes for p in pdcs) == size
        assert sum(p.acked_pkts for p in pdcs) == sum(p.npkts for p in pdcs)
        assert all(p.rx.bytes == p.size and p.inflight == 0 for p in pdcs)
    assert (out.delivered_bytes == eng.flows.size_bytes).all()
    if spray == "none" and s["packets_trimmed"]:
        assert s["packets_retransmitted"] >= s["packets_trimmed"]


# -- failures ------------------------------------------------------------------------------------
FAILED = fabricsim.load_scenario("ecmp-collision").with_overrides(
    {"seed": 1, "topology.failed_links": ["spine0->leaf1"], "workload.size_bytes": 2 << 20}
)


def test_failed_spine_link_none_gives_up_and_run_ends():
    res = run(FAILED, **{"nic.packet_spraying_type": "none"})
    hit = res.flows["path"].str.contains("spine0")
    assert hit.any(), "seed 1 hashes a flow onto spine0"
    assert res.flows.loc[hit, "finish_s"].isna().all()
    assert res.flows.loc[~hit, "finish_s"].notna().all()
    s = res.summary
    assert s["flows_failed"] == int(hit.sum()) and not s["time_limit_reached"]
    # every packet of a failed message was retried nic.max_retries times before giving up
    assert s["timeouts"] >= 9 and s["packets_dropped"] >= 9


def test_failed_spine_link_default_and_reps_finish_reps_retransmits_less():
    d = run(FAILED, **{"nic.packet_spraying_type": "default"}).summary
    r = run(FAILED, **{"nic.packet_spraying_type": "reps"}).summary
    assert d["flows_completed"] == r["flows_completed"] == 8
    assert r["packets_retransmitted"] * 3 < d["packets_retransmitted"]
    assert r["early_failure_detections"] > 0 and d["early_failure_detections"] == 0


def test_time_limit_reports_unfinished_and_ends():
    res = run(SPRAY, **{"engine.time_limit_s": 10e-6})
    assert math.isnan(res.flows["finish_s"][0]) and res.summary["time_limit_reached"]
    assert res.flows.loc[0, "size_bytes"] > 0 and res.summary["bytes_delivered"] < 1048576


# -- REPS freezing and exploration window at the seed's defaults ----------------------------
def test_reps_freezing_then_window_of_71_after_a_link_fails():
    sc = SPRAY.with_overrides(
        {"nic.packet_spraying_type": "reps", "workload.size_bytes": 16 << 20, "seed": 3}
    )
    eng = build_engine(sc, "packet")
    eng.fail_link_at("spine3->leaf1", 20e-6)
    mon = eng.run().tables["uet_monitor"]
    state = mon["reps_state"].astype(str).to_numpy()
    before = mon["time_s"] < 20e-6
    assert (state[before.to_numpy()] == "normal").all()
    freezing = mon[state == "freezing"]
    assert len(freezing) > 0 and not freezing["explored"].any()
    first_freeze = freezing["time_s"].iloc[0]
    assert 20e-6 < first_freeze < 20e-6 + 3 * 6e-6 + 2e-6  # early failure detection: 18 us
    # group the window rows into runs of consecutive rows
    idx = np.flatnonzero(state == "window")
    runs = np.split(idx, np.flatnonzero(np.diff(idx) != 1) + 1)
    complete = [r for r in runs if r[-1] + 1 < len(mon)]
    assert complete, "the window opened and closed"
    for r in complete:
        assert len(r) == 71
        rows = mon.iloc[r]
        pos = np.arange(1, 72)
        window = rows["explore_reason"].astype(str).to_numpy() == "window"
        assert list(pos[window]) == list(range(7, 72, 8))
        other = rows[rows["explored"].to_numpy() & ~window]
        assert (other["explore_reason"] == "cache_empty").all()
        assert (other["reps_cache_values"] == 0).all()
        assert state[r[0] - 1] == "freezing"
        # freezing lasted at least FreezingTimeout (100 us)
        assert rows["time_s"].iloc[0] - first_freeze >= 100e-6 or r[0] != complete[0][0]


# -- engines agree -----------------------------------------------------------------------------
def _agree_scenario(seed, packet=True):
    """The layout on both engines; the packet engine's tuning keys only where it reads them (a
    key the run does not read is refused)."""
    tuning = {"nic.initial_base_rtt_us": "auto", "switch.buffer_bdp": 24} if packet else {}
    return fabricsim.load_scenario("ecmp-collision").with_overrides(
        {
            "seed": seed,
            "topology.hosts_per_leaf": 16,
            "topology.spines": 4,
            "topology.link_gbps": 100,
            "workload.size_bytes": 20_000_000,
            **tuning,
        }
    )


@pytest.mark.parametrize("seed", [1, 2])
def test_engines_agree_on_single_bottleneck_layouts(seed):
    p = fabricsim.run(_agree_scenario(seed), engine="packet")
    f = fabricsim.run(_agree_scenario(seed, packet=False), engine="flow")
    assert len(p.flows) == 16 and p.summary["packets_trimmed"] == 0
    assert (p.flows["path"] == f.flows["path"]).all()
    ratio = p.flows["fct_s"] / f.flows["fct_s"]
    assert (ratio - 1).abs().max() <= 0.10
    assert abs(p.flows["fct_s"].sum() / f.flows["fct_s"].sum() - 1) <= 0.05


def test_parking_lot_window_sharing_is_not_max_min():
    """X crosses two bottlenecks, Y and Z one each.  Max-min gives all three half the rate;
    equal windows give the shorter-RTT flows more (about 61 % vs 39 %, see the docs), so Y and
    Z finish ~18 % earlier while X, work-conserving, finishes at the same time."""
    from fabricsim.experiments.runner import fabric_of, router_of
    from fabricsim.flowsim.engine import FlowEngine
    from fabricsim.lb import PolicyContext, make_policy
    from fabricsim.rng import stream
    from fabricsim.workloads.base import FlowTable

    sc = _agree_scenario(1).with_overrides(
        {"topology.leaves": 3, "topology.spines": 1, "topology.hosts_per_leaf": 2}
    )
    fab, router = fabric_of(sc), router_of(sc, fabric_of(sc))
    flows = FlowTable.build(sc, [0, 1, 4], [2, 5, 3], [20_000_000] * 3, [0.0] * 3)
    fin = {}
    for name, cls in (("packet", PacketEngine), ("flow", FlowEngine)):
        ctx = PolicyContext(sc, fab, router, flows, stream(sc.seed, "policy"))
        fin[name] = cls(sc, fab, router, flows, make_policy(ctx)).run().finish_s
    ratio = fin["packet"] / fin["flow"]
    assert np.ptp(fin["flow"]) < 1e-9  # max-min: all finish together
    assert abs(ratio[0] - 1) < 0.02
    assert (ratio[1:] < 0.88).all() and (ratio[1:] > 0.75).all()


# -- records -------------------------------------------------------------------------------------
def test_records_port_lb_transport_and_timelines():
    sc = fabricsim.load_scenario("ecmp-collision").with_overrides(
        {
            "seed": 2,
            "workload.size_bytes": 1 << 20,
            "nic.packet_spraying_type": "default",
            "records.port_stats": True,
            "records.switch_lb_stats": True,
            "records.uet_transport_stats": True,
            "records.timelines": True,
            "records.uet_monitor": True,
            "records.timeline_interval_us": 2.0,
        }
    )
    res = run(sc)
    ports = res.tables["port_stats"]
    s = res.summary
    assert ports["trims"].sum() == s["packets_trimmed"]
    up = ports[ports["link"].str.startswith("host") & ports["link"].str.contains("leaf0")]
    assert up["packets"].sum() == s["packets_sent"]  # the senders' uplinks carry all data
    lb = res.tables["switch_lb_stats"]
    leaf0 = lb[lb["switch"] == "leaf0"]
    assert set(leaf0["member"]) == set(range(8))
    # every data packet and header, and nothing else, goes up from leaf0
    assert leaf0["packets"].sum() == s["packets_sent"] - s["packets_trimmed"] + s["packets_trimmed"]
    stats = res.json_records["uet_transport_stats"]
    assert stats["total"]["num_out_of_order_events_on_nic"] > 0
    assert stats["total"]["max_out_of_order_on_flow"] >= 1
    assert stats["total"]["packets_retransmitted"] == s["packets_retransmitted"]
    links = res.tables["timeline_links"]
    assert {"link", "time_s", "utilization", "queue_bytes"} <= set(links.columns)
    assert links["utilization"].max() <= 1.0 + 1e-9 and links["utilization"].max() > 0.9
    spines = res.tables["timeline_spine_flows"]
    assert spines["active_flows"].max() >= 1 and set(spines["spine"]) == {
        f"spine{i}" for i in range(8)
    }
    mon = res.tables["uet_monitor"]
    assert (
        len(mon) == s["packets_sent"]
        and (mon["direction"] == "ReTx").sum() == s["packets_retransmitted"]
    )


def test_records_off_by_default():
    res = run(SPRAY.with_overrides({"records.uet_monitor": False}))
    # flow_paths is not a record: the per-path part of the flow table, there when flows spray
    assert set(res.tables) == {"flow_paths"} and res.json_records == {}


# -- configuration checks and engine hooks --------------------------------------------------
def test_reps_with_flowlet_switches_warns_and_runs():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = run(
            SPRAY, **{"switch.load_balancing_method": "flowlet", "nic.packet_spraying_type": "reps"}
        )
    assert any("flowlet" in str(w.message) for w in caught)
    assert res.summary["flows_completed"] == 1


class _Rerouting(PathPolicy):
    """Moves connection 0 of flow 0 to port 4242 at 5 us, through the engine hooks."""

    name = "test-reroute"

    def connections(self, flow):
        hooks = self.ctx.hooks
        hooks.schedule(hooks.now_s() + 5e-6, lambda: hooks.reroute(flow, 0, 4242))
        return [Connection(int(self.ctx.flows.size_bytes[flow]), 1000)]


def test_hooks_schedule_and_reroute_move_the_pdc_port():
    sc = SPRAY.with_overrides({"nic.packet_spraying_type": "none"})
    eng = build_engine(sc, "packet")
    eng.policy = _Rerouting(eng.policy.ctx)
    out = eng.run()
    mon = out.tables["uet_monitor"]
    early, late = mon[mon["time_s"] < 5e-6], mon[mon["time_s"] > 5e-6]
    assert set(early["entropy_value"]) == {1000} and set(late["entropy_value"]) == {4242}
    assert out.entropy[0] == 1000 and not math.isnan(out.finish_s[0])


def test_pdc_groups_none_share_the_first_pdcs_port():
    class TwoConns(PathPolicy):
        name = "test-two"

        def connections(self, flow):
            half = int(self.ctx.flows.size_bytes[flow]) // 2
            return [Connection(half, 111), Connection(half, 222)]

    for groups, expected in ((True, {111}), (False, {111, 222})):
        sc = SPRAY.with_overrides(
            {"nic.packet_spraying_type": "none", "nic.pdc_groups_enabled": groups}
        )
        eng = build_engine(sc, "packet")
        eng.policy = TwoConns(eng.policy.ctx)
        out = eng.run()
        assert set(out.tables["uet_monitor"]["entropy_value"]) == expected
        assert out.delivered_bytes[0] == 1048576


def test_connection_rate_cap_paces_the_pdc():
    class Capped(PathPolicy):
        name = "test-capped"

        def connections(self, flow):
            size = int(self.ctx.flows.size_bytes[flow])
            return [Connection(size, 1000, rate_cap_bps=10e9)]

    eng = build_engine(SPRAY, "packet")
    eng.policy = Capped(eng.policy.ctx)
    out = eng.run()
    wire = 1048576 + 256 * 88
    assert out.finish_s[0] == pytest.approx(wire * 8 / 10e9, rel=0.01)


def test_degraded_link_serializes_slower():
    res = run(SPRAY, **{"topology.degraded_links": {"leaf1->host1": 0.5}})
    wire = 1048576 + 256 * 88
    # the receiver's downlink at 200 Gbps is the bottleneck: the message takes twice as long
    assert res.flows["fct_s"][0] == pytest.approx(wire * 8 / 200e9 + 4e-6, rel=0.03)


def test_withdrawn_failed_link_is_avoided_and_random_hash_sprays():
    sc = FAILED.with_overrides(
        {"nic.packet_spraying_type": "none", "topology.failed_link_mode": "withdraw"}
    )
    res = run(sc)
    assert res.summary["flows_completed"] == 8 and res.summary["packets_dropped"] == 0
    assert not res.flows["path"].str.contains("spine0>leaf1").any()
    res = run(SPRAY, **{"nic.packet_spraying_type": "none", "switch.hash_method": "random"})
    mon = res.tables["uet_monitor"]
    assert mon["entropy_value"].nunique() == 1 and mon["path"].nunique() == 8
