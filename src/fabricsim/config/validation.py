"""Scenario validation: pydantic errors become a :class:`~fabricsim.errors.ConfigError` with one
line per offending field (up to five) that names the dotted field and what is allowed, and the
closest known key or value where one is close.

Below :mod:`.models` in the import order (it is given the model class), so the models and the
loader can both use it.
"""

from __future__ import annotations

import copy
import re
from typing import TYPE_CHECKING, Any, get_args

from pydantic import ValidationError

from fabricsim.config.layers import merge
from fabricsim.config.presets import preset_layer
from fabricsim.config.suggest import closest, did_you_mean
from fabricsim.config.workloads import WORKLOAD_KINDS
from fabricsim.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Set

    from fabricsim.config.models import Scenario

_WORKLOAD_KINDS = WORKLOAD_KINDS  # the union's kinds (config.workloads), never a list of its own


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
        raise ConfigError(format_validation_error(exc, cls)) from None
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


MAX_ERRORS = 5
"""Most errors of one scenario reported (one line each); the rest are counted."""


def format_validation_error(exc: ValidationError, cls: type[Any] | None = None) -> str:
    """One line per offending dotted field (up to :data:`MAX_ERRORS`), naming what is allowed.

    ``cls`` (the model validated) lets an unknown key name the closest known one.
    """
    errors = exc.errors()
    lines: dict[str, str] = {}
    for err in errors:
        field, line = _format_one(err, errors, cls)
        lines.setdefault(field, line)
    shown = list(lines.values())[:MAX_ERRORS]
    if len(lines) > MAX_ERRORS:
        more = len(lines) - MAX_ERRORS
        shown.append(f"... and {more} more error{'s' if more > 1 else ''}")
    return "\n".join(shown)


def _field_of(err: Any) -> tuple[list[str], bool]:
    loc = [str(p) for p in err["loc"]]
    if len(loc) >= 2 and loc[0] == "workload" and loc[1] in _WORKLOAD_KINDS:
        loc = [loc[0], *loc[2:]]
    tagged = bool(loc) and _is_member_tag(loc[-1])
    while loc and _is_member_tag(loc[-1]):
        loc = loc[:-1]
    return loc, tagged


def _known_fields(cls: type[Any] | None, loc: list[Any]) -> list[str]:
    """The field names (and aliases) of the model that holds the field at ``loc``."""
    model: Any = cls
    for part in loc[:-1]:
        fields = getattr(model, "model_fields", None)
        if not fields:
            return []
        if model is cls and part == "workload":
            model = _workload_member(fields["workload"].annotation, loc)
            continue
        if part in _WORKLOAD_KINDS:
            continue
        info = fields.get(part)
        model = info.annotation if info is not None else None
    fields = getattr(model, "model_fields", None) or {}
    return [*fields, *(f.alias for f in fields.values() if f.alias)]


def _workload_member(annotation: Any, loc: list[Any]) -> Any:
    """The workload model of the kind named in ``loc`` (``workload.<kind>.<field>``)."""
    kind = str(loc[1]) if len(loc) > 2 else ""
    for member in get_args(annotation):
        kind_field = getattr(member, "model_fields", {}).get("kind")
        if kind_field is not None and kind_field.default == kind:
            return member
    return None


def _format_one(err: Any, errors: list[Any], cls: type[Any] | None) -> tuple[str, str]:
    """(dotted field, its line) of one pydantic error."""
    loc, tagged = _field_of(err)
    field = ".".join(loc) or "scenario"
    kind = err["type"]
    got = err.get("input")
    shown = "" if isinstance(got, dict | list) else f" (got {got!r})"
    if kind == "extra_forbidden":
        best = closest(str(err["loc"][-1]), _known_fields(cls, list(err["loc"])))
        hint = f"; did you mean {'.'.join([*loc[:-1], best])}?" if best else ""
        return field, f"{field}: unknown key{hint or ' (fabricsim keys lists them)'}"
    if kind == "missing":
        return field, f"{field}: missing required field"
    if kind == "union_tag_invalid":
        tag = (err.get("ctx") or {}).get("tag")
        hint = did_you_mean(tag, _WORKLOAD_KINDS)
        return field, f"{field}: unknown workload kind; allowed: {', '.join(_WORKLOAD_KINDS)}{hint}"
    if kind == "finite_number":
        return field, f"{field}: must be a finite number, not {got!r}"
    if tagged:  # a union (e.g. a number or 'auto'): say every alternative at once
        same = [e for e in errors if e["loc"][: len(err["loc"]) - 1] == err["loc"][:-1]]
        if any(e["type"] == "finite_number" for e in same):
            return field, f"{field}: must be a finite number, not {got!r}"
        options = " or ".join(dict.fromkeys(_member_phrase(e) for e in same))
        return field, f"{field}: must be {options}{shown}"
    msg = str(err["msg"])
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    named = re.match(r"^([a-z_]+(?:\.[a-z_]+)*): (.*)$", msg)
    if kind == "value_error" and named:  # a section's check that names its own field
        field = named[1] if field == "scenario" else f"{field}.{named[1]}"
        msg = named[2]
    if "(got" in msg:
        shown = ""
    if kind == "literal_error":
        expected = re.findall(r"'([^']*)'", str((err.get("ctx") or {}).get("expected", "")))
        shown += did_you_mean(got, expected)
    return field, f"{field}: {msg}{shown}"
