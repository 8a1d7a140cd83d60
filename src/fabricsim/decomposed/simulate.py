"""Step 3b of the decomposed engine: one link simulation on the packet engine.

:func:`simulate_links` is the task a worker runs (a module-level function: local processes
and Dask workers import it by name).  Each link runs the packet engine, compiled core and all,
on its dumbbell (:class:`~fabricsim.decomposed.link_fabric.LinkSpec`) under the scenario's
NIC, transport, congestion control and switch settings, with its own seed drawn from the
scenario's seed and the link's name, so a link's result does not depend on which worker ran
it or with what.  What comes back is, per sub-flow, the delay the link added: its FCT in the
simulation less its FCT alone on the same idle dumbbell (the flow engine's formula, which the
packet engine's lone flow matches), NaN where it did not finish.  Under the ``scaled``
composition (``engine.decomposed.aggregate``) the flow engine also runs the same sub-flows on
the same dumbbell, and each sub-flow's packet FCT over its fluid FCT comes back too: what the
link's queues, losses and congestion control cost beyond fair sharing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from fabricsim.config.models import Scenario
from fabricsim.decomposed.link_fabric import LinkSpec
from fabricsim.engine_api import EngineOutput, collector_paused, wire_bytes_array
from fabricsim.flowsim.engine import FlowEngine
from fabricsim.lb.base import PathPolicy, PolicyContext, with_rate_caps
from fabricsim.packetsim.engine import PacketEngine
from fabricsim.rng import stream
from fabricsim.routing.router import Router
from fabricsim.units import ps_to_s
from fabricsim.workloads.base import FlowTable


@dataclass(eq=False)
class LinkResult:
    """What one link simulation measured."""

    name: str
    delay_s: np.ndarray
    """Per sub-flow: FCT less its FCT alone (NaN: it did not finish)."""
    counters: dict[str, int]
    """events, packets_sent, packets_retransmitted, packets_trimmed, packets_dropped."""
    wall_s: float
    ratio: np.ndarray | None = None
    """Per sub-flow (``scaled`` composition only): its FCT over its FCT on the flow engine on
    the same dumbbell (NaN: it did not finish)."""


COUNTERS = ("events", "packets_sent", "packets_retransmitted", "packets_trimmed", "packets_dropped")


def link_seed(seed: int, name: str) -> int:
    """The seed of the simulation of link ``name`` (from the scenario's seed and the name).

    >>> link_seed(1, "leaf0->spine1") == link_seed(1, "leaf0->spine1") != link_seed(2, "leaf0->spine1")
    True
    """
    return int(stream(seed, f"decomposed/{name}").integers(0, 2**31 - 1))


def simulate_link(sc: Scenario, spec: LinkSpec) -> LinkResult:
    """Run one link's sub-flows on the packet engine (``sc``: the link scenario,
    :func:`link_scenario`); its seed is :func:`link_seed` of the link's name.  Under the
    ``scaled`` composition the flow engine runs them on the same dumbbell too."""
    wall0 = time.perf_counter()
    run_sc = sc.model_copy(update={"seed": link_seed(sc.seed, spec.name)})
    fabric = spec.fabric()
    router = Router.for_scenario(run_sc, fabric)
    src, dst, size, start, ports = spec.flows()
    extra = {} if spec.cap_bps is None else {"rate_cap_bps": spec.cap_bps}
    flows = FlowTable(src, dst, size, start, ports.astype(np.int64), extra=extra)
    fct, out = _fct(PacketEngine, run_sc, fabric, router, flows)
    ratio = None
    if sc.engine.decomposed.aggregate == "scaled":
        ratio = fct / _fct(FlowEngine, run_sc, fabric, router, flows)[0]
    delay = fct - _alone_s(spec, fabric, run_sc)
    counters = {k: int(out.summary.get(k, 0)) for k in COUNTERS}
    return LinkResult(spec.name, delay, counters, time.perf_counter() - wall0, ratio)


def _fct(
    engine: Any, sc: Scenario, fabric: Any, router: Router, flows: FlowTable
) -> tuple[np.ndarray, EngineOutput]:
    """Per flow: its FCT on ``engine`` (a fresh path policy), and the engine's output."""
    ctx = PolicyContext(sc, fabric, router, flows, stream(sc.seed, "policy"))
    policy = with_rate_caps(PathPolicy(ctx), flows)
    eng = engine(sc, fabric, router, flows, policy)
    ctx.hooks = eng
    out = eng.run()
    began = out.start_s if out.start_s is not None else flows.start_s
    return out.finish_s - began, out


def _alone_s(spec: LinkSpec, fabric: Any, sc: Scenario) -> np.ndarray:
    """Each sub-flow's FCT alone on the idle dumbbell: its wire bytes at the slowest link of
    its path (or its cap) plus the pipeline delay of its last packet."""
    mss, hdr = sc.nic.rdma_data_mss, sc.nic.header_bytes
    src, dst, size, _, _ = spec.flows()
    wire = wire_bytes_array(size, mss, hdr).astype(np.float64)
    out = np.empty(len(src))
    cache: dict[tuple[int, int], tuple[float, int]] = {}
    for i, (s, d) in enumerate(zip(src.tolist(), dst.tolist(), strict=True)):
        hit = cache.get((s, d))
        if hit is None:
            path = fabric.paths(s, d)[0]
            rate = float(np.min(fabric.link_rate_bps[list(path)]))
            hit = cache[(s, d)] = (rate, fabric.unloaded_delay_ps(path, mss + hdr, first_hop=False))
        rate = hit[0] if spec.cap_bps is None else min(hit[0], float(spec.cap_bps[i]))
        out[i] = wire[i] * 8 / rate + ps_to_s(hit[1])
    return out


def simulate_links(task: dict[str, Any]) -> list[LinkResult]:
    """A worker's task: ``{"id", "scenario", "links": [LinkSpec, ...]}``, run in order.

    perf: the cyclic collector stays off for the whole batch (each packet engine would turn
    it back on after its loop, and its passes over the small engines were 6 % of a run).
    """
    sc = task["scenario"]
    with collector_paused():
        return [simulate_link(sc, spec) for spec in task["links"]]
