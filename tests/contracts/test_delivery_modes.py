"""The contract every UET delivery mode (``nic.delivery_mode``) passes, as the transports do.

Parametrized over :data:`fabricsim.config.delivery.DELIVERY_MODES`: each mode completes a lossy
incast (trimming on, and drops with trimming off) with its bytes and packets accounted for --
a reliable mode completes every message, ``uud`` completes those that lost nothing and counts
every loss -- gives byte-identical outputs for the same seed, counts what it declares (in the
NIC statistics and the summary), takes the spraying type that follows from it when none is set,
refuses in one line naming both keys every registered spraying type the specification does not
allow with it, and is refused in one line by the flow engine.
"""

from __future__ import annotations

import pytest
from contract_cases import HOSTS, scenario

import fabricsim
from fabricsim.config.delivery import DELIVERY_MODES, NEEDS_FEEDBACK, SINGLE_PATH
from fabricsim.config.names import name_entries
from fabricsim.errors import ConfigError, EngineRefusal
from fabricsim.experiments.engines import check_supported
from fabricsim.transport.uet import MODES

INCAST = {"kind": "incast", "senders": HOSTS - 1, "receiver": 0, "size_bytes": 120_000}
LOSSY = {"switch.buffer_bytes": 60_000}
RELIABLE = [m for m in DELIVERY_MODES if m != "uud"]
# uud's runs lose packets on purpose: their warning about unfinished flows is expected
pytestmark = pytest.mark.filterwarnings("ignore:.*nic.delivery_mode uud:UserWarning")


def _spraying(mode: str) -> dict:
    """A spraying type the mode allows that sprays where it may (rod: its own)."""
    return {} if mode == "rod" else {"nic.packet_spraying_type": "oblivious"}


def _run(mode: str, overrides: dict | None = None, workload: dict | None = None):
    over = {"nic.delivery_mode": mode, "engine.kind": "packet", **_spraying(mode)}
    over.update({"records.uet_transport_stats": True, **(overrides or {})})
    return fabricsim.run(fabricsim.load_scenario(scenario(over, workload)))


def _accounted(s: dict) -> None:
    assert s["packets_sent"] == (
        s["packets_received"]
        + s["headers_received"]
        + s["packets_dropped"]
        + s["packets_in_flight_at_end"]
    )
    assert s["bytes_conserved"] is True
    assert s["flows_completed"] + s["flows_not_completed"] == s["flows_total"]


def test_the_modes_and_their_default():
    assert DELIVERY_MODES == tuple(MODES) == ("rud", "rod", "rudi", "uud")
    assert fabricsim.load_scenario(scenario({})).nic.delivery_mode == "rud"


@pytest.mark.parametrize("mode", DELIVERY_MODES)
@pytest.mark.parametrize("trimming", [True, False])
def test_completes_a_lossy_incast_with_everything_accounted_for(mode: str, trimming: bool):
    s = _run(mode, {**LOSSY, "switch.trimming": trimming}, INCAST).summary
    _accounted(s)
    assert s["packets_dropped" if not trimming else "packets_trimmed"] > 0
    if mode in RELIABLE:
        assert s["flows_completed"] == s["flows_total"]
        assert s["not_completed_reason"] is None
    else:  # nothing resent: every loss is counted, and the messages that lost one stay open
        assert s["packets_retransmitted"] == s["acks_sent"] == s["nacks_sent"] == 0
        assert s["uud_packets_lost"] == s["packets_dropped"] + s["packets_trimmed"]
        assert s["flows_not_completed"] > 0
        assert "nic.delivery_mode uud" in s["not_completed_reason"]


@pytest.mark.parametrize("mode", DELIVERY_MODES)
def test_is_deterministic(mode: str):
    a, b = _run(mode, LOSSY, INCAST), _run(mode, LOSSY, INCAST)
    assert a.flows.equals(b.flows)
    assert a.summary == b.summary
    assert a.json_records["uet_transport_stats"] == b.json_records["uet_transport_stats"]


@pytest.mark.parametrize("mode", DELIVERY_MODES)
def test_counts_what_it_declares(mode: str):
    counters = MODES[mode][2]
    # loss, a short RTO (spurious resends: rudi places duplicates) and ECN marks (rod reroutes)
    stress = {**LOSSY, "nic.rto_us": 8.0, "switch.ecn_min_bytes": 5_000}
    res = _run(mode, {**stress, "switch.ecn_max_bytes": 30_000}, INCAST)
    stats = res.json_records["uet_transport_stats"]
    per_nic = list(stats["nics"].values())
    for counter in counters:
        assert all(counter in n for n in per_nic), counter
        assert res.summary[counter] == stats["total"][counter] > 0, counter
    others = {c for m in DELIVERY_MODES for c in MODES[m][2]} - set(counters)
    assert not others & (set(per_nic[0]) | set(res.summary)), "another mode's counters"


@pytest.mark.parametrize("mode", DELIVERY_MODES)
def test_the_spraying_type_follows_from_it_unless_set(mode: str):
    unset = fabricsim.load_scenario(scenario({"nic.delivery_mode": mode}))
    today = fabricsim.load_scenario(scenario({})).nic.packet_spraying_type
    assert unset.nic.packet_spraying_type == ("rod" if mode == "rod" else today)
    assert "nic.packet_spraying_type" not in unset.user_keys
    mine = fabricsim.load_scenario(
        scenario({"nic.delivery_mode": mode, "nic.packet_spraying_type": "none"})
    )
    assert mine.nic.packet_spraying_type == "none"  # the scenario's own value wins


@pytest.mark.parametrize("mode", DELIVERY_MODES)
def test_refuses_the_spraying_types_it_forbids_in_one_line(mode: str):
    for entry in name_entries("nic.packet_spraying_type"):
        forbidden = (mode == "rod" and SINGLE_PATH not in entry.traits) or (
            mode == "uud" and NEEDS_FEEDBACK in entry.traits
        )
        over = {"nic.delivery_mode": mode, "nic.packet_spraying_type": entry.name}
        if not forbidden:
            fabricsim.load_scenario(scenario(over))
            continue
        with pytest.raises(ConfigError) as exc:
            fabricsim.load_scenario(scenario(over))
        text = str(exc.value)
        assert "\n" not in text
        assert "nic.delivery_mode" in text and "nic.packet_spraying_type" in text, text
        assert entry.name in text


def test_rod_refuses_oblivious_spraying_and_uud_a_controller_that_needs_acks():
    with pytest.raises(ConfigError, match=r"delivery_mode rod .*packet_spraying_type=oblivious"):
        fabricsim.load_scenario(
            scenario({"nic.delivery_mode": "rod", "nic.packet_spraying_type": "oblivious"})
        )
    with pytest.raises(ConfigError, match=r"delivery_mode uud .*nic.cc=nscc") as exc:
        fabricsim.load_scenario(scenario({"nic.delivery_mode": "uud", "nic.cc": "nscc"}))
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize("mode", DELIVERY_MODES[1:])
def test_the_flow_engine_refuses_it_in_one_line(mode: str):
    sc = fabricsim.load_scenario(scenario({"nic.delivery_mode": mode}))
    with pytest.raises(
        EngineRefusal, match=r"nic.delivery_mode=.* packet (or decomposed )?engine"
    ) as exc:
        check_supported(sc, "flow")
    assert "\n" not in str(exc.value)
