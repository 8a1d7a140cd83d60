"""The inverse hash (``Router._split``, ``port_paths``, ``ports_per_path``) against routing
every port on its own (``Router.route``): the same paths, in :meth:`Fabric.paths` order, with
the same ports in their input order, on fabrics with uneven, single-member and empty groups,
paths of different lengths (rails with PXN, planes), NIC rules and several hashes."""

from __future__ import annotations

from pathlib import Path as FilePath

import numpy as np
import pytest

from fabricsim.config import load_scenario
from fabricsim.routing.hashing import QP_SHIFT
from fabricsim.routing.router import Router
from fabricsim.topology import build_fabric

EXAMPLES = FilePath(__file__).resolve().parents[2] / "examples"
QP_FIELDS = ["src_ip", "dst_ip", "src_port", "dst_port", "proto", "dst_qp"]
FAT_TREE_FAILED = {
    "kind": "fat_tree",
    "k": 4,
    "failed_links": ["agg0_0->core0", "core3->agg2_1", "edge1_0->agg1_1"],
}
CASES = {
    "leaf_spine": {"topology": {"kind": "leaf_spine", "leaves": 4, "spines": 3}},
    "parallel": {"topology": {"kind": "leaf_spine", "leaves": 3, "spines": 2, "parallel_links": 2}},
    "wide": {"topology": {"kind": "leaf_spine", "leaves": 2, "spines": 300, "hosts_per_leaf": 2}},
    "fat_tree_4": {"topology": {"kind": "fat_tree", "k": 4}},
    "fat_tree_8": {"topology": {"kind": "fat_tree", "k": 8}},
    "fat_tree_crc32": {"topology": {"kind": "fat_tree", "k": 4}, "switch.hash_method": "crc32"},
    "fat_tree_offset": {
        "topology": {"kind": "fat_tree", "k": 8},
        "switch.hash_method": "crc32Offset",
    },
    "fat_tree_dst_qp": {"topology": {"kind": "fat_tree", "k": 4}, "switch.hash_fields": QP_FIELDS},
    "fat_tree_withdrawn": {"topology": {**FAT_TREE_FAILED, "failed_link_mode": "withdraw"}},
    "fat_tree_blackhole": {"topology": FAT_TREE_FAILED},
    "planes_hash": {"example": "hpn_dual_plane.yaml"},
    "planes_round_robin": {"example": "hpn_dual_plane.yaml", "nic.plane_select": "round_robin"},
    "planes_pinned": {
        "example": "hpn_dual_plane.yaml",
        "nic.plane_select": "pinned",
        "nic.pinned_plane": 1,
    },
    "planes_dead_tor": {
        "example": "hpn_dual_plane.yaml",
        "topology.failed_switches": ["p1_leaf0"],
        "nic.plane_select": "round_robin",
    },
    "planes_fat_tree": {"topology": {"kind": "multi_plane", "plane_kind": "fat_tree", "k": 4}},
    "rails": {"topology": {"kind": "rail_optimized", "rails": 4}},
    "rails_pxn": {"example": "rails_pxn.yaml"},
}


def _routers(name: str) -> tuple[Router, Router]:
    """Two routers of the case's scenario: one to test, one for the reference (a NIC rule
    such as ``round_robin`` keeps state, so each sees the same sequence of ports)."""
    case = dict(CASES[name])
    example = case.pop("example", None)
    if example is not None:
        sc = load_scenario(str(EXAMPLES / example))
    else:
        sc = load_scenario({"name": name, "workload": {"kind": "permutation"}})
    sc = sc.with_overrides(case)
    fab = build_fabric(sc.topology)
    return Router.for_scenario(sc, fab), Router.for_scenario(sc, fab)


def _reference(router: Router, src: int, dst: int, ports: np.ndarray) -> list:
    """(path, its ports in input order) per path some port takes, in Fabric.paths order, by
    routing each port on its own."""
    rank = {p: i for i, p in enumerate(router.fabric.paths(src, dst))}
    parts: dict[tuple[int, ...], list[int]] = {}
    for port in ports.tolist():
        path = router.route(src, dst, port)
        if path is not None:
            parts.setdefault(path, []).append(port)
    return sorted(parts.items(), key=lambda kv: rank[kv[0]])


def _pairs(router: Router, count: int) -> list[tuple[int, int]]:
    """The first and last host, a same-leaf pair, and random ones."""
    n = router.fabric.num_hosts
    rng = np.random.default_rng(n)
    rand = [tuple(int(x) for x in rng.choice(n, 2, replace=False)) for _ in range(count)]
    return [(0, n - 1), (0, 1), *rand]


def _port_sets(router: Router) -> list[np.ndarray]:
    """Port sets of every size the callers use: one port, a few (fewer than the paths), a
    range (a ``default`` round robin's), random ones with repeats, and QP bits above 65,535."""
    rng = np.random.default_rng(7)
    sets = [
        np.array([4791]),
        rng.integers(0, 65536, 5),
        (60000 + np.arange(1024)) % 65536,
        rng.integers(0, 65536, 3000),
        rng.integers(0, 65536, 500) | (rng.integers(0, 8, 500) << QP_SHIFT),
    ]
    return [s.astype(np.int64) for s in sets]


@pytest.mark.full
@pytest.mark.parametrize("name", sorted(CASES))
def test_split_and_port_paths_equal_routing_each_port(name: str) -> None:
    router, reference = _routers(name)
    for src, dst in _pairs(router, 6):
        for ports in _port_sets(router):
            want = _reference(reference, src, dst, ports)
            got = router._split(src, dst, ports)
            assert [(p, part.tolist()) for p, part in got] == want
            assert all(part.dtype == np.int64 for _, part in got)
            assert router.port_paths(src, dst, ports) == [(p, len(v)) for p, v in want]


@pytest.mark.full
@pytest.mark.parametrize("name", sorted(CASES))
def test_ports_per_path_equals_routing_every_port(name: str) -> None:
    router, reference = _routers(name)
    src, dst = _pairs(router, 1)[-1]
    dst_qp = 3 if name == "fat_tree_dst_qp" else 0
    every = np.arange(65536, dtype=np.int64) | (dst_qp << QP_SHIFT)
    want = dict(_reference(reference, src, dst, every))
    got = router.ports_per_path(src, dst, dst_qp)
    assert list(got) == router.fabric.paths(src, dst)
    for path, ports in got.items():
        assert ports.dtype == np.int64
        assert ports.tolist() == [p & 0xFFFF for p in want.get(path, [])]
    dropped = 65536 - sum(len(p) for p in got.values())
    assert dropped == 65536 - sum(len(p) for p in want.values())


def test_no_ports_take_no_path() -> None:
    router, _ = _routers("fat_tree_4")
    none = np.empty(0, dtype=np.int64)
    assert router._split(0, 15, none) == []
    assert router.port_paths(0, 15, none) == []
