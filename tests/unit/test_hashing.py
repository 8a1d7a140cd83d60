"""ECMP hash methods and the inverse hash on a k = 8 fat tree."""

import struct
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from routing_cases import ROUTING_FABRICS
from scipy.stats import chisquare

from fabricsim.config import TopologyConfig
from fabricsim.routing import Router
from fabricsim.routing.hashing import PORT_TABLE, base_crc, crc32_5tuple, fmix32
from fabricsim.routing.mix import fmix32_int
from fabricsim.topology import build_fabric

FAT8 = build_fabric(TopologyConfig(kind="fat_tree", k=8))


def test_crc_matches_zlib():
    rng = np.random.default_rng(5)
    for _ in range(200):
        a, b = (int(x) for x in rng.integers(0, 2**32, 2))
        p, q = (int(x) for x in rng.integers(0, 65536, 2))
        key = struct.pack(">IIHHB", a, b, p, q, 17)
        assert int(crc32_5tuple(a, b, p, q, 17)) == zlib.crc32(key)
        assert base_crc(a, b, q) ^ int(PORT_TABLE[p]) == zlib.crc32(key)


def test_fmix32_is_murmur3_finaliser():
    # fmix32(0) = 0 and known avalanche of 1 (computed by hand from the constants)
    assert fmix32_int(0) == 0
    x = np.arange(1000, dtype=np.uint32)
    assert len(np.unique(fmix32(x))) == 1000  # bijective on a sample
    assert all(int(v) == fmix32_int(int(u)) for u, v in zip(x[:50], fmix32(x[:50]), strict=True))


def _joint_counts(router, src, dst):
    stages = router.stage_members(src, dst)
    assert len(stages) == 2  # edge -> agg and agg -> core on an inter-pod path
    return np.bincount(stages[0] * 4 + stages[1], minlength=16)


@pytest.mark.parametrize("pair", [(0, 127), (5, 70), (17, 100)])
def test_default_hash_stages_jointly_uniform(pair):
    router = Router.build(FAT8, seed=11)
    counts = _joint_counts(router, *pair)
    assert counts.sum() == 65536
    assert chisquare(counts).pvalue > 1e-3


@pytest.mark.parametrize("salt_mode", ["per_switch", "shared"])
def test_crc32_is_polarized(salt_mode):
    router = Router.build(FAT8, seed=11, method="crc32", salt_mode=salt_mode)
    counts = _joint_counts(router, 0, 127)
    assert (counts == 0).sum() >= 8  # linear hash: choices locked (4 of 16 cells used)


def test_crc32offset_decorrelates_tiers():
    router = Router.build(FAT8, seed=3, method="crc32Offset")
    assert (_joint_counts(router, 0, 127) > 0).all()


@settings(max_examples=25, deadline=None)
@given(
    src=st.integers(0, 127),
    dst=st.integers(0, 127),
    seed=st.integers(0, 2**31),
    method=st.sampled_from(["crc32WithSalt", "crc32"]),
)
def test_inverse_partitions_ports(src, dst, seed, method):
    if src == dst:
        return
    router = Router.build(FAT8, seed=seed, method=method)
    per_path = router.ports_per_path(src, dst)
    assert list(per_path) == FAT8.paths(src, dst)
    allp = np.concatenate(list(per_path.values()))
    assert np.array_equal(np.sort(allp), np.arange(65536))  # a partition of 0..65535
    empty = [p for p, v in per_path.items() if len(v) == 0]
    if method == "crc32WithSalt":
        assert not empty
    elif len(per_path) == 16:
        assert empty  # polarization leaves paths unreachable, and they are reported
    for path, ports in per_path.items():  # the forward hash agrees with the inverse
        for port in ports[:: max(1, len(ports) // 3)]:
            assert router.route(src, dst, int(port)) == path


def test_salts_depend_on_seed_and_mode():
    a = Router.build(FAT8, seed=1).salts
    b = Router.build(FAT8, seed=2).salts
    c = Router.build(FAT8, seed=1, salt_mode="shared").salts
    assert not np.array_equal(a, b)
    assert len(np.unique(c)) == 1


def test_stage_ports_groups_ports_like_the_hash():
    from fabricsim.routing.hashing import switch_hash
    from fabricsim.routing.inverse import stage_ports

    out = stage_ports(7, 0x0A000001, 0x0A000002, 4791, 17, "crc32Offset", 99, tier=2)
    crc = np.uint32(base_crc(0x0A000001, 0x0A000002, 4791, 17)) ^ PORT_TABLE
    member = switch_hash(crc, "crc32Offset", 99, 2) % np.uint32(7)
    for m in range(7):
        assert out["paths"][f"member{m}"]["ports"] == np.flatnonzero(member == m).tolist()
    wide = stage_ports(65536, 1, 2, 4791, 17, "crc32", 0)
    assert len(wide["paths"]) == 65536
    assert sum(p["count"] for p in wide["paths"].values()) == 65536


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"members": 100_000_000}, "--paths: must be an integer in 1..65536"),
        ({"members": 0}, "--paths"),
        ({"members": 2.5}, "--paths"),
        ({"tier": 99}, "--tier: must be one of 1 (leaf/edge), 2 (spine/aggregation), 3 (core)"),
        ({"tier": True}, "--tier"),
        ({"salt": 2**32}, "--salt: must be an integer in 0..4294967295"),
        ({"salt": -1}, "--salt"),
        ({"dst_port": 65536}, "--dst-port: must be an integer in 0..65535"),
        ({"proto": 256}, "--proto: must be an integer in 0..255"),
        ({"src_ip": 2**32}, "--src-ip"),
        ({"method": "random"}, "no inverse"),
        ({"method": "xor"}, "--hash"),
    ],
)
def test_stage_ports_refuses_bad_options(kwargs, needle):
    from fabricsim.errors import ConfigError
    from fabricsim.routing.inverse import stage_ports

    args = {"members": 4, "src_ip": 1, "dst_ip": 2, "dst_port": 4791, "proto": 17,
            "method": "crc32WithSalt", "salt": 0, "tier": 1} | kwargs  # fmt: skip
    with pytest.raises(ConfigError) as info:
        stage_ports(**args)
    assert needle in str(info.value) and "\n" not in str(info.value)


def test_path_ports_refuses_bad_hosts_and_too_many_paths():
    import fabricsim
    from fabricsim.errors import ConfigError
    from fabricsim.routing.inverse import path_ports

    sc = fabricsim.load_scenario("ecmp-collision")
    for src, dst, needle in [(0, 16, "--dst-host"), (-1, 3, "--src-host"), (5, 5, "differ")]:
        with pytest.raises(ConfigError, match=needle):
            path_ports(sc, src, dst)
    big = sc.with_overrides({"topology.parallel_links": 64, "topology.spines": 64})
    with pytest.raises(ConfigError, match="262144 equal-cost paths"):
        path_ports(big, 0, 9)


def test_config_accepts_exactly_the_registered_hash_methods():
    from fabricsim.config.names import registered_names
    from fabricsim.routing.hashing import registered_hashes

    assert registered_names("switch.hash_method") == registered_hashes()


def test_a_registered_hash_method_is_used_by_the_hash_and_valid_in_config():
    import numpy as np

    import fabricsim
    from fabricsim.errors import ConfigError
    from fabricsim.routing import hashing

    method = hashing.HashMethod("xorOnly", lambda x, tier: x ^ np.uint32(1), lambda x, tier: x ^ 1)
    hashing.register_hash(method)
    try:
        crc = np.arange(8, dtype=np.uint32)
        arr = hashing.switch_hash(crc, "xorOnly", 5, 1)
        assert [hashing.switch_hash_int(int(c), "xorOnly", 5, 1) for c in crc] == arr.tolist()
        sc = fabricsim.load_scenario("ecmp-collision")
        assert sc.with_overrides({"switch.hash_method": "xorOnly"}).switch.hash_method == "xorOnly"
    finally:
        hashing.unregister_hash("xorOnly")
    assert "xorOnly" not in hashing.registered_hashes()
    with pytest.raises(ConfigError, match=r"switch\.hash_method: must be one of .*'xorOnly'"):
        fabricsim.load_scenario("ecmp-collision").with_overrides({"switch.hash_method": "xorOnly"})


@pytest.mark.parametrize(("name", "over"), ROUTING_FABRICS)
def test_port_paths_follow_the_ports_as_the_inverse_hash_does(name, over):
    """Router.port_paths (ports followed stage by stage) against ports_per_path (every path,
    every port): the same paths, in the same order, with the same port counts."""
    import fabricsim
    from fabricsim.experiments.runner import fabric_of, router_of

    sc = fabricsim.load_scenario(name).with_overrides(over)
    fab = fabric_of(sc)
    router = router_of(sc, fab)
    rng = np.random.default_rng(3)
    for _ in range(12):
        src, dst = (int(x) for x in rng.choice(fab.num_hosts, 2, replace=False))
        ports = rng.choice(65536, size=int(rng.integers(1, 3000)), replace=False)
        want = [
            (path, int(np.isin(ports, members).sum()))
            for path, members in router.ports_per_path(src, dst).items()
        ]
        assert router.port_paths(src, dst, ports) == [(p, n) for p, n in want if n]


@pytest.mark.parametrize(("name", "over"), ROUTING_FABRICS)
def test_route_many_equals_route_one_by_one(name, over):
    """The batch router (arrays, stage by stage) gives every 5-tuple the path route() gives
    it, for every deterministic hash method, dead ends (None) and same-host pairs included."""
    import fabricsim
    from fabricsim.experiments.runner import fabric_of, router_of
    from fabricsim.routing.hashing import registered_hashes

    for method in registered_hashes():
        if method == "random":
            continue
        sc = fabricsim.load_scenario(name).with_overrides({**over, "switch.hash_method": method})
        fab = fabric_of(sc)
        router = router_of(sc, fab)
        rng = np.random.default_rng(5)
        src, dst = rng.integers(0, fab.num_hosts, 400), rng.integers(0, fab.num_hosts, 400)
        ports = rng.integers(0, 65536, 400)
        want = [
            router.route(int(a), int(b), int(p)) for a, b, p in zip(src, dst, ports, strict=True)
        ]
        assert router.route_many(src, dst, ports) == want
