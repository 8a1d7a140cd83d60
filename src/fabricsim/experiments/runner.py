"""Run a scenario on an engine and assemble the :class:`~fabricsim.metrics.Result`.

One run: fabric -> router -> workload -> policy -> engine -> summarizers.  The experiments
(:mod:`~fabricsim.experiments.compare`, :mod:`~fabricsim.experiments.study`,
:mod:`~fabricsim.experiments.sweep`) call :func:`run` once per run spec (``fabricsim.run`` is
:func:`run`).
"""

from __future__ import annotations

import functools
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from fabricsim import workloads
from fabricsim.config.loader import load_scenario
from fabricsim.config.models import Scenario
from fabricsim.engine_api import EngineOutput, wire_bytes
from fabricsim.experiments.budget import check_budget
from fabricsim.experiments.engines import ENGINES as _REGISTRY
from fabricsim.experiments.engines import check_flows_supported, check_supported
from fabricsim.flowsim.engine import FlowEngine
from fabricsim.flowsim.open_loop import OpenLoopEngine
from fabricsim.lb import PolicyContext, make_policy
from fabricsim.lb.base import with_rate_caps
from fabricsim.metrics import workload_summaries  # noqa: F401  (registers the summarizers)
from fabricsim.metrics.results import Columns, Result, percentiles
from fabricsim.metrics.summaries import (
    RunContext,
    completion_keys,
    not_completed_warning,
    summarizers_for,
)
from fabricsim.packetsim.engine import PacketEngine
from fabricsim.rng import stream
from fabricsim.routing.router import Router
from fabricsim.topology import Fabric, fabric_for
from fabricsim.workloads.base import FlowTable

ENGINES = tuple(_REGISTRY)  # the registered engines' names (--engine)


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


def _run_engine(
    sc: Scenario,
    engine: str,
    fabric: Fabric,
    router: Router,
    flows: FlowTable,
    progress: Progress | None = None,
) -> EngineOutput:
    ctx = PolicyContext(sc, fabric, router, flows, stream(sc.seed, "policy"))
    policy = with_rate_caps(make_policy(ctx), flows)  # per-flow pacing caps (rate_based)
    if engine == "flow" and sc.engine.flow_model == "open_loop":
        eng: Any = OpenLoopEngine(sc, fabric, router, flows, policy)
    elif engine == "flow":
        eng = FlowEngine(sc, fabric, router, flows, policy)
    else:
        eng = PacketEngine(sc, fabric, router, flows, policy)
    ctx.hooks = eng
    if progress is not None and hasattr(
        eng, "progress"
    ):  # the open-loop engine has no loop to watch
        expected = expected_end_s(fabric, flows)
        eng.progress = lambda now_s: progress(now_s, expected)
    out: EngineOutput = eng.run()
    out.summary.update(policy.summary())
    return out


def run(
    scenario: str | Path | dict[str, Any] | Scenario,
    engine: str | None = None,
    *,
    progress: Progress | None = None,
) -> Result:
    """Run a scenario and return its :class:`~fabricsim.metrics.Result`.

    Parameters
    ----------
    scenario
        Built-in name, YAML path, dict, or :class:`Scenario`.
    engine
        ``"flow"`` or ``"packet"``; default: the scenario's ``engine.kind``.
    progress
        Called as ``progress(simulated_s, expected_end_s)`` every 0.1 s or so of wall time
        while the engine runs, and once at its end (the results do not depend on it).

    Examples
    --------
    >>> res = run("ecmp-collision")
    >>> res.summary["flows_total"], res.summary["flows_completed"]
    (8, 8)
    """
    wall0 = time.perf_counter()
    sc = load_scenario(scenario)
    engine = engine or sc.engine.kind
    check_engine(sc, engine)
    check_budget(sc, engine)  # before anything is allocated
    if engine != sc.engine.kind:  # the workload may depend on the engine (e.g. MoE pacing)
        sc = sc.with_overrides({"engine.kind": engine})
    fabric = fabric_of(sc)
    router = router_of(sc, fabric)
    flows = workloads.generate(sc, fabric)
    check_flows_supported(sc, engine, flows)  # engine.max_packets, before the engine allocates
    out = _run_engine(sc, engine, fabric, router, flows, progress)
    return _assemble(sc, engine, fabric, router, flows, out, time.perf_counter() - wall0)


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
