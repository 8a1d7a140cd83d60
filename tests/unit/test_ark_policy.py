"""ARK as ``lb.policy=ark`` on the flow engine: ports, re-routes, races, summary keys."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import fabricsim
from fabricsim.config import load_scenario
from fabricsim.errors import ConfigError
from fabricsim.experiments.runner import fabric_of, router_of
from fabricsim.flowsim.engine import FlowEngine
from fabricsim.lb import PolicyContext, make_policy
from fabricsim.lb.ark import ArkPolicy
from fabricsim.rng import stream
from fabricsim.workloads import generate

pytestmark = pytest.mark.usefixtures("both_solvers")  # both flow solvers


GB = 10**9


def _trace_scenario(tmp_path, rows, **overrides):
    path = tmp_path / "flows.csv"
    pd.DataFrame(rows, columns=["src", "dst", "size_bytes", "start_s"]).to_csv(path, index=False)
    data = load_scenario("ark").to_dict()
    data["workload"] = {"kind": "trace", "path": str(path)}
    data["lb"]["policy"] = "ark"
    return load_scenario(data).with_overrides(overrides) if overrides else load_scenario(data)


def _engine(sc):
    fab = fabric_of(sc)
    router = router_of(sc, fab)
    flows = generate(sc, fab)
    ctx = PolicyContext(sc, fab, router, flows, stream(sc.seed, "policy"))
    policy = make_policy(ctx)
    eng = FlowEngine(sc, fab, router, flows, policy)
    ctx.hooks = eng
    return eng, policy, router, flows


def test_spaced_flows_take_spines_in_order(tmp_path):
    rows = [(i, 8 + i, GB, i * 1e-3) for i in range(4)]
    res = fabricsim.run(_trace_scenario(tmp_path, rows))
    assert [p.split(">")[1] for p in res.flows["path"]] == ["spine0", "spine1", "spine2", "spine3"]
    assert res.summary["ark_races"] == 0 and res.summary["ark_fallbacks"] == 0
    assert res.summary["spine_peak_flows"] == {f"spine{i}": 1 for i in range(4)}
    alone = GB * (1 + 88 / 4096) * 8 / 100e9
    np.testing.assert_allclose(res.flows["fct_s"], alone, rtol=1e-3)  # no sharing at all


def test_entropy_is_a_port_the_real_hash_puts_on_the_path(tmp_path):
    rows = [(i % 8, 8 + (3 * i) % 8, GB // 4, i * 1e-3) for i in range(12)]
    sc = _trace_scenario(tmp_path, rows)
    res = fabricsim.run(sc)
    fab = fabric_of(sc)
    router = router_of(sc, fab)
    for row in res.flows.itertuples():
        src, dst = int(row.src[4:]), int(row.dst[4:])
        assert fab.path_label(router.route(src, dst, int(row.entropy))) == row.path


def test_forced_race_in_the_engine_reroutes_the_loser(tmp_path):
    rows = [(0, 8, GB, 0.0), (1, 9, GB, 2e-6)]  # 2 us apart, control delay 5 us
    eng, policy, router, flows = _engine(_trace_scenario(tmp_path, rows))
    out = eng.run()
    assert isinstance(policy, ArkPolicy)
    assert policy.summary()["ark_races"] == 1
    assert out.path[0] != out.path[1]  # no spine double-booked after the delay
    assert [p.split(">")[1] for p in out.path] == ["spine0", "spine1"]
    assert out.entropy[1] != flows.src_port[1]
    # the loser shared spine0 for ~3 us only: both finish within a few us of the alone time
    alone = GB * (1 + 88 / 4096) * 8 / 100e9
    fct = out.finish_s - flows.start_s
    assert np.all(fct < alone + 10e-6) and np.all(fct > alone)
    # every reservation was released everywhere
    assert all(not c.table for c in policy.plane.controllers)


def test_race_with_a_slower_control_channel_shares_longer(tmp_path):
    rows = [(0, 8, GB, 0.0), (1, 9, GB, 2e-6)]
    eng, policy, _, flows = _engine(
        _trace_scenario(tmp_path, rows, **{"lb.ark_control_delay_us": 20_000.0})
    )
    out = eng.run()
    alone = GB * (1 + 88 / 4096) * 8 / 100e9
    fct = out.finish_s - flows.start_s
    assert policy.summary()["ark_races"] == 1
    assert fct.max() == pytest.approx(alone + 0.01, rel=0.02)  # half rate for 20 ms


def test_fallback_when_more_flows_than_spines(tmp_path):
    rows = [(i, 8 + i, GB, i * 1e-4) for i in range(6)]
    res = fabricsim.run(_trace_scenario(tmp_path, rows))
    assert res.summary["ark_fallbacks"] == 2
    assert res.summary["ark_reservations"] == 4
    assert res.summary["ark_messages"] == 8  # 4 RESERVE + 4 RELEASE


def test_ark_keys_only_in_ark_runs_and_runs_are_deterministic():
    sc = load_scenario("ark").with_overrides({"workload.requests": 120})
    ecmp = fabricsim.run(sc)
    assert "ark_races" not in ecmp.summary
    a = fabricsim.run(sc.with_overrides({"lb.policy": "ark"}))
    b = fabricsim.run(sc.with_overrides({"lb.policy": "ark"}))
    assert a.summary == b.summary
    assert {"ark_races", "ark_fallbacks"} <= set(a.summary)
    assert a.summary["bytes_conserved"] and a.summary["flows_completed"] == 120
    np.testing.assert_array_equal(a.flows["size_bytes"], ecmp.flows["size_bytes"])  # paired


def test_ark_on_a_fat_tree_settles_a_synchronized_burst():
    sc = load_scenario("permutation").with_overrides(
        {"lb.policy": "ark", "topology.k": 4, "workload.size_bytes": 50_000_000}
    )
    res = fabricsim.run(sc)
    assert res.summary["flows_completed"] == 16 and res.summary["bytes_conserved"]
    # every flow starts at t = 0, so every controller picks the lowest core; the races then
    # hand out one core per control delay, and the rest fall back to ECMP
    assert res.summary["ark_races"] >= 3
    # stop before any flow completes: every reservation is still held
    eng, policy, _, _ = _engine(sc.with_overrides({"engine.time_limit_s": 1e-3}))
    eng.run()
    held = [c.key_of(f) for c in policy.plane.controllers for f in list(c.flows)]
    held = [k for k in held if k is not None]
    names = sorted(fabric_of(sc).node_names[k] for k in held)
    assert len(held) == len(set(held))  # no core or aggregation switch double-booked
    assert {"core0", "core1", "core2", "core3"} <= set(names)


@pytest.mark.parametrize(
    ("override", "needle"),
    [
        ({"nic.packet_spraying_type": "default"}, "nic.packet_spraying_type=none"),
        ({"switch.hash_method": "random"}, "deterministic switch hash"),
    ],
)
def test_ark_refuses_settings_where_ports_do_not_pick_paths(override, needle):
    sc = load_scenario("ark").with_overrides(
        {"lb.policy": "ark", "workload.requests": 5, **override}
    )
    with pytest.raises(ConfigError, match=needle):
        fabricsim.run(sc)
