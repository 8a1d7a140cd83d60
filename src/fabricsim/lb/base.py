"""Path policies: how a flow gets its source port(s) or path (``lb.policy``).

A policy turns a flow into one or more :class:`Connection` s when the flow arrives: a
connection carries part of the flow's bytes on one UDP source port (``src_port``: the PDC's /
the QP's configured port), or, for ``ideal_spray``, evenly over every path.  Dynamic policies
(ARK) may schedule timers and re-route running connections through the engine hooks.  Both
engines use the same policies, except a ``flow_engine_only`` one.  A policy registers with
:func:`register_policy` (its ``name``, one-line ``help``, ``knobs``, ``one_path_per_flow``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from fabricsim.config.models import ONE_PATH_PER_FLOW, Scenario
from fabricsim.errors import ConfigError
from fabricsim.lb.registry import Method, Registry, describe_extras, help_of
from fabricsim.routing.router import Router
from fabricsim.topology.fabric import Fabric
from fabricsim.workloads.base import FlowTable

SPRAY_ALL = -1  # src_port of an ideal-spray connection: every path, even split


@dataclass(slots=True)
class Connection:
    """A share of a flow's bytes sent on one source port (``SPRAY_ALL``: ideal spray)."""

    size_bytes: int
    src_port: int
    rate_cap_bps: float = float("inf")


class EngineHooks(Protocol):
    """What an engine offers a dynamic policy."""

    def now_s(self) -> float: ...

    def schedule(self, at_s: float, callback: Callable[[], None]) -> None: ...

    def reroute(self, flow: int, index: int, src_port: int) -> None: ...


@dataclass(eq=False)
class PolicyContext:
    scenario: Scenario
    fabric: Fabric
    router: Router
    flows: FlowTable
    rng: np.random.Generator
    hooks: EngineHooks | None = None


class PathPolicy:
    """Base policy: one connection per flow on the flow's own source port (per-flow ECMP)."""

    name = "ecmp"
    label = "per-flow ECMP hash"
    help = "one connection per flow on the flow's own source port (per-flow ECMP)"
    flow_engine_only = False
    """True for a policy only the flow engine's fluid model can run (``ideal_spray``).

    Read by the engine registry (:mod:`fabricsim.experiments.engines`): the packet engine's
    declared policies are the registered ones without this flag.
    """
    refusal: str | None = None
    """Why the packet engine cannot run it (a ``flow_engine_only`` policy): the phrase after
    ``lb.policy=<name>`` in the refusal."""
    one_path_per_flow = True
    """Every connection on one path: NIC spraying defaults to ``none`` under it."""
    knobs: tuple[str, ...] = ()
    """The config keys only this policy reads."""

    def __init__(self, ctx: PolicyContext) -> None:
        self.ctx = ctx

    def connections(self, flow: int) -> list[Connection]:
        """The flow's connections, decided when it arrives."""
        f = self.ctx.flows
        return [Connection(int(f.size_bytes[flow]), int(f.src_port[flow]))]

    def known_ports(self) -> np.ndarray | None:
        """Every flow's one source port if the policy fixes them before the run (the flow
        engine resolves their paths in one batch), else None."""
        if type(self).connections is PathPolicy.connections:
            return np.asarray(self.ctx.flows.src_port, dtype=np.int64)
        return None

    def on_finish(self, flow: int) -> None:
        """Called when the flow has delivered its last byte."""

    def summary(self) -> dict[str, object]:
        """Policy counters for ``summary.json``."""
        return {}


class RateCapPolicy:
    """Wrap any path policy so each connection carries its flow's pacing cap.

    ``caps[flow]`` (bits/s on the wire) is split over a flow's connections in proportion to
    their sizes.  The flow engine honours ``Connection.rate_cap_bps`` as a per-connection rate
    cap in max-min sharing; the packet engine paces a connection at it.
    """

    def __init__(self, inner: PathPolicy, caps: np.ndarray) -> None:
        self.inner = inner
        self.caps = np.asarray(caps, dtype=np.float64)
        self.ctx = inner.ctx
        self.name = inner.name
        self.flow_engine_only = inner.flow_engine_only

    def connections(self, flow: int) -> list[Connection]:
        conns = self.inner.connections(flow)
        total = sum(c.size_bytes for c in conns) or 1
        for c in conns:
            c.rate_cap_bps = min(c.rate_cap_bps, float(self.caps[flow]) * c.size_bytes / total)
        return conns

    def known_ports(self) -> np.ndarray | None:
        return self.inner.known_ports()

    def on_finish(self, flow: int) -> None:
        self.inner.on_finish(flow)

    def summary(self) -> dict[str, object]:
        return self.inner.summary()


def with_rate_caps(policy: PathPolicy, flows: FlowTable) -> PathPolicy:
    """``policy`` wrapped in :class:`RateCapPolicy` if the flows carry ``rate_cap_bps``."""
    caps = flows.extra.get("rate_cap_bps")
    return policy if caps is None else RateCapPolicy(policy, caps)  # type: ignore[return-value]


def _describe(cls: type[PathPolicy]) -> Method:
    engines = ("flow", "decomposed") if cls.flow_engine_only else ("flow", "packet", "decomposed")
    return Method(
        "lb.policy", cls.name, help_of(cls), engines, cls.refusal, cls.knobs, **describe_extras(cls)
    )


POLICIES: Registry[type[PathPolicy]] = Registry(
    "lb.policy",
    _describe,
    lambda cls: (ONE_PATH_PER_FLOW,) if cls.one_path_per_flow else (),
)
"""The path policies by ``lb.policy`` name."""


def register_policy(cls: type[PathPolicy]) -> type[PathPolicy]:
    """Class decorator: register a :class:`PathPolicy` subclass under its ``name``."""
    return POLICIES.register(cls)


def unregister_policy(name: str) -> None:
    """Remove the policy ``name`` (and its config name)."""
    POLICIES.unregister(name)


def registered_policies() -> dict[str, type[PathPolicy]]:
    """The registered policies by ``lb.policy`` name (import :mod:`fabricsim.lb` for them all)."""
    return POLICIES.items()


def make_policy(ctx: PolicyContext) -> PathPolicy:
    """A fresh instance of the scenario's ``lb.policy``."""
    name = ctx.scenario.lb.policy
    if name not in POLICIES.items():
        raise ConfigError(f"lb.policy: '{name}' is not available in this build")
    return POLICIES.get(name)(ctx)


register_policy(PathPolicy)
