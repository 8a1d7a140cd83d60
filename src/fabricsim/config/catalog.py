"""Data catalog of LLM architectures and GPUs (names and constants, no model code).

The config layer validates ``workload.model`` and ``workload.gpu`` against these names, and the
workload layer builds the KV-cache sizes (:mod:`fabricsim.workloads.kv_cache`) and the GPU
latency models (:mod:`fabricsim.workloads.gpu_latency`) from the same entries:

* :data:`MODELS`: decoder-only LLMs (:class:`ModelSpec`) with their KV-cache size per token
  (Llama-3-8B: 128 KiB/token, binary units, KiB = 1024 B);
* :data:`GPUS`: accelerators (:class:`GpuSpec`) with their roofline numbers.

Unknown names and invalid entries raise :class:`~fabricsim.errors.ConfigError` with a one-line
message naming the field.  Standard library only, so that ``config`` can import it.

Examples
--------
>>> get_model("llama-3-8b").kv_bytes_per_token
131072
>>> sorted(GPUS)
['a100', 'b200', 'h100', 'h200']
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from fabricsim.errors import ConfigError

__all__ = [
    "GPUS",
    "MODELS",
    "GpuSpec",
    "ModelSpec",
    "get_gpu",
    "get_model",
    "is_int",
]


def is_int(value: object) -> bool:
    """Return True for Python/numpy integers (not bools).

    numpy registers its integer types as :class:`numbers.Integral`; ``numpy.bool_`` is not one.
    """
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


# --------------------------------------------------------------------------- #
# LLM architectures
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
            if not is_int(value) or value <= 0:
                raise ConfigError(f"ModelSpec.{field} must be a positive integer (got {value!r})")
        if self.active_params > self.params:
            raise ConfigError(
                f"ModelSpec.active_params must be <= ModelSpec.params "
                f"(got {self.active_params} > {self.params})"
            )
        override = self.kv_bytes_per_token_override
        if override is not None and (not is_int(override) or override <= 0):
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
# GPUs
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
