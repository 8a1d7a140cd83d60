"""Max-min fair rates by progressive filling, for flows with fractional link use and caps.

Flow ``i`` uses link ``l`` at ``a[i, l] * r[i]`` (``a`` is 1 for a single-path flow, the path's
weight for a split one).  All unfrozen rates rise together; a link saturates when its capacity
is used up and freezes every flow on it; a flow also freezes at its cap.  The result is the
max-min fair allocation of the weighted problem.

Examples
--------
Two flows share link 0 (capacity 10); flow 1 also crosses link 1 (capacity 2):

>>> import numpy as np
>>> rows, cols, coef = np.array([0, 1, 1]), np.array([0, 0, 1]), np.ones(3)
>>> maxmin_rates(2, rows, cols, coef, np.array([10.0, 2.0]), np.full(2, np.inf)).tolist()
[8.0, 2.0]
"""

from __future__ import annotations

import numpy as np

_REL_EPS = 1e-9


def maxmin_progressive(
    n: int,
    rows: np.ndarray,
    cols: np.ndarray,
    coef: np.ndarray,
    capacity: np.ndarray,
    caps: np.ndarray,
) -> np.ndarray:
    """Max-min fair rates of ``n`` flows by plain progressive filling (the reference).

    Parameters
    ----------
    n
        Number of flows.
    rows, cols, coef
        COO entries: flow ``rows[j]`` uses link ``cols[j]`` with coefficient ``coef[j]`` (> 0).
    capacity
        Capacity of every link (bits/s); zero for a failed link.
    caps
        Per-flow rate cap (bits/s; ``inf`` for none).

    Returns
    -------
    numpy.ndarray
        Rate of each flow, bits/s.  A flow crossing a zero-capacity link gets 0.
    """
    rate = np.zeros(n)
    if n == 0:
        return rate
    caps = np.asarray(caps, dtype=np.float64)
    frozen = np.zeros(n, dtype=bool)
    # perf: work in a compact index space of the links actually used
    used_links, local = np.unique(cols, return_inverse=True)
    cap_used = capacity[used_links].astype(np.float64)
    frozen[rows[cap_used[local] <= 0]] = True
    remaining = cap_used.copy()
    tol = _REL_EPS * np.maximum(cap_used, 1.0)
    nl = len(used_links)
    r, c, a = rows, local, coef
    while True:
        live = ~frozen[r]
        r, c, a = r[live], c[live], a[live]
        unfrozen = np.flatnonzero(~frozen)
        if len(unfrozen) == 0:
            break
        demand = np.bincount(c, weights=a, minlength=nl)
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(demand > 0, remaining / demand, np.inf)
        step = min(share.min(), (caps[unfrozen] - rate[unfrozen]).min())
        if not np.isfinite(step):  # unconstrained flows (no links, no cap)
            rate[unfrozen] = np.inf
            break
        step = max(step, 0.0)
        rate[unfrozen] += step
        remaining -= step * demand
        saturated = (demand > 0) & (remaining <= tol)
        remaining[saturated] = 0.0
        frozen[r[saturated[c]]] = True
        frozen[unfrozen[rate[unfrozen] >= caps[unfrozen] * (1 - _REL_EPS)]] = True
    return rate


def maxmin_rates(
    n: int,
    rows: np.ndarray,
    cols: np.ndarray,
    coef: np.ndarray,
    capacity: np.ndarray,
    caps: np.ndarray,
) -> np.ndarray:
    """Max-min fair rates of ``n`` flows (same contract as :func:`maxmin_progressive`).

    Parallel bottleneck freezing: a link whose fair share ``remaining / demand`` is the lowest
    among every link its unfrozen flows cross is their bottleneck, because fair shares only
    rise as flows freeze; all such links are settled in one pass, and flows whose cap is below
    every share they see take their cap.  The number of passes is the depth of the bottleneck
    dependency chain, not the number of distinct rates.  ``rows`` must be sorted.
    """
    rate = np.zeros(n)
    if n == 0:
        return rate
    caps = np.asarray(caps, dtype=np.float64)
    nl = len(capacity)
    frozen = np.zeros(n, dtype=bool)
    frozen[rows[capacity[cols] <= 0]] = True  # crosses a failed link: rate 0
    remaining = capacity.astype(np.float64).copy()
    infinite = np.isinf(remaining)
    r, c, a = rows, cols, coef
    while True:
        live = ~frozen[r]
        if not live.all():
            r, c, a = r[live], c[live], a[live]
        if len(r) == 0:
            break
        demand = np.bincount(c, weights=a, minlength=nl)
        with np.errstate(divide="ignore", invalid="ignore"):
            share = remaining / demand  # inf/nan where unused: never read for unused links
        share_e = share[c]
        starts = np.flatnonzero(np.concatenate(([True], r[1:] != r[:-1])))
        flows = r[starts]
        flow_min = np.minimum.reduceat(share_e, starts)
        capped = caps[flows] <= flow_min * (1 + _REL_EPS)
        if capped.any():
            pick = capped
        else:
            neigh = np.full(nl, np.inf)
            counts = np.diff(np.append(starts, len(r)))
            np.minimum.at(neigh, c, np.repeat(flow_min, counts))
            entry_hit = share_e <= neigh[c] * (1 + _REL_EPS)
            hit = np.zeros(n, dtype=bool)
            hit[r[entry_hit]] = True
            pick = hit[flows]
        settle = flows[pick]
        rate[settle] = np.minimum(flow_min[pick], caps[settle])
        frozen[settle] = True
        mask = frozen[r]
        used = np.bincount(c[mask], weights=a[mask] * rate[r[mask]], minlength=nl)
        with np.errstate(invalid="ignore"):
            remaining = np.where(infinite, np.inf, np.maximum(remaining - used, 0.0))
    return rate
