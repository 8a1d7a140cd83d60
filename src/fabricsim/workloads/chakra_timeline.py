"""The timeline of a Chakra replay: every trace node's start and finish, and per rank its
compute, communication and exposed communication time.

The engine gives each flow's start and finish; every other unit of the replay's graph
(:class:`~fabricsim.workloads.chakra_replay.ReplayPlan`) starts when its dependencies have
finished and lasts its own time.  A node runs from its entry unit's start to its exit unit's
finish.  A rank's *exposed* communication is the time some communication node of the rank runs
while none of its compute nodes does (the time communication adds to the step); the iteration
time is the last finish over every node of every rank (the trace starts at 0).

Examples
--------
>>> merged_length([(0.0, 2.0), (1.0, 3.0), (5.0, 6.0)])
4.0
>>> exposed([(0.0, 4.0)], [(1.0, 2.0), (3.0, 5.0)])
2.0
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fabricsim.workloads.chakra_replay import ReplayPlan

TIMELINE_COLUMNS = ("rank", "node_id", "name", "kind", "start_s", "finish_s", "duration_s")
RANK_COLUMNS = ("rank", "finish_s", "compute_s", "comm_s", "exposed_comm_s")


def _merged(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for a, b in sorted(i for i in intervals if i[1] > i[0]):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def merged_length(intervals: list[tuple[float, float]]) -> float:
    """The length of the union of ``intervals`` (``(start, end)`` pairs)."""
    return float(sum(b - a for a, b in _merged(intervals)))


def exposed(comm: list[tuple[float, float]], compute: list[tuple[float, float]]) -> float:
    """The length of time inside some ``comm`` interval and inside no ``compute`` interval."""
    busy = _merged(compute)
    total = 0.0
    for a, b in _merged(comm):
        covered = sum(max(0.0, min(b, y) - max(a, x)) for x, y in busy)
        total += (b - a) - covered
    return float(total)


def unit_times(
    plan: ReplayPlan, start_s: np.ndarray, finish_s: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Every unit's start and finish (NaN after a flow that did not finish)."""
    count = len(plan.unit_s)
    start, finish = np.full(count, math.nan), np.full(count, math.nan)
    for u in plan.order:
        f = plan.unit_flow[u]
        if f >= 0:
            start[u], finish[u] = float(start_s[f]), float(finish_s[f])
            continue
        deps = plan.unit_deps[u]
        t = max((float(finish[d]) for d in deps), default=0.0)
        if any(math.isnan(float(finish[d])) for d in deps):
            t = math.nan
        start[u], finish[u] = t, t + plan.unit_s[u]
    return start, finish


def replay_timeline(
    plan: ReplayPlan, start_s: np.ndarray, finish_s: np.ndarray
) -> tuple[dict[str, Any], dict[str, np.ndarray], dict[str, np.ndarray]]:
    """``(summary keys, timeline columns, per-rank columns)`` of a replay run.

    Summary: ``iteration_time_s`` (None if a flow did not finish), ``exposed_comm_s`` (the
    largest over the ranks), ``exposed_comm_mean_s``, ``compute_s`` and ``comm_s`` (the
    largest rank's busy time of each), ``chakra_ranks`` and ``chakra_nodes``.
    """
    u_start, u_finish = unit_times(plan, start_s, finish_s)
    entry, exit_ = np.asarray(plan.entry), np.asarray(plan.exit)
    n_start, n_finish = u_start[entry], u_finish[exit_]
    timeline = {
        "rank": np.asarray(plan.rank, dtype=np.int64),
        "node_id": np.asarray(plan.node_id, dtype=np.int64),
        "name": np.asarray(plan.name, dtype=object),
        "kind": np.asarray(plan.kind, dtype=object),
        "start_s": n_start,
        "finish_s": n_finish,
        "duration_s": n_finish - n_start,
    }
    done = not np.isnan(n_finish).any()
    per_rank: dict[str, list[float]] = {c: [] for c in RANK_COLUMNS}
    of_rank: list[list[int]] = [[] for _ in range(plan.ranks)]
    for i, r in enumerate(plan.rank):
        of_rank[r].append(i)
    for rank, mine in enumerate(of_rank):
        comm = [(n_start[i], n_finish[i]) for i in mine if plan.comm[i]]
        compute = [(n_start[i], n_finish[i]) for i in mine if not plan.comm[i]]
        busy = (merged_length(compute), merged_length(comm), exposed(comm, compute))
        last = max((float(n_finish[i]) for i in mine), default=0.0)
        values = (rank, last, *(busy if done else (math.nan,) * 3))
        for c, v in zip(RANK_COLUMNS, values, strict=True):
            per_rank[c].append(v)
    ranks = {
        c: np.asarray(v, dtype=np.int64 if c == "rank" else float) for c, v in per_rank.items()
    }
    summary: dict[str, Any] = {"chakra_ranks": plan.ranks, "chakra_nodes": len(plan.rank)}
    if not done:
        summary.update(iteration_time_s=None, exposed_comm_s=None)
        return summary, timeline, ranks
    summary["iteration_time_s"] = float(n_finish.max(initial=0.0))
    summary["exposed_comm_s"] = float(ranks["exposed_comm_s"].max())
    summary["exposed_comm_mean_s"] = float(ranks["exposed_comm_s"].mean())
    summary["compute_s"] = float(ranks["compute_s"].max())
    summary["comm_s"] = float(ranks["comm_s"].max())
    return summary, timeline, ranks
