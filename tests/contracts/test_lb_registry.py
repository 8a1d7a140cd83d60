"""The contract of the load-balancing registries with config and the engine declarations.

Derived from the registries at collection time, so a newly registered spraying type, switch
method, path policy, CC or hash method is checked without editing this file:

* config's name table (:mod:`fabricsim.config.names`) holds exactly each registry's names, each
  with a one-line help;
* every method (:func:`fabricsim.lb.registered_methods`) is declared by exactly the engines it
  names, and an engine it does not name refuses it with the method's own reason;
* a spraying type the flow engine runs has a fluid form whose weights sum to 1;
* a method's knobs are config keys, and the applicability tables agree with them.
"""

from __future__ import annotations

import math

import pytest
from contract_cases import scenario

import fabricsim
from fabricsim.cc.base import registered_cc
from fabricsim.config.applicability import POLICY_KEYS, SWITCH_METHOD_KEYS
from fabricsim.config.models import Scenario
from fabricsim.config.names import POINTS, name_entries, registered_names
from fabricsim.errors import EngineRefusal
from fabricsim.experiments.engines import ENGINES, check_supported
from fabricsim.lb import Method, registered_methods
from fabricsim.lb.base import registered_policies
from fabricsim.lb.spraying import registered_spraying
from fabricsim.lb.switch import registered_switch_methods
from fabricsim.routing.hashing import registered_hashes
from fabricsim.routing.router import Router
from fabricsim.topology import fabric_for
from fabricsim.transport import registered_transports

FIELD = {
    "lb.policy": "policies",
    "nic.packet_spraying_type": "spraying_types",
    "switch.load_balancing_method": "switch_methods",
}
METHODS = registered_methods()


def _registry(point: str) -> tuple[str, ...]:
    return {
        "lb.policy": lambda: tuple(registered_policies()),
        "nic.packet_spraying_type": lambda: tuple(registered_spraying()),
        "switch.load_balancing_method": lambda: tuple(registered_switch_methods()),
        "nic.cc": registered_cc,
        "switch.hash_method": registered_hashes,
        "nic.transport": registered_transports,
    }[point]()


@pytest.mark.parametrize("point", list(POINTS))
def test_config_names_are_exactly_the_registry(point: str) -> None:
    assert set(registered_names(point)) == set(_registry(point))
    for entry in name_entries(point):
        assert entry.help and "\n" not in entry.help, f"{point}={entry.name}: no one-line help"


def test_every_extension_point_field_is_validated_by_the_name_table() -> None:
    for point in POINTS:
        section, name = point.split(".")
        field = Scenario.model_fields[section].annotation.model_fields[name]  # type: ignore[union-attr]
        assert field.annotation is str, f"{point} is not a registered-name string"
        assert any(getattr(m, "point", None) == point for m in field.metadata), point


@pytest.mark.parametrize("method", METHODS, ids=lambda m: f"{m.point}={m.name}")
def test_each_engine_declares_a_method_exactly_when_the_method_names_it(method: Method) -> None:
    for engine, caps in ENGINES.items():
        declared = method.name in getattr(caps, FIELD[method.point])
        assert declared == (engine in method.engines), (engine, method)


@pytest.mark.parametrize(
    "method",
    [m for m in METHODS if set(ENGINES) - set(m.engines)],
    ids=lambda m: f"{m.point}={m.name}",
)
def test_an_engine_not_named_refuses_with_the_methods_reason(method: Method) -> None:
    assert method.refusal, f"{method.point}={method.name}: no refusal reason declared"
    sc = fabricsim.load_scenario(scenario({method.point: method.name}))
    alt = method.engines[0]
    for engine in set(ENGINES) - set(method.engines):
        with pytest.raises(EngineRefusal) as exc:
            check_supported(sc, engine)
        want = f"{method.point}={method.name} {method.refusal}; use --engine {alt}"
        assert str(exc.value) == want


@pytest.mark.parametrize(
    "name", [n for n, cls in registered_spraying().items() if "flow" in cls.engines()]
)
def test_a_flow_spraying_type_has_fluid_weights_summing_to_one(name: str) -> None:
    sc = fabricsim.load_scenario(scenario({"nic.packet_spraying_type": name}))
    router = Router.for_scenario(sc, fabric_for(sc.topology))
    cls = registered_spraying()[name]
    assert cls.fluid is not None
    fluid = cls.fluid(sc.nic)
    weights = fluid.weights(router, 0, 5, 1234)
    assert weights and math.isclose(sum(w for _, w in weights), 1.0)


def test_knobs_are_config_keys_and_agree_with_applicability() -> None:
    for m in METHODS:
        for key in m.knobs:
            section, *path, name = key.split(".")
            model = Scenario.model_fields[section].annotation
            for part in path:  # a nested section (nic.plb.*)
                model = model.model_fields[part].annotation  # type: ignore[union-attr]
            assert name in model.model_fields, f"{m.point}={m.name}: knob {key} is not a key"  # type: ignore[union-attr]
    knobs = {(m.point, m.name): set(m.knobs) for m in METHODS}
    tables = ((SWITCH_METHOD_KEYS, "switch.load_balancing_method"), (POLICY_KEYS, "lb.policy"))
    for table, point in tables:
        for key, owner in table.items():
            assert key in knobs[(point, owner)], f"{key}: read by {owner}, not its knob"
        for (p, name), keys in knobs.items():
            if p == point:
                assert all(table.get(k) == name for k in keys), (name, keys)
