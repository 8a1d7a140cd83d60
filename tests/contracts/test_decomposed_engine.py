"""The decomposed engine: its outputs, its determinism across workers and backends, its
refusals, and the pieces of its pipeline against hand-computed cases."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import fabricsim
from fabricsim.config.loader import load_scenario
from fabricsim.decomposed.cluster import representatives
from fabricsim.decomposed.compose import bottleneck_shares, sample_by_class, scaled
from fabricsim.decomposed.link_fabric import LinkSpec
from fabricsim.decomposed.link_workloads import DOWN, MIDDLE, UP
from fabricsim.errors import EngineRefusal

SMALL = {"topology.k": 4, "workload.size_bytes": 500_000}


def _trace(tmp_path: Path, rows: list[tuple[int, int, int, float]]) -> str:
    p = tmp_path / "t.csv"
    pd.DataFrame(rows, columns=["src", "dst", "size_bytes", "start_s"]).to_csv(p, index=False)
    return str(p)


def test_a_run_has_the_outputs_of_the_other_engines_and_its_own_counts() -> None:
    res = fabricsim.run(load_scenario("permutation").with_overrides(SMALL), engine="decomposed")
    s = res.summary
    assert s["engine"] == "decomposed" and s["flows_completed"] == s["flows_total"] == 16
    assert s["bytes_conserved"] and s["flows_not_completed"] == 0
    assert s["links_total"] == 96 and 0 < s["links_simulated"] <= s["links_loaded"] <= 96
    assert s["largest_link_simulation"]["packets"] > 0 and s["approximate"] == []
    assert list(res.flows.columns[:6]) == [
        "flow_id",
        "src",
        "dst",
        "size_bytes",
        "start_s",
        "finish_s",
    ]
    assert (res.flows["fct_s"] > 0).all() and (res.flows["path"].str.len() > 0).all()
    assert {"routing_s", "link_sims_s", "composition_s"} <= set(res.timing)


def test_a_flow_alone_finishes_as_on_the_packet_engine(tmp_path: Path) -> None:
    """Every link of a lone flow is quiet: its FCT is its ideal one, the packet engine's."""
    sc = load_scenario("permutation").with_overrides(
        {
            "topology.k": 4,
            "workload": {"kind": "trace", "path": _trace(tmp_path, [(0, 15, 10**6, 0.0)])},
        }
    )
    dec = fabricsim.run(sc, engine="decomposed")
    pkt = fabricsim.run(sc, engine="packet")
    assert dec.summary["links_simulated"] == 0 and dec.summary["links_quiet"] == 6
    assert dec.flows["fct_s"][0] == pytest.approx(pkt.flows["fct_s"][0], rel=1e-9)


def test_two_flows_sharing_one_downlink_are_delayed_as_on_the_packet_engine(tmp_path: Path) -> None:
    """A 2-to-1 incast queues at one link only: its simulation is the whole story."""
    rows = [(0, 15, 2 * 10**6, 0.0), (4, 15, 2 * 10**6, 0.0)]
    sc = load_scenario("permutation").with_overrides(
        {"topology.k": 4, "workload": {"kind": "trace", "path": _trace(tmp_path, rows)}}
    )
    dec = fabricsim.run(sc, engine="decomposed").flows["fct_s"].to_numpy()
    pkt = fabricsim.run(sc, engine="packet").flows["fct_s"].to_numpy()
    alone = fabricsim.run(sc, engine="flow").flows["fct_s"].to_numpy()
    assert dec.mean() > 1.5 * (alone.mean() / 2)  # they did share the link
    assert dec.mean() == pytest.approx(pkt.mean(), rel=0.1)


@pytest.mark.full
def test_output_is_byte_identical_on_one_or_two_workers_and_on_dask(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    sc = load_scenario("permutation").with_overrides(
        {**SMALL, "engine.decomposed.cluster_tolerance": 0.0}
    )
    one = fabricsim.run(sc, engine="decomposed")
    two = fabricsim.run(sc, engine="decomposed", workers=2)
    with distributed.LocalCluster(
        processes=True, n_workers=2, threads_per_worker=1, dashboard_address=None
    ) as cluster:
        dask = fabricsim.run(sc, engine="decomposed", scheduler=cluster.scheduler_address)
    for other in (two, dask):
        pd.testing.assert_frame_equal(one.flows, other.flows)
        assert json.dumps(one.summary, sort_keys=True) == json.dumps(other.summary, sort_keys=True)
    assert one.summary["links_simulated"] > 1


@pytest.mark.parametrize(
    ("sets", "says"),
    [
        ({"nic.packet_spraying_type": "reps"}, "use --engine packet"),
        ({"switch.load_balancing_method": "adaptive"}, "use --engine packet"),
        ({"records.port_stats": True}, "decomposed engine does not model"),
        ({"engine.flow_solver": "reference"}, "read only by the flow engine"),
    ],
)
def test_what_it_cannot_decompose_is_refused_in_one_line(sets: dict, says: str) -> None:
    sc = load_scenario("permutation").with_overrides({**SMALL, **sets})
    with pytest.raises(EngineRefusal) as err:
        fabricsim.run(sc, engine="decomposed")
    assert says in str(err.value) and "\n" not in str(err.value)


def test_a_closed_loop_workload_is_refused_naming_an_engine_that_runs_it() -> None:
    sc = load_scenario("permutation").with_overrides(
        {"topology.k": 4, "workload": {"kind": "collective", "op": "ring_allreduce"}}
    )
    with pytest.raises(EngineRefusal, match="workload.kind=collective .*use --engine flow"):
        fabricsim.run(sc, engine="decomposed")


def test_the_packet_engine_refuses_its_knobs_and_pfc_is_flagged_approximate() -> None:
    sc = load_scenario("permutation").with_overrides(
        {**SMALL, "engine.decomposed.cluster_tolerance": 0.5}
    )
    with pytest.raises(EngineRefusal, match="read only by the decomposed engine"):
        fabricsim.run(sc, engine="packet")
    pfc = load_scenario("permutation").with_overrides({**SMALL, "nic.transport": "roce"})
    with pytest.warns(UserWarning, match="approximate: switch.pfc"):
        res = fabricsim.run(pfc, engine="decomposed")
    assert res.summary["approximate"][0].startswith("switch.pfc")


# -- the pieces ---------------------------------------------------------------------------------
def _spec(position: int, senders: int = 2) -> LinkSpec:
    return LinkSpec(
        name="x->y", position=position, rate_bps=5e10, nominal_bps=1e11, delay_ps=10**6,
        sender=np.arange(senders), sender_bps=np.full(senders, 1e11),
        sender_delay_ps=np.full(senders, 2 * 10**6), receiver=np.zeros(senders, np.int64),
        receiver_delay_ps=np.array([3 * 10**6]), size_bytes=np.full(senders, 10**5),
        start_s=np.zeros(senders), src_port=np.arange(senders), cap_bps=None,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("position", "target"), [(UP, "host0->leaf0"), (MIDDLE, "leaf0->leaf1"), (DOWN, "leaf1->host2")]
)
def test_the_link_keeps_its_rate_and_delay_where_it_queues(position: int, target: str) -> None:
    spec = _spec(position, senders=1 if position == UP else 2)
    fab = spec.fabric()
    at = fab.link_index[target if position != DOWN else f"leaf1->host{len(spec.sender_bps)}"]
    assert fab.link_rate_bps[at] == 5e10 and fab.link_nominal_bps[at] == 1e11
    path = fab.paths(0, fab.num_hosts - 1)[0]
    assert sum(int(fab.link_delay_ps[x]) for x in path) == 6 * 10**6  # 2 + 1 + 3 us kept


def test_links_alike_are_simulated_once_through_the_median_loaded() -> None:
    hard = np.zeros((5, 1))
    soft = np.array([[10.0], [10.5], [30.0], [10.2], [10.1]])
    load = np.array([1.0, 4.0, 3.0, 2.0, 3.0])
    assert representatives(hard, soft, load, 0.2).tolist() == [3, 3, 2, 3, 3]
    hard, soft = hard[:3], soft[:3]
    assert representatives(hard, soft, np.array([1.0, 2.0, 3.0]), 0.0).tolist() == [0, 1, 2]


def test_sampled_delays_come_from_the_same_size_class() -> None:
    rng = np.random.default_rng(3)
    sizes = np.array([1000, 1100, 10**6, 1_100_000])
    delays = np.array([1.0, 1.0, 7.0, 7.0])
    got = sample_by_class(sizes, delays, np.array([1050, 1_050_000, 900] * 10), rng)
    assert got.tolist() == [1.0, 7.0, 1.0] * 10


def test_delays_added_at_the_same_time_overlap_and_at_different_times_add_up() -> None:
    from types import SimpleNamespace

    def shares(second_start: float) -> np.ndarray:
        # flow 0 crosses links A and B; flow 1 shares A, flow 2 shares B from second_start
        routes = SimpleNamespace(
            ideal_s=np.array([1.0, 0.5, 0.5]), start_s=np.array([0.0, 0.0, second_start]),
            coef=np.ones(4),
        )  # fmt: skip
        w = SimpleNamespace(
            flow=np.array([0, 1, 0, 2]), links=np.array([0, 1]), ptr=np.array([0, 2, 4]),
            start_s=routes.start_s[[0, 1, 0, 2]], sender_bps=np.ones(4),
            rows=lambda i: slice(2 * i, 2 * i + 2),
        )  # fmt: skip
        return bottleneck_shares(routes, w, np.array([0.5, 0.5, 0.5, 0.5]), np.ones(2))

    together, apart = shares(0.0), shares(0.75)
    assert together[[0, 2]].tolist() == [0.5, 0.5]  # both links at once: half the delay each
    assert apart[0] == pytest.approx(0.9) and apart[2] == pytest.approx(0.875)  # 1.775 in all


def test_scaled_takes_the_flow_engine_fct_times_its_worst_link_ratio() -> None:
    from types import SimpleNamespace

    # flow 0 on links A (ratio 1.2) and B (1.5); flow 1 sprayed half on C (ratio 3): 1 + 0.5*2;
    # flow 2's link did not finish it; flow 3 cannot be routed
    routes = SimpleNamespace(
        ideal_s=np.array([1.0, 1.0, 1.0, np.inf]), start_s=np.array([0.0, 1.0, 0.0, 0.0]),
        coef=np.array([1.0, 1.0, 0.5, 1.0]),
        flow_out=SimpleNamespace(finish_s=np.array([2.0, 5.0, 1.0, np.nan])),
    )  # fmt: skip
    w = SimpleNamespace(flow=np.array([0, 0, 1, 2]), row=np.array([0, 1, 2, 3]))
    got = scaled(routes, w, np.array([1.2, 1.5, 3.0, np.nan]))
    assert got[:2].tolist() == [3.0, 8.0] and np.isnan(got[2:]).all()


def test_scaled_keeps_a_lone_flow_and_a_two_to_one_incast_near_the_packet_engine(
    tmp_path: Path,
) -> None:
    rows = [(0, 15, 2 * 10**6, 0.0), (4, 15, 2 * 10**6, 0.0), (8, 9, 10**6, 0.0)]
    sc = load_scenario("permutation").with_overrides(
        {
            "topology.k": 4,
            "workload": {"kind": "trace", "path": _trace(tmp_path, rows)},
        }
    )
    scaled_sc = sc.with_overrides({"engine.decomposed.aggregate": "scaled"})
    dec = fabricsim.run(scaled_sc, engine="decomposed").flows["fct_s"].to_numpy()
    pkt = fabricsim.run(sc, engine="packet").flows["fct_s"].to_numpy()
    flow = fabricsim.run(sc, engine="flow").flows["fct_s"].to_numpy()
    assert dec[2] == pytest.approx(flow[2], rel=1e-9)  # alone: quiet links, ratio 1
    assert dec[:2].mean() > flow[:2].mean()  # the link's packet effects on top of sharing
    assert dec[:2].mean() == pytest.approx(pkt[:2].mean(), rel=0.1)


def test_its_budget_counts_its_rows_and_its_largest_link_simulation() -> None:
    from fabricsim.errors import ConfigError
    from fabricsim.experiments.budget import check_budget, estimate

    sc = load_scenario("permutation").with_overrides({"topology.k": 32})
    est = estimate(sc, "decomposed")
    assert {"route rows", "link simulation"} <= set(est.breakdown)
    assert est.packets > estimate(sc, "packet").packets  # every link's packets, summed
    with pytest.raises(ConfigError, match="engine.max_memory_gb"):
        check_budget(sc.with_overrides({"engine.max_memory_gb": 0.01}), "decomposed")


def test_a_comparison_plans_decomposed_runs_without_the_timelines_it_cannot_record() -> None:
    from fabricsim.experiments.plan import plan_methods

    sc = load_scenario("permutation").with_overrides(SMALL)
    (spec,) = plan_methods(sc, "decomposed", ["pinned"], 1)
    assert spec.scenario["records"]["timelines"] is False
    assert plan_methods(sc, "flow", ["pinned"], 1)[0].scenario["records"]["timelines"] is True
