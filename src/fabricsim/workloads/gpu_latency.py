"""GPU latency models: prefill time and first decode step time of an LLM request.

Used as ``TTFT = prefill_s(L) + KV transfer FCT + first_decode_s(L)``:

* :class:`AnalyticalGpuModel`, a roofline of one model (:class:`~fabricsim.config.catalog.ModelSpec`)
  on one accelerator (:class:`~fabricsim.config.catalog.GpuSpec`), with
  :func:`default_gpu_model` calibrated to the ARK paper's measurement;
* :class:`TableGpuModel`, interpolated from a measured CSV profile.

The model and GPU catalogs themselves live in :mod:`fabricsim.config.catalog`.

Examples
--------
>>> gpu = default_gpu_model("llama-3-8b")
>>> round(float(gpu.prefill_s(13_300)), 3), round(float(gpu.first_decode_s(13_300)), 3)
(0.84, 0.01)
"""

from __future__ import annotations

import math
from os import PathLike
from typing import Protocol

import numpy as np
import numpy.typing as npt

from fabricsim.config.catalog import GpuSpec, ModelSpec, get_gpu, get_model
from fabricsim.errors import ConfigError
from fabricsim.workloads.kv_inputs import (
    check_int_field,
    parse_int_column,
    parse_time_column,
    read_csv_strings,
)

__all__ = [
    "CALIBRATION_GPU",
    "DEFAULT_CALIBRATION",
    "DEFAULT_DECODE_EFFICIENCY",
    "DEFAULT_PREFILL_EFFICIENCY",
    "AnalyticalGpuModel",
    "GpuLatencyModel",
    "TableGpuModel",
    "default_gpu_model",
]


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
        t = check_int_field("calibration tokens", tokens, 1)
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
        frame = read_csv_strings(path, field)
        header = [str(v) for v in frame.iloc[0]]
        missing = [c for c in _TABLE_COLUMNS if c not in header]
        if missing:
            raise ConfigError(
                f"{field}: {path}: missing column(s) {', '.join(missing)} "
                f"(need {', '.join(_TABLE_COLUMNS)}; found {', '.join(header)})"
            )
        body = frame.iloc[1:]
        tok = parse_int_column(body[header.index("prompt_tokens")], field, path, "prompt_tokens")
        times = [
            parse_time_column(body[header.index(c)], field, path, c) for c in _TABLE_COLUMNS[1:]
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
