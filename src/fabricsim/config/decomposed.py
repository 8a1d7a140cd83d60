"""The decomposed engine's knobs (``engine.decomposed``), read only by ``--engine decomposed``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from fabricsim.config.base import StrictModel

__all__ = ["DecomposedConfig"]


class DecomposedConfig(StrictModel):
    """How the decomposed engine splits a run into link simulations (``engine.decomposed``)."""

    cluster_tolerance: float = Field(
        0.1,
        ge=0,
        le=10,
        description="links whose workloads agree within this relative tolerance in every "
        "feature (sub-flows, bytes, mean and p90 size, senders; same position and rates) are "
        "simulated once (0: simulate every loaded link)",
    )
    aggregate: Literal["scaled", "bottleneck", "sum", "max"] = Field(
        "scaled",
        description="how a flow's link results combine: scaled (its FCT in the routing run, "
        "the flow engine on the whole fabric, times the largest packet-over-fluid FCT ratio "
        "of its link simulations), bottleneck (its ideal FCT plus link delays, at each point "
        "of its lifetime only its most loaded links' counting, shared), sum (every link's "
        "delay, as Parsimon's default), max (only the largest delay)",
    )
