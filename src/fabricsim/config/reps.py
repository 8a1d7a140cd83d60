"""REPS's knobs beyond the seed's (``nic.reps``), read only by
``nic.packet_spraying_type: reps``."""

from __future__ import annotations

from pydantic import Field

from fabricsim.config.base import StrictModel

__all__ = ["RepsConfig"]


class RepsConfig(StrictModel):
    """REPS's knobs (``nic.reps``); the seed's REPS keys stay flat (``nic.reps_*``)."""

    use_csig: bool = Field(
        False,
        description="CSIG: an ACK whose path's worst hop queued at least a fifth of the base "
        "RTT counts as congested (its entropy is not recycled), as an ECN-marked one does",
    )
