"""PFC's pathologies: a deadlock found and reported (the run stops), a host that stops
draining (a storm), and the switches' PFC watchdog that breaks both."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import fabricsim
from fabricsim.cli import main
from fabricsim.config.loader import load_scenario
from fabricsim.packetsim.pfc import PfcWatch

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
LINE = re.compile(r"PFC deadlock: (\d+) queues paused since [\d.]+ ms, cycle: ((\w+->){4,}\w+)$")


def _shrunk(tmp_path: Path, name: str, size: int, **sets) -> object:
    """An example with its flows cut to ``size`` bytes (a faster test, the same pathology)."""
    rows = (EXAMPLES / f"{name}.csv").read_text().splitlines()
    lines = [rows[0]] + [re.sub(r",\d+,", f",{size},", r, count=1) for r in rows[1:]]
    path = tmp_path / f"{name}.csv"
    path.write_text("\n".join(lines) + "\n")
    sc = load_scenario(EXAMPLES / f"{name}.yaml")
    return sc.with_overrides({"workload.path": str(path), **sets})


@pytest.fixture(scope="module")
def deadlock(tmp_path_factory) -> tuple[object, dict, list[str]]:
    """The deadlock example with 4 MB flows: its scenario, summary and warnings."""
    sc = _shrunk(tmp_path_factory.mktemp("dl"), "pfc-deadlock", 4_000_000)
    with pytest.warns(UserWarning) as seen:
        res = fabricsim.run(sc)
    return sc, res.summary, [str(w.message) for w in seen]


def test_a_deadlock_stops_the_run_with_one_line_naming_the_cycle(deadlock):
    _, s, lines = deadlock
    assert len(lines) == 1 and "PFC deadlock: " in lines[0]
    m = LINE.match(s["pfc_deadlock"])
    assert m, s["pfc_deadlock"]
    nodes = m.group(2).split("->")
    assert nodes[0] == nodes[-1] and len(set(nodes)) == len(nodes) - 1  # a cycle of switches
    assert {"spine0", "spine1"} <= set(nodes) and int(m.group(1)) >= len(nodes) - 1
    assert s["pfc_deadlocks"] == 1 and s["not_completed_reason"] == s["pfc_deadlock"]
    assert s["time_limit_reached"] is False and s["packets_dropped"] == 0
    assert 0 < s["flows_completed"] < s["flows_total"]  # flows clear of the cycle finished
    print(s["pfc_deadlock"], f"(stopped at {s['sim_end_s'] * 1e3:.2f} ms)")
    assert s["sim_end_s"] < 0.003


def test_the_deadlock_is_real_without_the_check_the_run_spins_to_its_limit(deadlock, monkeypatch):
    sc, found, _ = deadlock
    monkeypatch.setattr(PfcWatch, "check", lambda self, start: None)
    with pytest.warns(UserWarning, match="time limit"):
        spun = fabricsim.run(sc.with_overrides({"engine.time_limit_s": 0.004})).summary
    assert spun["time_limit_reached"] is True
    assert spun["flows_completed"] == found["flows_completed"]  # nothing more finished


def test_the_watchdog_breaks_the_deadlock_by_dropping_and_every_flow_completes(tmp_path):
    sc = _shrunk(tmp_path, "pfc-deadlock", 4_000_000, **{"switch.pfc_watchdog_ms": 0.5})
    s = fabricsim.run(sc).summary
    assert s["flows_completed"] == s["flows_total"]
    assert s["pfc_deadlocks"] >= 1 and s["pfc_watchdog_triggers"] >= 1
    assert s["packets_dropped"] > 0 and s["packets_retransmitted"] >= s["packets_dropped"]
    assert "pfc_deadlock" not in s  # counted, not stopped at
    print(
        f"watchdog 0.5 ms: {s['pfc_deadlocks']} deadlocks, {s['pfc_watchdog_triggers']} "
        f"triggers, {s['packets_dropped']} drops, max FCT {s['fct_max_s'] * 1e3:.2f} ms"
    )


def _storm(tmp_path, **sets) -> tuple[dict, list[float]]:
    sc = _shrunk(
        tmp_path,
        "pfc-storm",
        2_000_000,
        **{"switch.pfc_stalled_hosts": [{"host": "host8", "at_s": 1e-4, "until_s": 2e-3}], **sets},
    )
    res = fabricsim.run(sc)
    return res.summary, list(res.flows["fct_s"])


def test_a_stalled_host_pauses_the_fabric_and_the_watchdog_frees_its_victims(tmp_path):
    s, (to_stalled, *victims) = _storm(tmp_path)
    assert s["flows_completed"] == 3 and s["pfc_deadlocks"] == 0  # a storm, not a cycle
    assert s["pfc_watchdog_triggers"] == 0 and s["packets_dropped"] == 0
    assert s["pfc_max_pause_s"] == pytest.approx(1.9e-3, abs=1e-5)  # the stall's length
    assert min(victims) > 2e-3  # the victims waited for the stalled host
    w, (to_stalled_w, *victims_w) = _storm(tmp_path, **{"switch.pfc_watchdog_ms": 0.3})
    print(
        f"victims' FCT: {max(victims) * 1e3:.2f} ms, watchdog 0.3 ms: {max(victims_w) * 1e3:.2f} ms"
    )
    assert w["flows_completed"] == 3 and w["pfc_watchdog_triggers"] == 1
    assert w["packets_dropped"] > 0  # what leaf1->host8 held and received while it stormed
    assert max(victims_w) < 1e-3  # 2 MB at their share of the spine links, once freed


@pytest.mark.parametrize(
    "args, needle",
    [
        (
            [
                "--set",
                "switch.pfc=false",
                "--set",
                "nic.transport=uet",
                "--set",
                "switch.pfc_watchdog_ms=1",
            ],
            "switch.pfc_watchdog_ms: needs switch.pfc",
        ),
        (["--set", "switch.pfc_stalled_hosts=[{host: host99, at_s: 0}]"], "unknown host 'host99'"),
        (["--set", "switch.pfc_stalled_hosts=[{host: host8, at_s: 2, until_s: 1}]"], "until_s"),
        (["--set", "switch.pfc_arbitration=wfq"], "switch.pfc_arbitration"),
        (["--set", "switch.pfc_watchdog_ms=0"], "switch.pfc_watchdog_ms"),
    ],
)
def test_bad_lossless_keys_are_one_line_exit_2(args, needle, tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["run", str(EXAMPLES / "pfc-storm.yaml"), *args, "--out", str(out), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and needle in err, err
    assert "Traceback" not in err and not out.exists()


# -- the check itself, on a ring of three ports ------------------------------------------------
def _ring(spill: int) -> tuple[PfcWatch, list]:
    """Ports a->b, b->c, c->a, each paused by its far end and holding 20 kB that came over the
    port before it (XOFF 10 kB, XON 5 kB); b->c's ingress also holds ``spill`` bytes in an
    unpaused port c->host (they will drain)."""
    from fabricsim.engine_api import DATA
    from fabricsim.packetsim.calendar import Sim
    from fabricsim.packetsim.packets import Packet
    from fabricsim.packetsim.ports import Port

    sim = Sim()
    ports = [
        Port(
            sim, i, 100e9, 10**6, 1 << 30, 1 << 20, 1 << 30, 1 << 30, False, False, 64, lambda: 0.5
        )
        for i in range(4)
    ]
    watch = PfcWatch(0, ["a", "b", "c", "c"])
    for p in ports:
        p.set_pfc(10_000, 5_000, 1 << 20, 50 * 10**6)
        p.set_arbitration()
        p.pfc.watch = watch
        p.busy_until, p.pending = 1 << 40, True  # nothing leaves during the test
    ab, bc, ca, c_host = ports
    ab.pfc.outs, bc.pfc.outs, ca.pfc.outs = [bc], [ca, c_host], [ab]
    for into, came_over, size in [
        (bc, ab, 20_000),
        (ca, bc, 20_000),
        (ab, ca, 20_000),
        (c_host, bc, spill),
    ]:
        for _ in range(size // 1_000):
            pkt = Packet()
            pkt.kind, pkt.size, pkt.prev = DATA, 1_000, came_over.pfc
            into.receive(pkt)
    for p in (ab, bc, ca):
        p.pfc.xoff_sent = p.paused = True  # (the far end crossed XOFF: 20 kB > 10 kB)
    return watch, ports


def test_a_ring_of_paused_ports_holding_each_others_bytes_is_a_deadlock():
    watch, (ab, *_) = _ring(spill=0)
    watch.check(ab.pfc)
    assert watch.halted and watch.deadlocks == 1
    assert watch.line() == "PFC deadlock: 3 queues paused since 0.000 ms, cycle: a->b->c->a"


def test_bytes_that_can_drain_break_the_deadlock_only_if_they_can_bring_xon():
    watch, (ab, *_) = _ring(spill=10_000)  # b->c's ingress: 20 kB stuck > XON 5 kB: for good
    watch.check(ab.pfc)
    assert watch.halted
    watch, (ab, bc, ca, c_host) = _ring(spill=10_000)
    for _ in range(16):  # c->a holds only 4 kB of b->c's: once c->host drains, XON comes
        ca.arb.pop()
    ca.qbytes = 4_000
    watch.check(ab.pfc)
    assert not watch.halted and watch.found is None
