"""The result type of the ECMP collision statistics and the shared input check.

See :mod:`fabricsim.analysis.ecmp_math` for the model and the methods.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fabricsim.errors import ConfigError

__all__ = ["EcmpCollisionStats"]


@dataclass(frozen=True)
class EcmpCollisionStats:
    """Collision statistics for ``flows * qp_scaling`` sub-flows hashed onto ``uplinks``.

    With ``qp_scaling = q`` every flow is split over ``q`` queue pairs, each carrying ``1/q``
    of the flow's data and hashed independently, so all the statistics below are for the
    ``N * q`` sub-flows.

    Attributes
    ----------
    flows : int
        Number of flows ``N`` (before queue-pair scaling).
    uplinks : int
        Number of equal-cost uplinks ``M``.
    qp_scaling : int
        Queue pairs per flow ``q``; ``N * q`` sub-flows are hashed.
    p_no_collision : float
        Probability that every sub-flow gets an uplink of its own (0 when ``N * q > M``).
    expected_idle_uplinks : float
        Expected number of uplinks carrying no sub-flow, ``M (1 - 1/M)**(N q)`` (uplinks).
    expected_max_load : float
        Expected number of sub-flows on the busiest uplink, ``E[max load]`` (sub-flows).
    efficiency : float
        ``E[1 / max load]``: the expected fraction of line rate that the slowest sub-flow of
        a synchronized step gets (dimensionless, in ``(0, 1]``).
    slowdown : float
        ``E[max load] / (N q / M)``: the busiest uplink's expected load relative to a
        perfectly even spread (dimensionless, ``>= 1`` when ``N q >= M``).
    max_load_distribution : dict[int, float]
        ``{k: P(max load == k)}`` for ``k = ceil(N q / M) .. N q``.  Probabilities below the
        smallest positive float come out as ``0.0``.  With ``method == "numeric"``,
        probabilities below ``1e-300`` are ``0.0`` and the dict stops at the last load whose
        probability is at least ``1e-300``.
    method : str
        How the statistics were computed: ``exact`` (rational arithmetic, rounded once),
        ``numeric`` (float64, see the module docstring for its accuracy) or ``monte_carlo``
        (sample means of :func:`monte_carlo_collision_stats`).

    Examples
    --------
    >>> from fabricsim.analysis.ecmp_math import ecmp_collision_stats
    >>> stats = ecmp_collision_stats(flows=2, uplinks=2)
    >>> stats.p_no_collision, stats.expected_max_load, stats.max_load_distribution
    (0.5, 1.5, {1: 0.5, 2: 0.5})
    >>> stats.to_dict()["max_load_distribution"]
    {'1': 0.5, '2': 0.5}
    """

    flows: int
    uplinks: int
    qp_scaling: int
    p_no_collision: float
    expected_idle_uplinks: float
    expected_max_load: float
    efficiency: float
    slowdown: float
    max_load_distribution: dict[int, float] = field(hash=False)
    method: str = "exact"

    def to_dict(self) -> dict[str, Any]:
        """Return the statistics as a JSON-ready dict.

        Returns
        -------
        dict
            Keys ``flows``, ``uplinks``, ``qp_scaling``, ``p_no_collision``,
            ``expected_idle_uplinks``, ``expected_max_load``, ``efficiency``, ``slowdown`` and
            ``max_load_distribution`` (whose keys, the loads, are strings, as JSON requires);
            ``method`` too when it is not ``exact`` (so exact output keeps its shape).

        Examples
        --------
        >>> import json
        >>> from fabricsim.analysis.ecmp_math import ecmp_collision_stats
        >>> d = ecmp_collision_stats(1, 4).to_dict()
        >>> d["p_no_collision"], d["expected_idle_uplinks"], d["max_load_distribution"]
        (1.0, 3.0, {'1': 1.0})
        >>> isinstance(json.dumps(d), str)
        True
        """
        out: dict[str, Any] = {
            "flows": self.flows,
            "uplinks": self.uplinks,
            "qp_scaling": self.qp_scaling,
            "p_no_collision": self.p_no_collision,
            "expected_idle_uplinks": self.expected_idle_uplinks,
            "expected_max_load": self.expected_max_load,
            "efficiency": self.efficiency,
            "slowdown": self.slowdown,
            "max_load_distribution": {str(k): p for k, p in self.max_load_distribution.items()},
        }
        if self.method != "exact":
            out["method"] = self.method
        return out


# --------------------------------------------------------------------------- validation


def _check_count(name: str, value: object) -> int:
    """Return ``value`` as an ``int`` if it is an integer >= 1, else raise ``ConfigError``.

    :class:`~fabricsim.errors.ConfigError` is a ``ValueError``.
    """
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise ConfigError(f"{name} must be an integer >= 1 (got {value!r})")
    if value < 1:
        raise ConfigError(f"{name} must be an integer >= 1 (got {value!r})")
    return int(value)
