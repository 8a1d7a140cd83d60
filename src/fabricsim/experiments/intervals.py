"""Confidence intervals of a study that respect the quantity: times stay positive, changes
stay above -100 %.

A study's numbers are means over seeds of positive quantities (FCT, TTFT, CCT), and changes
B vs A of those means.  A plain Student-t interval ``mean +- t s / sqrt(n)`` ignores that: with
few seeds and a wide spread it reaches below zero (``1.28 s [-0.07, 2.62]``, ``-73 % [-206,
+59]``), which no run can produce.  Both intervals here are Student-t intervals on the log
scale with the standard error of the delta method, back-transformed:

* the mean ``m`` of ``x_1 ... x_n`` (all > 0)::

      m * exp(+- t(0.975, n-1) * sd(x) / (m * sqrt(n)))

  always > 0, always around ``m``, and to first order the plain t interval when the seeds
  agree closely (``sd(x) / m`` small);
* the change of the mean, ``R = mean(B) / mean(A)`` over paired seeds (seed i of B shares
  seed i's workload and salts with seed i of A), shown as ``100 * (R - 1)`` %::

      R * exp(+- t(0.975, n-1) * sd(z) / sqrt(n)),   z_i = B_i / mean(B) - A_i / mean(A)

  ``sd(z) / sqrt(n)`` is the delta method's standard error of ``log R`` (the classic ratio
  estimator's, ``sd(B_i - R A_i) / (mean(B) sqrt(n))``), so the pairing counts: seeds that
  move A and B together shrink it.  Always > -100 %, always around the change shown.

Why these and not a bootstrap: with 3 to 10 seeds a percentile bootstrap of the mean covers
far less than 95 % (it has no t correction); the t quantile keeps the small-sample width.  Why
not the geometric mean of the per-seed ratios: the tables show the ratio of the *means* (mean
FCT from 1.28 s to 0.90 s is -30 %), and the interval must be around the number shown.

A change whose interval holds 0 is *not significant* with the study's seeds;
:func:`seeds_to_resolve` estimates, from the observed spread and change, how many seeds would
exclude 0 (a planning figure: it assumes the next seeds spread as these did).

Examples
--------
>>> low, high = mean_interval(np.array([0.2, 1.2, 2.4]))
>>> bool(0 < low < 1.27 < high)
True
>>> c = ratio_interval(np.array([1.0, 2.0, 4.0]), np.array([0.1, 2.2, 1.0]))
>>> round(c.pct, 1), bool(c.low_pct > -100), c.significant
(-52.9, True, False)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "CONFIDENCE", "INTERVAL_METHOD", "MAX_SEEDS_NEEDED", "Change", "mean_interval",
    "plain_interval", "ratio_interval", "seeds_to_resolve",
]  # fmt: skip

CONFIDENCE = 0.95
MAX_SEEDS_NEEDED = 1000
"""Past this many seeds :func:`seeds_to_resolve` gives up (None): the change is too small
against the spread to resolve in a study anyone would run."""

INTERVAL_METHOD = (
    "95 % Student-t on the log scale (delta method), back-transformed: a mean m has "
    "m*exp(+-t*sd(x)/(m*sqrt(n))), always > 0; a change is the ratio of the means "
    "R = mean(B)/mean(A) over the paired seeds with R*exp(+-t*sd(z)/sqrt(n)), "
    "z_i = B_i/mean(B) - A_i/mean(A), shown as 100*(R-1) %, always > -100 %; "
    "significant when that interval excludes 0 %"
)
"""The one line ``study.json`` carries under ``"interval"``."""


def _t(n: int | np.ndarray) -> np.ndarray:
    """The two-sided 95 % Student-t quantile with ``n - 1`` degrees of freedom."""
    # perf: scipy.special, only when an interval is computed (stdtrit is what stats.t.ppf
    # evaluates; importing scipy.stats costs 0.9 s, scipy.special 0.3 s)
    from scipy import special

    return special.stdtrit(np.asarray(n) - 1, 0.5 + CONFIDENCE / 2)


def plain_interval(x: np.ndarray) -> tuple[float, float]:
    """The plain Student-t interval of the mean (for quantities that may be <= 0); NaN for
    n < 2."""
    n = len(x)
    if n < 2:
        return math.nan, math.nan
    half = float(_t(n) * np.std(x, ddof=1) / math.sqrt(n))
    m = float(np.mean(x))
    return m - half, m + half


def mean_interval(x: np.ndarray) -> tuple[float, float]:
    """The 95 % interval of the mean of ``x``: log scale when every value is > 0 (the interval
    stays > 0), else :func:`plain_interval`; NaN for n < 2."""
    n = len(x)
    if n < 2:
        return math.nan, math.nan
    if not bool(np.all(x > 0)):
        return plain_interval(x)
    m = float(np.mean(x))
    h = float(_t(n) * np.std(x, ddof=1) / (m * math.sqrt(n)))
    return m * math.exp(-h), m * math.exp(h)


@dataclass(frozen=True)
class Change:
    """B vs A over paired seeds: ``pct`` = 100 (R - 1) with R the ratio of the means, its
    interval, whether it excludes 0 (None with one seed), the seeds that would resolve it."""

    pct: float
    low_pct: float
    high_pct: float
    significant: bool | None
    seeds_needed: int | None


NO_CHANGE = Change(math.nan, math.nan, math.nan, None, None)


def ratio_interval(base: np.ndarray, x: np.ndarray) -> Change:
    """The change of the mean from ``base`` (A) to ``x`` (B), paired seed by seed.

    NaN (and ``significant`` None) when a mean is not > 0 or a value is < 0: a ratio of such
    means has no log scale.
    """
    a, b = float(np.mean(base)), float(np.mean(x))
    if not (a > 0 and b > 0) or bool(np.any(base < 0) or np.any(x < 0)):
        return NO_CHANGE
    r = b / a
    n = len(x)
    if n < 2:
        return Change(100.0 * (r - 1.0), math.nan, math.nan, None, None)
    sd = float(np.std(x / b - base / a, ddof=1))
    h = float(_t(n) * sd / math.sqrt(n))
    low, high = r * math.exp(-h), r * math.exp(h)
    significant = bool(low > 1.0 or high < 1.0)
    needed = None if significant else seeds_to_resolve(abs(math.log(r)), sd, n)
    return Change(100.0 * (r - 1.0), 100.0 * (low - 1.0), 100.0 * (high - 1.0), significant, needed)


def seeds_to_resolve(effect: float, sd: float, n: int) -> int | None:
    """The fewest seeds (more than ``n``) whose interval ``+- t sd / sqrt(N)`` would exclude 0
    for a change of ``effect`` on the log scale; None past :data:`MAX_SEEDS_NEEDED` or for no
    change at all.

    >>> seeds_to_resolve(0.2, 0.3, 3), seeds_to_resolve(0.0, 0.3, 3)
    (12, None)
    """
    if not effect > 0:
        return None
    if sd == 0:
        return n + 1
    ns = np.arange(n + 1, MAX_SEEDS_NEEDED + 1)
    ok = np.nonzero(_t(ns) * sd / np.sqrt(ns) < effect)[0]
    return int(ns[ok[0]]) if len(ok) else None
