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
    frozen = np.zeros(n, dtype=bool)
    dead_links = capacity[cols] <= 0
    frozen[rows[dead_links]] = True
    remaining = capacity.astype(np.float64).copy()
    nlinks = len(capacity)
    caps = np.asarray(caps, dtype=np.float64)
    while not frozen.all():
        live = ~frozen[rows]
        r, c, a = rows[live], cols[live], coef[live]
        demand = np.bincount(c, weights=a, minlength=nlinks)
        used = demand > 0
        share = np.full(nlinks, np.inf)
        share[used] = remaining[used] / demand[used]
        step = share.min()
        headroom = caps[~frozen] - rate[~frozen]
        step = min(step, headroom.min()) if len(headroom) else step
        if not np.isfinite(step):  # unconstrained flows (no links, no cap)
            rate[~frozen] = np.inf
            break
        step = max(step, 0.0)
        rate[~frozen] += step
        remaining -= step * demand
        saturated = used & (remaining <= _REL_EPS * np.maximum(capacity, 1.0))
        remaining[saturated] = 0.0
        frozen[r[saturated[c]]] = True
        frozen |= rate >= caps * (1 - _REL_EPS)
    return rate
