"""The open-loop fluid engine (``engine.flow_model: open_loop``): senders without feedback.

The model of ``003_*.txt``'s analysis.  Each sender injects on its own, blind to the network:

* ``round_robin`` (flows without ``rate_cap_bps``): a sender splits its NIC rate equally among
  its active flows (processor sharing: each active flow gets ``c_i / k_i(t)``);
* paced (flows with ``rate_cap_bps``, the ``rate_based`` scheduler): every flow is sent at its
  own rate from its start until its last byte.

The fabric between the NICs is non-blocking (the engine refuses oversubscribed fabrics):
injected bytes go straight to the receiver's downlink queue, which serves at the receiver's
line rate, first come first served; whatever arrives faster accumulates as backlog.  The
queue is exact between events (arrival rates are piecewise constant, so ``Q <- max(0, Q +
(lambda - c) dt)`` is exact), and a flow's last byte leaves the queue ``Q_j(t) / c_j`` after
it arrives.  A flow finishes at that departure plus one unloaded path delay (propagation
and one packet's store-and-forward, as the max-min engine adds); propagation is applied after
the queue, which is exact when all paths into a receiver have the same delay.  Sizes count
wire bytes (payload plus one header per packet).  ``lb.policy`` has no effect (no paths).

Tables: ``timeline_backlog`` (every event time: total backlog, the hot receiver's queue and
arrival rate, active flows and destinations per sender, receiver utilization; at most 20,000
rows), and with ``records.timelines`` ``timeline_links`` (host links' utilization and queue
bytes, sampled).  The hot receiver is the one with the largest load over its line rate.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from fabricsim._compat import LazyModule, pd
from fabricsim.config.models import Scenario
from fabricsim.engine_api import EngineOutput, wire_bytes_array
from fabricsim.errors import EngineRefusal
from fabricsim.lb.base import PathPolicy
from fabricsim.routing.dag import PairDags
from fabricsim.routing.router import Router
from fabricsim.topology.fabric import Fabric
from fabricsim.workloads.base import FlowTable

if TYPE_CHECKING:
    from fabricsim.workloads import moe
else:  # perf: a run imports the generators of its own workload kind only
    moe = LazyModule("fabricsim.workloads.moe")

MAX_ROWS = 20_000
_ROW_COLUMNS = (
    "time_s",
    "backlog_bytes",
    "hot_queue_bytes",
    "hot_arrival_bps",
    "active_flows",
    "active_senders",
    "receiver_utilization",
)


def round_robin_ends(start_s: np.ndarray, wire: np.ndarray, rate_bytes_s: float) -> np.ndarray:
    """When each of one sender's flows injects its last byte under round robin (processor sharing).

    All active flows progress at ``rate / k``; with one common start the flows end in order
    of size (closed form), otherwise a virtual-service event loop handles arrivals.

    Examples
    --------
    Sizes 1, 2, 3 at rate 1: three share until t=3, two until t=5, the last ends at t=6.

    >>> round_robin_ends(np.zeros(3), np.array([3.0, 1.0, 2.0]), 1.0).tolist()
    [6.0, 3.0, 5.0]
    """
    n = len(wire)
    if np.all(start_s == start_s[0]):
        order = np.argsort(wire, kind="stable")
        s = wire[order].astype(np.float64)
        step = np.diff(s, prepend=0.0) * (n - np.arange(n))
        out = np.empty(n)
        out[order] = start_s[0] + np.cumsum(step) / rate_bytes_s
        return out
    return _processor_sharing(start_s, wire.astype(np.float64), rate_bytes_s)


def _processor_sharing(start_s: np.ndarray, wire: np.ndarray, rate: float) -> np.ndarray:
    order = np.argsort(start_s, kind="stable")
    end = np.empty(len(wire))
    heap: list[tuple[float, int]] = []
    served, t, i, n = 0.0, float(start_s[order[0]]), 0, len(wire)
    stuck = False  # the last pass changed nothing: time must move on by at least one step
    while i < n or heap:
        t_arr = float(start_s[order[i]]) if i < n else math.inf
        k = len(heap)
        t_fin = t + (heap[0][0] - served) * k / rate if heap else math.inf
        t_next = min(t_arr, t_fin)
        if stuck:  # t + dt == t in floating point: step to the next representable time
            t_next = min(t_arr, max(t_fin, math.nextafter(t, math.inf)))
        if heap:
            served += (t_next - t) * rate / k
        before = (t, len(heap), i)
        t = t_next
        while heap and heap[0][0] <= served + 1e-12 * abs(heap[0][0]):
            end[heapq.heappop(heap)[1]] = t
        while i < n and start_s[order[i]] <= t:
            f = int(order[i])
            heapq.heappush(heap, (served + wire[f], f))
            i += 1
        stuck = (t, len(heap), i) == before
    return end


class OpenLoopEngine:
    """Run a flow table open loop (see the module docstring and :func:`fabricsim.run`)."""

    def __init__(
        self, sc: Scenario, fabric: Fabric, router: Router, flows: FlowTable, policy: PathPolicy
    ) -> None:
        if len(fabric.leaves) > 1 and fabric.oversubscription > 1 + 1e-9:  # one leaf: a crossbar
            raise EngineRefusal(
                f"engine.flow_model=open_loop models a non-blocking fabric (queues only at the "
                f"receiving NICs); this one is {fabric.oversubscription:g}:1 oversubscribed — use "
                "engine.flow_model=max_min"
            )
        if fabric.link_failed.any():
            raise EngineRefusal(
                "engine.flow_model=open_loop has no paths, so it cannot model failed links "
                "(topology.failed_links); use engine.flow_model=max_min"
            )
        if sc.lb.policy == "ark":
            raise EngineRefusal(
                "engine.flow_model=open_loop has no paths to reserve; lb.policy=ark needs "
                "engine.flow_model=max_min"
            )
        self.sc, self.fabric, self.flows, self.policy = sc, fabric, flows, policy
        self.now = 0.0
        send_bps, recv_bps = moe.host_rates_bps(fabric)
        self.send, self.recv = send_bps / 8.0, recv_bps / 8.0  # bytes/s
        self.wire = wire_bytes_array(flows.size_bytes, sc.nic.rdma_data_mss, sc.nic.header_bytes)
        caps = flows.extra.get("rate_cap_bps")
        self.caps = None if caps is None else np.asarray(caps, dtype=np.float64) / 8.0
        if self.caps is not None and not np.all(np.isfinite(self.caps) & (self.caps > 0)):
            raise EngineRefusal("open_loop pacing needs a finite, positive rate_cap_bps per flow")
        load = np.bincount(flows.dst, weights=self.wire, minlength=fabric.num_hosts) / self.recv
        self.hot = int(np.argmax(load))

    # -- engine hooks (no dynamic policies in open loop) -------------------------------------
    def now_s(self) -> float:
        return self.now

    def schedule(self, at_s: float, callback: Callable[[], None]) -> None:
        raise EngineRefusal("engine.flow_model=open_loop runs no policy timers; use max_min")

    def reroute(self, flow: int, index: int, src_port: int) -> None:
        """No paths in the open-loop model: nothing to do."""

    # -- phases -----------------------------------------------------------------------------
    def injection_ends(self) -> np.ndarray:
        """Time each flow's last byte leaves its sender (s)."""
        f = self.flows
        if self.caps is not None:
            return f.start_s + self.wire / self.caps
        end = np.empty(len(f))
        order = np.argsort(f.src, kind="stable")
        bounds = np.flatnonzero(np.diff(f.src[order])) + 1
        for idx in np.split(order, bounds):
            if len(idx):
                sender = int(f.src[idx[0]])
                end[idx] = round_robin_ends(
                    f.start_s[idx], self.wire[idx], float(self.send[sender])
                )
        return end

    def latency_s(self) -> np.ndarray:
        """Each flow's unloaded path delay, computed once per (source leaf, destination leaf)."""
        f, fab = self.flows, self.fabric
        key = fab.host_leaf[f.src] * fab.num_nodes + fab.host_leaf[f.dst]
        _, first, inv = np.unique(key, return_index=True, return_inverse=True)
        mss, hdr = self.sc.nic.rdma_data_mss, self.sc.nic.header_bytes
        dags = PairDags(fab, mss + hdr)  # perf: no path enumeration
        return dags.shortest_s_many(f.src[first], f.dst[first])[inv.ravel()]

    def run(self) -> EngineOutput:
        wall0 = time.perf_counter()
        f = self.flows
        end = self.injection_ends()
        sweep = _Sweep(self, end)
        sweep.run()
        finish = end + sweep.q_at / self.recv[f.dst] + self.latency_s()
        delivered = f.size_bytes.astype(np.float64)
        limit = self.sc.engine.time_limit_s
        late = np.zeros(len(f), dtype=bool)
        if limit is not None:
            late = finish > limit
            frac = np.clip((limit - f.start_s) / np.maximum(finish - f.start_s, 1e-30), 0.0, 1.0)
            delivered[late] = np.floor(delivered[late] * frac[late])
            finish = np.where(late, np.nan, finish)
        self.now = float(np.nanmax(finish, initial=0.0))
        wall = time.perf_counter() - wall0
        summary = sweep.summary(end)
        summary["time_limit_reached"] = bool(late.any())
        summary["not_completed_reason"] = (
            f"time limit {limit:g} s reached" if late.any() else None  # the only way to fall short
        )
        return EngineOutput(
            finish_s=finish,
            delivered_bytes=delivered.astype(np.int64),
            path=[""] * len(f),
            entropy=f.src_port.copy(),
            summary=summary,
            timing={
                "wall_s": wall,
                "events": sweep.events,
                "events_per_s": sweep.events / max(wall, 1e-9),
            },
            tables=sweep.tables(),
        )


class _Sweep:
    """The receiver side: one pass over every flow start and end, in time order.

    Each distinct event time (a *step*) updates only what changes there: the arrival rates of
    the receivers of the flows whose rate changes (the starting and ending flows and, under
    round robin, every flow of their senders: their share changes) and the receivers' queues.
    Receivers (the hosts some flow goes to) are kept compact (``r``, in host order), so a step
    costs O(receivers + flows touched), not O(hosts); the active flows and senders after each
    step are counted before the loop.  A host without flows keeps an empty queue, so the
    arithmetic is the same as stepping every host's queue, to the bit.  The backlog is numpy's
    sum over a host-length queue vector (a sum over the receivers alone could round
    differently): the one O(hosts) pass left per step, in C.

    Flows sit in *slots*: by sender, then flow id, under round robin (a sender's flows are one
    slice), in flow order when paced.
    """

    def __init__(self, eng: OpenLoopEngine, end: np.ndarray) -> None:
        self.eng = eng
        f = eng.flows
        self.end = end
        hosts = eng.fabric.num_hosts
        self.recv_hosts = np.flatnonzero(np.bincount(f.dst, minlength=hosts) > 0)
        r_of = np.full(hosts, -1, dtype=np.int64)
        r_of[self.recv_hosts] = np.arange(len(self.recv_hosts))
        self.c = eng.recv[self.recv_hosts]  # each receiver's line rate, bytes/s
        self.tol = 1e-9 * self.c  # |lam - c| within this: exactly full, the queue stays
        self.q = np.zeros(len(self.c))  # receiver queues, bytes
        self.lam = np.zeros(len(self.c))  # arrival rate at each receiver, bytes/s
        self.excess = np.zeros(len(self.c))  # lam - c (0 when exactly full), bytes/s
        self.q_hosts = np.zeros(hosts)  # every host's queue, as of the last step
        self.hot = int(r_of[eng.hot])  # the hot host receives (it has the largest load)
        self.cap_total = float(self.c.sum())
        self.senders = int((np.bincount(f.src, minlength=hosts) > 0).sum())
        self.order = np.arange(len(f)) if eng.caps is not None else np.argsort(f.src, kind="stable")
        self.slot_src = f.src[self.order]
        self.slot_r = r_of[f.dst[self.order]]
        self.slot_rate = eng.caps[self.order] if eng.caps is not None else None  # paced
        self.active = np.zeros(len(f), dtype=bool)  # per slot
        self.slots = np.arange(len(f))
        self.lo: list[int] = []  # round robin: sender s has slots lo[s]:hi[s] (read per step)
        self.hi: list[int] = []
        if eng.caps is None:
            self.lo = np.searchsorted(self.slot_src, np.arange(hosts), side="left").tolist()
            self.hi = np.searchsorted(self.slot_src, np.arange(hosts), side="right").tolist()
        self.share = np.zeros(hosts)  # round robin: per-flow rate of each sender, bytes/s
        self.q_at = np.zeros(len(f))  # receiver queue when the flow's last byte arrived
        self.rows: list[tuple[float, ...]] = []
        self.events = 0
        self.now = 0.0
        self.snap_times = np.empty(0)
        self.snap_next = 0  # the first snapshot not taken yet
        self.snaps: list[tuple[float, np.ndarray, np.ndarray, np.ndarray]] = []
        if eng.sc.records.timelines:
            self.snap_times = np.linspace(float(f.start_s.min()), float(end.max()), 201)

    def run(self) -> None:
        n = len(self.eng.flows)
        if n == 0:
            self._drain_rows()
            return
        times = np.concatenate([self.eng.flows.start_s, self.end])
        ids = np.r_[np.arange(n), np.arange(n)]
        sign = np.r_[np.ones(n, dtype=np.int64), -np.ones(n, dtype=np.int64)]
        order = np.lexsort((sign, times))  # per time: the ends, then the starts
        times, ids, sign = times[order], ids[order], sign[order]
        bounds = np.r_[0, np.flatnonzero(np.diff(times)) + 1, len(times)]
        self._prepare(ids, sign, bounds)
        self.now = float(times[0])
        self.snap_next = int(np.searchsorted(self.snap_times, self.now, side="right"))
        apply = self._apply_paced if self.slot_rate is not None else self._apply_round_robin
        q_at = np.zeros(len(times))  # per event: the receiver's queue (at ends)
        ev_r, n_end = self.ev_r, np.add.reduceat(sign < 0, bounds[:-1]).tolist()
        lam, c, excess, tol = self.lam, self.c, self.excess, self.tol
        for g, (t, a, b) in enumerate(
            zip(times[bounds[:-1]].tolist(), bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)
        ):
            self._advance(t)
            apply(g, a, b)
            e = a + n_end[g]
            q_at[a:e] = self.q[ev_r[a:e]]
            np.subtract(lam, c, out=excess)
            excess[np.abs(excess) <= tol] = 0.0  # exactly-full receivers stay as they are
            self._record(g)
        ended = sign < 0
        self.q_at[ids[ended]] = q_at[ended]
        self.events = 2 * n
        self._drain_rows()

    def _prepare(self, ids: np.ndarray, sign: np.ndarray, bounds: np.ndarray) -> None:
        """Per event its slot, receiver, start flag (and paced rate); per step the active
        flows and senders after it; per (step, sender) the sender's round-robin share before
        and after the step (``ps_*``, by step then sender; ``ps_at``: each step's range)."""
        f, steps = self.eng.flows, len(bounds) - 1
        slot_of = np.empty(len(f), dtype=np.int64)
        slot_of[self.order] = np.arange(len(f))
        self.ev_slot, self.ev_r, self.ev_start = slot_of[ids], self.slot_r[slot_of[ids]], sign > 0
        if self.slot_rate is not None:
            self.ev_rate = self.slot_rate[self.ev_slot]
        self.flows_after = np.cumsum(np.add.reduceat(sign, bounds[:-1])).tolist()
        step = np.repeat(np.arange(steps), np.diff(bounds))
        src = f.src[ids]
        o = np.lexsort((step, src))  # by sender, then step (events in order within one)
        src, step, sg = src[o], step[o], sign[o]
        k = np.cumsum(sg)  # active flows of the sender after each event
        first = np.flatnonzero(np.r_[True, src[1:] != src[:-1]])
        k -= np.repeat(k[first] - sg[first], np.diff(np.r_[first, len(src)]))
        last = np.r_[(src[1:] != src[:-1]) | (step[1:] != step[:-1]), True]
        ps_src, ps_step, k_after = src[last], step[last], k[last]
        new_sender = np.r_[True, ps_src[1:] != ps_src[:-1]]
        k_before = np.where(new_sender, 0, np.r_[0, k_after[:-1]])
        senders = np.zeros(steps, dtype=np.int64)
        np.add.at(senders, ps_step, (k_after > 0).astype(np.int64) - (k_before > 0))
        self.senders_after = np.cumsum(senders).tolist()
        share = np.where(k_after > 0, self.eng.send[ps_src] / np.maximum(k_after, 1), 0.0)
        before = np.where(new_sender, 0.0, np.r_[0.0, share[:-1]])
        o = np.lexsort((ps_src, ps_step))
        self.ps_src, self.ps_before, self.ps_after = ps_src[o], before[o], share[o]
        self.ps_at = np.searchsorted(ps_step[o], np.arange(steps + 1)).tolist()

    def _advance(self, t: float) -> None:
        """Every queue from ``now`` to ``t`` (the arrival rates are constant in between)."""
        dt = t - self.now
        if dt <= 0:
            return
        snaps = self.snap_times
        while self.snap_next < len(snaps) and snaps[self.snap_next] <= t:
            tau = float(snaps[self.snap_next])
            self._snapshot(tau, np.maximum(self.q + self.excess * (tau - self.now), 0.0))
            self.snap_next += 1
        self.q += self.excess * dt
        np.maximum(self.q, 0.0, out=self.q)
        self.now = t

    def _apply_paced(self, g: int, a: int, b: int) -> None:
        """Events ``a:b`` (step ``g``): each flow adds or removes its own rate."""
        slots, rate = self.ev_slot[a:b], self.ev_rate[a:b]
        old = self.active[slots] * rate
        self.active[slots] = self.ev_start[a:b]
        new = self.active[slots] * rate
        self.lam += np.bincount(self.ev_r[a:b], weights=new - old, minlength=len(self.lam))

    def _apply_round_robin(self, g: int, a: int, b: int) -> None:
        """Events ``a:b`` (step ``g``): every flow of their senders moves to the new share."""
        p0, p1 = self.ps_at[g], self.ps_at[g + 1]
        if p1 - p0 == 1:  # perf: one sender, its flows are one slice
            s = int(self.ps_src[p0])
            slots: slice | np.ndarray = slice(self.lo[s], self.hi[s])
            rate_old, rate_new = self.ps_before[p0], self.ps_after[p0]
        else:
            spans = [(self.lo[s], self.hi[s]) for s in self.ps_src[p0:p1].tolist()]
            slots = np.concatenate([self.slots[lo:hi] for lo, hi in spans])
            count = [hi - lo for lo, hi in spans]
            rate_old = np.repeat(self.ps_before[p0:p1], count)
            rate_new = np.repeat(self.ps_after[p0:p1], count)
        old = self.active[slots] * rate_old
        self.active[self.ev_slot[a:b]] = self.ev_start[a:b]
        new = self.active[slots] * rate_new
        self.lam += np.bincount(self.slot_r[slots], weights=new - old, minlength=len(self.lam))
        self.share[self.ps_src[p0:p1]] = self.ps_after[p0:p1]

    def _served(self, q: np.ndarray) -> np.ndarray:
        """What each receiver's downlink serves with queues ``q``, bytes/s."""
        lam = np.maximum(self.lam, 0.0)
        return np.where((q > 0) | (lam >= self.c), self.c, lam)

    def _record(self, g: int) -> None:
        h = self.hot
        self.q_hosts[self.recv_hosts] = self.q
        self.rows.append(
            (
                self.now,
                float(self.q_hosts.sum()),
                float(self.q[h]),
                8.0 * max(float(self.lam[h]), 0.0),
                self.flows_after[g],
                self.senders_after[g],
                float(self._served(self.q).sum()) / self.cap_total,
            )
        )

    def _snapshot(self, tau: float, q: np.ndarray) -> None:
        """Every host's links at ``tau``, with ``q`` the receivers' queues then."""
        hosts, act = len(self.q_hosts), self.active
        rate = self.slot_rate[act] if self.slot_rate is not None else self.share[self.slot_src[act]]
        inject = np.bincount(self.slot_src[act], weights=rate, minlength=hosts)
        q_hosts, served = np.zeros(hosts), np.zeros(hosts)
        q_hosts[self.recv_hosts], served[self.recv_hosts] = q, self._served(q)
        self.snaps.append((tau, q_hosts, served, inject))

    def _drain_rows(self) -> None:
        """After the last injection: every queue drains at line rate; a row as each empties."""
        c, q, t0, h = self.eng.recv, self.q_hosts, self.now, self.eng.hot
        busy = np.flatnonzero(q > 0)
        empty_at = q[busy] / c[busy]
        order = np.argsort(empty_at)
        q_s, c_s, e_s = q[busy][order], c[busy][order], empty_at[order]
        suffix_q = np.cumsum(q_s[::-1])[::-1]
        suffix_c = np.cumsum(c_s[::-1])[::-1]
        for m, dt in enumerate(e_s):
            rest = (
                max(float(suffix_q[m + 1] - suffix_c[m + 1] * dt), 0.0) if m + 1 < len(e_s) else 0.0
            )
            hot_q = max(float(q[h] - c[h] * dt), 0.0)
            util = float(c_s[m + 1 :].sum()) / self.cap_total
            self.rows.append((t0 + float(dt), rest, hot_q, 0.0, 0, 0, util))
        if self.snaps:
            span = float(e_s[-1]) if len(e_s) else 0.0
            for dt in np.linspace(0.0, span, 51)[1:]:
                qq = np.maximum(q - c * dt, 0.0)
                self.snaps.append((t0 + float(dt), qq, np.where(qq > 0, c, 0.0), np.zeros_like(q)))

    # -- results ---------------------------------------------------------------------------
    def backlog_table(self) -> pd.DataFrame:
        df = pd.DataFrame(self.rows, columns=list(_ROW_COLUMNS))
        h = self.eng.hot
        df.insert(4, "hot_arrival_norm", df["hot_arrival_bps"] / (8.0 * self.eng.recv[h]))
        df.insert(6, "mean_active_destinations", df["active_flows"] / max(self.senders, 1))
        return df

    def summary(self, end: np.ndarray) -> dict[str, object]:
        df = self.backlog_table()
        inj_end = float(end.max()) if len(end) else 0.0
        at_end = df[df["time_s"] <= inj_end].iloc[-1] if len(df) else None
        peak = int(df["backlog_bytes"].to_numpy().argmax()) if len(df) else 0
        return {
            "flow_model": "open_loop",
            "open_loop_sender": "paced" if self.eng.caps is not None else "round_robin",
            "events": self.events,
            "injection_end_s": inj_end,
            "peak_backlog_bytes": float(df["backlog_bytes"].max()) if len(df) else 0.0,
            "peak_backlog_s": float(df["time_s"].iloc[peak]) if len(df) else 0.0,
            "backlog_at_injection_end_bytes": float(at_end["backlog_bytes"])
            if at_end is not None
            else 0.0,
            "hot_receiver": self.eng.fabric.host_names[self.eng.hot],
            "hot_receiver_peak_queue_bytes": float(df["hot_queue_bytes"].max()) if len(df) else 0.0,
            "hot_receiver_peak_arrival_norm": float(df["hot_arrival_norm"].max())
            if len(df)
            else 0.0,
        }

    def tables(self) -> dict[str, pd.DataFrame | dict[str, Any]]:
        df = self.backlog_table()
        if len(df) > MAX_ROWS:
            keep = np.linspace(0, len(df) - 1, MAX_ROWS).astype(np.int64)
            keep = np.union1d(keep, [int(df["backlog_bytes"].to_numpy().argmax())])
            df = df.iloc[keep].reset_index(drop=True)
        out: dict[str, pd.DataFrame | dict[str, Any]] = {"timeline_backlog": df}
        if self.snaps:
            out["timeline_links"] = self._links_table()
        return out

    def _links_table(self) -> pd.DataFrame:
        eng, fab = self.eng, self.eng.fabric
        names = np.array(fab.link_names)
        up = np.flatnonzero(np.bincount(eng.flows.src, minlength=fab.num_hosts) > 0)
        down = self.recv_hosts
        parts = []
        for tau, q, served, inject in self.snaps:
            parts.append(
                pd.DataFrame(
                    {
                        "link": np.r_[names[fab.host_uplink[up]], names[fab.host_downlink[down]]],
                        "time_s": tau,
                        "utilization": np.r_[
                            inject[up] / eng.send[up], served[down] / eng.recv[down]
                        ],
                        "queue_bytes": np.r_[np.zeros(len(up)), q[down]],
                    }
                )
            )
        return pd.concat(parts, ignore_index=True)
