"""Lossless RoCE keys and defaults, in one place: ``nic.roce.*``, ``nic.dcqcn.*``, the PFC keys.

A transport (``nic.transport``, registered in :mod:`fabricsim.transport`) declares traits in the
config name table; config reads the traits, never a transport's name.  A transport with the
:data:`ROCE_FABRIC` trait (``roce``, ``roce_sr``) alone gives a coherent RoCEv2 setup, and one
with :data:`PFC_BY_DEFAULT` (``roce``) a lossless one.  Every default they bring is applied
here and in the scenario's validation (the scenario's own values always win):

==============================  ==============================================================
key (unset)                     under a RoCE transport (``roce``, ``roce_sr``)
==============================  ==============================================================
``switch.pfc``                  ``true`` under ``roce`` (lossless data priority: no drops, no
                                trimming); ``false`` under ``roce_sr`` (selective repeat needs
                                no lossless fabric)
``nic.cc``                      ``dcqcn``
``switch.trimming``             ``false`` (a RoCE NIC has no use for a trimmed header; with
                                PFC on trimming never applies anyway)
``switch.pfc_xoff_bytes``       per ingress port: 2 x the port's ECN maximum (1 MB at 100
                                Gbps), so ECN marks every packet before PFC pauses (the
                                paper's rule: K_max below the PFC threshold); without RoCE,
                                PFC's XOFF is the port's buffer (``switch.buffer_bytes`` or
                                ``buffer_bdp`` x BDP) less the headroom, at least 2 packets
``switch.pfc_xon_bytes``        XOFF less 2 full packets
``switch.pfc_headroom_bytes``   2 x the link's bytes in flight one way (rate x delay) + 3 full
                                packets: the pause's trip, the packet on the wire up there, the
                                one being received
``switch.ecn_min_bytes``        5 KB x port rate / 40 Gbps (the DCQCN paper's thresholds at 40
``switch.ecn_max_bytes``        Gbps, scaled with the rate); 200 KB x rate / 40 Gbps
``switch.ecn_max_prob``         0.01 (the paper's P_max)
``nic.rto_us``                  under ``roce`` at least 4 ms (RoCE NICs time out in
                                milliseconds; PFC queues can hold a packet far longer than the
                                buffer's drain time); ``roce_sr`` too with PFC on, without it
                                the engine's default (no floor)
==============================  ==============================================================

The DCQCN parameters and their sources are in :class:`DcqcnConfig` and ``docs/dcqcn.md``;
PFC, the RC transport and what is modelled in ``docs/roce.md``.

Examples
--------
>>> pfc_headroom_bytes(100e9, 1_000_000, 4184)
37552
>>> dcqcn_ecn_bytes(100e9)
(12500, 500000)
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from fabricsim.config.base import StrictModel
from fabricsim.config.names import has_trait, name_entries
from fabricsim.units import gbps_to_bps, us_to_ps

RTO_FLOOR_US = 4000.0
"""RoCE: the automatic retransmission timeout is at least this long, us."""
PFC_BY_DEFAULT = "pfc_by_default"
"""Transport trait: an unset ``switch.pfc`` is true (the transport needs a lossless fabric)."""
ROCE_FABRIC = "roce_fabric"
"""Transport trait: RoCE's defaults (``nic.cc`` dcqcn, DCQCN's ECN thresholds and P_max, no
trimming, PFC's XOFF from the ECN maximum)."""
SENDS_CNPS = "sends_cnps"
"""Transport trait: the receiver sends CNPs (DCQCN's notification point): ``nic.cc: dcqcn``
needs it."""
ECN_REFERENCE_BPS = 40e9
ECN_MIN_AT_REFERENCE = 5_000
ECN_MAX_AT_REFERENCE = 200_000
ECN_MAX_PROB = 0.01
PAUSE_QUANTA = 65535
"""Quanta of an XOFF frame (802.1Qbb: 16 bits); one quantum is 512 bit times."""


class RoceConfig(StrictModel):
    """RoCEv2 reliable-connected transport (``nic.roce``); each key is read only by the
    transports that list it among their knobs (``nic.transport: roce``)."""

    retransmit: Literal["go_back_n", "selective"] = Field(
        "go_back_n",
        description="go_back_n: the receiver drops out-of-sequence packets and NAKs, the sender "
        "resends from there; selective: out-of-order placement, holes resent (IRN-like)",
    )
    nak_interval_us: float = Field(
        500.0,
        gt=0,
        le=1e6,
        description="a receiver repeats a NAK for the same expected PSN only after this long, "
        "us (ns-3 RDMA: 500)",
    )


class DcqcnConfig(StrictModel):
    """DCQCN's knobs (``nic.dcqcn``), read only by ``nic.cc: dcqcn`` (``docs/dcqcn.md``).

    The defaults are the NVIDIA ConnectX (mlx5) firmware defaults, the firmware name of each
    in brackets; :data:`DCQCN_PAPER` holds the paper's values (Zhu et al., SIGCOMM 2015).
    """

    cnp_interval_us: float = Field(
        4.0,
        gt=0,
        le=1e6,
        description="NP: at most one CNP per QP per this long, us (mlx5 min_time_between_cnps "
        "4; paper N 50)",
    )
    g: float = Field(
        5 / 1024,
        gt=0,
        le=1,
        description="RP: alpha's EWMA gain (mlx5 dce_tcp_g 1019: g = 1 - 1019/1024; paper 1/256)",
    )
    alpha_interval_us: float = Field(
        1.0,
        gt=0,
        le=1e6,
        description="RP: alpha decays by (1 - g) after each such period without a CNP, us "
        "(mlx5 dce_tcp_rtt 1; paper K 55)",
    )
    rate_decrease_interval_us: float = Field(
        4.0,
        ge=0,
        le=1e6,
        description="RP: at most one rate cut per this long, us; a CNP inside it cuts when it "
        "ends (mlx5 rate_reduce_monitor_period 4; 0: every CNP cuts at once, the paper)",
    )
    rate_timer_us: float = Field(
        300.0,
        gt=0,
        le=1e6,
        description="RP: a rate-increase event after each such period since the last cut, us "
        "(mlx5 rpg_time_reset 300; paper T 55)",
    )
    byte_counter_bytes: int | None = Field(
        32767,
        ge=1,
        le=1 << 40,
        description="RP: a rate-increase event after each such many bytes sent since the last "
        "cut (mlx5 rpg_byte_reset 32767; paper B 10 MB); null: the timer alone counts",
    )
    fast_recovery_steps: int = Field(
        1,
        ge=0,
        le=1000,
        description="RP: F, the increase events of fast recovery before additive increase "
        "(mlx5 rpg_threshold 1; paper 5)",
    )
    ai_mbps: float = Field(
        5.0,
        ge=0,
        le=1e7,
        description="RP: additive increase of the target rate, Mb/s (mlx5 rpg_ai_rate 5; "
        "paper R_AI 40)",
    )
    hai_mbps: float = Field(
        50.0,
        ge=0,
        le=1e7,
        description="RP: hyper increase: the target rate grows by i x this per event, i the "
        "hyper stage, Mb/s (mlx5 rpg_hai_rate 50)",
    )
    min_rate_mbps: float = Field(
        1.0,
        gt=0,
        le=1e7,
        description="RP: the rate never falls below this, Mb/s (mlx5 rpg_min_rate 1)",
    )
    initial_alpha: float = Field(
        1023 / 1024,
        ge=0,
        le=1,
        description="RP: alpha of a new QP, used by its first cut (mlx5 initial_alpha_value "
        "1023: 1023/1024)",
    )
    clamp_target_rate: bool = Field(
        False,
        description="RP: true: every cut sets the target rate to the current rate (the paper; "
        "mlx5 clamp_tgt_rate 1); false: only a cut after an increase event (mlx5 default: "
        "clamp_tgt_rate 0, clamp_tgt_rate_after_time_inc 1)",
    )

    @model_validator(mode="after")
    def _hyper_not_below_additive(self) -> DcqcnConfig:
        if self.hai_mbps < self.ai_mbps:
            raise ValueError(
                f"hai_mbps ({self.hai_mbps:g}) must be >= ai_mbps ({self.ai_mbps:g}): hyper "
                "increase is the faster one"
            )
        return self


DCQCN_PAPER: dict[str, Any] = {
    "cnp_interval_us": 50.0,
    "g": 1 / 256,
    "alpha_interval_us": 55.0,
    "rate_decrease_interval_us": 0.0,
    "rate_timer_us": 55.0,
    "byte_counter_bytes": 10_000_000,
    "fast_recovery_steps": 5,
    "ai_mbps": 40.0,
    "initial_alpha": 1.0,
    "clamp_target_rate": True,
}
"""``nic.dcqcn`` as the DCQCN paper sets it (N, g, K, T, B, F, R_AI; every CNP cuts and sets
RT = RC; alpha 1 at the first CNP); the keys not here keep their (mlx5) defaults."""


def pfc_headroom_bytes(rate_bps: float, delay_ps: int, mtu_bytes: int) -> int:
    """Bytes an ingress may still receive after it decides to pause its upstream port.

    The XOFF frame takes the link's delay to arrive, the upstream port finishes the packet it
    is sending, and what was on the wire keeps arriving: 2 x rate x delay + 3 full packets.
    """
    in_flight = int(rate_bps * delay_ps / 8e12 + 0.999999)
    return 2 * in_flight + 3 * mtu_bytes


def pfc_thresholds(
    buffer_bytes: int,
    rate_bps: float,
    delay_ps: int,
    mtu_bytes: int,
    xoff: int | None,
    xon: int | None,
    headroom: int | None,
    ecn_max_bytes: int | None = None,
) -> tuple[int, int, int]:
    """(XOFF, XON, headroom) of one ingress port in bytes, the keys' values or their defaults.

    ``ecn_max_bytes`` (RoCE): XOFF defaults to twice it instead of the buffer less the headroom.

    >>> pfc_thresholds(200_000, 100e9, 1_000_000, 4184, None, None, None)
    (162448, 154080, 37552)
    >>> pfc_thresholds(200_000, 100e9, 1_000_000, 4184, None, None, None, 500_000)
    (1000000, 991632, 37552)
    """
    room = pfc_headroom_bytes(rate_bps, delay_ps, mtu_bytes) if headroom is None else headroom
    if xoff is not None:
        off = xoff
    elif ecn_max_bytes is not None:
        off = max(2 * ecn_max_bytes, 2 * mtu_bytes)
    else:
        off = max(buffer_bytes - room, 2 * mtu_bytes)
    on = max(off - 2 * mtu_bytes, 0) if xon is None else min(xon, off)
    return off, on, room


def pause_ps(rate_bps: float) -> int:
    """How long a full XOFF frame (65,535 quanta of 512 bit times) pauses a port, ps."""
    return int(PAUSE_QUANTA * 512 * 1e12 / max(rate_bps, 1.0))


def dcqcn_ecn_bytes(rate_bps: float) -> tuple[int, int]:
    """The DCQCN paper's ECN thresholds (5 KB / 200 KB at 40 Gbps) scaled to ``rate_bps``."""
    scale = rate_bps / ECN_REFERENCE_BPS
    return int(ECN_MIN_AT_REFERENCE * scale), int(ECN_MAX_AT_REFERENCE * scale)


def pfc_buffer_problem(
    buffer_bytes: int,
    rate_bps: float,
    delay_ps: int,
    mtu_bytes: int,
    xoff: int | None,
    xon: int | None,
    headroom: int | None,
    ecn_max_bytes: int | None = None,
) -> str | None:
    """Why a port buffer of ``buffer_bytes`` cannot hold PFC's thresholds on a ``rate_bps`` link
    (None when it can): the ingress may hold XOFF + the headroom before the pause takes hold,
    so the buffer must be at least that, and XON must not be above XOFF.

    >>> print(pfc_buffer_problem(100, 100e9, 1_000_000, 4184, None, None, None))
    switch.buffer_bytes: must be >= PFC's XOFF + headroom (8368 + 37552 = 45920 bytes at 100 Gbps; got 100): raise it, or lower switch.pfc_xoff_bytes / switch.pfc_headroom_bytes
    >>> pfc_buffer_problem(200_000, 100e9, 1_000_000, 4184, None, None, None) is None
    True
    """
    off, _, room = pfc_thresholds(
        buffer_bytes, rate_bps, delay_ps, mtu_bytes, xoff, None, headroom, ecn_max_bytes
    )
    at = f"{rate_bps / 1e9:g} Gbps"
    if xon is not None and xon > off:
        return (
            f"switch.pfc_xon_bytes: must be <= PFC's XOFF ({off} bytes at {at}; got {xon}): a "
            "paused sender resumes at or below the pause threshold"
        )
    if off + room <= buffer_bytes:
        return None
    return (
        f"switch.buffer_bytes: must be >= PFC's XOFF + headroom ({off} + {room} = {off + room} "
        f"bytes at {at}; got {buffer_bytes}): raise it, or lower switch.pfc_xoff_bytes / "
        "switch.pfc_headroom_bytes"
    )


def pfc_scenario_problem(switch: Any, topology: Any, nic: Any) -> str | None:
    """:func:`pfc_buffer_problem` of a scenario's sections, at its fastest link into a switch
    (the largest headroom and, under RoCE, the largest ECN maximum); None when PFC is off, the
    buffer is ``buffer_bdp``-sized (known only with the fabric) or thresholds are dynamic."""
    if not switch.pfc or switch.buffer_bytes is None or switch.pfc_dynamic_alpha is not None:
        return None
    rates = [topology.host_link_gbps, topology.fabric_link_gbps, topology.core_link_gbps or 0.0]
    given = topology.host_nic_gbps or []
    rates += list(given.values() if isinstance(given, dict) else given)
    rate = gbps_to_bps(max(rates))
    roce = has_trait("nic.transport", nic.transport, ROCE_FABRIC)
    ecn = switch.ecn_max_bytes
    if roce and ecn is None:
        ecn = dcqcn_ecn_bytes(rate)[1]
    return pfc_buffer_problem(
        switch.buffer_bytes,
        rate,
        us_to_ps(topology.link_delay_us),
        nic.rdma_data_mss + nic.header_bytes,
        switch.pfc_xoff_bytes,
        switch.pfc_xon_bytes,
        switch.pfc_headroom_bytes,
        ecn if roce else None,
    )


def transports_with(trait: str) -> tuple[str, ...]:
    """The registered transports that declare ``trait`` (for messages)."""
    return tuple(e.name for e in name_entries("nic.transport") if trait in e.traits)
