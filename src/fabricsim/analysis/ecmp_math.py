"""Exact statistics of ECMP hash collisions: N flows hashed onto M equal uplinks.

Model: each of ``N`` flows picks one of ``M`` equal-cost uplinks uniformly at random and
independently of the other flows (an ideal hash).  The uplink carrying the most flows sets
the pace of a synchronized step: its flows each get ``1/k`` of line rate when it carries
``k`` flows.

Everything here is computed exactly, with Python integers and :class:`fractions.Fraction`,
and converted to ``float`` once at the end (the conversion is correctly rounded, so the
floats are reproducible bit for bit).  :func:`monte_carlo_collision_stats` is a sampling
cross-check only.

Method for the distribution of the busiest uplink's load.  Let ``F(k)`` be the number of
the ``M**N`` assignments in which no uplink carries more than ``k`` flows, so that
``P(max <= k) = F(k) / M**N`` and ``F(k) = N! [x^N] T_k(x)**M`` with the truncated
exponential ``T_k(x) = sum_{j<=k} x**j / j!``.  Two exact ways of getting ``F(k)`` are used,
whichever is cheaper for the given ``k``:

* a linear recurrence in the number of balls.  ``P = T_k**M`` satisfies the differential
  equation ``T_k P' = M T_{k-1} P`` (because ``T_k' = T_{k-1}``).  Reading off the
  coefficient of ``x**n`` and writing ``q_n = n! [x^n] P`` (the count for ``n`` balls) gives
  the integer recurrence of order ``k``::

      q_{n+1} = sum_{i=0}^{k-1} (M C(n, i) - C(n, i + 1)) q_{n-i},   q_n = M**n for n <= k

  which costs ``O(k (N - k))`` big-integer operations;
* inclusion-exclusion over the uplinks that overflow (carry more than ``k`` flows).  At most
  ``r = N // (k + 1)`` uplinks can overflow, so ``F(k) = sum_{i=0}^{r} (-1)**i C(M, i) H_i``
  where ``H_i`` counts the assignments in which ``i`` given uplinks all overflow.  This is
  cheap when ``k`` is a sizeable fraction of ``N`` (for ``k >= N // 2`` it is a single sum).

``N = M = 300`` takes a fraction of a second.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from operator import mul
from typing import Any

import numpy as np

__all__ = [
    "EcmpCollisionStats",
    "ecmp_collision_stats",
    "max_load_distribution",
    "monte_carlo_collision_stats",
]


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
        smallest positive float come out as ``0.0``.

    Examples
    --------
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

    def to_dict(self) -> dict[str, Any]:
        """Return the statistics as a JSON-ready dict.

        Returns
        -------
        dict
            Keys ``flows``, ``uplinks``, ``qp_scaling``, ``p_no_collision``,
            ``expected_idle_uplinks``, ``expected_max_load``, ``efficiency``, ``slowdown`` and
            ``max_load_distribution`` (whose keys, the loads, are strings, as JSON requires).

        Examples
        --------
        >>> import json
        >>> d = ecmp_collision_stats(1, 4).to_dict()
        >>> d["p_no_collision"], d["expected_idle_uplinks"], d["max_load_distribution"]
        (1.0, 3.0, {'1': 1.0})
        >>> isinstance(json.dumps(d), str)
        True
        """
        return {
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


# --------------------------------------------------------------------------- validation


def _check_count(name: str, value: object) -> int:
    """Return ``value`` as an ``int`` if it is an integer >= 1, else raise ``ValueError``."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise ValueError(f"{name} must be an integer >= 1 (got {value!r})")
    if value < 1:
        raise ValueError(f"{name} must be an integer >= 1 (got {value!r})")
    return int(value)


# --------------------------------------------------------------------------- exact counting


def _binomial_rows(n: int) -> list[list[int]]:
    """Pascal's triangle rows ``0..n``; row ``s`` is ``[C(s, 0), ..., C(s, s), 0]``."""
    rows = [[1, 0]]
    for _ in range(n):
        prev = rows[-1]
        rows.append([1, *map(sum, zip(prev, prev[1:], strict=False)), 0])
    return rows


def _recurrence_cost(balls: int, cap: int) -> int:
    """Rough number of big-integer multiply-adds of :func:`_count_at_most_recurrence`."""
    return cap * (balls - cap)


def _overflow_cost(balls: int, cap: int) -> int:
    """Rough number of big-integer multiply-adds of :func:`_count_at_most_overflow`."""
    most = balls // (cap + 1)
    convolutions = sum(max(balls - i * (cap + 1) + 1, 0) ** 2 // 2 for i in range(2, most + 1))
    return most * balls + convolutions


def _count_at_most_recurrence(
    balls: int, bins: int, cap: int, coefficients: list[list[int]]
) -> int:
    """Assignments of ``balls`` labelled balls to ``bins`` bins with every bin ``<= cap``.

    Uses the order-``cap`` recurrence ``q_{n+1} = sum_i coefficients[n][i] q_{n-i}`` with
    ``coefficients[n][i] = bins C(n, i) - C(n, i + 1)`` (see the module docstring).  Needs
    ``1 <= cap < balls`` and ``coefficients[n]`` to hold at least ``cap`` entries.
    """
    q = [bins**n for n in range(cap + 1)]
    for n in range(cap, balls):
        # q[n], q[n-1], ..., q[n-cap+1] against coefficients[n][0 .. cap-1]
        q.append(sum(map(mul, coefficients[n][:cap], q[n : n - cap : -1])))
    return q[balls]


def _count_at_most_overflow(balls: int, bins: int, cap: int, rows: list[list[int]]) -> int:
    """Assignments of ``balls`` labelled balls to ``bins`` bins with every bin ``<= cap``.

    Inclusion-exclusion over the set of bins holding more than ``cap`` balls.  ``rows`` are
    Pascal rows ``0..balls`` from :func:`_binomial_rows`.  Needs ``cap >= 0``.
    """
    low = cap + 1  # the least load of an overflowing bin
    most = min(bins, balls // low)
    total = bins**balls
    # ways[s]: ways to put s labelled balls into i given bins, each holding >= low balls
    ways = [0] * low + [1] * (balls + 1 - low)  # i = 1
    for i in range(1, most + 1):
        if i > 1:
            ways_prev = ways
            ways = [0] * (balls + 1)
            for s in range(i * low, balls + 1):
                # a balls in the new bin (low <= a <= s - (i-1) low), the rest in the others
                ways[s] = sum(
                    map(
                        mul,
                        rows[s][low : s - (i - 1) * low + 1],
                        ways_prev[s - low : (i - 1) * low - 1 : -1],
                    )
                )
        # H_i: choose which s balls go to the i overflowing bins; the rest go anywhere else
        others = bins - i
        power = 1  # others ** (balls - s), for s running down from balls
        overflow = 0
        row = rows[balls]
        for s in range(balls, i * low - 1, -1):
            overflow += row[s] * power * ways[s]
            power *= others
        total += (-1) ** i * math.comb(bins, i) * overflow
    return total


def _max_load_counts(balls: int, bins: int) -> dict[int, int]:
    """``{k: number of assignments whose busiest bin holds exactly k balls}``.

    ``k`` runs over ``ceil(balls / bins) .. balls``; the counts add up to ``bins**balls``.
    Inputs are assumed valid (integers >= 1).
    """
    low = -(-balls // bins)
    caps = range(low, balls)  # caps below `low` give 0; cap == balls gives bins**balls
    # An inclusion-exclusion step multiplies smaller integers than a recurrence step: in
    # CPython it takes about 0.4 times as long (measured at N = M = 300).
    by_recurrence = [
        cap for cap in caps if 5 * _recurrence_cost(balls, cap) < 2 * _overflow_cost(balls, cap)
    ]
    rows = _binomial_rows(balls)
    coefficients: list[list[int]] = []
    if by_recurrence:
        width = max(by_recurrence)
        coefficients = [
            [bins * row[i] - row[i + 1] for i in range(min(n + 1, width))]
            for n, row in enumerate(rows[:balls])
        ]
    recurrence_caps = set(by_recurrence)
    at_most = {low - 1: 0, balls: bins**balls}
    for cap in caps:
        if cap in recurrence_caps:
            at_most[cap] = _count_at_most_recurrence(balls, bins, cap, coefficients)
        else:
            at_most[cap] = _count_at_most_overflow(balls, bins, cap, rows)
    return {k: at_most[k] - at_most[k - 1] for k in range(low, balls + 1)}


# --------------------------------------------------------------------------- public API


def max_load_distribution(balls: int, bins: int) -> dict[int, Fraction]:
    """Exact distribution of the busiest bin's load when balls land uniformly in bins.

    Each of ``balls`` labelled balls (flows) goes to one of ``bins`` labelled bins (uplinks)
    uniformly at random and independently.

    Parameters
    ----------
    balls : int
        Number of balls (flows), ``>= 1``.
    bins : int
        Number of bins (uplinks), ``>= 1``.

    Returns
    -------
    dict[int, fractions.Fraction]
        ``{k: P(max load == k)}`` for ``k = ceil(balls / bins) .. balls``, exact; the
        values add up to exactly 1.

    Raises
    ------
    ValueError
        If ``balls`` or ``bins`` is not an integer ``>= 1``.

    Examples
    --------
    >>> max_load_distribution(2, 2)
    {1: Fraction(1, 2), 2: Fraction(1, 2)}
    >>> dist = max_load_distribution(3, 3)
    >>> dist[1], dist[3], sum(dist.values())
    (Fraction(2, 9), Fraction(1, 9), Fraction(1, 1))
    """
    balls = _check_count("balls", balls)
    bins = _check_count("bins", bins)
    total = bins**balls
    return {k: Fraction(c, total) for k, c in _max_load_counts(balls, bins).items()}


def ecmp_collision_stats(flows: int, uplinks: int, qp_scaling: int = 1) -> EcmpCollisionStats:
    """Exact ECMP collision statistics for ``flows`` flows hashed onto ``uplinks`` uplinks.

    Each flow is split over ``qp_scaling`` queue pairs (sub-flows carrying ``1/qp_scaling`` of
    its data), and each of the ``flows * qp_scaling`` sub-flows is hashed uniformly and
    independently onto one of the uplinks.  All statistics are computed exactly and rounded
    to ``float`` once.

    Parameters
    ----------
    flows : int
        Number of flows ``N``, ``>= 1``.
    uplinks : int
        Number of equal-cost uplinks ``M``, ``>= 1``.
    qp_scaling : int, optional
        Queue pairs per flow ``q``, ``>= 1`` (default 1: one sub-flow per flow).

    Returns
    -------
    EcmpCollisionStats
        ``p_no_collision``, ``expected_idle_uplinks``, ``expected_max_load``, ``efficiency``
        (``E[1/max load]``) and ``max_load_distribution`` for the ``N q`` sub-flows, and
        ``slowdown = E[max load] / (N q / M)``.

    Raises
    ------
    ValueError
        If an argument is not an integer ``>= 1``.

    Examples
    --------
    >>> stats = ecmp_collision_stats(8, 8)
    >>> stats.p_no_collision
    0.00240325927734375
    >>> round(stats.expected_max_load, 4), round(stats.efficiency, 4)
    (2.5972, 0.41)
    >>> round(ecmp_collision_stats(8, 8, qp_scaling=4).slowdown, 3)
    1.762
    """
    flows = _check_count("flows", flows)
    uplinks = _check_count("uplinks", uplinks)
    qp_scaling = _check_count("qp_scaling", qp_scaling)
    n = flows * qp_scaling
    total = uplinks**n
    counts = _max_load_counts(n, uplinks)

    p_no_collision = Fraction(math.perm(uplinks, n), total)  # perm() is 0 when n > uplinks
    expected_idle = Fraction(uplinks * (uplinks - 1) ** n, total)
    expected_max = Fraction(sum(k * c for k, c in counts.items()), total)
    efficiency = sum((Fraction(c, k) for k, c in counts.items()), Fraction(0)) / total
    slowdown = expected_max * uplinks / n
    return EcmpCollisionStats(
        flows=flows,
        uplinks=uplinks,
        qp_scaling=qp_scaling,
        p_no_collision=float(p_no_collision),
        expected_idle_uplinks=float(expected_idle),
        expected_max_load=float(expected_max),
        efficiency=float(efficiency),
        slowdown=float(slowdown),
        max_load_distribution={k: float(Fraction(c, total)) for k, c in counts.items()},
    )


def monte_carlo_collision_stats(
    flows: int,
    uplinks: int,
    qp_scaling: int = 1,
    trials: int = 100_000,
    rng: np.random.Generator | None = None,
) -> EcmpCollisionStats:
    """Sampled ECMP collision statistics: a cross-check for :func:`ecmp_collision_stats`.

    Draws ``trials`` independent hash outcomes of the ``flows * qp_scaling`` sub-flows with
    ``rng.integers`` (vectorized, in chunks of bounded memory) and reports the sample means
    of the same statistics.  The standard error of each is ``std / sqrt(trials)``.

    Parameters
    ----------
    flows : int
        Number of flows ``N``, ``>= 1``.
    uplinks : int
        Number of equal-cost uplinks ``M``, ``>= 1``.
    qp_scaling : int, optional
        Queue pairs per flow ``q``, ``>= 1`` (default 1).
    trials : int, optional
        Number of sampled outcomes, ``>= 1`` (default 100 000).
    rng : numpy.random.Generator, optional
        Source of randomness; default ``numpy.random.default_rng(0)``, so that results are
        reproducible.  The global random state is never used.

    Returns
    -------
    EcmpCollisionStats
        Sample estimates; ``max_load_distribution`` holds the observed frequency of every
        load ``k = ceil(N q / M) .. N q`` (0.0 for loads never observed).

    Raises
    ------
    ValueError
        If an argument is not an integer ``>= 1``.

    Examples
    --------
    >>> mc = monte_carlo_collision_stats(8, 8, trials=20_000)
    >>> abs(mc.expected_max_load - ecmp_collision_stats(8, 8).expected_max_load) < 0.05
    True
    """
    flows = _check_count("flows", flows)
    uplinks = _check_count("uplinks", uplinks)
    qp_scaling = _check_count("qp_scaling", qp_scaling)
    trials = _check_count("trials", trials)
    if rng is None:
        rng = np.random.default_rng(0)
    n = flows * qp_scaling

    chunk = max(1, 4_000_000 // max(n, uplinks))
    max_hist = np.zeros(n + 1, dtype=np.int64)
    idle_sum = 0
    inv_max_sum = 0.0
    done = 0
    while done < trials:
        size = min(chunk, trials - done)
        choice = rng.integers(0, uplinks, size=(size, n))
        offsets = np.arange(size, dtype=np.int64)[:, None] * uplinks
        loads = np.bincount((choice + offsets).ravel(), minlength=size * uplinks)
        loads = loads.reshape(size, uplinks)
        busiest = loads.max(axis=1)
        max_hist += np.bincount(busiest, minlength=n + 1)
        idle_sum += int(np.count_nonzero(loads == 0))
        inv_max_sum += float(np.sum(1.0 / busiest))
        done += size

    loads_range = np.arange(n + 1)
    expected_max = float(np.dot(loads_range, max_hist)) / trials
    low = -(-n // uplinks)
    return EcmpCollisionStats(
        flows=flows,
        uplinks=uplinks,
        qp_scaling=qp_scaling,
        p_no_collision=float(max_hist[1]) / trials if n <= uplinks else 0.0,
        expected_idle_uplinks=idle_sum / trials,
        expected_max_load=expected_max,
        efficiency=inv_max_sum / trials,
        slowdown=expected_max * uplinks / n,
        max_load_distribution={k: float(max_hist[k]) / trials for k in range(low, n + 1)},
    )
