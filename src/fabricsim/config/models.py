"""Typed, validated scenario models (pydantic).

Every knob is declared once here with its default, unit (in the name), allowed range and a
one-line help.  Unknown keys are errors.  The seed documents' CamelCase attribute names
(``EntropyMaskBits``, ``PacketSprayingType`` ...) are accepted as aliases of the snake_case
names.  The keys that name a strategy (``lb.policy``, ``nic.packet_spraying_type``, ``nic.cc``,
``switch.hash_method``, ``switch.load_balancing_method``) are strings checked against the
registered names (:mod:`.names`), not closed lists.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    PrivateAttr,
    field_validator,
    model_validator,
)

from fabricsim.config.base import StrictModel
from fabricsim.config.decomposed import DecomposedConfig
from fabricsim.config.delivery import delivery_problem, derive_spraying
from fabricsim.config.inputs import by_content, resolve_inputs
from fabricsim.config.names import RegisteredName, has_trait
from fabricsim.config.nscc import NsccConfig
from fabricsim.config.overrides import apply_overrides
from fabricsim.config.plb import PlbConfig
from fabricsim.config.reps import RepsConfig
from fabricsim.config.roce import (
    ECN_MAX_PROB,
    PFC_BY_DEFAULT,
    ROCE_FABRIC,
    SENDS_CNPS,
    DcqcnConfig,
    RoceConfig,
    pfc_scenario_problem,
    transports_with,
)
from fabricsim.config.switch import (  # noqa: F401  (FIVE_TUPLE_FIELDS, HashField: here too)
    FIVE_TUPLE_FIELDS,
    HashField,
    StalledHost,
    SwitchConfig,
)
from fabricsim.config.workloads import WorkloadConfig
from fabricsim.units import MAX_TIME_S

# The trait of an lb.policy that gives each flow (or connection) one path (declared by the policy
# in fabricsim.lb): under it, a scenario that does not set nic.packet_spraying_type gets ``none``
# (no per-packet spraying at the NIC).
ONE_PATH_PER_FLOW = "one_path_per_flow"
NAME_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,99}$"


def default_max_memory_gb() -> float:
    """Half of this machine's physical memory in GB (8 GB where it cannot be read)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8.0
    return round(total / 2 / 1e9, 1)


class _Model(StrictModel):
    pass


class LinkFailure(_Model):
    """One link that fails during the run (``topology.link_failures`` entry)."""

    link: str = Field(..., min_length=1, description="link name, e.g. agg0_1->core2")
    at_s: float = Field(..., ge=0, le=MAX_TIME_S, description="simulated time of the failure, s")


class TopologyConfig(_Model):
    """The fabric: a two-tier leaf-spine, a three-tier k-ary fat tree, or a rail-optimized
    two-tier fabric (GPU ``r`` of every server on rail ``r``'s leaves, leaves to spines)."""

    kind: Literal["leaf_spine", "fat_tree", "rail_optimized", "multi_plane"] = Field(
        "leaf_spine", description="fabric shape"
    )
    planes: int = Field(
        2,
        ge=1,
        le=8,
        description="multi_plane: independent plane fabrics; every host NIC has one port (at "
        "host_link_gbps) into each",
    )
    plane_kind: Literal["leaf_spine", "fat_tree"] = Field(
        "leaf_spine",
        description="multi_plane: the fabric of each plane, sized by its leaf-spine or fat-tree keys",
    )
    spines: int = Field(4, ge=1, le=4096, description="leaf-spine: number of spines")
    leaves: int = Field(2, ge=1, le=4096, description="leaf-spine: number of leaves")
    hosts_per_leaf: int = Field(8, ge=1, le=4096, description="leaf-spine: hosts per leaf")
    parallel_links: int = Field(
        1, ge=1, le=64, description="leaf-spine: parallel uplinks between each leaf and spine"
    )
    servers: int = Field(4, ge=1, le=65536, description="rail_optimized: servers")
    rails: int = Field(8, ge=1, le=64, description="rail_optimized: GPUs (rails) per server")
    servers_per_leaf: int | None = Field(
        None,
        ge=1,
        le=65536,
        description="rail_optimized: servers one rail leaf serves (null: all; fewer gives each "
        "rail several leaves)",
    )
    pxn: bool = Field(
        False,
        description="rail_optimized: cross-rail traffic goes over the source server's NVLink to "
        "the GPU on the destination's rail and leaves by that GPU's NIC (NCCL PXN); traffic "
        "between GPUs of one server uses NVLink",
    )
    nvlink_gbps: float = Field(
        3600.0,
        ge=1e-6,
        le=1e6,
        description="pxn: each GPU's NVLink rate to its server's NVSwitch, Gbps",
    )
    nvlink_delay_us: float = Field(0.1, ge=0, le=1e6, description="pxn: NVLink hop delay, us")
    k: int = Field(8, ge=2, le=128, description="fat tree: switch radix (even)")
    hosts_per_edge: int | None = Field(
        None,
        ge=1,
        le=4096,
        description="fat tree: hosts per edge switch (k/2; more = oversubscribed)",
    )
    link_gbps: float | None = Field(
        None,
        ge=1e-6,
        le=1e5,
        description="all tiers' link rate, Gbps; host_link_gbps / fabric_link_gbps set in the "
        "same or a later layer win over it",
    )
    host_link_gbps: float = Field(
        100.0, ge=1e-6, le=1e5, description="host NIC link rate, Gbps (wins over link_gbps)"
    )
    fabric_link_gbps: float = Field(
        100.0, ge=1e-6, le=1e5, description="switch-switch rate, Gbps (wins over link_gbps)"
    )
    core_link_gbps: float | None = Field(
        None,
        ge=1e-6,
        le=1e5,
        description="fat tree (and fat-tree planes): aggregation-core link rate, Gbps (null: "
        "fabric_link_gbps, which then is the edge-aggregation rate)",
    )
    host_nic_gbps: (
        list[Annotated[float, Field(ge=1e-6, le=1e5)]]
        | dict[int, Annotated[float, Field(ge=1e-6, le=1e5)]]
        | None
    ) = Field(
        None,
        description="per-host NIC rates, Gbps: a list (one per host, in host order) or a map "
        "{host index: Gbps} over host_link_gbps (mixed 200/400/800 Gbps clusters)",
    )
    link_delay_us: float = Field(1.0, ge=0, le=1e6, description="propagation delay per link, us")
    failed_links: list[str] = Field(
        default_factory=list, description="link names, e.g. leaf0->spine1"
    )
    degraded_links: dict[str, Annotated[float, Field(ge=1e-6, le=1)]] = Field(
        default_factory=dict, description="link name -> fraction of its rate kept, in (0, 1]"
    )
    failed_switches: list[str] = Field(
        default_factory=list,
        description="switches that are down, e.g. p1_leaf0: every link of theirs fails and is "
        "withdrawn from routing (their neighbours see the links go down)",
    )
    failed_link_mode: Literal["blackhole", "withdraw"] = Field(
        "blackhole", description="blackhole: stays in ECMP groups; withdraw: removed"
    )
    link_failures: list[LinkFailure] = Field(
        default_factory=list,
        description="packet engine: links that fail mid-run (black-holing), [{link, at_s}]",
    )
    link_error_rate: float | dict[str, float] = Field(
        0.0,
        description="packet engine: probability in [0, 0.5] that a link corrupts a frame "
        "(dropped at its far end, or replayed under switch.llr): one rate for every link, or a "
        "map link name -> rate",
    )

    @field_validator("link_error_rate")
    @classmethod
    def _a_probability(cls, v: float | dict[str, float]) -> float | dict[str, float]:
        for rate in v.values() if isinstance(v, dict) else (v,):
            if not 0 <= rate <= 0.5:
                raise ValueError(f"each rate must be a probability in [0, 0.5] (got {rate:g})")
        return v

    @field_validator("k")
    @classmethod
    def _k_even(cls, v: int) -> int:
        if v % 2:
            raise ValueError(f"must be an even integer >= 2 (got {v})")
        return v

    @model_validator(mode="after")
    def _apply_link_gbps(self) -> TopologyConfig:
        """``link_gbps`` stands for every tier not given its own rate (see config/layers.py)."""
        if self.link_gbps is None:
            return self
        for name in ("host_link_gbps", "fabric_link_gbps"):
            if name not in self.model_fields_set:
                self._derive(name, self.link_gbps)
        if self.host_link_gbps != self.link_gbps or self.fabric_link_gbps != self.link_gbps:
            self._derive("link_gbps", None)  # the tiers differ: no single rate to show
        return self


class EngineConfig(_Model):
    """Which engine runs by default, and engine-wide limits."""

    kind: Literal["flow", "packet", "decomposed"] = Field(
        "flow", description="the scenario's default engine"
    )
    time_limit_s: float | None = Field(
        None,
        gt=0,
        le=MAX_TIME_S,
        description="simulated-time limit, s (null: last start + a generous bound)",
    )
    flow_model: Literal["max_min", "open_loop"] = Field("max_min", description="flow engine model")
    flow_solver: Literal["incremental", "reference"] = Field(
        "incremental",
        description="flow engine max-min solver: incremental (repairs what an event changes) "
        "or reference (re-solves every connection per event; the tests' oracle)",
    )
    max_packets: float = Field(
        5e7, gt=0, description="packet engine refuses scenarios with more data packets than this"
    )
    max_memory_gb: Annotated[float, Field(gt=0, le=1e5)] | Literal["auto"] = Field(
        "auto",
        description="refuse a run whose estimated memory exceeds this, GB "
        "(auto: half of this machine's RAM)",
    )
    decomposed: DecomposedConfig = Field(
        default_factory=DecomposedConfig,  # type: ignore[arg-type]
        description="decomposed engine: how a run splits into link simulations",
    )

    def memory_limit_gb(self) -> float:
        """``max_memory_gb`` resolved (``auto``: half of this machine's RAM)."""
        if self.max_memory_gb == "auto":
            return default_max_memory_gb()
        return float(self.max_memory_gb)


class LbConfig(_Model):
    """How a flow or connection gets its source port or path."""

    policy: Annotated[str, RegisteredName("lb.policy")] = Field(
        "ecmp",
        description="path policy; the per-flow ones (ecmp, pinned, qp_scaling, ark) mean "
        "nic.packet_spraying_type none unless that key is set",
    )
    qp_count: int = Field(1, ge=1, le=1024, description="qp_scaling: connections per host pair")
    qp_mode: Literal["round_robin", "split"] = Field(
        "round_robin", description="qp_scaling: rotate whole messages, or split each evenly"
    )
    ark_control_delay_us: float = Field(
        5.0, ge=0, le=1e6, description="ARK: RESERVE/RELEASE broadcast delay, us"
    )
    dst_port: int = Field(4791, ge=0, le=65535, description="the well-known destination UDP port")
    qp_field: Literal["src_port", "dst_qp"] = Field(
        "src_port",
        description="qp_scaling: the header field in which a pair's QPs differ: src_port, or "
        "only dst_qp (same UDP ports: one path unless switch.hash_fields has dst_qp)",
    )


class NicConfig(_Model):
    """UET-style NIC attributes (names and ranges as the UET spraying documentation)."""

    packet_spraying_type: Annotated[str, RegisteredName("nic.packet_spraying_type")] = Field(
        "default",
        alias="PacketSprayingType",
        description="per-packet entropy selection; unset, it is none under the per-flow "
        "lb.policy values (ecmp, pinned, qp_scaling, ark), so set it to spray",
    )
    entropy_mask_bits: int = Field(
        7, ge=0, le=8, alias="EntropyMaskBits", description="default spraying: 2^bits values"
    )
    starting_port_offset: int = Field(
        256, ge=0, le=65535, alias="StartingPortOffset", description="default spraying: first port"
    )
    reps_buffer_size_mask_bits: int = Field(
        3, ge=0, le=16, alias="REPSBufferSizeMaskBits", description="REPS cache of 2^bits values"
    )
    entropy_value_set_size: int = Field(
        65536, ge=1, le=65536, alias="EntropyValueSetSize", description="REPS: explore range"
    )
    freezing_timeout_us: float = Field(
        100.0, ge=0, le=1e9, alias="FreezingTimeout", description="REPS: minimum freezing, us"
    )
    failure_detection_rtt_multiplier: float = Field(
        3.0,
        ge=0,
        le=1e6,
        alias="FailureDetectionRTTMultiplier",
        description="REPS early failure detection, x base RTT (0 = off)",
    )
    initial_base_rtt_us: float | Literal["auto"] = Field(
        6.0, alias="InitialBaseRTT", description="initial base RTT, us, or auto (unloaded RTT)"
    )
    rdma_data_mss: int = Field(
        4096, ge=64, le=65536, alias="RdmaDataMSS", description="payload bytes per data packet"
    )
    pdc_groups_enabled: bool = Field(True, alias="PDCGroupsEnabled", description="PDC groups")
    header_bytes: int = Field(88, ge=0, le=4096, description="header bytes per packet")
    cc: Annotated[str, RegisteredName("nic.cc")] = Field(
        "constant", description="congestion control"
    )
    cwnd_bdp: float = Field(1.5, gt=0, le=1000, description="constant CC window, x BDP")
    rto_us: float | None = Field(
        None, ge=1e-6, le=1e9, description="initial retransmission timeout, us (>= 1 ps)"
    )
    max_retries: int = Field(8, ge=0, le=64, description="retransmissions before giving up")
    oblivious_values: int | None = Field(
        None,
        ge=1,
        le=65536,
        description="oblivious spraying: a cycle over this many values (a power of two; htsim "
        "-paths) instead of uniform draws over 65,536",
    )
    rto_backoff: bool = Field(
        True, description="double a packet's RTO on each of its timeouts (false: fixed, as htsim)"
    )
    ack_coalesce: int = Field(1, ge=1, le=64, description="data packets per ACK (coalescing)")
    ack_bytes: int | None = Field(
        None,
        ge=1,
        le=1 << 24,
        description="coalescing by bytes: one ACK per this many received wire bytes (htsim's "
        "SACK threshold); null: one per nic.ack_coalesce packets",
    )
    ack_request: bool = Field(
        True,
        description="immediate ACKs: the sender flags a packet that fills its window, its "
        "last packet and every retransmission; the receiver answers flagged, first, "
        "ECN-marked and duplicate packets at once (and once more when a flagged hole fills)",
    )
    control_per_data: int | None = Field(
        None,
        ge=1,
        le=1 << 20,
        description="transmit scheduler: ACKs/NACKs sent per data packet while both wait "
        "(htsim 10); null: control always first",
    )
    reps_recycle_last_hop_nack: bool = Field(
        False,
        description="REPS: a NACK of a packet trimmed at the receiver's own port recycles its "
        "entropy like an ACK (the path was fine; htsim)",
    )
    nscc: NsccConfig = Field(
        default_factory=NsccConfig,  # type: ignore[arg-type]
        description="NSCC tuning (nic.nscc.*), read only by nic.cc: nscc",
    )
    plb: PlbConfig = Field(
        default_factory=PlbConfig,  # type: ignore[arg-type]
        description="PLB tuning (nic.plb.*), read only by nic.packet_spraying_type: plb",
    )
    reps: RepsConfig = Field(
        default_factory=RepsConfig,  # type: ignore[arg-type]
        description="REPS tuning (nic.reps.*), read only by nic.packet_spraying_type: reps",
    )
    reroute_rtts: float = Field(
        10.0,
        gt=0,
        le=1e6,
        description="rod: the entropy changes at most once per this many base RTTs (on "
        "congestion or loss)",
    )
    delivery_mode: Literal["rud", "rod", "rudi", "uud"] = Field(
        "rud",
        description="UET delivery mode: rud reliable unordered; rod reliable ordered (one path: "
        "unset, nic.packet_spraying_type rod; go-back-N); rudi reliable unordered, idempotent "
        "(no duplicate detection); uud unreliable (no ACKs, no retransmission)",
    )
    plane_select: Literal["hash", "round_robin", "pinned"] = Field(
        "hash",
        description="multi_plane: the plane a packet leaves on: hash (the NIC hashes the "
        "5-tuple: per entropy value, so NIC spraying spreads over planes), round_robin (the "
        "c-th flow key host h sends goes on plane (h + c) mod planes), pinned (nic.pinned_plane)",
    )
    pinned_plane: int = Field(
        0, ge=0, le=7, description="plane_select pinned: the plane (another when it is down)"
    )
    transport: Annotated[str, RegisteredName("nic.transport")] = Field(
        "uet",
        description="uet: SACK, out-of-order placement, NACK on trim; roce: RoCEv2 RC, in-order "
        "delivery, NAK + go-back-N (and, unset, switch.pfc true and nic.cc dcqcn); roce_sr: "
        "RoCE with selective repeat (IRN-style: out-of-order placement, holes resent, a BDP "
        "window; unset, nic.cc dcqcn and no PFC)",
    )
    roce: RoceConfig = Field(
        default_factory=RoceConfig,  # type: ignore[arg-type]
        description="RoCEv2 RC transport (nic.roce.*), read only by nic.transport: roce",
    )
    dcqcn: DcqcnConfig = Field(
        default_factory=DcqcnConfig,  # type: ignore[arg-type]
        description="DCQCN tuning (nic.dcqcn.*), read only by nic.cc: dcqcn",
    )

    @model_validator(mode="after")
    def _one_coalescing(self) -> NicConfig:
        if self.ack_bytes is not None and self.ack_coalesce > 1:
            raise ValueError(
                f"ack_bytes ({self.ack_bytes}) and ack_coalesce ({self.ack_coalesce}) both set: "
                "coalesce by bytes or by packets, not both"
            )
        return self

    @field_validator("oblivious_values")
    @classmethod
    def _power_of_two(cls, v: int | None) -> int | None:
        if v is not None and v & (v - 1):
            raise ValueError(f"must be a power of two between 1 and 65536 (got {v})")
        return v

    def ack_every_packets(self) -> int:
        """Full data packets per coalesced ACK (from ``ack_bytes`` if it is set)."""
        if self.ack_bytes is None:
            return self.ack_coalesce
        return max(1, -(-self.ack_bytes // (self.rdma_data_mss + self.header_bytes)))

    @field_validator("initial_base_rtt_us")
    @classmethod
    def _rtt_positive(cls, v: float | str) -> float | str:
        if not isinstance(v, str) and not 0 < v <= 1e6:
            raise ValueError(f"must be > 0 and <= 1e6 us, or 'auto' (got {v})")
        return v


class RecordsConfig(_Model):
    """What to record beyond the summary and the flow table."""

    timelines: bool = Field(False, description="link and spine timelines")
    uet_monitor: bool = Field(False, description="one row per data packet sent")
    uet_transport_stats: bool = Field(False, description="per-NIC transport counters")
    switch_lb_stats: bool = Field(False, description="bytes/packets per ECMP member")
    port_stats: bool = Field(False, description="per-port counters")
    timeline_interval_us: float = Field(
        10.0, ge=1e-6, le=1e12, description="packet engine sampling, us (>= 1 ps)"
    )


class Scenario(_Model):
    """A complete scenario: topology, workload, policies, records and seed."""

    name: str = Field(
        "custom",
        description="scenario name: letters, digits, '.', '_', '-'; no leading dot or dash "
        "(names the default output directory runs/<name>-<engine>)",
    )
    description: str = Field("", description="one line")
    seed: int = Field(1, ge=0, le=2**63 - 1, description="seed of every random draw")
    preset: str | None = Field(
        None,
        exclude=True,
        description="a named bottom layer of defaults (htsim-uec); its values are in the "
        "scenario's own keys, so the effective scenario does not name it",
    )
    engine: EngineConfig = Field(default_factory=EngineConfig)  # type: ignore[arg-type]
    topology: TopologyConfig = Field(default_factory=TopologyConfig)  # type: ignore[arg-type]
    workload: WorkloadConfig
    lb: LbConfig = Field(default_factory=LbConfig)  # type: ignore[arg-type]
    nic: NicConfig = Field(default_factory=NicConfig)  # type: ignore[arg-type]
    switch: SwitchConfig = Field(default_factory=SwitchConfig)  # type: ignore[arg-type]
    records: RecordsConfig = Field(default_factory=RecordsConfig)  # type: ignore[arg-type]
    inputs: dict[str, str] = Field(
        default_factory=dict,
        description="filled in at load: each input file's resolved path -> SHA-256 of its "
        "content; rerunning a recorded scenario whose file changed is refused",
    )

    _user_keys: frozenset[str] = PrivateAttr(default_factory=frozenset)
    _unpreset: dict[str, Any] | None = PrivateAttr(default=None)
    """The scenario's data without its preset's layer (``--set`` re-derives the preset)."""

    @field_validator("name")
    @classmethod
    def _safe_name(cls, v: str) -> str:
        if not re.fullmatch(NAME_PATTERN, v):
            raise ValueError(
                "letters, digits, '.', '_' and '-' only, not starting with '.' or '-', "
                f"at most 100 characters (got {v!r})"
            )
        return v

    @model_validator(mode="after")
    def _spraying_follows_policy(self) -> Scenario:
        """Per-flow policies mean one path per flow: no NIC spraying unless it is asked for."""
        nic = self.nic
        if "packet_spraying_type" not in nic.model_fields_set and has_trait(
            "lb.policy", self.lb.policy, ONE_PATH_PER_FLOW
        ):
            nic._derive("packet_spraying_type", "none")
        return self

    @model_validator(mode="after")
    def _spraying_follows_delivery_mode(self) -> Scenario:
        """ROD keeps one path (unset: spraying type ``rod``); see :mod:`.delivery`."""
        derive_spraying(self.nic)
        problem = delivery_problem(self.nic)
        if problem is not None:
            raise ValueError(problem)
        return self

    @model_validator(mode="after")
    def _transport_defaults(self) -> Scenario:
        """A RoCE transport brings DCQCN (and ``roce`` PFC) unless the scenario sets them: the
        transport's traits in the name table decide (:mod:`fabricsim.config.roce` lists every
        default)."""
        nic, sw = self.nic, self.switch
        if has_trait("nic.transport", nic.transport, ROCE_FABRIC):
            if "cc" not in nic.model_fields_set:
                nic._derive("cc", "dcqcn")
            if "pfc" not in sw.model_fields_set and has_trait(
                "nic.transport", nic.transport, PFC_BY_DEFAULT
            ):
                sw._derive("pfc", True)
            if "ecn_max_prob" not in sw.model_fields_set:
                sw._derive("ecn_max_prob", ECN_MAX_PROB)
            if "trimming" not in sw.model_fields_set:
                sw._derive("trimming", False)  # RoCE NICs cannot use a trimmed header
        if nic.cc == "dcqcn" and not has_trait("nic.transport", nic.transport, SENDS_CNPS):
            raise ValueError(
                "nic.cc: dcqcn reacts to CNPs, which only a RoCE receiver sends; set "
                f"nic.transport={' or '.join(transports_with(SENDS_CNPS))} (or another nic.cc)"
            )
        return self

    @model_validator(mode="after")
    def _pfc_fits_the_buffer(self) -> Scenario:
        """With PFC on and ``switch.buffer_bytes`` given, the buffer must hold XOFF + headroom
        at the fastest link into a switch (:func:`fabricsim.config.roce.pfc_scenario_problem`)."""
        problem = pfc_scenario_problem(self.switch, self.topology, self.nic)
        if problem is not None:
            raise ValueError(problem)
        return self

    @model_validator(mode="after")
    def _inputs_resolved_and_hashed(self) -> Scenario:
        """Input paths made absolute, their content hashed into ``inputs`` (:mod:`.inputs`);
        a recorded hash that no longer matches the file is refused."""
        self._derive("inputs", resolve_inputs(self.workload, self.inputs))
        return self

    _varied_keys: frozenset[str] = PrivateAttr(default_factory=frozenset)

    @property
    def user_keys(self) -> frozenset[str]:
        """Dotted keys the user set (their file, dict or ``--set``; not a built-in's)."""
        return self._user_keys

    @property
    def varied_keys(self) -> frozenset[str]:
        """Keys an experiment (compare, sweep, study) sets per variant (see ``varying``)."""
        return self._varied_keys

    def varying(self, keys: set[str] | frozenset[str]) -> Scenario:
        """This scenario, marked as one variant of an experiment that varies ``keys``."""
        out = self.model_copy()
        out._user_keys = self._user_keys
        out._unpreset = self._unpreset
        out._varied_keys = self._varied_keys | frozenset(keys)
        return out

    def with_overrides(self, overrides: dict[str, Any]) -> Scenario:
        """A new scenario with dotted-key overrides applied (the keys of ``--set``).

        Examples
        --------
        >>> from fabricsim import load_scenario
        >>> load_scenario("ark").with_overrides({"workload.qps": 5}).workload.qps
        5.0
        """
        return apply_overrides(self, overrides)

    def to_dict(self) -> dict[str, Any]:
        """The effective scenario, every default filled in, as plain JSON-able data (``inputs``
        only when the scenario reads an input file)."""
        out = self.model_dump(mode="json")
        if not out.get("inputs"):
            out.pop("inputs", None)
        return out

    def config_hash(self) -> str:
        """SHA-256 (first 16 hex digits) of the canonical JSON of the effective scenario, with
        each input file's content hash in place of its path (the same content and settings give
        the same hash however the path was spelled)."""
        data = by_content(self.to_dict())
        text = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]
