"""Event loop, ports and route cache of the packet engine's hot path (packetsim/calendar.py, packets.py, ports.py, pfc.py)."""

from pathlib import Path

import numpy as np
import pytest

from fabricsim.config import TopologyConfig, load_scenario
from fabricsim.engine_api import ACK, DATA, HDR
from fabricsim.nic.pdc import TxQueue
from fabricsim.packetsim.calendar import Sim
from fabricsim.packetsim.forwarding import EcmpForwarding, RouteTable
from fabricsim.packetsim.packets import Packet
from fabricsim.packetsim.ports import Port
from fabricsim.routing.hashing import FIVE_TUPLE, QP_SHIFT
from fabricsim.routing.router import Router
from fabricsim.topology import build_fabric


class Sink:
    def __init__(self, sim):
        self.sim, self.got = sim, []

    def receive(self, pkt):
        self.got.append((self.sim.now, pkt.kind, pkt.psn, pkt.size, pkt.ecn))


def make_port(
    sim,
    rate=100e9,
    delay=1_000_000,
    cap=10**9,
    hcap=10**9,
    kmin=10**9,
    kmax=2 * 10**9,
    trimming=True,
    rand=lambda: 0.5,
    tail_victim=0.0,
):
    return Port(sim, 0, rate, delay, cap, hcap, kmin, kmax, trimming, False, 88, rand, tail_victim)


def pkt_for(port, sink, psn, size=4184, kind=DATA):
    p = Packet()
    p.kind, p.psn, p.size = kind, psn, size
    p.hops, p.hop = (port.receive, sink.receive), 0
    return p


def test_sim_orders_by_time_then_insertion():
    sim = Sim()
    out = []
    for t, tag in [(5, "c"), (1, "a"), (5, "d"), (3, "b")]:
        sim.at(t, out.append, tag)

    def chain(_):  # scheduling at the current time runs in the same pass, after the others
        out.append("e")
        sim.at(sim.now, out.append, "f")

    sim.at(5, chain)
    assert sim.run(10) == 6 and out == ["a", "b", "c", "d", "e", "f"]
    assert sim.now == 5 and not sim.stopped


def test_sim_heap_keeps_time_then_insertion_order_through_growth():
    """Many ties and out-of-order times through several doublings of the tables, half of the
    events scheduled after a partial run: the order is (time, insertion), a stable sort's."""
    rng = np.random.default_rng(5)
    sim = Sim(capacity=2)
    times = rng.integers(0, 50, 5000).tolist()
    out: list[int] = []
    for i in range(2500):
        sim.at(times[i], out.append, i)
    sim.run(20)
    assert sim.stopped and len(out) == sum(t <= 20 for t in times[:2500])
    late = [max(t, 20) for t in times]  # scheduled at 20: never earlier than now
    for i in range(2500, 5000):
        sim.at(times[i], out.append, i)
    assert sim.pending == 5000 - len(out)
    sim.run(10**6)
    first = sorted((i for i in range(2500) if times[i] <= 20), key=lambda i: times[i])
    done = set(first)
    rest = sorted((i for i in range(5000) if i not in done), key=lambda i: late[i])
    assert out == first + rest
    assert sim.pending_args() == [] and sim.events == 5000


def test_sim_refuses_more_events_than_its_keys_hold():
    sim = Sim()
    sim.seq = (1 << 37) - 1  # the last insertion number a calendar key holds
    sim.at(1, print, None)
    with pytest.raises(RuntimeError, match="events scheduled in one run"):
        sim.at(2, print, None)


@pytest.mark.parametrize(
    ("width_bits", "wheel_bits", "bucket_max"), [(2, 6, 8), (5, 7, 16), (10, 11, 1024)]
)
def test_sim_wheel_runs_events_in_heap_order(width_bits, wheel_bits, bucket_max):
    """Events scheduled by events, at delays within the current window, across the wheel,
    past it (the overflow heap), beyond a full bucket's room (the overflow heap too) and after
    idle gaps (the wheel empties and jumps), with runs cut at limits and resumed: the calendar
    runs them as a heap of (time, insertion) does.  Each event draws its follow-ups from one
    generator in the order events run, so any misordering changes what follows."""
    import heapq

    width = 1 << width_bits
    span = width << wheel_bits

    def play(calendar: str) -> list[tuple[int, int]]:
        rng = np.random.default_rng(11)
        log: list[tuple[int, int]] = []
        ref: list[tuple[int, int, int]] = []
        seq = [0]
        sim = Sim(4, width_bits, wheel_bits, bucket_max)

        def schedule(now: int) -> None:
            for _ in range(int(rng.integers(1, 3))):
                kind = rng.integers(0, 7)
                if kind >= 5:  # a window's first or last picosecond (the wheel's edges)
                    t = ((now >> width_bits) + int(rng.integers(1, 3 << wheel_bits))) * width
                    delay = t - now - int(kind == 6)
                elif kind == 0:
                    delay = 0
                elif kind == 1:
                    delay = int(rng.integers(0, width))
                elif kind == 2:
                    delay = int(rng.integers(width, span))
                elif kind == 3:
                    delay = int(rng.integers(span - width, 3 * span))
                else:
                    delay = int(rng.integers(0, 40 * span)) if rng.random() < 0.1 else 7
                if calendar == "wheel":
                    sim.at(now + delay, event, seq[0])
                else:
                    heapq.heappush(ref, (now + delay, seq[0], seq[0]))
                seq[0] += 1

        def event(tag: int) -> None:
            log.append((sim.now if calendar == "wheel" else clock[0], tag))
            if len(log) < 4000:
                schedule(log[-1][0])

        clock = [0]
        for start in (0, 5, 5, 3 * span):
            for _ in range(3):
                schedule(start)
        if calendar == "wheel":
            for limit in (span // 3, span, 7 * span, 10**12):
                sim.stopped = False
                sim.run(limit)
            assert sim.pending == 0 and sim.pending_args() == []
        else:
            while ref:
                clock[0], _, tag = heapq.heappop(ref)
                event(tag)
        return log

    got, want = play("wheel"), play("heap")
    assert len(got) > 4000 and got == want


def test_sim_wheel_of_the_widest_buckets_and_the_latest_times():
    """Buckets of 2**30 ps (compiled, the window's width is no 32-bit shift), times up to the
    calendar's end at 2**62 ps, and none later."""
    width = 1 << 30
    sim, out = Sim(width_bits=30, wheel_bits=6), []

    def first(_):
        sim.at(sim.now + 1000, out.append, "A")  # the same window, later
        sim.at(sim.now + width, out.append, "B")  # the next window
        sim.at((1 << 62) - 5, out.append, "D")
        sim.at(1 << 62, out.append, "E")
        sim.at(sim.now + 70 * width, out.append, "C")  # past the wheel

    sim.at(2 * width + 7, first, None)
    assert sim.run(1 << 62) == 6 and out == ["A", "B", "C", "D", "E"]
    with pytest.raises(ValueError, match="2\\*\\*62"):
        sim.at((1 << 62) + 1, out.append, "F")
    with pytest.raises(ValueError, match="2\\*\\*30 ps"):
        Sim(width_bits=31)


def test_sim_stops_at_the_limit_and_can_resume():
    sim = Sim()
    out = []
    sim.at(2, out.append, 1)
    sim.at(20, out.append, 2)
    assert sim.run(10) == 1 and sim.stopped and sim.pending == 1
    sim.stopped = False
    assert sim.run(100) == 1 and out == [1, 2]


def test_serialization_and_propagation():
    sim = Sim()
    port, sink = make_port(sim), None
    sink = Sink(sim)
    for i in range(3):
        sim.at(0, port.receive, pkt_for(port, sink, i))
    sim.run(10**12)
    ser = 4184 * 80  # 100 Gbps: 80 ps per byte
    assert [t for t, *_ in sink.got] == [1_000_000 + ser * (i + 1) for i in range(3)]
    assert port.tx_bytes == 3 * 4184 and port.tx_pkts == 3 and port.peak == 2 * 4184


def test_priority_queue_serves_control_first():
    sim = Sim()
    port, sink = make_port(sim), None
    sink = Sink(sim)
    sim.at(0, port.receive, pkt_for(port, sink, 0))
    sim.at(1, port.receive, pkt_for(port, sink, 1))
    sim.at(2, port.receive, pkt_for(port, sink, 2, size=88, kind=ACK))
    sim.run(10**12)
    assert [psn for _, _, psn, _, _ in sink.got] == [0, 2, 1]


def test_full_queue_trims_to_a_header_in_the_priority_queue():
    sim = Sim()
    port, sink = make_port(sim, cap=4184), None
    sink = Sink(sim)
    for i in range(4):
        sim.at(0, port.receive, pkt_for(port, sink, i))
    sim.run(10**12)
    # 0 on the wire, 1 queued, 2 and 3 trimmed and served first
    assert [(psn, kind, size) for _, kind, psn, size, _ in sink.got] == [
        (0, DATA, 4184),
        (2, HDR, 88),
        (3, HDR, 88),
        (1, DATA, 4184),
    ]
    assert port.trims == 2 and port.drops == 0


def test_drop_tail_and_header_overflow():
    sim = Sim()
    port, sink = make_port(sim, cap=4184, trimming=False), None
    sink = Sink(sim)
    for i in range(4):
        sim.at(0, port.receive, pkt_for(port, sink, i))
    sim.run(10**12)
    assert [psn for _, _, psn, _, _ in sink.got] == [0, 1] and port.data_drops == 2
    sim2 = Sim()
    port2, sink2 = make_port(sim2, cap=4184, hcap=88), Sink(sim2)
    for i in range(4):
        sim2.at(0, port2.receive, pkt_for(port2, sink2, i))
    sim2.run(10**12)
    assert port2.trims == 1 and port2.data_drops == 1


def test_ecn_marks_at_dequeue_between_thresholds():
    sim = Sim()
    draws = iter([0.9, 0.1] * 50)
    port = make_port(sim, kmin=4184, kmax=4 * 4184, rand=lambda: next(draws))
    sink = Sink(sim)
    for i in range(8):
        sim.at(0, port.receive, pkt_for(port, sink, i))
    sim.run(10**12)
    marks = [ecn for *_, ecn in sink.got]
    # left queued at dequeue: 6,5,4 packets (>= kmax: always), 3,2 (random), 1,0 (never)
    assert marks[0] is False  # left an empty queue when it started
    assert marks[1:4] == [True, True, True]
    assert marks[6:] == [False, False]
    assert port.marks == sum(marks)


def test_failed_port_drops_everything():
    sim = Sim()
    port, sink = make_port(sim), None
    sink = Sink(sim)
    sim.at(0, port.receive, pkt_for(port, sink, 0))
    sim.at(1, port.receive, pkt_for(port, sink, 1))
    sim.at(2, lambda _: port.fail())
    sim.at(3, port.receive, pkt_for(port, sink, 2, size=88, kind=ACK))
    sim.run(10**12)
    assert [psn for _, _, psn, _, _ in sink.got] == [0]  # 1 was queued when the link failed
    assert port.drops == 2 and port.data_drops == 1


def _bare_table(fab, router):
    """A route table with no elements behind it (routes are read, never run)."""
    return RouteTable(
        fab,
        EcmpForwarding(router),
        [None] * fab.num_links,
        [None] * fab.num_hosts,
        [None] * fab.num_hosts,
        None,
        {int(s): i for i, s in enumerate(fab.top_switches)},
    )


@pytest.mark.parametrize("method", ["crc32WithSalt", "crc32", "crc32Offset"])
def test_route_cache_matches_router(method):
    fab = build_fabric(TopologyConfig(kind="fat_tree", k=4))
    router = Router.build(fab, seed=3, method=method)
    table = _bare_table(fab, router)
    rng = np.random.default_rng(0)
    for _ in range(300):
        src, dst = (int(x) for x in rng.choice(fab.num_hosts, 2, replace=False))
        ev = int(rng.integers(0, 65536))
        route = table.get(src, dst, ev)
        assert route.links == router.route(src, dst, ev)
        assert route.label == fab.path_label(route.links) and route.ok
    assert table.get(0, 15, 7) is table.get(0, 15, 7)


@pytest.mark.parametrize("fields", [FIVE_TUPLE, (*FIVE_TUPLE, "dst_qp"), ("dst_ip", "src_port")])
def test_forwarding_key_is_the_routers_key(fields):
    """``EcmpForwarding.key`` (base CRCs kept by an integer key, :func:`header_key`) equals
    ``Router.key`` and the vectorized ``Router.keys``, with and without QP bits."""
    fab = build_fabric(TopologyConfig(kind="fat_tree", k=4))
    router = Router.build(fab, seed=3, fields=fields)
    fwd = EcmpForwarding(router)
    rng = np.random.default_rng(2)
    for _ in range(400):
        src, dst = (int(x) for x in rng.choice(fab.num_hosts, 2, replace=False))
        entropy = int(rng.integers(0, 65536)) | int(rng.integers(0, 8)) << QP_SHIFT
        want = int(router.keys(router.base(src, dst), np.array([entropy]))[0])
        assert fwd.key(src, dst, entropy) == router.key(src, dst, entropy) == want


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
GROUP_FABRICS = {
    "fat_tree": {"topology": {"kind": "fat_tree", "k": 4}},
    "fat_tree_failed": {
        "topology": {
            "kind": "fat_tree",
            "k": 4,
            "failed_links": ["agg0_0->core0", "core3->agg2_1", "edge1_0->agg1_1"],
        }
    },
    "withdrawn": {
        "topology": {
            "kind": "fat_tree",
            "k": 4,
            "failed_links": ["agg0_0->core0", "edge1_0->agg1_1"],
            "failed_link_mode": "withdraw",
        }
    },
    "oversubscribed": {"topology": {"kind": "leaf_spine", "leaves": 4, "spines": 3}},
    "parallel": {"topology": {"kind": "leaf_spine", "leaves": 3, "spines": 2, "parallel_links": 2}},
    "planes": {"example": "hpn_dual_plane.yaml"},
    "planes_dead_tor": {
        "example": "hpn_dual_plane.yaml",
        "topology.failed_switches": ["p1_leaf0"],
    },
    "rails_pxn": {"example": "rails_pxn.yaml"},
}


@pytest.mark.parametrize("name", sorted(GROUP_FABRICS))
def test_route_table_groups_are_the_fabric_groups(name):
    """The table's ECMP groups, filled per leaf and shared per switch, are the fabric's own
    (``Fabric.ecmp_group``) for every node and destination host, in any lookup order."""
    case = dict(GROUP_FABRICS[name])
    example = case.pop("example", None)
    sc = load_scenario(str(EXAMPLES / example)) if example else load_scenario("permutation")
    fab = build_fabric(sc.with_overrides(case).topology)
    router = Router.build(fab, seed=3)
    table = _bare_table(fab, router)
    pairs = [(n, d) for n in range(fab.num_nodes) for d in range(fab.num_hosts)]
    order = np.random.default_rng(1).permutation(len(pairs))
    for i in order.tolist():
        node, dst = pairs[i]
        want = tuple(int(x) for x in fab.ecmp_group(node, dst))
        assert table.group(node, dst) == want, (node, dst)


def test_a_full_queue_may_trim_its_last_packet_instead():
    """tail_victim: on heads of the coin the arriving packet takes the last queued packet's
    place and that one is trimmed (htsim); the header knows it was trimmed at the last hop."""

    def run(coin):
        sim = Sim()
        sink = Sink(sim)
        port = make_port(sim, cap=4184, rand=lambda: coin, tail_victim=0.5)
        pkts = [pkt_for(port, sink, i) for i in range(4)]
        for p in pkts:
            sim.at(0, port.receive, p)
        sim.run(10**12)
        return [(psn, kind) for _, kind, psn, _, _ in sink.got], port, pkts

    # heads: 0 on the wire, 1 queued; 2 replaces 1 (1 trimmed), 3 replaces 2 (2 trimmed)
    got, port, pkts = run(0.25)
    assert got == [(0, DATA), (1, HDR), (2, HDR), (3, DATA)]
    assert port.trims == 2 and pkts[1].last_hop and pkts[2].last_hop
    got, port, _ = run(0.75)  # tails: the arriving packets are trimmed
    assert got == [(0, DATA), (2, HDR), (3, HDR), (1, DATA)]


def test_tx_queue_keeps_its_order_across_wrap_and_growth():
    """The RTO ring (``nic.pdc.TxQueue``) returns its entries oldest first when it doubles
    while wrapped around (the ring is copied as bytes from its head)."""
    q = TxQueue()
    want = []
    for rnd in range(6):
        for i in range(13 * (rnd + 1)):
            entry = (rnd, i, 7 * i, -i)
            q.push(*entry)
            want.append(entry)
        for _ in range(9 * (rnd + 1)):
            assert (q.first(0), q.first(1), q.first(2), q.first(3)) == want.pop(0)
            q.pop()
    assert q.n == len(want) and q.mask + 1 >= q.n
    while q.n:
        assert (q.first(0), q.first(1), q.first(2), q.first(3)) == want.pop(0)
        q.pop()


# -- PFC: a component a lossless port holds -----------------------------------------------------
def _lossless_pair(sim, xoff=10_000, xon=5_000, room=5_000):
    """An upstream port (its link's ingress is PFC's) feeding a downstream one, both lossless."""
    sink = Sink(sim)
    up, down = make_port(sim), make_port(sim)
    for p in (up, down):
        p.set_pfc(xoff, xon, room, 100_000_000)
    return up, down, sink


def test_a_lossy_port_holds_no_pfc_and_its_packets_carry_none():
    sim = Sim()
    port, sink = make_port(sim), Sink(sim)
    assert port.pfc is None and port.pfc_kept is None
    for psn in range(3):
        port.receive(pkt_for(port, sink, psn))
    sim.run(10**9)
    assert [g[2] for g in sink.got] == [0, 1, 2]
    assert (port.pfc_pauses, port.paused_ps(sim.now), port.peak_ing, port.xoff) == (0, 0, 0, 0)


def test_a_lossless_port_accounts_the_ingress_it_came_over_and_pauses_it():
    sim = Sim()
    up, down, sink = _lossless_pair(sim)
    assert up.pfc is not None and up.pfc.port is up and up.cap == 1 << 62
    pkts = []
    for psn in range(4):  # the downstream port is busy after the first: three wait there
        pkt = pkt_for(down, sink, psn)
        pkt.prev = up.pfc  # as if ``up`` had sent them
        pkts.append(pkt)
        down.receive(pkt)
    assert up.pfc.ing == 3 * 4184 and up.peak_ing == 3 * 4184  # past XOFF (10 kB)
    assert up.pfc.xoff_sent and not up.paused  # the XOFF is on its way (a link delay)
    sim.run(down.delay_ps + 1)
    assert up.paused and up.pfc_pauses == 1
    sim.run(10**9)
    assert up.pfc.ing == 0 and not up.pfc.xoff_sent and not up.paused  # XON once drained
    assert [g[2] for g in sink.got] == [0, 1, 2, 3] and down.drops == 0
    assert all(p.prev is down.pfc for p in pkts)  # each left ``down``: its ingress now


def test_past_the_headroom_a_lossless_port_drops():
    sim = Sim()
    up, down, sink = _lossless_pair(sim, xoff=5_000, xon=1_000, room=1_000)
    for psn in range(3):
        pkt = pkt_for(down, sink, psn)
        pkt.prev = up.pfc
        down.receive(pkt)
    # the first leaves at once; the second passes XOFF; the third would pass XOFF + headroom
    assert (down.drops, down.data_drops, up.pfc.ing) == (1, 1, 4184)


def test_a_failed_lossless_port_leaves_pfc_and_keeps_its_counters():
    sim = Sim()
    up, down, sink = _lossless_pair(sim)
    down.pfc.on_pause(50_000)  # a frame that pauses ``down`` for 50 ns
    sim.run(60_000)
    for psn in range(3):
        pkt = pkt_for(down, sink, psn)
        pkt.prev = up.pfc
        down.receive(pkt)
    held = up.pfc.ing
    down.fail()
    assert down.pfc is None and down.pfc_kept is not None
    assert up.pfc.ing == held - 2 * 4184  # what waited at ``down`` is released (not the first)
    assert down.pfc_pauses == 1 and down.paused_ps(sim.now) == 50_000


def test_sim_holds_an_events_objects_only_while_it_is_pending():
    """The calendar's slots take a reference to each callback and argument and give it back
    when the event runs (compiled: the in-place put/take of calendar.pxd)."""
    import sys

    sim, out = Sim(), []
    fn, arg = out.append, object()
    before = sys.getrefcount(fn), sys.getrefcount(arg)
    for t in range(100):
        sim.at(t, fn, arg)
    assert sys.getrefcount(arg) == before[1] + 100
    sim.run(10**6)
    assert len(out) == 100 and sim.pending_args() == []
    out.clear()
    assert (sys.getrefcount(fn), sys.getrefcount(arg)) == before
