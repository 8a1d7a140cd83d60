"""Issue 10 item 3: parallel uplinks are links of their own everywhere a path is named.

With ``topology.parallel_links > 1`` a path label names the parallel link it takes (the link's
suffix on the node it reaches: ``leaf0>spine1#1>leaf3``), so ``fabricsim ports`` lists every
source port, ``flows.parquet`` says which link a flow took, and the uplink diagnostics count
``spines * parallel_links`` uplinks per leaf.  Without parallel links, labels are unchanged.
"""

from __future__ import annotations

import json
import re

import pytest
from harness import run_cli

import fabricsim
from fabricsim.analysis.diagnostics import diagnose, uplink_step_loads
from fabricsim.config import TopologyConfig
from fabricsim.experiments.runner import fabric_of, router_of
from fabricsim.routing.inverse import path_ports
from fabricsim.topology import build_fabric

SPINES = 8  # ecmp-collision: 2 leaves x 8 hosts, 8 spines


def _collision(parallel: int, **more):
    return fabricsim.load_scenario("ecmp-collision").with_overrides(
        {"topology.parallel_links": parallel, **more}
    )


def test_ports_lists_every_port_once_per_parallel_link_path(tmp_path):
    args = ["ports", "--scenario", "ecmp-collision", "--set", "topology.parallel_links=2"]
    outcome = run_cli([*args, "--src-host", "0", "--dst-host", "9", "--json"], tmp_path)
    assert outcome.code == 0, outcome.stderr
    paths = json.loads(outcome.stdout)["paths"]
    assert sum(p["count"] for p in paths.values()) == 65536  # today: ~16k (keys collided)
    assert len(paths) == SPINES * 2 * 2  # 2 uplinks to each spine, 2 downlinks from it
    assert "leaf0>spine1#1>leaf1" in paths and "leaf0>spine1>leaf1#1" in paths
    ports = [port for p in paths.values() for port in p["ports"]]
    assert sorted(ports) == list(range(65536))


def test_each_listed_port_takes_its_labelled_path():
    sc = _collision(3)
    fab = fabric_of(sc)
    router = router_of(sc, fab)
    from fabricsim.topology.fabric import label_links

    result = path_ports(sc, 2, 11)
    assert len(result["paths"]) == SPINES * 3 * 3
    for label, info in result["paths"].items():
        for port in info["ports"][:3]:
            assert fab.path_label(router.route(2, 11, port)) == label
        for name in label_links(label):
            assert name in fab.link_index, name  # labels name real links


def test_flow_run_says_which_parallel_link_each_flow_took():
    res = fabricsim.run(_collision(2))
    paths = res.flows["path"].tolist()
    assert any("#1" in p for p in paths)  # today: switch names only
    fab = fabric_of(res.scenario)
    router = router_of(res.scenario, fab)
    host = {name: i for i, name in enumerate(fab.host_names)}
    for row in res.flows.itertuples():
        route = router.route(host[row.src], host[row.dst], int(row.entropy))
        assert fab.path_label(route) == row.path


def test_packet_run_names_parallel_links_too():
    res = fabricsim.run(_collision(2, **{"workload.size_bytes": 200_000}), engine="packet")
    assert any("#1" in p for p in res.flows["path"])


def test_packet_spine_peaks_count_flows_over_parallel_links():
    from fabricsim.topology.fabric import label_nodes

    res = fabricsim.run(_collision(2, **{"workload.size_bytes": 200_000}), engine="packet")
    crossed = {node for p in res.flows["path"] for node in label_nodes(p) if "spine" in node}
    peaks = res.summary["spine_peak_flows"]
    assert {s for s, v in peaks.items() if v > 0} == crossed


@pytest.mark.parametrize("parallel", [1, 2, 4])
def test_diagnostics_count_every_parallel_uplink(parallel):
    res = fabricsim.run(_collision(parallel))
    steps = diagnose(res).uplink_steps
    leaf = steps[steps["tier"] == "leaf"]
    assert len(leaf) and (leaf["uplinks"] == SPINES * parallel).all()  # today: SPINES
    row = leaf.iloc[0]
    assert row["flows"] == 8 and row["idle_uplinks"] >= SPINES * parallel - 8
    busiest = str(row["busiest"])
    assert re.fullmatch(r"spine\d+(#\d+)?", busiest)


def test_diagnostics_split_bytes_over_parallel_links():
    """Two flows on the two parallel links of one spine are two uplinks with one flow each."""
    import pandas as pd

    fab = build_fabric(TopologyConfig(leaves=2, spines=1, hosts_per_leaf=2, parallel_links=2))
    flows = pd.DataFrame(
        {
            "path": ["leaf0>spine0>leaf1", "leaf0>spine0#1>leaf1"],
            "size_bytes": [100, 100],
            "start_s": [0.0, 0.0],
        }
    )
    row = uplink_step_loads(flows, fab).iloc[0]
    assert (row["uplinks"], row["idle_uplinks"], row["max_over_mean"]) == (2, 0, 1.0)


@pytest.mark.parametrize(
    "topo",
    [
        TopologyConfig(leaves=2, spines=4, hosts_per_leaf=4),
        TopologyConfig(kind="fat_tree", k=4),
    ],
)
def test_labels_without_parallel_links_are_unchanged(topo):
    fab = build_fabric(topo)
    for src, dst in ((0, fab.num_hosts - 1), (0, 1), (1, fab.num_hosts // 2)):
        for path in fab.paths(src, dst):
            old = ">".join(fab.node_names[n] for n in fab.path_nodes(path)[1:-1])
            assert fab.path_label(path) == old and "#" not in old
