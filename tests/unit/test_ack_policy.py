"""ACK policy: coalescing by packets or bytes, and the ACK-request flag (htsim's AR)."""

from __future__ import annotations

import pytest

import fabricsim
from fabricsim.errors import ConfigError
from fabricsim.experiments.runner import build_engine

INCAST = {"nic.cc": "nscc", "nic.ack_coalesce": 4, "workload.size_bytes": 200_000}


def _incast(ack_request: bool) -> dict:
    sc = fabricsim.load_scenario("incast").with_overrides(
        {**INCAST, "nic.ack_request": ack_request}
    )
    return fabricsim.run(sc, engine="packet").summary


def test_ack_request_keeps_a_coalescing_incast_at_line_rate():
    """32 -> 1 with one ACK per 4 packets: without the flag, windows under 4 packets wait for
    their RTO; with it the receiver's link stays busy and no timer fires."""
    ideal_s = 32 * 200_000 / 4096 * 4184 * 8 / 100e9  # every wire byte through one 100G link
    on = _incast(True)
    assert on["flows_completed"] == 32
    assert on["timeouts"] == 0
    assert on["fct_max_s"] <= 1.10 * ideal_s
    off = _incast(False)
    assert off["timeouts"] > 100
    assert off["fct_max_s"] > 5 * on["fct_max_s"]


def test_coalescing_by_bytes_acks_every_few_packets():
    sc = fabricsim.load_scenario("permutation").with_overrides(
        {"topology.k": 4, "workload.size_bytes": 400_000, "nic.ack_bytes": 16_384}
    )
    s = fabricsim.run(sc, engine="packet").summary
    assert s["flows_completed"] == 16 and s["timeouts"] == 0
    # 16,384 bytes = 4 packets of 4,184 wire bytes; packets that fill the (small) window,
    # first and last packets are answered at once
    assert s["packets_sent"] / 5 < s["acks_sent"] < 0.6 * s["packets_sent"]


def test_bytes_and_packets_coalescing_are_alternatives():
    both = {"workload": {"kind": "permutation"}, "nic": {"ack_bytes": 16_384, "ack_coalesce": 4}}
    with pytest.raises(ConfigError, match="coalesce by bytes or by packets"):
        fabricsim.load_scenario(both)
    sc = fabricsim.load_scenario({"preset": "htsim-uec", "workload": {"kind": "permutation"}})
    assert sc.nic.ack_bytes == 16_384
    later = sc.with_overrides({"nic.ack_coalesce": 2})  # a later layer's packets win
    assert (later.nic.ack_bytes, later.nic.ack_coalesce) == (None, 2)


def test_fixed_rto_retries_at_a_constant_interval():
    """A blackholed path: every retransmission of the lost packet times out; with backoff the
    k-th wait is rto x 2^k, without it always rto."""
    base = fabricsim.load_scenario("ecmp-collision").with_overrides(
        {
            "workload.size_bytes": 20_000,
            "nic.rto_us": 50.0,
            "nic.max_retries": 3,
            "topology.failed_links": ["leaf0->spine0"],
            "lb.policy": "ecmp",
        }
    )
    ends = {}
    for backoff in (True, False):
        sc = base.with_overrides({"nic.rto_backoff": backoff})
        s = fabricsim.run(sc, engine="packet").summary
        assert s["flows_failed"] >= 1
        ends[backoff] = s["sim_end_s"]
    # 4 waits: 50 x (1 + 2 + 4 + 8) = 750 us with backoff, 4 x 50 = 200 us without
    assert ends[True] > 700e-6 and ends[False] < 300e-6


def _nic_with(ctrl_per_data, ctrl, data):
    """Host 0's NIC of a small engine with ``ctrl`` control packets queued (tagged by PSN)
    and, if ``data``, one PDC with data to send; the scheduler's pulls by tag (``d``: data)."""
    from fabricsim.engine_api import ACK
    from fabricsim.packetsim.packets import Packet

    sc = fabricsim.load_scenario("incast").with_overrides(
        {"topology.k": 4, "workload.senders": 3, "nic.control_per_data": ctrl_per_data}
    )
    engine = build_engine(sc, "packet")
    src = int(engine.flows.src[0])
    nic = engine.nics[src]
    for i in range(ctrl):
        pkt = Packet()
        pkt.kind, pkt.psn = ACK, i
        nic.ctrl.append(pkt)
    nic.port.busy_until = 1 << 60  # the wire stays busy: only the test pulls
    if data:
        engine._arrive(0)
    return lambda: (lambda p: None if p is None else f"ack{p.psn}" if p.kind else "d")(nic.pull())


def test_transmit_scheduler_interleaves_data_after_n_control_packets():
    """nic.control_per_data: htsim's NIC sends 10 control packets per data packet while both
    wait; null keeps control strictly first."""
    acks = [f"ack{i}" for i in range(5)]
    pull = _nic_with(2, 5, True)
    assert [pull() for _ in range(7)] == ["ack0", "ack1", "d", "ack2", "ack3", "d", "ack4"]
    strict = _nic_with(None, 5, True)
    assert [strict() for _ in range(6)] == acks + ["d"]
    idle = _nic_with(2, 3, False)
    assert [idle() for _ in range(4)] == acks[:3] + [None]  # no data: control goes on


def test_reps_recycles_the_entropy_of_a_last_hop_trim(monkeypatch):
    """A 32 -> 1 incast trims at the receiver's own port (and at the aggregation switches'
    ports into its edge): with the key, last-hop NACKs recycle their entropies like ACKs."""
    import fabricsim.nic.nic as nic_mod
    from fabricsim.lb.reps import RepsSpraying

    calls = {"ack": 0, "nack": 0}

    class Counting(RepsSpraying):  # the compiled RepsSpraying is a C type: subclass, not patch
        def on_ack(self, entropy, ecn):
            calls["ack"] += 1
            super().on_ack(entropy, ecn)

        def on_nack(self, entropy):
            calls["nack"] += 1
            super().on_nack(entropy)

    def counting_spraying(cfg, creator, rand, clock, window, freezing, base_rtt_ps=0):
        return Counting(
            cfg.reps_buffer_size_mask_bits, cfg.entropy_value_set_size, freezing, window, rand,
            clock,
        )  # fmt: skip

    monkeypatch.setattr(nic_mod, "make_spraying", counting_spraying)
    base = fabricsim.load_scenario("incast").with_overrides(
        {"workload.size_bytes": 100_000, "nic.packet_spraying_type": "reps", "nic.cc": "nscc"}
    )
    out = {}
    for on in (False, True):
        calls.update(ack=0, nack=0)
        sc = base.with_overrides({"nic.reps_recycle_last_hop_nack": on})
        s = fabricsim.run(sc, engine="packet").summary
        assert s["flows_completed"] == 32 and s["packets_trimmed"] > 0
        out[on] = dict(calls)
    # trims at edge0_0->host0 (the last hop) recycle; those at agg->edge0_0 still discard
    assert 0 < out[True]["nack"] < out[False]["nack"]
    assert out[True]["ack"] > out[False]["ack"]
