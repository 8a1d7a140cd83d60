"""What the packet engine checks before it builds anything: the times its integer clock can
hold (one line naming the key when one cannot), the packet budget, and the warnings about
settings that will not do what they seem to (REPS under flowlet switching, qp_scaling's QPs on
one path).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from fabricsim.config.models import Scenario
from fabricsim.errors import ConfigError, EngineRefusal
from fabricsim.units import MAX_TIME_S, s_to_ps, s_to_us, us_to_ps
from fabricsim.workloads.base import FlowTable

MAX_TIME_PS = s_to_ps(MAX_TIME_S)
"""No input time goes past this (1e18 ps: inside int64, where the outputs keep times)."""

LIMIT_MAX_PS = 4 * MAX_TIME_PS
"""No run goes past this: a flow may start at ``MAX_TIME_S`` and still have its automatic
time to finish (4e18 ps: inside int64, 2**63 = 9.2e18, with room for a last event's delay)."""


def time_ps(value_s: float, key: str) -> int:
    """``value_s`` seconds as integer picoseconds, or :class:`ConfigError` naming ``key``.

    A time that is not finite, negative or over ``MAX_TIME_S`` would overflow the engine's
    integer clock (or never come); it is refused in one line instead.

    Examples
    --------
    >>> time_ps(1.5e-6, "workload.start_s")
    1500000
    >>> time_ps(float("inf"), "engine.time_limit_s")
    Traceback (most recent call last):
    ...
    fabricsim.errors.ConfigError: engine.time_limit_s: must be a finite time in [0, 1e+06] s (MAX_TIME_S), got inf
    """
    v = float(value_s)
    if not (math.isfinite(v) and 0.0 <= v <= MAX_TIME_S):
        raise ConfigError(
            f"{key}: must be a finite time in [0, {MAX_TIME_S:g}] s (MAX_TIME_S), got {v:g}"
        )
    return s_to_ps(v)


def duration_ps(value_us: float, key: str) -> int:
    """A positive duration in microseconds as picoseconds (>= 1 ps), or :class:`ConfigError`."""
    v = float(value_us)
    if not (math.isfinite(v) and v <= s_to_us(MAX_TIME_S)) or us_to_ps(v) < 1:
        raise ConfigError(
            f"{key}: must be between 1e-06 us (1 ps) and {s_to_us(MAX_TIME_S):g} us (MAX_TIME_S), "
            f"got {v:g}"
        )
    return us_to_ps(v)


def _start_key(sc: Scenario) -> str:
    """The key that sets the flows' start times (named when one is out of range)."""
    kind = sc.workload.kind
    if kind == "trace":
        return "workload.path (start_s column)"
    if kind == "kv_cache":
        return "workload.qps (Poisson arrivals of workload.requests)"
    return "workload.start_s"


def check_packet_scenario(sc: Scenario) -> None:
    """Warn or refuse (:class:`EngineRefusal`) what the packet engine cannot run as asked."""
    if sc.nic.packet_spraying_type == "reps" and sc.switch.load_balancing_method == "flowlet":
        warnings.warn(
            "nic.packet_spraying_type=reps with switch.load_balancing_method=flowlet: the switches "
            "move flows between members at gaps, so REPS's entropy feedback loses its meaning",
            stacklevel=3,
        )
    if sc.lb.policy == "qp_scaling" and sc.nic.packet_spraying_type == "none":
        _warn_qp_paths(sc)


def _warn_qp_paths(sc: Scenario) -> None:
    """Warn where qp_scaling's QPs to one peer end on one path (spraying none).

    A PDC group's QPs share its entropy value (the first QP's source port); with
    ``lb.qp_field=dst_qp`` each QP still carries its own destination QP, so they take their
    own paths exactly when the switches hash it (``dst_qp`` in ``switch.hash_fields``).
    """
    if sc.lb.qp_field == "dst_qp":
        if "dst_qp" not in sc.switch.hash_fields:
            warnings.warn(
                "lb.qp_field=dst_qp: the QPs differ only in the destination QP, which "
                "switch.hash_fields does not include, so a peer's QPs take one path; add "
                "dst_qp to switch.hash_fields for one path per QP",
                stacklevel=4,
            )
    elif sc.nic.pdc_groups_enabled:
        warnings.warn(
            "lb.policy=qp_scaling with nic.pdc_groups_enabled and spraying none: concurrent "
            "connections to one peer share their PDC group's source port (one path); set "
            "nic.pdc_groups_enabled=false or lb.qp_field=dst_qp with dst_qp in "
            "switch.hash_fields for one path per QP",
            stacklevel=4,
        )


def check_packet_times(sc: Scenario, flows: FlowTable) -> None:
    """Refuse (:class:`ConfigError`, one line naming the key) times the integer clock cannot hold.

    The config bounds these at input; this keeps the engine safe whatever reaches it.
    """
    if sc.engine.time_limit_s is not None:
        time_ps(sc.engine.time_limit_s, "engine.time_limit_s")
    start = np.asarray(flows.start_s, dtype=np.float64)
    bad = np.flatnonzero(~(np.isfinite(start) & (start >= 0) & (start <= MAX_TIME_S)))
    if len(bad):
        time_ps(float(start[bad[0]]), f"{_start_key(sc)}: flow {int(bad[0])} start")
    for i, failure in enumerate(sc.topology.link_failures):
        time_ps(failure.at_s, f"topology.link_failures[{i}].at_s")
    if sc.records.timelines:
        duration_ps(sc.records.timeline_interval_us, "records.timeline_interval_us")
    if sc.nic.rto_us:
        duration_ps(sc.nic.rto_us, "nic.rto_us")
    sizes = np.maximum(np.asarray(flows.size_bytes, dtype=np.int64), 1)
    packets = int(np.sum(-(-sizes // sc.nic.rdma_data_mss), dtype=np.float64))
    if packets > sc.engine.max_packets:  # per-PSN state is allocated up front: refuse first
        raise EngineRefusal(
            f"scenario '{sc.name}' needs about {packets:.2g} data packets, over "
            f"engine.max_packets={sc.engine.max_packets:.2g}; use --engine flow or a smaller "
            "workload"
        )
