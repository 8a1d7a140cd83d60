"""Scenario validation: pydantic errors become one :class:`~fabricsim.errors.ConfigError` line
that names the dotted field and what is allowed.

Below :mod:`.models` in the import order (it is given the model class), so the models and the
loader can both use it.
"""

from __future__ import annotations

import copy
import re
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from fabricsim.config.layers import merge
from fabricsim.config.presets import preset_layer
from fabricsim.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Set

    from fabricsim.config.models import Scenario

_WORKLOAD_KINDS = (
    "trace",
    "permutation",
    "incast",
    "leaf_to_leaf",
    "kv_cache",
    "moe",
    "collective",
)


def validate_as(
    cls: type[Scenario], data: dict[str, Any], user_keys: Set[str] = frozenset()
) -> Scenario:
    """Validate ``data`` into ``cls``; raise ConfigError (one line) on bad input.

    ``user_keys`` are the dotted keys the user set (kept on the scenario as ``user_keys``).
    """
    layer = preset_layer(data, lambda d: _validate(cls, d)) if isinstance(data, dict) else {}
    sc = _validate(cls, merge(layer, data) if layer else data)
    sc._user_keys = frozenset(user_keys)
    if layer:
        sc._unpreset = copy.deepcopy(data)
    return sc


def _validate(cls: type[Scenario], data: dict[str, Any]) -> Scenario:
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc)) from None
    except RecursionError:
        raise ConfigError("scenario: nested too deeply to be a scenario") from None


_BOUND_WORDS = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}


def _is_member_tag(part: str) -> bool:
    """Whether a location element names a union member (``float``, ``literal['auto']``...)."""
    return "[" in part or "-" in part or part in ("float", "int", "str", "bool", "none")


def _member_phrase(err: Any) -> str:
    """What one union member accepts, e.g. ``a number > 0 and <= 100000`` or ``'auto'``."""
    ctx = err.get("ctx") or {}
    if err["type"] == "literal_error":
        return str(ctx.get("expected", "a listed value"))
    bounds = [f"{_BOUND_WORDS[k]} {ctx[k]}" for k in ("gt", "ge", "lt", "le") if k in ctx]
    kind = "a whole number" if "int" in str(err["type"]) else "a number"
    return f"{kind} {' and '.join(bounds)}".strip() if bounds else kind


def format_validation_error(exc: ValidationError) -> str:
    """One line naming the first offending dotted field and what is allowed."""
    errors = exc.errors()
    err = errors[0]
    loc = [str(p) for p in err["loc"]]
    if len(loc) >= 2 and loc[0] == "workload" and loc[1] in _WORKLOAD_KINDS:
        loc = [loc[0], *loc[2:]]
    tagged = bool(loc) and _is_member_tag(loc[-1])
    while loc and _is_member_tag(loc[-1]):
        loc = loc[:-1]
    field = ".".join(loc) or "scenario"
    kind = err["type"]
    got = err.get("input")
    shown = "" if isinstance(got, dict | list) else f" (got {got!r})"
    if kind == "extra_forbidden":
        return f"{field}: unknown key (not a field of this scenario; see the key table)"
    if kind == "missing":
        return f"{field}: missing required field"
    if kind == "union_tag_invalid":
        return f"{field}: unknown workload kind; allowed: {', '.join(_WORKLOAD_KINDS)}"
    if kind == "finite_number":
        return f"{field}: must be a finite number, not {got!r}"
    if tagged:  # a union (e.g. a number or 'auto'): say every alternative at once
        same = [e for e in errors if e["loc"][: len(err["loc"]) - 1] == err["loc"][:-1]]
        if any(e["type"] == "finite_number" for e in same):
            return f"{field}: must be a finite number, not {got!r}"
        options = " or ".join(dict.fromkeys(_member_phrase(e) for e in same))
        return f"{field}: must be {options}{shown}"
    msg = str(err["msg"])
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    named = re.match(r"^([a-z_]+): (.*)$", msg)
    if kind == "value_error" and named:  # a section's check that names its own field
        field = named[1] if field == "scenario" else f"{field}.{named[1]}"
        msg = named[2]
    if "(got" in msg:
        shown = ""
    return f"{field}: {msg}{shown}"
