"""Lossless RoCE: PFC, the RoCEv2 RC transport (go-back-N, selective) and DCQCN (issue 15)."""

from __future__ import annotations

from pathlib import Path

import pytest

import fabricsim
from fabricsim.cc.base import CcParams
from fabricsim.cc.dcqcn import Dcqcn
from fabricsim.config.loader import load_scenario
from fabricsim.config.models import NicConfig
from fabricsim.config.roce import DCQCN_PAPER, dcqcn_ecn_bytes
from fabricsim.engine_api import DATA
from fabricsim.errors import ConfigError, EngineRefusal
from fabricsim.experiments.engines import check_supported
from fabricsim.experiments.runner import build_engine
from fabricsim.packetsim.calendar import Sim
from fabricsim.packetsim.packets import Packet
from fabricsim.packetsim.ports import Port

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

GBPS = 1e9
US = 1_000_000  # ps


def _summary_conserved(s: dict) -> None:
    """Every data packet sent arrived (whole or trimmed), was dropped, or is still out."""
    assert s["bytes_conserved"] is True
    assert s["packets_sent"] == (
        s["packets_received"]
        + s["headers_received"]
        + s["packets_dropped"]
        + s["packets_in_flight_at_end"]
    )


# -- PFC at the port --------------------------------------------------------------------------
def _port(sim: Sim, arrivals: list[int]) -> tuple[Port, Packet]:
    """A 100 Gbps port with 1 us of delay whose packets land in ``arrivals`` (their times)."""
    port = Port(
        sim, 0, 100 * GBPS, US, 1 << 30, 1 << 20, 1 << 30, 1 << 30, False, False, 64, lambda: 0.5
    )
    port.set_pfc(10_000, 5_000, 20_000, 50 * US)
    pkt = Packet()
    pkt.kind, pkt.size = DATA, 1_000
    pkt.hops = (port.receive, lambda p: arrivals.append(sim.now))
    return port, pkt


def test_a_pause_reaches_the_upstream_port_one_link_delay_later():
    sim, arrivals = Sim(), []
    port, pkt = _port(sim, arrivals)
    sim.at(0, lambda _: port.pfc.send_pause(True))  # its link's far end crosses XOFF at t = 0
    seen = []
    for t in (US - 1, US + 1):  # (at US itself, the check scheduled first runs first)
        sim.at(t, lambda _: seen.append(port.paused))
    sim.run(US + 1)
    assert seen == [False, True]
    sim.at(US + 10, lambda _: port.receive(pkt))  # data offered while paused waits
    sim.at(5 * US, lambda _: port.pfc.send_pause(False))  # XON decided at 5 us ...
    sim.run(20 * US)
    assert not port.paused
    # ... arrives at 6 us; the packet then takes 80 ps/byte and the link's delay
    assert arrivals == [6 * US + 1_000 * 80 + US]
    assert port.pfc_pauses == 1
    assert port.paused_ps(sim.now) == 5 * US  # paused from 1 us to 6 us


def test_a_pause_expires_unless_refreshed():
    sim, arrivals = Sim(), []
    port, pkt = _port(sim, arrivals)
    sim.at(0, lambda _: port.pfc.on_pause(3 * US))  # one frame, no refresh, no XON
    sim.at(10, lambda _: port.receive(pkt))
    sim.run(100 * US)
    assert arrivals == [3 * US + 80_000 + US]
    sim2, arrivals2 = Sim(), []
    held, pkt2 = _port(sim2, arrivals2)
    sim2.at(0, lambda _: held.pfc.send_pause(True))  # the far end stays over XON: refreshes
    sim2.at(US + 10, lambda _: held.receive(pkt2))  # after the XOFF arrived
    sim2.run(500 * US)
    assert arrivals2 == [] and held.paused and held.pfc_pauses >= 10


# -- the 32 -> 1 incast -------------------------------------------------------------------------
INCAST = {
    "name": "incast-roce",
    "seed": 1,
    "engine": {"kind": "packet"},
    "topology": {
        "kind": "fat_tree",
        "k": 4,
        "hosts_per_edge": 5,
        "link_gbps": 100,
        "link_delay_us": 1.0,
    },
    "workload": {"kind": "incast", "senders": 32, "receiver": 0, "size_bytes": 500_000},
    "lb": {"policy": "ecmp"},
    "nic": {"transport": "roce", "initial_base_rtt_us": "auto"},
    "records": {"port_stats": True},
}


def test_incast_with_pfc_and_dcqcn_is_lossless_and_keeps_the_receiver_busy():
    res = fabricsim.run(INCAST)
    s = res.summary
    assert s["flows_completed"] == s["flows_total"] == 32
    assert s["packets_dropped"] == s["packets_trimmed"] == s["control_packets_dropped"] == 0
    assert s["pfc_pauses"] > 0 and s["pfc_paused_s"] > 0
    assert s["cnps_sent"] > 0
    _summary_conserved(s)
    ports = res.tables["port_stats"].set_index("link")
    assert (
        ports["peak_ingress_bytes"] <= ports["pfc_xoff_bytes"] + ports["pfc_headroom_bytes"]
    ).all()
    down = ports.loc["edge0_0->host0"]
    span = (res.flows["finish_s"] - res.flows["start_s"].min()).max()
    busy = down["bytes"] * 8 / (down["rate_bps"] * span)
    print(f"incast, PFC + DCQCN: receiver link busy {busy:.1%} of {span * 1e3:.3f} ms")
    assert busy >= 0.95


def test_dynamic_thresholds_pause_sooner_as_the_shared_buffer_fills():
    def run(alpha: float) -> dict:
        sc = load_scenario(INCAST).with_overrides(
            {"switch.pfc_dynamic_alpha": alpha, "switch.pfc_shared_buffer_bytes": 4_000_000}
        )
        res = fabricsim.run(sc)
        s = res.summary
        assert s["flows_completed"] == 32 and s["packets_dropped"] == 0
        _summary_conserved(s)
        return {**s, "peak": int(res.tables["port_stats"]["peak_ingress_bytes"].max())}

    tight, loose = run(0.125), run(8.0)
    # alpha 1/8: an ingress pauses at 1/8 of the free 4 MB, far below the static 1 MB
    assert tight["pfc_pauses"] > loose["pfc_pauses"] and tight["peak"] < loose["peak"]
    assert tight["peak"] <= 0.125 * 4_000_000 + 37_552


def test_incast_without_pfc_drops_and_goes_back_n():
    res = fabricsim.run(load_scenario(INCAST).with_overrides({"switch.pfc": False}))
    s = res.summary
    assert s["flows_completed"] == s["flows_total"]
    assert s["packets_dropped"] > 0 and "pfc_pauses" not in s
    assert s["naks_received"] > 0 and s["packets_retransmitted"] > s["packets_dropped"]
    _summary_conserved(s)


def test_selective_retransmission_recovers_what_was_lost():
    sc = load_scenario(INCAST).with_overrides(
        {"switch.pfc": False, "nic.roce.retransmit": "selective"}
    )
    s = fabricsim.run(sc).summary
    gbn = fabricsim.run(load_scenario(INCAST).with_overrides({"switch.pfc": False})).summary
    assert s["flows_completed"] == s["flows_total"]
    _summary_conserved(s)
    assert s["packets_retransmitted"] < gbn["packets_retransmitted"]


# -- congestion spreading ------------------------------------------------------------------------
def _victim_rate(cc_overrides: dict) -> tuple[float, dict]:
    """``examples/pfc_victim.yaml``: four senders of leaf 0 -> host8 (400 Gbps into 100); the
    victim host7 -> host9 (idle) shares their uplink and the spine's link to leaf 1."""
    overrides = {f"nic.{k}": v for k, v in cc_overrides.items()}
    res = fabricsim.run(load_scenario(EXAMPLES / "pfc_victim.yaml").with_overrides(overrides))
    v = res.flows.iloc[4]
    hosts = res.tables["port_stats"].set_index("link").filter(regex=r"^host\d+->", axis=0)
    return 8 * v["size_bytes"] / v["fct_s"], {**res.summary, "host_pauses": hosts.pfc_pauses.sum()}


def test_pfc_spreads_congestion_to_a_victim_and_dcqcn_gives_it_back():
    # no congestion control: a window far beyond the path (1000 BDP) -- line rate into PFC
    no_cc, s0 = _victim_rate({"cc": "constant", "cwnd_bdp": 1000.0})
    dcqcn, s1 = _victim_rate({})
    print(
        f"victim to an idle host: {no_cc / GBPS:.1f} Gbps under PFC without CC "
        f"({s0['pfc_pauses']} pauses), {dcqcn / GBPS:.1f} Gbps with DCQCN ({s1['pfc_pauses']})"
    )
    assert s0["packets_dropped"] == s1["packets_dropped"] == 0
    assert s0["pfc_pauses"] > 0 and s0["host_pauses"] > 0  # the senders' NICs obey too
    assert no_cc < 0.5 * 100 * GBPS
    assert dcqcn > 0.8 * 100 * GBPS


# -- out-of-order cost -----------------------------------------------------------------------
def test_spraying_costs_go_back_n_retransmissions_that_uet_does_not_pay():
    """8 flows leaf to leaf with per-packet spraying: go-back-N resends much of what it sends."""
    base = {
        "name": "ooo",
        "engine": {"kind": "packet"},
        "topology": {
            "kind": "leaf_spine",
            "leaves": 2,
            "spines": 8,
            "hosts_per_leaf": 8,
            "link_gbps": 100,
            "link_delay_us": 1.0,
        },
        "workload": {"kind": "leaf_to_leaf", "size_bytes": 1_000_000},
        "nic": {"initial_base_rtt_us": "auto", "packet_spraying_type": "oblivious"},
    }
    uet = fabricsim.run(base).summary
    roce = fabricsim.run(load_scenario(base).with_overrides({"nic.transport": "roce"})).summary
    print(
        f"spraying, 8 flows: UET {uet['packets_retransmitted']} retransmitted, max FCT "
        f"{uet['fct_max_s'] * 1e3:.3f} ms; RoCE go-back-N {roce['packets_retransmitted']} "
        f"retransmitted ({roce['naks_received']} NAKs), {roce['fct_max_s'] * 1e3:.3f} ms"
    )
    assert roce["flows_completed"] == uet["flows_completed"] == 8
    assert roce["packets_retransmitted"] > 10 * max(uet["packets_retransmitted"], 1)
    assert roce["fct_max_s"] > 2 * uet["fct_max_s"]
    _summary_conserved(roce)


# -- DCQCN convergence --------------------------------------------------------------------------
def test_dcqcn_two_flows_share_a_bottleneck_and_absorb_a_third():
    sc = load_scenario(EXAMPLES / "dcqcn_share.yaml")
    res = fabricsim.run(sc)
    s = res.summary
    assert s["flows_completed"] == 3 and s["packets_dropped"] == 0
    wire = sc.nic.rdma_data_mss + sc.nic.header_bytes
    sent = res.tables["uet_monitor"]

    def gbps(flow: int, t0: float, t1: float) -> float:
        n = ((sent.flow_id == flow) & (sent.time_s >= t0) & (sent.time_s < t1)).sum()
        return n * wire * 8 / (t1 - t0) / GBPS

    two = [gbps(f, 0.001, 0.004) for f in (0, 1)]
    three = [gbps(f, 0.005, 0.011) for f in (0, 1, 2)]
    print(f"DCQCN: two flows {two} Gbps; with a third {three} Gbps")
    assert all(abs(r - 50) <= 5 for r in two)  # within 10 % of the fair share
    assert sum(three) >= 95 and all(r >= 0.7 * 100 / 3 for r in three)
    tl = res.tables["timeline_links"]
    q = tl[(tl.link == "leaf1->host4") & (tl.time_s >= 0.001) & (tl.time_s < 0.011)]
    kmin, kmax = dcqcn_ecn_bytes(100 * GBPS)
    assert kmin < q.queue_bytes.mean() < kmax
    assert s["pfc_pauses"] == 0  # the queue stays below PFC's XOFF at each ingress


# -- the reaction point alone -------------------------------------------------------------------
OLD_DCQCN = {  # the parameters these tests were written for (the NIC defaults differ)
    **DCQCN_PAPER,
    "byte_counter_bytes": None,
    "clamp_target_rate": False,
    "hai_mbps": 400.0,
    "min_rate_mbps": 100.0,
}


def _rp(**dcqcn) -> Dcqcn:
    nic = NicConfig.model_validate({"transport": "roce", "dcqcn": {**OLD_DCQCN, **dcqcn}})
    return Dcqcn(CcParams(100 * GBPS, 10 * US, 4184, 125_000, nic=nic))


def test_dcqcn_cuts_on_cnp_recovers_and_speeds_up():
    rp = _rp()
    assert rp.pacing_bps == 100 * GBPS and rp.cwnd_bytes == float("inf")
    rp.on_cnp(0)
    assert rp.pacing_bps == 50 * GBPS and rp.alpha == pytest.approx(1.0)
    rp.on_send(55 * US, 4184)  # one timer period: fast recovery halves the gap to 100
    assert rp.pacing_bps == pytest.approx(75 * GBPS)
    rp.on_send(10_000 * US, 4184)  # long without CNPs: back at line rate, alpha decayed
    assert rp.pacing_bps == 100 * GBPS and rp.alpha < 0.5
    for t in range(10):  # CNPs every 50 us: the rate falls to the floor, never below
        rp.on_cnp(20_000 * US + 50 * US * t)
    assert rp.pacing_bps >= 100e6
    cut = _rp(min_rate_mbps=30_000.0)
    for t in range(10):
        cut.on_cnp(50 * US * t)
    assert cut.pacing_bps == pytest.approx(30 * GBPS)


def test_dcqcn_hyper_increase_after_fast_recovery():
    rp = _rp(
        ai_mbps=0.0,
        hai_mbps=1000.0,
        rate_timer_us=10.0,
        alpha_interval_us=10.0,
        clamp_target_rate=True,
    )
    rp.on_cnp(0)
    rp.on_cnp(1)  # clamped: the target is the rate before this cut (50 Gbps)
    target = rp.target_bps
    assert target == 50 * GBPS and rp.pacing_bps < target
    rp.on_send(55 * US, 1)  # timer events 1 .. 5 (at 10 .. 50 us): fast recovery only
    assert rp.target_bps == target and rp.increase_events == 5
    rp.on_send(75 * US, 1)  # event 6 is additive (+0 here), event 7 hyper (+1 Gbps)
    assert rp.target_bps == pytest.approx(target + 1e9)


# -- configuration ------------------------------------------------------------------------------
def test_roce_brings_its_defaults_and_scenario_values_win():
    sc = load_scenario(INCAST)
    assert sc.switch.pfc and sc.nic.cc == "dcqcn" and not sc.switch.trimming
    assert sc.switch.ecn_max_prob == 0.01
    mine = load_scenario(INCAST).with_overrides({"switch.pfc": False, "nic.cc": "nscc"})
    assert not mine.switch.pfc and mine.nic.cc == "nscc"
    uet = load_scenario({**INCAST, "nic": {}})
    assert not uet.switch.pfc and uet.nic.cc == "constant" and uet.switch.trimming


def test_bad_roce_input_is_one_line():
    with pytest.raises(ConfigError, match=r"nic.cc: dcqcn .* set nic.transport=roce"):
        load_scenario({**INCAST, "nic": {"cc": "dcqcn"}})
    with pytest.raises(ConfigError, match="hai_mbps"):
        load_scenario({**INCAST, "nic": {"transport": "roce", "dcqcn": {"hai_mbps": 1.0}}})
    with pytest.raises(ConfigError, match="pfc_xoff_bytes and pfc_dynamic_alpha both set"):
        load_scenario(INCAST).with_overrides(
            {"switch.pfc_dynamic_alpha": 1.0, "switch.pfc_xoff_bytes": 100_000}
        )
    with pytest.raises(ConfigError, match="retransmit"):
        load_scenario({**INCAST, "nic": {"transport": "roce", "roce": {"retransmit": "gbn"}}})
    uet = load_scenario({**INCAST, "nic": {}}).with_overrides({"switch.pfc_xoff_bytes": 1000})
    with pytest.raises(EngineRefusal, match="read only when switch.pfc is true"):
        check_supported(uet, "packet")
    flow = load_scenario(INCAST)
    with pytest.raises(EngineRefusal, match="=.* is read only by the packet or decomposed engine"):
        check_supported(flow, "flow")


def test_ark_packet_is_ark_scaled_on_the_flow_engine():
    """``ark-packet`` = ``ark`` with bytes / 32 and time / 32: the fluid FCTs scale by 32, but
    for the path's fixed latency (link delays, serialization of one packet), which does not."""
    small = {"workload.requests": 40}
    a = fabricsim.run(
        load_scenario("ark").with_overrides({**small, "workload.qps": 25}), engine="flow"
    )
    b = fabricsim.run(
        load_scenario("ark-packet").with_overrides({**small, "workload.qps": 800}), engine="flow"
    )
    ratio = a.flows["fct_s"].to_numpy() / b.flows["fct_s"].to_numpy()
    assert ratio == pytest.approx(32.0, rel=0.02)
    assert ratio.max() <= 32.0


# -- selective repeat (nic.transport: roce_sr) ---------------------------------------------------
def _incast(transport: str, **over) -> fabricsim.Result:
    sc = load_scenario({**INCAST, "nic": {**INCAST["nic"], "transport": transport}})
    return fabricsim.run(sc.with_overrides({"records.uet_transport_stats": True, **over}))


def test_roce_sr_needs_no_pfc_and_resends_only_what_was_lost():
    sr = _incast("roce_sr")
    s = sr.summary
    assert "pfc_pauses" not in s and s["packets_dropped"] > 0  # lossy by default
    _summary_conserved(s)
    assert s["flows_completed"] == s["flows_total"]
    assert s["packets_retransmitted"] <= s["packets_dropped"] + s["control_packets_dropped"]
    gbn = _incast("roce", **{"switch.pfc": False}).summary
    assert s["packets_retransmitted"] < gbn["packets_retransmitted"] / 2
    assert s["fct_p99_s"] < gbn["fct_p99_s"] / 2
    print(
        f"lossy 32-to-1: roce_sr p99 FCT {s['fct_p99_s'] * 1e3:.2f} ms, "
        f"{s['packets_retransmitted']} resent; go-back-N {gbn['fct_p99_s'] * 1e3:.2f} ms, "
        f"{gbn['packets_retransmitted']} resent"
    )


def test_roce_sr_keeps_new_psns_within_a_bdp_of_the_first_unacknowledged():
    from fabricsim.transport.roce_sr import RoceSrPdc

    res = _incast("roce_sr")
    nics = res.json_records["uet_transport_stats"]["nics"].values()
    held = max(n["max_out_of_order_on_flow"] for n in nics)
    eng = build_engine(load_scenario(INCAST).with_overrides({"nic.transport": "roce_sr"}), "packet")
    assert eng._pdc_class is RoceSrPdc and eng.env.window_cap_bdp == 1.0
    bdp = 100 * GBPS / 8 * eng.base_rtt_ps / 1e12
    cap = -(-bdp // (eng.mss + eng.hdr))
    print(f"roce_sr window {cap:.0f} packets; the receiver held at most {held}")
    assert 0 < held < cap  # the receiver never holds a PSN a full window past its cum


def test_roce_sr_defaults_and_its_rto():

    sc = load_scenario(INCAST).with_overrides({"nic.transport": "roce_sr"})
    assert not sc.switch.pfc and sc.nic.cc == "dcqcn" and not sc.switch.trimming
    lossy = build_engine(sc, "packet").rto_ps
    over_pfc = build_engine(sc.with_overrides({"switch.pfc": True}), "packet").rto_ps
    assert lossy < 4000 * US <= over_pfc  # RoCE's 4 ms floor only over PFC


def test_roce_selective_retransmit_is_roce_sr_recovery_without_its_window():
    from fabricsim.transport.roce_sr import RoceSrNic, RoceSrPdc

    sc = load_scenario(INCAST).with_overrides({"nic.roce.retransmit": "selective"})
    eng = build_engine(sc, "packet")
    assert eng._pdc_class is RoceSrPdc and isinstance(eng.nics[0], RoceSrNic)
    assert eng.env.window_cap_bdp == 0.0 and sc.switch.pfc


def test_roce_sr_refuses_roce_knobs_in_one_line():
    sc = load_scenario(INCAST).with_overrides(
        {"nic.transport": "roce_sr", "nic.roce.nak_interval_us": 100}
    )
    with pytest.raises(EngineRefusal, match="nic.roce.nak_interval_us=100.0 is read only when"):
        check_supported(sc, "packet")
