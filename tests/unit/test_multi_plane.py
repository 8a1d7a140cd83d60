"""Multi-plane / dual-ToR fabrics (``topology.kind: multi_plane``, issue 16 item 2)."""

from __future__ import annotations

import numpy as np
import pytest

import fabricsim
from fabricsim.analysis.diagnostics import uplink_step_loads
from fabricsim.config import TopologyConfig, load_scenario
from fabricsim.errors import ConfigError, EngineRefusal
from fabricsim.experiments.engines import check_supported
from fabricsim.lb.ark import port_table
from fabricsim.routing.router import Router
from fabricsim.topology.builders import build_fabric
from fabricsim.topology.fabric import NIC, label_links

PLANES = {"kind": "multi_plane", "planes": 2, "leaves": 4, "hosts_per_leaf": 4, "spines": 2}


def _scenario(topology=None, **sections):
    return load_scenario(
        {
            "name": "planes",
            "topology": {**PLANES, **(topology or {})},
            "workload": {"kind": "permutation", "size_bytes": 400_000},
            **sections,
        }
    )


def _plane(path: str) -> set[str]:
    """Planes a path label (or a ';'-joined set of them) crosses."""
    return {hop[:2] for label in path.split(";") for hop in label.split(">") if hop[0] == "p"}


def test_every_host_has_one_port_into_each_plane():
    fab = build_fabric(TopologyConfig(**PLANES, link_gbps=100))
    assert fab.num_hosts == 16 and fab.planes == 2
    for h in range(16):
        nic = int(fab.host_leaf[h])
        assert fab.node_names[nic] == f"nic{h}" and fab.node_tier[nic] == NIC
        up = fab.link_index[f"host{h}->nic{h}"]
        assert fab.link_rate_bps[up] == 200e9 and fab.link_delay_ps[up] == 0  # both ports
        for p in range(2):
            port = fab.link_index[f"nic{h}->p{p}_leaf{h // 4}"]
            assert fab.link_rate_bps[port] == 100e9 and fab.link_delay_ps[port] == 1_000_000
    paths = fab.paths(0, 15)
    assert len(paths) == 4  # 2 planes x 2 spines
    assert sorted({next(iter(_plane(fab.path_label(p)))) for p in paths}) == ["p0", "p1"]
    assert all(len(_plane(fab.path_label(p))) == 1 for p in paths)  # no path changes plane
    assert fab.oversubscription == pytest.approx(4 * 100 / (2 * 100))
    tree = build_fabric(TopologyConfig(kind="multi_plane", plane_kind="fat_tree", k=4))
    assert tree.num_hosts == 16 and len(tree.paths(0, 15)) == 2 * 4
    assert len(tree.top_switches) == 2 * 4  # the cores of both planes


def test_per_host_nic_rates_set_each_port_and_the_sum():
    fab = build_fabric(TopologyConfig(**PLANES, host_nic_gbps={3: 400}))
    assert fab.link_rate_bps[fab.link_index["nic3->p1_leaf0"]] == 400e9
    assert fab.link_rate_bps[fab.link_index["host3->nic3"]] == 800e9
    assert fab.link_rate_bps[fab.link_index["host2->nic2"]] == 200e9


def test_hash_sends_a_connection_on_one_plane_and_spraying_over_both(tmp_path):
    res = fabricsim.run(_scenario(), engine="flow")
    planes = res.flows["path"].map(_plane)
    assert all(len(p) == 1 for p in planes) and {"p0", "p1"} == set().union(*planes)
    sprayed = _scenario(
        nic={"packet_spraying_type": "oblivious"}, records={"port_stats": True},
        workload={"kind": "permutation", "size_bytes": 2_000_000},
    )  # fmt: skip
    res = fabricsim.run(sprayed, engine="packet")
    assert res.summary["flows_completed"] == 16
    ports = res.tables["port_stats"]
    nic_ports = ports[ports.link.str.match(r"nic\d+->p\d_")]
    per_plane = nic_ports.groupby(nic_ports.link.str.extract(r"->(p\d)_")[0])["bytes"].sum()
    assert len(per_plane) == 2
    assert per_plane.max() / per_plane.min() - 1 < 0.05, per_plane.to_dict()


def test_round_robin_alternates_hosts_and_values_over_the_planes():
    res = fabricsim.run(_scenario(nic={"plane_select": "round_robin"}), engine="flow")
    planes = [next(iter(_plane(p))) for p in res.flows["path"]]
    hosts = res.flows["src"].str.removeprefix("host").astype(int)
    assert planes == [f"p{h % 2}" for h in hosts]  # each host's first flow: plane h mod 2
    packet = fabricsim.run(_scenario(nic={"plane_select": "round_robin"}), engine="packet")
    assert list(packet.flows["path"]) == list(res.flows["path"])


def test_pinned_keeps_every_flow_on_its_plane_and_checks_it_exists():
    sc = _scenario(nic={"plane_select": "pinned", "pinned_plane": 1})
    for engine in ("flow", "packet"):
        res = fabricsim.run(sc, engine=engine)
        assert {next(iter(_plane(p))) for p in res.flows["path"]} == {"p1"}
    with pytest.raises(ConfigError, match=r"nic.pinned_plane: plane 2 does not exist"):
        fabricsim.run(_scenario(nic={"plane_select": "pinned", "pinned_plane": 2}))


@pytest.mark.parametrize("rule", ["hash", "round_robin", "pinned"])
def test_a_failed_tor_leaves_the_other_plane(rule):
    sc = _scenario(
        {"failed_switches": ["p1_leaf0"]},
        nic={"plane_select": rule, **({"pinned_plane": 1} if rule == "pinned" else {})},
    )
    for engine in ("flow", "packet"):
        res = fabricsim.run(sc, engine=engine)
        assert res.summary["flows_completed"] == 16, engine
        paths = res.flows["path"]
        assert not paths.str.contains("p1_leaf0").any()
        hosts = res.flows["src"].str.removeprefix("host").astype(int)
        dsts = res.flows["dst"].str.removeprefix("host").astype(int)
        under = (hosts < 4) | (dsts < 4)  # a host of the failed ToR, at either end
        assert (paths[under].map(_plane) == {"p0"}).all()
        fab = fabricsim.experiments.runner.fabric_of(sc)
        for label in paths:  # labels name switches only; a path never crosses a third host's
            # NIC (no NIC forwards): every hop of the label is one switch-to-switch link
            assert not any(hop.startswith("nic") for hop in label.split(">"))
            assert all(name in fab.link_index for name in label_links(label))


def test_a_failed_plane_leaves_the_other():
    spines = [f"p0_spine{i}" for i in range(2)]
    res = fabricsim.run(_scenario({"failed_switches": spines}), engine="packet")
    assert res.summary["flows_completed"] == 16
    far = res.flows["path"].str.count(">") > 0  # via the spines: plane 1 only
    assert (res.flows["path"][far].map(_plane) == {"p1"}).all()


def test_bad_plane_input_is_one_line():
    with pytest.raises(ConfigError, match=r"topology.failed_switches: unknown switch 'leaf0'"):
        build_fabric(TopologyConfig(**PLANES, failed_switches=["leaf0"]))
    with pytest.raises(EngineRefusal, match=r"topology.planes does nothing on topology.kind=leaf"):
        check_supported(
            load_scenario("ecmp-collision").with_overrides({"topology.planes": 4}), "flow"
        )
    with pytest.raises(EngineRefusal, match=r"nic.plane_select=round_robin is read only when"):
        check_supported(
            load_scenario("ecmp-collision").with_overrides({"nic.plane_select": "round_robin"}),
            "flow",
        )
    with pytest.raises(EngineRefusal, match=r"topology.k does nothing on topology.plane_kind"):
        check_supported(_scenario({"k": 6}), "flow")


def test_ark_reserves_per_plane_spine_and_diagnostics_see_the_nic_stage():
    sc = _scenario()
    fab = build_fabric(sc.topology)
    router = Router.for_scenario(sc, fab)
    table = port_table(router, 0, 15)
    names = sorted(fab.node_names[u] for u in table.keys)
    assert names == ["p0_spine0", "p0_spine1", "p1_spine0", "p1_spine1"]
    assert sum(len(p) for p in table.ports) == 65536
    ark = _scenario(
        lb={"policy": "ark"},
        workload={"kind": "kv_cache", "requests": 40, "qps": 20, "prompt": "fixed",
                  "prompt_tokens": 2000},
    )  # fmt: skip
    res = fabricsim.run(ark, engine="flow")
    assert res.summary["flows_completed"] == 40
    assert set().union(*res.flows["path"].map(_plane)) == {"p0", "p1"}  # ARK uses both planes
    steps = uplink_step_loads(fabricsim.run(sc, engine="flow").flows, fab, min_flows=1)
    nics = steps[steps["switch"].str.startswith("nic")]  # the plane choice is a stage
    assert len(nics) == 16 and (nics["uplinks"] == 2).all()


def test_ports_inverse_splits_over_the_planes():
    sc = _scenario()
    fab = build_fabric(sc.topology)
    router = Router.for_scenario(sc, fab)
    split = router.ports_per_path(0, 15)
    by_plane: dict[str, int] = {}
    for path, ports in split.items():
        plane = next(iter(_plane(fab.path_label(path))))
        by_plane[plane] = by_plane.get(plane, 0) + len(ports)
    assert sum(by_plane.values()) == 65536
    assert abs(by_plane["p0"] - 32768) < 1000  # the NIC's hash: about half each
    many = router.route_many(np.zeros(200, int), np.full(200, 15), np.arange(200))
    assert many == [router.route(0, 15, p) for p in range(200)]


def test_switch_methods_act_inside_the_plane_the_nic_chose():
    sc = _scenario(switch={"load_balancing_method": "adaptive"})
    res = fabricsim.run(sc, engine="packet")
    assert res.summary["flows_completed"] == 16 and res.summary["bytes_conserved"] is True
    hashed = fabricsim.run(_scenario(), engine="flow")
    for adaptive, plain in zip(res.flows["path"], hashed.flows["path"], strict=True):
        assert _plane(adaptive) == _plane(plain)  # the NIC's plane, whatever the switches do


def test_compare_and_the_report_run_on_the_hpn_example(tmp_path, monkeypatch):
    from pathlib import Path

    from fabricsim.cli import main

    example = Path(__file__).resolve().parents[2] / "examples" / "hpn_dual_plane.yaml"
    monkeypatch.chdir(tmp_path)
    fluid = ["--engine", "flow", "--set", "nic.packet_spraying_type=oblivious"]  # no REPS there
    assert main(["compare", str(example), *fluid, "--out", "C", "--quiet"]) == 0
    table = (tmp_path / "C" / "compare.csv").read_text()
    assert table.startswith("method,") and "ecmp" in table and "ideal_spray" in table
    assert main(["run", str(example), *fluid, "--out", "R", "--quiet"]) == 0
    assert main(["report", "R"]) == 0 and (tmp_path / "R" / "report.html").stat().st_size > 0


@pytest.mark.parametrize(
    "topology",
    [
        {**PLANES, "failed_switches": ["p0_spine1"]},
        {"kind": "multi_plane", "planes": 3, "plane_kind": "fat_tree", "k": 8,
         "failed_switches": ["p1_edge0_0", "p2_core3"], "failed_link_mode": "withdraw",
         "failed_links": ["p0_agg1_0->p0_core2"]},
        {"kind": "rail_optimized", "servers": 6, "rails": 4, "spines": 2, "pxn": True,
         "servers_per_leaf": 2, "failed_switches": ["nvs1"]},
    ],
)  # fmt: skip
def test_nic_distances_from_their_neighbours_equal_the_full_search(topology):
    fab = build_fabric(TopologyConfig(**topology))
    assert np.array_equal(fab._distances(), fab._distances(direct=True))
