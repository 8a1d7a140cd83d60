"""The engine registry: what each engine can run, declared in one place, and the one check.

Each engine declares its :class:`EngineCapabilities` here (the boundary between the engines and
the experiments that run them).  The path policies, spraying types and switch methods it runs
are read from the ``lb`` registries when used (:class:`Registered`): each method declares its
engines, and the reason an engine it does not name refuses it, in its own module.  :func:`check_supported` compares a scenario with the chosen
engine's declaration and turns the first mismatch into the one-line :class:`EngineRefusal`,
naming the engine that can run it.  Nothing else refuses a scenario for its engine before the
run is built; an engine may still assert the same facts defensively.

Examples
--------
>>> from fabricsim.config.loader import load_scenario
>>> sc = load_scenario("ecmp-collision").with_overrides({"nic.packet_spraying_type": "reps"})
>>> try:
...     check_supported(sc, "flow")
... except Exception as exc:
...     print(exc)
nic.packet_spraying_type=reps needs the packet engine (REPS reacts to per-packet ACK feedback); use --engine packet
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields
from typing import get_args, overload

import numpy as np

from fabricsim.config.applicability import check_keys_apply
from fabricsim.config.models import RecordsConfig, Scenario
from fabricsim.config.workloads import WorkloadConfig
from fabricsim.errors import ConfigError, EngineRefusal
from fabricsim.lb.base import registered_policies
from fabricsim.lb.registry import registered_methods
from fabricsim.workloads.base import FlowTable


class Registered(Sequence[str]):
    """The registered names of ``point`` that ``engine`` runs, read from the registry each time.

    A declaration field that follows the registries: a method registered later (a plug-in, a
    test) is declared at once.  ``lb.policy``: the registered policies, less the
    ``flow_engine_only`` ones on any engine but ``flow``; the spraying types and switch
    methods: those whose declared engines (:func:`fabricsim.lb.registered_methods`) include
    ``engine``.

    Examples
    --------
    >>> list(Registered("switch.load_balancing_method", "flow"))
    ['ecmp']
    >>> "reps" in Registered("nic.packet_spraying_type", "flow")
    False
    """

    def __init__(self, point: str, engine: str) -> None:
        self.point, self.engine = point, engine

    def names(self) -> tuple[str, ...]:
        if self.point == "lb.policy":
            return tuple(
                name
                for name, cls in registered_policies().items()
                if self.engine == "flow" or not cls.flow_engine_only
            )
        return tuple(m.name for m in registered_methods(self.point) if self.engine in m.engines)

    @overload
    def __getitem__(self, i: int) -> str: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[str, ...]: ...

    def __getitem__(self, i: int | slice) -> str | tuple[str, ...]:
        return self.names()[i]

    def __len__(self) -> int:
        return len(self.names())

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __contains__(self, value: object) -> bool:
        return value in self.names()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Registered | tuple | list):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.point, self.engine))

    def __repr__(self) -> str:
        return repr(self.names())


@dataclass(frozen=True)
class EngineCapabilities:
    """What one engine can run (every field is declared; an empty tuple means "none")."""

    name: str
    policies: Sequence[str]
    """``lb.policy`` values it runs."""
    spraying_types: Sequence[str]
    """``nic.packet_spraying_type`` values it runs."""
    switch_methods: Sequence[str]
    """``switch.load_balancing_method`` values it runs."""
    records: tuple[str, ...]
    """``records.*`` switches it can honour."""
    link_failures: bool
    """Whether it models links failing mid-run (``topology.link_failures``)."""
    flow_models: tuple[str, ...]
    """``engine.flow_model`` values it runs (empty: it does not read the key)."""
    workloads: tuple[str, ...]
    """``workload.kind`` values it runs."""
    unread_keys: tuple[str, ...]
    """User-set keys of mechanisms it does not have: set to a non-default value, refused."""
    unread_key_refusal: str
    """The refusal of an unread key, formatted with ``key`` and ``value``."""
    packet_budget: bool
    """Whether ``engine.max_packets`` bounds its runs (checked once the flows are known)."""


_RECORDS = tuple(
    name for name, f in RecordsConfig.model_fields.items() if f.annotation is bool
)  # timelines, uet_monitor, uet_transport_stats, switch_lb_stats, port_stats
_PACKET_RECORDS = ("uet_monitor", "uet_transport_stats", "switch_lb_stats", "port_stats")
_WORKLOADS = tuple(m.model_fields["kind"].default for m in get_args(get_args(WorkloadConfig)[0]))


# Keys that select or shape a packet-level mechanism the flow engine's fluid model does not have
# (congestion control, trimming, ECN marking, the priority queue).  Set on a flow run, the
# user is asking a question the flow engine cannot answer, so the run is refused.  The packet
# engine's tuning keys (base RTT, RTO, retries, windows, buffers, PDC groups, REPS cache sizes,
# the timeline sampling interval) are accepted on both engines so that one scenario file
# serves both; the flow engine does not read them (docs/design.md, "Keys that do nothing").
PACKET_ONLY_KEYS = (
    "nic.cc",
    "switch.trimming",
    "switch.ecn_min_bytes",
    "switch.ecn_max_bytes",
    "switch.header_buffer_bytes",
    "switch.ecn_max_prob",
    "nic.transport",
    "switch.pfc",
)

FLOW = EngineCapabilities(
    name="flow",
    policies=Registered("lb.policy", "flow"),
    spraying_types=Registered("nic.packet_spraying_type", "flow"),  # those with a fluid form
    switch_methods=Registered("switch.load_balancing_method", "flow"),  # ecmp: the hash
    records=tuple(r for r in _RECORDS if r not in _PACKET_RECORDS),
    link_failures=False,
    flow_models=("max_min", "open_loop"),
    workloads=_WORKLOADS,
    unread_keys=PACKET_ONLY_KEYS,
    unread_key_refusal=(
        "{key}={value} is read only by the packet engine (the flow engine has no such "
        "mechanism); remove it or use --engine packet"
    ),
    packet_budget=False,
)
PACKET = EngineCapabilities(
    name="packet",
    policies=Registered("lb.policy", "packet"),
    spraying_types=Registered("nic.packet_spraying_type", "packet"),
    switch_methods=Registered("switch.load_balancing_method", "packet"),
    records=_RECORDS,
    link_failures=True,
    flow_models=(),
    workloads=_WORKLOADS,
    unread_keys=("engine.flow_model", "engine.flow_solver"),
    unread_key_refusal=(
        "{key}={value} is a flow-engine setting; use --engine flow, or remove it for the packet "
        "engine"
    ),
    packet_budget=True,
)

ENGINES: dict[str, EngineCapabilities] = {caps.name: caps for caps in (FLOW, PACKET)}
"""The registered engines by name (``--engine``)."""


def _why(key: str, value: str) -> str | None:
    """Why an engine cannot run ``key=value`` (the middle of the refusal line), as the method
    declares it (:attr:`fabricsim.lb.Method.refusal`); None for other keys."""
    found = (m for m in registered_methods() if m.point == key and m.name == value)
    return next((m.refusal for m in found), None)


def capabilities(engine: str) -> EngineCapabilities:
    """The declaration of ``engine``; :class:`ConfigError` naming the registered ones."""
    if engine not in ENGINES:
        raise ConfigError(f"--engine: must be one of {', '.join(ENGINES)} (got {engine!r})")
    return ENGINES[engine]


def _alternative(wanted: str, value: object) -> str:
    """The first registered engine whose declaration lists ``value`` under ``wanted``."""
    for caps in ENGINES.values():
        if value in getattr(caps, wanted):
            return caps.name
    return "another"


def _refuse_value(key: str, value: str, caps: EngineCapabilities, wanted: str) -> EngineRefusal:
    why = _why(key, value)
    alt = _alternative(wanted, value)
    if why is None:
        why = f"is not run by the {caps.name} engine"
    return EngineRefusal(f"{key}={value} {why}; use --engine {alt}")


def check_supported(sc: Scenario, engine: str) -> None:
    """Raise :class:`EngineRefusal` (one line) if ``engine``'s declaration cannot run ``sc``.

    Checked before anything is built: the engine name, the user-set keys the run would not read
    (:func:`fabricsim.config.applicability.check_keys_apply`), then records, mid-run link
    failures, the switch method, the path policy, the spraying type, the flow model and the
    workload against :data:`ENGINES` ``[engine]``.
    """
    caps = capabilities(engine)
    check_keys_apply(
        sc, sc.varied_keys, unread_keys=caps.unread_keys, refusal=caps.unread_key_refusal
    )
    for name in _RECORDS:
        if getattr(sc.records, name) and name not in caps.records:
            alt = _alternative("records", name)
            raise EngineRefusal(
                f"records.{name} is packet-level detail the {caps.name} engine does not "
                f"model; use --engine {alt}"
            )
    if sc.topology.link_failures and not caps.link_failures:
        alt = next((c.name for c in ENGINES.values() if c.link_failures), "another")
        raise EngineRefusal(
            f"topology.link_failures (links failing mid-run) needs the {alt} engine; "
            f"use --engine {alt}"
        )
    method = sc.switch.load_balancing_method
    if method not in caps.switch_methods:
        raise _refuse_value("switch.load_balancing_method", method, caps, "switch_methods")
    if sc.lb.policy not in caps.policies:
        raise _refuse_value("lb.policy", sc.lb.policy, caps, "policies")
    spray = sc.nic.packet_spraying_type
    if spray not in caps.spraying_types:
        raise _refuse_value("nic.packet_spraying_type", spray, caps, "spraying_types")
    if caps.flow_models and sc.engine.flow_model not in caps.flow_models:
        raise _refuse_value("engine.flow_model", sc.engine.flow_model, caps, "flow_models")
    if sc.workload.kind not in caps.workloads:
        raise _refuse_value("workload.kind", sc.workload.kind, caps, "workloads")


def estimated_packets(sc: Scenario, flows: FlowTable) -> int:
    """Data packets the packet engine would send (no retransmissions)."""
    return int(np.sum(-(-flows.size_bytes // sc.nic.rdma_data_mss)))


def check_flows_supported(sc: Scenario, engine: str, flows: FlowTable) -> None:
    """Refuse (one line) a flow table over ``engine.max_packets`` on an engine it bounds."""
    if capabilities(engine).packet_budget and estimated_packets(sc, flows) > sc.engine.max_packets:
        raise EngineRefusal(
            f"scenario '{sc.name}' needs about {estimated_packets(sc, flows):.2g} data packets, over "
            f"engine.max_packets={sc.engine.max_packets:.2g}; use --engine flow or a smaller workload"
        )


def declared_fields() -> tuple[str, ...]:
    """The names of :class:`EngineCapabilities`' fields (every engine declares each one)."""
    return tuple(f.name for f in fields(EngineCapabilities))
