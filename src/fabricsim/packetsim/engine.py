"""The packet-level engine: discrete events in integer picoseconds over the scenario's fabric.

:class:`PacketEngine` builds one output port per directed link (:mod:`.core`), one UET-style
NIC per host (:mod:`fabricsim.nic`), and the route cache of the switches' forwarding
(:mod:`.forwarding`); it starts each flow's connections (from the path policy) at the flow's
start time, runs the event loop to the simulated-time limit, and returns the same per-flow
outputs as the flow engine (:class:`~fabricsim.engine_api.EngineOutput`).

Defaults derived here (each overridable in the scenario):

* base RTT: ``nic.initial_base_rtt_us`` (``auto``: the fabric's unloaded RTT);
* port buffer: ``switch.buffer_bytes``, else ``switch.buffer_bdp`` x (port rate x base RTT);
  priority (header) queue: ``switch.header_buffer_bytes``, else the same size;
* ECN: ``switch.ecn_min_bytes`` / ``ecn_max_bytes``, else 20 % / 80 % of the buffer (under
  a RoCE transport the DCQCN paper's thresholds scaled to the port's rate); with
  ``switch.scale_buffers_with_rate`` a degraded link's buffers and thresholds shrink with the
  fraction of its rate it keeps;
* RTO: ``nic.rto_us``, else 2 x (max(base RTT, unloaded RTT) + the drain time of every full
  switch buffer on the longest path): 8 x base RTT for a two-tier fabric at 1 BDP buffers
  (PFC: a buffer is an ingress's XOFF + headroom; RoCE: at least 4 ms);
* PFC (``switch.pfc``): thresholds per ingress link from :func:`fabricsim.config.roce.
  pfc_thresholds` (XOFF = the port's buffer less the headroom, under RoCE twice its ECN
  maximum; XON 2 packets lower); with ``switch.pfc_dynamic_alpha`` a shared buffer per switch
  (``switch.pfc_shared_buffer_bytes``, else the sum of its ingress links' buffers);
* time limit: ``engine.time_limit_s``, else last start (+ the gaps dependent flows wait,
  ``FlowTable.gaps_bound_s``) + 4 x all wire bytes at the slowest
  working link's rate + the full RTO backoff ``rto x 2^(max_retries + 1)`` + 1 ms (a run may
  pass ``MAX_TIME_S`` by that span: a flow may start at it).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from fabricsim.cc import CcParams, make_cc
from fabricsim.config.models import Scenario
from fabricsim.config.roce import dcqcn_ecn_bytes, pause_ps, pfc_thresholds
from fabricsim.engine_api import ACK, ROUTE_KEY_HOSTS, EngineOutput, collector_paused, wire_bytes
from fabricsim.errors import ConfigError, EngineRefusal
from fabricsim.flowsim.engine import slowest_rate_bps
from fabricsim.lb.base import SPRAY_ALL, PathPolicy
from fabricsim.lb.repath import REPATHING, count_repaths
from fabricsim.lb.reps import exploration_window_packets
from fabricsim.metrics.summaries import reason_of_flows
from fabricsim.nic.nic import Nic
from fabricsim.nic.pdc import MonitorLog, NicEnv, Pdc
from fabricsim.packetsim import records as rec
from fabricsim.packetsim.calendar import RandomPool, Sim, wheel_width_bits
from fabricsim.packetsim.checks import (
    LIMIT_MAX_PS,
    check_packet_scenario,
    check_packet_times,
    duration_ps,
    time_ps,
)
from fabricsim.packetsim.csig import attach_csig
from fabricsim.packetsim.forwarding import RouteTable, make_forwarding, make_member_choices
from fabricsim.packetsim.llr import attach_link_layer
from fabricsim.packetsim.lossless import deadlock_holds_all, pfc_summary, watch_lossless
from fabricsim.packetsim.packets import Packet, PacketPool
from fabricsim.packetsim.pfc import SharedBuffer
from fabricsim.packetsim.ports import DropSink, HostPort, Port
from fabricsim.rng import stream
from fabricsim.routing.router import Router
from fabricsim.topology.fabric import NIC, NVSWITCH, Fabric
from fabricsim.transport import transport_for
from fabricsim.units import (
    PS_PER_S,
    PS_PER_US,
    bdp_bytes,
    ps_to_s,
    s_to_ps,
    us_to_ps,
)
from fabricsim.workloads.base import FlowTable

UNBOUNDED = 1 << 62
"""The capacity of a queue that never fills (a NIC's own ports)."""


class PacketEngine:
    """Run a flow table as messages of packets (see :func:`fabricsim.run`).

    Implements the :class:`~fabricsim.lb.base.EngineHooks` a dynamic policy uses.  Tests may
    call :meth:`fail_link_at` before :meth:`run` to fail a link mid-run (black-holing).
    """

    def __init__(
        self, sc: Scenario, fabric: Fabric, router: Router, flows: FlowTable, policy: PathPolicy
    ) -> None:
        check_packet_scenario(sc)
        check_packet_times(sc, flows)
        if fabric.num_hosts > ROUTE_KEY_HOSTS:
            raise EngineRefusal(
                f"scenario '{sc.name}' has {fabric.num_hosts} hosts, over the packet engine's "
                f"{ROUTE_KEY_HOSTS}; use --engine flow"
            )
        self.sc, self.fabric, self.router = sc, fabric, router
        self.flows, self.policy = flows, policy
        self.progress: Callable[[float], None] | None = None  # called with the simulated time, s
        nic = sc.nic
        self.transport = transport_for(nic.transport)  # nic.transport: its classes and rules
        self.mss, self.hdr = nic.rdma_data_mss, nic.header_bytes
        self.sim = Sim(width_bits=wheel_width_bits(self._horizon_ps()))
        self.unloaded_rtt_ps = fabric.unloaded_rtt_ps(self.mss, self.hdr, self.hdr)
        if nic.initial_base_rtt_us == "auto":
            self.base_rtt_ps = self.unloaded_rtt_ps
        else:
            self.base_rtt_ps = us_to_ps(float(nic.initial_base_rtt_us))
        self.ports = self._build_ports(RandomPool(stream(sc.seed, "switch")).random)
        self.links = attach_link_layer(sc, fabric, self.ports, self.mss + self.hdr)
        attach_csig(sc, fabric, self.ports)
        self.rto_ps = (
            duration_ps(nic.rto_us, "nic.rto_us") if nic.rto_us else self._default_rto_ps()
        )
        self.sink = DropSink()
        top_index = {int(s): i for i, s in enumerate(fabric.top_switches)}
        forwarding = make_forwarding(sc, router, RandomPool(stream(sc.seed, "switch/hash")).random)
        choices = make_member_choices(
            sc, fabric, self.sim, RandomPool(stream(sc.seed, "switch/lb")).random
        )
        entries = [self._entry(p) for p in self.ports]
        self.routes = RouteTable(
            fabric, forwarding, entries, [], [], self.sink.receive, top_index, choices, self.ports
        )
        self._setup_records(len(top_index))
        self.routes.spine = self.spine
        for failure in sc.topology.link_failures:
            self.fail_link_at(failure.link, failure.at_s)
        self.nics = self._build_nics()
        n = len(flows)
        self.pdcs: list[list[Pdc]] = [[] for _ in range(n)]
        self.host_repaths: dict[int, int] = {}  # per sending host: its repaths (plb, rod)
        self.pending = np.zeros(n, dtype=np.int64)
        self.finish_ps = np.full(n, -1, dtype=np.int64)
        self.start_ps = np.full(n, -1, dtype=np.int64)
        self.failed = np.zeros(n, dtype=bool)
        self.unresolved = n  # flows neither finished nor failed
        self.waiting = np.zeros(n, dtype=np.int64)
        self.dependents: list[list[int]] = [[] for _ in range(n)]

    def _build_nics(self) -> list[Nic]:
        sc, fabric = self.sc, self.fabric
        self.env = NicEnv(
            sim=self.sim,
            routes=self.routes,
            pool=PacketPool(),
            cfg=sc.nic,
            rto_ps=self.rto_ps,
            window_packets=self._window_packets,
            freezing_ps=us_to_ps(sc.nic.freezing_timeout_us),
            on_rx_done=self._rx_done,
            on_tx_failed=self._tx_failed,
            # perf: small blocks: a NIC draws rarely, and 1,024 NICs x 4,096 floats were 130 MB
            rand_of=lambda h: RandomPool(stream(sc.seed, f"nic/{h}"), block=256).random,
            monitor=self.monitor,
            spine=self.spine,
            base_rtt_ps=self.base_rtt_ps,
        )
        self.transport.configure(self.env, sc.nic)
        nic_class, self._pdc_class = self.transport.classes(sc.nic)
        nics: list[Nic] = []
        for h in range(fabric.num_hosts):
            port = self.ports[int(fabric.host_uplink[h])]
            assert isinstance(port, HostPort)
            nics.append(nic_class(self.env, h, port))
        self.routes.nics.extend(n.receive for n in nics)
        self.routes.nic_ctrl.extend(n.receive_ctrl for n in nics)
        return nics

    # -- construction ------------------------------------------------------------------------
    def _horizon_ps(self) -> int:
        """How far ahead of now a packet's events land: the longest link delay plus a full
        packet's serialization on the slowest link that carries any (the calendar's wheel
        reaches past it)."""
        fab = self.fabric
        rates = fab.link_rate_bps[fab.link_rate_bps > 0]
        ser = -(-(self.mss + self.hdr) * 8 * PS_PER_S // int(rates.min())) if len(rates) else 0
        return int(fab.link_delay_ps.max(initial=0)) + ser

    def _build_ports(self, rand: Callable[[], float]) -> list[Port]:
        fab, sw = self.fabric, self.sc.switch
        ports: list[Port] = []
        budgets: list[int] = []  # each link's buffer (its far end's ingress budget)
        nic_tier = np.isin(fab.node_tier, (NIC, NVSWITCH)).tolist()  # NIC and NVLink ports
        for link in range(fab.num_links):
            rate = float(fab.link_rate_bps[link])
            cap = sw.buffer_bytes or max(
                int(sw.buffer_bdp * bdp_bytes(float(fab.link_nominal_bps[link]), self.base_rtt_ps)),
                2 * (self.mss + self.hdr),
            )
            hcap = sw.header_buffer_bytes or cap
            kmin, kmax = cap // 5, cap * 4 // 5
            if self.transport.roce_fabric:
                kmin, kmax = dcqcn_ecn_bytes(float(fab.link_nominal_bps[link]))
            kmin = sw.ecn_min_bytes if sw.ecn_min_bytes is not None else kmin
            kmax = sw.ecn_max_bytes if sw.ecn_max_bytes is not None else kmax
            kept = rate / float(fab.link_nominal_bps[link])
            if sw.scale_buffers_with_rate and kept < 1.0:  # never below one full packet
                cap, hcap = (max(int(b * kept), self.mss + self.hdr) for b in (cap, hcap))
                kmin, kmax = int(kmin * kept), int(kmax * kept)
            buf = cap  # the link's buffer: its far end's ingress budget under PFC too
            cls = HostPort if fab.link_src[link] < fab.num_hosts else Port
            if cls is HostPort:
                cap = hcap = UNBOUNDED  # the NIC pulls: nothing waits at its own port
            elif nic_tier[int(fab.link_src[link])]:  # a NIC's or NVSwitch's port: its own queue,
                cap = hcap = kmin = kmax = UNBOUNDED  # never trimmed, dropped or marked
            port = cls(
                self.sim,
                link,
                rate,
                int(fab.link_delay_ps[link]),
                cap,
                hcap,
                kmin,
                kmax,
                sw.trimming,
                bool(fab.link_failed[link]),
                self.hdr,
                rand,
                sw.trim_last_queued,
                sw.ecn_max_prob,
            )
            if sw.pfc:
                xoff, xon, room = pfc_thresholds(
                    buf,
                    rate,
                    int(fab.link_delay_ps[link]),
                    self.mss + self.hdr,
                    sw.pfc_xoff_bytes,
                    sw.pfc_xon_bytes,
                    sw.pfc_headroom_bytes,
                    kmax if self.transport.roce_fabric else None,
                )
                port.set_pfc(xoff, xon, room, pause_ps(rate))
            ports.append(port)
            budgets.append(buf)
        if sw.pfc and sw.pfc_dynamic_alpha is not None:
            self._share_buffers(ports, budgets)
        self.pfc_watch = watch_lossless(self.sim, fab, sw, ports, nic_tier) if sw.pfc else None
        if not sw.pfc and (sw.pfc_watchdog_ms or sw.pfc_stalled_hosts):
            key = "pfc_watchdog_ms" if sw.pfc_watchdog_ms else "pfc_stalled_hosts"
            raise ConfigError(f"switch.{key}: needs switch.pfc: true (a lossless fabric)")
        return ports

    def _share_buffers(self, ports: list[Port], budgets: list[int]) -> None:
        """PFC dynamic thresholds: one :class:`SharedBuffer` per switch for the links into it."""
        fab, sw = self.fabric, self.sc.switch
        alpha = float(sw.pfc_dynamic_alpha or 1.0)
        into: dict[int, list[int]] = {}
        for link in range(fab.num_links):
            node = int(fab.link_dst[link])
            if node >= fab.num_hosts:  # a NIC takes what arrives: no ingress buffer
                into.setdefault(node, []).append(link)
        for links in into.values():
            size = sw.pfc_shared_buffer_bytes or sum(budgets[x] for x in links)
            pool = SharedBuffer(size, alpha)
            for x in links:
                p = ports[x]
                gap = 2 * (self.mss + self.hdr)
                p.set_pfc(int(alpha * size), gap, p.hroom, p.pause_len, pool)

    def _default_rto_ps(self) -> int:
        """2 x (RTT + the drain time of every full switch buffer on the longest path)."""
        fab = self.fabric
        paths = fab.paths(0, fab.num_hosts - 1) or fab.paths(0, 1)
        ports = self.ports
        drain = sum(
            (ports[x].xoff + ports[x].hroom if ports[x].pfc else ports[x].cap)
            * 8
            * PS_PER_S
            // max(int(fab.link_rate_bps[x]), 1)
            for x in (paths[0][1:] if paths else ())
            if ports[x].cap < UNBOUNDED  # a multi-plane NIC's own ports: no switch buffer
        )
        rto = 2 * (max(self.base_rtt_ps, self.unloaded_rtt_ps) + drain)
        floor_us = self.transport.rto_floor_us_for(self.sc.switch.pfc)
        if floor_us:
            rto = max(rto, us_to_ps(floor_us))
        return rto

    def _setup_records(self, tops: int) -> None:
        r = self.sc.records
        self.monitor: MonitorLog | None = MonitorLog() if r.uet_monitor else None
        self.spine: rec.SpineFlows | None = None
        self.sampler: rec.TimelineSampler | None = None
        if r.timelines:
            self.spine = rec.SpineFlows(tops)
            self.sampler = rec.TimelineSampler(
                self.sim,
                self.fabric,
                self.ports,
                duration_ps(r.timeline_interval_us, "records.timeline_interval_us"),
                self.spine,
                lambda: self.unresolved > 0,
                max_rows=int(self.sc.engine.memory_limit_gb() * 1e9 / rec.PACKET_SAMPLE_BYTES),
            )

    def _entry(self, port: Port) -> Callable:
        """What a route hands a packet to at ``port``: the port itself (an element), or the
        method that counts it first."""
        counted = self.sc.records.switch_lb_stats and not isinstance(port, HostPort)
        return port.receive_counted if counted else port

    def _window_packets(self, host: int) -> int:
        rate = float(self.fabric.link_nominal_bps[self.fabric.host_uplink[host]])
        return exploration_window_packets(rate, self.base_rtt_ps, self.mss, self.hdr)

    def _cc_params(self, host: int) -> CcParams:
        rate = float(self.fabric.link_nominal_bps[self.fabric.host_uplink[host]])
        return CcParams(
            line_rate_bps=rate,
            base_rtt_ps=self.base_rtt_ps,
            mtu_bytes=self.mss + self.hdr,
            bdp_bytes=bdp_bytes(rate, self.base_rtt_ps),
            cwnd_bdp=self.sc.nic.cwnd_bdp,
            nic=self.sc.nic,
        )

    # -- engine hooks (lb.base.EngineHooks) -------------------------------------------------
    def now_s(self) -> float:
        return ps_to_s(self.sim.now)

    def schedule(self, at_s: float, callback: Callable[[], None]) -> None:
        if not at_s <= ps_to_s(LIMIT_MAX_PS):  # never due: no run goes past it (inf, NaN too)
            return
        self.sim.at(s_to_ps(at_s), lambda _: callback())

    def reroute(self, flow: int, index: int, src_port: int) -> None:
        """Move connection ``index`` of ``flow`` to PDC local port ``src_port``."""
        if index < len(self.pdcs[flow]):
            self.pdcs[flow][index].src_port = int(src_port)

    def fail_link_at(self, link: str, at_s: float) -> None:
        """Link ``link`` (name ``A->B``) black-holes from ``at_s`` on (``topology.link_failures``).

        Live member choices (adaptive, flowlet, spray) stop using it at once, for every packet;
        under ``ecmp`` the switches keep hashing onto it.
        """
        index = self.fabric.link_index.get(link)
        if index is None:
            raise ConfigError(
                f"topology.link_failures: unknown link '{link}'; names look like "
                f"'{self.fabric.link_names[-1]}'"
            )
        port = self.ports[index]

        def fail(_: Any) -> None:
            port.fail()
            self.routes.link_failed()

        self.sim.at(time_ps(at_s, "topology.link_failures.at_s"), fail)

    # -- flows -------------------------------------------------------------------------------
    def _arrive(self, flow: int) -> None:
        f = self.flows
        src, dst = int(f.src[flow]), int(f.dst[flow])
        self.start_ps[flow] = self.sim.now
        conns = self.policy.connections(flow)
        self.pending[flow] = len(conns)
        nic = self.nics[src]
        for i, c in enumerate(conns):
            if c.src_port == SPRAY_ALL:
                raise EngineRefusal("ideal spraying connections need the flow engine")
            cc = make_cc(self.sc.nic.cc, self._cc_params(src))
            pdc = self._pdc_class(
                self.env, nic, flow, i, dst, int(c.size_bytes), int(c.src_port), cc, c.rate_cap_bps
            )
            self.pdcs[flow].append(pdc)
        for pdc in self.pdcs[flow]:
            nic.add(pdc)
        if not conns:
            self._finish(flow)

    def _rx_done(self, pdc: Pdc) -> None:
        self.pending[pdc.flow] -= 1
        if self.pending[pdc.flow] == 0 and not self.failed[pdc.flow]:
            self._finish(pdc.flow)

    def _finish(self, flow: int) -> None:
        self.finish_ps[flow] = self.sim.now
        self.unresolved -= 1
        self.policy.on_finish(flow)
        for nxt in self.dependents[flow]:
            self.waiting[nxt] -= 1
            if self.waiting[nxt] == 0:
                start = max(s_to_ps(float(self.flows.start_s[nxt])), self._ready_ps(nxt))
                self.sim.at(start, self._arrive, nxt)

    def _ready_ps(self, flow: int) -> int:
        """When a released flow may start: its last dependency's finish (now), or later by
        the gap it waits after each dependency (``FlowTable.gap_s``)."""
        gaps, deps_of = self.flows.gap_s, self.flows.depends_on
        if gaps is None or deps_of is None:
            return self.sim.now
        deps = deps_of[flow]
        pairs = zip(deps, gaps[flow], strict=True)
        return max(int(self.finish_ps[d]) + s_to_ps(g) for d, g in pairs)

    def _tx_failed(self, pdc: Pdc) -> None:
        self.nics[pdc.dst].rx_abandoned(pdc)
        flow = pdc.flow
        if self.failed[flow] or self.finish_ps[flow] >= 0:
            return
        self.failed[flow] = True
        self.unresolved -= 1
        for other in self.pdcs[flow]:
            other.fail()

    # -- run -----------------------------------------------------------------------------------
    def time_limit_ps(self) -> int:
        """The simulated-time limit (``engine.time_limit_s`` or the automatic bound): the
        last start (+ the dependency gaps) + 4 x all wire bytes at the slowest working
        link's rate (degraded, core and NVLink links included) + 1 ms + the full RTO
        backoff, at most :data:`LIMIT_MAX_PS`."""
        if self.sc.engine.time_limit_s is not None:
            return time_ps(self.sc.engine.time_limit_s, "engine.time_limit_s")
        f = self.flows
        rate = slowest_rate_bps(self.fabric, f.extra.get("rate_cap_bps"))
        total = sum(wire_bytes(int(s), self.mss, self.hdr) for s in f.size_bytes)
        last = float(np.max(f.start_s, initial=0.0)) + f.gaps_bound_s()
        tries = self.sc.nic.max_retries + 1
        backoff = self.rto_ps * (2**tries if self.sc.nic.rto_backoff else tries)
        span_s = last + 4 * total * 8 / rate + 1e-3 if rate > 0 else math.inf
        if not span_s <= ps_to_s(LIMIT_MAX_PS):  # int64 picoseconds hold the clock
            return LIMIT_MAX_PS
        return min(s_to_ps(span_s) + backoff, LIMIT_MAX_PS)

    def run(self) -> EngineOutput:
        wall0 = time.perf_counter()
        f = self.flows
        deps = f.depends_on or [[] for _ in range(len(f))]
        for flow, dep in enumerate(deps):
            self.waiting[flow] = len(dep)
            for d in dep:
                self.dependents[d].append(flow)
            if not dep:
                self.sim.at(s_to_ps(float(f.start_s[flow])), self._arrive, flow)
        limit = self.time_limit_ps()
        with collector_paused():
            if self.progress is None and self.sampler is None and self.pfc_watch is None:
                self.sim.run(limit)
            else:
                self._run_slices(limit, self.progress)
        return self._output(time.perf_counter() - wall0, limit)

    def _run_slices(self, limit: int, progress: Callable[[float], None] | None) -> None:
        """:meth:`Sim.run` in slices of simulated time: the timeline samples between them,
        and ``progress`` calls.

        The events and their order are those of one ``run(limit)``: a slice stops before the
        first event past its end, and the next starts there; the records put nothing on the
        calendar, so they never move the end of the run.  A progress slice's length adapts so
        each takes 0.05-0.3 s of wall time; ``progress`` is called at most every 0.1 s.
        """
        sim, sampler, watch = self.sim, self.sampler, self.pfc_watch
        step, last_call = PS_PER_US, 0.0
        if progress is None and watch is not None:  # PFC: a deadlock stops the run (PfcWatch)
            step = 100 * PS_PER_US
        mark = min(limit, sim.now + step)  # the end of the current progress slice
        sliced = progress is not None or watch is not None
        while True:
            tick = sampler.next_ps if sampler is not None else None
            end = min(limit, mark if sliced else limit)
            if tick is not None:
                end = min(end, tick)
            sim.stopped = False
            w0 = time.perf_counter()
            sim.run(end)
            w1 = time.perf_counter()
            drained = not sim.stopped  # no event left: the run ended before ``end``
            last = drained or end == tick  # the last sample after the end, as a drop to idle
            if sampler is not None and tick is not None and tick <= limit and last:
                sampler.sample(tick, last=drained)
            if drained or end >= limit or (watch is not None and watch.halted and self._held()):
                # no event left, the run's own limit cut it (``stopped`` stays set), or the
                break  # run met a PFC deadlock
            if progress is None and end == mark:  # the next slice between the watch's looks
                mark = min(limit, mark + step)
            elif progress is not None and end == mark:
                d = w1 - w0
                step = step * 2 if d < 0.05 else max(1, step // 2) if d > 0.3 else step
                mark = min(limit, mark + step)
                if w1 - last_call >= 0.1:
                    progress(ps_to_s(sim.now))
                    last_call = w1
        if progress is not None:
            progress(ps_to_s(sim.now))

    # -- output --------------------------------------------------------------------------------
    def counters(self) -> dict[str, int]:
        """Engine counters for ``summary.json`` (deterministic)."""
        all_pdcs = [p for ps in self.pdcs for p in ps]
        sent = sum(p.sent for p in all_pdcs)
        nic_tot = {k: sum(n.stats()[k] for n in self.nics) for k in self.nics[0].stats()}
        queued = sum(
            1
            for p in self.ports
            for pri in (True, False)
            for pkt in p.queued(pri)
            if pkt.kind < ACK
        )
        on_wires = sum(1 for a in self.sim.pending_args() if isinstance(a, Packet) and a.kind < ACK)
        out: dict[str, Any] = {
            "events": int(self.sim.events),
            "packets_sent": sent,
            "packets_retransmitted": sum(p.retransmitted for p in all_pdcs),
            "packets_trimmed": sum(p.trims for p in self.ports),
            "packets_dropped": sum(p.data_drops for p in self.ports) + self.sink.data_drops,
            "packets_received": nic_tot["data_packets_received"],
            "headers_received": nic_tot["trimmed_received"],
            "packets_in_flight_at_end": queued
            + on_wires
            + (self.links.held_data() if self.links else 0),
            "control_packets_dropped": sum(p.drops - p.data_drops for p in self.ports)
            + self.sink.drops
            - self.sink.data_drops,
            "acks_sent": nic_tot["acks_sent"],
            "nacks_sent": nic_tot["nacks_sent"],
            "timeouts": nic_tot["timeouts"],
            "early_failure_detections": nic_tot["early_failure_detections"],
            "pdc_groups_created": nic_tot["pdc_groups_created"],
            "flows_failed": int(self.failed.sum()),
        }
        for name in self.transport.summary_counters_for(self.sc.nic):
            out[name] = nic_tot[name]
        if self.links is not None:  # frame errors / Link Layer Retry (packetsim/llr.py)
            out.update(self.links.summary())
        if self.sc.switch.pfc:
            now = self.sim.now
            out["pfc_pauses"] = sum(p.pfc_pauses for p in self.ports)
            out["pfc_paused_s"] = ps_to_s(sum(p.paused_ps(now) for p in self.ports))
            out.update(pfc_summary(self.pfc_watch, self.ports, now))
        return out

    def _held(self) -> bool:
        """A PFC deadlock holds every flow still going (the run stops; a flow due to start
        later runs on, one waiting on others is held by theirs)."""
        left = (self.finish_ps < 0) & ~self.failed
        if np.any(left & (self.start_ps < 0) & (self.waiting == 0)):
            return False
        going = np.flatnonzero(left & (self.start_ps >= 0))
        assert self.pfc_watch is not None  # asked only on a lossless fabric
        return deadlock_holds_all(self.pfc_watch, self.ports, self.fabric, self.flows.src, going)

    def _not_completed_reason(self, limit: int) -> str | None:
        """Why the unfinished flows did not complete (``None`` if every flow did)."""
        names, ports = self.fabric.link_names, self.ports
        cut = f"time limit {ps_to_s(limit):g} s reached" if self.sim.stopped else None
        lost = self.transport.unfinished_reason(self.sc.nic)  # (no retransmission)
        if self.pfc_watch is not None and self.pfc_watch.halted:
            cut = self.pfc_watch.line()  # the run stopped at a PFC deadlock

        def why(flow: int) -> tuple[str | None, list[str]]:
            pdcs = self.pdcs[flow]
            crossed = dict.fromkeys(x for p in pdcs for r in p.routes_used for x in r.links)
            dead = [names[x] for x in crossed if ports[x].failed]
            if self.failed[flow]:
                return "retries exhausted", dead
            if not pdcs and self.waiting[flow] > 0:
                return cut or "waiting on flows that did not complete", dead
            return cut or lost, dead

        return reason_of_flows(why(f) for f in np.flatnonzero(self.finish_ps < 0).tolist())

    def _output(self, wall: float, limit: int) -> EngineOutput:
        f = self.flows
        n = len(f)
        done = self.finish_ps >= 0
        finish = np.where(done, self.finish_ps / PS_PER_S, math.nan)
        delivered = np.array(
            [sum(p.rx.bytes for p in self.pdcs[i]) for i in range(n)], dtype=np.int64
        )
        entropy = np.array(
            [
                next(
                    (p.first_entropy & 0xFFFF for p in self.pdcs[i] if p.first_entropy >= 0),
                    int(f.src_port[i]),
                )
                for i in range(n)
            ],
            dtype=np.int64,
        )
        summary: dict[str, Any] = self.counters()
        summary["sim_end_s"] = ps_to_s(self.sim.now)
        # the limit ended the run with flows still going (not after the last one, on a timer)
        halted = self.pfc_watch is not None and self.pfc_watch.halted
        summary["time_limit_reached"] = bool(
            self.sim.stopped and not halted and np.any(~done & ~self.failed)
        )
        if halted and self.pfc_watch is not None:
            summary["pfc_deadlock"] = self.pfc_watch.line()
        summary["not_completed_reason"] = self._not_completed_reason(limit)
        summary["spine_peak_flows"] = self._spine_peaks()
        if self.sc.switch.load_balancing_method == "flowlet":
            summary["switch_flowlets"] = sum(
                getattr(c, "flowlets", 0) for c in self.routes.choices or ()
            )
        sent = summary["packets_sent"]
        timing = {
            "wall_s": wall,
            "events": int(self.sim.events),
            "events_per_s": self.sim.events / max(wall, 1e-9),
            "packets_per_s": sent / max(wall, 1e-9),
        }
        started = np.where(self.start_ps >= 0, self.start_ps / PS_PER_S, math.nan)
        acked = np.array(
            [
                max(p.acked_ps for p in self.pdcs[i]) / PS_PER_S
                if done[i] and self.pdcs[i] and all(p.acked_ps >= 0 for p in self.pdcs[i])
                else math.nan
                for i in range(n)
            ]
        )
        cells, counts, by_path = rec.flow_paths(self.pdcs)
        out = EngineOutput(
            finish,
            delivered,
            cells,
            entropy,
            summary,
            timing,
            start_s=started,
            acked_s=acked,
        )
        out.paths = counts
        if by_path is not None:
            out.tables["flow_paths"] = by_path
        out.repaths, self.host_repaths = count_repaths(self.pdcs, self.start_ps, self.sim.now)
        if self.sc.nic.packet_spraying_type in REPATHING:
            summary["repaths"] = int(sum(self.host_repaths.values()))
        self._add_records(out)
        return out

    def _spine_peaks(self) -> dict[str, int]:
        """Peak number of concurrent flows whose packets crossed each top-tier switch.

        A flow crossed the top switches on the routes its data took (``Route.tops``: indices
        into ``fabric.top_switches``).  # perf: read off the routes, not parsed back out of
        their labels (0.35 s of a 1,024-host REPS run's output)
        """
        fab = self.fabric
        names = [fab.node_names[int(s)] for s in fab.top_switches]
        events: list[list[tuple[int, int]]] = [[] for _ in names]
        for flow, pdcs in enumerate(self.pdcs):
            if not pdcs:
                continue
            start = s_to_ps(float(self.flows.start_s[flow]))
            end = int(self.finish_ps[flow]) if self.finish_ps[flow] >= 0 else self.sim.now
            crossed = {top for p in pdcs for route in p.routes_used for top in route.tops}
            for top in crossed:
                events[top] += [(start, 1), (end, -1)]
        peaks = {}
        for name, ev in zip(names, events, strict=True):
            level = peak = 0
            for _, d in sorted(ev):
                level += d
                peak = max(peak, level)
            peaks[name] = peak
        return peaks

    def _add_records(self, out: EngineOutput) -> None:
        r, fab = self.sc.records, self.fabric
        if self.monitor is not None:
            out.tables["uet_monitor"] = rec.monitor_table(self.monitor)
        if r.port_stats:
            out.tables["port_stats"] = rec.port_stats_table(fab, self.ports, self.sim.now)
        if r.switch_lb_stats:
            out.tables["switch_lb_stats"] = rec.switch_lb_table(fab, self.ports, self.routes.group)
        if r.uet_transport_stats:
            stats = rec.transport_stats(self.nics, fab.node_names)
            stats["total"]["packets_retransmitted"] = out.summary["packets_retransmitted"]
            stats["total"]["packets_trimmed"] = out.summary["packets_trimmed"]
            if self.sc.nic.packet_spraying_type in REPATHING:  # sender side, as retransmissions
                for nic in self.nics:
                    stats["nics"][fab.node_names[nic.host]]["repaths"] = self.host_repaths.get(
                        nic.host, 0
                    )
                stats["total"]["repaths"] = out.summary["repaths"]
            out.json_records["uet_transport_stats"] = stats
        if self.sampler is not None:
            out.tables.update(self.sampler.tables())
