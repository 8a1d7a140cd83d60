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


def maxmin_rates(
    n: int,
    rows: np.ndarray,
    cols: np.ndarray,
    coef: np.ndarray,
    capacity: np.ndarray,
    caps: np.ndarray,
) -> np.ndarray:
    """Max-min fair rates of ``n`` flows.

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
