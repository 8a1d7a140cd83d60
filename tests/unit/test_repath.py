"""Single-path repathing spraying types: PLB and ROD (issue 16, items 4 and 5)."""

from __future__ import annotations

import pytest

import fabricsim
from fabricsim.config.loader import load_scenario
from fabricsim.errors import EngineRefusal
from fabricsim.experiments.engines import check_supported
from fabricsim.experiments.runner import build_engine
from fabricsim.lb.repath import PlbSpraying, RodSpraying


class _Clock:
    now = 0


class _Pdc:
    def __init__(self, inflight: int = 1) -> None:
        self.src_port, self.inflight, self.acked_pkts, self.npkts = 100, inflight, 0, 1000


def _plb(pdc: _Pdc, clock: _Clock, **kw) -> PlbSpraying:
    args = {"round_ps": 10, "fraction": 0.5, "rounds": 3, "idle_rounds": 2, "idle_only": False}
    return PlbSpraying(pdc, lambda: 0.75, clock, **{**args, **kw})


def test_plb_repaths_after_m_congested_rounds_only():
    clock, pdc = _Clock(), _Pdc()
    plb = _plb(pdc, clock)
    for t, ecn in ((0, True), (10, True), (20, False), (30, True), (40, True)):
        clock.now = t
        plb.on_ack(plb.next_entropy(), ecn)
    assert plb.repaths == 0  # a clean round (t 20..30) reset the count
    for t in (50, 60):
        clock.now = t
        plb.on_ack(plb.next_entropy(), True)
    assert plb.repaths == 1 and plb.next_entropy() == 49152
    clock.now = 70
    plb.on_ack(100, True)  # an ACK of the old path does not count for the new one
    assert plb.acked == 0


def test_plb_idle_only_waits_for_an_idle_moment():
    clock, busy = _Clock(), _Pdc(inflight=1)
    plb = _plb(busy, clock, idle_only=True)
    for t in range(0, 300, 10):
        clock.now = t
        plb.on_ack(plb.next_entropy(), True)
        plb.on_path_failure(plb.next_entropy())
    assert plb.repaths == 0  # always something in flight: never
    busy.inflight = 0
    clock.now = 300
    plb.on_ack(plb.next_entropy(), True)
    assert plb.repaths == 1


def test_rod_changes_at_most_once_per_hold():
    clock, pdc = _Clock(), _Pdc()
    rod = RodSpraying(pdc, lambda: 0.5, clock, hold_ps=100)
    for t in range(0, 1000, 7):
        clock.now = t
        rod.on_ack(rod.next_entropy(), ecn=True)
    gaps = [b - a for a, b in zip(rod.changes, rod.changes[1:], strict=False)]
    assert len(rod.changes) == 10 and min(gaps) >= 100


# Two elephants pinned onto the same spine (destinations 0 and 2 of leaf 1, 2 spines).
COLLIDE: dict = {
    "name": "collide",
    "engine": {"kind": "packet"},
    "topology": {
        "kind": "leaf_spine",
        "leaves": 2,
        "spines": 2,
        "hosts_per_leaf": 4,
        "link_gbps": 100,
        "link_delay_us": 1.0,
    },
    "workload": {"kind": "trace", "path": "@trace"},
    "lb": {"policy": "pinned"},
    "nic": {"initial_base_rtt_us": "auto", "cc": "constant"},  # 1.5 BDP: queues mark
    "records": {"uet_monitor": True},
}


def _run(tmp_path, nic: dict):
    trace = tmp_path / "two.csv"
    trace.write_text("src,dst,size_bytes,start_s\nhost0,host4,16000000,0\nhost1,host6,16000000,0\n")
    d = {**COLLIDE, "workload": {"kind": "trace", "path": str(trace)}}
    d["nic"] = {**COLLIDE["nic"], **nic}
    res = fabricsim.run(load_scenario(d))
    mon = res.tables["uet_monitor"]
    return res, mon


def _spine_of(label: str) -> str:
    return label.split(">")[1]


def test_plb_separates_two_colliding_elephants(tmp_path):
    res, mon = _run(tmp_path, {"packet_spraying_type": "none"})
    ecmp_fct = res.summary["fct_max_s"]
    first = mon.groupby("flow_id").path.first()
    assert _spine_of(first[0]) == _spine_of(first[1])  # they collide
    res, mon = _run(tmp_path, {"packet_spraying_type": "plb"})
    last = mon.groupby("flow_id").path.last()
    changes = mon.groupby("flow_id").entropy_value.nunique()
    print(
        f"PLB: entropy values per flow {changes.tolist()}, last spines "
        f"{[_spine_of(p) for p in last]}; max FCT {res.summary['fct_max_s'] * 1e3:.3f} ms "
        f"(pinned, no PLB: {ecmp_fct * 1e3:.3f} ms)"
    )
    assert changes.max() > 1
    assert _spine_of(last[0]) != _spine_of(last[1])
    assert res.summary["fct_max_s"] < 0.8 * ecmp_fct


def test_plb_idle_only_never_repaths_a_continuous_flow(tmp_path):
    res, mon = _run(tmp_path, {"packet_spraying_type": "plb", "plb": {"idle_only": True}})
    assert (mon.groupby("flow_id").entropy_value.nunique() == 1).all()
    assert res.summary["flows_completed"] == 2


def test_rod_entropy_changes_are_reroute_rtts_apart(tmp_path):
    res, mon = _run(tmp_path, {"packet_spraying_type": "rod", "reroute_rtts": 10})
    sc = load_scenario({**COLLIDE, "workload": {"kind": "permutation"}})
    base_rtt = build_engine(sc, "packet").base_rtt_ps / 1e12
    for _, rows in mon.groupby("flow_id"):
        rows = rows.sort_values("time_s")
        new = rows.entropy_value.ne(rows.entropy_value.shift())
        times = rows.time_s[new].to_numpy()[1:]  # when each new value was first used
        if len(times) > 1:
            assert (times[1:] - times[:-1]).min() >= 10 * base_rtt - 1e-6
    assert mon.groupby("flow_id").entropy_value.nunique().max() > 1
    assert res.summary["flows_completed"] == 2


@pytest.mark.parametrize("name", ["plb", "rod"])
def test_repathing_types_are_packet_only(name):
    sc = load_scenario({**COLLIDE, "nic": {"packet_spraying_type": name}, "records": {}})
    with pytest.raises(EngineRefusal, match="packet"):
        check_supported(sc, "flow")
