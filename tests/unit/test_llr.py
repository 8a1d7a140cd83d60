"""Frame errors on links and UEC Link Layer Retry (packetsim/llr.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import fabricsim
from fabricsim._core_build import core_mode
from fabricsim.cli import main
from fabricsim.config.loader import load_scenario
from fabricsim.engine_api import DATA
from fabricsim.errors import ConfigError, EngineRefusal
from fabricsim.experiments.engines import check_supported
from fabricsim.packetsim.calendar import Sim
from fabricsim.packetsim.llr import FrameErrors, LinkRetry, link_error_rates
from fabricsim.packetsim.packets import Packet
from fabricsim.packetsim.ports import Port
from fabricsim.topology.builders import build_fabric

GBPS = 1e9
US = 1_000_000  # ps
SER = 80_000  # 1,000 bytes at 100 Gbps, ps


class _Frames:
    """A stand-in for the link's generator: the gaps (in frames) between corrupted frames."""

    def __init__(self, *gaps: int) -> None:
        self.gaps = list(gaps)

    def geometric(self, p: float) -> int:
        return self.gaps.pop(0) if self.gaps else 1 << 40


def _link(sim: Sim) -> Port:
    """A 100 Gbps port with 1 us of delay."""
    return Port(
        sim, 0, 100 * GBPS, US, 1 << 30, 1 << 20, 1 << 30, 1 << 30, False, False, 64, lambda: 0.5
    )


def _send(sim: Sim, port: Port, arrivals: list[tuple[int, int]], n: int) -> None:
    """``n`` frames of 1,000 bytes at t = 0; each lands in ``arrivals`` as (time, psn)."""
    for psn in range(n):
        pkt = Packet()
        pkt.kind, pkt.size, pkt.psn = DATA, 1_000, psn
        pkt.hops = (port.receive, lambda p: arrivals.append((sim.now, p.psn)))
        sim.at(0, port.receive, pkt)


def test_a_corrupted_frame_without_llr_is_dropped_and_the_others_arrive_on_time():
    sim, arrivals = Sim(), []
    port = _link(sim)
    port.llr = FrameErrors(port, 0.1, _Frames(2))  # the second frame is corrupted
    _send(sim, port, arrivals, 4)
    sim.run(10 * US)
    assert arrivals == [(US + SER, 0), (US + 3 * SER, 2), (US + 4 * SER, 3)]
    assert (port.drops, port.data_drops, port.llr.errors) == (1, 1, 1)


def test_llr_replays_the_corrupted_frame_and_those_behind_it_in_order_after_the_nack():
    sim, arrivals = Sim(), []
    port = _link(sim)
    llr = port.llr = LinkRetry(port, 0.1, _Frames(2), 10 * US, True, 1_000)
    _send(sim, port, arrivals, 4)
    sim.run(20 * US)
    # frame 1 left at 2 SER; its NACK is back 2 us later: frames 1..3 (all sent by then) go
    # again, back to back, and arrive in order a delay after each one's replay
    replay = 2 * SER + 2 * US
    assert arrivals == [
        (US + SER, 0),
        (replay + SER + US, 1),
        (replay + 2 * SER + US, 2),
        (replay + 3 * SER + US, 3),
    ]
    assert port.drops == 0
    assert (llr.errors, llr.retries, llr.replays, llr.data_errors) == (1, 3, 1, 1)
    assert llr.peak == 4_000  # every frame waited in the buffer
    assert port.tx_pkts == 7  # the wire carried the replays too


def test_without_a_nack_the_replay_timer_replays_and_new_frames_wait_for_the_replay():
    sim, arrivals = Sim(), []
    port = _link(sim)
    port.llr = LinkRetry(port, 0.1, _Frames(1), 5 * US, False, 1_000)  # the first frame
    _send(sim, port, arrivals, 2)
    late = Packet()
    late.kind, late.size, late.psn = DATA, 1_000, 9
    late.hops = (port.receive, lambda p: arrivals.append((sim.now, p.psn)))
    sim.at(SER + 5 * US + 1, port.receive, late)  # it finds the wire held by the replay
    sim.run(20 * US)
    replay = SER + 5 * US
    assert arrivals == [
        (replay + SER + US, 0),
        (replay + 2 * SER + US, 1),
        (replay + 3 * SER + US, 9),
    ]


def test_a_frame_corrupted_again_in_its_replay_is_replayed_again():
    sim, arrivals = Sim(), []
    port = _link(sim)
    llr = port.llr = LinkRetry(port, 0.1, _Frames(1, 1), 10 * US, True, 1_000)
    _send(sim, port, arrivals, 2)
    sim.run(20 * US)
    assert [psn for _, psn in arrivals] == [0, 1]
    assert (llr.errors, llr.replays, llr.retries) == (2, 2, 4)


def test_frames_held_for_a_replay_are_lost_with_a_link_that_fails_meanwhile():
    sim, arrivals = Sim(), []
    port = _link(sim)
    llr = port.llr = LinkRetry(port, 0.1, _Frames(2), 10 * US, True, 1_000)
    _send(sim, port, arrivals, 3)
    sim.at(US, lambda _: port.fail())  # after frame 1 was corrupted, before its replay
    sim.run(20 * US)
    assert arrivals == [(US + SER, 0)]
    assert (port.drops, llr.retries, llr.held) == (2, 0, None)


def test_error_rates_take_one_value_or_a_map_of_link_names_and_refuse_unknown_names():
    sc = load_scenario("ecmp-collision")
    fab = build_fabric(sc.topology)
    one = sc.with_overrides({"topology.link_error_rate": 1e-6})
    assert set(link_error_rates(one, fab)) == {1e-6}
    named = sc.with_overrides({"topology.link_error_rate": {"leaf0->spine1": 0.01}})
    rates = link_error_rates(named, fab)
    assert rates[fab.link_index["leaf0->spine1"]] == 0.01 and sum(rates) == 0.01
    bad = sc.with_overrides({"topology.link_error_rate": {"leaf0->spine99": 0.01}})
    with pytest.raises(ConfigError, match=r"^topology.link_error_rate: unknown link"):
        link_error_rates(bad, fab)


@pytest.mark.parametrize("value", [-0.1, 0.7, "often"])
def test_a_rate_out_of_range_is_refused_in_one_line(value):
    with pytest.raises(ConfigError, match="topology.link_error_rate") as err:
        load_scenario("ecmp-collision").with_overrides({"topology.link_error_rate": value})
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    "key,value",
    [("switch.llr", True), ("topology.link_error_rate", 1e-6), ("switch.llr_timeout_us", 2.0)],
)
def test_the_flow_engine_refuses_the_link_layer_keys_in_one_line(key, value):
    sc = load_scenario("ecmp-collision").with_overrides({key: value})
    with pytest.raises(EngineRefusal, match=key.replace(".", r"\.")) as err:
        check_supported(sc, "flow")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("key,value", [("switch.llr_nack", False), ("switch.llr_timeout_us", 3)])
def test_llr_knobs_without_llr_are_refused_in_one_line(key, value):
    sc = load_scenario("ecmp-collision").with_overrides({key: value})
    with pytest.raises(EngineRefusal, match=f"^{key}.*switch.llr") as err:
        check_supported(sc, "packet")
    assert "\n" not in str(err.value)
    check_supported(sc.with_overrides({"switch.llr": True}), "packet")


def _run(**over):
    small = {"workload.size_bytes": 1_000_000, **over}
    sc = load_scenario("ecmp-collision").with_overrides(small)
    return fabricsim.run(sc, engine="packet")


def _conserved(s: dict) -> None:
    assert s["bytes_conserved"] is True
    assert s["packets_sent"] == (
        s["packets_received"]
        + s["headers_received"]
        + s["packets_dropped"]
        + s["packets_in_flight_at_end"]
    )


def test_llr_on_error_free_links_changes_nothing_but_adds_its_counters():
    off, on = _run(), _run(**{"switch.llr": True})
    assert on.flows.equals(off.flows)
    extra = {k: v for k, v in on.summary.items() if k not in off.summary}
    assert extra.keys() == {
        "link_frame_errors",
        "llr_retries",
        "llr_replay_peak_bytes",
        "llr_replay_buffer_bytes",
        "llr_e2e_retx_avoided",
    }
    assert extra["link_frame_errors"] == extra["llr_retries"] == 0
    # the fullest buffer held about a link round trip of frames, within its size
    assert 0 < extra["llr_replay_peak_bytes"] <= extra["llr_replay_buffer_bytes"]
    same = {k for k in off.summary if k != "config_hash"}
    assert {k: on.summary[k] for k in same} == {k: off.summary[k] for k in same}


def test_llr_recovers_the_corrupted_frames_the_transport_would_retransmit():
    lossy = _run(**{"topology.link_error_rate": 3e-3})
    kept = _run(**{"topology.link_error_rate": 3e-3, "switch.llr": True})
    a, b = lossy.summary, kept.summary
    assert a["link_frame_errors"] > 0 and a["packets_dropped"] > 0 and a["timeouts"] > 0
    assert "llr_retries" not in a
    assert b["packets_dropped"] == 0 and b["timeouts"] == 0
    assert b["llr_retries"] >= b["link_frame_errors"] > 0
    assert 0 < b["llr_e2e_retx_avoided"] <= b["link_frame_errors"]
    assert b["packets_retransmitted"] < a["packets_retransmitted"]
    assert b["fct_max_s"] < a["fct_max_s"]
    assert b["flows_completed"] == a["flows_completed"] == 8
    _conserved(a)
    _conserved(b)


def test_llr_under_roce_and_pfc_spares_go_back_n_its_retransmissions():
    over = {"nic.transport": "roce", "topology.link_error_rate": 3e-3}
    lossy, kept = _run(**over), _run(**over, **{"switch.llr": True})
    a, b = lossy.summary, kept.summary
    assert a["packets_dropped"] > 0 and a["packets_retransmitted"] > a["packets_dropped"]
    assert b["packets_dropped"] == b["packets_retransmitted"] == 0 < b["llr_retries"]
    _conserved(a)
    _conserved(b)


def test_port_stats_name_the_link_that_corrupts_frames():
    res = _run(**{"topology.link_error_rate": {"leaf0->spine1": 0.02}, "switch.llr": True,
                  "records.port_stats": True})  # fmt: skip
    ports = res.tables["port_stats"].set_index("link")
    errors = ports["frame_errors"]
    assert errors["leaf0->spine1"] == res.summary["link_frame_errors"] > 0
    assert errors.drop("leaf0->spine1").eq(0).all()
    assert ports["llr_retries"].sum() == res.summary["llr_retries"] > 0
    assert ports["llr_replay_peak_bytes"].max() == res.summary["llr_replay_peak_bytes"]
    plain = _run(**{"records.port_stats": True}).tables["port_stats"]
    assert "frame_errors" not in plain.columns


def test_the_same_seed_gives_the_same_errors_and_another_seed_others():
    over = {"topology.link_error_rate": 3e-3, "switch.llr": True}
    one, two = _run(**over), _run(**over)
    assert one.summary == two.summary and one.flows.equals(two.flows)
    other = _run(**over, seed=2)
    assert not other.flows["fct_s"].equals(one.flows["fct_s"])


@pytest.mark.parametrize(
    "setting",
    [
        "topology.link_error_rate=0.9",
        "topology.link_error_rate={leaf0->spine9: 1e-4}",
        "switch.llr_timeout_us=0",
    ],
)
def test_the_cli_refuses_bad_link_layer_settings_in_one_line_with_exit_2(setting, tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["run", "ecmp-collision", "--engine", "packet", "--set", setting,
                 "--out", str(out), "--quiet"])  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert setting.split("=")[0] in err and "Traceback" not in err
    assert not out.exists()


LLR_RUN = """
import json
import fabricsim
from fabricsim._core_build import core_mode
sc = fabricsim.load_scenario("ecmp-collision").with_overrides(
    {"topology.link_error_rate": 2e-3, "switch.llr": True, "records.port_stats": True})
res = fabricsim.run(sc, engine="packet")
print(json.dumps({"mode": core_mode(), "summary": res.summary,
                  "flows": res.flows.astype(str).to_dict("list"),
                  "ports": res.tables["port_stats"].astype(str).to_dict("list")}, sort_keys=True))
"""


def _mode_run(pure: bool) -> dict:
    env = {**os.environ, "FABRICSIM_PURE": "1" if pure else ""}
    out = subprocess.run(
        [sys.executable, "-c", LLR_RUN], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


@pytest.mark.full
@pytest.mark.skipif(
    core_mode() == "pure" and not os.environ.get("CI"),
    reason="no compiled core in this install (CI requires one)",
)
def test_compiled_and_pure_ports_give_identical_llr_runs():
    compiled, pure = _mode_run(False), _mode_run(True)
    assert compiled["mode"] == "compiled" and compiled["summary"]["llr_retries"] > 0
    assert compiled == {**pure, "mode": "compiled"}
