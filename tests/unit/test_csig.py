"""CSIG: switches stamp the worst hop's queueing delay, ACKs echo it, NSCC and REPS read it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import fabricsim
from fabricsim._core_build import core_mode
from fabricsim.config.loader import load_scenario
from fabricsim.engine_api import ACK, DATA
from fabricsim.errors import EngineRefusal
from fabricsim.experiments.engines import check_supported
from fabricsim.experiments.runner import build_engine
from fabricsim.packetsim.calendar import Sim
from fabricsim.packetsim.csig import CsigStamp
from fabricsim.packetsim.packets import Packet
from fabricsim.packetsim.ports import HostPort, Port

GBPS = 1e9
US = 1_000_000  # ps
PS_PER_BYTE = 80  # at 100 Gbps


def _port(sim: Sim) -> Port:
    return Port(
        sim, 0, 100 * GBPS, US, 1 << 30, 1 << 20, 1 << 30, 1 << 30, False, False, 64, lambda: 0.5
    )


def test_a_switch_port_stamps_the_queue_it_leaves_behind_into_data_packets_only():
    sim, seen = Sim(), []
    port = _port(sim)
    port.llr = CsigStamp(port)
    for i, (kind, size, before) in enumerate(
        [(DATA, 1_000, 0), (DATA, 1_000, 0), (DATA, 500, 0), (DATA, 1_000, 10**9), (ACK, 64, 0)]
    ):
        pkt = Packet()
        pkt.kind, pkt.size, pkt.psn, pkt.csig = kind, size, i, before
        pkt.hops = (port.receive, lambda p: seen.append((p.psn, p.csig)))
        sim.at(0, port.receive, pkt)
    sim.run(10 * US)
    # 0 leaves an idle port; 1 leaves 500 + 1,000 data bytes queued behind it (the ACK goes
    # first, from the priority queue, unstamped); 2 leaves 1,000; 3 keeps its larger value
    assert seen == [(0, 0), (4, 0), (1, 1_500 * PS_PER_BYTE), (2, 1_000 * PS_PER_BYTE),
                    (3, 10**9)]  # fmt: skip


def _incast(**over):
    base = {
        "topology.k": 4,
        "workload.senders": 8,
        "workload.size_bytes": 200_000,
        "nic.cc": "nscc",
    }
    return load_scenario("incast").with_overrides({**base, **over})


def test_only_switch_ports_stamp_and_only_when_a_sender_reads_csig():
    plain = build_engine(_incast(), "packet")
    assert all(p.llr is None for p in plain.ports)
    eng = build_engine(_incast(**{"nic.nscc.use_csig": True}), "packet")
    fab = eng.fabric
    for link, port in enumerate(eng.ports):
        switch = int(fab.link_src[link]) >= fab.num_hosts
        assert isinstance(port.llr, CsigStamp) == switch
        assert not (switch and isinstance(port, HostPort))


def test_nscc_reading_csig_changes_the_run_and_the_default_stays_as_it_was():
    off = fabricsim.run(_incast(), engine="packet")
    explicit_off = fabricsim.run(_incast(**{"nic.nscc.use_csig": False}), engine="packet")
    on = fabricsim.run(_incast(**{"nic.nscc.use_csig": True}), engine="packet")
    assert explicit_off.flows.equals(off.flows)
    assert not on.flows["fct_s"].equals(off.flows["fct_s"])
    assert on.summary["flows_completed"] == on.summary["flows_total"]


def test_reps_reading_csig_moves_traffic_off_a_degraded_link():
    sc = load_scenario("permutation").with_overrides(
        {
            "topology.k": 4,
            "workload.size_bytes": 1_000_000,
            "nic.packet_spraying_type": "reps",
            "topology.degraded_links": {"agg0_0->core0": 0.1},
            "records.port_stats": True,
        }
    )

    def slow_bytes(res):
        ports = res.tables["port_stats"].set_index("link")
        return int(ports.loc["agg0_0->core0", "bytes"])

    ecn_only = fabricsim.run(sc, engine="packet")
    csig = fabricsim.run(sc.with_overrides({"nic.reps.use_csig": True}), engine="packet")
    assert slow_bytes(csig) < slow_bytes(ecn_only)


@pytest.mark.parametrize(
    "over,needle",
    [
        ({"nic.nscc.use_csig": True, "nic.cc": "constant"}, "nic.nscc.use_csig"),
        ({"nic.reps.use_csig": True, "nic.packet_spraying_type": "none"}, "nic.reps.use_csig"),
    ],
)
def test_csig_without_its_reader_is_refused_in_one_line(over, needle):
    with pytest.raises(EngineRefusal, match=needle) as err:
        check_supported(_incast(**over), "packet")
    assert "\n" not in str(err.value)


def test_the_flow_engine_refuses_csig_in_one_line():
    with pytest.raises(EngineRefusal, match="nic.reps.use_csig"):
        check_supported(
            load_scenario("ecmp-collision").with_overrides({"nic.reps.use_csig": True}), "flow"
        )


CSIG_RUN = """
import json
import fabricsim
from fabricsim._core_build import core_mode
sc = fabricsim.load_scenario("permutation").with_overrides({
    "topology.k": 4, "workload.size_bytes": 300_000, "nic.packet_spraying_type": "reps",
    "nic.cc": "nscc", "nic.nscc.use_csig": True, "nic.reps.use_csig": True,
    "topology.degraded_links": {"agg0_0->core0": 0.1}, "topology.link_error_rate": 1e-3,
    "switch.llr": True, "records.port_stats": True})
res = fabricsim.run(sc, engine="packet")
print(json.dumps({"mode": core_mode(), "summary": res.summary,
                  "flows": res.flows.astype(str).to_dict("list"),
                  "ports": res.tables["port_stats"].astype(str).to_dict("list")}, sort_keys=True))
"""


def _mode_run(pure: bool) -> dict:
    env = {**os.environ, "FABRICSIM_PURE": "1" if pure else ""}
    out = subprocess.run(
        [sys.executable, "-c", CSIG_RUN], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


@pytest.mark.full
@pytest.mark.skipif(
    core_mode() == "pure" and not os.environ.get("CI"),
    reason="no compiled core in this install (CI requires one)",
)
def test_compiled_and_pure_give_identical_csig_runs_with_llr_under_the_stamp():
    compiled, pure = _mode_run(False), _mode_run(True)
    assert compiled["mode"] == "compiled" and compiled["summary"]["llr_retries"] > 0
    assert compiled == {**pure, "mode": "compiled"}
