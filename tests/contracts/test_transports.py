"""The contract every registered transport (``nic.transport``) passes.

Parametrized over the transport registry (:mod:`fabricsim.transport`): each transport completes
a small incast (lossy, with PFC where it brings it) and a permutation with its bytes conserved,
gives byte-identical outputs for the same seed, counts what it declares (its counters in the
NIC statistics, its summary counters in the run's summary, and they move under loss), applies
the defaults its traits declare, and refuses a key it does not read, or a controller it cannot
drive, in one line.  No module outside the registry tests a transport's name.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from contract_cases import HOSTS, scenario

import fabricsim
from fabricsim.config.applicability import transport_knobs
from fabricsim.config.roce import PFC_BY_DEFAULT, ROCE_FABRIC, SENDS_CNPS
from fabricsim.errors import ConfigError, EngineRefusal
from fabricsim.experiments.engines import check_supported
from fabricsim.transport import registered_transports, transport_for

TRANSPORTS = registered_transports()
SRC = Path(fabricsim.__file__).parent
INCAST = {"kind": "incast", "senders": HOSTS - 1, "receiver": 0, "size_bytes": 120_000}
SAMPLE = {"nic.delivery_mode": "rudi"}
"""A valid value of a transport's knob that is not a number of us (else ``selective``)."""


def _run(name: str, overrides: dict | None = None, workload: dict | None = None):
    over = {"nic.transport": name, "engine.kind": "packet", **(overrides or {})}
    over.setdefault("records.uet_transport_stats", True)
    return fabricsim.run(fabricsim.load_scenario(scenario(over, workload)))


def _conserved(s: dict) -> None:
    assert s["bytes_conserved"] is True
    assert s["flows_completed"] == s["flows_total"]
    assert s["packets_sent"] == (
        s["packets_received"]
        + s["headers_received"]
        + s["packets_dropped"]
        + s["packets_in_flight_at_end"]
    )


def test_the_registry_holds_the_three_transports_in_order():
    assert TRANSPORTS[:3] == ("uet", "roce", "roce_sr")


@pytest.mark.parametrize("name", TRANSPORTS)
@pytest.mark.parametrize("pfc", [False, True])
def test_completes_an_incast_and_conserves_bytes(name: str, pfc: bool):
    lossy = {} if pfc else {"switch.buffer_bytes": 60_000}  # (PFC: the default thresholds)
    s = _run(name, {"switch.pfc": pfc, **lossy}, INCAST).summary
    _conserved(s)
    if pfc:
        assert s["packets_dropped"] == 0


@pytest.mark.parametrize("name", TRANSPORTS)
def test_completes_a_permutation_and_is_deterministic(name: str):
    a, b = _run(name), _run(name)
    _conserved(a.summary)
    assert a.flows.equals(b.flows)
    assert a.json_records["uet_transport_stats"] == b.json_records["uet_transport_stats"]
    keep = {k: v for k, v in a.summary.items() if not k.startswith("wall")}
    assert keep == {k: v for k, v in b.summary.items() if not k.startswith("wall")}


@pytest.mark.parametrize("name", TRANSPORTS)
def test_counts_what_it_declares(name: str):
    t = transport_for(name)
    lossy = {"switch.pfc": False, "switch.buffer_bytes": 60_000}
    marks = {"switch.ecn_min_bytes": 5_000, "switch.ecn_max_bytes": 30_000}  # CNPs, if any
    res = _run(name, {**lossy, **marks}, INCAST)
    stats = res.json_records["uet_transport_stats"]
    per_nic = list(stats["nics"].values())
    for counter in t.counters:
        assert all(counter in n for n in per_nic), counter
        assert sum(n[counter] for n in per_nic) > 0, counter  # loss and ECN move every one
    for counter in t.summary_counters:
        assert res.summary[counter] == stats["total"][counter] > 0
    others = {c for o in TRANSPORTS for c in transport_for(o).counters} - set(t.counters)
    assert not others & set(per_nic[0]), "counters of another transport"
    assert res.summary["packets_dropped"] + res.summary["packets_trimmed"] > 0


@pytest.mark.parametrize("name", TRANSPORTS)
def test_its_traits_bring_their_defaults(name: str):
    t = transport_for(name)
    sc = fabricsim.load_scenario(scenario({"nic.transport": name}))
    assert sc.switch.pfc == (PFC_BY_DEFAULT in t.traits())
    assert (sc.nic.cc == "dcqcn") == (ROCE_FABRIC in t.traits())
    assert sc.switch.trimming == (ROCE_FABRIC not in t.traits())
    mine = fabricsim.load_scenario(scenario({"nic.transport": name, "switch.pfc": False}))
    assert not mine.switch.pfc  # the scenario's own value wins


@pytest.mark.parametrize("name", TRANSPORTS)
def test_refuses_what_it_cannot_do_in_one_line(name: str):
    t = transport_for(name)
    if SENDS_CNPS not in t.traits():
        with pytest.raises(ConfigError, match=r"nic.cc: dcqcn .* set nic.transport=") as exc:
            fabricsim.load_scenario(scenario({"nic.transport": name, "nic.cc": "dcqcn"}))
        assert "\n" not in str(exc.value)
    for key, readers in transport_knobs().items():
        if name in readers:
            continue
        value = 100.0 if key.endswith("_us") else SAMPLE.get(key, "selective")
        sc = fabricsim.load_scenario(scenario({"nic.transport": name, key: value}))
        with pytest.raises(EngineRefusal, match=rf"{re.escape(key)}=.* read only when") as exc:
            check_supported(sc, "packet")
        assert "\n" not in str(exc.value) and name in str(exc.value)


def test_an_unknown_transport_is_one_line_naming_the_registered_ones():
    with pytest.raises(ConfigError, match="nic.transport") as exc:
        fabricsim.load_scenario(scenario({"nic.transport": "iwarp"}))
    assert "\n" not in str(exc.value)
    assert all(name in str(exc.value) for name in TRANSPORTS)


def test_no_module_outside_the_registry_tests_a_transport_name():
    names = "|".join(map(re.escape, TRANSPORTS))
    test = re.compile(rf"""(==|!=|\bin\b|\bis\b)\s*[(\[{{]?\s*["']({names})["']""")
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if path.parent.name == "transport":
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if test.search(line):
                found.append(f"{path.relative_to(SRC)}:{i}: {line.strip()}")
    assert not found, "\n".join(found)
