"""The ECMP DAG's link shares (routing.dag) against enumerating every path (Fabric.paths)."""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim.config import TopologyConfig
from fabricsim.routing.dag import MAX_PATH_LABELS, PairDags
from fabricsim.topology import build_fabric

PKT = 4184

FABRICS = {
    "leaf_spine": dict(kind="leaf_spine", leaves=4, spines=3, hosts_per_leaf=2),
    "parallel": dict(kind="leaf_spine", leaves=3, spines=2, hosts_per_leaf=2, parallel_links=2),
    "fat_tree": dict(kind="fat_tree", k=4),
    "fat_tree_failed": dict(
        kind="fat_tree",
        k=4,
        failed_links=["agg0_0->core0", "core3->agg2_1", "edge1_0->agg1_1"],
        failed_link_mode="withdraw",
    ),
    "fat_tree_blackhole": dict(
        kind="fat_tree", k=4, failed_links=["agg0_0->core0", "core3->agg2_1"]
    ),
    "multi_plane": dict(kind="multi_plane", planes=2, leaves=2, spines=2, hosts_per_leaf=2),
    "rail": dict(kind="rail_optimized", rails=4),
    "rail_pxn": dict(kind="rail_optimized", rails=4, pxn=True),
}


def _enumerated(fab, src: int, dst: int, even: bool):
    """Shares, worst and best delays, by walking every path (per stage: weight = product of
    1 / group size over the path's stages)."""
    delay, serial = fab.hop_ps(PKT)
    use: dict[int, float] = {}
    paths = fab.paths(src, dst)
    worst, best = -1, -1
    for p in paths:
        w = 1.0 / len(paths)
        if not even:
            w = 1.0
            for link in p[1:]:
                w /= len(fab.ecmp_group(int(fab.link_src[link]), dst))
        for link in p:
            use[link] = use.get(link, 0.0) + w
        t = fab.unloaded_delay_ps(p, PKT, first_hop=False)
        worst, best = max(worst, t), t if best < 0 else min(best, t)
    return paths, use, worst, best


@pytest.mark.parametrize("name", sorted(FABRICS))
@pytest.mark.parametrize("even", [True, False])
def test_dag_shares_equal_enumerated_paths(name: str, even: bool) -> None:
    fab = build_fabric(TopologyConfig(**FABRICS[name]))
    dags = PairDags(fab, PKT)
    rng = np.random.default_rng(len(name))
    pairs = [(0, fab.num_hosts - 1), (0, 1)] + [
        tuple(int(x) for x in rng.choice(fab.num_hosts, 2, replace=False)) for _ in range(30)
    ]
    checked = 0
    for src, dst in pairs:
        paths, use, worst, best = _enumerated(fab, src, dst, even)
        got = dags.shares(src, dst, even=even)
        if not paths:
            assert got is None and dags.shortest_s(src, dst) == 0.0
            continue
        assert got is not None
        checked += 1
        assert got.paths == len(paths)
        assert sorted(got.links.tolist()) == sorted(use)
        mine = dict(zip(got.links.tolist(), got.coefs.tolist(), strict=True))
        for link, share in use.items():
            assert mine[link] == pytest.approx(share, rel=1e-12)
        assert (got.worst_ps, got.best_ps) == (worst, best)
        tops = {int(s) for s in fab.top_switches}
        crossed = {n for p in paths for n in fab.path_nodes(p)} & tops
        assert {int(fab.top_switches[i]) for i in got.tops} == crossed
        assert got.named == (tuple(paths) if len(paths) <= MAX_PATH_LABELS else ())
        assert dags.shortest_s(src, dst) == fab.unloaded_latency_s(paths, PKT, worst=False)
    assert checked


def test_of_paths_sums_weights_per_link() -> None:
    fab = build_fabric(TopologyConfig(kind="fat_tree", k=4))
    paths = fab.paths(0, 15)
    got = PairDags(fab, PKT).of_paths([(paths[0], 0.75), (paths[1], 0.25)])
    assert got is not None and got.paths == 2
    mine = dict(zip(got.links.tolist(), got.coefs.tolist(), strict=True))
    assert mine[paths[0][0]] == 1.0  # the host uplink: both paths
    assert sorted(set(mine.values())) == [0.25, 0.75, 1.0]
    assert PairDags(fab, PKT).of_paths([]) is None
