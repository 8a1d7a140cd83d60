"""Step 2 of the decomposed engine: each loaded link's workload, and what a link adds.

A link's workload is every flow that crosses it (a *sub-flow* per route row,
:class:`fabricsim.decomposed.routes.Routes`): the flow's bytes on the link (its share of the
flow's payload), its start, its sender's rate into the link (the sender's NIC rate times the
share: a flow sprayed over ``k`` paths feeds each at ``1/k`` of it), and the propagation
before and after the link.  A link is *quiet* when it cannot queue: no two of its sub-flows
overlap in time, even at twice their ideal duration, and none arrives faster than the link
drains it.  A quiet link adds no delay and is not simulated.

Examples
--------
>>> from fabricsim.experiments.runner import build
>>> from fabricsim.decomposed.routes import route_flows
>>> b = build("ecmp-collision", "flow")
>>> w = link_workloads(route_flows(b.sc, b.fabric, b.router, b.flows, b.policy), b.fabric, b.flows)
>>> len(w.links), int(w.count.sum())  # 8 uplinks, 8 downlinks, the 12 spine links hashed to
(28, 32)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fabricsim.decomposed.routes import Routes
from fabricsim.topology.fabric import Fabric
from fabricsim.workloads.base import FlowTable

UP, MIDDLE, DOWN = 0, 1, 2
"""Where a link sits: a host's uplink (its NIC queues), between switches, into a host."""

QUIET_SLACK = 2.0
"""A sub-flow occupies its link for this many times its ideal duration in the quiet test."""


@dataclass(eq=False)
class LinkWorkloads:
    """The sub-flows of every loaded link, grouped by link (rows ``ptr[i]:ptr[i+1]`` of
    the i-th loaded link ``links[i]``, in link-id order)."""

    links: np.ndarray
    """int64: the loaded links, ascending."""
    ptr: np.ndarray
    """int64 (links + 1): each link's rows in the arrays below."""
    count: np.ndarray
    """int64 per link: its sub-flows."""
    position: np.ndarray
    """int8 per link: UP, MIDDLE or DOWN."""
    quiet: np.ndarray
    """bool per link: it cannot queue (not simulated, adds no delay)."""
    flow: np.ndarray
    """int64 per row: the flow."""
    row: np.ndarray
    """int64 per row: its row in :class:`Routes` (the flow's share on this link)."""
    size_bytes: np.ndarray
    """int64 per row: the payload bytes of the flow that cross the link (at least 1)."""
    start_s: np.ndarray
    sender_bps: np.ndarray
    """float64 per row: the rate at which the sub-flow can arrive."""
    wire_bytes: np.ndarray
    """float64 per row: its wire bytes on the link."""

    def rows(self, i: int) -> slice:
        return slice(int(self.ptr[i]), int(self.ptr[i + 1]))


def link_workloads(routes: Routes, fabric: Fabric, flows: FlowTable) -> LinkWorkloads:
    """Group the route rows by link (flows that cannot finish are left out)."""
    n = len(flows)
    per_flow = np.diff(routes.ptr)
    flow_of_row = np.repeat(np.arange(n, dtype=np.int64), per_flow)
    keep = np.isfinite(routes.ideal_s)[flow_of_row]
    rows = np.flatnonzero(keep)
    order = rows[np.argsort(routes.link[rows], kind="stable")]
    link = routes.link[order]
    flow = flow_of_row[order]
    coef = routes.coef[order]
    links, first, count = np.unique(link, return_index=True, return_counts=True)
    ptr = np.append(first, len(order)).astype(np.int64)
    size = np.maximum(np.rint(flows.size_bytes[flow] * coef), 1).astype(np.int64)
    nic = fabric.link_rate_bps[fabric.host_uplink[flows.src[flow]]]
    sender = nic * coef
    wire = routes.wire_bytes[flow] * coef
    start = routes.start_s[flow]
    position = np.full(len(links), MIDDLE, dtype=np.int8)
    position[fabric.link_src[links] < fabric.num_hosts] = UP
    position[fabric.link_dst[links] < fabric.num_hosts] = DOWN
    out = LinkWorkloads(
        links=links.astype(np.int64),
        ptr=ptr,
        count=count.astype(np.int64),
        position=position,
        quiet=np.zeros(len(links), dtype=bool),
        flow=flow,
        row=order.astype(np.int64),
        size_bytes=size,
        start_s=start,
        sender_bps=sender,
        wire_bytes=wire,
    )
    out.quiet = _quiet(out, fabric.link_rate_bps[links])
    return out


def _quiet(w: LinkWorkloads, rate_bps: np.ndarray) -> np.ndarray:
    """Per link: no two sub-flows overlap (at QUIET_SLACK times their duration at the
    slower of sender and link) and no sender outruns the link."""
    quiet = np.zeros(len(w.links), dtype=bool)
    dur = (
        QUIET_SLACK
        * w.wire_bytes
        * 8
        / np.maximum(np.minimum(w.sender_bps, np.repeat(rate_bps, w.count)), 1.0)
    )
    end = w.start_s + dur
    fast = w.sender_bps > np.repeat(rate_bps, w.count) * (1 + 1e-9)
    for i in range(len(w.links)):
        r = w.rows(i)
        if fast[r].any():
            continue
        if w.count[i] == 1:
            quiet[i] = True
            continue
        o = np.argsort(w.start_s[r], kind="stable")
        s, e = w.start_s[r][o], end[r][o]
        quiet[i] = bool((s[1:] >= np.maximum.accumulate(e)[:-1]).all())
    return quiet
