"""Step 5 of the decomposed engine: links whose workloads are alike are simulated once.

As Parsimon clusters links, two links are alike when they have the same position (host
uplink, switch-to-switch, into a host), the same rate and nominal rate, the same rates of
their senders, and their workloads are close in every feature below: the number of
sub-flows, the wire bytes they carry (the link's load over the same run), the mean and the
90th percentile of the sub-flow sizes, and the number of distinct senders.  "Close" is a
relative tolerance ``engine.decomposed.cluster_tolerance``: each feature is binned on a log
scale with bins of ratio ``1 + tolerance``, and links in the same bins of every feature form
one cluster.  The link of median load in a cluster (the lower middle one of an even cluster,
the lowest id on a tie) is simulated; the others draw their sub-flows' delays from its, by
flow size class
(:mod:`fabricsim.decomposed.compose`).  A tolerance of 0 simulates every loaded link.

Examples
--------
>>> import numpy as np
>>> hard = np.array([[0, 1], [0, 1], [0, 1], [1, 1]])
>>> soft = np.array([[100.0, 5.0], [104.0, 5.0], [300.0, 5.0], [100.0, 5.0]])
>>> representatives(hard, soft, np.array([10.0, 11.0, 30.0, 10.0]), 0.1).tolist()
[0, 0, 2, 3]
>>> representatives(hard, soft, np.array([10.0, 11.0, 30.0, 10.0]), 0.0).tolist()
[0, 1, 2, 3]
"""

from __future__ import annotations

import numpy as np

from fabricsim.decomposed.link_workloads import LinkWorkloads
from fabricsim.topology.fabric import Fabric
from fabricsim.workloads.base import FlowTable


def features(
    w: LinkWorkloads, fabric: Fabric, flows: FlowTable, links: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(hard keys, soft features, load) per loaded link of ``w`` (or of its ``links``, indices
    into ``w.links``: perf, the quiet ones need none).

    Hard keys must match exactly (position, rate, nominal rate, the senders' fastest and
    slowest rate); soft features (sub-flows, wire bytes, mean and p90 size, senders) are
    compared within the tolerance; the load (wire bytes) orders a cluster's links.
    """
    chosen = np.arange(len(w.links)) if links is None else np.asarray(links)
    n = len(chosen)
    hard = np.zeros((n, 5), dtype=np.float64)
    soft = np.zeros((n, 5), dtype=np.float64)
    load = np.zeros(n)
    src = flows.src[w.flow]
    for at, i in enumerate(chosen.tolist()):
        r = w.rows(i)
        x = int(w.links[i])
        sizes = w.size_bytes[r]
        snd = w.sender_bps[r]
        hard[at] = (
            w.position[i],
            fabric.link_rate_bps[x],
            fabric.link_nominal_bps[x],
            snd.max(),
            snd.min(),
        )
        load[at] = float(w.wire_bytes[r].sum())
        soft[at] = (
            w.count[i],
            load[at],
            float(sizes.mean()),
            _p90(sizes),
            len(np.unique(src[r])),
        )
    return hard, soft, load


def _p90(values: np.ndarray) -> float:
    """``np.percentile(values, 90)`` (linear), from a partial sort (perf: 4.6 s of a k = 64
    run's 6.6 s of features went to ``np.percentile``'s full machinery).

    >>> v = np.array([5, 1, 9, 3, 7, 2])
    >>> _p90(v) == float(np.percentile(v, 90))
    True
    """
    pos = 0.9 * (len(values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(values) - 1)
    part = np.partition(values, (lo, hi)) if hi != lo else np.partition(values, lo)
    a, b = float(part[lo]), float(part[hi])
    t = pos - lo
    return a + (b - a) * t if t < 0.5 else b - (b - a) * (1 - t)  # as numpy's lerp


def representatives(
    hard: np.ndarray, soft: np.ndarray, load: np.ndarray, tolerance: float
) -> np.ndarray:
    """Per link (row): the index of the link simulated for it (itself if simulated)."""
    n = len(hard)
    if tolerance <= 0 or n == 0:
        return np.arange(n, dtype=np.int64)
    bins = np.floor(np.log(np.maximum(soft, 1e-300)) / np.log1p(tolerance))
    keys = np.concatenate([hard, bins], axis=1)
    _, group = np.unique(keys, axis=0, return_inverse=True)
    group = group.reshape(-1)
    # in each group, the link of median load (the lower middle one of an even group; the
    # lowest index on a tie) is simulated: the cluster's delays are neither its most nor its
    # least loaded link's
    order = np.lexsort((np.arange(n), load, group))
    starts = np.flatnonzero(np.r_[True, group[order][1:] != group[order][:-1]])
    sizes = np.diff(np.r_[starts, n])
    rep_of_group = np.empty(group.max() + 1, dtype=np.int64)
    rep_of_group[group[order][starts]] = order[starts + (sizes - 1) // 2]
    return rep_of_group[group]
