"""Hash polarization on a three-tier fat tree: aggregation->core links no source port reaches."""

from __future__ import annotations

import time

import numpy as np
import pytest

from fabricsim.analysis.polarization import hash_polarization
from fabricsim.config.loader import validate
from fabricsim.errors import ConfigError
from fabricsim.experiments.runner import fabric_of, router_of
from fabricsim.routing.hashing import switch_salts
from fabricsim.topology.fabric import CORE, SPINE


def _predicted_crc32_dark(k: int, seed: int, salt_mode: str) -> int:
    """Closed form for linear crc32 with power-of-two groups.

    The aggregation member is the edge member XOR the low bits of (edge salt ^ agg salt), so an
    aggregation switch reaches one core member per distinct low-bits value of its pod's edge
    salts; the other members stay dark.
    """
    sc = validate(
        {
            "topology": {"kind": "fat_tree", "k": k},
            "workload": {"kind": "permutation"},
            "seed": seed,
        }
    )
    fab = fabric_of(sc)
    salts = switch_salts(fab.num_nodes, seed, salt_mode)
    half = k // 2
    dark = 0
    for pod in range(k):
        edges = [fab.node_names.index(f"edge{pod}_{i}") for i in range(half)]
        distinct = len({int(salts[e]) % half for e in edges})
        dark += half * (half - distinct)  # per aggregation switch of the pod
    return dark


@pytest.mark.full
def test_k8_crc32_per_switch_leaves_about_a_third_dark() -> None:
    t0 = time.perf_counter()
    r = hash_polarization(k=8, hash_method="crc32", salt_mode="per_switch", seed=1)
    wall = time.perf_counter() - t0
    print(f"k=8 crc32 per_switch: {r.links_unreached}/{r.links_total} dark, {wall:.1f} s")
    assert r.pairs == 128 * 112 and r.ports == 65536 and r.links_total == 128
    assert r.links_unreached == _predicted_crc32_dark(8, 1, "per_switch")
    assert 0.15 <= r.unreached_share <= 0.5  # expectation (3/4)**4 = 0.316 over seeds
    assert r.pair_unreached_share == pytest.approx(0.75)  # one core per aggregation switch
    assert all("agg" in name and "->core" in name for name in r.unreached_links)
    assert wall < 120


@pytest.mark.full
def test_k8_crc32_shared_salt_leaves_three_quarters_dark() -> None:
    r = hash_polarization(k=8, hash_method="crc32", salt_mode="shared", seed=1)
    assert r.links_unreached == 96 == _predicted_crc32_dark(8, 1, "shared")
    assert r.unreached_share == pytest.approx(0.75)
    assert r.pair_unreached_share == pytest.approx(0.75)


def test_k8_default_hash_reaches_every_link() -> None:
    t0 = time.perf_counter()
    r = hash_polarization(k=8, seed=1)  # crc32WithSalt, per-switch salts: the defaults
    assert (r.hash_method, r.salt_mode) == ("crc32WithSalt", "per_switch")
    assert r.links_unreached == 0 and r.unreached_share == 0.0
    assert r.pair_unreached_share == 0.0
    assert time.perf_counter() - t0 < 60


@pytest.mark.parametrize("salt_mode", ["per_switch", "shared"])
def test_k8_crc32_offset_reads_other_bits_at_each_tier(salt_mode: str) -> None:
    r = hash_polarization(k=8, hash_method="crc32Offset", salt_mode=salt_mode, seed=1)
    assert r.links_unreached == 0


def _by_inverse_hash(k: int, method: str, salt_mode: str, seed: int) -> tuple[set[str], float]:
    """Unreached links and mean per-pair dark share from Router.ports_per_path (slow path)."""
    sc = validate(
        {
            "seed": seed,
            "topology": {"kind": "fat_tree", "k": k},
            "workload": {"kind": "permutation"},
            "switch": {"hash_method": method, "salt_mode": salt_mode},
        }
    )
    fab = fabric_of(sc)
    router = router_of(sc, fab)
    tier = fab.node_tier
    up = {
        link
        for link in range(fab.num_links)
        if tier[fab.link_src[link]] == SPINE and tier[fab.link_dst[link]] == CORE
    }
    reached: set[int] = set()
    shares = []
    pods = fab.pod_of_node
    for src in range(fab.num_hosts):
        for dst in range(fab.num_hosts):
            if pods[src] == pods[dst]:
                continue
            per_path = router.ports_per_path(src, dst)
            mine = {link for p in per_path for link in p if link in up}
            hit = {link for p, ports in per_path.items() if len(ports) for link in p if link in up}
            reached |= hit
            shares.append(1 - len(hit) / len(mine))
    return {fab.link_names[i] for i in up - reached}, float(np.mean(shares))


@pytest.mark.parametrize(
    ("method", "salt_mode"),
    [("crc32", "per_switch"), ("crc32", "shared"), ("crc32WithSalt", "shared"),
     ("crc32WithSalt", "per_switch"), ("crc32Offset", "per_switch")],
)  # fmt: skip
def test_walk_agrees_with_the_routers_inverse_hash(method: str, salt_mode: str) -> None:
    r = hash_polarization(k=4, hash_method=method, salt_mode=salt_mode, seed=2)
    dark, share = _by_inverse_hash(4, method, salt_mode, 2)
    assert set(r.unreached_links) == dark
    assert r.pair_unreached_share == pytest.approx(share)


def test_result_does_not_depend_on_threads() -> None:
    a = hash_polarization(k=4, hash_method="crc32", seed=3, workers=1)
    b = hash_polarization(k=4, hash_method="crc32", seed=3, workers=3)
    assert a.to_dict() == b.to_dict()
    assert "wall_s" not in a.to_dict()


def test_bad_input() -> None:
    leaf_spine = validate({"workload": {"kind": "permutation"}})
    with pytest.raises(ConfigError, match="topology.kind"):
        hash_polarization(leaf_spine)
    with pytest.raises(ConfigError, match="switch.hash_method"):
        hash_polarization(k=4, hash_method="random")
    with pytest.raises(ConfigError, match="topology.k"):
        hash_polarization(k=18)
