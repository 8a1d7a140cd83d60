"""The engine registry: what each engine can run, declared in one place, and the one check.

Each engine declares its :class:`EngineCapabilities` here (the boundary between the engines and
the experiments that run them).  :func:`check_supported` compares a scenario with the chosen
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

from dataclasses import dataclass, fields
from typing import Any, get_args

import numpy as np

from fabricsim.config.applicability import check_keys_apply
from fabricsim.config.models import NicConfig, RecordsConfig, Scenario, SwitchConfig
from fabricsim.config.workloads import WorkloadConfig
from fabricsim.errors import ConfigError, EngineRefusal
from fabricsim.lb.base import registered_policies
from fabricsim.workloads.base import FlowTable


@dataclass(frozen=True)
class EngineCapabilities:
    """What one engine can run (every field is declared; an empty tuple means "none")."""

    name: str
    policies: tuple[str, ...]
    """``lb.policy`` values it runs."""
    spraying_types: tuple[str, ...]
    """``nic.packet_spraying_type`` values it runs."""
    switch_methods: tuple[str, ...]
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


def _literal(model: Any, field: str) -> tuple[str, ...]:
    return tuple(get_args(model.model_fields[field].annotation))


_RECORDS = tuple(
    name for name, f in RecordsConfig.model_fields.items() if f.annotation is bool
)  # timelines, uet_monitor, uet_transport_stats, switch_lb_stats, port_stats
_PACKET_RECORDS = ("uet_monitor", "uet_transport_stats", "switch_lb_stats", "port_stats")
_SPRAYING = _literal(NicConfig, "packet_spraying_type")
_SWITCH_METHODS = _literal(SwitchConfig, "load_balancing_method")
_WORKLOADS = tuple(m.model_fields["kind"].default for m in get_args(get_args(WorkloadConfig)[0]))


def _policies(flow_engine: bool) -> tuple[str, ...]:
    """Registered ``lb.policy`` names; without the flow engine, not the flow-engine-only ones."""
    return tuple(
        name
        for name, cls in registered_policies().items()
        if flow_engine or not cls.flow_engine_only
    )


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
)

FLOW = EngineCapabilities(
    name="flow",
    policies=_policies(flow_engine=True),
    spraying_types=tuple(s for s in _SPRAYING if s != "reps"),  # REPS reacts to per-packet ACKs
    switch_methods=("ecmp",),  # the others act per packet on queue state
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
    policies=_policies(flow_engine=False),
    spraying_types=_SPRAYING,
    switch_methods=_SWITCH_METHODS,
    records=_RECORDS,
    link_failures=True,
    flow_models=(),
    workloads=_WORKLOADS,
    unread_keys=("engine.flow_model",),
    unread_key_refusal=(
        "{key}={value} is a flow-engine model; use --engine flow, or remove it for the packet engine"
    ),
    packet_budget=True,
)

ENGINES: dict[str, EngineCapabilities] = {caps.name: caps for caps in (FLOW, PACKET)}
"""The registered engines by name (``--engine``)."""

# Why one engine cannot run a value another can (the middle of the refusal line).
_WHY = {
    ("lb.policy", "ideal_spray"): "is the flow engine's ideal split",
    (
        "nic.packet_spraying_type",
        "reps",
    ): "needs the packet engine (REPS reacts to per-packet ACK feedback)",
    ("switch.load_balancing_method", None): "acts per packet on queue state",
}


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
    why = _WHY.get((key, value)) or _WHY.get((key, None))
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
