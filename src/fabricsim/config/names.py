"""The name table: every name a user may type at an extension point, with its one-line help.

An *extension point* is a config key whose value names a registered strategy:

============================== ====================================================
point                          registered by
============================== ====================================================
``lb.policy``                  :func:`fabricsim.lb.base.register_policy`
``nic.packet_spraying_type``   :func:`fabricsim.lb.spraying.register_spraying`
``nic.cc``                     :func:`fabricsim.cc.base.register_cc`
``switch.hash_method``         :func:`fabricsim.routing.hashing.register_hash`
``switch.load_balancing_method`` :func:`fabricsim.lb.switch.register_switch_method`
``nic.transport``              :func:`fabricsim.transport.base.register_transport`
============================== ====================================================

The strategies sit above config in the layer order, so config never imports them: each
registration writes its name here (:func:`register_name`), and the config fields are typed
``Annotated[str, RegisteredName(point)]``, which validates against this table when a scenario
is validated.  Importing any ``fabricsim`` module first runs ``fabricsim/__init__.py``, which
imports the runner and with it every built-in strategy module, so the table is full before any
scenario is validated.  An unknown name is one line naming the key and the registered names.

Examples
--------
>>> "nscc" in registered_names("nic.cc")
True
>>> resolve_name("nic.packet_spraying_type", "RecycledEntropyPacketSpraying")
'reps'
>>> try:
...     resolve_name("nic.cc", "cubic")
... except ValueError as exc:
...     print(exc)
must be one of constant, dcqcn, nscc (got 'cubic')
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, core_schema

from fabricsim.config.suggest import closest

POINTS: dict[str, bool] = {
    "lb.policy": False,
    "nic.packet_spraying_type": True,
    "nic.cc": False,
    "switch.hash_method": False,
    "switch.load_balancing_method": False,
    "nic.transport": False,
}
"""The extension points, and whether a value is matched ignoring case, spaces and ``_``
(``nic.packet_spraying_type``: the UET documentation's ``DefaultPacketSpraying`` ...)."""


@dataclass(frozen=True)
class NameEntry:
    """One registered name of an extension point.

    ``aliases`` are other spellings accepted for it; ``knobs`` the dotted config keys only it
    reads; ``traits`` flags that config itself needs (``one_path_per_flow`` for a path policy
    that gives every connection one path, so NIC spraying defaults to ``none`` under it).
    """

    point: str
    name: str
    help: str
    aliases: tuple[str, ...] = ()
    knobs: tuple[str, ...] = ()
    traits: frozenset[str] = frozenset()


_TABLE: dict[str, dict[str, NameEntry]] = {point: {} for point in POINTS}


def _point(point: str) -> dict[str, NameEntry]:
    if point not in _TABLE:
        raise ValueError(f"unknown extension point {point!r}; the points are {', '.join(POINTS)}")
    return _TABLE[point]


def _fold(text: str) -> str:
    return text.replace(" ", "").replace("_", "").lower()


def register_name(
    point: str,
    name: str,
    help: str,
    *,
    aliases: Iterable[str] = (),
    knobs: Iterable[str] = (),
    traits: Iterable[str] = (),
) -> NameEntry:
    """Make ``name`` a valid value of ``point`` (registering it again replaces its entry).

    Examples
    --------
    >>> e = register_name("nic.cc", "demo_cc", "a demonstration")
    >>> "demo_cc" in registered_names("nic.cc")
    True
    >>> unregister_name("nic.cc", "demo_cc"); "demo_cc" in registered_names("nic.cc")
    False
    """
    table = _point(point)
    line = " ".join(str(help).split())
    if not name or not line:
        raise ValueError(f"{point}: a registered name needs a name and a one-line help")
    entry = NameEntry(point, name, line, tuple(aliases), tuple(knobs), frozenset(traits))
    table[name] = entry
    return entry


def unregister_name(point: str, name: str) -> None:
    """Remove ``name`` from ``point`` (nothing happens if it is not registered)."""
    _point(point).pop(name, None)


def registered_names(point: str) -> tuple[str, ...]:
    """The names registered at ``point``, in registration order."""
    return tuple(_point(point))


def name_entries(point: str) -> tuple[NameEntry, ...]:
    """The entries registered at ``point`` (name, help, aliases, knobs, traits), in order."""
    return tuple(_point(point).values())


def has_trait(point: str, name: str, trait: str) -> bool:
    """Whether the registered ``name`` of ``point`` declares ``trait``."""
    entry = _point(point).get(name)
    return entry is not None and trait in entry.traits


def resolve_name(point: str, value: Any) -> str:
    """The registered name ``value`` stands for; ValueError (one line) listing them if none."""
    table = _point(point)
    if isinstance(value, str):
        if value in table:
            return value
        wanted = _fold(value) if POINTS[point] else None
        for entry in table.values():
            if value in entry.aliases:
                return entry.name
            if wanted is not None and wanted in {_fold(a) for a in (entry.name, *entry.aliases)}:
                return entry.name
    best = closest(value, [n for e in table.values() for n in (e.name, *e.aliases)])
    hint = f"; did you mean {resolve_name(point, best)}?" if best is not None else ""
    raise ValueError(f"must be one of {', '.join(table)} (got {value!r}){hint}")


class RegisteredName:
    """pydantic metadata: a ``str`` field whose value must be registered at ``point``.

    Used as ``Annotated[str, RegisteredName("nic.cc")]``.  The check reads the table when a
    value is validated; the JSON schema lists the names registered when it is generated.
    """

    def __init__(self, point: str) -> None:
        _point(point)
        self.point = point

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        point = self.point
        return core_schema.no_info_before_validator_function(
            lambda value: resolve_name(point, value), handler(source)
        )

    def __get_pydantic_json_schema__(
        self, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        out = handler(schema)
        out["enum"] = list(registered_names(self.point))
        return out
