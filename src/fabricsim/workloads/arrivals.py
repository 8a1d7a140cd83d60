"""Request arrivals and host pairs: Poisson arrival times and random (source, destination) pairs.

Every random draw comes from a :class:`numpy.random.Generator` passed in by the caller.

Examples
--------
>>> rng = np.random.default_rng(0)
>>> times = poisson_arrivals(rng, qps=10.0, n=3)
>>> times.shape, bool((np.diff(times) > 0).all())
((3,), True)
>>> src, dst = random_pairs(rng, [0, 1], [2, 3], 4)
>>> bool((src < 2).all() and (dst >= 2).all())
True
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from fabricsim.errors import ConfigError
from fabricsim.workloads.kv_inputs import check_int_field

__all__ = ["poisson_arrivals", "random_pairs"]


def poisson_arrivals(
    rng: np.random.Generator, qps: float, n: int, start_s: float = 0.0
) -> npt.NDArray[np.float64]:
    """Arrival times of a Poisson process.

    Parameters
    ----------
    rng : numpy.random.Generator
        Source of the exponential gaps.
    qps : float
        Request rate (requests/s), ``> 0``.
    n : int
        Number of arrivals, ``>= 0``.
    start_s : float
        Time origin (s); the first arrival is one gap after it.

    Returns
    -------
    numpy.ndarray of float64
        Increasing arrival times (s), shape ``(n,)``.

    Raises
    ------
    ConfigError
        ``"workload.qps must be > 0 (got ...)"`` or a bad ``n``/``start_s``.
    """
    if isinstance(qps, bool) or not isinstance(qps, int | float | np.number):
        raise ConfigError(f"workload.qps must be a number (got {qps!r})")
    if not (math.isfinite(qps) and qps > 0):
        raise ConfigError(f"workload.qps must be > 0 (got {qps:g})")
    count = check_int_field("n", n, 0)
    if not math.isfinite(start_s):
        raise ConfigError(f"start_s must be finite (got {start_s})")
    return start_s + np.cumsum(rng.exponential(1.0 / qps, size=count))


def random_pairs(
    rng: np.random.Generator,
    prefill_hosts: npt.ArrayLike,
    decode_hosts: npt.ArrayLike,
    n: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Draw ``n`` (prefill host, decode host) pairs uniformly and independently.

    Parameters
    ----------
    rng : numpy.random.Generator
        Source of randomness.
    prefill_hosts : array_like
        Candidate source hosts (1-D, non-empty).
    decode_hosts : array_like
        Candidate destination hosts (1-D, non-empty).
    n : int
        Number of pairs, ``>= 0``.

    Returns
    -------
    src, dst : numpy.ndarray
        Host ids of shape ``(n,)`` with the dtype of the inputs.  The same
        host can appear on both sides if the two pools overlap.
    """
    count = check_int_field("n", n, 0)
    pools = []
    for field, hosts in (("prefill_hosts", prefill_hosts), ("decode_hosts", decode_hosts)):
        arr = np.asarray(hosts)
        if arr.ndim != 1 or arr.size == 0:
            raise ConfigError(f"{field} must be a non-empty 1-D array (got shape {arr.shape})")
        pools.append(arr)
    src = pools[0][rng.integers(0, pools[0].size, size=count)]
    dst = pools[1][rng.integers(0, pools[1].size, size=count)]
    return src, dst
