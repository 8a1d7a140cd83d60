"""The contract of what an engine does not declare, and of the registries against config.

For each engine, every value another engine (or the registry) offers and this engine does not
declare in :data:`fabricsim.experiments.engines.ENGINES` is refused before the run, in one line
naming the key: a path policy, spraying type, switch method, flow model, workload, record, a
registered CC on an engine that does not read ``nic.cc``, each of its ``unread_keys`` set to a
non-default value, and mid-run link failures where ``link_failures`` is False.  Every name a
registry holds is also selectable through config: the keys that name a strategy validate against
config's name table (:mod:`fabricsim.config.names`), which the registrations fill.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal, get_args, get_origin

import pytest
from contract_cases import CC_NEEDS, SMALL_WORKLOADS, scenario

import fabricsim
import fabricsim.cc  # noqa: F401  (registers every CC)
import fabricsim.lb  # noqa: F401  (registers every policy)
import fabricsim.workloads  # noqa: F401  (registers every workload builder)
from fabricsim.cc.base import registered_cc
from fabricsim.config.models import Scenario
from fabricsim.config.names import POINTS, registered_names
from fabricsim.errors import ConfigError, EngineRefusal
from fabricsim.experiments.engines import ENGINES
from fabricsim.lb.base import registered_policies
from fabricsim.lb.spraying import registered_spraying
from fabricsim.lb.switch import registered_switch_methods
from fabricsim.workloads.base import registered_workloads

# capability field -> the key it governs and the registry that names its values (if any).
VALUE_FIELDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "policies": ("lb.policy", tuple(registered_policies())),
    "spraying_types": ("nic.packet_spraying_type", tuple(registered_spraying())),
    "switch_methods": ("switch.load_balancing_method", tuple(registered_switch_methods())),
    "flow_models": ("engine.flow_model", ()),
    "workloads": ("workload.kind", registered_workloads()),
}


# keys whose values are lists of entries: one valid entry each
LIST_VALUES: dict[str, list[dict[str, Any]]] = {
    "switch.pfc_stalled_hosts": [{"host": "host0", "at_s": 0.0}],
}


def _field(key: str) -> Any:
    section, *path, name = key.split(".")  # nested sections too (nic.nscc.target_delay_us)
    model: Any = Scenario.model_fields[section].annotation
    for part in path:
        model = model.model_fields[part].annotation
    return model.model_fields[name]


def other_value(key: str) -> Any:
    """A valid value of ``key`` other than its default (from the field's type)."""
    field = _field(key)
    default = field.get_default(call_default_factory=True)
    ann = field.annotation
    if key in POINTS:  # a registered name
        return next(v for v in registered_names(key) if v != default)
    if get_origin(ann) is Literal:
        return next(v for v in get_args(ann) if v != default)
    if ann is bool:
        return not default
    types = set(get_args(ann)) or {ann}
    if int in types:
        return 10_000 if default is None else default + 1
    if float in types:
        return 1.0 if default is None else default * 2
    if key in LIST_VALUES:  # a list of entries (a sub-model each)
        return LIST_VALUES[key]
    raise AssertionError(f"no non-default value known for {key} ({ann})")


def _refusal_cases() -> Iterator[Any]:
    for engine, caps in ENGINES.items():
        rows: list[tuple[str, dict[str, Any]]] = []
        for field, (key, registry) in VALUE_FIELDS.items():
            declared = set(getattr(caps, field))
            if field == "flow_models" and not declared:
                continue  # the engine does not read the key: its unread_keys cover it
            offered = set(registry).union(*(getattr(c, field) for c in ENGINES.values()))
            rows += [(f"{key}={v}", {key: v}) for v in sorted(offered - declared)]
        every_record = set().union(*(c.records for c in ENGINES.values()))
        rows += [
            (f"records.{r}", {f"records.{r}": True})
            for r in sorted(every_record - set(caps.records))
        ]
        if "nic.cc" in caps.unread_keys:
            default_cc = _field("nic.cc").default
            rows += [(f"nic.cc={c}", {"nic.cc": c}) for c in registered_cc() if c != default_cc]
        rows += [(f"{k}={other_value(k)}", {k: other_value(k)}) for k in caps.unread_keys]
        if not caps.link_failures:
            failure = [{"link": "leaf0->spine0", "at_s": 1e-6}]
            rows.append(("topology.link_failures", {"topology.link_failures": failure}))
        seen = set()
        for name, overrides in rows:
            if name in seen:
                continue
            seen.add(name)
            yield pytest.param(engine, overrides, id=f"{engine}-{name}")


@pytest.mark.parametrize(("engine", "overrides"), list(_refusal_cases()))
def test_undeclared_mechanism_is_refused_in_one_line(
    engine: str, overrides: dict[str, Any]
) -> None:
    ((key, value),) = overrides.items()
    workload = SMALL_WORKLOADS.get(value) if key == "workload.kind" else None
    d = scenario({} if workload else overrides, workload)
    with pytest.raises((EngineRefusal, ConfigError)) as exc:
        fabricsim.run(d, engine=engine)
    message = str(exc.value)
    assert "\n" not in message.strip(), f"not one line: {message!r}"
    assert key in message, f"the refusal does not name {key}: {message!r}"


def test_every_registered_name_is_declared_by_some_engine() -> None:
    for field, (key, registry) in VALUE_FIELDS.items():
        declared = set().union(*(getattr(c, field) for c in ENGINES.values()))
        assert set(registry) <= declared, f"{key}: registered but run by no engine"
    engines_reading_cc = [c.name for c in ENGINES.values() if "nic.cc" not in c.unread_keys]
    assert engines_reading_cc, "no engine reads nic.cc, so no CC can run"


def test_every_declared_workload_has_a_builder() -> None:
    declared = set().union(*(c.workloads for c in ENGINES.values()))
    assert declared <= set(registered_workloads()), "declared workload kinds without a builder"


@pytest.mark.parametrize("name", registered_cc())
def test_every_registered_cc_is_selectable(name: str) -> None:
    # a ConfigError here: config closes it (with what the controller needs, CC_NEEDS)
    fabricsim.load_scenario(scenario({"nic.cc": name, **CC_NEEDS.get(name, {})}))


@pytest.mark.parametrize("name", sorted(registered_policies()))
def test_every_registered_policy_is_selectable(name: str) -> None:
    fabricsim.load_scenario(scenario({"lb.policy": name}))


@pytest.mark.parametrize(
    ("key", "name"), [(key, name) for key in POINTS for name in registered_names(key)]
)
def test_every_registered_name_is_selectable(key: str, name: str) -> None:
    needs = CC_NEEDS.get(name, {}) if key == "nic.cc" else {}
    fabricsim.load_scenario(scenario({key: name, **needs}))
