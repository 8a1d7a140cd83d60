"""MoE all-to-all dispatch (``003_*.txt``): demand matrices, sender schedulers.

A dispatch is a GPU-level demand matrix ``D`` (bytes, one NIC per GPU: GPU ``i`` is host
``i``) turned into one flow per non-zero entry, all starting together.  Sources of ``D``:

* ``zipf``: tokens routed to Zipf(s)-popular experts, top-k experts per token, a token sent
  once per destination GPU however many of its experts live there;
* ``pure_zipf``: the paper's analysis model ``D_ij = T / (j H_N)`` (every sender to all N
  receivers, itself included), mapped onto a bipartite non-blocking fabric;
* ``file``: a CSV or ``.npy`` matrix; ``chakra``: MLCommons Chakra traces (:mod:`.chakra`).

Intra-server blocks (``gpus_per_server``) use NVLink and are removed (not for pure_zipf).

Sender schedulers (``workload.scheduler``) are pure functions of the matrix: ``round_robin``
leaves the flows uncapped (the engine shares the sender's rate); ``rate_based`` paces every
flow at ``R_ij`` x line rate (:func:`flow_pacing_bps`), stored as the flow column
``rate_cap_bps``.  Engines honour it through ``Connection.rate_cap_bps``
(:class:`RateCapPolicy` wraps any path policy); the open-loop engine reads it directly.
The CCT summary keys are computed in :mod:`fabricsim.metrics.workload_summaries`.

Examples
--------
The paper's 3 x 3 example (row maximum 3000, column maximum 4000):

>>> D = np.array([[0, 1000, 2000], [800, 0, 2000], [2000, 1000, 0]])
>>> float(normalization_factor(D))
4000.0
>>> normalized_rates(D).tolist()
[[0.0, 0.25, 0.5], [0.2, 0.0, 0.5], [0.5, 0.25, 0.0]]
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fabricsim.config.models import Scenario
from fabricsim.config.workloads import MoeWorkload
from fabricsim.engine_api import wire_bytes_array
from fabricsim.errors import ConfigError
from fabricsim.rng import stream
from fabricsim.topology.fabric import Fabric
from fabricsim.workloads.base import FabricCounts, FlowTable, WorkloadLoad, harmonic, register
from fabricsim.workloads.chakra import chakra_matrix
from fabricsim.workloads.matrix import check_matrix, load_matrix


@dataclass(frozen=True)
class MoeShape:
    """What one token costs and where it goes: hidden size, routed experts, top-k."""

    hidden_size: int
    experts: int | None  # None: 4 per GPU
    top_k: int
    bytes_per_element: int

    @property
    def token_bytes(self) -> int:
        """Bytes of one dispatched token."""
        return self.hidden_size * self.bytes_per_element


PRESETS: dict[str, MoeShape] = {
    # 256 routed experts, 8 per token, hidden 7168; DeepEP dispatches FP8 (1 byte/element)
    "deepseek-v3": MoeShape(hidden_size=7168, experts=256, top_k=8, bytes_per_element=1),
    # Qwen3-235B-A22B: 128 experts, 8 per token, hidden 4096, BF16
    "qwen3-235b": MoeShape(hidden_size=4096, experts=128, top_k=8, bytes_per_element=2),
}
GENERIC = MoeShape(hidden_size=7168, experts=None, top_k=8, bytes_per_element=1)


def resolve_shape(wl: MoeWorkload, gpus: int) -> MoeShape:
    """The workload's shape: explicit fields, else the preset's, else the generic defaults."""
    base = PRESETS[wl.model] if wl.model else GENERIC
    experts = wl.experts or base.experts or 4 * gpus
    top_k = wl.top_k or base.top_k
    if top_k > experts:
        raise ConfigError(f"workload.top_k: {top_k} is more than the {experts} experts")
    return MoeShape(
        hidden_size=wl.hidden_size or base.hidden_size,
        experts=experts,
        top_k=top_k,
        bytes_per_element=wl.bytes_per_element or base.bytes_per_element,
    )


# -- synthetic matrices ------------------------------------------------------------------------
def expert_popularity(
    experts: int, zipf_s: float, rng: np.random.Generator | None = None
) -> np.ndarray:
    """Probability that a token picks each expert first: rank^-s / sum (ranks shuffled by rng).

    Examples
    --------
    >>> expert_popularity(4, 1.0).round(3).tolist()
    [0.48, 0.24, 0.16, 0.12]
    """
    p = np.arange(1, experts + 1, dtype=np.float64) ** -zipf_s
    p /= p.sum()
    return p[rng.permutation(experts)] if rng is not None else p


def expert_gpu(experts: int, gpus: int) -> np.ndarray:
    """GPU of each expert: contiguous blocks, ``floor(e * gpus / experts)``.

    Examples
    --------
    >>> expert_gpu(8, 4).tolist()
    [0, 0, 1, 1, 2, 2, 3, 3]
    """
    return (np.arange(experts, dtype=np.int64) * gpus) // experts


def sample_top_k(rng: np.random.Generator, p: np.ndarray, tokens: int, k: int) -> np.ndarray:
    """``tokens`` x ``k`` distinct experts per token, drawn in turn from ``p`` without replacement.

    Each slot draws from ``p`` and redraws on a clash with the token's earlier slots (this is
    exactly sampling from ``p`` restricted to the unchosen experts); tokens still clashing
    after 32 redraws are drawn from the explicitly renormalized distribution.
    """
    experts = len(p)
    cdf = np.cumsum(p)
    cdf /= cdf[-1]
    out = np.empty((tokens, k), dtype=np.int64)
    for slot in range(k):
        todo = np.arange(tokens)
        for _ in range(32):
            draw = np.minimum(
                np.searchsorted(cdf, rng.random(len(todo)), side="right"), experts - 1
            )
            clash = (out[todo, :slot] == draw[:, None]).any(axis=1)
            out[todo[~clash], slot] = draw[~clash]
            todo = todo[clash]
            if not len(todo):
                break
        if len(todo):
            w = np.broadcast_to(p, (len(todo), experts)).copy()
            np.put_along_axis(w, out[todo, :slot], 0.0, axis=1)
            cum = np.cumsum(w, axis=1)
            u = rng.random(len(todo)) * cum[:, -1]
            out[todo, slot] = np.minimum((cum <= u[:, None]).sum(axis=1), experts - 1)
    return out


def token_matrix(
    gpus: int,
    tokens_per_gpu: int,
    shape: MoeShape,
    zipf_s: float,
    rng: np.random.Generator,
    shuffle: bool = True,
) -> np.ndarray:
    """``C[i, j]``: tokens GPU ``i`` sends to GPU ``j`` (once per GPU, whatever its expert count)."""
    experts = int(shape.experts or 4 * gpus)
    p = expert_popularity(experts, zipf_s, rng if shuffle else None)
    where = expert_gpu(experts, gpus)
    counts = np.zeros((gpus, gpus), dtype=np.int64)
    chunk = max(1, 2_000_000 // (tokens_per_gpu * shape.top_k))  # senders per batch
    for lo in range(0, gpus, chunk):
        hi = min(gpus, lo + chunk)
        g = where[sample_top_k(rng, p, (hi - lo) * tokens_per_gpu, shape.top_k)]
        g.sort(axis=1)
        first = np.ones(g.shape, dtype=bool)
        first[:, 1:] = g[:, 1:] != g[:, :-1]
        sender = np.repeat(np.arange(hi - lo), tokens_per_gpu)[:, None]
        pair = (sender * gpus + g)[first]
        counts[lo:hi] = np.bincount(pair, minlength=(hi - lo) * gpus).reshape(hi - lo, gpus)
    return counts


def remove_intra_server(matrix: np.ndarray, gpus_per_server: int) -> tuple[np.ndarray, float]:
    """Zero the intra-server blocks (NVLink traffic, the diagonal included); return the bytes removed.

    Examples
    --------
    >>> m, gone = remove_intra_server(np.ones((4, 4)), 2)
    >>> m.tolist(), gone
    ([[0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0], [1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0]], 8.0)
    """
    server = np.arange(len(matrix)) // gpus_per_server
    same = server[:, None] == server[None, :]
    removed = float(matrix[same].sum())
    out = matrix.copy()
    out[same] = 0
    return out, removed


def pure_zipf_matrix(n: int, total_bytes: float) -> np.ndarray:
    """The analysis model: ``D_ij = T / (j * alpha)``, ``alpha = H_N``, receiver rank j = 1..N.

    Every row is the same and sums to ``T``; column ``j`` sums to ``N T / (j alpha)``.

    Examples
    --------
    >>> pure_zipf_matrix(3, 11.0)[0].tolist()
    [6.0, 3.0, 2.0]
    """
    alpha = float(np.sum(1.0 / np.arange(1, n + 1)))
    row = total_bytes / (np.arange(1, n + 1) * alpha)
    return np.broadcast_to(row, (n, n)).copy()


# -- normalization (the rate-based scheduler) -------------------------------------------------
def _port_rates(n: int, port_rates: Any) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(port_rates, tuple):
        send, recv = port_rates
    else:
        send = recv = port_rates
    send = np.broadcast_to(np.asarray(send, dtype=np.float64), (n,))
    recv = np.broadcast_to(np.asarray(recv, dtype=np.float64), (n,))
    if np.any(send <= 0) or np.any(recv <= 0):
        raise ValueError("port rates must be > 0")
    return send, recv


def normalization_factor(d: np.ndarray, port_rates: Any = None) -> float:
    """``M = max(largest row sum, largest column sum)`` — per port, over its own rate if given.

    Parameters
    ----------
    d
        Non-negative N x N demand matrix.
    port_rates
        None (all ports equal: ``M`` in the units of ``d``), a scalar or length-N vector (the
        same for sending and receiving), or a tuple ``(send, recv)`` of them.  With rates,
        ``M = max_i(row_i / send_i, col_j / recv_j)``: with ``d`` in bits and rates in bits/s,
        the time in seconds the busiest port needs at 100 % utilization.
    """
    d = np.asarray(d, dtype=np.float64)
    rows, cols = d.sum(axis=1), d.sum(axis=0)
    if port_rates is not None:
        send, recv = _port_rates(len(d), port_rates)
        rows, cols = rows / send, cols / recv
    m = float(max(rows.max(), cols.max()))
    if not m > 0:
        raise ValueError("the demand matrix is all zeros")
    return m


def normalized_rates(d: np.ndarray, port_rates: Any = None) -> np.ndarray:
    """The normalized rate matrix ``R``: flow ``ij`` is paced at ``R_ij`` x sender ``i``'s rate.

    Without ``port_rates``: ``R = D / M``; every row and column of ``R`` sums to at most 1 and
    the busiest to exactly 1.  With per-port rates (mixed 200/400/800 Gbps NICs),
    ``R_ij = D_ij / (M send_i)``: sender ``i`` uses ``sum_j R_ij <= 1`` of its rate, receiver
    ``j`` gets ``sum_i R_ij send_i <= recv_j``, and the busiest port is exactly full.
    """
    d = np.asarray(d, dtype=np.float64)
    m = normalization_factor(d, port_rates)
    if port_rates is None:
        return d / m
    send, _ = _port_rates(len(d), port_rates)
    return d / (m * send[:, None])


def flow_pacing_bps(
    src: np.ndarray,
    dst: np.ndarray,
    wire_bytes: np.ndarray,
    send_bps: np.ndarray,
    recv_bps: np.ndarray,
    ack_bytes: np.ndarray | None = None,
) -> tuple[np.ndarray, float]:
    """Per-flow pacing rates of the rate-based scheduler, and ``M`` in seconds.

    The sparse form of :func:`normalized_rates` for a flow list (what engines need):
    ``rate_f = 8 wire_f / M_s`` with ``M_s`` the busiest port's time at its own line rate, so
    every flow finishes at ``M_s`` and no port is ever oversubscribed.  Rates count wire bytes
    (headers included).  ``send_bps``/``recv_bps`` are indexed by host.  ``ack_bytes`` (per
    flow, optional): the acknowledgements its receiver returns, which load the receiver's
    uplink and the sender's downlink; they count in every port's time (so in ``M_s``), but a
    flow's rate still paces only its data.
    """
    bits = 8.0 * np.asarray(wire_bytes, dtype=np.float64)
    hosts = len(send_bps)
    out_bits = np.bincount(src, weights=bits, minlength=hosts)
    in_bits = np.bincount(dst, weights=bits, minlength=hosts)
    if ack_bytes is not None:
        ack_bits = 8.0 * np.asarray(ack_bytes, dtype=np.float64)
        out_bits += np.bincount(dst, weights=ack_bits, minlength=hosts)
        in_bits += np.bincount(src, weights=ack_bits, minlength=hosts)
    m_s = float(max((out_bits / send_bps).max(), (in_bits / recv_bps).max()))
    if not m_s > 0:
        raise ValueError("no traffic to pace")
    return bits / m_s, m_s


def ack_bytes_array(
    size_bytes: np.ndarray, mss: int, header_bytes: int, coalesce: int
) -> np.ndarray:
    """Bytes of the ACKs a message draws: one ``header_bytes`` ACK per ``coalesce`` packets."""
    packets = -(-np.asarray(size_bytes, dtype=np.int64) // mss)
    return -(-packets // coalesce) * float(header_bytes)


def host_rates_bps(fabric: Fabric) -> tuple[np.ndarray, np.ndarray]:
    """Each host's NIC rate (bits/s) sending (uplink) and receiving (downlink), degradation applied."""
    rate = fabric.link_rate_bps.astype(np.float64)
    return rate[fabric.host_uplink], rate[fabric.host_downlink]


# -- the workload -----------------------------------------------------------------------------
def _matrix_for(sc: Scenario, fabric: Fabric) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """The demand matrix (bytes), the host of each receiver column, and metadata."""
    wl = sc.workload
    assert isinstance(wl, MoeWorkload)
    hosts = fabric.num_hosts
    if wl.matrix == "pure_zipf":
        n = wl.gpus or hosts // 2
        if 2 * n > hosts or n < 2:
            raise ConfigError(
                f"workload.gpus: pure_zipf needs 2N hosts (N senders, N receivers); the fabric "
                f"has {hosts} hosts, so N <= {hosts // 2} (got {n})"
            )
        d = pure_zipf_matrix(n, wl.total_bytes_per_sender)
        if d.min() < 1:
            raise ConfigError(
                f"workload.total_bytes_per_sender: the smallest flow T/(N H_N) must be >= 1 byte "
                f"for N={n} (got T={wl.total_bytes_per_sender})"
            )
        return np.rint(d), n + np.arange(n), {"nvlink_bytes": 0.0, "gpus": n}
    n = wl.gpus or hosts
    if n > hosts:
        raise ConfigError(f"workload.gpus: {n} GPUs need {n} hosts; the fabric has {hosts}")
    if wl.matrix == "zipf":
        shape = resolve_shape(wl, n)
        counts = token_matrix(
            n, wl.tokens_per_gpu, shape, wl.zipf_s, stream(sc.seed, "workload"), wl.shuffle_experts
        )
        d = counts.astype(np.float64) * shape.token_bytes
        info: dict[str, Any] = {
            "token_bytes": shape.token_bytes,
            "experts": shape.experts,
            "top_k": shape.top_k,
        }
    else:
        d = _file_matrix(wl, n)
        info = {}
    d, removed = remove_intra_server(d, wl.gpus_per_server)
    d = np.rint(d)
    if not d.any():
        raise ConfigError(
            "workload: no inter-server traffic left (NVLink blocks of workload.gpus_per_server "
            "removed, entries rounded to whole bytes)"
        )
    return d, np.arange(n), {"nvlink_bytes": removed, "gpus": n, **info}


def _file_matrix(wl: MoeWorkload, n: int) -> np.ndarray:
    assert wl.path is not None
    if wl.matrix == "chakra":
        d = chakra_matrix(wl.path, wl.trace_groups, n)
    else:
        d = load_matrix(wl.path)
        if wl.units == "tokens":
            token_bytes = resolve_shape(wl, n).token_bytes
            where = f"workload.path: {Path(wl.path).name} (x {token_bytes} bytes per token)"
            d = check_matrix(d * token_bytes, where)
    if len(d) != n:
        raise ConfigError(
            f"workload.path: the matrix is {len(d)} x {len(d)} but the fabric/workload has {n} "
            f"GPUs (one NIC per GPU: set workload.gpus or change the topology)"
        )
    return d


def moe_load(wl: MoeWorkload, fab: FabricCounts) -> WorkloadLoad:
    """Budget terms: the matrix's flows and bytes (a file's bytes are unknown until read)."""
    load = WorkloadLoad(
        last_start_s=float(wl.start_s),
        flows_key=("workload.gpus", wl.gpus) if wl.gpus else None,
        packets_key=("workload.tokens_per_gpu", wl.tokens_per_gpu),
    )
    if wl.matrix == "pure_zipf":
        n = int(wl.gpus or fab.hosts // 2)
        total = float(wl.total_bytes_per_sender)
        load.flows = load.pairs = n * n
        load.matrix = float(n * n)
        load.bytes_total = n * total
        load.busiest = max(total, n * total / harmonic(max(n, 1), 1.0))
        return load
    n = int(wl.gpus or fab.hosts)
    load.matrix = float(n * n)
    if wl.matrix != "zipf":
        load.flows = load.pairs = n * n
        load.bytes_total = load.busiest = None
        load.notes.append(f"workload.matrix={wl.matrix}: bytes unknown before reading the file")
        return load
    base = PRESETS[wl.model] if wl.model else GENERIC
    top_k = int(wl.top_k or base.top_k)
    token_bytes = float(
        (wl.hidden_size or base.hidden_size) * (wl.bytes_per_element or base.bytes_per_element)
    )
    tokens = int(wl.tokens_per_gpu)
    outside = max(n - min(int(wl.gpus_per_server), n), 1)  # GPUs outside a sender's server
    per_sender = min(outside, tokens * min(top_k, n))
    load.flows = load.pairs = n * max(per_sender, 1)
    load.bytes_total = n * tokens * min(top_k, n) * token_bytes
    load.busiest = max(tokens * min(top_k, n), n * tokens) * token_bytes
    load.matrix += min(n * tokens * top_k, 2_000_000)  # one batch of sampled tokens
    return load


@register("moe", model=MoeWorkload, budget=moe_load)
def moe(sc: Scenario, fabric: Fabric) -> FlowTable:
    """Build the dispatch: one flow per non-zero matrix entry, all at ``start_s``."""
    wl = sc.workload
    assert isinstance(wl, MoeWorkload)
    d, recv_hosts, info = _matrix_for(sc, fabric)
    i, j = np.nonzero(d)
    src, dst, size = i.astype(np.int64), recv_hosts[j].astype(np.int64), d[i, j].astype(np.int64)
    table = FlowTable.build(sc, src, dst, size, np.full(len(src), wl.start_s))
    wire = wire_bytes_array(size, sc.nic.rdma_data_mss, sc.nic.header_bytes)
    send_bps, recv_bps = host_rates_bps(fabric)
    acks = None
    if wl.pacing_acks == "on" or (wl.pacing_acks == "auto" and sc.engine.kind == "packet"):
        nic = sc.nic
        acks = ack_bytes_array(size, nic.rdma_data_mss, nic.header_bytes, nic.ack_every_packets())
    caps, m_s = flow_pacing_bps(src, dst, wire, send_bps, recv_bps, acks)
    if wl.scheduler == "rate_based":
        table.extra["rate_cap_bps"] = caps
    table.meta["sender_scheduler"] = wl.scheduler
    table.meta["moe"] = {
        "matrix": wl.matrix,
        "m_s": m_s,
        "paced_acks": acks is not None,
        "matrix_bytes": float(d.sum()),
        **info,
    }
    return table


# -- engines: honouring the caps ---------------------------------------------------------------
# RateCapPolicy / with_rate_caps live in fabricsim.lb.base (any workload may carry caps).
