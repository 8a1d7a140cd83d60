"""KV-cache transfers of disaggregated LLM inference (``workload.kind: kv_cache``, ``001_*.txt``).

Each request is one flow: the KV cache of its prompt, ``prompt_tokens x kv_bytes_per_token``
bytes, sent from a random prefill host to a random decode host.  The flow starts at the
request's Poisson arrival (no GPU queueing is modelled, as in the ARK paper's replay), and

    TTFT = prefill_s(L) + KV-flow FCT + first decode step_s(L)

with the GPU times of :mod:`fabricsim.workloads.kv_models` (an analytical H100 model calibrated
to the paper's ~840 ms prefill and ~10 ms first decode at the mean prompt, or a measured CSV).

Randomness comes from three named streams of the scenario seed (``kv_prompts``,
``kv_arrivals``, ``kv_pairs``), so the prompts and the host pairs of a seed are the same at every
QPS and under every path policy, and the arrival times at QPS ``q`` are those at QPS 1 divided by
``q``: a QPS sweep or a policy comparison is paired request by request.

Examples
--------
>>> from fabricsim.config import load_scenario
>>> from fabricsim.experiments.runner import fabric_of
>>> sc = load_scenario("ark").with_overrides({"workload.requests": 4})
>>> table = kv_cache(sc, fabric_of(sc))
>>> int(table.size_bytes[0]) == int(table.extra["prompt_tokens"][0]) * 131_072
True
>>> bool((table.src < 8).all() and (table.dst >= 8).all())
True
"""

from __future__ import annotations

import math

import numpy as np

from fabricsim.config.catalog import get_model
from fabricsim.config.models import Scenario
from fabricsim.config.workloads import KvCacheWorkload
from fabricsim.errors import ConfigError
from fabricsim.rng import stream
from fabricsim.topology.fabric import Fabric
from fabricsim.workloads.arrivals import poisson_arrivals, random_pairs
from fabricsim.workloads.base import FabricCounts, FlowTable, WorkloadLoad, harmonic, register
from fabricsim.workloads.gpu_latency import GpuLatencyModel, TableGpuModel, default_gpu_model
from fabricsim.workloads.prompts import FixedLength, RankZipf, load_prompt_trace

__all__ = [
    "gpu_model_of",
    "host_pools",
    "kv_bytes_per_token_of",
    "kv_cache",
    "prompt_lengths",
    "ttft_s",
]

#: Extra per-flow columns of a kv_cache flow table (copied into ``flows.parquet``).
EXTRA_COLUMNS = ("request_id", "prompt_tokens", "prefill_s", "decode_s")


def host_pools(wl: KvCacheWorkload, fabric: Fabric) -> tuple[np.ndarray, np.ndarray]:
    """Prefill and decode host ids (default: first half of the hosts prefill, second decode).

    Raises
    ------
    ConfigError
        A pool is empty, names a host outside the fabric or twice, or the pools overlap.
    """
    n = fabric.num_hosts
    if n < 2 and (wl.prefill_hosts is None or wl.decode_hosts is None):
        raise ConfigError("workload: kv_cache needs at least 2 hosts (one prefill, one decode)")
    prefill = np.arange(n // 2) if wl.prefill_hosts is None else np.asarray(wl.prefill_hosts)
    decode = np.arange(n // 2, n) if wl.decode_hosts is None else np.asarray(wl.decode_hosts)
    for name, pool in (("prefill_hosts", prefill), ("decode_hosts", decode)):
        if pool.size == 0:
            raise ConfigError(f"workload.{name}: must name at least one host")
        bad = pool[(pool < 0) | (pool >= n)]
        if bad.size:
            raise ConfigError(
                f"workload.{name}: host {int(bad[0])} is outside the fabric (hosts are 0..{n - 1})"
            )
        if np.unique(pool).size != pool.size:
            raise ConfigError(f"workload.{name}: a host is listed twice")
    both = np.intersect1d(prefill, decode)
    if both.size:
        raise ConfigError(
            f"workload.decode_hosts: host {int(both[0])} is also a prefill host; the pools must "
            "be disjoint"
        )
    return prefill.astype(np.int64), decode.astype(np.int64)


def prompt_lengths(wl: KvCacheWorkload, rng: np.random.Generator) -> np.ndarray:
    """Prompt length of each request (tokens): rank-Zipf, fixed, or a CSV trace.

    A trace is used in file order; if it has fewer rows than ``workload.requests`` it wraps
    around.
    """
    if wl.prompt == "zipf":
        dist = RankZipf(wl.prompt_min_tokens, wl.prompt_max_tokens, wl.prompt_theta)
        return dist.sample(rng, wl.requests)
    if wl.prompt == "fixed":
        return FixedLength(wl.prompt_tokens).sample(rng, wl.requests)
    assert wl.prompt_path is not None  # checked by the config model
    return np.resize(load_prompt_trace(wl.prompt_path), wl.requests).astype(np.int64)


def kv_bytes_per_token_of(wl: KvCacheWorkload) -> int:
    """KV-cache bytes per token: ``workload.kv_bytes_per_token`` or the model's
    ``2 * layers * kv_heads * head_dim * dtype_bytes`` (Llama-3-8B: 131,072 B = 128 KiB)."""
    if wl.kv_bytes_per_token is not None:
        return int(wl.kv_bytes_per_token)
    return get_model(wl.model).kv_bytes_per_token


def gpu_model_of(wl: KvCacheWorkload) -> GpuLatencyModel:
    """The GPU latency model: the CSV of ``workload.gpu_profile_path``, else the analytical one."""
    if wl.gpu_profile_path:
        return TableGpuModel.from_csv(wl.gpu_profile_path)
    return default_gpu_model(wl.model, wl.gpu)


def rank_zipf_mean(lo: int, hi: int, theta: float) -> float:
    """Mean prompt of the rank-Zipf law on ``lo..hi`` (see :class:`RankZipf`)."""
    n = hi - lo + 1
    return lo - 1 + harmonic(n, theta - 1) / harmonic(n, theta)


def kv_cache_load(wl: KvCacheWorkload, fab: FabricCounts) -> WorkloadLoad:
    """Budget terms: one KV-cache flow per request, the prompt law's mean bytes each."""
    requests = ("workload.requests", wl.requests)
    load = WorkloadLoad(flows_key=requests, packets_key=requests)
    hosts = fab.hosts
    n = int(wl.requests)
    per_token = float(wl.kv_bytes_per_token or get_model(wl.model).kv_bytes_per_token)
    if wl.prompt == "zipf":
        lo, hi = int(wl.prompt_min_tokens), int(wl.prompt_max_tokens)
        tokens = rank_zipf_mean(lo, hi, float(wl.prompt_theta))
        load.prompt_table = float(hi - lo + 1)
    elif wl.prompt == "fixed":
        tokens = float(wl.prompt_tokens)
    else:
        tokens = float(wl.prompt_max_tokens)
        load.notes.append("workload.prompt=trace: prompts counted as workload.prompt_max_tokens")
    decode = len(wl.decode_hosts) if wl.decode_hosts else hosts - hosts // 2
    prefill = len(wl.prefill_hosts) if wl.prefill_hosts else hosts // 2
    load.flows = n
    load.pairs = min(n, max(decode, 1) * max(prefill, 1))
    load.bytes_total = n * tokens * per_token
    load.busiest = load.bytes_total * min(1.0, 2.0 / max(min(decode, prefill), 1))
    load.last_start_s = (n + 4 * math.sqrt(n) + 4) / float(wl.qps)
    return load


@register("kv_cache", model=KvCacheWorkload, budget=kv_cache_load)
def kv_cache(sc: Scenario, fabric: Fabric) -> FlowTable:
    """Build the KV-cache flow table: one flow per request, in arrival order.

    Extra columns: ``request_id``, ``prompt_tokens`` (tokens), ``prefill_s`` and ``decode_s``
    (GPU times of the request, s).  ``meta["kv_cache"]`` holds the KV bytes per token, the pools
    and the mean prompt of the distribution (tokens).
    """
    wl = sc.workload
    assert isinstance(wl, KvCacheWorkload)
    prefill, decode = host_pools(wl, fabric)
    tokens = prompt_lengths(wl, stream(sc.seed, "kv_prompts"))
    arrivals = poisson_arrivals(stream(sc.seed, "kv_arrivals"), wl.qps, wl.requests)
    src, dst = random_pairs(stream(sc.seed, "kv_pairs"), prefill, decode, wl.requests)
    per_token = kv_bytes_per_token_of(wl)
    gpu = gpu_model_of(wl)
    # float product: exact below 2**53, and build() refuses sizes above MAX_MESSAGE_BYTES
    # instead of letting an int64 product wrap
    table = FlowTable.build(sc, src, dst, tokens.astype(np.float64) * per_token, arrivals)
    table.extra.update(
        request_id=np.arange(wl.requests, dtype=np.int64),
        prompt_tokens=tokens.astype(np.int64),
        prefill_s=np.asarray(gpu.prefill_s(tokens), dtype=np.float64),
        decode_s=np.asarray(gpu.first_decode_s(tokens), dtype=np.float64),
    )
    table.meta["kv_cache"] = {
        "kv_bytes_per_token": per_token,
        "prefill_hosts": prefill.tolist(),
        "decode_hosts": decode.tolist(),
    }
    return table


# -- TTFT summary ----------------------------------------------------------------------------
def ttft_s(flows: FlowTable, fct_s: np.ndarray) -> np.ndarray:
    """Time to first token of each request (s): prefill + KV-flow FCT + first decode step.

    NaN where the KV flow did not finish.
    """
    return flows.extra["prefill_s"] + np.asarray(fct_s, dtype=np.float64) + flows.extra["decode_s"]
