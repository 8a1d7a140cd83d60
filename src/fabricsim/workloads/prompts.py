"""Prompt-length distributions of LLM inference requests.

* a rank-based Zipf as in the Vidur simulator (:class:`RankZipf`);
* a constant length (:class:`FixedLength`);
* a CSV trace reader (:func:`load_prompt_trace`).

The distributions draw from a :class:`numpy.random.Generator` passed in by the caller; nothing
here touches global random state.  Invalid inputs raise :class:`~fabricsim.errors.ConfigError`
naming the ``workload.prompt_*`` field.

Examples
--------
>>> RankZipf(1, 3, 0.0).mean()
2.0
>>> FixedLength(8).sample(np.random.default_rng(0), 2)
array([8, 8])
"""

from __future__ import annotations

import math
from os import PathLike

import numpy as np
import numpy.typing as npt

from fabricsim.errors import ConfigError
from fabricsim.workloads.kv_inputs import check_int_field, parse_int_column, read_csv_strings

__all__ = ["FixedLength", "RankZipf", "load_prompt_trace"]


class RankZipf:
    """Rank-based Zipf prompt-length distribution (as in the Vidur simulator).

    ``P(L = min_tokens + r - 1) ∝ r ** -theta`` for ranks
    ``r = 1 ... max_tokens - min_tokens + 1``: short prompts are the most
    likely.  With the defaults (1,000 ... 52,600 tokens, ``theta = 0.7``)
    the mean is 13,302.534 tokens.

    Parameters
    ----------
    min_tokens : int
        Shortest prompt (tokens), ``>= 1``.
    max_tokens : int
        Longest prompt (tokens), ``>= min_tokens``.
    theta : float
        Zipf exponent (dimensionless), ``>= 0``; 0 gives a uniform law.

    Raises
    ------
    ConfigError
        If a parameter is out of range; the message names the
        ``workload.prompt_*`` field.
    """

    def __init__(self, min_tokens: int = 1_000, max_tokens: int = 52_600, theta: float = 0.7):
        lo = check_int_field("workload.prompt_min_tokens", min_tokens, 1)
        hi = check_int_field("workload.prompt_max_tokens", max_tokens, 1)
        if lo > hi:
            raise ConfigError(
                "workload.prompt_min_tokens must be <= workload.prompt_max_tokens "
                f"(got {lo} > {hi})"
            )
        if isinstance(theta, bool) or not isinstance(theta, int | float | np.number):
            raise ConfigError(f"workload.prompt_theta must be a number (got {theta!r})")
        if not math.isfinite(theta) or theta < 0:
            raise ConfigError(f"workload.prompt_theta must be >= 0 (got {theta})")
        self.min_tokens, self.max_tokens, self.theta = lo, hi, float(theta)
        ranks = np.arange(1, hi - lo + 2, dtype=np.float64)
        weights = ranks ** (-self.theta)
        self._lengths = np.arange(lo, hi + 1, dtype=np.int64)
        self._probs = weights / weights.sum()
        self._mean = float(np.sum(self._lengths * weights) / np.sum(weights))
        cdf = np.cumsum(weights)
        self._cdf = cdf / cdf[-1]
        self._cdf[-1] = 1.0

    def __repr__(self) -> str:
        return f"RankZipf(min_tokens={self.min_tokens}, max_tokens={self.max_tokens}, theta={self.theta})"

    def mean(self) -> float:
        """Exact mean prompt length from the pmf (tokens)."""
        return self._mean

    def pmf(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """Support and probabilities.

        Returns
        -------
        lengths : numpy.ndarray of int64
            Prompt lengths ``min_tokens ... max_tokens`` (tokens).
        probs : numpy.ndarray of float64
            Probability of each length (sums to 1).
        """
        return self._lengths.copy(), self._probs.copy()

    def sample(self, rng: np.random.Generator, n: int) -> npt.NDArray[np.int64]:
        """Draw ``n`` prompt lengths by inverse-CDF sampling.

        Parameters
        ----------
        rng : numpy.random.Generator
            Source of randomness (one uniform draw per sample).
        n : int
            Number of samples, ``>= 0``.

        Returns
        -------
        numpy.ndarray of int64
            Prompt lengths (tokens), shape ``(n,)``.
        """
        count = check_int_field("n", n, 0)
        idx = np.searchsorted(self._cdf, rng.random(count), side="right")
        return self._lengths[np.minimum(idx, self._lengths.size - 1)]


class FixedLength:
    """Degenerate prompt-length distribution: every prompt has ``tokens`` tokens.

    Parameters
    ----------
    tokens : int
        Prompt length (tokens), ``>= 1``.

    Raises
    ------
    ConfigError
        If ``tokens`` is not a positive integer (field ``workload.prompt_tokens``).
    """

    def __init__(self, tokens: int):
        self.tokens = check_int_field("workload.prompt_tokens", tokens, 1)

    def __repr__(self) -> str:
        return f"FixedLength(tokens={self.tokens})"

    def mean(self) -> float:
        """Mean prompt length (tokens)."""
        return float(self.tokens)

    def pmf(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """Support ``[tokens]`` (tokens) and probabilities ``[1.0]``."""
        return np.array([self.tokens], dtype=np.int64), np.array([1.0])

    def sample(self, rng: np.random.Generator, n: int) -> npt.NDArray[np.int64]:
        """Return ``n`` copies of ``tokens`` (tokens); ``rng`` is not advanced."""
        count = check_int_field("n", n, 0)
        return np.full(count, self.tokens, dtype=np.int64)


def load_prompt_trace(path: str | PathLike[str]) -> npt.NDArray[np.int64]:
    """Read prompt lengths from a CSV trace.

    The file either has a header row containing a ``prompt_tokens`` column
    (other columns are ignored) or is a single header-less column of
    integers.

    Parameters
    ----------
    path : str or os.PathLike
        CSV file.

    Returns
    -------
    numpy.ndarray of int64
        Prompt lengths (tokens), in file order.

    Raises
    ------
    ConfigError
        One line naming ``workload.prompt_path``, the file and the problem
        (unreadable/empty file, missing column, non-integer or <= 0 value).
    """
    field = "workload.prompt_path"
    frame = read_csv_strings(path, field)
    header = [str(v) for v in frame.iloc[0]]
    if "prompt_tokens" in header:
        column = frame.iloc[1:, header.index("prompt_tokens")]
    elif frame.shape[1] == 1:
        column = frame.iloc[:, 0]
    else:
        raise ConfigError(
            f"{field}: {path}: missing column 'prompt_tokens' (found {frame.shape[1]} columns: "
            f"{', '.join(header)}); expected a 'prompt_tokens' column or a single column of ints"
        )
    return parse_int_column(column, field, path, "prompt_tokens")
