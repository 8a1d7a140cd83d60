"""Fabric builders: sizes, names, oversubscription, failed and degraded links."""

import numpy as np
import pytest
from routing_cases import ROUTING_FABRICS

import fabricsim
from fabricsim.config import TopologyConfig
from fabricsim.errors import ConfigError
from fabricsim.topology import build_fabric


def test_leaf_spine_shape_and_oversubscription():
    fab = build_fabric(TopologyConfig(leaves=2, spines=4, hosts_per_leaf=8, link_gbps=100))
    assert fab.num_hosts == 16
    assert fab.oversubscription == pytest.approx(2.0)
    assert len(fab.paths(0, 9)) == 4 and len(fab.paths(0, 1)) == 1
    assert "leaf0->spine3" in fab.link_index and "host3->leaf0" in fab.link_index


def test_parallel_links_multiply_paths():
    fab = build_fabric(TopologyConfig(leaves=2, spines=2, hosts_per_leaf=2, parallel_links=3))
    # 2 spines x 3 uplinks each at the leaf, then 3 parallel downlinks at the spine
    assert len(fab.paths(0, 2)) == 2 * 3 * 3
    assert "leaf0->spine1#2" in fab.link_index


@pytest.mark.parametrize("k", [4, 8, 16])
def test_fat_tree_sizes(k):
    fab = build_fabric(TopologyConfig(kind="fat_tree", k=k))
    assert fab.num_hosts == k**3 // 4
    assert len(fab.top_switches) == (k // 2) ** 2
    assert len(fab.paths(0, fab.num_hosts - 1)) == (k // 2) ** 2  # inter-pod
    assert len(fab.paths(0, k // 2)) == k // 2  # same pod, other edge
    assert fab.oversubscription == pytest.approx(1.0)


def test_fat_tree_edge_oversubscription():
    fab = build_fabric(TopologyConfig(kind="fat_tree", k=4, hosts_per_edge=4))
    assert fab.oversubscription == pytest.approx(2.0)
    assert fab.num_hosts == 4 * 2 * 4


def test_failed_link_blackhole_vs_withdraw():
    base = {"leaves": 2, "spines": 2, "hosts_per_leaf": 2, "failed_links": ["leaf0->spine1"]}
    hole = build_fabric(TopologyConfig(**base))
    assert len(hole.paths(0, 2)) == 2  # stays in the group (traffic is lost)
    gone = build_fabric(TopologyConfig(**base, failed_link_mode="withdraw"))
    assert [gone.path_label(p) for p in gone.paths(0, 2)] == ["leaf0>spine0>leaf1"]


def test_degraded_link_rate():
    fab = build_fabric(TopologyConfig(link_gbps=100, degraded_links={"spine0->leaf1": 0.25}))
    link = fab.link_index["spine0->leaf1"]
    assert fab.link_rate_bps[link] == pytest.approx(25e9)
    assert fab.link_nominal_bps[link] == pytest.approx(100e9)


def test_unknown_link_name_is_config_error():
    with pytest.raises(ConfigError, match="topology.failed_links: unknown link 'leaf9->spine0'"):
        build_fabric(TopologyConfig(failed_links=["leaf9->spine0"]))


def _collision(policy_over):
    sc = fabricsim.load_scenario("ecmp-collision").with_overrides(policy_over)
    return fabricsim.run(sc, engine="flow")


def test_blackholed_flows_are_reported_unfinished():
    # fail every spine->leaf1 link but one: flows hashed elsewhere never finish, run ends
    fails = [f"spine{i}->leaf1" for i in range(1, 8)]
    res = _collision({"topology.failed_links": fails})
    done = res.flows["finish_s"].notna()
    on_spine0 = res.flows["path"].str.contains("spine0")
    assert (done == on_spine0).all()
    assert res.summary["flows_completed"] == int(on_spine0.sum()) < 8
    assert res.summary["bytes_conserved"] is True


def test_withdrawn_links_reroute_everything():
    fails = [f"spine{i}->leaf1" for i in range(1, 8)]
    res = _collision({"topology.failed_links": fails, "topology.failed_link_mode": "withdraw"})
    assert res.summary["flows_completed"] == 8
    assert res.flows["path"].eq("leaf0>spine0>leaf1").all()


def test_degraded_spine_slows_its_flows():
    healthy = _collision({"seed": 4})
    spine = healthy.flows["path"][0].split(">")[1]
    slow = _collision({"seed": 4, "topology.degraded_links": {f"{spine}->leaf1": 0.5}})
    assert slow.flows["fct_s"][0] > 1.5 * healthy.flows["fct_s"][0]
    assert np.isclose(slow.summary["bytes_delivered"], slow.summary["bytes_total"])


def test_path_labels_name_parallel_links():
    from fabricsim.topology.fabric import label_hops, label_links, label_nodes

    fab = build_fabric(TopologyConfig(leaves=2, spines=2, hosts_per_leaf=2, parallel_links=3))
    labels = [fab.path_label(p) for p in fab.paths(0, 2)]
    assert len(set(labels)) == len(labels) == 18  # one label per link combination
    assert "leaf0>spine1#2>leaf1#1" in labels and "leaf0>spine0>leaf1" in labels
    for path, label in zip(fab.paths(0, 2), labels, strict=True):
        assert label_links(label) == [fab.link_names[link] for link in path[1:-1]]
        assert label_nodes(label) == [fab.node_names[n] for n in fab.path_nodes(path)[1:-1]]
    assert label_hops("") == [] and label_links("leaf0") == []


def test_path_labels_without_parallel_links_are_switch_names():
    fab = build_fabric(TopologyConfig(kind="fat_tree", k=4))
    for path in fab.paths(0, 15):
        label = fab.path_label(path)
        assert label == ">".join(fab.node_names[n] for n in fab.path_nodes(path)[1:-1])
        assert "#" not in label


def _scipy_distances(f):
    """The reference: scipy's unweighted shortest paths over the same reversed links."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import shortest_path

    n, h = f.num_nodes, f.num_hosts
    ok = np.array([f.usable(link) for link in range(f.num_links)], dtype=bool)
    ok &= (f.link_src >= h) & (f.link_dst >= h)
    graph = csr_matrix((np.ones(int(ok.sum())), (f.link_dst[ok], f.link_src[ok])), shape=(n, n))
    dist = shortest_path(graph, method="D", unweighted=True, indices=f.leaves)
    dist[~np.isfinite(dist)] = -1
    return dist.astype(np.int32)


@pytest.mark.parametrize(
    "name, over",
    [
        ("permutation", {"topology.k": 4}),
        ("permutation", {"topology.k": 8}),
        # a withdrawn uplink set cuts leaf edge0_0 off from agg0_0's side: -1 where unreachable
        (
            "permutation",
            {
                "topology.k": 4,
                "topology.failed_link_mode": "withdraw",
                "topology.failed_links": ["edge0_0->agg0_0", "edge0_0->agg0_1", "agg1_0->core0"],
            },
        ),
        ("incast", {}),
    ],
)
def test_leaf_distances_equal_a_graph_librarys_shortest_paths(name, over):
    from fabricsim.experiments.runner import fabric_of

    f = fabric_of(fabricsim.load_scenario(name).with_overrides(over))
    mine = f._distances()
    assert mine.dtype == np.int32
    h = f.num_hosts
    assert np.array_equal(mine, _scipy_distances(f)[:, h:])  # switch columns
    if "topology.failed_links" in over:  # edge0_0 has no way up: no other leaf is reachable
        e00 = f.node_names.index("edge0_0")
        others = [f._leaf_row[x] for x in f.leaves if x != e00]
        assert (mine[others, e00 - h] == -1).all() and mine[f._leaf_row[e00], e00 - h] == 0


def _groups_by_loop(f, switch: int, dst: int) -> list[int]:
    """An ECMP group as its definition reads: out-links to a switch one hop closer."""
    leaf = int(f.host_leaf[dst])
    if switch == leaf:
        down = int(f.host_downlink[dst])
        return [down] if f.usable(down) else []
    h = f.num_hosts
    dist = f._dist[f._leaf_row[leaf]]  # columns: switch id - h
    if dist[switch - h] < 0:
        return []
    return [
        int(link)
        for link in np.flatnonzero(f.link_src == switch)
        if f.usable(int(link))
        and f.link_dst[link] >= h
        and dist[f.link_dst[link] - h] == dist[switch - h] - 1
    ]


@pytest.mark.parametrize(("name", "over"), ROUTING_FABRICS)
def test_vectorised_ecmp_groups_equal_the_definition(name, over):
    from fabricsim.experiments.runner import fabric_of

    f = fabric_of(fabricsim.load_scenario(name).with_overrides(over))
    for switch in range(f.num_hosts, f.num_nodes):
        for dst in range(f.num_hosts):
            got = f.ecmp_group(switch, dst).tolist()
            assert got == _groups_by_loop(f, switch, dst), (f.node_names[switch], dst)
