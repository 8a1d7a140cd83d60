"""Engine-independent models for the disaggregated-inference KV-cache workload.

The pieces here are pure functions and small immutable classes used to
generate a prefill -> decode KV-cache transfer workload as in the ARK paper:

* a catalog of LLM architectures (:data:`MODELS`) with their KV-cache size
  per token (Llama-3-8B: 128 KiB/token, binary units, KiB = 1024 B);
* prompt-length distributions: a rank-based Zipf as in the Vidur simulator
  (:class:`RankZipf`), a constant length (:class:`FixedLength`) and a CSV
  trace reader (:func:`load_prompt_trace`);
* GPU latency models giving the prefill time and the first decode step time
  of a request (:class:`AnalyticalGpuModel`, :class:`TableGpuModel`), used as
  ``TTFT = prefill_s(L) + KV transfer FCT + first_decode_s(L)``;
* Poisson request arrivals (:func:`poisson_arrivals`) and uniformly random
  prefill -> decode host pairs (:func:`random_pairs`).

Every random draw comes from a :class:`numpy.random.Generator` passed in by
the caller; nothing here touches global random state.  Invalid inputs raise
:class:`~fabricsim.errors.ConfigError` (a ``ValueError``) with a one-line message naming the
offending field, so the command line reports it as bad input (exit code 2).
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt
import pandas as pd

from fabricsim.errors import ConfigError
from fabricsim.units import MAX_MESSAGE_BYTES, MAX_TIME_S
from fabricsim.workloads.base import power_of_two, read_text

__all__ = [
    "CALIBRATION_GPU",
    "DEFAULT_CALIBRATION",
    "DEFAULT_DECODE_EFFICIENCY",
    "DEFAULT_PREFILL_EFFICIENCY",
    "GPUS",
    "MODELS",
    "AnalyticalGpuModel",
    "FixedLength",
    "GpuLatencyModel",
    "GpuSpec",
    "ModelSpec",
    "RankZipf",
    "TableGpuModel",
    "default_gpu_model",
    "get_gpu",
    "get_model",
    "load_prompt_trace",
    "poisson_arrivals",
    "random_pairs",
]

_INT_PATTERN = r"[+-]?\d{1,18}"  # at most 18 digits: fits in int64


# --------------------------------------------------------------------------- #
# Model catalog
# --------------------------------------------------------------------------- #
@dataclass(frozen=True)
class ModelSpec:
    """Architecture numbers of a decoder-only LLM.

    Parameters
    ----------
    name : str
        Catalog key, e.g. ``"llama-3-8b"``.
    layers : int
        Number of transformer layers.
    kv_heads : int
        Number of key/value heads per layer (GQA groups).
    head_dim : int
        Dimension of one attention head (elements).
    dtype_bytes : int
        Bytes per element of weights and KV cache (2 for fp16/bf16).
    hidden_size : int
        Model (residual stream) width (elements).
    intermediate_size : int
        Dense MLP width (elements); for MoE models, the dense-layer width.
    n_heads : int
        Number of query heads per layer.
    vocab_size : int
        Vocabulary size (tokens).
    params : int
        Total parameter count.
    active_params : int
        Parameters used per token (MoE); equal to ``params`` for dense models.
    kv_bytes_per_token_override : int or None
        KV-cache bytes per token when the GQA formula does not apply
        (e.g. DeepSeek MLA latent cache); ``None`` to use the formula.
    """

    name: str
    layers: int
    kv_heads: int
    head_dim: int
    dtype_bytes: int
    hidden_size: int
    intermediate_size: int
    n_heads: int
    vocab_size: int
    params: int
    active_params: int
    kv_bytes_per_token_override: int | None = None

    def __post_init__(self) -> None:
        for field in (
            "layers",
            "kv_heads",
            "head_dim",
            "dtype_bytes",
            "hidden_size",
            "intermediate_size",
            "n_heads",
            "vocab_size",
            "params",
            "active_params",
        ):
            value = getattr(self, field)
            if not _is_int(value) or value <= 0:
                raise ConfigError(f"ModelSpec.{field} must be a positive integer (got {value!r})")
        if self.active_params > self.params:
            raise ConfigError(
                f"ModelSpec.active_params must be <= ModelSpec.params "
                f"(got {self.active_params} > {self.params})"
            )
        override = self.kv_bytes_per_token_override
        if override is not None and (not _is_int(override) or override <= 0):
            raise ConfigError(
                f"ModelSpec.kv_bytes_per_token_override must be a positive integer or None "
                f"(got {override!r})"
            )

    @property
    def kv_bytes_per_token(self) -> int:
        """KV-cache size of one token over all layers (bytes).

        ``2 (K and V) * layers * kv_heads * head_dim * dtype_bytes`` unless
        :attr:`kv_bytes_per_token_override` is set.
        """
        if self.kv_bytes_per_token_override is not None:
            return self.kv_bytes_per_token_override
        return 2 * self.layers * self.kv_heads * self.head_dim * self.dtype_bytes

    @property
    def embedding_params(self) -> int:
        """Parameters of the input embedding plus the LM head (count).

        Both are counted (``2 * vocab_size * hidden_size``) because all
        catalog models have untied embeddings.
        """
        return 2 * self.vocab_size * self.hidden_size

    @property
    def linear_params_per_layer(self) -> float:
        """Active matmul parameters of one transformer layer (count).

        ``(active_params - embedding_params) / layers``; for MoE models this
        counts only the experts routed per token.
        """
        return (self.active_params - self.embedding_params) / self.layers


def _is_int(value: object) -> bool:
    """Return True for Python/numpy integers (not bools)."""
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


# Public architecture numbers (Hugging Face config.json of each model).
# Parameter counts of the Llama models are exact; Qwen3 / DeepSeek use the
# nominal totals from their model cards.
def _model(name: str, **arch: int) -> ModelSpec:
    """Build a catalog entry; bf16 weights/KV and dense (active = total) by default."""
    arch.setdefault("dtype_bytes", 2)
    arch.setdefault("active_params", arch["params"])
    return ModelSpec(name=name, **arch)


MODELS: dict[str, ModelSpec] = {
    m.name: m
    for m in (
        _model(
            "llama-3-8b",
            layers=32,
            kv_heads=8,
            head_dim=128,
            hidden_size=4096,
            intermediate_size=14336,
            n_heads=32,
            vocab_size=128256,
            params=8_030_261_248,
        ),
        _model(
            "llama-3.1-70b",
            layers=80,
            kv_heads=8,
            head_dim=128,
            hidden_size=8192,
            intermediate_size=28672,
            n_heads=64,
            vocab_size=128256,
            params=70_553_706_496,
        ),
        _model(
            "llama-3.1-405b",
            layers=126,
            kv_heads=8,
            head_dim=128,
            hidden_size=16384,
            intermediate_size=53248,
            n_heads=128,
            vocab_size=128256,
            params=405_853_388_800,
        ),
        # Qwen3-235B-A22B: 128 experts, 8 routed per token (moe_intermediate 1536).
        _model(
            "qwen3-235b",
            layers=94,
            kv_heads=4,
            head_dim=128,
            hidden_size=4096,
            intermediate_size=12288,
            n_heads=64,
            vocab_size=151936,
            params=235_000_000_000,
            active_params=22_000_000_000,
        ),
        # DeepSeek-V3: MLA caches a 512-d latent + 64-d RoPE key per layer in bf16,
        # (512 + 64) * 61 layers * 2 B = 70,272 B/token (~69 KiB).  head_dim is the
        # value head dim (q/k use 128 + 64).  Weights are counted as 2 B (bf16).
        _model(
            "deepseek-v3",
            layers=61,
            kv_heads=128,
            head_dim=128,
            hidden_size=7168,
            intermediate_size=18432,
            n_heads=128,
            vocab_size=129280,
            params=671_000_000_000,
            active_params=37_000_000_000,
            kv_bytes_per_token_override=(512 + 64) * 61 * 2,
        ),
    )
}


def get_model(name: str) -> ModelSpec:
    """Look up a model in :data:`MODELS`.

    Parameters
    ----------
    name : str
        Catalog key, e.g. ``"llama-3-8b"``.

    Returns
    -------
    ModelSpec
        The architecture of the model.

    Raises
    ------
    ConfigError
        If ``name`` is not in the catalog.
    """
    try:
        return MODELS[name]
    except (KeyError, TypeError):
        allowed = ", ".join(MODELS)
        raise ConfigError(f"workload.model: unknown model {name!r}; allowed: {allowed}") from None


# --------------------------------------------------------------------------- #
# Prompt-length distributions
# --------------------------------------------------------------------------- #
def _check_int_field(field: str, value: object, minimum: int) -> int:
    """Validate that ``value`` is an integer >= ``minimum``; return it as int."""
    if not _is_int(value):
        raise ConfigError(f"{field} must be an integer (got {value!r})")
    if int(value) < minimum:  # type: ignore[call-overload]
        raise ConfigError(f"{field} must be >= {minimum} (got {value})")
    return int(value)  # type: ignore[call-overload]


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
        lo = _check_int_field("workload.prompt_min_tokens", min_tokens, 1)
        hi = _check_int_field("workload.prompt_max_tokens", max_tokens, 1)
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
        count = _check_int_field("n", n, 0)
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
        self.tokens = _check_int_field("workload.prompt_tokens", tokens, 1)

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
        count = _check_int_field("n", n, 0)
        return np.full(count, self.tokens, dtype=np.int64)


def _read_csv_strings(path: str | PathLike[str], field: str) -> pd.DataFrame:
    """Read a UTF-8 CSV without a header, every cell as a stripped string."""
    text = _read_file_text(path, field)
    try:
        frame = pd.read_csv(io.StringIO(text), header=None, dtype=str, keep_default_na=False)
    except pd.errors.EmptyDataError:
        raise ConfigError(f"{field}: {path}: file is empty") from None
    except (OSError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"{field}: {path}: cannot read CSV ({first})") from None
    return frame.apply(lambda col: col.str.strip())


def _read_file_text(path: str | PathLike[str], field: str) -> str:
    """The file's text; a missing, unreadable or non-UTF-8 file raises ConfigError."""
    if not Path(path).exists():
        raise ConfigError(f"{field}: {path}: cannot read CSV (file not found)")
    return read_text(Path(path), field, shown=str(path))


def _first_bad(values: pd.Series, bad: npt.NDArray[np.bool_]) -> tuple[int, str]:
    """File line number (1-based) and raw text of the first flagged cell."""
    pos = int(np.argmax(bad))
    return int(str(values.index[pos])) + 1, str(values.iloc[pos])


def _parse_int_column(values: pd.Series, field: str, path: object, column: str) -> np.ndarray:
    """Parse a column of strings as positive int64; row numbers are file lines."""
    if values.empty:
        raise ConfigError(f"{field}: {path}: no data rows in column {column!r}")
    bad = ~values.str.fullmatch(r"[+-]?\d+").to_numpy(dtype=bool)
    if bad.any():
        line, text = _first_bad(values, bad)
        problem = (
            "is not a number" if text.lower() in ("nan", "+nan", "-nan") else "is not an integer"
        )
        raise ConfigError(f"{field}: {path}: line {line}: {text!r} {problem}")
    fits = values.str.fullmatch(_INT_PATTERN).to_numpy(dtype=bool)
    # a number too long for int64 stands in as one just past its bound, for the message below
    stand_in = values.str.startswith("-").map({True: "-1", False: str(MAX_MESSAGE_BYTES + 1)})
    parsed = values.where(fits, stand_in).map(int).to_numpy(dtype=np.int64)
    if (parsed <= 0).any():
        line, text = _first_bad(values, parsed <= 0)
        raise ConfigError(f"{field}: {path}: line {line}: {column} must be > 0 (got {text})")
    if (parsed > MAX_MESSAGE_BYTES).any():
        line, text = _first_bad(values, parsed > MAX_MESSAGE_BYTES)
        raise ConfigError(
            f"{field}: {path}: line {line}: {column} {text} is more than "
            f"{power_of_two(MAX_MESSAGE_BYTES)} (a token's KV cache is at least 1 byte, and one "
            "message at most that many bytes)"
        )
    return parsed


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
    frame = _read_csv_strings(path, field)
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
    return _parse_int_column(column, field, path, "prompt_tokens")


# --------------------------------------------------------------------------- #
# GPU latency models
# --------------------------------------------------------------------------- #
@dataclass(frozen=True)
class GpuSpec:
    """Roofline numbers of one accelerator.

    Parameters
    ----------
    name : str
        Catalog key, e.g. ``"h100"``.
    peak_flops : float
        Dense bf16 peak throughput (FLOP/s).
    hbm_bytes_per_s : float
        HBM bandwidth (bytes/s).
    """

    name: str
    peak_flops: float
    hbm_bytes_per_s: float

    def __post_init__(self) -> None:
        for field in ("peak_flops", "hbm_bytes_per_s"):
            value = getattr(self, field)
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise ConfigError(f"GpuSpec.{field} must be a positive number (got {value!r})")


GPUS: dict[str, GpuSpec] = {
    g.name: g
    for g in (
        GpuSpec("h100", 989e12, 3.35e12),  # H100 SXM
        GpuSpec("a100", 312e12, 2.0e12),  # A100 80 GB SXM
        GpuSpec("h200", 989e12, 4.8e12),
        GpuSpec("b200", 2.25e15, 8.0e12),
    )
}


def get_gpu(name: str) -> GpuSpec:
    """Look up a GPU in :data:`GPUS`; unknown names raise ``ConfigError`` (``workload.gpu``)."""
    try:
        return GPUS[name]
    except (KeyError, TypeError):
        allowed = ", ".join(GPUS)
        raise ConfigError(f"workload.gpu: unknown GPU {name!r}; allowed: {allowed}") from None


class GpuLatencyModel(Protocol):
    """Interface shared by :class:`AnalyticalGpuModel` and :class:`TableGpuModel`."""

    def prefill_s(self, tokens: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Prefill time of prompts of ``tokens`` tokens (s)."""
        ...

    def first_decode_s(self, tokens: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """First decode step time with a ``tokens``-token KV cache (s)."""
        ...


def _tokens_array(tokens: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Convert token counts to float64, rejecting negative or non-finite values."""
    arr = np.asarray(tokens, dtype=np.float64)
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ConfigError("tokens must be finite and >= 0")
    return arr


def _check_efficiency(field: str, value: float) -> float:
    """Validate an efficiency factor in (0, 1]."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.floating):
        raise ConfigError(f"{field} must be a number in (0, 1] (got {value!r})")
    if not (math.isfinite(value) and 0 < value <= 1):
        raise ConfigError(f"{field} must be in (0, 1] (got {value:.6g})")
    return float(value)


class AnalyticalGpuModel:
    """Roofline model of prefill and first-decode latency.

    Prefill of ``T`` tokens takes ``max(F / peak, B / hbm) / prefill_efficiency``
    with ``F = layers * (2 T P_layer + 2 T^2 n_heads head_dim) + 2 vocab hidden``
    (linear layers, causal attention = half of ``4 T^2 n_heads head_dim``,
    LM head for the last token) and ``B`` = all weights read once plus the
    KV cache written.  The first decode step reads the active weights and the
    ``T``-token KV cache and does one token of FLOPs:
    ``(B_dec / hbm + F_dec / peak) / decode_efficiency``.

    Parameters
    ----------
    model : ModelSpec
        LLM architecture.
    gpu : GpuSpec
        Accelerator roofline numbers.
    prefill_efficiency : float
        Fraction of the roofline reached during prefill, in ``(0, 1]``.
    decode_efficiency : float
        Fraction of the roofline reached during decode, in ``(0, 1]``.
    """

    def __init__(
        self,
        model: ModelSpec,
        gpu: GpuSpec,
        prefill_efficiency: float = 0.5,
        decode_efficiency: float = 0.6,
    ):
        self.model, self.gpu = model, gpu
        self.prefill_efficiency = _check_efficiency("prefill_efficiency", prefill_efficiency)
        self.decode_efficiency = _check_efficiency("decode_efficiency", decode_efficiency)

    def __repr__(self) -> str:
        return (
            f"AnalyticalGpuModel(model={self.model.name!r}, gpu={self.gpu.name!r}, "
            f"prefill_efficiency={self.prefill_efficiency:.6g}, "
            f"decode_efficiency={self.decode_efficiency:.6g})"
        )

    def prefill_flops(self, tokens: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Prefill FLOPs of prompts of ``tokens`` tokens (FLOP)."""
        m, t = self.model, _tokens_array(tokens)
        linear = 2.0 * t * m.linear_params_per_layer
        attention = 2.0 * t**2 * m.n_heads * m.head_dim  # causal half of 4 T^2 n_h d
        return m.layers * (linear + attention) + 2.0 * m.vocab_size * m.hidden_size

    def prefill_bytes(self, tokens: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """HBM traffic of a prefill: all weights read + KV cache written (bytes)."""
        m, t = self.model, _tokens_array(tokens)
        return float(m.params * m.dtype_bytes) + t * m.kv_bytes_per_token

    def decode_flops(self, tokens: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """FLOPs of one decode step attending to ``tokens`` cached tokens (FLOP)."""
        m, t = self.model, _tokens_array(tokens)
        per_layer = 2.0 * m.linear_params_per_layer + 4.0 * t * m.n_heads * m.head_dim
        return m.layers * per_layer + 2.0 * m.vocab_size * m.hidden_size

    def decode_bytes(self, tokens: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """HBM traffic of one decode step: active weights + KV cache read (bytes)."""
        m, t = self.model, _tokens_array(tokens)
        return float(m.active_params * m.dtype_bytes) + t * m.kv_bytes_per_token

    def _prefill_roofline_s(self, tokens: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Prefill time at 100 % efficiency (s)."""
        compute = self.prefill_flops(tokens) / self.gpu.peak_flops
        memory = self.prefill_bytes(tokens) / self.gpu.hbm_bytes_per_s
        return np.maximum(compute, memory)

    def _decode_roofline_s(self, tokens: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """First decode step time at 100 % efficiency (s)."""
        memory = self.decode_bytes(tokens) / self.gpu.hbm_bytes_per_s
        return memory + self.decode_flops(tokens) / self.gpu.peak_flops

    def prefill_s(self, tokens: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Prefill time of prompts of ``tokens`` tokens (s), same shape as ``tokens``."""
        return self._prefill_roofline_s(tokens) / self.prefill_efficiency

    def first_decode_s(self, tokens: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """First decode step time with a ``tokens``-token KV cache (s), same shape."""
        return self._decode_roofline_s(tokens) / self.decode_efficiency

    @classmethod
    def calibrated(
        cls,
        model: ModelSpec,
        gpu: GpuSpec,
        prefill_s_at: float,
        decode_s_at: float,
        tokens: int,
    ) -> AnalyticalGpuModel:
        """Build a model whose efficiencies reproduce two measured times exactly.

        Parameters
        ----------
        model : ModelSpec
            LLM architecture.
        gpu : GpuSpec
            Accelerator the times were measured on.
        prefill_s_at : float
            Measured prefill time at ``tokens`` (s).
        decode_s_at : float
            Measured first decode step time at ``tokens`` (s).
        tokens : int
            Prompt length of the measurement (tokens).

        Returns
        -------
        AnalyticalGpuModel
            ``prefill_s(tokens) == prefill_s_at`` and
            ``first_decode_s(tokens) == decode_s_at`` (to rounding).

        Raises
        ------
        ConfigError
            If a time is not positive or implies an efficiency above 1
            (faster than the roofline).
        """
        t = _check_int_field("calibration tokens", tokens, 1)
        probe = cls(model, gpu, 1.0, 1.0)
        floors = (float(probe._prefill_roofline_s(t)), float(probe._decode_roofline_s(t)))
        targets = (("prefill_s_at", prefill_s_at), ("decode_s_at", decode_s_at))
        for (field, value), floor in zip(targets, floors, strict=True):
            _check_calibration_target(field, value, floor, f"{gpu.name} roofline for {model.name}")
        return cls(model, gpu, floors[0] / prefill_s_at, floors[1] / decode_s_at)


def _check_calibration_target(field: str, value: float, floor: float, what: str) -> None:
    """Reject a non-positive target time or one below the roofline ``floor`` (s)."""
    if not (math.isfinite(value) and value > 0):
        raise ConfigError(f"calibration {field} must be > 0 (got {value})")
    if value < floor:
        raise ConfigError(
            f"calibration {field}={value:g} s is faster than the {what} ({floor:.6g} s)"
        )


#: Paper calibration points: model -> (tokens, prefill s, first decode s),
#: measured on :data:`CALIBRATION_GPU` (ARK paper, Llama-3-8B on one H100).
DEFAULT_CALIBRATION: dict[str, tuple[int, float, float]] = {"llama-3-8b": (13_300, 0.840, 0.010)}
CALIBRATION_GPU = "h100"
DEFAULT_PREFILL_EFFICIENCY = 0.5
DEFAULT_DECODE_EFFICIENCY = 0.6


def default_gpu_model(model_name: str, gpu_name: str = "h100") -> AnalyticalGpuModel:
    """Analytical latency model with the default efficiencies.

    If ``model_name`` has an entry in :data:`DEFAULT_CALIBRATION`, the
    efficiencies are solved on :data:`CALIBRATION_GPU` and reused on
    ``gpu_name``; otherwise :data:`DEFAULT_PREFILL_EFFICIENCY` (0.5) and
    :data:`DEFAULT_DECODE_EFFICIENCY` (0.6) are used.

    Parameters
    ----------
    model_name : str
        Key of :data:`MODELS`.
    gpu_name : str
        Key of :data:`GPUS`.

    Returns
    -------
    AnalyticalGpuModel
    """
    model, gpu = get_model(model_name), get_gpu(gpu_name)
    if model_name not in DEFAULT_CALIBRATION:
        return AnalyticalGpuModel(model, gpu, DEFAULT_PREFILL_EFFICIENCY, DEFAULT_DECODE_EFFICIENCY)
    tokens, prefill_s, decode_s = DEFAULT_CALIBRATION[model_name]
    ref = AnalyticalGpuModel.calibrated(
        model, get_gpu(CALIBRATION_GPU), prefill_s, decode_s, tokens
    )
    return AnalyticalGpuModel(model, gpu, ref.prefill_efficiency, ref.decode_efficiency)


_TABLE_COLUMNS = ("prompt_tokens", "prefill_s", "decode_s")


def _parse_time_column(values: pd.Series, field: str, path: object, column: str) -> np.ndarray:
    """Parse a column of strings as finite float64 times (s) in ``(0, MAX_TIME_S]``."""
    parsed = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64)
    nan_text = values.str.lower().isin(("nan", "+nan", "-nan")).to_numpy(dtype=bool)
    checks = (
        (np.isnan(parsed) & ~nan_text, "must be a number > 0 (got {text!r})"),
        (np.isnan(parsed), "{text!r} is not a number"),
        (np.isinf(parsed), "{text!r} is not finite"),
        (parsed <= 0, "must be a number > 0 (got {text!r})"),
        (
            parsed > MAX_TIME_S,
            f"{{text}} s is more than {MAX_TIME_S:g} s, the longest simulated time",
        ),
    )
    for bad, problem in checks:
        if bad.any():
            line, text = _first_bad(values, bad)
            raise ConfigError(f"{field}: {path}: line {line}: {column} {problem.format(text=text)}")
    return parsed


class TableGpuModel:
    """Latency model interpolated from measured times.

    Times between table rows are linearly interpolated (:func:`numpy.interp`);
    outside ``[min(prompt_tokens), max(prompt_tokens)]`` the first/last row
    is used (clamped; check :attr:`token_range` against the workload).

    Parameters
    ----------
    prompt_tokens : array_like of int
        Strictly increasing prompt lengths (tokens), all ``> 0``.
    prefill_s : array_like of float
        Prefill time at each length (s), ``> 0``.
    decode_s : array_like of float
        First decode step time at each length (s), ``> 0``.
    source : str
        Where the table came from, used in error messages.
    """

    def __init__(
        self,
        prompt_tokens: npt.ArrayLike,
        prefill_s: npt.ArrayLike,
        decode_s: npt.ArrayLike,
        source: str = "<table>",
    ):
        field = "workload.gpu_profile_path"
        tok = np.asarray(prompt_tokens, dtype=np.float64)
        pre = np.asarray(prefill_s, dtype=np.float64)
        dec = np.asarray(decode_s, dtype=np.float64)
        if tok.ndim != 1 or tok.size == 0 or pre.shape != tok.shape or dec.shape != tok.shape:
            raise ConfigError(f"{field}: {source}: need equal-length, non-empty 1-D columns")
        if np.any(tok <= 0) or np.any(tok != np.round(tok)):
            raise ConfigError(f"{field}: {source}: prompt_tokens must be positive integers")
        if np.any(np.diff(tok) <= 0):
            raise ConfigError(f"{field}: {source}: prompt_tokens must be sorted and unique")
        for name, col in (("prefill_s", pre), ("decode_s", dec)):
            if not np.all(np.isfinite(col)) or np.any(col <= 0):
                raise ConfigError(f"{field}: {source}: {name} must be finite and > 0")
        self.source = source
        self._tokens, self._prefill, self._decode = tok, pre, dec

    @classmethod
    def from_csv(cls, path: str | PathLike[str]) -> TableGpuModel:
        """Read a table with columns ``prompt_tokens, prefill_s, decode_s``.

        Raises
        ------
        ConfigError
            One line naming ``workload.gpu_profile_path``, the file and the problem.
        """
        field = "workload.gpu_profile_path"
        frame = _read_csv_strings(path, field)
        header = [str(v) for v in frame.iloc[0]]
        missing = [c for c in _TABLE_COLUMNS if c not in header]
        if missing:
            raise ConfigError(
                f"{field}: {path}: missing column(s) {', '.join(missing)} "
                f"(need {', '.join(_TABLE_COLUMNS)}; found {', '.join(header)})"
            )
        body = frame.iloc[1:]
        tok = _parse_int_column(body[header.index("prompt_tokens")], field, path, "prompt_tokens")
        times = [
            _parse_time_column(body[header.index(c)], field, path, c) for c in _TABLE_COLUMNS[1:]
        ]
        return cls(tok, times[0], times[1], source=str(path))

    @property
    def token_range(self) -> tuple[int, int]:
        """Smallest and largest tabulated prompt length (tokens)."""
        return int(self._tokens[0]), int(self._tokens[-1])

    def prefill_s(self, tokens: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Interpolated prefill time (s), same shape as ``tokens``."""
        return np.asarray(np.interp(_tokens_array(tokens), self._tokens, self._prefill))

    def first_decode_s(self, tokens: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Interpolated first decode step time (s), same shape as ``tokens``."""
        return np.asarray(np.interp(_tokens_array(tokens), self._tokens, self._decode))


# --------------------------------------------------------------------------- #
# Arrivals and host pairs
# --------------------------------------------------------------------------- #
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
    count = _check_int_field("n", n, 0)
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
    count = _check_int_field("n", n, 0)
    pools = []
    for field, hosts in (("prefill_hosts", prefill_hosts), ("decode_hosts", decode_hosts)):
        arr = np.asarray(hosts)
        if arr.ndim != 1 or arr.size == 0:
            raise ConfigError(f"{field} must be a non-empty 1-D array (got shape {arr.shape})")
        pools.append(arr)
    src = pools[0][rng.integers(0, pools[0].size, size=count)]
    dst = pools[1][rng.integers(0, pools[1].size, size=count)]
    return src, dst
