"""The flow-level engine: event-driven max-min fair sharing over every link a flow crosses.

Rates are re-settled at each batch of simultaneous arrivals, completions and policy timers,
by one of two solvers with one interface (``engine.flow_solver``): the incremental kernel
(:mod:`fabricsim.flowsim.kernel`, the default: repairs only the rates an event breaks, moves
bytes lazily) or the reference (:mod:`fabricsim.flowsim.reference`: re-solves everything and
moves every connection's bytes at every step; the oracle of the tests).  This module is the
part both share: arrivals, dependencies, policy callbacks, completions and the output.

The event loop is compiled with the kernel (``engine.pxd`` types the engine, its connections
and the arrays the loop touches); what stays Python-speed is what calls out: the policy
(``connections``, ``on_finish``, timers, reroutes), path resolution and dependent release.
A compiled engine's methods are overridden in a subclass, not patched on the class.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable, Sequence

import numpy as np

from fabricsim._compat import pd
from fabricsim.config.models import Scenario
from fabricsim.engine_api import EngineOutput, collector_paused, wire_bytes
from fabricsim.flowsim.kernel import MaxMinKernel
from fabricsim.flowsim.paths import LinkShares, PathResolver
from fabricsim.flowsim.reference import ReferenceRates
from fabricsim.lb.base import SPRAY_ALL, PathPolicy
from fabricsim.metrics.summaries import reason_of_flows
from fabricsim.routing.dag import MAX_PATH_LABELS
from fabricsim.routing.router import Router
from fabricsim.topology.fabric import Fabric
from fabricsim.units import ps_to_s
from fabricsim.workloads.base import FlowTable

_ARRIVAL = 0
_TIMER = 1

LIMIT_HOPS = 8
"""Links a path may cross, for the automatic time limit (a three-tier path has 6; a
multi-plane path with its NIC node and an NVLink hop, 8)."""

FALLBACK = 0.5
"""The incremental kernel re-solves every connection once an event's set passes this share."""


def slowest_rate_bps(fabric: Fabric, caps: np.ndarray | None = None) -> float:
    """The lowest rate a connection may be held to: the slowest working link with a rate
    (failed links excluded; degraded, core and NVLink links included), or a lower per-flow
    rate cap; 0 if no link carries anything."""
    rates = np.asarray(fabric.link_rate_bps, dtype=np.float64)
    working = rates[~np.asarray(fabric.link_failed, dtype=bool) & (rates > 0)]
    rate = float(working.min()) if len(working) else 0.0
    if caps is not None:
        capped = np.asarray(caps, dtype=np.float64)
        capped = capped[np.isfinite(capped) & (capped > 0)]
        if len(capped):
            rate = min(rate, float(capped.min())) if rate > 0 else rate
    return rate


class _Conn:
    """One connection of a flow (typed fields when compiled: ``engine.pxd``)."""

    def __init__(self, flow: int, index: int, wire: float, shares: LinkShares | None) -> None:
        self.flow = flow
        self.index = index
        self.wire = wire
        self.shares = shares  # None: the connection cannot be routed
        self.slot = -1
        self.done_s = math.nan
        self.cap = math.inf
        self.delivered = 0.0  # wire bytes, set when the connection completes


class FlowEngine:
    """Run a flow table on a fabric under a path policy (see :func:`fabricsim.run`)."""

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
        self.resolver = PathResolver(sc, router)
        self.progress: Callable[[float], None] | None = None  # called with the simulated time, s
        self.mss, self.hdr = sc.nic.rdma_data_mss, sc.nic.header_bytes
        n, nlinks = len(flows), fabric.num_links
        capacity = np.where(fabric.link_failed, 0.0, fabric.link_rate_bps)
        self.rates: MaxMinKernel | ReferenceRates = (
            ReferenceRates(capacity)
            if sc.engine.flow_solver == "reference"
            else MaxMinKernel(capacity, FALLBACK)
        )
        self.slot_conn: dict[int, _Conn] = {}
        self.now = 0.0
        self.events = 0
        self.heap: list[tuple[float, int, int, object]] = []
        self.seq = 0
        # perf: a list per flow only once it arrives (no 10^5 empty lists for the collector)
        self.conns: list[Sequence[_Conn]] = [()] * n
        self.pending_conns = np.zeros(n, dtype=np.int64)
        self.finish = np.full(n, np.nan)
        self.started = np.full(n, np.nan)
        self.entropy = np.full(n, -1, dtype=np.int64)
        self.labels = [""] * n
        self.waiting_deps = np.zeros(n, dtype=np.int64)
        self.dependents: list[Sequence[int]] = [()] * n  # lists in run(), if any depend
        self.deps: list[Sequence[int]] = []
        self.top_active = np.zeros(len(fabric.top_switches), dtype=np.int64)
        self.top_peak = np.zeros(len(fabric.top_switches), dtype=np.int64)
        self.record = sc.records.timelines
        self.tl_links: list[tuple[np.ndarray, float, np.ndarray]] = []
        self.tl_tops: list[tuple[float, np.ndarray]] = []
        self._last_util = np.full(nlinks, -1.0)
        self.dirty = False
        self.conns_started = 0
        self.stalled = False  # the loop's backstop ended the run (see _max_passes)
        self.limit_cut = False  # the time limit ended the run with work left
        # perf: typed views of the arrays the event loop reads and writes (compiled build)
        self._src = np.ascontiguousarray(flows.src, dtype=np.int64)
        self._dst = np.ascontiguousarray(flows.dst, dtype=np.int64)
        self._start = np.ascontiguousarray(flows.start_s, dtype=np.float64)
        self._pending = self.pending_conns
        self._waiting = self.waiting_deps
        self._act, self._peak = self.top_active, self.top_peak
        self._uplink = np.ascontiguousarray(fabric.host_uplink, dtype=np.int64)

    # -- engine hooks for dynamic policies -------------------------------------------------
    def now_s(self) -> float:
        return self.now

    def schedule(self, at_s: float, callback: Callable[[], None]) -> None:
        self._push(max(at_s, self.now), _TIMER, callback)

    def reroute(self, flow: int, index: int, src_port: int) -> None:
        conn = self.conns[flow][index]
        if conn.slot < 0:
            return
        self._top_count(conn, -1)
        conn.shares = self.resolver.resolve(
            int(self.flows.src[flow]), int(self.flows.dst[flow]), src_port
        )
        links, coefs, cap = self._incidence_of(conn)
        self.rates.reroute(conn.slot, links, coefs, cap, self.now)
        self._top_count(conn, +1)
        self.entropy[flow] = src_port if index == 0 else self.entropy[flow]
        self.dirty = True

    # -- events ----------------------------------------------------------------------------
    def _push(self, t: float, kind: int, payload: object) -> None:
        heapq.heappush(self.heap, (t, kind, self.seq, payload))
        self.seq += 1

    def _arrive(self, flow: int) -> None:
        src, dst = int(self._src[flow]), int(self._dst[flow])  # Python ints: cache keys
        self.started[flow] = self.now
        conns = self.policy.connections(flow)
        self._pending[flow] = len(conns)
        self.conns_started += len(conns)
        first = conns[0].src_port
        if first != SPRAY_ALL and self.resolver.spray == "default":
            first = int(self.resolver.default_ports[0])
        self.entropy[flow] = first
        mine: list[_Conn] = []
        self.conns[flow] = mine
        for i, c in enumerate(conns):
            shares = self.resolver.resolve(src, dst, c.src_port)
            conn = _Conn(flow, i, float(wire_bytes(c.size_bytes, self.mss, self.hdr)), shares)
            mine.append(conn)
            self._activate(conn, c.rate_cap_bps)
        self.dirty = True

    def _activate(self, conn: _Conn, cap: float) -> None:
        conn.cap = cap
        links, coefs, cap_bps = self._incidence_of(conn)
        conn.slot = self.rates.add(links, coefs, cap_bps, conn.wire, self.now)
        self.slot_conn[conn.slot] = conn
        self._top_count(conn, +1)

    def _incidence_of(self, conn: _Conn) -> tuple[np.ndarray, np.ndarray, float]:
        """The links a connection uses, with its share on each, and its rate cap; a
        connection that cannot be routed sits on its host's uplink with cap 0 (it never
        progresses)."""
        shares = conn.shares
        if shares is None:
            up = np.array([self._uplink[self._src[conn.flow]]], dtype=np.int64)
            return up, np.ones(1), 0.0
        return shares.links, shares.coefs, conn.cap

    def _top_count(self, conn: _Conn, delta: int) -> None:
        shares = conn.shares
        if shares is None:
            return
        active, peak, tops = self.top_active, self.top_peak, shares.tops
        if isinstance(tops, np.ndarray):  # many (distinct): one array update
            active[tops] += delta
            peak[tops] = np.maximum(peak[tops], active[tops])
        else:
            act, top = self._act, self._peak
            for i in tops:
                act[i] += delta
                if act[i] > top[i]:
                    top[i] = act[i]
        if self.record:
            self.tl_tops.append((self.now, active.copy()))

    def _complete(self, slot: int) -> None:
        conn = self.slot_conn[slot]
        assert conn is not None
        shares = conn.shares
        conn.done_s = self.now + (ps_to_s(shares.worst_ps) if shares is not None else 0.0)
        self.rates.remove(slot, self.now)
        conn.delivered = conn.wire
        del self.slot_conn[slot]
        conn.slot = -1
        self._top_count(conn, -1)
        flow = conn.flow
        self._pending[flow] -= 1
        if self._pending[flow] == 0:
            done = -math.inf
            for c in self.conns[flow]:
                done = max(done, c.done_s)
            self.finish[flow] = done
            self.policy.on_finish(flow)
            gaps = self.flows.gap_s  # per dependency: the seconds after it finishes
            for nxt in self.dependents[flow]:
                self._waiting[nxt] -= 1
                if self._waiting[nxt] == 0:
                    ready = -math.inf
                    if gaps is None:
                        for d in self.deps[nxt]:
                            ready = max(ready, float(self.finish[d]))
                    else:
                        for d, gap in zip(self.deps[nxt], gaps[nxt], strict=True):
                            ready = max(ready, float(self.finish[d]) + gap)
                    self._push(max(self._start[nxt], ready), _ARRIVAL, nxt)
        self.dirty = True

    def _recompute(self) -> None:
        self.rates.settle(self.now)
        if self.record:
            self._record_links()
        self.dirty = False

    def _record_links(self) -> None:
        links, load = self.rates.link_loads(every=not self.tl_links)  # the first: every link
        util = load / self.fabric.link_nominal_bps[links]
        moved = np.abs(util - self._last_util[links]) > 1e-12
        changed, util = links[moved], util[moved]
        if len(changed):
            self.tl_links.append((changed, self.now, util))
            self._last_util[changed] = util

    # -- main loop ---------------------------------------------------------------------------
    def run(self) -> EngineOutput:
        wall0 = time.perf_counter()
        f = self.flows
        # perf: set-up, loop and output make 10^5-10^6 objects and no cycles worth collecting
        with collector_paused():
            deps: list[Sequence[int]] = [()] * len(f)
            if f.depends_on:
                deps = list(f.depends_on)
                self.dependents = [[] for _ in range(len(f))]
            self.deps = deps
            for flow, dep in enumerate(deps):
                self.waiting_deps[flow] = len(dep)
                for d in dep:
                    self.dependents[d].append(flow)  # type: ignore[attr-defined]
                if not dep:
                    self._push(float(f.start_s[flow]), _ARRIVAL, flow)
            ports = self.policy.known_ports()
            if ports is not None:  # perf: every flow's path in one batch
                self.resolver.prefetch(f.src, f.dst, ports)
            limit = self._time_limit()
            self._loop(limit)
            if self.progress is not None:
                self.progress(self.now)
            return self._output(time.perf_counter() - wall0, limit)

    def _loop(self, limit: float) -> None:
        stuck = False  # the last pass changed nothing: time must move on by at least one step
        passes = 0
        progress, last_call = self.progress, time.perf_counter()
        while True:
            if progress is not None and passes & 255 == 0:  # a clock read every 256 passes
                now = time.perf_counter()
                if now - last_call >= 0.1:
                    progress(self.now)
                    last_call = now
            t_next = self.heap[0][0] if self.heap else math.inf
            t_done = self.rates.next_done(self.now)
            t = min(t_next, t_done)
            if stuck:  # now + dt == now in floating point: step to the next representable time
                t = min(t_next, max(t_done, math.nextafter(self.now, math.inf)))
            if not math.isfinite(t) or t > limit:
                self.limit_cut = math.isfinite(t)
                self._advance(min(limit, t) if math.isfinite(t) else self.now, False)
                self.rates.finalize(self.now)
                break
            passes += 1
            if passes > self._max_passes():  # cannot happen while time advances; never hang
                self.stalled = True
                self.rates.finalize(self.now)
                break
            now0, events0 = self.now, self.events
            if stuck:
                self._advance(t, True)
            else:
                self._advance(t, False)
            self._process_completions()
            while self.heap and self.heap[0][0] <= self.now:
                _, kind, _, payload = heapq.heappop(self.heap)
                self.events += 1
                if kind == _ARRIVAL:
                    self._arrive(payload)  # type: ignore[arg-type]
                else:
                    payload()  # type: ignore[operator]
            stuck = self.now == now0 and self.events == events0 and not self.dirty
            if self.dirty:
                self._recompute()

    def _max_passes(self) -> int:
        """Passes of the main loop a run may take: each pass pops an event, completes a
        connection, or (at most twice per completion) moves time on; a backstop, never reached."""
        return 4 * (self.seq + self.conns_started) + 64

    def _advance(self, t: float, clamp: bool) -> None:
        self.rates.advance(self.now, t, clamp)
        self.now = t

    def _process_completions(self) -> None:
        for slot in self.rates.done(self.now):
            self.events += 1
            self._complete(slot)

    def _time_limit(self) -> float:
        """``engine.time_limit_s``, else a bound no max-min run reaches: the last start plus
        twice every wire byte crossing :data:`LIMIT_HOPS` links at the slowest rate any
        connection may get (the slowest working link, degraded and core links included,
        or the lowest per-flow rate cap), plus 1 s; the gaps dependent flows wait
        (:meth:`FlowTable.gaps_bound_s`) are added to the last start.

        While a flow is active some link on its path is saturated, so the fabric moves at
        least that rate of (flow, link) bytes; a run with work left past the bound has a
        flow that cannot move (a failed path), and that run ends when nothing can move.
        """
        if self.sc.engine.time_limit_s is not None:
            return float(self.sc.engine.time_limit_s)
        f = self.flows
        rate = slowest_rate_bps(self.fabric, f.extra.get("rate_cap_bps"))
        total = float(np.sum(f.size_bytes)) * (1 + self.hdr / self.mss) * 8
        if not rate > 0:  # no link carries anything: the run ends when nothing can move
            return math.inf
        last = float(np.max(f.start_s, initial=0.0)) + f.gaps_bound_s()
        return last + 2 * LIMIT_HOPS * total / rate + 1.0

    def _wire_delivered(self, conn: _Conn) -> float:
        if conn.slot >= 0:  # still active (unfinished)
            return conn.wire - max(self.rates.remaining_bytes(conn.slot, self.now), 0.0)
        return conn.delivered

    def _conservation_ok(self) -> bool:
        """Bytes counted on each host uplink = wire bytes its connections delivered."""
        per_host = np.zeros(self.fabric.num_hosts)
        for flow, conns in enumerate(self.conns):
            per_host[self.flows.src[flow]] += sum(self._wire_delivered(c) for c in conns)
        on_links = np.asarray(self.rates.link_bytes)[self.fabric.host_uplink]
        ok_links = np.allclose(on_links, per_host, rtol=1e-6, atol=1.0)
        ok_flows = all(
            abs(self._wire_delivered(c) - c.wire) <= 1e-6 * c.wire + 1.0
            for flow, conns in enumerate(self.conns)
            if not math.isnan(self.finish[flow])
            for c in conns
        )
        return bool(ok_links and ok_flows)

    def _output(self, wall: float, limit: float) -> EngineOutput:
        f, fab = self.flows, self.fabric
        n = len(f)
        delivered = np.zeros(n)
        counts = np.zeros(n, dtype=np.int64)
        for flow in range(n):
            conns = self.conns[flow]
            wire_total = sum(c.wire for c in conns)
            wire_done = sum(self._wire_delivered(c) for c in conns)
            if math.isnan(self.finish[flow]):
                frac = wire_done / wire_total if wire_total else 0.0
                delivered[flow] = min(np.floor(f.size_bytes[flow] * frac), f.size_bytes[flow] - 1)
            else:
                delivered[flow] = f.size_bytes[flow]
            self.labels[flow], counts[flow] = self._path_column(conns)
        tops = [fab.node_names[s] for s in fab.top_switches]
        out = EngineOutput(
            finish_s=self.finish,
            delivered_bytes=delivered.round().astype(np.int64),
            path=self.labels,
            entropy=self.entropy,
            start_s=self.started,
            paths=counts,
            summary={
                "events": int(self.events),
                "link_counters_match_flows": self._conservation_ok(),
                "sim_end_s": float(min(self.now, limit)),
                "spine_peak_flows": {tops[i]: int(v) for i, v in enumerate(self.top_peak)},
            },
            timing={
                "wall_s": wall,
                "events": self.events,
                "events_per_s": self.events / max(wall, 1e-9),
            },
        )
        # the limit ended the run with flows still going (not after the last one, on a timer)
        out.summary["time_limit_reached"] = bool(self.limit_cut and np.isnan(self.finish).any())
        out.summary["not_completed_reason"] = self._not_completed_reason(limit)
        if self.stalled:
            out.summary["stalled"] = True  # unfinished flows are reported with finish NaN
        if self.record:
            out.tables.update(self._timeline_tables(tops))
        return out

    def _not_completed_reason(self, limit: float) -> str | None:
        """Why the unfinished flows did not complete (``None`` if every flow did)."""
        fab = self.fabric
        failed = np.asarray(fab.link_failed, dtype=bool) | (np.asarray(fab.link_rate_bps) <= 0)
        cut = f"time limit {limit:g} s reached" if self.limit_cut else None
        if self.stalled:
            cut = "the engine's loop backstop ended the run"

        def why(flow: int) -> tuple[str | None, list[str]]:
            conns = [c for c in self.conns[flow] if c.slot >= 0]  # the unfinished ones
            shares = [c.shares for c in conns]
            if any(sh is None for sh in shares):
                return "no route (every path crosses a failed link)", []
            links = dict.fromkeys(x for sh in shares if sh is not None for x in sh.links.tolist())
            dead = [fab.link_names[x] for x in links if failed[x]]
            if dead:
                return None, dead  # black-holed: it cannot move
            if not self.conns[flow] and self._waiting[flow] > 0:
                return cut or "waiting on flows that did not complete", []
            return cut, []

        return reason_of_flows(why(f) for f in np.flatnonzero(np.isnan(self.finish)).tolist())

    def _path_column(self, conns: Sequence[_Conn]) -> tuple[str, int]:
        """The flow's paths by name (empty past :data:`MAX_PATH_LABELS`, as the packet engine
        writes it) and how many (the ``paths`` column); a connection spread over more paths
        than that is counted, not named, so a flow of several such connections counts the
        most any one of them takes (a lower bound if they spread over different paths)."""
        fab = self.fabric
        labels: dict[str, None] = {}
        unnamed = 0
        for c in conns:
            shares = c.shares
            if shares is None:
                continue
            if shares.named:
                labels.update(dict.fromkeys(fab.path_label(p) for p in shares.named))
            else:
                unnamed = max(unnamed, shares.paths)
        n = max(len(labels), unnamed)
        return ("" if n > MAX_PATH_LABELS else ";".join(labels)), n

    def _timeline_tables(self, tops: list[str]) -> dict[str, pd.DataFrame]:
        names = np.array(self.fabric.link_names)
        if self.tl_links:
            links = np.concatenate([c for c, _, _ in self.tl_links])
            times = np.concatenate([np.full(len(c), t) for c, t, _ in self.tl_links])
            util = np.concatenate([u for _, _, u in self.tl_links])
        else:
            links, times, util = np.empty(0, dtype=np.int64), np.empty(0), np.empty(0)
        links_df = pd.DataFrame(
            {"link": names[links], "time_s": times, "utilization": util, "queue_bytes": 0.0}
        )
        # perf: columns, not one tuple per (time, spine): rows = changes x spines can be millions
        n_top = len(tops)
        if not (self.tl_tops and n_top):
            spine_df = pd.DataFrame([], columns=["spine", "time_s", "active_flows"])
            return {"timeline_links": links_df, "timeline_spine_flows": spine_df}
        # One row per (spine, time), the last count at that time.  Times never decrease, so
        # keeping the last record of each run of equal times is drop_duplicates(keep="last").
        t_rec = np.array([t for t, _ in self.tl_tops], dtype=np.float64)
        keep = np.flatnonzero(np.r_[t_rec[1:] != t_rec[:-1], True])
        counts = np.stack([self.tl_tops[i][1] for i in keep]).astype(np.int64).ravel()
        names_col = np.empty(len(keep) * n_top, dtype=object)
        names_col[:] = np.tile(np.array(tops, dtype=object), len(keep))
        spine_df = pd.DataFrame(
            {"spine": names_col, "time_s": np.repeat(t_rec[keep], n_top), "active_flows": counts}
        )
        return {"timeline_links": links_df, "timeline_spine_flows": spine_df}
