"""Confidence intervals of a study that respect the quantity: times stay positive, changes
stay above -100 %.

A study's numbers are means over seeds of positive quantities (FCT, TTFT, CCT), and changes
B vs A over paired seeds (seed i of B shares seed i's workload and salts with seed i of A).  A
plain Student-t interval ``mean +- t s / sqrt(n)`` ignores that the quantity is positive: with
few seeds and a wide spread it reaches below zero (``1.28 s [-0.07, 2.62]``, ``-73 % [-206,
+59]``), which no run can produce.  Both intervals here are Student-t intervals on the log scale,
back-transformed:

* the mean ``m`` of ``x_1 ... x_n`` (all > 0), with the delta method's standard error of
  ``log m``::

      m * exp(+- t(0.975, n-1) * sd(x) / (m * sqrt(n)))

  always > 0, always around the mean shown, and to first order the plain t interval when the
  seeds agree closely;
* the change B vs A: the per-seed ratios ``r_i = B_i / A_i`` averaged on the log scale (their
  geometric mean ``G``), shown as ``100 * (G - 1)`` %, with the t interval of the mean of
  ``log r_i``::

      G * exp(+- t(0.975, n-1) * sd(log r) / sqrt(n))

  always > -100 %.  The pairing counts: a seed that loads the fabric more slows A and B alike
  and cancels in ``r_i``; only how the *ratio* varies between seeds sets the width (the old
  interval of ``B_i - A_i`` grew with the seeds' load spread: ``-30 % [-76, +16]`` at QPS 25
  with 3 seeds, now ``-29 % [-41, -14]``).  The t interval is exact when ``log r_i`` is normal;
  the ratio of the *means* (``mean B / mean A``) differs from ``G`` by a point or two in the
  default study, and the ``mean`` columns give it.

Why not a percentile bootstrap: with 3 to 10 seeds it covers well under 95 % (no small-sample
correction).  Measured coverage (``scripts/verify_study.py``, log-normal seeds, 3, 5 and 8
seeds): the change's interval 94-96 % whatever the seeds' load spread; the mean's 93-95 % for a
seed-to-seed spread (sd of log) up to 0.5 and 91-93 % at 0.8, never <= 0, where the plain t
interval reaches below zero in up to 76 % of studies.

A change whose interval holds 0 is *not significant* with the study's seeds;
:func:`seeds_to_resolve` estimates, from the observed mean and spread of ``log r``, how many
seeds would exclude 0 (a planning figure: it assumes the next seeds spread as these did).

Examples
--------
>>> low, high = mean_interval(np.array([0.2, 1.2, 2.4]))
>>> bool(0 < low < 1.27 < high)
True
>>> c = ratio_interval(np.array([1.0, 2.0, 4.0]), np.array([0.7, 1.5, 2.6]))
>>> [round(v) for v in (c.pct, c.low_pct, c.high_pct)], c.significant
([-30, -42, -17], True)
>>> c = ratio_interval(np.array([1.0, 2.0, 4.0]), np.array([0.7, 2.1, 2.6]))
>>> [round(v) for v in (c.pct, c.low_pct, c.high_pct)], c.significant, c.seeds_needed
([-22, -59, 48], False, 7)
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
    "95 % Student-t on the log scale, back-transformed: a mean m has "
    "m*exp(+-t*sd(x)/(m*sqrt(n))) (delta method), always > 0; a change B vs A is the geometric "
    "mean G of the paired seeds' ratios B_i/A_i with G*exp(+-t*sd(log(B_i/A_i))/sqrt(n)), shown "
    "as 100*(G-1) %, always > -100 %; significant when that interval excludes 0 %"
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
    """B vs A over paired seeds: ``pct`` = 100 (G - 1), G the geometric mean of the per-seed
    ratios, its interval, whether that excludes 0 (None with one seed), the seeds that would
    resolve it (None if significant or past :data:`MAX_SEEDS_NEEDED`)."""

    pct: float
    low_pct: float
    high_pct: float
    significant: bool | None
    seeds_needed: int | None


NO_CHANGE = Change(math.nan, math.nan, math.nan, None, None)


def ratio_interval(base: np.ndarray, x: np.ndarray) -> Change:
    """The change from ``base`` (A) to ``x`` (B), paired seed by seed.

    A value <= 0 has no log: then ``pct`` is the ratio of the means (NaN if that is not
    defined) and there is no interval.
    """
    if not (bool(np.all(base > 0)) and bool(np.all(x > 0))):
        a, b = float(np.mean(base)), float(np.mean(x))
        pct = 100.0 * (b / a - 1.0) if a > 0 and b >= 0 else math.nan
        return Change(pct, math.nan, math.nan, None, None)
    logs = np.log(x / base)
    g = float(np.mean(logs))
    n = len(logs)
    if n < 2:
        return Change(100.0 * math.expm1(g), math.nan, math.nan, None, None)
    sd = float(np.std(logs, ddof=1))
    h = float(_t(n) * sd / math.sqrt(n))
    significant = bool(abs(g) > h)
    needed = None if significant else seeds_to_resolve(abs(g), sd, n)
    mid, low, high = (100.0 * math.expm1(v) for v in (g, g - h, g + h))
    return Change(mid, low, high, significant, needed)


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
