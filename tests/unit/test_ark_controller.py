"""ARK controllers without an engine: reservation, races, releases, fallback, port tables."""

from __future__ import annotations

import numpy as np
import pytest
from ark_toy import ToyArkPlane

from fabricsim.config import TopologyConfig
from fabricsim.lb.ark import RELEASE, RESERVE, ArkController, ArkMessage, port_table
from fabricsim.routing.router import Router
from fabricsim.topology import build_fabric

D = 5e-6  # control delay, s


def _holders(plane: ToyArkPlane, flows) -> list[int | None]:
    return [plane.key_of(f) for f in flows]


def _assert_consistent(plane: ToyArkPlane, running) -> None:
    """After the delay: every replica is the same, and no unit is held by two running flows."""
    tables = [c.table for c in plane.controllers]
    assert all(t == tables[0] for t in tables[1:])
    held = [k for k in _holders(plane, running) if k is not None]
    assert len(held) == len(set(held))
    for f in running:
        key = plane.key_of(f)
        if key is not None:
            assert tables[0][key][1] == plane._src[f]


def test_lowest_unreserved_unit_and_matching_port():
    plane = ToyArkPlane(hosts=4, paths=4, delay_s=D)
    ports = []
    for flow in range(3):
        ports.append(plane.arrive(flow, src=flow, dst=3, now_s=flow * 1e-3))
        plane.run_until(flow * 1e-3 + 2 * D)
    assert _holders(plane, range(3)) == [0, 1, 2]
    assert [p % 4 for p in ports] == [0, 1, 2]  # toy table: unit k <- ports k mod 4
    _assert_consistent(plane, range(3))


def test_forced_race_exactly_one_keeps_the_path():
    plane = ToyArkPlane(hosts=3, paths=4, delay_s=D)
    p0 = plane.arrive(0, src=0, dst=2, now_s=0.0)
    p1 = plane.arrive(1, src=1, dst=2, now_s=2e-6)  # within one delay: both take unit 0
    assert p0 % 4 == 0 and p1 % 4 == 0
    assert _holders(plane, [0, 1]) == [0, 0]  # double-booked during the window
    plane.run_until(1e-3)
    assert _holders(plane, [0, 1]) == [0, 1]  # the earlier (t, id) keeps it
    assert plane.races == 1
    assert len(plane.rerouted) == 1 and plane.rerouted[0][0] == 1
    assert plane.rerouted[0][1] % 4 == 1  # re-hashed onto the next free unit
    _assert_consistent(plane, [0, 1])


def test_simultaneous_race_broken_by_host_id():
    plane = ToyArkPlane(hosts=6, paths=4, delay_s=D)
    plane.arrive(0, src=4, dst=5, now_s=1.0)
    plane.arrive(1, src=2, dst=5, now_s=1.0)
    plane.run_until(2.0)
    assert plane.key_of(1) == 0 and plane.key_of(0) == 1  # host 2 < host 4
    assert plane.controllers[2].races == 0 and plane.controllers[4].races == 1
    _assert_consistent(plane, [0, 1])


def test_three_way_race_and_cascade():
    plane = ToyArkPlane(hosts=4, paths=4, delay_s=D)
    for flow, host in enumerate((2, 1, 0)):
        plane.arrive(flow, src=host, dst=3, now_s=flow * 1e-6)
    plane.run_until(1.0)
    keys = _holders(plane, range(3))
    assert keys[0] == 0 and sorted(keys) == [0, 1, 2]
    assert plane.races >= 2
    _assert_consistent(plane, range(3))


def test_release_frees_only_the_own_reservation():
    plane = ToyArkPlane(hosts=3, paths=2, delay_s=D)
    plane.arrive(0, src=0, dst=2, now_s=0.0)
    plane.run_until(1e-3)
    other = plane.controllers[1]
    stamp = other.table[0]
    # a stale or foreign RELEASE naming unit 0 with another stamp changes nothing
    other.on_remote_update(ArkMessage(RELEASE, 0, (0.5, 2)), now_s=1e-3)
    assert other.table[0] == stamp
    # host 1 never reserved unit 0: completing an unknown flow sends nothing
    sent_before = plane.messages
    other.on_flow_completion(99)
    assert plane.messages == sent_before and other.table[0] == stamp
    plane.finish(0)
    plane.run_until(2e-3)
    assert all(0 not in c.table for c in plane.controllers)


def test_loser_release_does_not_free_the_winner():
    plane = ToyArkPlane(hosts=3, paths=4, delay_s=D)
    plane.arrive(0, src=0, dst=2, now_s=0.0)
    plane.arrive(1, src=1, dst=2, now_s=1e-6)
    plane.run_until(1e-3)  # flow 1 lost unit 0, holds unit 1
    plane.finish(1)
    plane.run_until(2e-3)
    assert all(c.table.get(0, (None, None))[1] == 0 for c in plane.controllers)
    assert all(1 not in c.table for c in plane.controllers)
    assert plane.key_of(0) == 0


def test_stale_loser_stamp_is_withdrawn():
    """A peer that sees the winner's RESERVE and RELEASE before the loser's RESERVE."""
    log: list[ArkMessage] = []
    ctl = ArkController(
        1,
        lambda s, d: _toy_table(2),
        lambda h, m: log.append(m),
        lambda f, p: None,
        np.random.default_rng(0),
    )
    ctl.on_flow_arrival(7, peer=2, now_s=1e-6)  # loser reserves unit 0 at t=1 us
    ctl.on_remote_update(ArkMessage(RESERVE, 0, (0.0, 0)), now_s=5e-6)  # winner, t=0
    assert [m.op for m in log] == [RESERVE, RELEASE, RESERVE]
    assert log[1] == ArkMessage(RELEASE, 0, (1e-6, 1))  # withdraws exactly its lost stamp
    assert log[2].key == 1 and ctl.key_of(7) == 1
    # a peer holding the loser's stamp (winner already gone) frees the unit on the withdrawal
    peer = ArkController(
        2,
        lambda s, d: _toy_table(2),
        lambda h, m: None,
        lambda f, p: None,
        np.random.default_rng(0),
    )
    peer.on_remote_update(log[0], now_s=6e-6)
    assert peer.table[0] == (1e-6, 1)
    peer.on_remote_update(log[1], now_s=6e-6)
    assert 0 not in peer.table


def test_fallback_to_ecmp_when_every_unit_is_held():
    plane = ToyArkPlane(hosts=9, paths=4, delay_s=D, seed=3)
    for flow in range(4):
        plane.arrive(flow, src=flow, dst=8, now_s=flow * 1e-3)
        plane.run_until(flow * 1e-3 + 2 * D)
    ports = [plane.arrive(10 + i, src=4 + i % 4, dst=8, now_s=1.0) for i in range(40)]
    assert plane.fallbacks == 40
    assert all(plane.key_of(10 + i) is None for i in range(40))
    assert set(p % 4 for p in ports) == {0, 1, 2, 3}  # a random path of the table
    sent = plane.messages
    plane.finish(10)
    assert plane.messages == sent  # a fallback flow holds nothing, releases nothing


def test_completion_frees_units_for_new_flows():
    plane = ToyArkPlane(hosts=3, paths=2, delay_s=D)
    plane.arrive(0, src=0, dst=2, now_s=0.0)
    plane.arrive(1, src=1, dst=2, now_s=1e-3)
    plane.run_until(2e-3)
    plane.finish(0)
    plane.run_until(3e-3)
    plane.arrive(2, src=1, dst=2, now_s=3e-3)
    assert plane.key_of(2) == 0 and plane.fallbacks == 0


def _toy_table(paths: int):
    from fabricsim.lb.ark import PortTable

    return PortTable(list(range(paths)), [np.arange(k, 65536, paths) for k in range(paths)])


# -- the inverse hash on real fabrics ---------------------------------------------------------
@pytest.mark.parametrize("method", ["crc32WithSalt", "crc32", "crc32Offset"])
def test_leaf_spine_port_table_puts_every_port_on_its_spine(method):
    fab = build_fabric(TopologyConfig(spines=4, leaves=2, hosts_per_leaf=8))
    router = Router.build(fab, seed=5, method=method)
    table = port_table(router, 1, 12)
    names = [fab.node_names[k] for k in table.keys]
    assert names == sorted(names) and set(names) <= {f"spine{i}" for i in range(4)}
    assert sum(len(p) for p in table.ports) == 65536
    rng = np.random.default_rng(0)
    for key, ports in zip(table.keys, table.ports, strict=True):
        for port in rng.choice(ports, 30):
            path = router.route(1, 12, int(port))
            assert key in fab.path_nodes(path)


def test_fat_tree_units_are_cores_and_the_hash_is_inverted_at_every_stage():
    fab = build_fabric(TopologyConfig(kind="fat_tree", k=4))
    router = Router.build(fab, seed=2)
    table = port_table(router, 0, 15)  # inter-pod: 4 paths, one per core
    assert [fab.node_names[k] for k in table.keys] == ["core0", "core1", "core2", "core3"]
    for key, ports in zip(table.keys, table.ports, strict=True):
        for port in ports[:: max(1, len(ports) // 20)]:
            assert key in fab.path_nodes(router.route(0, 15, int(port)))
    intra = port_table(router, 0, 2)  # same pod, other edge: units are the aggregation switches
    assert [fab.node_names[k] for k in intra.keys] == ["agg0_0", "agg0_1"]
    same_leaf = port_table(router, 0, 1)
    assert not same_leaf.managed


def test_unmanaged_pair_keeps_its_port():
    ctl = ArkController(
        0,
        lambda s, d: _toy_table(1),
        lambda h, m: pytest.fail("no broadcast"),
        lambda f, p: None,
        np.random.default_rng(0),
    )
    assert ctl.on_flow_arrival(1, peer=1, now_s=0.0, own_port=4242) == 4242
    ctl.on_flow_completion(1)


def test_initialize_runs_once_per_peer():
    calls = []

    def tables(src, dst):
        calls.append((src, dst))
        return _toy_table(4)

    ctl = ArkController(0, tables, lambda h, m: None, lambda f, p: None, np.random.default_rng(0))
    for flow in range(10):
        ctl.on_flow_arrival(flow, peer=1 + flow % 2, now_s=float(flow))
    assert calls == [(0, 1), (0, 2)]
