"""Load scenarios from built-in names, YAML files or dicts; apply ``--set`` overrides.

Validation errors become :class:`~fabricsim.errors.ConfigError` with one line that names the
dotted field and what is allowed.
"""

from __future__ import annotations

import copy
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from fabricsim.config.models import Scenario
from fabricsim.errors import ConfigError

_WORKLOAD_KINDS = (
    "trace",
    "permutation",
    "incast",
    "leaf_to_leaf",
    "kv_cache",
    "moe",
    "collective",
)


def builtin_names() -> list[str]:
    """Names of the built-in scenarios, sorted."""
    files = resources.files("fabricsim.scenarios").iterdir()
    return sorted(f.name[:-5] for f in files if f.name.endswith(".yaml"))


def builtin_descriptions() -> dict[str, str]:
    """Built-in scenario name -> one-line description."""
    return {n: str(_builtin_dict(n).get("description", "")) for n in builtin_names()}


def _builtin_dict(name: str) -> dict[str, Any]:
    text = resources.files("fabricsim.scenarios").joinpath(f"{name}.yaml").read_text()
    data = yaml.safe_load(text)
    assert isinstance(data, dict)
    return data


def _read_yaml(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise ConfigError(f"scenario file not found: {path}")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise ConfigError(f"{path}: broken YAML{where}: {problem}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a scenario must be a YAML mapping of keys to values")
    return data


def load_scenario(source: str | Path | dict[str, Any] | Scenario) -> Scenario:
    """Load and validate a scenario.

    Parameters
    ----------
    source
        A built-in name (see ``fabricsim scenarios``), a path to a YAML file, a dict with the
        scenario's keys, or a :class:`Scenario` (returned as is).

    Examples
    --------
    >>> sc = load_scenario("ecmp-collision")
    >>> sc.topology.spines, sc.workload.kind
    (8, 'leaf_to_leaf')
    """
    if isinstance(source, Scenario):
        return source
    if isinstance(source, dict):
        return validate(copy.deepcopy(source))
    text = str(source)
    if text in builtin_names():
        data = _builtin_dict(text)
        data.setdefault("name", text)
        return validate(data)
    path = Path(text)
    if path.suffix.lower() in (".yaml", ".yml") or path.exists():
        data = _read_yaml(path)
        data.setdefault("name", path.stem)
        return validate(data, base_dir=path.parent)
    names = ", ".join(builtin_names())
    raise ConfigError(f"unknown scenario '{text}': not a file; built-in names are {names}")


def validate(data: dict[str, Any], base_dir: Path | None = None) -> Scenario:
    """Validate a scenario dict into a :class:`Scenario`; raise ConfigError on bad input."""
    if base_dir is not None:
        _resolve_paths(data, base_dir)
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc)) from None


def _resolve_paths(data: dict[str, Any], base_dir: Path) -> None:
    wl = data.get("workload")
    if not isinstance(wl, dict):
        return
    for key in ("path", "prompt_path", "gpu_profile_path"):
        val = wl.get(key)
        if isinstance(val, str) and val and not Path(val).is_absolute():
            candidate = base_dir / val
            if candidate.exists():
                wl[key] = str(candidate)


def format_validation_error(exc: ValidationError) -> str:
    """One line naming the first offending dotted field and what is allowed."""
    err = exc.errors()[0]
    loc = [str(p) for p in err["loc"]]
    if len(loc) >= 2 and loc[0] == "workload" and loc[1] in _WORKLOAD_KINDS:
        loc = [loc[0], *loc[2:]]
    field = ".".join(loc) or "scenario"
    kind = err["type"]
    if kind == "extra_forbidden":
        return f"{field}: unknown key (not a field of this scenario; see the key table)"
    if kind == "missing":
        return f"{field}: missing required field"
    msg = str(err["msg"])
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    if kind == "union_tag_invalid":
        return f"{field}: unknown workload kind; allowed: {', '.join(_WORKLOAD_KINDS)}"
    got = err.get("input")
    shown = "" if isinstance(got, dict | list) or "(got" in msg else f" (got {got!r})"
    return f"{field}: {msg}{shown}"


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
    """Apply dotted-key overrides to a scenario and re-validate it."""
    data = scenario.to_dict()
    for key, value in overrides.items():
        parts = _canonical_key(Scenario, key.split("."))
        node: Any = data
        for i, part in enumerate(parts[:-1]):
            if not isinstance(node, dict) or part not in node:
                raise ConfigError(f"{'.'.join(parts[: i + 1])}: unknown key in --set {key}")
            node = node[part]
        if not isinstance(node, dict):
            raise ConfigError(f"{key}: unknown key (its parent is not a section)")
        last = parts[-1]
        if last not in node and parts[:-1] != ["topology", "degraded_links"]:
            raise ConfigError(
                f"{key}: unknown key (not a field of this scenario; see the key table)"
            )
        node[last] = value
    return validate(data)


def parse_set_options(items: list[str]) -> dict[str, Any]:
    """Parse ``KEY=VALUE`` strings; values are YAML scalars (``25``, ``true``, ``[a, b]``)."""
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"--set {item!r}: expected KEY=VALUE, e.g. workload.qps=25")
        key, raw = item.split("=", 1)
        key = key.strip()
        if not key:
            raise ConfigError(f"--set {item!r}: empty key")
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            value = raw
        out[key] = _number_or_text(value)
    return out


def _number_or_text(value: Any) -> Any:
    """YAML 1.1 reads ``1e-3`` as text; people mean a number."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value
