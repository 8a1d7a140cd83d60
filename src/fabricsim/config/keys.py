"""The key table, generated: every scenario key with its type, default, allowed values, unit and
one-line help, read from the config models and the name registries.

``fabricsim keys`` prints it, ``docs/keys.md`` is :func:`keys_markdown` (a test fails when the
file is stale), and :func:`close_keys` gives the did-you-mean of an unknown key.  Nothing here
is written by hand: a new field or a newly registered strategy appears by itself.

Examples
--------
>>> info = {k.key: k for k in key_infos("topology.spines")}["topology.spines"]
>>> (info.type, info.default, info.allowed)
('int', '4', '1 … 4096')
>>> [k.key for k in key_infos("nic.cc")]
['nic.cc']
>>> close_keys("topology.spine")
['topology.spines']
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, get_args, get_origin

import annotated_types as at
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from fabricsim.config.layers import KIND_KEYS
from fabricsim.config.models import Scenario
from fabricsim.config.names import RegisteredName, name_entries
from fabricsim.config.suggest import closest
from fabricsim.config.workloads import WorkloadConfig
from fabricsim.units import NOT_QUANTITIES, quantity_unit, shown_suffixes

__all__ = [
    "KeyInfo",
    "all_keys",
    "close_keys",
    "key_infos",
    "known_prefixes",
    "keys_markdown",
    "keys_text",
]

_UNITS = (  # name suffix -> unit (longest first)
    ("_gbps", "Gbps"),
    ("_mbps", "Mb/s"),
    ("_us", "µs"),
    ("_ms", "ms"),
    ("_s", "s"),
    ("_bytes", "bytes"),
    ("_bdp", "× BDP"),
    ("_tokens", "tokens"),
    ("_gb", "GB"),
    ("_pct", "%"),
    ("qps", "requests/s"),
)


@dataclass(frozen=True)
class KeyInfo:
    """One dotted scenario key.

    Attributes
    ----------
    key : str
        Dotted key, as in YAML and ``--set`` (``nic.nscc.target_delay_us``).
    type : str
        ``int``, ``float``, ``bool``, ``str``, ``name`` (a registered strategy), ``one of``,
        ``list of ...``, ``map ...``; ``| null`` where null is allowed.
    default : str
        The default as YAML would write it (``required`` when there is none).
    allowed : str
        Range (``1 … 4096``, ``> 0 … 1000``) or the allowed values; '' when any value of the type.
    unit : str
        From the key's name (``_gbps`` Gbps, ``_us`` µs, ``_s`` s, ``_bytes`` bytes ...).
    help : str
        The model's one-line description.
    applies : str
        When the key is read, e.g. ``workload.kind=kv_cache`` ('' always).
    aliases : tuple of str
        Other accepted spellings (the seed documents' CamelCase names).
    names : tuple of (name, help)
        For a key naming a registered strategy: every registered name and its help.
    suffixes : tuple of str
        The unit suffixes a value may carry (``4MB``, ``4MiB``, ``100Gbps``, ``1us``): a size,
        rate or time key takes those of its kind, read in the key's own unit.
    """

    key: str
    type: str
    default: str
    allowed: str
    unit: str
    help: str
    applies: str = ""
    aliases: tuple[str, ...] = ()
    names: tuple[tuple[str, str], ...] = field(default=())
    suffixes: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """A JSON-able dict (``names`` as a list of ``{name, help}``)."""
        out = {k: getattr(self, k) for k in ("key", "type", "default", "allowed", "unit", "help")}
        out["applies"] = self.applies
        out["aliases"] = list(self.aliases)
        out["names"] = [{"name": n, "help": h} for n, h in self.names]
        out["suffixes"] = list(self.suffixes)
        return out

    @property
    def unit_column(self) -> str:
        """The unit and the suffixes a value may carry (``bytes; suffixes B, kB, MB ...``)."""
        if not self.suffixes:
            return self.unit
        return f"{self.unit}; suffixes {', '.join(self.suffixes)}"


# -- reading the models ----------------------------------------------------------------------
def _is_none(tp: Any) -> bool:
    return tp is type(None)


def _members(tp: Any) -> tuple[Any, ...]:
    if get_origin(tp) in (typing.Union, types.UnionType):
        return get_args(tp)
    return (tp,)


def _strip(tp: Any) -> tuple[Any, list[Any]]:
    """``Annotated[X, m...]`` -> (X, [m...]); anything else -> (tp, [])."""
    if get_origin(tp) is typing.Annotated:
        base, *meta = get_args(tp)
        return base, list(meta)
    return tp, []


def _bounds(meta: list[Any]) -> str:
    low = high = ""
    for m in meta:
        if isinstance(m, FieldInfo):
            m = _bounds(list(m.metadata))
            if m:
                return m
            continue
        if isinstance(m, at.Ge):
            low = _num(m.ge)
        elif isinstance(m, at.Gt):
            low = f"> {_num(m.gt)}"
        elif isinstance(m, at.Le):
            high = _num(m.le)
        elif isinstance(m, at.Lt):
            high = f"< {_num(m.lt)}"
        elif isinstance(m, at.MinLen) and m.min_length:
            low = f"at least {m.min_length} long"
    if low and high:
        return f"{low} … {high}"
    if low:
        return low if low.startswith(("> ", "at ")) else f">= {low}"
    return f"<= {high}" if high and not high.startswith("<") else high


def _num(value: Any) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e6:
        return str(int(value)) if value >= 1 or value == 0 else f"{value:g}"
    if isinstance(value, int) and abs(value) >= 10**7:
        return f"{value:.3g}" if value != 2**63 - 1 else "2^63-1"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _type_name(tp: Any) -> str:
    tp, _ = _strip(tp)
    origin = get_origin(tp)
    if origin is Literal:
        return "one of"
    if origin in (list, tuple, set):
        inner = get_args(tp)[0] if get_args(tp) else Any
        return f"list of {_type_name(inner)}"
    if origin is dict:
        k, v = get_args(tp)
        return f"map {_type_name(k)} → {_type_name(v)}"
    if origin in (typing.Union, types.UnionType):
        return " | ".join(dict.fromkeys(_member_name(m) for m in get_args(tp)))
    if _is_none(tp):
        return "null"
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return "{" + ", ".join(tp.model_fields) + "}"
    return getattr(tp, "__name__", str(tp))


def _member_name(tp: Any) -> str:
    """A union member's name: a literal as its values (``float | auto``)."""
    base = _strip(tp)[0]
    if get_origin(base) is Literal:
        return " | ".join(str(v) for v in get_args(base))
    return _type_name(tp)


def _allowed(info: FieldInfo, point: str | None) -> str:
    if point is not None:
        return ", ".join(n for n, _ in _names(point))
    parts: list[str] = []
    bounds = _bounds(list(info.metadata))
    plain = [m for m in _members(info.annotation) if not _is_none(m)]
    for m in plain:
        base, meta = _strip(m)
        if get_origin(base) is Literal:
            if len(_members(info.annotation)) == 1:  # in a union the type names the values
                parts.append(", ".join(str(v) for v in get_args(base)))
        elif get_origin(base) in (list, dict):
            inner = get_args(base)[-1] if get_args(base) else None
            inner_base, inner_meta = _strip(inner) if inner is not None else (None, [])
            if get_origin(inner_base) is Literal:
                parts.append(f"each one of: {', '.join(str(v) for v in get_args(inner_base))}")
            else:
                b = _bounds(inner_meta)
                parts.append(f"each {b}" if b else "")
        elif base in (int, float):
            parts.append(bounds or _bounds(meta))
    return " or ".join(p for p in dict.fromkeys(parts) if p)


def _point(info: FieldInfo) -> str | None:
    for m in info.metadata:
        if isinstance(m, RegisteredName):
            return m.point
    return None


def _names(point: str) -> tuple[tuple[str, str], ...]:
    return tuple((e.name, e.help) for e in name_entries(point))


def _default(info: FieldInfo) -> str:
    if info.default is not PydanticUndefined:
        value = info.default
    elif info.default_factory is not None:
        value = info.default_factory()  # type: ignore[call-arg]
    else:
        return "required"
    return _yaml_scalar(value)


def _yaml_scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return _num(value) if value.is_integer() else f"{value:g}"
    if isinstance(value, list | tuple | dict) and not value:
        return "[]" if not isinstance(value, dict) else "{}"
    return str(value)


def _suffixes(name: str, annotation: Any) -> tuple[str, ...]:
    found = quantity_unit(name)
    numeric = any(
        _strip(m)[0] in (int, float) or get_origin(_strip(m)[0]) in (list, dict)
        for m in _members(annotation)
    )
    return tuple(shown_suffixes(found[1])) if found is not None and numeric else ()


def _unit(name: str) -> str:
    if name in NOT_QUANTITIES:
        return ""
    for suffix, unit in _UNITS:
        if name.endswith(suffix):
            return unit
    return ""


def _section(info: FieldInfo) -> type[BaseModel] | None:
    ann = info.annotation
    return ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None


def _walk(fields: dict[str, FieldInfo], prefix: str, applies: dict[str, str]) -> Iterator[KeyInfo]:
    for name, info in fields.items():
        key = f"{prefix}{name}"
        sub = _section(info)
        if sub is not None:
            yield from _walk(sub.model_fields, key + ".", applies)
            continue
        point = _point(info)
        yield KeyInfo(
            key=key,
            type="name" if point else _type_name(info.annotation),
            default=_default(info),
            allowed=_allowed(info, point),
            unit=_unit(name),
            help=" ".join((info.description or "").split()),
            applies=applies.get(key, ""),
            aliases=(info.alias,) if info.alias else (),
            names=_names(point) if point else (),
            suffixes=_suffixes(name, info.annotation),
        )


def _topology_applies() -> dict[str, str]:
    kinds: dict[str, list[str]] = {}
    for section, table in KIND_KEYS.items():
        for kind, keys in table.items():
            for k in keys:
                kinds.setdefault(f"{section}.{k}", []).append(kind)
    return {k: f"topology.kind={'|'.join(v)}" for k, v in kinds.items()}


def _workload_keys() -> Iterator[KeyInfo]:
    members = list(get_args(get_args(WorkloadConfig)[0]))
    kinds = [m.model_fields["kind"].default for m in members]
    yield KeyInfo(
        key="workload.kind",
        type="one of",
        default="required",
        allowed=", ".join(kinds),
        unit="",
        help="what traffic the scenario runs; each kind has its own keys below",
    )
    for member, kind in zip(members, kinds, strict=True):
        for info in _walk(member.model_fields, "workload.", {}):
            if info.key != "workload.kind":
                yield dataclasses.replace(info, applies=f"workload.kind={kind}")


def all_keys() -> list[KeyInfo]:
    """Every key of a scenario, in model order (workload keys once per workload kind)."""
    applies = _topology_applies()
    out: list[KeyInfo] = []
    for name, info in Scenario.model_fields.items():
        if name == "workload":
            out.extend(_workload_keys())
            continue
        sub = _section(info)
        fields = sub.model_fields if sub is not None else {name: info}
        out.extend(_walk(fields, f"{name}." if sub is not None else "", applies))
    return out


def key_infos(prefix: str = "") -> list[KeyInfo]:
    """The keys equal to ``prefix`` or below it (``nic`` -> ``nic.*``; '' -> every key)."""
    given = prefix.strip()
    prefix = given[:-1] if given.endswith(".") else given
    keys = all_keys()
    if not given:
        return keys
    return [k for k in keys if k.key == prefix or k.key.startswith(prefix + ".")]


# -- did you mean ----------------------------------------------------------------------------
def known_prefixes() -> list[str]:
    """Every dotted key and every section above one (``nic``, ``nic.nscc`` ...)."""
    out: dict[str, None] = {}
    for k in all_keys():
        parts = k.key.split(".")
        for i in range(1, len(parts) + 1):
            out[".".join(parts[:i])] = None
    return list(out)


def close_keys(key: str) -> list[str]:
    """The known key or section ``key`` most likely stands for (empty if none is close).

    Its last part is matched among the known keys beside it (``topology.spine`` ->
    ``topology.spines``), else the whole key among every key.
    """
    known = known_prefixes()
    parent, _, last = key.rpartition(".")
    siblings = [k.rpartition(".")[2] for k in known if k.rpartition(".")[0] == parent]
    best = closest(last, siblings)
    if best is not None:
        return [f"{parent}.{best}" if parent else best]
    whole = closest(key, known, cutoff=0.8)
    return [whole] if whole else []


# -- rendering -------------------------------------------------------------------------------
def _numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _head(k: KeyInfo) -> str:
    """``key = default unit   type allowed   (when ...)``."""
    unit = f" {k.unit}" if k.unit and _numeric(k.default) else ""
    default = "''" if k.default == "" else k.default
    allowed = k.allowed
    if k.type == "one of":
        kind = f"one of: {allowed}"
    elif k.type == "name":
        kind = "a registered name:"
    elif k.type.startswith("list of one of"):
        kind = f"list, {allowed}"
    else:
        kind = f"{k.type} {allowed}".strip()
    when = f"   (when {k.applies})" if k.applies else ""
    takes = f"   suffixes {' '.join(k.suffixes)}" if k.suffixes else ""
    return f"{k.key} = {default}{unit}   {kind}{takes}{when}"


def keys_text(infos: list[KeyInfo]) -> str:
    """The listing ``fabricsim keys`` prints: per key a head line, its help, its names."""
    lines: list[str] = []
    for k in infos:
        lines.append(_head(k))
        help_ = k.help + (f" (alias {', '.join(k.aliases)})" if k.aliases else "")
        if help_:
            lines.append(f"    {help_}")
        width = max((len(n) for n, _ in k.names), default=0)
        for name, text in k.names:
            lines.append(f"      {name.ljust(width)}  {text}")
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def keys_markdown(engines: Callable[[str], tuple[str, ...] | None] | None = None) -> str:
    """``docs/keys.md``: one table per section, then the registered names of each strategy key.

    ``engines(key)``: the engines that read ``key`` (None: every engine), for an engines column
    (the command line passes :func:`fabricsim.experiments.engines.key_engines`).
    """
    infos = all_keys()
    out = [
        "# Scenario keys",
        "",
        "Generated from the config models and the strategy registries by "
        "`fabricsim keys --markdown > docs/keys.md` (a test fails when this file is stale).",
        "Every key works in YAML and as `--set KEY=VALUE`; `fabricsim keys PREFIX` shows the",
        "same on a terminal. CamelCase aliases are the names of the UET NIC documentation.",
        "",
        "A size, rate or time may carry a unit suffix (the unit column lists them) and is read",
        "in the key's own unit: `4MB` = 4,000,000 bytes (SI), `4MiB` = 4 x 2^20 bytes (IEC),",
        "`100Gbps` = 10^11 b/s (`400Mbps` in a `*_gbps` key is 0.4), `500ns` in a `*_us` key",
        "is 0.5, `2ms` in a `*_s` key is 0.002. A plain number is in the key's unit.",
        "",
    ]
    if engines:
        out += [
            "The engines column names the engines that read a key (`all`: every engine); set",
            "on another engine, the key is refused in one line naming the engine that reads it.",
            "",
        ]
    sections = list(dict.fromkeys(k.key.split(".")[0] if "." in k.key else "" for k in infos))
    for section in sections:
        rows = [k for k in infos if (k.key.split(".")[0] if "." in k.key else "") == section]
        out += [f"## {section or 'top level'}", ""]
        head = "| key | type | default | allowed | unit | when |" + (
            " engines |" if engines else ""
        )
        out += [head + " help |", "|---" * (8 if engines else 7) + "|"]
        for k in rows:
            help_ = k.help + (f" (alias `{'`, `'.join(k.aliases)}`)" if k.aliases else "")
            default = f"`{k.default}`" if k.default else "`''`"
            cells = [f"`{k.key}`", k.type, default, k.allowed, k.unit_column, k.applies]
            if engines:
                readers = engines(k.key)
                cells.append("all" if readers is None else ", ".join(readers))
            cells.append(help_)
            out.append("| " + " | ".join(_cell(c) for c in cells) + " |")
        out.append("")
    out += ["## Registered names", ""]
    for k in infos:
        if not k.names:
            continue
        out += [f"### `{k.key}`", "", "| name | what |", "|---|---|"]
        out += [f"| `{n}` | {_cell(h)} |" for n, h in k.names]
        out.append("")
    return "\n".join(out)
