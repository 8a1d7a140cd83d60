"""The switch's knobs (``switch.*``): forwarding, hashing, buffers, ECN, trimming, PFC and its
pathologies, Link Layer Retry; a section of :class:`fabricsim.config.models.Scenario`."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from fabricsim.config.base import StrictModel
from fabricsim.config.names import RegisteredName
from fabricsim.units import MAX_TIME_S

__all__ = ["FIVE_TUPLE_FIELDS", "HashField", "StalledHost", "SwitchConfig"]


class _Model(StrictModel):
    pass


class StalledHost(_Model):
    """One host that stops draining (``switch.pfc_stalled_hosts`` entry)."""

    host: str = Field(..., min_length=1, description="host name, e.g. host3")
    at_s: float = Field(..., ge=0, le=MAX_TIME_S, description="when it stops draining, s")
    until_s: float | None = Field(
        None, ge=0, le=MAX_TIME_S, description="when it drains again, s (null: never)"
    )

    @model_validator(mode="after")
    def _ordered(self) -> StalledHost:
        if self.until_s is not None and self.until_s <= self.at_s:
            raise ValueError(
                f"until_s ({self.until_s}) must be > at_s ({self.at_s}): the stall ends after "
                "it begins"
            )
        return self


HashField = Literal["src_ip", "dst_ip", "src_port", "dst_port", "proto", "dst_qp"]
FIVE_TUPLE_FIELDS: tuple[HashField, ...] = ("src_ip", "dst_ip", "src_port", "dst_port", "proto")


class SwitchConfig(_Model):
    """Switch forwarding, hashing and buffers."""

    hash_method: Annotated[str, RegisteredName("switch.hash_method")] = Field(
        "crc32WithSalt", alias="EcmpHashMethod", description="ECMP hash of the 5-tuple"
    )
    salt_mode: Literal["per_switch", "shared"] = Field("per_switch", description="hash salts")
    hash_fields: list[HashField] = Field(
        default_factory=lambda: list(FIVE_TUPLE_FIELDS),
        min_length=1,
        description="header fields the ECMP hash sees (default the 5-tuple; add dst_qp for a "
        "UDF hash of the destination QP)",
    )
    load_balancing_method: Annotated[str, RegisteredName("switch.load_balancing_method")] = Field(
        "ecmp", alias="LoadBalancingMethod", description="switch member choice"
    )
    flowlet_gap_us: float = Field(10.0, gt=0, le=1e6, description="flowlet idle gap, us")
    flowlet_pick: Literal["random", "least_loaded"] = Field(
        "random", description="flowlet: member after a gap, random (LetFlow) or least loaded"
    )
    adaptive_quantum_bytes: int | None = Field(
        None, ge=1, description="adaptive: queues compared in units of bytes (null: 1 packet)"
    )
    buffer_bytes: int | None = Field(None, ge=1, description="per-port buffer, bytes")
    buffer_bdp: float = Field(1.0, gt=0, le=1e4, description="per-port buffer, x BDP")
    trimming: bool = Field(True, description="trim payloads of a full queue (else drop-tail)")
    ecn_min_bytes: int | None = Field(None, ge=0, description="ECN marking starts, bytes")
    ecn_max_bytes: int | None = Field(None, ge=0, description="ECN marks every packet, bytes")
    header_buffer_bytes: int | None = Field(
        None, ge=1, description="packet engine: priority (header/ACK) queue per port, bytes"
    )
    trim_last_queued: float = Field(
        0.0,
        ge=0,
        le=1,
        description="packet engine: chance that a full queue trims (or drops) its last queued "
        "packet instead of the arriving one (htsim 0.5)",
    )
    llr: bool = Field(
        False,
        description="packet engine: UEC Link Layer Retry on every link (switch and NIC ends): a "
        "corrupted frame is replayed by the link from its replay buffer, not by the transport",
    )
    llr_timeout_us: float | None = Field(
        None,
        gt=0,
        le=1e6,
        description="LLR replay timer, us: the sender replays this long after a corrupted frame "
        "left unless a NACK came sooner (null: 2 x the link's round trip)",
    )
    llr_nack: bool = Field(
        True, description="LLR: the receiver NACKs a corrupted frame (else the timer replays it)"
    )
    scale_buffers_with_rate: bool = Field(
        False,
        description="packet engine: a degraded link's buffer, priority queue and ECN "
        "thresholds shrink with the fraction of its rate it keeps (htsim's -failed links)",
    )
    ecn_max_prob: float = Field(
        1.0,
        gt=0,
        le=1,
        description="ECN marking probability reached at ecn_max_bytes (RED P_max; above it "
        "every packet is marked); unset under nic.transport roce: 0.01",
    )
    pfc: bool = Field(
        False,
        description="priority flow control: data is lossless (paused, never dropped or "
        "trimmed); unset, true under nic.transport roce",
    )
    pfc_xoff_bytes: int | None = Field(
        None,
        ge=1,
        le=1 << 40,
        description="PFC: an ingress port holding this many bytes pauses its upstream sender; "
        "null: the port's buffer less the headroom",
    )
    pfc_xon_bytes: int | None = Field(
        None,
        ge=0,
        le=1 << 40,
        description="PFC: ... and resumes it at or below this many (null: XOFF - 2 packets)",
    )
    pfc_dynamic_alpha: float | None = Field(
        None,
        gt=0,
        le=64,
        description="PFC dynamic thresholds: an ingress pauses at alpha x the switch's free "
        "shared buffer (XON 2 packets lower); null: the static pfc_xoff_bytes / pfc_xon_bytes",
    )
    pfc_shared_buffer_bytes: int | None = Field(
        None,
        ge=1,
        le=1 << 44,
        description="PFC dynamic thresholds: a switch's shared buffer, bytes (null: the sum of "
        "its ingress links' buffers, switch.buffer_bytes or buffer_bdp x BDP each)",
    )
    pfc_headroom_bytes: int | None = Field(
        None,
        ge=0,
        le=1 << 40,
        description="PFC: bytes accepted above XOFF while the pause travels; beyond, a packet "
        "is dropped (null: 2 x rate x delay + 3 packets)",
    )
    pfc_arbitration: Literal["round_robin", "fifo"] = Field(
        "round_robin",
        description="PFC: a lossless switch port serves its data round robin between the "
        "ingress ports it came over (round_robin, as PFC switches do) or in arrival order (fifo)",
    )
    pfc_watchdog_ms: float | None = Field(
        None,
        gt=0,
        le=10_000,
        description="PFC watchdog: a switch queue paused this long with data waiting drops its "
        "data and ignores pauses until none comes for as long (SONiC's drop action); null: off",
    )
    pfc_stalled_hosts: list[StalledHost] = Field(
        default_factory=list,
        description="PFC: hosts that stop draining (their NIC pauses its switch port for as "
        "long as it stalls), [{host, at_s, until_s}]",
    )

    @field_validator("hash_fields")
    @classmethod
    def _distinct_fields(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError(f"each field at most once (got {v})")
        return v

    @model_validator(mode="after")
    def _one_pfc_threshold_kind(self) -> SwitchConfig:
        if self.pfc_dynamic_alpha is not None:
            for name in ("pfc_xoff_bytes", "pfc_xon_bytes"):
                if getattr(self, name) is not None:
                    raise ValueError(
                        f"{name} and pfc_dynamic_alpha both set: PFC thresholds are static "
                        "(pfc_xoff_bytes, pfc_xon_bytes) or dynamic (pfc_dynamic_alpha), not both"
                    )
        return self

    @model_validator(mode="after")
    def _pfc_ordered(self) -> SwitchConfig:
        lo, hi = self.pfc_xon_bytes, self.pfc_xoff_bytes
        if lo is not None and hi is not None and lo > hi:
            raise ValueError(
                f"pfc_xon_bytes ({lo}) must be <= pfc_xoff_bytes ({hi}): a paused sender "
                "resumes at or below the pause threshold"
            )
        return self

    @model_validator(mode="after")
    def _ecn_ordered(self) -> SwitchConfig:
        lo, hi = self.ecn_min_bytes, self.ecn_max_bytes
        if lo is not None and hi is not None and lo > hi:
            raise ValueError(
                f"ecn_min_bytes ({lo}) must be <= ecn_max_bytes ({hi}): marking starts at the "
                "minimum and reaches every packet at the maximum"
            )
        return self
