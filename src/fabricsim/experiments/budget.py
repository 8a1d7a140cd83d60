"""The memory budget: what a run will need, estimated from the scenario alone, and its refusal.

:func:`estimate` reads nothing but the :class:`~fabricsim.config.models.Scenario` (no fabric is
built, no workload generated, no file read: a trace counts by its size or its Parquet footer),
so it runs in microseconds, before anything is allocated.  :func:`check_budget` raises :class:`ConfigError` (exit 2, one
line naming the dominant term's key) when the estimate exceeds ``engine.max_memory_gb``
(``auto``: half of this machine's RAM).

The model
---------
Peak resident memory is a sum of terms, each a count the scenario fixes times a cost per item
measured as peak RSS (``/usr/bin/time -v fabricsim run ...``, CPython 3.11, numpy 2, pandas 3;
the coefficients are rounded up: the estimate is 1.1-1.4 x the measured peak where the counts
are exact, and far above it where a count is itself an upper bound, e.g. timeline samples):

========================  =====================================================  =============
term                      count                                                  bytes each
========================  =====================================================  =============
baseline                  interpreter, numpy, pandas, pyarrow, fabricsim         0.2 GB
fabric paths              ECMP path table: leaves x nodes hop distances          13
                          (int32, and the breadth-first search's frontier)
fabric                    links (with their ECMP group members); nodes           450; 200
                          + links, flow engine (max-min kernel, capacities)      250
packet ports and NICs     links; hosts (packet engine only)                      2,200; 2,000
                          links x parallel links, at least 2,200                 800 + 60 P
flows                     connections (flow engine, max-min); flows (open loop)  2,000; 1,000
                          flows (packet engine: PDC, controller, receiver)       5,500
                          + flows under ``lb.policy=ark`` (reservations)         3,500
sprayed paths             flow engine, spraying: host pairs x paths per pair;    200
                          connections x links one connection spreads over        48
route cache               packet engine: distinct (host pair, entropy) routes    350
packets                   data packets (per-PSN state: 8-byte send time, 2       40
                          state bytes, allocator slack), at most
                          ``engine.max_packets`` (the runner refuses more)
uet_monitor               one row per data packet sent                           650
timeline samples          packet engine: (links + top switches) x duration /     160
                          ``records.timeline_interval_us``;
                          flow engine: 2 x connections x (top switches +         64
                          4 x path links)
MoE matrix                GPUs^2 demand matrix (counts, bytes, copies)           48
prompt table              kv_cache rank-Zipf: prompt_max - prompt_min + 1        40
========================  =====================================================  =============

Counts come from the config (:mod:`fabricsim.topology.builders`, :mod:`fabricsim.workloads`):

* leaf-spine: ``hosts = leaves x hosts_per_leaf``; ``nodes = hosts + leaves + spines``;
  ``links = 2 (hosts + leaves x spines x parallel_links)``; ``spines x parallel_links``
  paths between two leaves.  Fat tree of radix ``k``: ``hosts = k (k/2) hosts_per_edge``,
  ``nodes = hosts + k^2 + k^2/4``, ``links = 2 (hosts + k^3/2)``, ``k^2/4`` paths.
* flows: permutation = hosts; incast = senders; leaf_to_leaf = hosts of a leaf (or
  ``workload.hosts``); collective ring all-reduce = ``2 (n - 1) n``, all-to-all =
  ``n (n - 1)``; kv_cache = requests; moe = at most ``gpus x min(gpus, tokens x top_k)``
  (``gpus^2`` for matrix files); trace = rows, at most the file's bytes / 8 (a CSV row is at
  least ``0,1,1,0`` and a newline), or a Parquet file's row count.
* bytes (for packets and durations) follow from the sizes; the kv_cache mean prompt is the
  rank-Zipf mean (Euler-Maclaurin sums), a prompt trace counts ``prompt_max_tokens``; traces
  and matrix files have unknown bytes (their packet and duration terms are left out, and
  the runner's exact packet count and the samplers' run-time caps still apply).
* packet-engine timeline duration: ``engine.time_limit_s`` if it is shorter, else the last
  start + 2 x the busiest host's wire bytes at the slowest host rate + 8 RTOs (the full
  backoff ``rto x 2^(max_retries + 1)`` when links fail), RTO as the packet engine derives it.

The packet engine's timeline sampler also caps its rows at run time (``engine.max_memory_gb``
/ 160 bytes), so a duration estimated too short ends as a one-line refusal, not as an
exhausted machine.

Measurements behind the coefficients (peak RSS, MB; estimate in brackets):

* fabric construction (``fabric_for`` + the router, then a run of ``ecmp-collision``'s 8
  flows; peak RSS after each step less the interpreter's, ``/tmp`` script, compiled build,
  Dec 2026): 2 leaves x 1,024 spines x 16 / 64 parallel links (65,568 / 262,176 links)
  440 / 437 bytes a link built, + 300 / 150 bytes a link on the flow engine; 2 x 4,096 x 64
  (1,048,608 links) 411 + 210 (0.71 GB in all, 10 s); 256 / 512 leaves x as many spines x 1
  host (131,584 / 525,312 links) 426 / 357 + 150 (building 512 x 512 took 8.7 s; 4,096 x
  4,096 is 64 times the links: ~23 GB, refused).  Packet engine, the same 65,568 links
  run: 4,096 spines x 4 parallel links 1,020 bytes a link, 1,024 x 16 1,700, 256 x 64
  4,090; 128 / 512 spines x 64: 4,750 / 4,520 (so 2 x 4,096 x 64 holds about 5 GB of
  ports, where 2,200 a link said 2.6 GB).

* fabric, incast of one sender: fat tree k=8 161 [200], k=32 220 [280], k=40 348 [420],
  k=48 604 [713], k=64 1,953 [2,213]; leaf-spine 512 x 128 x 64 hosts 416 [488],
  64 x 64 x 8 hosts x 64 parallel links 304 [358] (packet engine 1,439 [1,515]),
  64 x 1 x 256 hosts on the packet engine 283 [332]; k=128 needs 58 GB for the path table
  (33 GiB of it float64, where it used to die).
* flows: kv_cache 1e4 / 1e5 requests (flow engine) 183 [222] / 321 [402], with
  ``lb.policy=ark`` 216 [257]; permutation on k=32 (8,192 flows) 236 [296]; ring all-reduce
  over 128 hosts (32,512 flows) 216 [265]; open-loop MoE over 256 GPUs 233 [288]; 2e4
  one-packet flows on the packet engine 273 [311].
* packets: one 1 GiB / 4 GiB message (262,144 / 1,048,576 packets) 167 [211] / 182 [242];
  with ``records.uet_monitor`` 353 [381].
* timelines: packet MoE at 2 / 0.05 / 0.01 us 265 [308] / 336 [1,726] / 563 [7,546]
  (about 120 bytes a row measured; the count assumes every link active for the whole
  estimated span); flow engine, permutation on k=24 213 [304].
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fabricsim.errors import ConfigError
from fabricsim.experiments.budget_counts import (
    _Fabric,
    _fabric,
    _Load,
    _load,
    _packet_duration_s,
    _packets,
)
from fabricsim.packetsim.records import PACKET_SAMPLE_BYTES
from fabricsim.units import S_PER_PS, us_to_s

GB = 1e9

BASELINE_BYTES = 0.2 * GB
PATH_TABLE_BYTES = 13  # per (leaf, node) hop distance: 4, and the search frontier (bound)
LINK_BYTES = 450  # per link built, its ECMP group members and routes' entries (measured)
NODE_BYTES = 200
FLOW_LINK_BYTES = 250  # flow engine (max-min): per link, the kernel's capacities and loads
PACKET_PORT_BYTES = 2_200  # packet engine: Port, route-table entries, per link
PACKET_PARALLEL_BASE_BYTES = 800  # packet engine, per link: 800 + 60 x parallel links,
PACKET_PARALLEL_BYTES = 60  # when that is more than PACKET_PORT_BYTES (measured, see above)
PACKET_NIC_BYTES = 2_000  # packet engine: Nic, per host
FLOW_CONN_BYTES = 2_000  # flow engine (max-min): per connection, output row included
OPEN_LOOP_FLOW_BYTES = 1_000
PACKET_FLOW_BYTES = 5_500
ARK_FLOW_BYTES = 3_500
SPRAY_PATH_BYTES = 200
SPRAY_SLOT_BYTES = 48  # per (connection, link) slot of the flow engine's arrays
ROUTE_BYTES = 350
PACKET_BYTES = 40
MONITOR_ROW_BYTES = 650
FLOW_SAMPLE_BYTES = 64  # one timeline row of the flow engine
MATRIX_ENTRY_BYTES = 48
PROMPT_ENTRY_BYTES = 40

_TERM_ORDER = (
    "baseline",
    "fabric paths",
    "fabric",
    "packet ports and NICs",
    "flows",
    "sprayed paths",
    "route cache",
    "packets",
    "route rows",
    "link simulation",
    "uet_monitor",
    "timeline samples",
    "MoE matrix",
    "prompt table",
)


@dataclass(frozen=True)
class Estimate:
    """What a run of a scenario on an engine will hold in memory (see the module docstring).

    ``paths`` counts the ECMP path table's entries (every leaf's hop distance from every
    node); ``breakdown`` maps each term to its bytes; ``notes`` says what could not be
    counted from the config alone.
    """

    engine: str
    nodes: int
    links: int
    paths: int
    flows: int
    timeline_samples: int
    packets: int
    bytes_estimate: int
    breakdown: dict[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @property
    def gb(self) -> float:
        """The estimate in GB (10^9 bytes)."""
        return self.bytes_estimate / GB

    @property
    def dominant(self) -> str:
        """The term with the most bytes (baseline excluded)."""
        terms = {k: v for k, v in self.breakdown.items() if k != "baseline"}
        return max(terms, key=lambda k: terms[k]) if terms else "baseline"


def _packet_terms(
    sc: Any, fab: _Fabric, load: _Load, conns: int, terms: dict[str, float]
) -> tuple[int, int]:
    """Add the packet engine's terms to ``terms``; return its packets and timeline samples."""
    nic, rec = sc.nic, sc.records
    samples = 0
    parallel = PACKET_PARALLEL_BASE_BYTES + PACKET_PARALLEL_BYTES * fab.parallel
    per_link = max(PACKET_PORT_BYTES, parallel)
    terms["packet ports and NICs"] = per_link * float(fab.links)
    terms["packet ports and NICs"] += PACKET_NIC_BYTES * float(fab.hosts)
    terms["flows"] = PACKET_FLOW_BYTES * float(conns)
    packets = _packets(sc, load)
    counted = min(float(packets), float(sc.engine.max_packets))  # the runner refuses more
    terms["packets"] = PACKET_BYTES * counted
    if rec.uet_monitor:
        terms["uet_monitor"] = MONITOR_ROW_BYTES * counted
    per_pair = {"none": 1, "default": 2**nic.entropy_mask_bits}.get(
        nic.packet_spraying_type, int(nic.entropy_value_set_size)
    )
    routes = min(counted + conns, float(max(load.pairs, 1)) * per_pair)
    terms["route cache"] = ROUTE_BYTES * routes
    if rec.timelines:
        span = _packet_duration_s(sc, fab, load)
        if span is None:
            load.notes.append("timeline duration unknown: capped by the sampler at run time")
        else:
            interval_s = max(us_to_s(float(rec.timeline_interval_us)), S_PER_PS)  # >= 1 ps
            steps = math.ceil(span / interval_s) if math.isfinite(span / interval_s) else 0
            samples = (fab.links + fab.tops) * steps
            terms["timeline samples"] = PACKET_SAMPLE_BYTES * float(samples)
    return packets, samples


def _open_loop_terms(sc: Any, fab: _Fabric, load: _Load, terms: dict[str, float]) -> int:
    """Add the open-loop flow engine's terms to ``terms``; return its timeline samples."""
    samples = 0
    terms["flows"] = OPEN_LOOP_FLOW_BYTES * float(load.flows)
    if sc.records.timelines:
        samples = 251 * 2 * fab.hosts
        terms["timeline samples"] = FLOW_SAMPLE_BYTES * float(samples)
    return samples


def _flow_terms(sc: Any, fab: _Fabric, load: _Load, conns: int, terms: dict[str, float]) -> int:
    """Add the max-min flow engine's terms to ``terms``; return its timeline samples."""
    lb, nic, rec = sc.lb, sc.nic, sc.records
    samples = 0
    spraying = nic.packet_spraying_type != "none" or sc.switch.hash_method == "random"
    terms["flows"] = FLOW_CONN_BYTES * float(conns)
    terms["fabric"] += FLOW_LINK_BYTES * float(fab.links)
    if spraying or lb.policy == "ideal_spray":
        spread = min(fab.pair_paths, 2**nic.entropy_mask_bits)
        if nic.packet_spraying_type != "default" or lb.policy == "ideal_spray":
            spread = fab.pair_paths
        width = min(fab.links, 2 + 2 * spread + (fab.path_links - 4) * spread)
        terms["sprayed paths"] = SPRAY_PATH_BYTES * float(max(load.pairs, 1)) * spread
        terms["sprayed paths"] += SPRAY_SLOT_BYTES * float(conns) * width
    if rec.timelines:
        samples = 2 * conns * (fab.tops + 4 * fab.path_links)
        terms["timeline samples"] = FLOW_SAMPLE_BYTES * float(samples)
    return samples


def flow_engine_terms(
    sc: Any, fab: _Fabric, load: _Load, conns: int, terms: dict[str, float]
) -> tuple[int, int]:
    """The flow engine's terms (max-min or open loop, by ``engine.flow_model``): no packets,
    its timeline samples."""
    if sc.engine.flow_model == "open_loop":
        return 0, _open_loop_terms(sc, fab, load, terms)
    return 0, _flow_terms(sc, fab, load, conns, terms)


packet_engine_terms = _packet_terms
"""The packet engine's terms: its packets and timeline samples."""

ROUTE_ROW_BYTES = 120
"""The decomposed engine: one (flow, link) row of its routes and link workloads (11 arrays)."""
LINK_SKEW = 8
"""The decomposed engine's largest link simulation, over a loaded link's mean share of the
(flow, link) packets (a hot receiver's downlink carries several times the mean)."""


def decomposed_engine_terms(
    sc: Any, fab: _Fabric, load: _Load, conns: int, terms: dict[str, float]
) -> tuple[int, int]:
    """The decomposed engine's terms: its routing run (the flow engine's), a row per (flow,
    link), and the largest link simulation a worker holds (the packet engine's terms on it).
    Returns the data packets of all its link simulations (no timelines)."""
    _flow_terms(sc, fab, load, conns, terms)
    rows = float(conns) * fab.path_links
    terms["route rows"] = ROUTE_ROW_BYTES * rows
    packets = _packets(sc, load) * fab.path_links
    share = min(float(packets), LINK_SKEW * float(packets) / max(fab.links, 1))
    counted = min(share, float(sc.engine.max_packets))
    terms["link simulation"] = PACKET_BYTES * counted + PACKET_FLOW_BYTES * min(
        float(conns), LINK_SKEW * rows / max(fab.links, 1)
    )
    return int(packets), 0


EngineTerms = Callable[[Any, _Fabric, _Load, int, dict[str, float]], tuple[int, int]]
"""``terms(sc, fabric, load, connections, terms)``: add an engine's memory terms to ``terms``;
return its packets and timeline samples."""

ENGINE_TERMS: dict[str, EngineTerms] = {}
"""Each registered engine's memory terms (its ``EngineCapabilities.memory_terms``, entered by
:func:`fabricsim.experiments.engines.register_engine`); an engine without: the flow engine's."""


# -- the estimate ------------------------------------------------------------------------------
def estimate(sc: Any, engine: str) -> Estimate:
    """Estimate the peak memory of running ``sc`` on ``engine`` from the config alone.

    Examples
    --------
    >>> from fabricsim.config import load_scenario
    >>> est = estimate(load_scenario("permutation"), "flow")
    >>> est.nodes, est.links, est.flows
    (208, 768, 128)
    >>> est.gb < 1
    True
    """
    fab = _fabric(sc)
    load = _load(sc, fab)
    lb = sc.lb
    terms: dict[str, float] = dict.fromkeys(_TERM_ORDER, 0.0)
    terms["baseline"] = BASELINE_BYTES
    path_entries = fab.leaves * fab.nodes
    terms["fabric paths"] = PATH_TABLE_BYTES * float(path_entries)
    terms["fabric"] = LINK_BYTES * float(fab.links) + NODE_BYTES * float(fab.nodes)
    split = lb.policy == "qp_scaling" and lb.qp_mode == "split"
    conns = load.flows * (int(lb.qp_count) if split else 1)
    packets, samples = ENGINE_TERMS.get(engine, flow_engine_terms)(sc, fab, load, conns, terms)
    if lb.policy == "ark":
        terms["flows"] += ARK_FLOW_BYTES * float(load.flows)
    terms["MoE matrix"] = MATRIX_ENTRY_BYTES * load.matrix
    terms["prompt table"] = PROMPT_ENTRY_BYTES * load.prompt_table
    breakdown = {k: int(min(v, 2**62)) for k, v in terms.items() if v > 0}
    return Estimate(
        engine=engine,
        nodes=fab.nodes,
        links=fab.links,
        paths=path_entries,
        flows=load.flows,
        timeline_samples=int(samples),
        packets=int(packets),
        bytes_estimate=int(min(sum(terms.values()), 2**62)),
        breakdown=breakdown,
        notes=tuple(load.notes),
    )


# -- the refusal -------------------------------------------------------------------------------
def _largest(sc: Any, keys: tuple[str, ...]) -> str:
    """The ``topology.*`` key among ``keys`` with the largest value."""
    return max(keys, key=lambda k: float(getattr(sc.topology, k) or 0))


def _advice(sc: Any, term: str, engine: str) -> tuple[str, str]:
    """(``key=value`` that drives ``term``, what to do about it)."""
    t, wl, raise_ = sc.topology, sc.workload, "raise engine.max_memory_gb"
    if term in ("fabric paths", "fabric", "packet ports and NICs"):
        if t.kind == "fat_tree" or (t.kind == "multi_plane" and t.plane_kind == "fat_tree"):
            key = "hosts_per_edge" if (t.hosts_per_edge or 0) > t.k else "k"
        elif t.kind == "rail_optimized":
            key = _largest(sc, ("servers", "rails", "spines"))
        elif term == "fabric paths":
            key = _largest(sc, ("leaves", "hosts_per_leaf"))
        else:
            up = t.leaves * t.spines * t.parallel_links
            key = (
                _largest(sc, ("leaves", "hosts_per_leaf"))
                if t.leaves * t.hosts_per_leaf >= up
                else _largest(sc, ("spines", "parallel_links", "leaves"))
            )
        value = getattr(t, key)
        par = int(getattr(t, "parallel_links", 1) or 1)
        if par > 1 and key in ("spines", "parallel_links"):  # the bundles: both keys count
            return (
                f"topology.spines={t.spines} x topology.parallel_links={par}",
                f"use a smaller topology.spines or topology.parallel_links, or {raise_}",
            )
        return f"topology.{key}={value}", f"use a smaller topology.{key} or {raise_}"
    if term == "timeline samples":
        if ENGINE_TERMS.get(engine) is packet_engine_terms:  # sampled every interval
            iv = sc.records.timeline_interval_us
            limit = sc.engine.time_limit_s
            extra = f" with engine.time_limit_s={limit:g}" if limit is not None else ""
            return (
                f"records.timeline_interval_us={iv:g}{extra}",
                "use a larger records.timeline_interval_us"
                + (" or a smaller engine.time_limit_s" if limit is not None else "")
                + f", set records.timelines=false, or {raise_}",
            )
        return "records.timelines=true", f"set records.timelines=false or {raise_}"
    if term == "uet_monitor":
        return "records.uet_monitor=true", f"set records.uet_monitor=false or {raise_}"
    if term == "sprayed paths":
        if sc.lb.policy == "ideal_spray":
            return "lb.policy=ideal_spray", f"use another lb.policy or {raise_}"
        spray = sc.nic.packet_spraying_type
        return f"nic.packet_spraying_type={spray}", f"use nic.packet_spraying_type=none or {raise_}"
    if term == "route cache":
        spray = sc.nic.packet_spraying_type
        return f"nic.packet_spraying_type={spray}", f"use fewer entropies or {raise_}"
    if term == "prompt table":
        return (
            f"workload.prompt_max_tokens={wl.prompt_max_tokens}",
            f"use a smaller workload.prompt_max_tokens or {raise_}",
        )
    if term == "MoE matrix":
        if getattr(wl, "gpus", None):
            return f"workload.gpus={wl.gpus}", f"use a smaller workload.gpus or {raise_}"
        return _fabric_size_key(sc), f"use a smaller fabric or workload.gpus, or {raise_}"
    # flows and packets: the workload's size
    key, value = _workload_key(sc, packets=term == "packets")
    if term == "packets":
        return (
            f"{key}={value}",
            f"use a smaller {key}, a smaller engine.max_packets, --engine flow, or {raise_}",
        )
    return f"{key}={value}", f"use a smaller {key} or {raise_}"


def _fabric_size_key(sc: Any) -> str:
    t = sc.topology
    if t.kind == "fat_tree" or (t.kind == "multi_plane" and t.plane_kind == "fat_tree"):
        return f"topology.k={t.k}"
    if t.kind == "rail_optimized":
        return f"topology.servers={t.servers}"
    key = _largest(sc, ("leaves", "hosts_per_leaf"))
    return f"topology.{key}={getattr(t, key)}"


def _workload_key(sc: Any, packets: bool) -> tuple[str, Any]:
    """The key that sets the workload's flows (or packets), as its kind's budget terms name it;
    else the fabric's size."""
    load = _load(sc, _fabric(sc))
    key = load.packets_key if packets else load.flows_key
    return key if key is not None else tuple(_fabric_size_key(sc).split("=", 1))  # type: ignore[return-value]


def check_budget(sc: Any, engine: str) -> None:
    """Raise :class:`ConfigError` (one line) if ``sc`` on ``engine`` would exceed its budget.

    The budget is ``engine.max_memory_gb`` (``auto``: half of this machine's RAM); the
    message names the dominant term's key and value, the estimate, and what to change.

    Examples
    --------
    >>> from fabricsim.config import load_scenario
    >>> sc = load_scenario("permutation").with_overrides({"engine.max_memory_gb": 16})
    >>> check_budget(sc, "flow")  # 0.2 GB
    >>> check_budget(sc.with_overrides({"topology.k": 128}), "flow")
    Traceback (most recent call last):
    ...
    fabricsim.errors.ConfigError: topology.k=128 needs about 62 GB (fabric paths), over engine.max_memory_gb=16 GB; use a smaller topology.k or raise engine.max_memory_gb
    """
    est = estimate(sc, engine)
    limit_gb = float(sc.engine.memory_limit_gb())
    if est.bytes_estimate <= limit_gb * GB:
        return
    term = est.dominant
    what, advice = _advice(sc, term, engine)
    auto = " (auto: half the RAM)" if sc.engine.max_memory_gb == "auto" else ""
    raise ConfigError(
        f"{what} needs about {_gb(est.gb)} GB ({term}), over "
        f"engine.max_memory_gb={limit_gb:g} GB{auto}; {advice}"
    )


def _gb(x: float) -> str:
    return f"{x:.2g}" if x < 10 else f"{x:,.0f}"
