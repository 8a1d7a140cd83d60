"""Step 1 of the decomposed engine: every flow's links, as the flow engine routes it.

The routes are the flow engine's own: the engine runs the scenario once (max-min rates, the
real hash, salts, failures, the path policy with its dynamic choices such as ARK's
reservations, spraying as link shares) and each flow's connections are read back.  Nothing of
the routing is repeated here.  A flow becomes rows of ``(link, share)``: the share of its wire
bytes that crosses the link (1 on a link every path takes, ``1/k`` on one of ``k`` even paths),
with the propagation delay before and after the link on the flow's path, which the link
simulation keeps (:mod:`fabricsim.decomposed.link_fabric`).

Examples
--------
>>> from fabricsim.experiments.runner import build
>>> b = build("ecmp-collision", "flow")
>>> r = route_flows(b.sc, b.fabric, b.router, b.flows, b.policy)
>>> int(r.ptr[1] - r.ptr[0]), float(r.coef[0]), bool(np.isfinite(r.ideal_s).all())
(4, 1.0, True)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fabricsim.config.models import Scenario
from fabricsim.engine_api import EngineOutput
from fabricsim.flowsim.engine import FlowEngine
from fabricsim.lb.base import PathPolicy
from fabricsim.routing.router import Router
from fabricsim.topology.fabric import Fabric
from fabricsim.units import ps_to_s
from fabricsim.workloads.base import FlowTable


@dataclass(eq=False)
class Routes:
    """Every flow's links (rows ``ptr[f]:ptr[f+1]``), in flow-id order."""

    ptr: np.ndarray
    """int64 (flows + 1): where each flow's rows start."""
    link: np.ndarray
    """int64 per row: the link."""
    coef: np.ndarray
    """float64 per row: the flow's share of its wire bytes on the link."""
    prefix_ps: np.ndarray
    """int64 per row: propagation delay from the sender to the link."""
    suffix_ps: np.ndarray
    """int64 per row: propagation delay from the link's far end to the receiver."""
    feed: np.ndarray
    """int64 per row: the switch-to-switch link feeding the link on the flow's path (-1: the
    link is the sender's own, it follows the sender's own link, or no named path has it)."""
    wire_bytes: np.ndarray
    """float64 per flow: its bytes on the wire (payload and headers)."""
    rate_bps: np.ndarray
    """float64 per flow: its rate alone on the idle fabric (0: it cannot move)."""
    ideal_s: np.ndarray
    """float64 per flow: its FCT alone on the idle fabric (inf: it cannot finish)."""
    start_s: np.ndarray
    """float64 per flow: when it started in the routing run (its ``start_s``)."""
    flow_out: EngineOutput
    """The flow engine's output of the routing run (path labels, entropy, paths)."""

    def rows(self, flow: int) -> slice:
        return slice(int(self.ptr[flow]), int(self.ptr[flow + 1]))


def route_flows(
    sc: Scenario, fabric: Fabric, router: Router, flows: FlowTable, policy: PathPolicy
) -> Routes:
    """Run the flow engine on the scenario and read back every flow's link shares.

    The policy's hooks point at the routing run while it lasts (a dynamic policy decides
    there), then back at whatever they pointed to.
    """
    eng = FlowEngine(sc, fabric, router, flows, policy)
    ctx = policy.ctx
    hooks, ctx.hooks = ctx.hooks, eng
    try:
        out = eng.run()
    finally:
        ctx.hooks = hooks
    return _read_back(eng, fabric, flows, out)


def _read_back(eng: FlowEngine, fabric: Fabric, flows: FlowTable, out: EngineOutput) -> Routes:
    n = len(flows)
    capacity = np.where(fabric.link_failed, 0.0, fabric.link_rate_bps)
    delay = fabric.link_delay_ps.astype(np.int64)
    rank = np.asarray(fabric.node_rank, dtype=np.int64)
    counts = np.zeros(n + 1, dtype=np.int64)
    parts: list[tuple[np.ndarray, ...]] = []
    wire = np.zeros(n)
    rate = np.zeros(n)
    ideal = np.full(n, np.inf)
    for flow in range(n):
        conns = eng.conns[flow]
        total = float(sum(c.wire for c in conns))
        wire[flow] = total
        routed = [c for c in conns if c.shares is not None]
        if not routed or len(routed) < len(conns) or total <= 0:
            continue  # unroutable: no rows, it cannot finish
        links, coefs = _combined(routed, total)
        pre, post, feed = _around(routed, links, delay, rank, fabric)
        parts.append((links, coefs, pre, post, feed))
        counts[flow + 1] = len(links)
        caps = sum(c.cap for c in routed)
        with np.errstate(divide="ignore"):
            r = float(np.min(capacity[links] / coefs))
        rate[flow] = min(r, caps)
        if rate[flow] > 0:
            worst = max(c.shares.worst_ps for c in routed if c.shares is not None)
            ideal[flow] = total * 8 / rate[flow] + ps_to_s(worst)
    cat = (lambda i, dt: np.concatenate([p[i] for p in parts]).astype(dt)) if parts else None
    return Routes(
        ptr=np.cumsum(counts),
        link=cat(0, np.int64) if cat else np.zeros(0, np.int64),
        coef=cat(1, np.float64) if cat else np.zeros(0),
        prefix_ps=cat(2, np.int64) if cat else np.zeros(0, np.int64),
        suffix_ps=cat(3, np.int64) if cat else np.zeros(0, np.int64),
        feed=cat(4, np.int64) if cat else np.zeros(0, np.int64),
        wire_bytes=wire,
        rate_bps=rate,
        ideal_s=ideal,
        start_s=np.asarray(out.start_s if out.start_s is not None else flows.start_s, dtype=float),
        flow_out=out,
    )


def _combined(conns: list, total: float) -> tuple[np.ndarray, np.ndarray]:
    """The flow's links and its share of its wire bytes on each (connections summed)."""
    if len(conns) == 1:
        s = conns[0].shares
        return np.asarray(s.links, dtype=np.int64), np.asarray(s.coefs, dtype=np.float64)
    links = np.concatenate([c.shares.links for c in conns])
    coefs = np.concatenate([c.shares.coefs * (c.wire / total) for c in conns])
    uniq, inv = np.unique(links, return_inverse=True)
    return uniq.astype(np.int64), np.bincount(inv, weights=coefs)


def _around(
    conns: list, links: np.ndarray, delay: np.ndarray, rank: np.ndarray, fabric: Fabric
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Propagation before and after each link on the flow's path, and the link feeding it.

    From the first named path that crosses the link; a link on no named path (a flow over
    more paths than are named) is placed by rank on an up-down path whose top is the highest
    node the flow reaches, each hop at the link's own delay.
    """
    pre = np.full(len(links), -1, dtype=np.int64)
    post = np.zeros(len(links), dtype=np.int64)
    feed = np.full(len(links), -1, dtype=np.int64)
    where = {int(x): i for i, x in enumerate(links.tolist())}
    for c in conns:
        for path in c.shares.named:
            d = delay[list(path)]
            before = np.cumsum(d) - d
            after = int(d.sum()) - before - d
            for j, x in enumerate(path):
                i = where.get(int(x))
                if i is not None and pre[i] < 0:
                    pre[i], post[i] = before[j], after[j]
                    if j > 1:  # fed by a switch-to-switch link (j == 1: by the sender's own)
                        feed[i] = path[j - 1]
    if (pre < 0).any():
        top = int(max(rank[fabric.link_src[links]].max(), rank[fabric.link_dst[links]].max()))
        for i in np.flatnonzero(pre < 0).tolist():
            x = int(links[i])
            lo, hi = int(rank[fabric.link_src[x]]), int(rank[fabric.link_dst[x]])
            hops_before = lo if hi > lo else 2 * top - lo
            pre[i] = hops_before * int(delay[x])
            post[i] = max(2 * top - hops_before - 1, 0) * int(delay[x])
    return pre, post, feed
