"""The decomposed engine: packet-level delays of a large fabric from per-link simulations.

Link-level decomposition (as Parsimon, NSDI 2023): route every flow once
(:mod:`~fabricsim.decomposed.routes`), give every loaded link the flows that cross it
(:mod:`~fabricsim.decomposed.link_workloads`), simulate each link that can queue on its own
small fabric with the packet engine (:mod:`~fabricsim.decomposed.link_fabric`,
:mod:`~fabricsim.decomposed.simulate`) -- links whose workloads are alike only once
(:mod:`~fabricsim.decomposed.cluster`) -- and compose each flow's FCT from the delays its
links added (:mod:`~fabricsim.decomposed.compose`).

The link simulations are independent tasks.  The engine hands them to ``map_tasks``
(``map_tasks(fn, tasks, progress)`` returning the results in task order): in this process by
default; the runner passes one on the experiments backend (local worker processes or a
``dask.distributed`` cluster).  Each link's seed comes from the scenario's seed and the
link's name and the results are put together in link order, so the output does not depend on
the number of workers or the backend.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fabricsim.config.models import Scenario
from fabricsim.decomposed.cluster import features, representatives
from fabricsim.decomposed.compose import compose_flows, row_delays
from fabricsim.decomposed.link_fabric import LinkSpec, link_spec
from fabricsim.decomposed.link_workloads import LinkWorkloads, link_workloads
from fabricsim.decomposed.routes import Routes, route_flows
from fabricsim.decomposed.simulate import COUNTERS, LinkResult, simulate_links
from fabricsim.engine_api import EngineOutput
from fabricsim.lb.base import PathPolicy
from fabricsim.routing.router import Router
from fabricsim.topology.fabric import Fabric
from fabricsim.units import ps_to_us
from fabricsim.workloads.base import FlowTable

MapTasks = Callable[[Callable[[dict[str, Any]], Any], Sequence[dict[str, Any]], Any], list[Any]]
"""``map_tasks(fn, tasks, progress)``: ``fn(task)`` of every task, in task order;
``progress(result)`` (or None) called with each result as it is available."""

TASK_PACKETS = 200_000
"""Link simulations are batched into tasks of about this many data packets (fewer, larger
tasks cost less to send; the largest links go first so workers finish together)."""


def in_process(fn: Callable, tasks: Sequence[dict[str, Any]], progress: Any) -> list[Any]:
    """The default ``map_tasks``: every task here, in order."""
    out = []
    for task in tasks:
        out.append(fn(task))
        if progress is not None:
            progress(out[-1])
    return out


def approximations(sc: Scenario) -> list[str]:
    """What this scenario's decomposed answer approximates beyond the method itself."""
    notes = []
    if sc.switch.pfc:
        notes.append(
            "switch.pfc: a link's pauses reach only the senders feeding it (they do not "
            "spread through the fabric)"
        )
    if sc.lb.policy == "ark":
        notes.append("lb.policy=ark: reservations are made at the flow engine's timing")
    return notes


class DecomposedEngine:
    """Run a flow table by link-level decomposition (see the module docstring)."""

    def __init__(
        self, sc: Scenario, fabric: Fabric, router: Router, flows: FlowTable, policy: PathPolicy
    ) -> None:
        self.sc, self.fabric, self.router, self.flows, self.policy = (
            sc,
            fabric,
            router,
            flows,
            policy,
        )
        self.map_tasks: MapTasks = in_process
        self.link_progress: Callable[[int, int], None] | None = None
        """Called with (data packets simulated, packets to simulate) as link tasks finish."""
        self._hooks: Any = None

    # -- engine hooks (a dynamic policy decides during the routing run) ----------------------
    def now_s(self) -> float:
        return 0.0

    def schedule(self, at_s: float, callback: Callable[[], None]) -> None:
        raise RuntimeError("the decomposed engine routes dynamic policies in its routing run")

    def reroute(self, flow: int, index: int, src_port: int) -> None:
        raise RuntimeError("the decomposed engine routes dynamic policies in its routing run")

    # -- the run -----------------------------------------------------------------------------
    def run(self) -> EngineOutput:
        wall0 = time.perf_counter()
        sc, fabric, flows = self.sc, self.fabric, self.flows
        routes = route_flows(sc, fabric, self.router, flows, self.policy)
        t_route = time.perf_counter()
        w = link_workloads(routes, fabric, flows)
        loud = np.flatnonzero(~w.quiet)
        hard, soft, load = features(w, fabric, flows, loud)
        reps_loud = representatives(hard, soft, load, sc.engine.decomposed.cluster_tolerance)
        reps = np.arange(len(w.links), dtype=np.int64)
        reps[loud] = loud[reps_loud]
        simulated = np.flatnonzero((reps == np.arange(len(w.links))) & ~w.quiet)
        specs = {int(i): link_spec(w, int(i), routes, fabric, flows) for i in simulated}
        t_plan = time.perf_counter()
        results, sims = self._simulate(specs)
        t_sims = time.perf_counter()
        aggregate = sc.engine.decomposed.aggregate
        if aggregate == "scaled":
            ratios = {i: s.ratio for i, s in sims.items() if s.ratio is not None}
            delays = row_delays(w, reps, ratios, fabric, sc.seed, quiet=1.0)
        else:
            delays = row_delays(w, reps, results, fabric, sc.seed)
        rate = fabric.link_rate_bps[w.links]
        fct = compose_flows(routes, w, delays, rate, aggregate)
        out = self._output(routes, w, fct, specs, sims, simulated)
        out.timing.update(
            {
                "wall_s": time.perf_counter() - wall0,
                "routing_s": t_route - wall0,
                "planning_s": t_plan - t_route,
                "link_sims_s": t_sims - t_plan,
                "link_sims_cpu_s": float(sum(s.wall_s for s in sims.values())),
                "composition_s": time.perf_counter() - t_sims,
            }
        )
        return out

    def _simulate(
        self, specs: dict[int, LinkSpec]
    ) -> tuple[dict[int, np.ndarray], dict[int, LinkResult]]:
        """Every link simulation, batched into tasks (largest first), results by link index."""
        mss = self.sc.nic.rdma_data_mss
        order = sorted(specs, key=lambda i: (-specs[i].packets(mss), i))
        tasks: list[dict[str, Any]] = []
        batch: list[int] = []
        packets = 0
        link_sc = link_scenario(self.sc, self.fabric)
        for i in order:
            batch.append(i)
            packets += specs[i].packets(mss)
            if packets >= TASK_PACKETS:
                tasks.append(_task(len(tasks), link_sc, [specs[j] for j in batch], batch))
                batch, packets = [], 0
        if batch:
            tasks.append(_task(len(tasks), link_sc, [specs[j] for j in batch], batch))
        total = sum(s.packets(mss) for s in specs.values())
        done = [0]
        progress = self.link_progress

        def seen(batch_results: list[LinkResult]) -> None:
            done[0] += sum(r.counters["packets_sent"] for r in batch_results)
            if progress is not None:
                progress(min(done[0], total), total)

        outcome = self.map_tasks(simulate_links, [t for t in tasks], seen)
        sims: dict[int, LinkResult] = {}
        for task, got in zip(tasks, outcome, strict=True):
            for i, res in zip(task["index"], got, strict=True):
                sims[i] = res
        return {i: s.delay_s for i, s in sims.items()}, sims

    def _output(
        self,
        routes: Routes,
        w: LinkWorkloads,
        fct: np.ndarray,
        specs: dict[int, LinkSpec],
        sims: dict[int, LinkResult],
        simulated: np.ndarray,
    ) -> EngineOutput:
        flows, sc = self.flows, self.sc
        finish = routes.start_s + fct
        done = ~np.isnan(finish)
        delivered = np.where(done, flows.size_bytes, 0).astype(np.int64)
        fo = routes.flow_out
        mss = sc.nic.rdma_data_mss
        largest = max(specs, key=lambda i: (specs[i].packets(mss), -i), default=None)
        summary: dict[str, Any] = {
            k: int(sum(s.counters[k] for s in sims.values())) for k in COUNTERS
        }
        summary.update(
            {
                "links_total": int(self.fabric.num_links),
                "links_loaded": int(len(w.links)),
                "links_quiet": int(w.quiet.sum()),
                "links_simulated": int(len(simulated)),
                "largest_link_simulation": None
                if largest is None
                else {
                    "link": specs[largest].name,
                    "flows": int(len(specs[largest].size_bytes)),
                    "packets": int(specs[largest].packets(mss)),
                },
                "link_sim_packets": int(sum(s.packets(mss) for s in specs.values())),
                "sim_end_s": float(np.nanmax(finish, initial=0.0)) if done.any() else 0.0,
                "time_limit_reached": bool(fo.summary.get("time_limit_reached", False)),
                "approximate": approximations(sc),
                "routing_flows_completed": int(np.sum(~np.isnan(fo.finish_s))),
            }
        )
        summary["not_completed_reason"] = _reason(routes, fct, fo)
        for note in summary["approximate"]:
            warnings.warn(f"decomposed engine: approximate: {note}", stacklevel=2)
        return EngineOutput(
            finish_s=finish,
            delivered_bytes=delivered,
            path=fo.path,
            entropy=fo.entropy,
            start_s=routes.start_s,
            paths=fo.paths,
            summary=summary,
            timing={"link_simulations": int(len(simulated))},
        )


def _task(n: int, sc: Scenario, specs: list[LinkSpec], index: list[int]) -> dict[str, Any]:
    return {"id": f"links-{n}", "scenario": sc, "links": specs, "index": list(index)}


def _reason(routes: Routes, fct: np.ndarray, fo: EngineOutput) -> str | None:
    """Why flows did not complete (None if all did)."""
    lost = np.isnan(fct)
    if not lost.any():
        return None
    unroutable = ~np.isfinite(routes.ideal_s)
    if unroutable[lost].all():
        return fo.summary.get("not_completed_reason") or "no usable path"
    return "a link simulation did not finish them (time limit or transport failure)"


def link_scenario(sc: Scenario, fabric: Fabric) -> Scenario:
    """The scenario the link simulations run: the whole fabric's base RTT (``auto``
    resolved on the whole fabric), per-flow ECMP (the routes are fixed already)."""
    nic = sc.nic
    rtt = nic.initial_base_rtt_us
    if rtt == "auto":
        rtt = ps_to_us(
            fabric.unloaded_rtt_ps(nic.rdma_data_mss, nic.header_bytes, nic.header_bytes)
        )
    return sc.model_copy(
        update={
            "nic": nic.model_copy(update={"initial_base_rtt_us": rtt}),
            "lb": sc.lb.model_copy(update={"policy": "ecmp"}),
            "engine": sc.engine.model_copy(update={"kind": "packet"}),
        }
    )
