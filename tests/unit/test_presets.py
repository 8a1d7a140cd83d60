"""The htsim-uec preset: its pinned values, precedence, re-derivation and .cm scenarios."""

from __future__ import annotations

import random

import pytest

import fabricsim
from fabricsim.config.loader import load_scenario
from fabricsim.config.presets import fat_tree_k
from fabricsim.errors import ConfigError
from fabricsim.experiments.runner import build_engine
from fabricsim.lb.spraying import ObliviousSpraying

PERM = {"preset": "htsim-uec", "workload": {"kind": "permutation"}}


def test_preset_values_match_htsim_uec_defaults():
    """htsim_uec at 100 Gbps, 3 tiers: 4,150 B packets, 43-packet queues, ECN 9..35 packets,
    RTO 15 us + 6 queue drains = 100.656 us (values read from htsim's source and runs)."""
    sc = load_scenario(PERM)
    assert (sc.engine.kind, sc.topology.kind, sc.topology.k) == ("packet", "fat_tree", 8)
    assert sc.topology.host_link_gbps == sc.topology.fabric_link_gbps == 100.0
    assert sc.topology.link_delay_us == 1.0
    assert (sc.nic.rdma_data_mss, sc.nic.header_bytes) == (4086, 64)
    assert sc.nic.cc == "nscc" and sc.nic.initial_base_rtt_us == "auto"
    assert sc.switch.buffer_bytes == 43 * 4150
    assert sc.switch.header_buffer_bytes == 2 * 43 * 4150
    assert (sc.switch.ecn_min_bytes, sc.switch.ecn_max_bytes) == (9 * 4150, 35 * 4150)
    assert sc.switch.trimming is True
    assert sc.nic.rto_us == pytest.approx(100.656)
    assert (sc.nic.entropy_mask_bits, sc.nic.entropy_value_set_size) == (6, 64)
    assert sc.nic.reps_buffer_size_mask_bits == 3
    assert sc.nic.freezing_timeout_us == 10_000
    assert sc.nic.failure_detection_rtt_multiplier == 0


def test_scenario_values_win_and_derived_values_follow_them():
    sc = load_scenario({**PERM, "nic": {"rdma_data_mss": 4096}, "switch": {"trimming": False}})
    assert sc.nic.rdma_data_mss == 4096
    assert sc.switch.trimming is False
    mtu = 4096 + 64
    assert sc.switch.buffer_bytes % mtu == 0  # five BDPs of whole packets without trimming
    assert sc.switch.buffer_bytes == 5 * (sc.switch.buffer_bytes // (5 * mtu)) * mtu


def test_set_rederives_from_the_new_link_rate():
    sc = load_scenario(PERM)
    fast = sc.with_overrides({"topology.link_gbps": 400})
    assert fast.nic.rto_us == pytest.approx(90.198)  # htsim at 400 Gbps
    assert fast.switch.buffer_bytes > sc.switch.buffer_bytes
    own = sc.with_overrides({"switch.buffer_bytes": 1_000_000})
    assert own.switch.buffer_bytes == 1_000_000
    assert own.switch.header_buffer_bytes == 2_000_000


def test_effective_scenario_does_not_name_the_preset_and_round_trips():
    sc = load_scenario(PERM)
    data = sc.to_dict()
    assert "preset" not in data
    assert load_scenario(data).to_dict() == data


def test_fat_tree_sizing_like_htsim():
    assert [fat_tree_k(n) for n in (16, 54, 128, 1024)] == [4, 6, 8, 16]
    with pytest.raises(ConfigError, match="k\\^3/4 hosts"):
        fat_tree_k(100)


def test_unknown_preset_is_one_line():
    with pytest.raises(ConfigError, match="preset: unknown preset 'nope'; allowed: htsim-uec"):
        load_scenario({**PERM, "preset": "nope"})


def test_cm_path_is_a_scenario(tmp_path):
    cm = tmp_path / "pair.cm"
    cm.write_text("Nodes 16\nConnections 2\n0->13 id 1 start 0 size 100000\n2->9 id 2 size 4086\n")
    sc = load_scenario(str(cm))
    assert sc.name == "pair" and sc.topology.k == 4 and sc.engine.kind == "packet"
    assert sc.workload.kind == "trace"
    bad = tmp_path / "odd.cm"
    bad.write_text("Nodes 100\nConnections 1\n0->1 size 10\n")
    with pytest.raises(ConfigError, match="the matrix has 100"):
        load_scenario(str(bad))


def test_cm_scenario_runs_on_the_packet_engine(tmp_path):
    cm = tmp_path / "two.cm"
    cm.write_text(
        "Nodes 16\nConnections 2\n0->13 id 1 start 0 size 40000\n2->13 id 2 start 1 size 40000\n"
    )
    res = fabricsim.run(load_scenario(str(cm)))
    assert res.summary["flows_completed"] == 2
    # one 4,150-byte packet and its ACK cross 6 links each way: the first flow cannot beat
    # 10 x 4,150 B at 100 Gbps plus 6 us of propagation
    assert res.flows["fct_s"].min() > 10 * 4150 * 8 / 100e9 + 6e-6


def test_oblivious_cycle_over_n_values_like_htsim():
    s = ObliviousSpraying(random.Random(3).random, values=64)
    values = [s.next_entropy() for _ in range(640)]
    for k in range(10):  # every 64 consecutive packets use 64 distinct values, same high bits
        block = values[64 * k : 64 * (k + 1)]
        assert len(set(block)) == 64
        assert {v >> 6 for v in block} == {values[0] >> 6}
    assert load_scenario(PERM).nic.oblivious_values == 64
    with pytest.raises(ConfigError, match="nic.oblivious_values: must be a power of two"):
        load_scenario({**PERM, "nic": {"oblivious_values": 48}})


def test_preset_sets_htsims_smaller_mechanisms():
    sc = load_scenario(PERM)
    assert sc.switch.scale_buffers_with_rate is True and sc.switch.trim_last_queued == 0.5
    assert sc.nic.control_per_data == 10 and sc.nic.reps_recycle_last_hop_nack is True
    assert (sc.nic.nscc.md_gain, sc.nic.nscc.qa_gate_bits) == (0.8, 3)


def test_degraded_links_keep_a_share_of_their_buffer_and_ecn_thresholds():
    """htsim's -failed: a link at 25 % of its rate keeps 25 % of its queue and ECN thresholds."""

    link = "core0->agg0_0"
    sc = load_scenario({**PERM, "topology": {"degraded_links": {link: 0.25}}})
    eng = build_engine(sc, "packet")
    port = eng.ports[eng.fabric.link_index[link]]
    assert port.rate_bps == 25e9
    assert (port.cap, port.hcap) == (178_450 // 4, 356_900 // 4)
    assert (port.kmin, port.kmax) == (37_350 // 4, 145_250 // 4)
    off = build_engine(sc.with_overrides({"switch.scale_buffers_with_rate": False}), "packet")
    assert off.ports[eng.fabric.link_index[link]].cap == 178_450


def test_packet_runs_report_when_the_sender_saw_the_last_ack(tmp_path):
    """acked_s: htsim's "finished at" (the sender's view) comes an ACK's trip after finish_s."""
    sc = load_scenario(
        {**PERM, "workload": {"kind": "permutation", "size_bytes": 50_000}, "topology": {"k": 4}}
    )
    flows = fabricsim.run(sc).flows
    gap = flows["acked_s"] - flows["finish_s"]
    assert (gap > 0).all() and (gap < 20e-6).all()
