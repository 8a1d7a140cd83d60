"""PLB's knobs (``nic.plb``): Protective Load Balancing's repath rule, read only by
``nic.packet_spraying_type: plb``."""

from __future__ import annotations

from pydantic import Field

from fabricsim.config.base import StrictModel

__all__ = ["PlbConfig"]


class PlbConfig(StrictModel):
    """PLB's knobs (``nic.plb``), read only by ``nic.packet_spraying_type: plb``; defaults as
    the PLB paper's Linux implementation (``tcp_plb_*``)."""

    congested_fraction: float = Field(
        0.5,
        gt=0,
        le=1,
        description="a round (one RTT of ACKs) is congested when at least this fraction of its "
        "ACKed packets carry an ECN echo (tcp_plb_cong_thresh 128/256)",
    )
    rehash_rounds: int = Field(
        12,
        ge=1,
        le=10_000,
        description="repath after this many consecutive congested rounds (tcp_plb_rehash_rounds)",
    )
    idle_rehash_rounds: int = Field(
        3,
        ge=1,
        le=10_000,
        description="... or after this many if the connection has nothing in flight at that "
        "moment (tcp_plb_idle_rehash_rounds)",
    )
    idle_only: bool = Field(
        False,
        description="repath only when the connection is idle (nothing in flight), as for "
        "transports that need in-order delivery",
    )
