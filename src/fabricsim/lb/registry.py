"""One registry per load-balancing extension point, and the listing of every method.

A :class:`Registry` holds the strategy classes of one extension point (``lb.policy``,
``nic.packet_spraying_type``, ``switch.load_balancing_method``) by name.  Registering a class
also writes its name, one-line help, aliases, knobs and traits into config's name table
(:func:`fabricsim.config.names.register_name`), which is what the scenario validates against.
:func:`registered_methods` lists every registered method as a :class:`Method`: the key and
name a user types, its help, the engines that run it and, for the others, why not.

Examples
--------
>>> [m.name for m in registered_methods("switch.load_balancing_method")]
['ecmp', 'adaptive', 'flowlet', 'spray']
>>> reps = next(m for m in registered_methods("nic.packet_spraying_type") if m.name == "reps")
>>> reps.engines, reps.refusal
(('packet',), 'needs the packet engine (REPS reacts to per-packet ACK feedback)')
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from fabricsim.config.names import register_name, unregister_name
from fabricsim.errors import ConfigError

ENGINES = ("flow", "packet", "decomposed")
"""The engine names a method may declare (``--engine``)."""


@dataclass(frozen=True)
class Method:
    """One registered load-balancing method as a user and the engines see it.

    ``point`` is the config key (``switch.load_balancing_method``), ``name`` its value,
    ``help`` one line, ``engines`` the engines that run it, ``refusal`` the phrase an engine
    not in ``engines`` refuses it with (``<point>=<name> <refusal>; use --engine ...``; None:
    the generic "is not run by the ... engine"), ``knobs`` the config keys only it reads,
    ``label`` and ``compared`` what ``fabricsim compare`` shows and runs (class attributes of
    the same names; see :func:`describe_extras`).
    """

    point: str
    name: str
    help: str
    engines: tuple[str, ...]
    refusal: str | None = None
    knobs: tuple[str, ...] = ()
    label: str = ""
    """A few words for tables (``fabricsim compare``'s ``what``); empty: :attr:`help`."""
    compared: bool = True
    """Whether ``fabricsim compare`` offers it (False for a baseline's duplicate or a study's)."""

    @property
    def overrides(self) -> dict[str, str]:
        """The dotted override that selects it (``{point: name}``)."""
        return {self.point: self.name}


T = TypeVar("T")


def describe_extras(cls: Any) -> dict[str, Any]:
    """The class's ``label`` and ``compared`` attributes, for :class:`Method`."""
    return {
        "label": str(getattr(cls, "label", "")),
        "compared": bool(getattr(cls, "compared", True)),
    }


def help_of(cls: Any) -> str:
    """A class's own ``help`` attribute, else the first line of its own docstring."""
    own = vars(cls).get("help")
    if own:
        return str(own)
    doc = (vars(cls).get("__doc__") or "").strip()
    return doc.splitlines()[0] if doc else ""


class Registry(Generic[T]):
    """The strategy classes of one extension point, by their ``name`` attribute.

    ``describe(cls)`` gives a class's :class:`Method`; ``traits(cls)`` the traits written to
    the name table.  Every registry is listed by :func:`registered_methods`.
    """

    def __init__(
        self,
        point: str,
        describe: Callable[[T], Method],
        traits: Callable[[T], Iterable[str]] = lambda cls: (),
    ) -> None:
        self.point, self.describe, self.traits = point, describe, traits
        self._items: dict[str, T] = {}
        _REGISTRIES[point] = self

    def register(self, cls: T) -> T:
        """Add ``cls`` under ``cls.name`` (a class decorator); its name becomes valid config."""
        name = str(getattr(cls, "name", ""))
        method = self.describe(cls)
        unknown = set(method.engines) - set(ENGINES)
        if unknown:
            raise ValueError(f"{self.point}={name}: unknown engines {sorted(unknown)}")
        register_name(
            self.point,
            name,
            method.help,
            aliases=getattr(cls, "aliases", ()),
            knobs=method.knobs,
            traits=self.traits(cls),
        )
        self._items[name] = cls
        return cls

    def unregister(self, name: str) -> None:
        """Remove ``name`` (and its config name); nothing happens if it is not registered."""
        self._items.pop(name, None)
        unregister_name(self.point, name)

    def items(self) -> dict[str, T]:
        """The registered classes by name, in registration order (a copy)."""
        return dict(self._items)

    def get(self, name: str) -> T:
        """The class registered as ``name``; :class:`ConfigError` listing the names if none."""
        found = self._items.get(name)
        if found is None:
            names = ", ".join(self._items)
            raise ConfigError(f"{self.point}: '{name}' is not available; allowed: {names}")
        return found

    def methods(self) -> tuple[Method, ...]:
        return tuple(self.describe(cls) for cls in self._items.values())


_REGISTRIES: dict[str, Registry[Any]] = {}


def registered_methods(point: str | None = None) -> tuple[Method, ...]:
    """Every registered load-balancing method (of ``point`` only, if given), in order.

    The points are ``lb.policy``, ``nic.packet_spraying_type`` and
    ``switch.load_balancing_method`` (import :mod:`fabricsim.lb` to register the built-ins).
    """
    registries = _REGISTRIES.values() if point is None else [_REGISTRIES[point]]
    return tuple(m for r in registries for m in r.methods())
