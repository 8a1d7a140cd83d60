"""The engine registry: every engine declares every capability; one check gives each refusal."""

from __future__ import annotations

import dataclasses

import pytest

from fabricsim import workloads
from fabricsim.config.loader import load_scenario
from fabricsim.errors import ConfigError, EngineRefusal
from fabricsim.experiments import engines
from fabricsim.experiments.runner import check_engine, fabric_of
from fabricsim.lb.base import registered_policies


def _sc(**overrides: object):
    return load_scenario("ecmp-collision").with_overrides(overrides)


def test_every_engine_declares_every_field() -> None:
    assert set(engines.ENGINES) == {"flow", "packet", "decomposed"}
    for name, caps in engines.ENGINES.items():
        assert caps.name == name
        for field in engines.declared_fields():
            assert getattr(caps, field) is not None, (name, field)
        with pytest.raises(dataclasses.FrozenInstanceError):
            caps.name = "x"  # type: ignore[misc]
        assert "ecmp" in caps.policies and "ecmp" in caps.switch_methods


def test_flow_engine_only_policies_come_from_the_policy_flag() -> None:
    only_flow = {n for n, cls in registered_policies().items() if cls.flow_engine_only}
    assert only_flow == {"ideal_spray"}
    assert not only_flow & set(engines.PACKET.policies)
    assert only_flow <= set(engines.FLOW.policies)


REFUSALS = [
    (
        "flow",
        {"records.port_stats": True},
        "records.port_stats is packet-level detail the flow engine does not model; "
        "use --engine packet",
    ),
    (
        "flow",
        {"records.uet_monitor": True},
        "records.uet_monitor is packet-level detail the flow engine does not model; "
        "use --engine packet",
    ),
    (
        "flow",
        {"topology.link_failures": [{"link": "leaf0->spine0", "at_s": 1e-6}]},
        "topology.link_failures (links failing mid-run) needs the packet engine; "
        "use --engine packet",
    ),
    (
        "flow",
        {"switch.load_balancing_method": "adaptive"},
        "switch.load_balancing_method=adaptive acts per packet on queue state; use --engine packet",
    ),
    (
        "packet",
        {"lb.policy": "ideal_spray"},
        "lb.policy=ideal_spray is the flow engine's ideal split; use --engine flow",
    ),
    (
        "flow",
        {"nic.packet_spraying_type": "reps"},
        "nic.packet_spraying_type=reps needs the packet engine (REPS reacts to per-packet "
        "ACK feedback); use --engine packet",
    ),
    (
        "flow",
        {"nic.cc": "nscc"},
        "nic.cc=nscc is read only by the packet or decomposed engine (the flow engine has no such "
        "mechanism); remove it or use --engine packet",
    ),
    (
        "flow",
        {"switch.trimming": False},
        "switch.trimming=false is read only by the packet or decomposed engine (the flow engine "
        "has no such "
        "mechanism); remove it or use --engine packet",
    ),
    (
        "packet",
        {"engine.flow_model": "open_loop"},
        "engine.flow_model=open_loop is read only by the flow engine (the packet engine has no "
        "such mechanism); remove it or use --engine flow",
    ),
]


@pytest.mark.parametrize(("engine", "overrides", "message"), REFUSALS)
def test_each_refusal_is_one_exact_line(engine: str, overrides: dict, message: str) -> None:
    sc = _sc(**overrides)
    with pytest.raises(EngineRefusal) as exc:
        engines.check_supported(sc, engine)
    assert str(exc.value) == message
    with pytest.raises(EngineRefusal) as exc2:  # the runner's name is the same check
        check_engine(sc, engine)
    assert str(exc2.value) == message


def test_unknown_engine_lists_the_registered_ones() -> None:
    with pytest.raises(
        ConfigError, match=r"--engine: must be one of flow, packet, decomposed \(got 'x'\)"
    ):
        engines.check_supported(_sc(), "x")


def test_supported_scenarios_pass() -> None:
    engines.check_supported(_sc(), "flow")
    engines.check_supported(_sc(), "packet")
    engines.check_supported(_sc(**{"nic.packet_spraying_type": "reps"}), "packet")
    engines.check_supported(_sc(**{"lb.policy": "ideal_spray"}), "flow")


def test_refusals_follow_the_declaration_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    sc = _sc(**{"nic.packet_spraying_type": "reps", "switch.load_balancing_method": "spray"})
    with pytest.raises(EngineRefusal, match="switch.load_balancing_method=spray"):
        engines.check_supported(sc, "flow")
    flow = engines.FLOW
    wider = dataclasses.replace(
        flow,
        switch_methods=(*flow.switch_methods, "spray"),
        spraying_types=(*flow.spraying_types, "reps"),
    )
    monkeypatch.setitem(engines.ENGINES, "flow", wider)
    engines.check_supported(sc, "flow")  # both refusals gone with the declaration

    narrower = dataclasses.replace(engines.PACKET, workloads=("trace",), unread_keys=())
    monkeypatch.setitem(engines.ENGINES, "packet", narrower)
    with pytest.raises(EngineRefusal) as exc:
        engines.check_supported(_sc(), "packet")
    kind = _sc().workload.kind
    assert (
        str(exc.value) == f"workload.kind={kind} is not run by the packet engine; use --engine flow"
    )
    monkeypatch.setitem(
        engines.ENGINES,
        "packet",
        narrower.__class__(**{**dataclasses.asdict(engines.PACKET), "unread_keys": ()}),
    )
    engines.check_supported(_sc(**{"engine.flow_model": "open_loop"}), "packet")


def test_packet_budget_is_declared() -> None:
    sc = _sc(**{"engine.max_packets": 1})
    table = workloads.generate(sc, fabric_of(sc))
    engines.check_flows_supported(sc, "flow", table)
    with pytest.raises(EngineRefusal, match=r"over engine\.max_packets=1; use --engine flow"):
        engines.check_flows_supported(sc, "packet", table)
