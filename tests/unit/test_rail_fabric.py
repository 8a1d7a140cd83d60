"""Rail-optimized fabrics (``topology.kind: rail_optimized``, issue 16 item 1, without PXN)."""

from __future__ import annotations

import pytest

import fabricsim
from fabricsim.config import TopologyConfig, load_scenario
from fabricsim.errors import ConfigError
from fabricsim.experiments.engines import check_supported
from fabricsim.topology.builders import build_fabric

RAILS = {"kind": "rail_optimized", "servers": 4, "rails": 8, "spines": 4, "link_gbps": 100}


def test_gpu_r_of_every_server_sits_on_rail_r():
    fab = build_fabric(TopologyConfig(**RAILS))
    assert fab.num_hosts == 32 and len(fab.leaves) == 8
    for h in range(32):
        server, rail = divmod(h, 8)
        assert fab.node_names[fab.host_leaf[h]] == f"rail{rail}_leaf0"
    assert fab.paths(0, 8) == [(fab.host_uplink[0], fab.host_downlink[8])]  # same rail: the leaf
    assert len(fab.paths(0, 1)) == 4  # another rail: through the spines
    split = build_fabric(TopologyConfig(**{**RAILS, "servers_per_leaf": 2}))
    assert len(split.leaves) == 16 and split.node_names[split.host_leaf[16]] == "rail0_leaf1"
    assert split.oversubscription == pytest.approx(2 * 100 / (4 * 100))


def _bytes(tmp_path, rows: list[tuple[str, str]], engine: str = "packet", **topology):
    trace = tmp_path / "t.csv"
    lines = ["src,dst,size_bytes,start_s"] + [f"{a},{b},200000,0" for a, b in rows]
    trace.write_text("\n".join(lines) + "\n")
    sc = load_scenario(
        {
            "name": "rails",
            "topology": {**RAILS, **topology},
            "workload": {"kind": "trace", "path": str(trace)},
            "records": {"port_stats": True},
        }
    )
    res = fabricsim.run(sc, engine=engine)
    assert res.summary["flows_completed"] == len(rows)
    ports = res.tables["port_stats"]
    return int(ports[ports.link.str.contains("spine")]["bytes"].sum()), res


def test_same_rail_all_to_all_never_touches_a_spine(tmp_path):
    rail3 = [f"{s}:3" for s in range(4)]  # addressed as server:rail
    rows = [(a, b) for a in rail3 for b in rail3 if a != b]
    spine_bytes, res = _bytes(tmp_path, rows)
    assert spine_bytes == 0
    assert set(res.flows["src"]) == {"host3", "host11", "host19", "host27"}


def test_cross_rail_traffic_crosses_the_spines(tmp_path):
    spine_bytes, _ = _bytes(tmp_path, [("0:0", "1:5"), ("2:1", "3:2")])
    assert spine_bytes > 2 * 200_000


def test_the_flow_engine_runs_it_too():
    sc = load_scenario({"name": "rails", "topology": RAILS, "workload": {"kind": "permutation"}})
    check_supported(sc, "flow")
    s = fabricsim.run(sc, engine="flow").summary
    assert s["flows_completed"] == s["flows_total"] == 32


def test_server_rail_cells_are_checked(tmp_path):
    trace = tmp_path / "bad.csv"
    trace.write_text("src,dst,size_bytes,start_s\n0:9,1:0,1000,0\n")
    with pytest.raises(ConfigError, match=r"0:9 is not a GPU"):
        fabricsim.run(
            {"name": "x", "topology": RAILS, "workload": {"kind": "trace", "path": str(trace)}}
        )
    other = {"name": "x", "workload": {"kind": "trace", "path": str(trace)}}
    with pytest.raises(ConfigError, match="needs a rail_optimized fabric"):
        fabricsim.run(other)


def test_shape_keys_of_another_kind_are_refused():
    sc = load_scenario({"name": "x", "workload": {"kind": "permutation"}}).with_overrides(
        {"topology.rails": 4}
    )
    with pytest.raises(fabricsim.errors.EngineRefusal, match="topology.rails does nothing"):
        check_supported(sc, "flow")


def _nvlink_bytes(res) -> int:
    ports = res.tables["port_stats"]
    return int(ports[ports.link.str.contains("nvs")]["bytes"].sum())


def test_pxn_sends_cross_rail_traffic_over_nvlink_then_one_rail(tmp_path):
    rows = [("0:0", "1:5"), ("2:1", "3:2"), ("1:7", "0:0")]
    spine_bytes, res = _bytes(tmp_path, rows, pxn=True)
    assert spine_bytes == 0 and _nvlink_bytes(res) >= 3 * 200_000
    assert list(res.flows["path"]) == [
        "nvs0>rail5_leaf0",  # NVLink to GPU 5 of server 0 (its NIC), then rail 5
        "nvs2>rail2_leaf0",
        "nvs1>rail0_leaf0",
    ]
    ports = res.tables["port_stats"].set_index("link")
    assert ports.loc["nic5->rail5_leaf0", "bytes"] >= 200_000  # the proxy GPU's NIC carries it
    nvlink = ports.loc["nic0->nvs0"]
    assert nvlink["rate_bps"] == 3600e9 and nvlink["trims"] == nvlink["drops"] == 0
    same_rail, res = _bytes(tmp_path, [("0:3", "2:3")], pxn=True)
    assert same_rail == 0 and _nvlink_bytes(res) == 0 and res.flows["path"][0] == "rail3_leaf0"
    flow = fabricsim.run(
        load_scenario(
            {"name": "pxn", "topology": {**RAILS, "pxn": True}, "workload": {"kind": "permutation"}}
        ),
        engine="flow",
    )
    cross = flow.flows[flow.flows["path"].str.contains("nvs")]
    assert len(cross) and not cross["path"].str.contains("spine").any()
    assert flow.summary["flows_completed"] == 32


def test_pxn_keeps_the_spines_where_nvlink_is_no_shorter(tmp_path):
    """Several leaf groups per rail: to another group, NVLink would add hops; the spines
    carry it from the source's own rail (PXN within a rail group only)."""
    spine_bytes, res = _bytes(tmp_path, [("0:0", "3:1")], pxn=True, servers_per_leaf=2)
    assert spine_bytes > 0 and _nvlink_bytes(res) == 0
    assert res.flows["path"][0].startswith("rail0_leaf0>spine")


def test_pxn_without_the_rail_kind_is_refused():
    sc = load_scenario({"name": "x", "workload": {"kind": "permutation"}}).with_overrides(
        {"topology.pxn": True}
    )
    with pytest.raises(fabricsim.errors.EngineRefusal, match="topology.pxn does nothing"):
        check_supported(sc, "flow")
    rail = load_scenario({"name": "x", "topology": RAILS, "workload": {"kind": "permutation"}})
    with pytest.raises(fabricsim.errors.EngineRefusal, match="nvlink_gbps=900.0 is read only"):
        check_supported(rail.with_overrides({"topology.nvlink_gbps": 900}), "flow")
