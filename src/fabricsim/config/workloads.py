"""Workload models: one pydantic model per ``workload.kind``, joined in a tagged union."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Workload(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, validate_default=True)


class TraceWorkload(_Workload):
    """Messages from a file: CSV/Parquet (src, dst, size_bytes, start_s[, id]) or htsim .cm."""

    kind: Literal["trace"] = "trace"
    path: str = Field(..., min_length=1, description="CSV, Parquet or htsim .cm file")


class PermutationWorkload(_Workload):
    """Every host sends one message to another host; a random derangement."""

    kind: Literal["permutation"] = "permutation"
    size_bytes: int = Field(2_000_000, ge=1, description="bytes per message")
    start_s: float = Field(0.0, ge=0, description="start time of every message, s")


class IncastWorkload(_Workload):
    """``senders`` hosts send one message each to one receiver at the same time."""

    kind: Literal["incast"] = "incast"
    senders: int = Field(8, ge=1, description="number of senders")
    receiver: int = Field(0, ge=0, description="receiver host index")
    size_bytes: int = Field(2_000_000, ge=1, description="bytes per message")
    start_s: float = Field(0.0, ge=0, description="start time, s")


class LeafToLeafWorkload(_Workload):
    """Host i of ``src_leaf`` sends to host i of ``dst_leaf``, all at once (a collective step)."""

    kind: Literal["leaf_to_leaf"] = "leaf_to_leaf"
    src_leaf: int = Field(0, ge=0, description="sending leaf index")
    dst_leaf: int = Field(1, ge=0, description="receiving leaf index")
    hosts: int | None = Field(None, ge=1, description="senders (default: every host of the leaf)")
    size_bytes: int = Field(4 * 1024**2, ge=1, description="bytes per message")
    start_s: float = Field(0.0, ge=0, description="start time, s")


class KvCacheWorkload(_Workload):
    """Disaggregated inference: prefill hosts send KV caches to decode hosts."""

    kind: Literal["kv_cache"] = "kv_cache"
    qps: float = Field(25.0, gt=0, le=1e6, description="Poisson request rate, requests/s")
    requests: int = Field(1000, ge=1, le=10_000_000, description="number of requests")
    model: str = Field("llama-3-8b", description="model catalog name")
    kv_bytes_per_token: int | None = Field(None, ge=1, description="override the model's")
    prompt: Literal["zipf", "fixed", "trace"] = Field("zipf", description="prompt lengths")
    prompt_theta: float = Field(0.7, ge=0, le=10, description="rank-Zipf exponent")
    prompt_min_tokens: int = Field(1000, ge=1, description="rank-Zipf minimum, tokens")
    prompt_max_tokens: int = Field(52_600, ge=1, description="rank-Zipf maximum, tokens")
    prompt_tokens: int = Field(13_300, ge=1, description="fixed prompt length, tokens")
    prompt_path: str | None = Field(None, description="CSV of prompt_tokens (prompt: trace)")
    prefill_hosts: list[int] | None = Field(None, description="default: the first half")
    decode_hosts: list[int] | None = Field(None, description="default: the second half")
    gpu: str = Field("h100", description="GPU of the analytical latency model")
    gpu_profile_path: str | None = Field(None, description="CSV: prompt_tokens,prefill_s,decode_s")

    @model_validator(mode="after")
    def _tokens_ordered(self) -> KvCacheWorkload:
        if self.prompt_min_tokens > self.prompt_max_tokens:
            raise ValueError(
                "prompt_min_tokens must be <= prompt_max_tokens "
                f"(got {self.prompt_min_tokens} > {self.prompt_max_tokens})"
            )
        if self.prompt == "trace" and not self.prompt_path:
            raise ValueError("prompt: trace needs prompt_path (a CSV with prompt_tokens)")
        return self


class MoeWorkload(_Workload):
    """MoE all-to-all dispatch from a GPU-level demand matrix."""

    kind: Literal["moe"] = "moe"
    matrix: Literal["zipf", "pure_zipf", "file"] = Field("zipf", description="matrix source")
    path: str | None = Field(None, description="CSV/.npy matrix or Chakra trace (matrix: file)")
    zipf_s: float = Field(0.5, ge=0, le=10, description="expert popularity skew")
    tokens_per_gpu: int = Field(256, ge=1, description="tokens each GPU dispatches")
    top_k: int = Field(8, ge=1, le=64, description="experts per token")
    experts: int | None = Field(None, ge=1, description="experts (default 4 per GPU)")
    hidden_size: int = Field(7168, ge=1, description="token hidden size")
    bytes_per_element: int = Field(1, ge=1, le=8, description="bytes per hidden element")
    gpus_per_server: int = Field(8, ge=1, description="NVLink domain: intra-server removed")
    total_bytes_per_sender: int = Field(4_000_000, ge=1, description="pure_zipf: T, bytes")
    scheduler: Literal["round_robin", "rate_based"] = Field("round_robin", description="sender")
    start_s: float = Field(0.0, ge=0, description="dispatch start, s")


class CollectiveWorkload(_Workload):
    """A synchronized collective over a host group."""

    kind: Literal["collective"] = "collective"
    op: Literal["ring_allreduce", "all_to_all"] = Field("ring_allreduce", description="collective")
    size_bytes: int = Field(64 * 1024**2, ge=1, description="buffer size per host, bytes")
    hosts: list[int] | None = Field(None, description="participants (default: all hosts)")
    start_s: float = Field(0.0, ge=0, description="start time, s")


WorkloadConfig = Annotated[
    TraceWorkload
    | PermutationWorkload
    | IncastWorkload
    | LeafToLeafWorkload
    | KvCacheWorkload
    | MoeWorkload
    | CollectiveWorkload,
    Field(discriminator="kind"),
]
