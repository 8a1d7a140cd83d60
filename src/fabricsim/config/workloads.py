"""Workload models: one pydantic model per ``workload.kind``, joined in a tagged union.

A kind is its model here (a member of :data:`WorkloadConfig`; :data:`WORKLOAD_KINDS` and the
validation messages follow the union) and, in its own module under :mod:`fabricsim.workloads`,
one :func:`~fabricsim.workloads.register` call naming the model, the generator and its budget
terms.  The contract tests iterate that registry, so a kind missing either half fails them.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal, get_args

from pydantic import Field, ValidationInfo, field_validator, model_validator

from fabricsim.config.base import StrictModel
from fabricsim.config.catalog import GPUS, MODELS
from fabricsim.units import MAX_MESSAGE_BYTES, MAX_TIME_S, parse_quantity


class _Workload(StrictModel):
    pass


class TraceWorkload(_Workload):
    """Messages from a file: CSV/Parquet (src, dst, size_bytes, start_s[, id]) or htsim .cm."""

    kind: Literal["trace"] = "trace"
    path: str = Field(..., min_length=1, description="CSV, Parquet or htsim .cm file")


class PermutationWorkload(_Workload):
    """Every host sends one message to another host; a random derangement."""

    kind: Literal["permutation"] = "permutation"
    size_bytes: int = Field(2_000_000, ge=1, le=MAX_MESSAGE_BYTES, description="bytes per message")
    start_s: float = Field(0.0, ge=0, le=MAX_TIME_S, description="start time of every message, s")


class IncastWorkload(_Workload):
    """``senders`` hosts send one message each to one receiver at the same time."""

    kind: Literal["incast"] = "incast"
    senders: int = Field(8, ge=1, le=10**6, description="number of senders")
    receiver: int = Field(0, ge=0, description="receiver host index")
    size_bytes: int = Field(2_000_000, ge=1, le=MAX_MESSAGE_BYTES, description="bytes per message")
    start_s: float = Field(0.0, ge=0, le=MAX_TIME_S, description="start time, s")


class LeafToLeafWorkload(_Workload):
    """Host i of ``src_leaf`` sends to host i of ``dst_leaf``, all at once (a collective step)."""

    kind: Literal["leaf_to_leaf"] = "leaf_to_leaf"
    src_leaf: int = Field(0, ge=0, description="sending leaf index")
    dst_leaf: int = Field(1, ge=0, description="receiving leaf index")
    hosts: int | None = Field(None, ge=1, description="senders (default: every host of the leaf)")
    size_bytes: int = Field(
        4 * 1024**2, ge=1, le=MAX_MESSAGE_BYTES, description="bytes per message"
    )
    start_s: float = Field(0.0, ge=0, le=MAX_TIME_S, description="start time, s")


class KvCacheWorkload(_Workload):
    """Disaggregated inference: prefill hosts send KV caches to decode hosts (ARK, ``001``).

    One request = one KV-cache flow of ``prompt_tokens x kv_bytes_per_token`` bytes from a random
    prefill host to a random decode host, starting at the request's Poisson arrival.
    TTFT = prefill(L) + KV-flow FCT + first decode step(L) (GPU latency model or CSV table).
    """

    kind: Literal["kv_cache"] = "kv_cache"
    qps: float = Field(25.0, gt=0, le=1e6, description="Poisson request rate, requests/s")
    requests: int = Field(1000, ge=1, le=10_000_000, description="number of requests")
    model: str = Field("llama-3-8b", description="model catalog name (KV bytes/token, GPU model)")
    kv_bytes_per_token: int | None = Field(
        None, ge=1, le=2**30, description="KV-cache bytes per token, overriding the model's"
    )
    prompt: Literal["zipf", "fixed", "trace"] = Field("zipf", description="prompt lengths")
    prompt_theta: float = Field(0.7, ge=0, le=10, description="rank-Zipf exponent")
    prompt_min_tokens: int = Field(1000, ge=1, le=10**9, description="rank-Zipf minimum, tokens")
    prompt_max_tokens: int = Field(52_600, ge=1, le=10**9, description="rank-Zipf maximum, tokens")
    prompt_tokens: int = Field(13_300, ge=1, le=10**9, description="fixed prompt length, tokens")
    prompt_path: str | None = Field(
        None, description="CSV of prompt_tokens (prompt: trace), used in file order, wrapping"
    )
    prefill_hosts: list[int] | None = Field(None, description="default: the first half")
    decode_hosts: list[int] | None = Field(None, description="default: the second half")
    gpu: str = Field("h100", description="GPU of the analytical latency model")
    gpu_profile_path: str | None = Field(
        None, description="CSV: prompt_tokens,prefill_s,decode_s (replaces the analytical model)"
    )

    @field_validator("model")
    @classmethod
    def _known_model(cls, v: str) -> str:
        if v not in MODELS:
            raise ValueError(f"unknown model; allowed: {', '.join(MODELS)} (got {v!r})")
        return v

    @field_validator("gpu")
    @classmethod
    def _known_gpu(cls, v: str) -> str:
        if v not in GPUS:
            raise ValueError(f"unknown GPU; allowed: {', '.join(GPUS)} (got {v!r})")
        return v

    @field_validator("prompt_max_tokens")
    @classmethod
    def _tokens_ordered(cls, v: int, info: ValidationInfo) -> int:
        lo = info.data.get("prompt_min_tokens")
        if lo is not None and v < lo:
            raise ValueError(f"must be >= workload.prompt_min_tokens={lo} (got {v})")
        return v

    @field_validator("prompt_path")
    @classmethod
    def _trace_has_path(cls, v: str | None, info: ValidationInfo) -> str | None:
        if info.data.get("prompt") == "trace" and not v:
            raise ValueError("needed when workload.prompt is trace: a CSV with prompt_tokens")
        return v


class MoeWorkload(_Workload):
    """MoE all-to-all dispatch (``003``): one flow per non-zero entry of a GPU-level matrix.

    One NIC per GPU: GPU ``i`` is host ``i``.  ``matrix``: ``zipf`` (synthetic token routing
    to Zipf-popular experts), ``pure_zipf`` (the paper's D_ij = T/(j H_N) on a bipartite
    non-blocking mapping: senders are hosts 0..N-1, receiver rank j is host N+j-1), ``file``
    (CSV or .npy, N x N) or ``chakra`` (MLCommons Chakra execution traces).  Intra-server
    blocks (``gpus_per_server``) travel over NVLink and are removed, except for pure_zipf.
    The shape fields left null come from ``model`` (a preset) or the generic defaults.
    ``scheduler`` (sender side): ``round_robin`` (the NIC serves its active messages a packet
    each in turn) or ``rate_based`` (each flow paced at ``R_ij`` x line rate on wire bytes);
    ``pacing_acks`` adds the ACKs the packet engine sends to the port loads that set ``M``.
    """

    kind: Literal["moe"] = "moe"
    matrix: Literal["zipf", "pure_zipf", "file", "chakra"] = Field(
        "zipf", description="matrix source"
    )
    path: str | None = Field(
        None, description="file: CSV/.npy N x N matrix; chakra: a .et file or a directory"
    )
    units: Literal["bytes", "tokens"] = Field(
        "bytes", description="file matrices: entries in bytes or in tokens (x token bytes)"
    )
    model: Literal["deepseek-v3", "qwen3-235b"] | None = Field(
        None, description="shape preset: hidden size, experts, top-k, bytes per element"
    )
    gpus: int | None = Field(
        None, ge=2, description="GPUs (default: every host; pure_zipf: half the hosts)"
    )
    zipf_s: float = Field(0.5, ge=0, le=10, description="expert popularity Zipf exponent")
    tokens_per_gpu: int = Field(256, ge=1, le=1_000_000, description="tokens each GPU dispatches")
    top_k: int | None = Field(None, ge=1, le=64, description="experts per token (default 8)")
    experts: int | None = Field(
        None, ge=1, le=1_000_000, description="routed experts (default: model's, else 4 per GPU)"
    )
    hidden_size: int | None = Field(
        None, ge=1, le=10**7, description="token hidden size (default 7168)"
    )
    bytes_per_element: int | None = Field(
        None, ge=1, le=8, description="bytes per hidden element (default 1, FP8)"
    )
    shuffle_experts: bool = Field(
        True, description="popularity ranks given to experts in random order (else expert 0 first)"
    )
    gpus_per_server: int = Field(8, ge=1, description="NVLink domain: intra-server traffic removed")
    total_bytes_per_sender: int = Field(
        4_000_000, ge=1, le=MAX_MESSAGE_BYTES, description="pure_zipf: T, bytes each sender sends"
    )
    trace_groups: dict[str, list[int]] | None = Field(
        None, description="chakra: process group name -> ranks (default: every rank)"
    )
    scheduler: Literal["round_robin", "rate_based"] = Field(
        "round_robin", description="sender scheduler: round robin, or paced at R_ij x line rate"
    )
    pacing_acks: Literal["auto", "on", "off"] = Field(
        "auto",
        description="rate_based: count ACK bytes (nic.header_bytes per nic.ack_coalesce packets) "
        "in every port's load, so in M; auto: on when engine.kind is packet",
    )
    start_s: float = Field(0.0, ge=0, le=MAX_TIME_S, description="dispatch start, s")

    @model_validator(mode="after")
    def _needs_path(self) -> MoeWorkload:
        if self.matrix in ("file", "chakra") and not self.path:
            raise ValueError(f"matrix: {self.matrix} needs workload.path")
        if self.top_k is not None and self.experts is not None and self.top_k > self.experts:
            raise ValueError(f"top_k ({self.top_k}) must be <= experts ({self.experts})")
        return self


COLLECTIVE_OPS = (
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "broadcast",
    "reduce",
    "all_to_all",
    "send_recv",
)
"""The collective operations, as nccl-tests names them (``ring_allreduce``: all_reduce + ring)."""
COLLECTIVE_ALGORITHMS: dict[str, tuple[str, ...]] = {
    "all_reduce": ("ring", "tree"),
    "all_gather": ("ring",),
    "reduce_scatter": ("ring",),
    "broadcast": ("ring", "tree"),
    "reduce": ("ring", "tree"),
    "all_to_all": ("direct", "pairwise"),
    "send_recv": ("ring",),
}
"""Per operation, the algorithms it runs with; the first is its default, as NCCL runs it for
large buffers: ring; all-to-all as one group of sends (``direct``; ``pairwise``: in ``n-1``
synchronized steps, MPI's pairwise exchange); send/recv is one ring shift."""
MAX_SWEEP_SIZES = 64


def sweep_sizes(value: object) -> list[int] | None:
    """``workload.sizes``: ``"A..B"`` doubles from A while <= B (nccl-tests ``-b A -e B -f 2``),
    ``"A..BxF"`` multiplies by F; a list is taken as it is.  Sizes take unit suffixes.

    >>> sweep_sizes("1MiB..8MiB")
    [1048576, 2097152, 4194304, 8388608]
    >>> sweep_sizes("1kB..1MBx10"), sweep_sizes(["4MB", 8])
    ([1000, 10000, 100000, 1000000], [4000000, 8])
    """
    if value is None:
        return None
    if isinstance(value, str):
        m = re.fullmatch(r"\s*([^.\s]+)\s*\.\.\s*([^x\s]+)\s*(?:x\s*(\d+))?\s*", value)
        if m is None:
            raise ValueError(f"write A..B (doubling) or A..BxF, or a list of sizes (got {value!r})")
        lo, hi = (_size(v) for v in m.group(1, 2))
        factor = int(m.group(3) or 2)
        if factor < 2 or hi < lo:
            raise ValueError(f"needs A <= B and a factor >= 2 (got {value!r})")
        out = [lo]
        while out[-1] * factor <= hi and len(out) <= MAX_SWEEP_SIZES:
            out.append(out[-1] * factor)
    elif isinstance(value, list | tuple):
        out = [_size(v) for v in value]
    else:
        raise ValueError(f"write A..B (doubling) or a list of sizes (got {value!r})")
    if not 1 <= len(out) <= MAX_SWEEP_SIZES:
        raise ValueError(f"1 to {MAX_SWEEP_SIZES} sizes (got {len(out)})")
    return out


def _size(v: object) -> int:
    parsed = parse_quantity(v, "size_bytes") if isinstance(v, str) else v
    if isinstance(parsed, bool) or not isinstance(parsed, int | float) or parsed != int(parsed):
        raise ValueError(f"a size in bytes, e.g. 4MB or 4194304 (got {v!r})")
    if not 1 <= parsed <= MAX_MESSAGE_BYTES:
        raise ValueError(f"sizes are 1..{MAX_MESSAGE_BYTES} bytes (got {v!r})")
    return int(parsed)


class CollectiveWorkload(_Workload):
    """A collective over a group of ranks (one GPU = one host), as NCCL runs it.

    The schedule is a DAG of steps (each flow starts when the data it needs has arrived); the
    formulas, sizes and bus-bandwidth factors are those of ``docs/collectives.md``.
    """

    kind: Literal["collective"] = "collective"
    op: Literal[(*COLLECTIVE_OPS, "ring_allreduce")] = Field(  # type: ignore[valid-type]
        "ring_allreduce",
        description="operation (nccl-tests' names); ring_allreduce = all_reduce with ring",
    )
    algorithm: Literal["ring", "tree", "pairwise", "direct"] | None = Field(
        None,
        description="ring; tree (double binary tree: all_reduce, broadcast, reduce); all_to_all: "
        "direct (every send at once) or pairwise (n-1 synchronized steps); null: the "
        "operation's default (all_to_all: direct, else ring)",
    )
    channels: int = Field(
        1, ge=1, le=64, description="parallel rings/trees (NCCL channels), each 1/channels of it"
    )
    size_bytes: int = Field(
        64 * 1024**2,
        ge=1,
        le=MAX_MESSAGE_BYTES,
        description="nccl-tests' size: all_reduce/broadcast/reduce/send_recv the buffer per "
        "rank; all_gather/reduce_scatter/all_to_all the whole array of n chunks, bytes",
    )
    sizes: list[int] | None = Field(
        None,
        description="size sweep run one size after another: A..B doubles from A while <= B "
        "(1MiB..1GiB = nccl-tests -b 1M -e 1G), A..BxF multiplies by F, or a list; "
        "replaces size_bytes (which then shows the last size)",
    )
    chunk_bytes: int = Field(
        1024**2,
        ge=1,
        le=MAX_MESSAGE_BYTES,
        description="tree, broadcast, reduce: pipeline piece, bytes (a channel's data is cut "
        "into at most 64 pieces)",
    )
    root: int = Field(0, ge=0, description="broadcast/reduce: the root's rank (index in hosts)")
    hierarchical: bool = Field(
        False,
        description="servers' GPUs first over NVLink, then across servers (all_reduce: "
        "reduce_scatter in the server, all_reduce across, all_gather in the server)",
    )
    gpus_per_server: int | None = Field(
        None,
        ge=1,
        le=4096,
        description="GPUs per server for hierarchical and the rings' rail order (null: "
        "topology.rails on a rail_optimized fabric, else 1)",
    )
    hosts: list[int] | None = Field(None, description="ranks (default: every host, in order)")
    start_s: float = Field(0.0, ge=0, le=MAX_TIME_S, description="start time, s")

    @field_validator("sizes", mode="before")
    @classmethod
    def _sweep(cls, v: object) -> list[int] | None:
        return sweep_sizes(v)

    @model_validator(mode="after")
    def _pairs(self) -> CollectiveWorkload:
        allowed = COLLECTIVE_ALGORITHMS[self.operation]
        if self.algorithm is not None and self.algorithm not in allowed:
            raise ValueError(
                f"algorithm: {self.operation} runs with {', '.join(allowed)} (got {self.algorithm})"
            )
        if self.op == "ring_allreduce" and self.algorithm not in (None, "ring"):
            raise ValueError(
                "algorithm: op ring_allreduce is all_reduce with ring; use op "
                f"all_reduce for {self.algorithm}"
            )
        if self.sizes is not None:
            given = "size_bytes" in self.model_fields_set
            if given and self.size_bytes != self.sizes[-1]:  # a saved config.yaml has both
                raise ValueError("sizes: give workload.size_bytes or workload.sizes, not both")
            self._derive("size_bytes", self.sizes[-1])  # the size the summary reports
        if self.hierarchical and self.operation in ("all_to_all", "send_recv"):
            raise ValueError(f"hierarchical: not for {self.operation} (point-to-point)")
        return self

    @property
    def operation(self) -> str:
        """``op`` with ``ring_allreduce`` read as ``all_reduce``."""
        return "all_reduce" if self.op == "ring_allreduce" else self.op

    @property
    def algo(self) -> str:
        """The algorithm that runs: ``algorithm`` or the operation's default."""
        return self.algorithm or COLLECTIVE_ALGORITHMS[self.operation][0]

    @property
    def size_list(self) -> list[int]:
        """The sizes run, in order (``sizes``, else ``[size_bytes]``)."""
        return list(self.sizes) if self.sizes is not None else [self.size_bytes]


class ChakraWorkload(_Workload):
    """A replay of MLCommons Chakra execution traces, one file per rank, with dependencies.

    Rank ``r`` runs on host ``r``.  Compute nodes last their recorded duration times
    ``compute_scale``; communication nodes become flows (send/recv) or collectives (all-reduce
    as a ring, all-to-all); a node starts when its data and control dependencies have finished.
    Messages between ranks of one server (``gpus_per_server``) cross NVLink at ``nvlink_gbps``
    instead of the fabric.
    """

    kind: Literal["chakra"] = "chakra"
    path: str = Field(
        ..., min_length=1, description="a directory of <prefix>.<rank>.et files, or one of them"
    )
    compute_scale: float = Field(
        1.0, ge=0, le=1e6, description="compute nodes take their duration x this (0: no compute)"
    )
    gpus_per_server: int = Field(
        8, ge=1, le=10**6, description="ranks per server: messages inside one cross NVLink"
    )
    nvlink_gbps: float = Field(
        3600.0, gt=0, le=1e6, description="NVLink rate of one GPU, each way, Gbps (intra-server)"
    )
    trace_groups: dict[str, list[int]] | None = Field(
        None, description="process group name -> ranks (default: every rank)"
    )


WorkloadConfig = Annotated[
    TraceWorkload
    | PermutationWorkload
    | IncastWorkload
    | LeafToLeafWorkload
    | KvCacheWorkload
    | MoeWorkload
    | CollectiveWorkload
    | ChakraWorkload,
    Field(discriminator="kind"),
]

WORKLOAD_MODELS: tuple[type[_Workload], ...] = get_args(get_args(WorkloadConfig)[0])
"""The models of the union, in its order."""
WORKLOAD_KINDS: tuple[str, ...] = tuple(m.model_fields["kind"].default for m in WORKLOAD_MODELS)
"""The ``workload.kind`` values, in the union's order (what validation lists)."""
