"""The engine registry: each engine's builder and what it can run, declared in one place.

Each engine registers one :class:`EngineCapabilities` (:func:`register_engine`): the function
that builds it for a run, the keys it reads beyond the common ones (:attr:`~EngineCapabilities.reads`,
from which :data:`KEY_ENGINES` is tabulated), and the values it runs.  The path policies,
spraying types and switch methods it runs are read from the ``lb`` registries when used
(:class:`Registered`): each method declares its engines, and the reason an engine it does not
name refuses it, in its own module.  :func:`check_supported` compares a scenario with the
chosen engine's declaration and turns the first mismatch into the one-line
:class:`EngineRefusal`, naming the engine that can run it.  Nothing else refuses a scenario for
its engine before the run is built; an engine may still assert the same facts defensively.
A new engine needs its own module and one :func:`register_engine` call: its refusals, the keys
the others refuse for it and ``--engine`` follow from the declaration.

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

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, fields
from typing import Any, Protocol, overload

import numpy as np
from pydantic import BaseModel

from fabricsim.config.applicability import check_keys_apply, explicit, shown, value_of
from fabricsim.config.models import RecordsConfig, Scenario
from fabricsim.config.workloads import WORKLOAD_KINDS
from fabricsim.decomposed.engine import DecomposedEngine
from fabricsim.engine_api import EngineOutput
from fabricsim.errors import ConfigError, EngineRefusal
from fabricsim.experiments.budget import (
    ENGINE_TERMS,
    EngineTerms,
    decomposed_engine_terms,
    flow_engine_terms,
    packet_engine_terms,
)
from fabricsim.flowsim.engine import FlowEngine
from fabricsim.flowsim.open_loop import OpenLoopEngine
from fabricsim.lb.base import EngineHooks, PathPolicy
from fabricsim.lb.registry import registered_methods
from fabricsim.packetsim.engine import PacketEngine
from fabricsim.routing.router import Router
from fabricsim.topology.fabric import Fabric
from fabricsim.workloads.base import FlowTable


class _Live(Sequence[str]):
    """A declaration field read afresh each time from :meth:`names` (a registry's view)."""

    def names(self) -> tuple[str, ...]:
        raise NotImplementedError

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
        if isinstance(other, _Live | tuple | list):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:  # what it views, not what the registry holds now (stable)
        return hash((type(self).__name__, *vars(self).values()))

    def __repr__(self) -> str:
        return repr(self.names())


class Registered(_Live):
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
        return tuple(m.name for m in registered_methods(self.point) if self.engine in m.engines)


class Engine(EngineHooks, Protocol):
    """What a builder returns: an engine that offers a dynamic policy its hooks, run once for
    its output (a ``progress`` attribute, if it has one, is called as it runs)."""

    def run(self) -> EngineOutput: ...


EngineBuilder = Callable[[Scenario, Fabric, Router, FlowTable, PathPolicy], Engine]
"""``build(sc, fabric, router, flows, policy)``: the engine of one run, not yet run."""


class UnreadKeys(_Live):
    """The keys ``engine`` does not read, from :data:`KEY_ENGINES` each time (live, like
    :class:`Registered`: an engine registered later changes what the others refuse).

    >>> "nic.cc" in UnreadKeys("flow"), "nic.cc" in UnreadKeys("packet")
    (True, False)
    """

    def __init__(self, engine: str) -> None:
        self.engine = engine

    def names(self) -> tuple[str, ...]:
        return unread_keys(self.engine)


UNREAD_REFUSAL = (
    "{key}={value} is read only by the {readers} engine (the {engine} engine has no such "
    "mechanism); remove it or use --engine {alt}"
)
"""The one refusal of a key the chosen engine does not read (formatted per key)."""


@dataclass(frozen=True)
class EngineCapabilities:
    """One engine's registration: its builder and what it can run (an empty tuple: "none")."""

    name: str
    build: EngineBuilder
    """Builds the engine of one run (:data:`EngineBuilder`); the runner binds the policy's
    hooks to it and calls its ``run()``."""
    reads: tuple[str, ...]
    """Keys (or sections, ending in ".") outside the common ones that it reads: a key some
    engine declares here is read only by the engines declaring it (:data:`KEY_ENGINES`)."""
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
    packet_budget: bool
    """Whether ``engine.max_packets`` bounds its runs (checked once the flows are known)."""
    memory_terms: EngineTerms | None = None
    """Its terms of the memory budget (:data:`fabricsim.experiments.budget.EngineTerms`;
    None: the flow engine's)."""
    unread_keys: Sequence[str] | None = None
    """Keys it does not read (from :data:`KEY_ENGINES`; None: :class:`UnreadKeys`, live): set
    explicitly, whatever the value, refused."""
    unread_key_refusal: str = UNREAD_REFUSAL
    open_loop_only: bool = False
    """Whether it refuses flow tables whose flows wait on others (``depends_on``: collective
    steps, replayed dependencies), checked once the flows are known."""
    """The refusal of an unread key, formatted with ``key``, ``value``, ``readers`` (the
    engines that read it), ``engine`` (this one) and ``alt`` (the first reader)."""

    def __post_init__(self) -> None:
        if self.unread_keys is None:
            object.__setattr__(self, "unread_keys", UnreadKeys(self.name))


_RECORDS = tuple(
    name for name, f in RecordsConfig.model_fields.items() if f.annotation is bool
)  # timelines, uet_monitor, uet_transport_stats, switch_lb_stats, port_stats
_PACKET_RECORDS = ("uet_monitor", "uet_transport_stats", "switch_lb_stats", "port_stats")
_WORKLOADS = WORKLOAD_KINDS


PACKET_KEYS: tuple[str, ...] = (
    # -- the keys (or sections, ending in ".") only the packet-level engines read: the engine
    # column of DESIGN.md's key table.  Keys whose *values* are declared per engine (lb.policy,
    # nic.packet_spraying_type, switch.load_balancing_method, engine.flow_model's values,
    # workload.kind, the records.* switches, topology.link_failures) are checked against
    # EngineCapabilities instead; a records.* switch set to false asks for nothing and runs on
    # every engine.  Where the flow engine reads a key DESIGN.md lists as packet (the default
    # spraying type's port set: entropy_mask_bits, starting_port_offset; wire sizes:
    # rdma_data_mss, header_bytes; ACK bytes of MoE pacing: ack_coalesce, ack_bytes) the code's
    # reading wins: it is "both".  An engine that models packets declares these in its reads.
    "nic.reps_buffer_size_mask_bits",
    "nic.entropy_value_set_size",
    "nic.freezing_timeout_us",
    "nic.failure_detection_rtt_multiplier",
    "nic.initial_base_rtt_us",
    "nic.pdc_groups_enabled",
    "nic.cc",
    "nic.cwnd_bdp",
    "nic.rto_us",
    "nic.max_retries",
    "nic.oblivious_values",
    "nic.rto_backoff",
    "nic.ack_request",
    "nic.control_per_data",
    "nic.reps_recycle_last_hop_nack",
    "nic.reroute_rtts",
    "nic.transport",
    "nic.delivery_mode",
    "nic.nscc.",
    "nic.plb.",
    "nic.reps.",
    "nic.roce.",
    "nic.dcqcn.",
    "switch.flowlet_gap_us",
    "switch.flowlet_pick",
    "switch.adaptive_quantum_bytes",
    "switch.buffer_bytes",
    "switch.buffer_bdp",
    "switch.trimming",
    "switch.ecn_min_bytes",
    "switch.ecn_max_bytes",
    "switch.header_buffer_bytes",
    "switch.trim_last_queued",
    "switch.scale_buffers_with_rate",
    "switch.ecn_max_prob",
    "switch.pfc",
    "switch.pfc_xoff_bytes",
    "switch.pfc_xon_bytes",
    "switch.pfc_dynamic_alpha",
    "switch.pfc_shared_buffer_bytes",
    "switch.pfc_headroom_bytes",
    "switch.pfc_arbitration",
    "switch.pfc_watchdog_ms",
    "switch.pfc_stalled_hosts",
    "switch.llr",
    "switch.llr_timeout_us",
    "switch.llr_nack",
    "topology.link_error_rate",
    "records.timeline_interval_us",
)
FLOW_KEYS: tuple[str, ...] = ("engine.flow_model", "engine.flow_solver")
"""The keys only the flow engine reads."""
_HOST_OR_LINK_NAMED = ("switch.pfc_stalled_hosts", "topology.link_error_rate")
"""Packet keys that name the whole fabric's hosts or links (a link simulation has others)."""
DECOMPOSED_KEYS: tuple[str, ...] = tuple(
    k
    for k in PACKET_KEYS  # its link simulations read them
    if not k.startswith("records.") and k not in _HOST_OR_LINK_NAMED
) + ("engine.decomposed.",)
"""The keys the decomposed engine reads beyond the common ones: the packet engine's (each
link simulation is a packet engine run), less its records and the keys naming the whole
fabric's hosts or links, and its own section."""

KEY_ENGINES: dict[str, tuple[str, ...]] = {}
"""A key (or a section, ending in ".") -> the engines that read it, tabulated from the
registered engines' :attr:`~EngineCapabilities.reads` (:func:`register_engine`); a key not
listed is read by every engine.  A key the user sets explicitly (any value, its default too)
on an engine not listed is refused."""


def key_engines(key: str) -> tuple[str, ...] | None:
    """The engines that read dotted ``key`` (None: every engine), from :data:`KEY_ENGINES`.

    >>> key_engines("nic.nscc.target_delay_us"), key_engines("topology.spines")
    (('packet', 'decomposed'), None)
    """
    if key in KEY_ENGINES:
        return KEY_ENGINES[key]
    return next((v for k, v in KEY_ENGINES.items() if k.endswith(".") and key.startswith(k)), None)


def _every_key() -> list[str]:
    """Every dotted key of the sections the engine table names (sections expanded)."""
    out: list[str] = []
    for section in ("nic", "switch", "records", "engine", "topology"):
        model = Scenario.model_fields[section].annotation
        for name, info in model.model_fields.items():  # type: ignore[union-attr]
            sub = info.annotation
            if isinstance(sub, type) and issubclass(sub, BaseModel):
                out += [f"{section}.{name}.{n}" for n in sub.model_fields]
            else:
                out.append(f"{section}.{name}")
    return out


def unread_keys(engine: str) -> tuple[str, ...]:
    """The keys ``engine`` does not read, by :data:`KEY_ENGINES` (nested sections expanded)."""
    return tuple(
        k for k in _every_key() if (readers := key_engines(k)) is not None and engine not in readers
    )


ENGINES: dict[str, EngineCapabilities] = {}
"""The registered engines by name (``--engine``), in registration order."""


def _tabulate() -> None:
    """Rebuild :data:`KEY_ENGINES` from the registered engines' reads."""
    table: dict[str, list[str]] = {}
    for caps in ENGINES.values():
        for key in caps.reads:
            table.setdefault(key, []).append(caps.name)
    KEY_ENGINES.clear()
    KEY_ENGINES.update({key: tuple(names) for key, names in table.items()})


def register_engine(caps: EngineCapabilities) -> EngineCapabilities:
    """Register (or replace) the engine ``caps.name``: ``--engine`` accepts it, the runner
    builds it with ``caps.build``, and every check reads its declaration."""
    ENGINES[caps.name] = caps
    ENGINE_TERMS.pop(caps.name, None)
    if caps.memory_terms is not None:
        ENGINE_TERMS[caps.name] = caps.memory_terms
    _tabulate()
    return caps


def unregister_engine(name: str) -> None:
    """Remove a registered engine (a test's, a plug-in's); :data:`KEY_ENGINES` follows."""
    ENGINES.pop(name, None)
    ENGINE_TERMS.pop(name, None)
    _tabulate()


def _build_flow(
    sc: Scenario, fabric: Fabric, router: Router, flows: FlowTable, policy: PathPolicy
) -> Any:
    if sc.engine.flow_model == "open_loop":
        return OpenLoopEngine(sc, fabric, router, flows, policy)
    return FlowEngine(sc, fabric, router, flows, policy)


def _build_packet(
    sc: Scenario, fabric: Fabric, router: Router, flows: FlowTable, policy: PathPolicy
) -> Any:
    return PacketEngine(sc, fabric, router, flows, policy)


FLOW = register_engine(
    EngineCapabilities(
        name="flow",
        build=_build_flow,
        reads=FLOW_KEYS,
        policies=Registered("lb.policy", "flow"),
        spraying_types=Registered("nic.packet_spraying_type", "flow"),  # those with a fluid form
        switch_methods=Registered("switch.load_balancing_method", "flow"),  # ecmp: the hash
        records=tuple(r for r in _RECORDS if r not in _PACKET_RECORDS),
        link_failures=False,
        flow_models=("max_min", "open_loop"),
        workloads=_WORKLOADS,
        packet_budget=False,
        memory_terms=flow_engine_terms,
    )
)
PACKET = register_engine(
    EngineCapabilities(
        name="packet",
        build=_build_packet,
        reads=PACKET_KEYS,
        policies=Registered("lb.policy", "packet"),
        spraying_types=Registered("nic.packet_spraying_type", "packet"),
        switch_methods=Registered("switch.load_balancing_method", "packet"),
        records=_RECORDS,
        link_failures=True,
        flow_models=(),
        workloads=_WORKLOADS,
        packet_budget=True,
        memory_terms=packet_engine_terms,
    )
)


def _build_decomposed(
    sc: Scenario, fabric: Fabric, router: Router, flows: FlowTable, policy: PathPolicy
) -> Any:
    return DecomposedEngine(sc, fabric, router, flows, policy)


DECOMPOSED = register_engine(
    EngineCapabilities(
        name="decomposed",
        build=_build_decomposed,
        reads=DECOMPOSED_KEYS,
        # routes are the flow engine's: the methods with a fluid form (they declare it)
        policies=Registered("lb.policy", "decomposed"),
        spraying_types=Registered("nic.packet_spraying_type", "decomposed"),
        switch_methods=Registered("switch.load_balancing_method", "decomposed"),
        records=(),
        link_failures=False,
        flow_models=(),
        # collective steps and replayed traces wait on earlier flows (a closed loop); any table with
        # dependent flows is refused once its flows are known (open_loop_only)
        workloads=tuple(k for k in _WORKLOADS if k not in ("collective", "chakra")),
        packet_budget=False,
        memory_terms=decomposed_engine_terms,
        open_loop_only=True,
    )
)


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
    _check_keys_read(sc, caps)
    check_keys_apply(sc, sc.varied_keys)
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


def _check_keys_read(sc: Scenario, caps: EngineCapabilities) -> None:
    """Refuse the first key the user set explicitly that ``caps``' engine does not read."""
    unread = caps.unread_keys or ()
    for key in sorted(k for k in sc.user_keys if k in unread):
        if explicit(sc, key):
            readers = key_engines(key) or tuple(ENGINES)
            raise EngineRefusal(
                caps.unread_key_refusal.format(
                    key=key,
                    value=shown(value_of(sc, key)),
                    readers=" or ".join(readers),
                    engine=caps.name,
                    alt=readers[0],
                )
            )


def estimated_packets(sc: Scenario, flows: FlowTable) -> int:
    """Data packets the packet engine would send (no retransmissions)."""
    return int(np.sum(-(-flows.size_bytes // sc.nic.rdma_data_mss)))


def check_flows_supported(sc: Scenario, engine: str, flows: FlowTable) -> None:
    """Refuse (one line) a flow table over ``engine.max_packets`` on an engine it bounds, or
    with dependent flows on an engine that runs only open-loop flows."""
    caps = capabilities(engine)
    if caps.open_loop_only and flows.depends_on and any(flows.depends_on):
        alt = next((c.name for c in ENGINES.values() if _runs(sc, c)), "packet")
        raise EngineRefusal(
            f"workload.kind={sc.workload.kind} has flows that wait on others (a closed loop: "
            f"each starts when earlier ones finish), which the {engine} engine cannot "
            f"decompose into independent links; use --engine {alt}"
        )
    if capabilities(engine).packet_budget and estimated_packets(sc, flows) > sc.engine.max_packets:
        raise EngineRefusal(
            f"scenario '{sc.name}' needs about {estimated_packets(sc, flows):.2g} data packets, over "
            f"engine.max_packets={sc.engine.max_packets:.2g}; use --engine flow or a smaller workload"
        )


def _runs(sc: Scenario, caps: EngineCapabilities) -> bool:
    """Whether ``caps``' engine runs closed loops and accepts ``sc`` (an alternative to name)."""
    if caps.open_loop_only:
        return False
    try:
        check_supported(sc, caps.name)
    except EngineRefusal:
        return False
    return True


def declared_fields() -> tuple[str, ...]:
    """The names of :class:`EngineCapabilities`' fields (every engine declares each one)."""
    return tuple(f.name for f in fields(EngineCapabilities))
