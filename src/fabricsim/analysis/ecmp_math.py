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
from dataclasses import dataclass, field
from fractions import Fraction
from operator import mul
from typing import Any

import numpy as np

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
#: bound on ``trials * (sub-flows + uplinks + 16)`` of the Monte Carlo cross-check
MONTE_CARLO_WORK_MAX = 3 * 10**7


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


# --------------------------------------------------------------------------- numeric method

#: the numeric method switches to the inclusion-exclusion tail where P(max > k-1) < this
_TAIL_SWITCH = 1e-4
#: probabilities below this are reported as 0.0 (and the distribution ends above them)
_TINY = 1e-300
#: up to this many bins the sum's distribution is found by FFT, past it by a direct sum
_FFT_MAX_BINS = 64


def _log_poisson_at_mean(n: int) -> float:
    """``log P(Poisson(n) = n)`` to full relative precision (Stirling series for n >= 20)."""
    if n < 20:
        return n * math.log(n) - n - math.lgamma(n + 1)
    s = 1 / (12 * n) - 1 / (360 * n**3) + 1 / (1260 * n**5) - 1 / (1680 * n**7)
    return -0.5 * math.log(2 * math.pi * n) - s


def _log_all_equal(balls: int, bins: int, k: int) -> float:
    """``log P(every bin holds exactly k)`` for ``balls == bins * k`` (binomial chain)."""
    from scipy import stats

    i = np.arange(bins - 1)
    pmf = stats.binom.pmf(k, balls - i * k, 1.0 / (bins - i))
    return float(np.sum(np.log(pmf))) if np.all(pmf > 0) else -math.inf


def _p_sum_fft(q: np.ndarray, pos: np.ndarray, target: int, bins: int, n_grid: int) -> float:
    """``P(S = target mod n_grid)`` for ``S`` the sum of ``bins`` iid draws of ``q`` at ``pos``.

    An FFT of the aliased distribution; the ``bins``-th power multiplies its rounding errors
    by ``bins``, so this is used for few bins only.
    """
    from scipy import fft

    n_fft = fft.next_fast_len(n_grid, real=True)
    spectrum = fft.rfft(np.bincount(pos % n_fft, weights=q, minlength=n_fft))
    phase = np.exp(2j * np.pi * (target % n_fft) * np.arange(len(spectrum)) / n_fft)
    terms = spectrum**bins * phase
    total = terms[0].real + 2 * terms[1:].real.sum()
    if n_fft % 2 == 0:
        total -= terms[-1].real  # the Nyquist bin appears once
    return float(total / n_fft)


def _p_sum_direct(q: np.ndarray, x: np.ndarray, bins: int, n_grid: int, sigma: float) -> float:
    """``P(S = bins * mean)`` for ``S`` the sum of ``bins`` iid draws of ``q`` at offsets ``x``.

    ``x`` are the values minus the target mean (``S`` is on the integers and the target is
    one of them).  The inverse Fourier sum over ``n_grid`` frequencies of ``psi(w)**bins``,
    ``psi(w) = E[e^{-i w x}] = 1 + D(w)``, with ``D`` summed directly and the power taken as
    ``exp(bins * log1p(D))``: accurate for any number of bins.  Only frequencies where
    ``|psi|**bins`` is not negligible are summed (it is below ``1e-20`` past the last one).
    """
    half = n_grid // 2
    last = half if sigma < 8 else min(half, math.ceil(16 * n_grid / (2 * math.pi * sigma)) + 1)
    total = 1.0
    f = 1
    chunk = max(1, 2_000_000 // len(x))
    while f <= last:
        freqs = np.arange(f, min(last, f + chunk - 1) + 1)
        ang = (2 * np.pi / n_grid) * freqs[:, None] * x[None, :]
        re = -2.0 * (np.sin(0.5 * ang) ** 2 @ q)
        im = -(np.sin(ang) @ q)
        log_mod = 0.5 * np.log1p(2 * re + re * re + im * im)
        vals = np.exp(bins * log_mod) * np.cos(bins * np.arctan2(im, 1 + re))
        weight = np.where(freqs == n_grid - freqs, 1.0, 2.0)  # the Nyquist term appears once
        total += float(weight @ vals)
        f = int(freqs[-1]) + 1
        if f > last and last < half and bins * float(log_mod[-1]) > -46:
            last = min(half, 2 * last)  # not negligible yet (a skewed distribution): go on
    return total / n_grid


def _log_at_most(balls: int, bins: int, k: int) -> float:
    """``log P(max load <= k)`` for ``ceil(balls / bins) <= k < balls`` in float64.

    Poissonization: with ``X_i`` iid Poisson(``lam = balls / bins``), ``P(max <= k) = P(X <=
    k)**bins * P(sum of bins truncated X = balls) / P(Poisson(balls) = balls)``.  The middle
    factor is ``E[e^{t(Y - lam)}]**bins * P_t(S = balls)`` for any tilt ``t`` of the truncated
    ``Y`` (an identity); ``t`` is chosen to put the tilted sum's mean near ``balls``, where a
    Fourier sum over the tilted distribution gives ``P_t(S = balls)`` to full relative
    precision (:func:`_p_sum_fft` for few bins, :func:`_p_sum_direct` for many).
    """
    from scipy import special

    if bins * k == balls:
        return _log_all_equal(balls, bins, k)
    lam = balls / bins
    sd = math.sqrt(lam)
    j0 = max(0, math.floor(lam - 12 * sd - 20))  # Poisson mass below j0 is < e^-70
    top = min(k, math.ceil(lam + 12 * sd + 20))  # nor above top (truncation is in log_cdf)
    j = np.arange(j0, top + 1)
    # log pmf ratios p_{i+1}/p_i = lam/(i+1), summed from the mode (accurate near it)
    i = j[:-1].astype(np.float64)
    cum = np.concatenate(([0.0], np.cumsum(np.log1p((lam - i - 1) / (i + 1)))))
    mode = min(max(math.floor(lam), j0), top)
    lw = cum - cum[mode - j0]
    x = j - lam
    sf = float(special.pdtrc(k, lam))
    log_cdf = math.log1p(-sf) if sf < 0.5 else math.log(float(special.pdtr(k, lam)))

    def tilted(t: float) -> tuple[float, float, float, np.ndarray]:
        a = lw + t * x
        peak = float(a.max())
        w = np.exp(a - peak)
        total = float(w.sum())
        q = w / total
        mean = float(q @ x)
        return peak + math.log(total), mean, max(float(q @ (x * x)) - mean * mean, 0.0), q

    log_z0, _, _, q0 = tilted(0.0)
    lo, hi, t = 0.0, math.inf, 0.0
    for _ in range(200):
        log_z, mean, var, q = tilted(t)
        if abs(mean) * math.sqrt(bins) <= 0.25 * math.sqrt(var) + 1e-12:
            break  # the tilted sum's mean is within a quarter sd of `balls`: good enough
        if mean < 0:
            lo = t
        else:
            hi = t
        nxt = t - mean / var if var > 0 else math.nan
        if not lo < nxt < hi:
            nxt = 0.5 * (lo + hi) if math.isfinite(hi) else max(2 * t, t + 1.0)
        t = nxt
    # log E[e^{t (Y - lam)}], as log1p of a small number when it is one (M multiplies it)
    with np.errstate(over="ignore", invalid="ignore"):
        small = float(q0 @ np.expm1(t * x))
    log_tilt = math.log1p(small) if math.isfinite(small) and abs(small) < 0.5 else log_z - log_z0
    sigma = math.sqrt(bins * var)
    span = bins * (top - j0) + 1  # the sum's support: no aliasing at all below this length
    n_grid = int(min(span, 40 * sigma + 64))  # aliases 20 sd away: negligible
    if bins <= _FFT_MAX_BINS:
        p_sum = _p_sum_fft(q, j - j0, balls - bins * j0, bins, n_grid)
    else:
        keep = q > 1e-22 * float(q.max())  # what is left out adds < 1e-19
        p_sum = _p_sum_direct(q[keep], x[keep], bins, n_grid, sigma)
    if not p_sum > 0:
        return -math.inf
    return bins * log_cdf + bins * log_tilt + math.log(p_sum) - _log_poisson_at_mean(balls)


def _numeric_distribution(balls: int, bins: int) -> dict[int, float]:
    """``{k: P(max load == k)}`` in float64 (see the module docstring); ``bins >= 2``."""
    from scipy import stats

    low = -(-balls // bins)
    log_tiny = math.log(_TINY)
    cache: dict[int, float] = {}

    def log_g(k: int) -> float:
        if k < low:
            return -math.inf
        if k >= balls:
            return 0.0
        if k not in cache:
            cache[k] = _log_at_most(balls, bins, k)
        return cache[k]

    # first load whose P(max <= k) reaches 1e-300 (bisection: P(max <= k) grows with k)
    lo, hi = low, low
    while log_g(hi) < log_tiny and hi < balls:
        lo, hi = hi, min(balls, low + 2 * (hi - low) + 1)
    while lo < hi:
        mid = (lo + hi) // 2
        if log_g(mid) < log_tiny:
            lo = mid + 1
        else:
            hi = mid
    dist = dict.fromkeys(range(low, lo), 0.0)
    k = lo
    while k <= balls:
        cur, prev = log_g(k), log_g(k - 1)
        dist[k] = math.exp(cur) * -math.expm1(prev - cur) if cur > prev else 0.0
        k += 1
        if -math.expm1(cur) < _TAIL_SWITCH:
            break
    # tail: P(max = k) = M p_k (1 - (M - 1)/2 (P(Z >= k) + P(Z > k))) + O(P(max > k-1)**2),
    # p_k = P(Bin(N, 1/M) = k), Z = Bin(N - k, 1/(M - 1)): the second bin given the first
    correct = True
    while k <= balls:
        ks = np.arange(k, min(balls, k + 4095) + 1)
        pk = bins * stats.binom.pmf(ks, balls, 1 / bins)
        if correct:
            if bins == 2:
                z = (balls - ks >= ks).astype(float) + (balls - ks > ks)
            else:
                p2 = 1 / (bins - 1)
                z = stats.binom.sf(ks - 1, balls - ks, p2) + stats.binom.sf(ks, balls - ks, p2)
            fix = 0.5 * (bins - 1) * z
            pk = pk * (1 - fix)
            correct = bool(fix[-1] > 1e-18)
        keep = pk >= _TINY
        if not keep.all():
            stop = int(np.argmin(keep))
            dist.update(zip(ks[:stop].tolist(), pk[:stop].tolist(), strict=True))
            break
        dist.update(zip(ks.tolist(), pk.tolist(), strict=True))
        k = int(ks[-1]) + 1
    return dist


def _numeric_stats(flows: int, uplinks: int, qp_scaling: int, n: int) -> EcmpCollisionStats:
    dist = _numeric_distribution(n, uplinks)
    if n <= uplinks:
        log_perm = math.fsum(
            float(np.sum(np.log1p(-np.arange(a, min(n, a + 10**6)) / uplinks)))
            for a in range(0, n, 10**6)
        )
        p_no_collision = math.exp(log_perm)
    else:
        p_no_collision = 0.0
    expected_max = math.fsum(k * p for k, p in dist.items())
    return EcmpCollisionStats(
        flows=flows,
        uplinks=uplinks,
        qp_scaling=qp_scaling,
        p_no_collision=p_no_collision,
        expected_idle_uplinks=uplinks * math.exp(n * math.log1p(-1 / uplinks)),
        expected_max_load=expected_max,
        efficiency=math.fsum(p / k for k, p in dist.items()),
        slowdown=expected_max * uplinks / n,
        max_load_distribution=dist,
        method="numeric",
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
        (:class:`~fabricsim.errors.ConfigError`) If an argument is not an integer ``>= 1``,
        or ``trials * (N q + M + 16)`` exceeds :data:`MONTE_CARLO_WORK_MAX`.

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
    n = flows * qp_scaling
    most = MONTE_CARLO_WORK_MAX // (n + uplinks + 16)
    if trials > most:
        raise ConfigError(
            f"--monte-carlo: at most {most} trials for {n} sub-flows on {uplinks} uplinks "
            f"(trials x (sub-flows + uplinks + 16) <= {MONTE_CARLO_WORK_MAX}; got {trials})"
            if most >= 1
            else f"--monte-carlo: {n} sub-flows on {uplinks} uplinks is too large to sample "
            f"(sub-flows + uplinks + 16 must be <= {MONTE_CARLO_WORK_MAX})"
        )
    if rng is None:
        rng = np.random.default_rng(0)

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
        method="monte_carlo",
    )
