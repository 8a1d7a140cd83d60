"""Recorders of the packet engine (``records.*``): each costs one branch in the hot path when off.

* ``uet_monitor``: one row per data packet sent (the PDC adds it to a
  :class:`~fabricsim.nic.pdc.MonitorLog`, in columns; this module builds the table).
* ``uet_transport_stats``: per-NIC transport counters (JSON).
* ``flow_paths`` (always, when a flow took several paths): data packets per (flow, path).
* ``port_stats``: per port bytes, packets, ECN marks, trims, drops and peak queue.
* ``switch_lb_stats``: bytes and packets per member of every multi-member ECMP group, counted
  by the member's port as the packet enters it (``Port.lbrec``: destination host -> counts).
* ``timelines``: :class:`TimelineSampler` samples link utilization and queue bytes every
  ``records.timeline_interval_us``; :class:`SpineFlows` counts the flows that sent a data
  packet through each top-tier switch during each interval.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fabricsim._compat import pd
from fabricsim.errors import ConfigError
from fabricsim.nic.pdc import MonitorLog
from fabricsim.packetsim.calendar import Sim
from fabricsim.packetsim.csig import CsigStamp
from fabricsim.packetsim.ports import Port
from fabricsim.routing.dag import MAX_PATH_LABELS
from fabricsim.topology.fabric import Fabric
from fabricsim.units import ps_to_s, ps_to_us, transmitted_bytes

# fmt: off
MONITOR_COLUMNS = (
    "time_s", "direction", "flow_id", "psn", "entropy_value", "explored", "explore_reason",
    "path", "reps_state", "reps_cache_values",
)
# fmt: on

PACKET_SAMPLE_BYTES = (
    160  # memory of one timeline row (link or spine), bytes; the run budget uses it
)


def monitor_table(log: MonitorLog) -> pd.DataFrame:
    """The ``uet_monitor`` table from the PDCs' rows (in send order).

    ``reps_state`` (``normal``/``freezing``/``window``) and ``reps_cache_values`` (values cached
    just before the choice) are REPS's state when the packet's value was chosen (null
    otherwise); ``path`` is the label of the packet's route (empty under a live member choice,
    before the switches chose).
    """
    n = log.n
    ints = np.frombuffer(log.ints, dtype=np.int64)[: MonitorLog.INTS * n]
    cols = ints.reshape(n, MonitorLog.INTS).T.copy()  # one contiguous column per field
    return pd.DataFrame(
        {
            "time_s": ps_to_s(cols[0]),
            "direction": pd.Categorical(
                ["ReTx" if r else "Tx" for r in cols[1].tolist()], categories=["Tx", "ReTx"]
            ),
            "flow_id": cols[2],
            "psn": cols[3],
            "entropy_value": cols[4],
            "explored": cols[5].astype(bool),
            "explore_reason": pd.array(list(log.reasons), dtype="string"),
            "path": [route.label for route in log.routes],
            "reps_state": pd.array(list(log.states), dtype="string"),
            "reps_cache_values": pd.array(
                [None if c < 0 else c for c in cols[6].tolist()], dtype="Int64"
            ),
        }
    )


def _link_layer(port: Port) -> object:
    """The port's frame-error / LLR carrier (``port.llr``), under its CSIG stamp if any."""
    x = port.llr
    return x.inner if isinstance(x, CsigStamp) else x


def port_stats_table(fabric: Fabric, ports: Sequence[Port], now_ps: int = 0) -> pd.DataFrame:
    """One row per directed link's output port.

    With PFC, also: XOFF frames the port received (``pfc_pauses``), the time it was paused
    (``pfc_paused_s``), and the peak bytes its link's far end held from it
    (``peak_ingress_bytes``) with that ingress's ``pfc_xoff_bytes`` and headroom.  With
    frame errors or Link Layer Retry: the link's corrupted frames (``frame_errors``), frames
    it replayed (``llr_retries``) and its fullest replay buffer (``llr_replay_peak_bytes``).
    """
    table = pd.DataFrame(
        {
            "link": fabric.link_names,
            "rate_bps": [p.rate_bps for p in ports],
            "failed": [p.failed for p in ports],
            "bytes": [p.tx_bytes for p in ports],
            "packets": [p.tx_pkts for p in ports],
            "ecn_marks": [p.marks for p in ports],
            "trims": [p.trims for p in ports],
            "drops": [p.drops for p in ports],
            "peak_queue_bytes": [p.peak for p in ports],
            "buffer_bytes": [p.cap for p in ports],
        }
    )
    if any(p.pfc for p in ports):
        table["pfc_pauses"] = [p.pfc_pauses for p in ports]
        table["pfc_paused_s"] = [ps_to_s(p.paused_ps(now_ps)) for p in ports]
        table["peak_ingress_bytes"] = [p.peak_ing for p in ports]
        table["pfc_xoff_bytes"] = [p.xoff for p in ports]
        table["pfc_headroom_bytes"] = [p.hroom for p in ports]
    links = [_link_layer(p) for p in ports]
    if any(x is not None for x in links):  # frame errors / Link Layer Retry (llr.py)
        table["frame_errors"] = [getattr(x, "errors", 0) for x in links]
        table["llr_retries"] = [getattr(x, "retries", 0) for x in links]
        table["llr_replay_peak_bytes"] = [getattr(x, "peak", 0) for x in links]
    return table


def switch_lb_table(fabric: Fabric, ports: Sequence[Port], group_of: Callable) -> pd.DataFrame:
    """Bytes and packets per member of every ECMP group with more than one member.

    A group is a switch's set of equal-cost out-links toward some destinations; ``group`` is
    its members' link names joined by ``|``; ``member`` is the link's index in it.
    """
    acc: dict[tuple[int, tuple[int, ...], int], list[int]] = {}
    for port in ports:
        if not port.lbrec:
            continue
        sw = int(fabric.link_src[port.link])
        for dst, (pkts, nbytes) in port.lbrec.items():
            group = group_of(sw, dst)
            if len(group) < 2 or port.link not in group:
                continue
            rec = acc.setdefault((sw, group, port.link), [0, 0])
            rec[0] += pkts
            rec[1] += nbytes
    rows = []
    for sw, group in sorted({(k[0], k[1]) for k in acc}):
        for member, link in enumerate(group):
            pkts, nbytes = acc.get((sw, group, link), [0, 0])
            rows.append(
                (
                    fabric.node_names[sw],
                    "|".join(fabric.link_names[x] for x in group),
                    member,
                    fabric.link_names[link],
                    pkts,
                    nbytes,
                )
            )
    return pd.DataFrame(rows, columns=["switch", "group", "member", "link", "packets", "bytes"])


class SpineFlows:
    """Distinct flows that sent a data packet through each top-tier switch, per interval."""

    __slots__ = ("sets",)

    def __init__(self, tops: int) -> None:
        self.sets: list[set[int]] = [set() for _ in range(tops)]

    def touch(self, tops: tuple[int, ...], flow: int) -> None:
        for t in tops:
            self.sets[t].add(flow)

    def take(self) -> list[int]:
        counts = [len(s) for s in self.sets]
        for s in self.sets:
            s.clear()
        return counts


class TimelineSampler:
    """Every ``interval_ps``: each link's utilization over the interval and its queue bytes.

    Links that stay idle with empty queues are left out (a row is kept for the first idle
    sample after activity, so drops to zero show).  With PFC a ``paused`` column gives the
    fraction of the interval the link's port was paused.

    The sampler observes; it never puts an event on the calendar: the engine runs the
    calendar up to each sample time (:meth:`next_ps`) and calls :meth:`sample` there, so a
    run with timelines has the events, the end and the results of one without.  Samples fall
    every interval while flows are unresolved; the last is the first after that (or, if the
    calendar empties first, the next sample time within the run's limit), so the drop to
    idle shows.
    """

    def __init__(
        self,
        sim: Sim,
        fabric: Fabric,
        ports: Sequence[Port],
        interval_ps: int,
        spine: SpineFlows,
        alive: Callable[[], bool],
        max_rows: int | None = None,
    ) -> None:
        self.sim, self.fabric, self.ports, self.interval = sim, fabric, ports, interval_ps
        self.spine, self.alive = spine, alive
        self.max_rows = max_rows
        self.last_bytes = [0.0] * len(ports)
        self.was_active = [False] * len(ports)
        # perf: typed columns (about 28 bytes a row), not a tuple per row (about 250 bytes)
        self.link_col, self.t_col = array("q"), array("d")
        self.util_col, self.queue_col = array("d"), array("q")
        self.spine_top, self.spine_t, self.spine_n = array("q"), array("d"), array("q")
        self.pfc = any(p.pfc for p in ports)
        self.last_paused = [0] * len(ports)
        self.paused_col = array("d")

        self.next_ps: int | None = interval_ps
        """The next sample time, ps (``None``: sampling ended)."""

    def sample(self, now: int, last: bool = False) -> None:
        """Sample at ``now`` (ps, every event up to it processed); the next sample is one
        interval on while flows are unresolved and the run goes on (not ``last``)."""
        t_s = ps_to_s(float(now))  # float(): float division, as before, past 2**53 ps too
        secs = ps_to_s(float(self.interval))
        nominal = self.fabric.link_nominal_bps
        link_col, t_col, util_col, queue_col = (
            self.link_col,
            self.t_col,
            self.util_col,
            self.queue_col,
        )
        for i, port in enumerate(self.ports):
            # bytes on the wire so far: started bytes less what is still to serialize
            done = port.tx_bytes - transmitted_bytes(port.rate_bps, max(port.busy_until - now, 0))
            if port.failed:
                done = port.tx_bytes
            sent = done - self.last_bytes[i]
            self.last_bytes[i] = done
            queued = port.qbytes + port.hbytes
            active = sent > 1e-9 or queued > 0
            if self.pfc:
                paused = port.paused_ps(now)
                frac = (paused - self.last_paused[i]) / self.interval
                self.last_paused[i] = paused
                active = active or frac > 0
            if active or self.was_active[i]:
                if self.pfc:
                    self.paused_col.append(frac)
                util = max(sent, 0.0) * 8 / (float(nominal[i]) * secs)
                link_col.append(i)
                t_col.append(t_s)
                util_col.append(util)
                queue_col.append(queued)
            self.was_active[i] = active
        for top, n in enumerate(self.spine.take()):
            self.spine_top.append(top)
            self.spine_t.append(t_s)
            self.spine_n.append(n)
        if self.max_rows is not None and len(t_col) + len(self.spine_t) > self.max_rows:
            raise ConfigError(
                f"records.timeline_interval_us={ps_to_us(float(self.interval)):g}: the timelines passed "
                f"{self.max_rows:.3g} samples by t={t_s:.3g} s, over the memory budget "
                "(engine.max_memory_gb); use a larger records.timeline_interval_us, "
                "records.timelines=false or a larger engine.max_memory_gb"
            )
        self.next_ps = now + self.interval if self.alive() and not last else None

    def tables(self) -> dict[str, pd.DataFrame]:
        names = self.fabric.link_names
        tops = [self.fabric.node_names[s] for s in self.fabric.top_switches]
        columns = ["link", "time_s", "utilization", "queue_bytes"]
        rest: tuple = (self.t_col, self.util_col, self.queue_col)
        if self.pfc:
            columns, rest = [*columns, "paused"], (*rest, self.paused_col)
        links = _frame(names, columns, self.link_col, rest)
        spines = _frame(
            tops, ["spine", "time_s", "active_flows"], self.spine_top, (self.spine_t, self.spine_n)
        )
        return {"timeline_links": links, "timeline_spine_flows": spines}


def _frame(names: Sequence[str], columns: list[str], index: array, rest: tuple) -> pd.DataFrame:
    """A table whose first column is ``names[index]`` and the others the typed columns ``rest``
    (as ``pd.DataFrame`` of the row tuples would build it, empty included)."""
    if not len(index):
        return pd.DataFrame([], columns=columns)
    label = np.empty(len(index), dtype=object)
    label[:] = np.array(names, dtype=object)[np.frombuffer(index, dtype=np.int64)]
    data = {columns[0]: label}
    for name, col in zip(columns[1:], rest, strict=True):
        data[name] = np.frombuffer(
            col, dtype=np.float64 if col.typecode == "d" else np.int64
        ).copy()
    return pd.DataFrame(data)


def flow_paths(
    pdcs: Sequence[Sequence[Any]],
) -> tuple[list[str], np.ndarray, dict[str, Any] | None]:
    """Per flow the ``path`` cell and the ``paths`` count, and the ``flow_paths`` table.

    ``path`` names the paths a flow's data took, in first-use order, joined by ``;`` (empty
    past :data:`~fabricsim.routing.dag.MAX_PATH_LABELS`: ``paths`` counts them).
    ``flow_paths`` has one row per (flow, path) with the data packets sent on that path
    (retransmissions included), in flow-id then first-use order; None when no flow took more
    than one path (the flow table says it all then).  The table is given as columns (perf: a
    run that only writes its files never imports pandas).

    Parameters
    ----------
    pdcs
        Per flow, its sending PDCs (:meth:`~fabricsim.nic.pdc.Pdc.route_packets`).
    """
    cells: list[str] = []
    counts = np.zeros(len(pdcs), dtype=np.int64)
    rows: list[tuple[int, dict[str, int]]] = []
    for flow, conns in enumerate(pdcs):
        per: dict[str, int] = {}
        for pdc in conns:
            for route, packets in pdc.route_packets().items():
                label = route.label
                if label:  # empty: a live member choice's route before its switches chose
                    per[label] = per.get(label, 0) + packets
        counts[flow] = len(per)
        cells.append("" if len(per) > MAX_PATH_LABELS else ";".join(per))
        rows.append((flow, per))
    if counts.max(initial=0) <= 1:
        return cells, counts, None
    table = {
        "flow_id": np.repeat(np.arange(len(pdcs), dtype=np.int64), counts),
        "path": [label for _, per in rows for label in per],
        "packets": np.array([n for _, per in rows for n in per.values()], dtype=np.int64),
    }
    return cells, counts, table


def transport_stats(nics: Sequence[Any], names: Sequence[str]) -> dict[str, Any]:
    """``uet_transport_stats``: per-NIC counters and their totals."""
    per = {names[n.host]: n.stats() for n in nics}
    keys = next(iter(per.values())).keys() if per else []
    total = {k: sum(v[k] for v in per.values()) for k in keys}
    total["max_out_of_order_on_flow"] = max(
        (v["max_out_of_order_on_flow"] for v in per.values()), default=0
    )
    return {"nics": per, "total": total}
