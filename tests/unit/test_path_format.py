"""One path format on every fabric (issue 37, item 6): switch names joined by ``>``, no NIC
nodes; and the leaf-to-leaf workload's one-line description names the hosts it pairs."""

import re

import pytest

import fabricsim
from fabricsim.config import TopologyConfig
from fabricsim.experiments.describe import describe_workload
from fabricsim.experiments.runner import fabric_of
from fabricsim.topology import build_fabric
from fabricsim.topology.fabric import NIC, SPINE, label_nodes

NIC_FABRICS = {
    "pxn": {"kind": "rail_optimized", "servers": 2, "rails": 2, "pxn": True},
    "multi_plane": {"kind": "multi_plane", "planes": 2},
}


@pytest.mark.parametrize("name", sorted(NIC_FABRICS))
def test_labels_name_switches_only_on_fabrics_with_nic_nodes(name):
    fab = build_fabric(TopologyConfig(**NIC_FABRICS[name]))
    nics = {fab.node_names[n] for n in range(fab.num_nodes) if fab.node_tier[n] == NIC}
    assert nics  # the fabric has NIC nodes, which the labels used to start (and end) with
    labelled = 0
    for dst in range(1, fab.num_hosts):
        for path in fab.paths(0, dst):
            nodes = fab.path_nodes(path)[1:-1]
            label = fab.path_label(path)
            assert label == ">".join(fab.node_names[n] for n in nodes if fab.node_tier[n] != NIC)
            assert not set(label_nodes(label)) & nics
            labelled += 1
    assert labelled > 0


def test_pxn_and_plain_rail_paths_start_at_a_switch_on_both_engines():
    base = fabricsim.load_scenario("ecmp-collision")
    for pxn in (False, True):
        sc = base.with_overrides(
            {"topology.kind": "rail_optimized", "topology.servers": 2, "topology.rails": 2,
             "topology.pxn": pxn}
        )  # fmt: skip
        fab = fabric_of(sc)
        switches = {fab.node_names[n] for n in range(fab.num_hosts, fab.num_nodes)
                    if fab.node_tier[n] != NIC}  # fmt: skip
        for engine in ("flow", "packet"):
            res = fabricsim.run(sc.with_overrides({"workload.size_bytes": 20_000}), engine=engine)
            for path in res.flows["path"]:
                assert path and set(label_nodes(path)) <= switches, (pxn, engine, path)


def test_leaf_spine_labels_unchanged():
    fab = build_fabric(TopologyConfig(leaves=2, spines=2))
    labels = [fab.path_label(p) for p in fab.paths(0, 8)]
    assert labels == ["leaf0>spine0>leaf1", "leaf0>spine1>leaf1"]
    assert all(fab.node_tier[fab.node_names.index(label_nodes(x)[1])] == SPINE for x in labels)


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"workload.src_leaf": 1, "workload.dst_leaf": 0},
        {"topology.hosts_per_leaf": 4, "topology.leaves": 3, "workload.dst_leaf": 2},
        {"topology.kind": "fat_tree", "topology.k": 4, "workload.dst_leaf": 3},
    ],
)
def test_leaf_to_leaf_description_names_the_hosts_paired(overrides):
    sc = fabricsim.load_scenario("ecmp-collision").with_overrides(overrides)
    text = describe_workload(sc)
    m = re.search(r"host (?:(\d+)\+)?i to host (?:(\d+)\+)?i,", text)
    assert m, text
    src0, dst0 = (int(g or 0) for g in m.groups())
    res = fabricsim.run(sc.with_overrides({"workload.size_bytes": 1000}), engine="flow")
    for i, (src, dst) in enumerate(zip(res.flows["src"], res.flows["dst"], strict=True)):
        assert (src, dst) == (f"host{src0 + i}", f"host{dst0 + i}")
