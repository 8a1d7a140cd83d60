"""Switch-side load balancing (``switch.load_balancing_method``): strategies and small runs."""

import math
import warnings
from collections import Counter

import numpy as np
import pytest

import fabricsim
from fabricsim.config import TopologyConfig
from fabricsim.engine_api import DATA, HDR
from fabricsim.errors import ConfigError
from fabricsim.experiments.runner import build_engine
from fabricsim.lb.switch import least_loaded
from fabricsim.lb.switch_adaptive import AdaptiveChoice
from fabricsim.lb.switch_flowlet import FlowletChoice
from fabricsim.lb.switch_spray import SprayChoice
from fabricsim.packetsim.calendar import Sim
from fabricsim.packetsim.forwarding import (
    Decider,
    EcmpForwarding,
    RouteTable,
    make_member_choices,
)
from fabricsim.packetsim.packets import Packet
from fabricsim.packetsim.ports import Port
from fabricsim.routing.router import Router
from fabricsim.topology import build_fabric


class FakePort:
    def __init__(self, q=0, h=0, failed=False):
        self.qbytes, self.hbytes, self.failed = q, h, failed


class FakeDecider:
    def __init__(self, ports, fkey=0):
        self.ports, self.fkey = ports, fkey


class Clock:
    now = 0


def seq(values):
    it = iter(values)
    return lambda: next(it)


# -- strategies without an event loop ----------------------------------------------------------
def test_least_loaded_picks_the_smallest_quantized_queue():
    ports = [FakePort(9000), FakePort(5000), FakePort(4000, 200)]
    assert least_loaded(ports, 1, lambda: 0.0) == 2  # 4200 bytes < 5000
    # in units of a packet (4184 B) 5000 and 4200 tie: the tie is broken by the draw
    assert least_loaded(ports, 4184, seq([0.9])) == 1
    assert least_loaded(ports, 4184, seq([0.1])) == 2


def test_least_loaded_ties_are_uniform():
    rand = np.random.default_rng(3).random
    ports = [FakePort(0) for _ in range(4)]
    counts = Counter(least_loaded(ports, 1, rand) for _ in range(8000))
    assert sorted(counts) == [0, 1, 2, 3]
    assert all(abs(c / 8000 - 0.25) < 0.03 for c in counts.values())


def test_live_choices_skip_failed_members():
    ports = [FakePort(0, failed=True), FakePort(50_000), FakePort(0, failed=True)]
    assert least_loaded(ports, 1, lambda: 0.0) == 1
    spray = SprayChoice(np.random.default_rng(1).random)
    assert {spray.pick(FakeDecider(ports), None) for _ in range(100)} == {1}
    adaptive = AdaptiveChoice(lambda: 0.5, 1)
    assert adaptive.pick(FakeDecider(ports), None) == 1


def test_spray_is_uniform():
    spray = SprayChoice(np.random.default_rng(7).random)
    dec = FakeDecider([FakePort() for _ in range(8)])
    counts = Counter(spray.pick(dec, None) for _ in range(16000))
    assert all(abs(c / 16000 - 1 / 8) < 0.02 for c in counts.values()) and len(counts) == 8


def test_flowlet_keeps_its_member_until_a_gap():
    clock = Clock()
    draws = iter([0.1, 0.9, 0.6])  # members 0, then 3, then 2 of 4
    fl = FlowletChoice(lambda: next(draws), clock, gap_ps=10_000_000)
    dec = FakeDecider([FakePort() for _ in range(4)], fkey=1 << 16)
    pkt = Packet()
    pkt.entropy = 5
    picks = []
    for t in (0, 3_000_000, 12_000_000, 22_000_001, 25_000_000):  # gaps of 3, 9, 10.000001, 3 us
        clock.now = t
        picks.append(fl.pick(dec, pkt))
    assert picks == [0, 0, 0, 3, 3] and fl.flowlets == 2
    other = Packet()
    other.entropy = 6  # another 5-tuple: its own flowlet
    assert fl.pick(dec, other) == 2 and fl.flowlets == 3


def test_flowlet_leaves_a_failed_member_at_once():
    clock = Clock()
    fl = FlowletChoice(seq([0.1, 0.9]), clock, gap_ps=10**9)
    ports = [FakePort(), FakePort()]
    pkt = Packet()
    assert fl.pick(FakeDecider(ports), pkt) == 0
    ports[0].failed = True
    assert fl.pick(FakeDecider(ports), pkt) == 1 and fl.flowlets == 2


def test_flowlet_least_loaded_pick():
    fl = FlowletChoice(lambda: 0.0, Clock(), gap_ps=1, pick="least_loaded", quantum_bytes=1)
    ports = [FakePort(8000), FakePort(100), FakePort(9000)]
    assert fl.pick(FakeDecider(ports), Packet()) == 1


def test_no_member_choices_under_ecmp():
    sc = fabricsim.load_scenario("permutation").with_overrides({"topology.k": 4})
    fab = build_fabric(sc.topology)
    assert make_member_choices(sc, fab, Sim(), lambda: 0.5) is None
    sc = sc.with_overrides({"switch.load_balancing_method": "adaptive"})
    choices = make_member_choices(sc, fab, Sim(), lambda: 0.5)
    assert choices[0] is None and isinstance(choices[fab.num_hosts], AdaptiveChoice)
    assert choices[fab.num_hosts] is not choices[fab.num_hosts + 1]  # one per switch


# -- deciders on a real fabric, no engine ------------------------------------------------------
class Sink:
    def __init__(self):
        self.got = []

    def receive(self, pkt):
        self.got.append(pkt)


def _table(method="spray", rand=None):
    sc = fabricsim.load_scenario("permutation").with_overrides(
        {"topology.k": 4, "switch.load_balancing_method": method}
    )
    fab = build_fabric(TopologyConfig(kind="fat_tree", k=4))
    sim = Sim()
    ports = [
        Port(sim, x, 100e9, 1000, 10**9, 10**9, 10**9, 2 * 10**9, True, False, 88, lambda: 0.5)
        for x in range(fab.num_links)
    ]
    sink = Sink()
    rand = rand or np.random.default_rng(0).random
    choices = make_member_choices(sc, fab, sim, rand)
    router = Router.build(fab, seed=1)
    table = RouteTable(
        fab,
        EcmpForwarding(router),
        [p.receive for p in ports],
        [sink.receive] * fab.num_hosts,
        [sink.receive] * fab.num_hosts,
        None,
        {int(s): i for i, s in enumerate(fab.top_switches)},
        choices,
        ports,
    )
    return fab, sim, table, sink, router


class _Pdc:
    flow = 0

    def __init__(self):
        self.routes_used = {}


def test_spray_deciders_reach_every_path_and_control_stays_hashed():
    fab, sim, table, sink, router = _table("spray")
    src, dst = 0, 15  # other pod: 4 paths in a k = 4 fat tree
    route = table.get(src, dst, 1234)
    assert route.label == "" and isinstance(route.hops[-1].__self__, Decider)
    assert route.links == router.route(src, dst, 1234)  # ACKs/NACKs follow the hash
    assert route.ctrl_hops == table.path_route(route.links, True, dst).ctrl_hops
    pdc = _Pdc()
    for i in range(400):
        pkt = Packet()
        pkt.kind, pkt.size, pkt.pdc, pkt.dst, pkt.entropy = DATA, 4184, pdc, dst, 1234
        pkt.hops, pkt.hop = route.hops, 0
        sim.at(i * 1_000_000, route.hops[0], pkt)
    sim.run(10**12)
    assert len(sink.got) == 400
    want = {fab.path_label(p) for p in fab.paths(src, dst)}
    assert {r.label for r in pdc.routes_used} == want and len(want) == 4
    # every delivered packet carries a complete static route's hops
    assert {p.hops for p in sink.got} == {
        table.path_route(p, True, dst).hops for p in fab.paths(src, dst)
    }


def test_trimmed_headers_are_hashed_at_deciders():
    fab, sim, table, sink, router = _table("spray")
    route = table.get(0, 15, 999)
    for _ in range(20):
        pkt = Packet()
        pkt.kind, pkt.size, pkt.pdc, pkt.dst, pkt.entropy = HDR, 88, _Pdc(), 15, 999
        pkt.hops, pkt.hop = route.hops, 0
        sim.at(sim.now, route.hops[0], pkt)
        sim.run(10**12)
    assert {p.hops for p in sink.got} == {table.path_route(route.links, True, 15).hops}


def test_same_edge_pairs_need_no_decider():
    fab, sim, table, sink, router = _table("adaptive")
    route = table.get(0, 1, 7)
    assert route.label == fab.path_label(route.links) and table.roots[(0, 1)][1] is not None


# -- whole runs (small) ------------------------------------------------------------------------
SMALL_FLOW = fabricsim.load_scenario("permutation").with_overrides(
    {"topology.k": 4, "workload.size_bytes": 300_000, "nic.packet_spraying_type": "none"}
)
SMALL = SMALL_FLOW.with_overrides({"nic.cc": "nscc"})  # nic.cc is refused on the flow engine


def run(**over):
    return fabricsim.run(SMALL.with_overrides(over), engine="packet")


@pytest.mark.parametrize("method", ["adaptive", "flowlet", "spray"])
def test_every_method_finishes_and_is_deterministic(method):
    a = run(**{"switch.load_balancing_method": method, "records.switch_lb_stats": True})
    b = run(**{"switch.load_balancing_method": method, "records.switch_lb_stats": True})
    s = a.summary
    assert s["flows_completed"] == 16 and s["bytes_conserved"]
    assert a.flows.equals(b.flows) and a.summary == b.summary
    lb = a.tables["switch_lb_stats"]
    assert len(lb) and lb["packets"].sum() > 0
    assert (a.flows["paths"] >= 1).all()
    assert all(p != "" for p, n in zip(a.flows["path"], a.flows["paths"], strict=True) if n <= 8)
    if method != "flowlet":  # per-packet methods use several paths per inter-pod flow
        far = a.flows[(a.flows["path"].str.count(">") >= 4) | (a.flows["path"] == "")]
        assert len(far) and (far["paths"] > 1).all()


def test_per_packet_methods_beat_ecmp_on_a_small_permutation():
    fct = {
        m: run(**{"switch.load_balancing_method": m, "seed": 2}).summary["fct_mean_s"]
        for m in ("ecmp", "adaptive", "spray")
    }
    assert fct["adaptive"] < 0.8 * fct["ecmp"] and fct["spray"] < 0.8 * fct["ecmp"]


def test_link_failure_from_the_scenario_mid_run():
    fail = [{"link": "agg0_0->core0", "at_s": 20e-6}]
    adaptive = run(
        **{"switch.load_balancing_method": "adaptive", "topology.link_failures": fail, "seed": 3}
    )
    s = adaptive.summary
    assert s["flows_completed"] == 16
    # only what sat in the failed port's queue (or on its wire) is lost; then it is avoided
    assert s["packets_dropped"] <= 10 and s["packets_retransmitted"] == s["packets_dropped"]
    eng = build_engine(
        SMALL.with_overrides(
            {"switch.load_balancing_method": "spray", "topology.link_failures": fail}
        ),
        "packet",
    )
    port = eng.ports[eng.fabric.link_index["agg0_0->core0"]]
    assert not port.failed
    eng.run()
    assert port.failed and port.tx_bytes > 0


def test_unknown_link_failure_is_a_config_error():
    with pytest.raises(ConfigError, match="topology.link_failures"):
        run(**{"topology.link_failures": [{"link": "nope->x", "at_s": 0.0}]})
    with pytest.raises(ConfigError, match="at_s"):
        SMALL.with_overrides({"topology.link_failures": [{"link": "agg0_0->core0", "at_s": -1}]})


def test_reported_start_of_ordinary_flows():
    res = run(**{"switch.load_balancing_method": "spray"})
    assert np.allclose(res.flows["start_s"], 0.0)


@pytest.mark.parametrize(
    "over",
    [
        {"lb.policy": "pinned"},
        {"lb.policy": "qp_scaling", "lb.qp_count": 4},
        {"lb.policy": "qp_scaling", "lb.qp_count": 4, "lb.qp_mode": "split"},
    ],
)
def test_pinned_and_qp_scaling_on_the_packet_engine(over):
    sc = SMALL.with_overrides({**over, "nic.pdc_groups_enabled": False})
    pkt = fabricsim.run(sc, engine="packet")
    flow = fabricsim.run(SMALL_FLOW.with_overrides(over))  # no PDC groups on the flow engine
    assert pkt.summary["flows_completed"] == 16
    assert list(pkt.flows["path"]) == list(flow.flows["path"])  # the same ports, the same paths
    if over.get("lb.qp_mode") == "split":
        assert pkt.flows["path"].str.contains(";").any()


def test_qp_scaling_with_pdc_groups_warns():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = run(**{"lb.policy": "qp_scaling", "lb.qp_count": 4, "lb.qp_mode": "split"})
    assert any("pdc_groups_enabled" in str(w.message) for w in caught)
    assert res.summary["flows_completed"] == 16
    # grouped: every QP of a pair on the group's one entropy value -> one path per flow
    assert not res.flows["path"].str.contains(";").any()


def test_nscc_with_auto_base_rtt():
    res = run(**{"nic.initial_base_rtt_us": "auto", "switch.load_balancing_method": "adaptive"})
    eng = build_engine(SMALL.with_overrides({"nic.initial_base_rtt_us": "auto"}), "packet")
    assert eng.base_rtt_ps == eng.unloaded_rtt_ps
    assert res.summary["flows_completed"] == 16
    ideal = 300_000 * (1 + 88 / 4096) * 8 / 100e9
    assert res.summary["fct_mean_s"] < 1.6 * ideal and not math.isnan(res.summary["fct_mean_s"])


def test_single_packet_messages_report_their_path():
    res = run(**{"switch.load_balancing_method": "spray", "workload.size_bytes": 1000})
    fab = build_fabric(SMALL.topology)
    for src, dst, path in zip(res.flows["src"], res.flows["dst"], res.flows["path"], strict=True):
        want = {
            fab.path_label(p)
            for p in fab.paths(fab.host_names.index(src), fab.host_names.index(dst))
        }
        assert path in want  # exactly one of the pair's paths, never empty
