"""What the RoCE transports (``roce``, ``roce_sr``) share: their counters and NIC settings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fabricsim.units import us_to_ps

if TYPE_CHECKING:
    from fabricsim.config.models import NicConfig
    from fabricsim.nic.pdc import NicEnv

RC_COUNTERS = ("cnps_sent", "cnps_received", "naks_received")
"""The NIC counters a RoCE transport adds to ``uet_transport_stats`` (``nacks_sent`` counts
its NAKs)."""
RC_SUMMARY = ("naks_received", "cnps_sent")
"""... and those the run's summary shows."""


def configure_rc(env: NicEnv, cfg: NicConfig) -> None:
    """The RoCE settings of the shared NIC environment: the NAK repeat interval, and the CNP
    interval of DCQCN's notification point (no CNPs under another ``nic.cc``)."""
    env.nak_ps = us_to_ps(cfg.roce.nak_interval_us)
    env.cnp_ps = us_to_ps(cfg.dcqcn.cnp_interval_us) if cfg.cc == "dcqcn" else 0
