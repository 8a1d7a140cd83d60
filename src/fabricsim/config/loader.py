"""Load scenarios from built-in names, YAML files or dicts; parse ``--set`` options.

Validation errors become :class:`~fabricsim.errors.ConfigError` with one line that names the
dotted field and what is allowed (:mod:`.validation`); overrides are applied by
:mod:`.overrides` (re-exported here as ``apply_overrides``).
"""

from __future__ import annotations

import copy
import re
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from fabricsim.config.applicability import recorded_keys
from fabricsim.config.layers import leaf_keys
from fabricsim.config.models import Scenario
from fabricsim.config.overrides import apply_overrides  # noqa: F401  (re-exported, old home)
from fabricsim.config.suggest import closest
from fabricsim.config.validation import format_validation_error, validate_as  # noqa: F401
from fabricsim.errors import ConfigError


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
    """PyYAML's safe loader that refuses a key given twice in one mapping (as strict loaders do).

    YAML merge keys (``<<: *shared``, ``<<: [*a, *b]``) are accepted: the merged keys fill in
    what the mapping does not give itself, as the YAML 1.1 merge type says.
    """


_MERGE_TAG = "tag:yaml.org,2002:merge"


def _strict_mapping(loader: StrictLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if key_node.tag == _MERGE_TAG:  # ``<<: *shared``: its keys yield to the explicit ones
            continue
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


EXTENSION_PREFIX = "x-"
"""Top-level keys of a scenario file that start with this hold shared blocks for YAML anchors
and merge keys (``x-fabric: &fabric {...}`` then ``topology: {<<: *fabric, ...}``); they are
not scenario keys and are dropped before validation (as docker-compose's extension fields)."""


def _read_yaml(path: Path) -> dict[str, Any]:
    data = parse_yaml(read_text_file(path), str(path))
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a scenario must be a YAML mapping of keys to values")
    return {
        k: v for k, v in data.items() if not (isinstance(k, str) and k.startswith(EXTENSION_PREFIX))
    }


def _default_name(stem: str) -> str:
    """A file's stem made a valid scenario name (other characters become ``_``)."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", stem).lstrip(".-")[:100]
    return name or "custom"


def load_scenario(source: str | Path | dict[str, Any] | Scenario) -> Scenario:
    """Load and validate a scenario.

    Parameters
    ----------
    source
        A built-in name (see ``fabricsim scenarios``), a path to a YAML file, a path to an
        htsim connection matrix (``.cm``: the ``htsim-uec`` preset with that trace), a dict
        with the scenario's keys, or a :class:`Scenario` (returned as is).

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
    if path.suffix.lower() == ".cm":
        return _htsim_matrix(path)
    if path.suffix.lower() in (".yaml", ".yml") or path.exists():
        data = _read_yaml(path)
        keys = _leaf_keys(data)
        data.setdefault("name", _default_name(path.stem))
        return validate(data, base_dir=path.parent, user_keys=keys)
    names = ", ".join(builtin_names())
    best = closest(text, builtin_names())
    hint = f"did you mean {best}? " if best else ""
    raise ConfigError(f"unknown scenario '{text}': not a file; {hint}built-in names are {names}")


def _htsim_matrix(path: Path) -> Scenario:
    """An htsim connection matrix as a scenario: the ``htsim-uec`` preset and that trace."""
    read_text_file(path, "connection matrix")  # one clear line if it is missing or unreadable
    data: dict[str, Any] = {
        "name": _default_name(path.stem),
        "preset": "htsim-uec",
        "workload": {"kind": "trace", "path": str(path.resolve())},
    }
    return validate(data, user_keys=_leaf_keys(data))


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
    sc = validate_as(Scenario, data, user_keys)
    if user_keys:
        sc._user_keys = recorded_keys(sc)  # a rerun config.yaml: its defaults were filled in
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


def parse_set_options(items: list[str]) -> dict[str, Any]:
    """Parse ``KEY=VALUE`` strings; values are YAML scalars (``25``, ``true``, ``[a, b]``)."""
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"--set {item!r}: expected KEY=VALUE, e.g. workload.qps=25")
        key, raw = item.split("=", 1)
        key = key.strip()
        if not key or "" in key.split("."):
            raise ConfigError(
                f"--set {item!r}: empty key or key part (write e.g. topology.spines=8)"
            )
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
