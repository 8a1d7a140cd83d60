"""The transport registry: ``nic.transport`` names a registered :class:`Transport`.

A transport is what a NIC does with the packets of one connection: the receive rule (in order
or out of order, what a gap is answered with), the sender's retransmission, what it counts, the
defaults and refusals it brings to a scenario, and what it adds to the run's records.  Each one
is one module of this package (``uet``, ``roce``, ``roce_sr``) that subclasses the NIC element
(:class:`fabricsim.nic.nic.Nic`, :class:`fabricsim.nic.pdc.Pdc`) for its rules and registers a
:class:`Transport` describing them, as congestion control (:func:`fabricsim.cc.base.
register_cc`) and load balancing (:mod:`fabricsim.lb.registry`) register theirs.

Registering writes the name, its help, its knobs (the ``nic.*`` keys only it reads) and its
traits into config's name table (:func:`fabricsim.config.names.register_name`): the scenario
validates ``nic.transport`` against the table and applies the traits' defaults and refusals
(:mod:`fabricsim.config.roce`), so config never imports a transport and no code outside this
package tests a transport's name.

Examples
--------
>>> import fabricsim.transport
>>> registered_transports()
('uet', 'roce', 'roce_sr')
>>> t = transport_for("roce_sr")
>>> t.receive_rule, t.counters
('out of order, SACK and a NAK per out-of-order arrival', ('cnps_sent', 'cnps_received', 'naks_received'))
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from fabricsim.config.names import register_name, unregister_name
from fabricsim.config.roce import PFC_BY_DEFAULT, ROCE_FABRIC, SENDS_CNPS
from fabricsim.errors import ConfigError
from fabricsim.nic.nic import Nic
from fabricsim.nic.pdc import Pdc

if TYPE_CHECKING:
    from fabricsim.config.models import NicConfig
    from fabricsim.nic.pdc import NicEnv


class Transport:
    """One transport: the NIC and PDC classes it builds and what it declares.

    Subclasses set the class attributes and register with :func:`register_transport`.
    """

    name: ClassVar[str] = ""
    help: ClassVar[str] = ""
    label: str = ""
    """A few words for legends and tables (``RoCE``); empty: the name."""
    receive_rule: ClassVar[str] = ""
    """One line: what the receiver does with an out-of-order packet."""
    nic_class: ClassVar[type[Nic]] = Nic
    pdc_class: ClassVar[type[Pdc]] = Pdc
    knobs: ClassVar[tuple[str, ...]] = ()
    """The config keys only this transport (and others listing them) reads."""
    counters: ClassVar[tuple[str, ...]] = ()
    """NIC counters it adds to ``uet_transport_stats`` (attributes of its NIC), in order."""
    summary_counters: ClassVar[tuple[str, ...]] = ()
    """Those of its counters the run's summary shows (``transport`` section)."""
    pfc_by_default: ClassVar[bool] = False
    """An unset ``switch.pfc`` is true (trait :data:`~fabricsim.config.roce.PFC_BY_DEFAULT`)."""
    roce_fabric: ClassVar[bool] = False
    """RoCE's fabric defaults: DCQCN, its ECN thresholds, no trimming (trait ``roce_fabric``)."""
    sends_cnps: ClassVar[bool] = False
    """Its receiver is DCQCN's notification point (trait ``sends_cnps``: ``nic.cc: dcqcn``)."""
    rto_floor_us: ClassVar[float] = 0.0
    """The engine's automatic RTO is at least this long, us (0: no floor); see
    :meth:`rto_floor_us_for`."""
    window_cap_bdp: ClassVar[float] = 0.0
    """A cap on each PDC's bytes in flight, in BDPs of its path (0: the controller's window)."""

    def __init__(self) -> None:
        self.label = type(self).label or self.name

    @classmethod
    def traits(cls) -> tuple[str, ...]:
        """The traits config reads (:mod:`fabricsim.config.roce`)."""
        flags = {
            PFC_BY_DEFAULT: cls.pfc_by_default,
            ROCE_FABRIC: cls.roce_fabric,
            SENDS_CNPS: cls.sends_cnps,
        }
        return tuple(t for t, on in flags.items() if on)

    def classes(self, cfg: NicConfig) -> tuple[type[Nic], type[Pdc]]:
        """The NIC and PDC classes a run with the NIC keys ``cfg`` builds."""
        return self.nic_class, self.pdc_class

    def summary_counters_for(self, cfg: NicConfig) -> tuple[str, ...]:
        """The counters the run's summary shows under the NIC keys ``cfg``
        (:attr:`summary_counters`; UET's depend on ``nic.delivery_mode``)."""
        return self.summary_counters

    def unfinished_reason(self, cfg: NicConfig) -> str | None:
        """Why a message may stay unfinished under ``cfg`` when nothing else stopped it (a
        transport that does not retransmit), or None."""
        return None

    def rto_floor_us_for(self, pfc: bool) -> float:
        """The floor of the automatic RTO with PFC on or off, us (:attr:`rto_floor_us`)."""
        return self.rto_floor_us

    def configure(self, env: NicEnv, cfg: NicConfig) -> None:
        """Set the transport's shared settings on the simulation's :class:`NicEnv`."""
        env.counters = self.counters
        env.window_cap_bdp = self.window_cap_bdp

    def describe(self) -> dict[str, Any]:
        """What it declares, for documentation and tests."""
        return {
            "name": self.name,
            "help": self.help,
            "receive_rule": self.receive_rule,
            "knobs": self.knobs,
            "counters": self.counters,
            "traits": self.traits(),
        }


_TRANSPORTS: dict[str, Transport] = {}


def register_transport(cls: type[Transport]) -> type[Transport]:
    """Class decorator: register ``cls`` as ``nic.transport: <cls.name>``."""
    if not cls.name or not cls.help:
        raise ValueError("a transport needs a name and a one-line help")
    unknown = set(cls.summary_counters) - set(cls.counters)
    if unknown:
        raise ValueError(f"nic.transport={cls.name}: summary counters {sorted(unknown)} undeclared")
    register_name("nic.transport", cls.name, cls.help, knobs=cls.knobs, traits=cls.traits())
    _TRANSPORTS[cls.name] = cls()
    return cls


def unregister_transport(name: str) -> None:
    """Remove the transport ``name`` (and its config name)."""
    _TRANSPORTS.pop(name, None)
    unregister_name("nic.transport", name)


def registered_transports() -> tuple[str, ...]:
    """The registered transports' names, in registration order."""
    return tuple(_TRANSPORTS)


def transport_for(name: str) -> Transport:
    """The registered transport ``name``."""
    if name not in _TRANSPORTS:
        raise ConfigError(
            f"nic.transport: '{name}' is not available; allowed: {', '.join(_TRANSPORTS)}"
        )
    return _TRANSPORTS[name]
