"""The float64 (``numeric``) method of the ECMP collision statistics.

Poissonization, an exponential tilt and a Fourier sum for ``P(max load <= k)``, and the first
inclusion-exclusion terms over binomial bins in the upper tail (see
:mod:`fabricsim.analysis.ecmp_math` for the method and its measured accuracy).
"""

from __future__ import annotations

import math

import numpy as np

from fabricsim.analysis.ecmp_stats import EcmpCollisionStats

__all__: list[str] = []

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


def _tilted(lw: np.ndarray, x: np.ndarray, t: float) -> tuple[float, float, float, np.ndarray]:
    """Tilt the log weights ``lw`` at offsets ``x`` by ``e^{t x}``.

    Returns ``log`` of the tilted total weight, the tilted mean and variance of ``x``, and
    the tilted (normalized) distribution.
    """
    a = lw + t * x
    peak = float(a.max())
    w = np.exp(a - peak)
    total = float(w.sum())
    q = w / total
    mean = float(q @ x)
    return peak + math.log(total), mean, max(float(q @ (x * x)) - mean * mean, 0.0), q


def _solve_tilt(lw: np.ndarray, x: np.ndarray, bins: int) -> tuple[float, float, float, np.ndarray]:
    """Find a tilt ``t`` putting the mean of ``bins`` tilted draws within a quarter sd of 0.

    Safeguarded Newton steps (bisection when a step leaves the bracket), at most 200.
    Returns ``t`` and the log total, variance and distribution of the last :func:`_tilted`
    evaluated (the one at ``t`` unless the 200 steps ran out).
    """
    lo, hi, t = 0.0, math.inf, 0.0
    for _ in range(200):
        log_z, mean, var, q = _tilted(lw, x, t)
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
    return t, log_z, var, q


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

    log_z0, _, _, q0 = _tilted(lw, x, 0.0)
    t, log_z, var, q = _solve_tilt(lw, x, bins)
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
