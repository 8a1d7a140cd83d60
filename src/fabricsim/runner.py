"""Run a scenario on an engine and assemble the :class:`~fabricsim.metrics.Result`."""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fabricsim import workloads
from fabricsim.config.applicability import check_keys_apply
from fabricsim.config.loader import load_scenario
from fabricsim.config.models import Scenario
from fabricsim.engine_api import EngineOutput, wire_bytes
from fabricsim.errors import ConfigError, EngineRefusal
from fabricsim.experiments.budget import check_budget
from fabricsim.flowsim.engine import FlowEngine
from fabricsim.flowsim.open_loop import OpenLoopEngine
from fabricsim.lb import PolicyContext, make_policy
from fabricsim.lb.base import with_rate_caps
from fabricsim.metrics import workload_summaries  # noqa: F401  (registers the summarizers)
from fabricsim.metrics.results import Result, percentiles
from fabricsim.metrics.summaries import RunContext, summarizers_for
from fabricsim.packetsim.engine import PacketEngine
from fabricsim.rng import stream
from fabricsim.routing.router import Router
from fabricsim.topology import Fabric, fabric_for
from fabricsim.workloads.base import FlowTable

ENGINES = ("flow", "packet")


def fabric_of(sc: Scenario) -> Fabric:
    """The scenario's fabric (built once per distinct topology in a process).

    A shorthand of :func:`fabricsim.topology.fabric_for` for the layers above the engines.
    """
    return fabric_for(sc.topology)


def router_of(sc: Scenario, fabric: Fabric) -> Router:
    """The scenario's router on ``fabric``: :meth:`fabricsim.routing.Router.for_scenario`."""
    return Router.for_scenario(sc, fabric)


def check_engine(sc: Scenario, engine: str) -> None:
    """Raise :class:`EngineRefusal` (one line) if ``engine`` cannot answer this scenario."""
    if engine not in ENGINES:
        raise ConfigError(f"--engine: must be one of {', '.join(ENGINES)} (got {engine!r})")
    check_keys_apply(sc, engine, sc.varied_keys)
    if engine == "flow":
        rec = sc.records
        packet_records = [
            k
            for k in ("uet_monitor", "uet_transport_stats", "switch_lb_stats", "port_stats")
            if getattr(rec, k)
        ]
        if packet_records:
            raise EngineRefusal(
                f"records.{packet_records[0]} is packet-level detail the flow engine does not "
                "model; use --engine packet"
            )
        if sc.topology.link_failures:
            raise EngineRefusal(
                "topology.link_failures (links failing mid-run) needs the packet engine; "
                "use --engine packet"
            )
        if sc.switch.load_balancing_method != "ecmp":
            raise EngineRefusal(
                f"switch.load_balancing_method={sc.switch.load_balancing_method} acts per packet "
                "on queue state; use --engine packet"
            )
    else:
        if sc.lb.policy == "ideal_spray":
            raise EngineRefusal(
                "lb.policy=ideal_spray is the flow engine's ideal split; use --engine flow"
            )


def estimated_packets(sc: Scenario, flows: FlowTable) -> int:
    """Data packets the packet engine would send (no retransmissions)."""
    return int(np.sum(-(-flows.size_bytes // sc.nic.rdma_data_mss)))


def _run_engine(
    sc: Scenario, engine: str, fabric: Fabric, router: Router, flows: FlowTable
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
    out: EngineOutput = eng.run()
    out.summary.update(policy.summary())
    return out


def run(scenario: str | Path | dict[str, Any] | Scenario, engine: str | None = None) -> Result:
    """Run a scenario and return its :class:`~fabricsim.metrics.Result`.

    Parameters
    ----------
    scenario
        Built-in name, YAML path, dict, or :class:`Scenario`.
    engine
        ``"flow"`` or ``"packet"``; default: the scenario's ``engine.kind``.

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
    if engine == "packet" and estimated_packets(sc, flows) > sc.engine.max_packets:
        raise EngineRefusal(
            f"scenario '{sc.name}' needs about {estimated_packets(sc, flows):.2g} data packets, over "
            f"engine.max_packets={sc.engine.max_packets:.2g}; use --engine flow or a smaller workload"
        )
    out = _run_engine(sc, engine, fabric, router, flows)
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
    names = np.array(fabric.host_names)
    df = pd.DataFrame(
        {
            "flow_id": np.arange(len(flows), dtype=np.int64),
            "src": names[flows.src],
            "dst": names[flows.dst],
            "size_bytes": flows.size_bytes,
            "start_s": start,
            "finish_s": out.finish_s,
            "fct_s": fct,
            "path": out.path,
            "entropy": out.entropy,
        }
    )
    for col, values in flows.extra.items():
        df[col] = values
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
    rerun = functools.partial(_run_engine, sc, engine, fabric, router)
    ctx = RunContext(sc, engine, fabric, router, flows, out, fct, rerun)
    for fn in summarizers_for(sc.workload.kind):
        extra = fn(ctx)
        for col, values in extra.pop("_columns", {}).items():
            df[col] = values
        summary.update(extra)
    timing = {**out.timing, "total_wall_s": wall}
    return Result(sc, summary, df, timing, dict(out.tables), dict(out.json_records))
