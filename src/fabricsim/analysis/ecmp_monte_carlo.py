"""Monte Carlo sampling of ECMP hash collisions: a cross-check of the exact statistics."""

from __future__ import annotations

import numpy as np

from fabricsim.analysis.ecmp_stats import EcmpCollisionStats, _check_count
from fabricsim.errors import ConfigError

__all__ = ["MONTE_CARLO_WORK_MAX", "monte_carlo_collision_stats"]

#: bound on ``trials * (sub-flows + uplinks + 16)`` of the Monte Carlo cross-check
MONTE_CARLO_WORK_MAX = 3 * 10**7


def _check_trials(n: int, uplinks: int, trials: int) -> None:
    """Raise ``ConfigError`` if ``trials * (n + uplinks + 16)`` exceeds the sampling bound."""
    most = MONTE_CARLO_WORK_MAX // (n + uplinks + 16)
    if trials > most:
        raise ConfigError(
            f"--monte-carlo: at most {most} trials for {n} sub-flows on {uplinks} uplinks "
            f"(trials x (sub-flows + uplinks + 16) <= {MONTE_CARLO_WORK_MAX}; got {trials})"
            if most >= 1
            else f"--monte-carlo: {n} sub-flows on {uplinks} uplinks is too large to sample "
            f"(sub-flows + uplinks + 16 must be <= {MONTE_CARLO_WORK_MAX})"
        )


def _sample(
    rng: np.random.Generator, n: int, uplinks: int, trials: int
) -> tuple[np.ndarray, int, float]:
    """Hash ``n`` sub-flows onto ``uplinks`` ``trials`` times, in chunks of bounded memory.

    Returns the histogram of the busiest uplink's load (index: load), the total number of
    idle uplinks and the sum of ``1 / max load`` over the trials.
    """
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
    return max_hist, idle_sum, inv_max_sum


def _sample_means(
    flows: int,
    uplinks: int,
    qp_scaling: int,
    trials: int,
    max_hist: np.ndarray,
    idle_sum: int,
    inv_max_sum: float,
) -> EcmpCollisionStats:
    """The statistics as sample means of what :func:`_sample` counted."""
    n = flows * qp_scaling
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
    >>> from fabricsim.analysis.ecmp_math import ecmp_collision_stats
    >>> mc = monte_carlo_collision_stats(8, 8, trials=20_000)
    >>> abs(mc.expected_max_load - ecmp_collision_stats(8, 8).expected_max_load) < 0.05
    True
    """
    flows = _check_count("flows", flows)
    uplinks = _check_count("uplinks", uplinks)
    qp_scaling = _check_count("qp_scaling", qp_scaling)
    trials = _check_count("trials", trials)
    n = flows * qp_scaling
    _check_trials(n, uplinks, trials)
    if rng is None:
        rng = np.random.default_rng(0)

    max_hist, idle_sum, inv_max_sum = _sample(rng, n, uplinks, trials)
    return _sample_means(flows, uplinks, qp_scaling, trials, max_hist, idle_sum, inv_max_sum)
