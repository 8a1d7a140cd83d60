"""Input-port arbitration at lossless switches (switch.pfc_arbitration)."""

from __future__ import annotations

import pytest

import fabricsim
from fabricsim.config.loader import load_scenario
from fabricsim.engine_api import DATA
from fabricsim.errors import EngineRefusal
from fabricsim.experiments.engines import check_supported
from fabricsim.experiments.runner import build_engine
from fabricsim.packetsim.calendar import Sim
from fabricsim.packetsim.packets import Packet
from fabricsim.packetsim.ports import Port

GBPS = 1e9
US = 1_000_000  # ps


def _port(sim: Sim, link: int) -> Port:
    port = Port(
        sim, link, 100 * GBPS, US, 1 << 30, 1 << 20, 1 << 30, 1 << 30, False, False, 64, lambda: 0.5
    )
    port.set_pfc(1 << 30, 1 << 29, 1 << 20, 50 * US)
    return port


def _served(round_robin: bool) -> list[str]:
    """Four packets from ingress a, then one from b, queued at a busy lossless port: the
    order they leave in."""
    sim, order = Sim(), []
    out, a, b = _port(sim, 0), _port(sim, 1), _port(sim, 2)
    if round_robin:
        out.set_arbitration()
    out.busy_until, out.pending = 10 * US, True  # the wire is busy: everything queues
    sim.at(10 * US, out)
    for name, up in [("a1", a), ("a2", a), ("a3", a), ("a4", a), ("b1", b)]:
        pkt = Packet()
        pkt.kind, pkt.size, pkt.prev = DATA, 1_000, up.pfc
        pkt.hops = (out.receive, lambda p, n=name: order.append(n))
        out.receive(pkt)
    assert a.pfc.ing == 4_000 and b.pfc.ing == 1_000  # each ingress counts its own bytes
    sim.run(100 * US)
    assert a.pfc.ing == b.pfc.ing == 0
    return order


def test_round_robin_serves_the_ingress_ports_in_turn_fifo_in_arrival_order():
    assert _served(round_robin=True) == ["a1", "b1", "a2", "a3", "a4"]
    assert _served(round_robin=False) == ["a1", "a2", "a3", "a4", "b1"]


SHORT = {
    "name": "pfc-arbitration-short",
    "seed": 1,
    "engine": {"kind": "packet"},
    "topology": {
        "kind": "leaf_spine",
        "leaves": 2,
        "spines": 1,
        "hosts_per_leaf": 8,
        "host_link_gbps": 100,
        "fabric_link_gbps": 400,
        "link_delay_us": 1.0,
    },
    "workload": {"kind": "trace", "path": "SHORT.csv"},
    "nic": {"transport": "roce", "cc": "constant", "cwnd_bdp": 1000, "rto_us": 100_000},
}


def _short_flow_fct(tmp_path, arbitration: str) -> float:
    """Four senders of leaf0 at line rate into host8, and a 50 kB flow host9 -> host8 (its own
    ingress port at leaf1) once the queue has built: the short flow's FCT, s."""
    rows = [f"host{s},host8,600000,0.0" for s in range(4)] + ["host9,host8,50000,0.0001"]
    path = tmp_path / "short.csv"
    path.write_text("src,dst,size_bytes,start_s\n" + "\n".join(rows) + "\n")
    sc = {
        **SHORT,
        "workload": {"kind": "trace", "path": str(path)},
        "switch": {"pfc_arbitration": arbitration},
    }
    res = fabricsim.run(sc)
    assert res.summary["flows_completed"] == 5 and res.summary["packets_dropped"] == 0
    return float(res.flows["fct_s"].iloc[-1])


def test_a_short_flow_on_its_own_ingress_port_skips_the_queue_under_round_robin(tmp_path):
    fifo, rr = _short_flow_fct(tmp_path, "fifo"), _short_flow_fct(tmp_path, "round_robin")
    print(
        f"50 kB into a paused incast's port: fifo {fifo * 1e6:.0f} us, round robin {rr * 1e6:.0f} us"
    )
    assert rr < fifo / 2


def test_round_robin_is_the_default_on_lossless_switch_ports_only():
    eng = build_engine(load_scenario({**SHORT, "workload": {"kind": "incast", "senders": 4}}))
    kinds = {type(p).__name__: [] for p in eng.ports}
    for p in eng.ports:
        kinds[type(p).__name__].append(p.arb is not None)
    assert all(kinds["Port"]) and not any(kinds["HostPort"])
    fifo = load_scenario(
        {
            **SHORT,
            "workload": {"kind": "incast", "senders": 4},
            "switch": {"pfc_arbitration": "fifo"},
        }
    )
    assert not any(p.arb is not None for p in build_engine(fifo).ports)


def test_the_flow_engine_refuses_the_lossless_switch_keys():
    for key, value in [("switch.pfc_arbitration", "fifo"), ("switch.pfc_watchdog_ms", 1.0)]:
        sc = load_scenario({"name": "x", "workload": {"kind": "incast", "senders": 2}})
        sc = sc.with_overrides({key: value})
        with pytest.raises(EngineRefusal, match=key.split(".")[1]):
            check_supported(sc, "flow")
