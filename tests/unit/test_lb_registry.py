"""Registering a strategy is all it takes: its name is valid config and the engines declare it.

Each test registers a throwaway strategy through a fixture that unregisters it afterwards, so no
other test sees it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import fabricsim
from fabricsim.cc.base import CongestionControl, register_cc, unregister_cc
from fabricsim.config.names import registered_names
from fabricsim.errors import ConfigError, EngineRefusal
from fabricsim.experiments import engines
from fabricsim.lb import registered_methods
from fabricsim.lb.base import PathPolicy, register_policy, unregister_policy
from fabricsim.lb.spraying import (
    AllPorts,
    SprayContext,
    SprayingStrategy,
    make_spraying,
    register_spraying,
    unregister_spraying,
)
from fabricsim.lb.switch import (
    DeciderView,
    MemberChoice,
    PacketView,
    SwitchContext,
    register_switch_method,
    unregister_switch_method,
)

SMALL = {
    "name": "throwaway",
    "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 4, "hosts_per_leaf": 4},
    "workload": {"kind": "permutation", "size_bytes": 50_000},
}


def _sc(**keys: object) -> fabricsim.Scenario:
    return fabricsim.load_scenario(SMALL).with_overrides(keys)


class StrideSpraying(SprayingStrategy):
    """A throwaway spraying type: entropies 0, 7, 14, ... (fluid form: all ports)."""

    name = "stride_test"
    help = "a throwaway: entropies in steps of 7"
    fluid = AllPorts

    def __init__(self) -> None:
        self.i = 0

    @classmethod
    def for_group(cls, ctx: SprayContext) -> SprayingStrategy:
        return cls()

    def next_entropy(self) -> int:
        self.i += 1
        return (7 * self.i) & 0xFFFF


class EchoSpraying(StrideSpraying):
    """A throwaway packet-only spraying type."""

    name = "echo_test"
    help = "a throwaway that needs ACKs"
    fluid = None
    packet_only = "it echoes ACKed entropies"


class FirstLiveChoice(MemberChoice):
    """A throwaway switch method: always the first live member."""

    name = "first_live_test"
    help = "a throwaway: the first live member"
    packet_only = "reads live port state"

    @classmethod
    def for_switch(cls, ctx: SwitchContext) -> MemberChoice:
        return cls()

    def pick(self, dec: DeciderView, pkt: PacketView) -> int:
        return next((i for i, p in enumerate(dec.ports) if not p.failed), 0)


@pytest.fixture
def stride() -> Iterator[type[SprayingStrategy]]:
    register_spraying(StrideSpraying)
    yield StrideSpraying
    unregister_spraying(StrideSpraying.name)


@pytest.fixture
def echo() -> Iterator[type[SprayingStrategy]]:
    register_spraying(EchoSpraying)
    yield EchoSpraying
    unregister_spraying(EchoSpraying.name)


@pytest.fixture
def first_live() -> Iterator[type[MemberChoice]]:
    register_switch_method(FirstLiveChoice)
    yield FirstLiveChoice
    unregister_switch_method(FirstLiveChoice.name)


def test_a_registered_spraying_type_is_valid_config_and_declared_by_both_engines(stride) -> None:
    sc = _sc(**{"nic.packet_spraying_type": "stride_test"})
    assert sc.nic.packet_spraying_type == "stride_test"
    assert "stride_test" in engines.FLOW.spraying_types
    assert "stride_test" in engines.PACKET.spraying_types
    assert type(make_spraying(sc.nic, None, lambda: 0.5, None, 1, 1)) is StrideSpraying  # type: ignore[arg-type]
    for engine in ("flow", "packet"):
        res = fabricsim.run(sc, engine=engine)
        assert res.summary["flows_completed"] == res.summary["flows_total"] > 0
    packet = fabricsim.run(sc, engine="packet")
    assert set(packet.flows["entropy"]) <= {7 * k for k in range(1, 100)}


def test_an_unregistered_spraying_type_is_gone_everywhere(stride) -> None:
    unregister_spraying("stride_test")
    assert "stride_test" not in registered_names("nic.packet_spraying_type")
    assert "stride_test" not in engines.PACKET.spraying_types
    with pytest.raises(ConfigError, match=r"^nic\.packet_spraying_type: must be one of none, "):
        _sc(**{"nic.packet_spraying_type": "stride_test"})
    register_spraying(StrideSpraying)  # the fixture unregisters it again


def test_a_packet_only_spraying_type_is_refused_by_the_flow_engine_with_its_reason(echo) -> None:
    sc = _sc(**{"nic.packet_spraying_type": "echo_test"})
    assert "echo_test" in engines.PACKET.spraying_types
    assert "echo_test" not in engines.FLOW.spraying_types
    with pytest.raises(EngineRefusal) as exc:
        engines.check_supported(sc, "flow")
    assert str(exc.value) == (
        "nic.packet_spraying_type=echo_test needs the packet engine (it echoes ACKed "
        "entropies); use --engine packet"
    )


def test_a_spraying_type_must_declare_a_fluid_form_or_why_not() -> None:
    class Undeclared(StrideSpraying):
        name = "undeclared_test"
        fluid = None

    with pytest.raises(ValueError, match="fluid form or why packet only"):
        register_spraying(Undeclared)
    assert "undeclared_test" not in registered_names("nic.packet_spraying_type")


def test_a_registered_switch_method_runs_on_the_packet_engine_only(first_live) -> None:
    sc = _sc(**{"switch.load_balancing_method": "first_live_test"})
    assert "first_live_test" in engines.PACKET.switch_methods
    assert "first_live_test" not in engines.FLOW.switch_methods
    with pytest.raises(EngineRefusal) as exc:
        engines.check_supported(sc, "flow")
    assert str(exc.value) == (
        "switch.load_balancing_method=first_live_test reads live port state; use --engine packet"
    )
    res = fabricsim.run(sc, engine="packet")
    assert res.summary["flows_completed"] == res.summary["flows_total"] > 0
    spines = {hop for path in res.flows["path"] for hop in path.split(">") if "spine" in hop}
    assert spines == {"spine0"}  # the first member of every leaf's uplink group
    method = next(m for m in registered_methods() if m.name == "first_live_test")
    assert (method.help, method.engines) == ("a throwaway: the first live member", ("packet",))


def test_a_registered_policy_and_cc_are_valid_config() -> None:
    @register_policy
    class Same(PathPolicy):
        """A throwaway policy: per-flow ECMP under another name."""

        name = "same_test"

    register_cc("cc_test", "a throwaway window")(CongestionControl)
    try:
        sc = _sc(**{"lb.policy": "same_test", "nic.cc": "cc_test"})
        assert sc.nic.packet_spraying_type == "none"  # one path per flow: no NIC spraying
        assert "same_test" in engines.PACKET.policies and "same_test" in engines.FLOW.policies
        res = fabricsim.run(sc, engine="packet")
        assert res.summary["flows_completed"] == res.summary["flows_total"]
    finally:
        unregister_policy("same_test")
        unregister_cc("cc_test")
    with pytest.raises(ConfigError, match=r"^nic\.cc: must be one of constant, dcqcn, nscc \(got"):
        _sc(**{"nic.cc": "cc_test"})
