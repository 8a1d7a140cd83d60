"""``--set`` and :meth:`Scenario.with_overrides`: dotted-key overrides applied as later layers.

The precedence rule is in :mod:`.layers`; this module maps CamelCase aliases to field names,
refuses unknown keys and re-validates.  It is given the scenario (and so its class) and never
imports :mod:`.models`, which imports it for ``with_overrides``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from fabricsim.config.layers import merge, nest
from fabricsim.config.suggest import closest
from fabricsim.config.validation import validate_as
from fabricsim.errors import ConfigError

if TYPE_CHECKING:
    from fabricsim.config.models import Scenario


def _alias_map(model: type[BaseModel]) -> dict[str, str]:
    out = {}
    for name, info in model.model_fields.items():
        if info.alias:
            out[info.alias] = name
    return out


def _canonical_key(scenario_cls: type[BaseModel], parts: list[str]) -> list[str]:
    """Map CamelCase alias segments to snake_case field names where the model knows them."""
    out: list[str] = []
    model: type[BaseModel] | None = scenario_cls
    for part in parts:
        if model is None:
            out.append(part)
            continue
        name = _alias_map(model).get(part, part)
        out.append(name)
        field = model.model_fields.get(name)
        ann = field.annotation if field else None
        model = ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None
    return out


def apply_overrides(scenario: Scenario, overrides: dict[str, Any]) -> Scenario:
    """Apply dotted-key overrides as later layers (config/layers.py) and re-validate."""
    full = scenario.to_dict()
    data = scenario._unpreset or scenario.model_dump(mode="json", exclude_unset=True)
    changes_kind = any(k.split(".")[:2] == ["workload", "kind"] for k in overrides)
    keys = set(scenario.user_keys)
    for key, value in overrides.items():
        parts = _canonical_key(type(scenario), key.split("."))
        if parts != ["preset"] and not (changes_kind and parts[0] == "workload"):
            _check_known(full, parts, key)
        dotted = ".".join(parts)
        data = merge(data, nest({dotted: value}))
        keys.add(dotted)
    out = validate_as(type(scenario), data, keys)
    out._varied_keys = scenario.varied_keys
    return out


def _check_known(full: dict[str, Any], parts: list[str], key: str) -> None:
    node: Any = full
    for i, part in enumerate(parts[:-1]):
        if not isinstance(node, dict) or part not in node:
            best = closest(part, _sections(node))
            hint = f"; did you mean {'.'.join([*parts[:i], best])}?" if best else ""
            raise ConfigError(f"{'.'.join(parts[: i + 1])}: unknown key in --set {key}{hint}")
        node = node[part]
    if not isinstance(node, dict):
        raise ConfigError(f"{key}: unknown key (its parent is not a section)")
    if parts[-1] not in node and parts[:-1] != ["topology", "degraded_links"]:
        best = closest(parts[-1], node)
        hint = f"; did you mean {'.'.join([*parts[:-1], best])}?" if best else ""
        raise ConfigError(f"{key}: unknown key{hint or ' (fabricsim keys lists them)'}")


def _sections(node: Any) -> list[str]:
    return [k for k, v in node.items() if isinstance(v, dict)] if isinstance(node, dict) else []
