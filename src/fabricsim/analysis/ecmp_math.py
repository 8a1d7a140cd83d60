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

Bounds and methods (``method`` of the result, in its JSON when not ``exact``).  Exact
counting costs grow like ``(N q)**3 log M``, so :func:`ecmp_collision_stats` picks:

* ``exact`` when the estimated work of the exact count (:func:`exact_work`: big-integer
  multiply-adds times the bits of the numbers involved) is at most :data:`EXACT_WORK_MAX`
  (a second or two: every ``N q <= 300`` on up to ``10**9`` uplinks, ``N q = 400`` on 400
  uplinks, ``N q = 1000`` on 2 uplinks; never for ``N q > 4000``).  Results are those of exact rational arithmetic,
  rounded once.
* ``numeric`` past that, when ``M <= 10**6`` and the estimated work (:func:`numeric_work`)
  is at most :data:`NUMERIC_WORK_MAX` (a second or so: about ``N q <= 200000`` on up to 64
  uplinks, ``N q <= 2500 M`` on more; ``--flows 100000 --uplinks 64`` takes 0.2 s).
  Float64 evaluation of the same quantities: ``P(max <= k)`` by Poissonization (``N``
  balls in ``M`` bins are ``M`` independent Poisson(``N/M``) bins conditioned on their sum),
  an exponential tilt that puts the sum's mean at ``N``, and a Fourier sum (an FFT for up to
  64 bins, else a direct sum with ``exp(M log1p(.))`` powers) for the probability of the
  tilted sum; in the upper tail, where ``P(max > k - 1) < 1e-4``, the first two
  inclusion-exclusion terms over binomial bins.  Measured against the exact method, every
  probability above ``1e-300`` agrees to a relative ``1e-9`` (worst seen ``5e-10``, at the
  switch to the tail) and the expectations to ``1e-12``.  Probabilities below ``1e-300``
  come out as ``0.0``, and loads above the last one whose probability is at least
  ``1e-300`` are left out of ``max_load_distribution``.
* past both bounds, a :class:`~fabricsim.errors.ConfigError` naming ``--flows`` /
  ``--uplinks`` and the bound (no run takes minutes).

:func:`monte_carlo_collision_stats` is bounded too: ``trials * (N q + M + 16)`` at most
:data:`MONTE_CARLO_WORK_MAX` (about a second).
"""

from __future__ import annotations

import math
from fractions import Fraction

from fabricsim.analysis.ecmp_exact import (
    _binomial_rows,  # noqa: F401 - re-exported: tests reach the counting helpers here
    _count_at_most_overflow,  # noqa: F401 - re-exported
    _count_at_most_recurrence,  # noqa: F401 - re-exported
    _exact_stats,
    _max_load_counts,
    _overflow_cost,
    _recurrence_cost,
)
from fabricsim.analysis.ecmp_monte_carlo import MONTE_CARLO_WORK_MAX, monte_carlo_collision_stats
from fabricsim.analysis.ecmp_numeric import _FFT_MAX_BINS, _TAIL_SWITCH, _numeric_stats
from fabricsim.analysis.ecmp_stats import EcmpCollisionStats, _check_count
from fabricsim.errors import ConfigError

__all__ = [
    "EXACT_WORK_MAX",
    "MONTE_CARLO_WORK_MAX",
    "NUMERIC_MAX_UPLINKS",
    "NUMERIC_WORK_MAX",
    "EcmpCollisionStats",
    "ecmp_collision_stats",
    "exact_work",
    "max_load_distribution",
    "monte_carlo_collision_stats",
    "numeric_work",
]

#: bound on :func:`exact_work` for the exact method (bit-operations; about 1-2 s here)
EXACT_WORK_MAX = 4 * 10**10
#: sub-flows past which the exact method is never tried (its work is at least (N q)**3)
EXACT_MAX_BALLS = 4000
#: bound on :func:`numeric_work` for the numeric method (about 1-2 s here)
NUMERIC_WORK_MAX = 25 * 10**7
#: the numeric method is used (and was checked against the exact one) up to this many uplinks
NUMERIC_MAX_UPLINKS = 10**6


# --------------------------------------------------------------------------- cost bounds


def exact_work(balls: int, bins: int) -> float:
    """Estimated work of the exact count: big-integer multiply-adds times their bit length.

    ``inf`` past :data:`EXACT_MAX_BALLS` balls (the work is then far past any bound).
    """
    if balls > EXACT_MAX_BALLS:
        return math.inf
    low = -(-balls // bins)
    ops = sum(
        min(5 * _recurrence_cost(balls, cap), 2 * _overflow_cost(balls, cap))
        for cap in range(low, balls)
    )
    return float(ops) * (balls * math.log2(bins + 1) + 64)


def numeric_work(balls: int, bins: int) -> float:
    """Estimated work of the numeric method (about 5 ns a unit here).

    Per load ``k`` between ``ceil(N/M)`` and the start of the upper tail: an FFT of about
    ``40 sqrt(N)`` points (``M <= 64``) or a Fourier sum over about 100 frequencies and
    ``14 sqrt(N/M)`` values (more bins); plus the tail's binomial terms.  ``inf`` past
    :data:`NUMERIC_MAX_UPLINKS` bins or ``10**9`` balls.
    """
    if bins > NUMERIC_MAX_UPLINKS or balls > 10**9:
        return math.inf
    if bins == 1:
        return 0.0
    from scipy import stats

    lam = balls / bins
    k_up = float(stats.binom.isf(_TAIL_SWITCH / bins, balls, 1 / bins))
    loads = max(k_up - math.ceil(lam) + 2, 1.0)  # loads of the bulk (an upper bound)
    if bins <= _FFT_MAX_BINS:
        points = 40 * math.sqrt(balls) + 64
        per_load = points * math.log2(points)
    else:
        per_load = 10 * 105 * (14 * math.sqrt(lam) + 30)
    tail = 40 * math.sqrt(lam + 1) + 200  # loads of the inclusion-exclusion tail
    return loads * per_load + 200 * tail


def _refuse_size(flows: int, uplinks: int, qp_scaling: int, balls: int) -> ConfigError:
    what = f"{flows} flows x {qp_scaling} QPs" if qp_scaling > 1 else f"{flows} flows"
    return ConfigError(
        f"--flows/--uplinks: {what} on {uplinks} uplinks is past what ecmp-math computes in "
        f"seconds (exact: about N*q <= 300; numeric: uplinks <= {NUMERIC_MAX_UPLINKS} and about "
        "N*q <= 200000 on up to 64 uplinks, N*q <= 2500 x uplinks on more)"
    )


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
    to ``float`` once while that is cheap (:data:`EXACT_WORK_MAX`); past it, in float64 by the
    ``numeric`` method (``method`` says which; see the module docstring for its accuracy); past
    :data:`NUMERIC_WORK_MAX` the call is refused.

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
        (:class:`~fabricsim.errors.ConfigError`) If an argument is not an integer ``>= 1``,
        or the case is past both methods' bounds.

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
    if uplinks > 1 and exact_work(n, uplinks) > EXACT_WORK_MAX:
        if numeric_work(n, uplinks) > NUMERIC_WORK_MAX:
            raise _refuse_size(flows, uplinks, qp_scaling, n)
        return _numeric_stats(flows, uplinks, qp_scaling, n)
    return _exact_stats(flows, uplinks, qp_scaling, n)
