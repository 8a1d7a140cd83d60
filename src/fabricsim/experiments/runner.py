"""Run a scenario on an engine and assemble the :class:`~fabricsim.metrics.Result`.

One run: fabric -> router -> workload -> policy -> engine -> summarizers.  :func:`build` is the
one pipeline up to the engine (the checks, the budget, the flows, the policy with its rate caps,
the registered engine's builder); :func:`run` runs what it builds, and tools and tests that want
the engine itself call :func:`build_engine`.  The experiments
(:mod:`~fabricsim.experiments.compare`, :mod:`~fabricsim.experiments.study`,
:mod:`~fabricsim.experiments.sweep`) call :func:`run` once per run spec (``fabricsim.run`` is
:func:`run`).
"""

from __future__ import annotations

import functools
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

import numpy as np

from fabricsim import workloads
from fabricsim._compat import LazyModule, resident_mb, start_up_once
from fabricsim.config.loader import load_scenario
from fabricsim.config.models import EngineConfig, Scenario
from fabricsim.engine_api import EngineOutput, wire_bytes
from fabricsim.experiments.budget import check_budget
from fabricsim.experiments.engines import ENGINES as _REGISTRY
from fabricsim.experiments.engines import (
    Engine,
    capabilities,
    check_flows_supported,
    check_supported,
)
from fabricsim.lb import PolicyContext, make_policy
from fabricsim.lb.base import PathPolicy, with_rate_caps
from fabricsim.metrics import workload_summaries  # noqa: F401  (registers the summarizers)
from fabricsim.metrics.results import Columns, Result, percentiles
from fabricsim.metrics.summaries import (
    RunContext,
    completion_keys,
    not_completed_warning,
    summarizers_for,
)
from fabricsim.rng import stream
from fabricsim.routing.router import Router
from fabricsim.topology import Fabric, fabric_for
from fabricsim.workloads.base import FlowTable

if TYPE_CHECKING:
    from fabricsim.experiments import runs
else:  # perf: the backend (process pools, Dask) only for an engine with tasks to share
    runs = LazyModule("fabricsim.experiments.runs")

ENGINES = _REGISTRY  # the registered engines by name (--engine), live: a later registration counts
_ENGINE_KINDS = get_args(EngineConfig.model_fields["kind"].annotation)  # engine.kind's values


def fabric_of(sc: Scenario) -> Fabric:
    """The scenario's fabric (built once per distinct topology in a process).

    A shorthand of :func:`fabricsim.topology.fabric_for` for the layers above the engines.
    """
    return fabric_for(sc.topology)


def router_of(sc: Scenario, fabric: Fabric) -> Router:
    """The scenario's router on ``fabric``: :meth:`fabricsim.routing.Router.for_scenario`."""
    return Router.for_scenario(sc, fabric)


def check_engine(sc: Scenario, engine: str) -> None:
    """Raise :class:`EngineRefusal` (one line) if ``engine`` cannot answer this scenario.

    The check of the engine's declared capabilities:
    :func:`fabricsim.experiments.engines.check_supported`.
    """
    check_supported(sc, engine)


Progress = Callable[[float, float], None]
"""``progress(simulated_s, expected_end_s)``: the engine's simulated time and the run's ideal end
(the busiest host's bytes at its line rate after the last start; a run often goes past it)."""


def expected_end_s(fabric: Fabric, flows: FlowTable) -> float:
    """The run's ideal end: the last start plus the busiest host's bytes (sent or received)
    at the slowest host link rate (a lower bound, for a progress bar's ETA)."""
    if len(flows) == 0:
        return 0.0
    n = fabric.num_hosts
    sent = np.bincount(flows.src, weights=flows.size_bytes.astype(float), minlength=n)
    got = np.bincount(flows.dst, weights=flows.size_bytes.astype(float), minlength=n)
    rate = float(np.min(fabric.link_rate_bps[fabric.host_uplink]))
    busiest = float(max(sent.max(), got.max()))
    return float(np.max(flows.start_s)) + (busiest * 8 / rate if rate > 0 else 0.0)


@dataclass(eq=False)
class Built:
    """One run up to its engine: what :func:`build` made, the engine not yet run."""

    sc: Scenario
    """The scenario as run (``engine.kind`` set to the engine)."""
    engine_name: str
    fabric: Fabric
    router: Router
    flows: FlowTable
    policy: PathPolicy
    """The path policy with its per-flow rate caps; its hooks are bound to :attr:`engine`."""
    engine: Engine


def _build_engine(
    sc: Scenario, engine: str, fabric: Fabric, router: Router, flows: FlowTable
) -> tuple[Engine, PathPolicy]:
    """The registered engine's builder on a new policy (rate caps, hooks bound)."""
    ctx = PolicyContext(sc, fabric, router, flows, stream(sc.seed, "policy"))
    policy = with_rate_caps(make_policy(ctx), flows)  # per-flow pacing caps (rate_based)
    eng = capabilities(engine).build(sc, fabric, router, flows, policy)
    ctx.hooks = eng
    return eng, policy


def _execute(
    eng: Engine,
    policy: PathPolicy,
    fabric: Fabric,
    flows: FlowTable,
    progress: Progress | None,
    workers: int | None = None,
    scheduler: str | None = None,
) -> EngineOutput:
    if progress is not None and hasattr(eng, "progress"):  # the open-loop engine has no loop
        expected = expected_end_s(fabric, flows)
        eng.progress = lambda now_s: progress(now_s, expected)
    if hasattr(eng, "map_tasks"):  # an engine of independent tasks: on the backend
        eng.map_tasks = functools.partial(_map_tasks, workers=workers, scheduler=scheduler)
        if progress is not None:
            eng.link_progress = progress  # type: ignore[attr-defined]
    out = eng.run()
    out.summary.update(policy.summary())
    return out


def _map_tasks(
    fn: Callable, tasks: list, progress: Any, workers: int | None, scheduler: str | None
) -> list:
    """An engine's tasks on the experiments backend (:func:`fabricsim.experiments.runs.
    run_tasks`): here with one worker, local processes, or a Dask scheduler."""
    return runs.run_tasks(fn, tasks, workers=workers or 1, progress=progress, scheduler=scheduler)


def _run_engine(
    sc: Scenario,
    engine: str,
    fabric: Fabric,
    router: Router,
    flows: FlowTable,
    progress: Progress | None = None,
) -> EngineOutput:
    """Build and run ``engine`` on these flows (a summarizer's rerun of other flows too)."""
    eng, policy = _build_engine(sc, engine, fabric, router, flows)
    return _execute(eng, policy, fabric, flows, progress)


def build(scenario: str | Path | dict[str, Any] | Scenario, engine: str | None = None) -> Built:
    """The one pipeline up to the engine, as :func:`run` runs it (for runs, tools and tests).

    The engine's declaration is checked (:func:`check_engine`), the memory budget
    (:func:`~fabricsim.experiments.budget.check_budget`) before anything is allocated, the
    flows are generated and bounded (``engine.max_packets``), the policy gets its rate caps
    and the registered builder makes the engine, the policy's hooks bound to it.  Call the
    engine's ``run()`` once for its output.

    >>> b = build("ecmp-collision", "packet")
    >>> b.engine_name, len(b.flows), type(b.engine).__name__
    ('packet', 8, 'PacketEngine')
    """
    sc = load_scenario(scenario)
    engine = engine or sc.engine.kind
    check_engine(sc, engine)
    check_budget(sc, engine)  # before anything is allocated
    if engine != sc.engine.kind and engine in _ENGINE_KINDS:  # the workload may depend on
        sc = sc.with_overrides({"engine.kind": engine})  # the engine (e.g. MoE pacing)
    fabric = fabric_of(sc)
    router = router_of(sc, fabric)
    flows = workloads.generate(sc, fabric)
    check_flows_supported(sc, engine, flows)  # engine.max_packets, before the engine allocates
    eng, policy = _build_engine(sc, engine, fabric, router, flows)
    return Built(sc, engine, fabric, router, flows, policy, eng)


def build_engine(
    scenario: str | Path | dict[str, Any] | Scenario, engine: str | None = None
) -> Any:
    """The engine :func:`build` makes (its policy's hooks bound); call ``run()`` once."""
    return build(scenario, engine).engine


def run(
    scenario: str | Path | dict[str, Any] | Scenario,
    engine: str | None = None,
    *,
    progress: Progress | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
) -> Result:
    """Run a scenario and return its :class:`~fabricsim.metrics.Result`.

    Parameters
    ----------
    scenario
        Built-in name, YAML path, dict, or :class:`Scenario`.
    engine
        A registered engine (``"flow"`` or ``"packet"``); default: the scenario's
        ``engine.kind``.
    progress
        Called as ``progress(simulated_s, expected_end_s)`` every 0.1 s or so of wall time
        while the engine runs, and once at its end (the results do not depend on it); on the
        decomposed engine as ``progress(packets_simulated, packets_to_simulate)`` as its link
        simulations finish.
    workers, scheduler
        The decomposed engine's link simulations: on ``workers`` local processes, or on a
        running ``dask.distributed`` scheduler (``tcp://HOST:PORT``); the output is the same
        whatever runs them.  Other engines run in this process.

    Examples
    --------
    >>> res = run("ecmp-collision")
    >>> res.summary["flows_total"], res.summary["flows_completed"]
    (8, 8)
    """
    wall0, rss0 = time.perf_counter(), resident_mb()  # before the fabric is built
    b = build(scenario, engine)
    setup, started = time.perf_counter() - wall0, start_up_once()  # the first event is next
    out = _execute(b.engine, b.policy, b.fabric, b.flows, progress, workers, scheduler)
    rss1, wall = resident_mb(), time.perf_counter() - wall0
    res = _assemble(b.sc, b.engine_name, b.fabric, b.router, b.flows, out, wall)
    grown = None if rss0 is None or rss1 is None else rss1 - rss0
    res.timing.update(started, setup_s=setup, engine_rss_growth_mb=grown)
    return res


def _assemble(
    sc: Scenario,
    engine: str,
    fabric: Fabric,
    router: Router,
    flows: FlowTable,
    out: EngineOutput,
    wall: float,
) -> Result:
    start = (
        flows.start_s
        if out.start_s is None
        else np.where(np.isnan(out.start_s), flows.start_s, out.start_s)
    )
    fct = out.finish_s - start
    cols = _flow_columns(fabric, flows, out, start, fct)
    summary = _base_summary(sc, engine, fabric, flows, out, fct)
    rerun = functools.partial(_run_engine, sc, engine, fabric, router)
    ctx = RunContext(sc, engine, fabric, router, flows, out, fct, rerun)
    for fn in summarizers_for(sc.workload.kind):
        extra = fn(ctx)
        for col, values in extra.pop("_columns", {}).items():
            cols[col] = values
        summary.update(extra)
    summary.update(completion_keys(summary))  # every engine: counts and why, never rounded away
    unfinished = not_completed_warning(summary)
    if unfinished:
        warnings.warn(unfinished, stacklevel=3)
    timing = {**out.timing, "total_wall_s": wall}
    return Result(sc, summary, cols, timing, dict(out.tables), dict(out.json_records))


def _flow_columns(
    fabric: Fabric, flows: FlowTable, out: EngineOutput, start: np.ndarray, fct: np.ndarray
) -> Columns:
    """The flow table's columns: one row per flow in flow-id order (``flows.parquet``); the
    :class:`Result` makes them a DataFrame when its ``flows`` are first read."""
    names = np.array(fabric.host_names)
    cols: Columns = {
        "flow_id": np.arange(len(flows), dtype=np.int64),
        "src": names[flows.src],
        "dst": names[flows.dst],
        "size_bytes": flows.size_bytes,
        "start_s": start,
        "finish_s": out.finish_s,
        "fct_s": fct,
        "path": out.path,
        "entropy": out.entropy,
        "paths": (
            np.array([len(p.split(";")) if p else 0 for p in out.path], dtype=np.int64)
            if out.paths is None
            else out.paths
        ),
        "repaths": (np.zeros(len(flows), dtype=np.int64) if out.repaths is None else out.repaths),
    }
    if out.acked_s is not None:  # packet engine: the sender saw every byte acknowledged
        cols["acked_s"] = out.acked_s
    cols.update(flows.extra)
    return cols


def _base_summary(
    sc: Scenario,
    engine: str,
    fabric: Fabric,
    flows: FlowTable,
    out: EngineOutput,
    fct: np.ndarray,
) -> dict[str, Any]:
    """The summary keys every run has, the conservation verdict, and the engine's own keys."""
    done = ~np.isnan(out.finish_s)
    mss, hdr = sc.nic.rdma_data_mss, sc.nic.header_bytes
    summary: dict[str, Any] = {
        "scenario": sc.name,
        "engine": engine,
        "seed": sc.seed,
        "config_hash": sc.config_hash(),
        "flows_total": len(flows),
        "flows_completed": int(done.sum()),
        **percentiles(fct),
        "oversubscription": fabric.oversubscription,
        "bytes_total": int(flows.size_bytes.sum()),
        "bytes_delivered": int(out.delivered_bytes.sum()),
        "wire_bytes_total": int(sum(wire_bytes(int(s), mss, hdr) for s in flows.size_bytes)),
    }
    summary["bytes_conserved"] = bool(
        np.all(out.delivered_bytes[done] == flows.size_bytes[done])
        and np.all(out.delivered_bytes <= flows.size_bytes)
        and out.summary.get("link_counters_match_flows", True)
    )
    summary.update(out.summary)
    return summary
