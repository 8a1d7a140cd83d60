"""Exact counting of ECMP hash collisions, in Python integers.

``F(k)``, the number of assignments of ``N`` balls to ``M`` bins with no bin above ``k``, by a
linear recurrence in the number of balls or by inclusion-exclusion over the overflowing bins,
whichever is cheaper (see :mod:`fabricsim.analysis.ecmp_math`).
"""

from __future__ import annotations

import math
from fractions import Fraction
from operator import mul

from fabricsim.analysis.ecmp_stats import EcmpCollisionStats

__all__: list[str] = []


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
    if bins == 1:
        return {balls: 1}
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


def _exact_stats(flows: int, uplinks: int, qp_scaling: int, n: int) -> EcmpCollisionStats:
    """The statistics of ``n = flows * qp_scaling`` sub-flows, exact and rounded once."""
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
