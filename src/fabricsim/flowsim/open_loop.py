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

import numpy as np

from fabricsim._compat import pd
from fabricsim.config.models import Scenario
from fabricsim.engine_api import EngineOutput, wire_bytes_array
from fabricsim.errors import EngineRefusal
from fabricsim.lb.base import PathPolicy
from fabricsim.routing.dag import PairDags
from fabricsim.routing.router import Router
from fabricsim.topology.fabric import Fabric
from fabricsim.workloads.base import FlowTable
from fabricsim.workloads.moe import host_rates_bps

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
        send_bps, recv_bps = host_rates_bps(fabric)
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
        # destination leaf first: PairDags.shortest_s keeps one memo per destination leaf
        key = fab.host_leaf[f.dst] * fab.num_nodes + fab.host_leaf[f.src]
        uniq, first, inv = np.unique(key, return_index=True, return_inverse=True)
        mss, hdr = self.sc.nic.rdma_data_mss, self.sc.nic.header_bytes
        dags = PairDags(fab, mss + hdr)  # perf: no path enumeration
        lat = [dags.shortest_s(int(f.src[i]), int(f.dst[i])) for i in first]
        return np.asarray(lat)[inv.ravel()]

    def run(self) -> EngineOutput:
        wall0 = time.perf_counter()
        f = self.flows
        end = self.injection_ends()
        sweep = _Sweep(self, end)
        sweep.run()
        finish = end + sweep.q_at / self.recv[f.dst] + self.latency_s()
        delivered = f.size_bytes.astype(np.float64)
        limit = self.sc.engine.time_limit_s
        if limit is not None:
            late = finish > limit
            frac = np.clip((limit - f.start_s) / np.maximum(finish - f.start_s, 1e-30), 0.0, 1.0)
            delivered[late] = np.floor(delivered[late] * frac[late])
            finish = np.where(late, np.nan, finish)
        self.now = float(np.nanmax(finish, initial=0.0))
        wall = time.perf_counter() - wall0
        return EngineOutput(
            finish_s=finish,
            delivered_bytes=delivered.astype(np.int64),
            path=[""] * len(f),
            entropy=f.src_port.copy(),
            summary=sweep.summary(end),
            timing={
                "wall_s": wall,
                "events": sweep.events,
                "events_per_s": sweep.events / max(wall, 1e-9),
            },
            tables=sweep.tables(),
        )


class _Sweep:
    """The receiver side: one pass over every flow start and end, in time order."""

    def __init__(self, eng: OpenLoopEngine, end: np.ndarray) -> None:
        self.eng = eng
        f = eng.flows
        self.end = end
        hosts = eng.fabric.num_hosts
        self.q = np.zeros(hosts)  # receiver queues, bytes
        self.lam = np.zeros(hosts)  # arrival rate at each receiver, bytes/s
        self.active = np.zeros(len(f), dtype=bool)
        self.k = np.zeros(hosts, dtype=np.int64)  # active flows per sender
        self.share = np.zeros(hosts)  # round robin: per-flow rate of each sender, bytes/s
        self.q_at = np.zeros(len(f))  # receiver queue when the flow's last byte arrived
        self.by_sender = np.argsort(f.src, kind="stable")
        self.lo = np.searchsorted(f.src[self.by_sender], np.arange(hosts), side="left")
        self.hi = np.searchsorted(f.src[self.by_sender], np.arange(hosts), side="right")
        self.recv_mask = np.bincount(f.dst, minlength=hosts) > 0
        self.cap_total = float(eng.recv[self.recv_mask].sum())
        self.senders = int((np.bincount(f.src, minlength=hosts) > 0).sum())
        self.rows: list[tuple[float, ...]] = []
        self.events = 0
        self.snap_times = np.empty(0)
        self.snaps: list[tuple[float, np.ndarray, np.ndarray, np.ndarray]] = []
        if eng.sc.records.timelines:
            self.snap_times = np.linspace(float(f.start_s.min()), float(end.max()), 201)

    def run(self) -> None:
        end, flows = self.end, self.eng.flows
        n = len(flows)
        times = np.concatenate([flows.start_s, end])
        ids = np.concatenate([np.arange(n), np.arange(n)])
        sign = np.concatenate([np.ones(n, dtype=np.int64), -np.ones(n, dtype=np.int64)])
        order = np.lexsort((sign, times))
        times, ids, sign = times[order], ids[order], sign[order]
        cuts = np.flatnonzero(np.diff(times)) + 1
        self.now = float(times[0]) if n else 0.0
        for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, len(times)], strict=True):
            self._advance(float(times[lo]))
            self._apply(ids[lo:hi], sign[lo:hi])
            self._record()
        self.events = 2 * n
        self._drain_rows()

    def _advance(self, t: float) -> None:
        dt = t - self.now
        if dt <= 0:
            return
        c = self.eng.recv
        excess = self.lam - c
        excess[np.abs(excess) <= 1e-9 * c] = 0.0  # exactly-full receivers stay empty
        k = int(np.searchsorted(self.snap_times, self.now, side="right"))
        while k < len(self.snap_times) and self.snap_times[k] <= t:
            tau = float(self.snap_times[k])
            self._snapshot(tau, np.maximum(self.q + excess * (tau - self.now), 0.0))
            k += 1
        self.q = np.maximum(self.q + excess * dt, 0.0)
        self.now = t

    def _apply(self, ids: np.ndarray, sign: np.ndarray) -> None:
        eng, f = self.eng, self.eng.flows
        np.add.at(self.k, f.src[ids], sign)
        if eng.caps is not None:
            idx, rate = ids, eng.caps[ids]
            old = self.active[idx] * rate
            self.active[ids] = sign > 0
            new = self.active[idx] * rate
        else:
            senders = np.unique(f.src[ids])
            idx = np.concatenate([self.by_sender[self.lo[s] : self.hi[s]] for s in senders])
            old = self.active[idx] * self.share[f.src[idx]]
            self.active[ids] = sign > 0
            kk = self.k[senders]
            self.share[senders] = np.where(kk > 0, eng.send[senders] / np.maximum(kk, 1), 0.0)
            new = self.active[idx] * self.share[f.src[idx]]
        self.lam += np.bincount(f.dst[idx], weights=new - old, minlength=len(self.lam))
        ended = ids[sign < 0]
        self.q_at[ended] = self.q[f.dst[ended]]

    def _served(self, q: np.ndarray) -> np.ndarray:
        c = self.eng.recv
        lam = np.maximum(self.lam, 0.0)
        return np.where((q > 0) | (lam >= c), c, lam)

    def _record(self) -> None:
        h = self.eng.hot
        util = float(self._served(self.q)[self.recv_mask].sum()) / self.cap_total
        self.rows.append(
            (
                self.now,
                float(self.q.sum()),
                float(self.q[h]),
                8.0 * max(float(self.lam[h]), 0.0),
                int(self.k.sum()),
                int(np.count_nonzero(self.k)),
                util,
            )
        )

    def _snapshot(self, tau: float, q: np.ndarray) -> None:
        eng, f = self.eng, self.eng.flows
        rate = eng.caps[self.active] if eng.caps is not None else self.share[f.src[self.active]]
        inject = np.bincount(f.src[self.active], weights=rate, minlength=len(q))
        self.snaps.append((tau, q.copy(), self._served(q), inject))

    def _drain_rows(self) -> None:
        """After the last injection: every queue drains at line rate; a row as each empties."""
        c, q, t0, h = self.eng.recv, self.q, self.now, self.eng.hot
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

    def tables(self) -> dict[str, pd.DataFrame]:
        df = self.backlog_table()
        if len(df) > MAX_ROWS:
            keep = np.linspace(0, len(df) - 1, MAX_ROWS).astype(np.int64)
            keep = np.union1d(keep, [int(df["backlog_bytes"].to_numpy().argmax())])
            df = df.iloc[keep].reset_index(drop=True)
        out = {"timeline_backlog": df}
        if self.snaps:
            out["timeline_links"] = self._links_table()
        return out

    def _links_table(self) -> pd.DataFrame:
        eng, fab = self.eng, self.eng.fabric
        names = np.array(fab.link_names)
        up = np.flatnonzero(np.bincount(eng.flows.src, minlength=fab.num_hosts) > 0)
        down = np.flatnonzero(self.recv_mask)
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
