"""Load scenarios from built-in names, YAML files or dicts; apply ``--set`` overrides.

Validation errors become :class:`~fabricsim.errors.ConfigError` with one line that names the
dotted field and what is allowed.
"""

from __future__ import annotations

import copy
import re
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from fabricsim.config.layers import leaf_keys, merge, nest
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
    data = yaml.load(text, Loader=StrictLoader)  # noqa: S506 - a SafeLoader subclass
    assert isinstance(data, dict)
    return data


class StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader that refuses a key given twice in one mapping (as strict loaders do)."""


def _strict_mapping(loader: StrictLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            duplicate = key in seen
        except TypeError:  # an unhashable key: let the base constructor say so
            break
        if duplicate:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


StrictLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    _strict_mapping,
)


def parse_yaml(text: str, where: str) -> Any:
    """Parse YAML text strictly; every failure is one ConfigError line naming ``where``."""
    try:
        return yaml.load(text, Loader=StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise ConfigError(f"{where}: broken YAML{at}: {problem}") from None
    except RecursionError:
        raise ConfigError(f"{where}: nested too deeply to be a scenario") from None


MAX_SCENARIO_BYTES = 16 * 1024**2


def read_text_file(path: Path, what: str = "scenario file") -> str:
    """A UTF-8 text file's contents, or one ConfigError line (missing, a directory, binary...)."""
    if not path.exists():
        raise ConfigError(f"{what} not found: {path}")
    if path.is_dir():
        raise ConfigError(f"{path}: is a directory, not a {what}")
    if not path.is_file():
        raise ConfigError(f"{path}: not a regular file (a {what} must be one)")
    try:
        if path.stat().st_size > MAX_SCENARIO_BYTES:
            raise ConfigError(f"{path}: over {MAX_SCENARIO_BYTES // 1024**2} MiB, not a {what}")
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: not UTF-8 text (invalid byte at offset {exc.start}); a {what} is YAML text"
        ) from None


def _read_yaml(path: Path) -> dict[str, Any]:
    data = parse_yaml(read_text_file(path), str(path))
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a scenario must be a YAML mapping of keys to values")
    return data


def _default_name(stem: str) -> str:
    """A file's stem made a valid scenario name (other characters become ``_``)."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", stem).lstrip(".-")[:100]
    return name or "custom"


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
        data = copy.deepcopy(source)
        return validate(data, user_keys=_leaf_keys(data))
    text = str(source)
    if text in builtin_names():
        data = _builtin_dict(text)
        data.setdefault("name", text)
        return validate(data)
    path = Path(text)
    if path.suffix.lower() in (".yaml", ".yml") or path.exists():
        data = _read_yaml(path)
        keys = _leaf_keys(data)
        data.setdefault("name", _default_name(path.stem))
        return validate(data, base_dir=path.parent, user_keys=keys)
    names = ", ".join(builtin_names())
    raise ConfigError(f"unknown scenario '{text}': not a file; built-in names are {names}")


def validate(
    data: dict[str, Any],
    base_dir: Path | None = None,
    user_keys: frozenset[str] | set[str] = frozenset(),
) -> Scenario:
    """Validate a scenario dict into a :class:`Scenario`; raise ConfigError on bad input.

    ``user_keys`` are the dotted keys the user set (kept on the scenario as ``user_keys``).
    """
    if base_dir is not None:
        _resolve_paths(data, base_dir)
    try:
        sc = Scenario.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc)) from None
    except RecursionError:
        raise ConfigError("scenario: nested too deeply to be a scenario") from None
    sc._user_keys = frozenset(user_keys)
    return sc


def effective_scenario(data: dict[str, Any]) -> Scenario:
    """A scenario from :meth:`Scenario.to_dict` output of an already checked scenario.

    Experiments hand their variants to workers this way: no key counts as set by the user
    (the driver ran the user-key checks before dispatching).
    """
    return validate(copy.deepcopy(data))


def _leaf_keys(data: dict[str, Any]) -> frozenset[str]:
    try:
        return frozenset(leaf_keys(data))
    except RecursionError:
        raise ConfigError("scenario: nested too deeply to be a scenario") from None


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
    data = scenario.model_dump(mode="json", exclude_unset=True)
    changes_kind = any(k.split(".")[:2] == ["workload", "kind"] for k in overrides)
    keys = set(scenario.user_keys)
    for key, value in overrides.items():
        parts = _canonical_key(Scenario, key.split("."))
        if not (changes_kind and parts[0] == "workload"):
            _check_known(full, parts, key)
        dotted = ".".join(parts)
        data = merge(data, nest({dotted: value}))
        keys.add(dotted)
    out = validate(data, user_keys=keys)
    out._varied_keys = scenario.varied_keys
    return out


def _check_known(full: dict[str, Any], parts: list[str], key: str) -> None:
    node: Any = full
    for i, part in enumerate(parts[:-1]):
        if not isinstance(node, dict) or part not in node:
            raise ConfigError(f"{'.'.join(parts[: i + 1])}: unknown key in --set {key}")
        node = node[part]
    if not isinstance(node, dict):
        raise ConfigError(f"{key}: unknown key (its parent is not a section)")
    if parts[-1] not in node and parts[:-1] != ["topology", "degraded_links"]:
        raise ConfigError(f"{key}: unknown key (not a field of this scenario; see the key table)")


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
            value = yaml.load(raw, Loader=StrictLoader) if raw.strip() else ""  # noqa: S506
        except yaml.YAMLError:
            value = raw
        except RecursionError:
            raise ConfigError(f"--set {key}: value nested too deeply") from None
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
