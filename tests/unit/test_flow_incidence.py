"""The incremental kernel's storage (``flowsim/incidence.py``): slots and links, both ways.

Through the kernel's public methods (the storage's own methods are C-only when compiled):
rows widen for a connection with more links than the table's width, link segments move and
the pool compacts, and the links a connection leaves are the ones the next settle reports.
"""

from __future__ import annotations

import math

import numpy as np

from fabricsim.flowsim.incidence import Incidence, grown
from fabricsim.flowsim.kernel import MaxMinKernel
from fabricsim.flowsim.maxmin import maxmin_rates


def _pairs(k: Incidence) -> tuple[set, set]:
    """(slot, link) pairs seen from the links' segments and from the slots' rows."""
    by_link = set()
    for link in range(k.nlinks):
        start = k.lstart[link]
        for p in range(start, start + k.llen[link]):
            s, c = int(k.pool_slot[p]), int(k.pool_col[p])
            assert k.links[s, c] == link and k.pos[s, c] == p - start
            by_link.add((s, link))
    by_slot = {(s, int(k.links[s, c])) for s in range(k.nslots) for c in range(k.deg[s])}
    return by_link, by_slot


def _global_rates(k: MaxMinKernel, slots: list[int]) -> np.ndarray:
    rows, cols, coef = [], [], []
    for i, s in enumerate(slots):
        for c in range(k.deg[s]):
            rows.append(i)
            cols.append(k.links[s, c])
            coef.append(k.coef[s, c])
    ii, cc = np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64)
    caps = np.asarray(k.cap)[slots]
    return maxmin_rates(len(slots), ii, cc, np.array(coef), np.asarray(k.capacity), caps)


def test_rows_widen_and_segments_move_with_both_directions_in_step():
    rng = np.random.default_rng(5)
    nlinks = 20
    k = MaxMinKernel(rng.choice([10.0, 40.0], size=nlinks))
    k.pool_slot = np.zeros(8, dtype=np.int64)  # a tiny pool: segments move, the pool compacts
    k.pool_col = np.zeros(8, dtype=np.int64)
    assert (k.nslots, k.width) == (64, 8)
    live = [k.add(rng.choice(nlinks, 3, replace=False), np.ones(3), math.inf, 1e6, 0.0)]
    for _ in range(100):  # past 64 live slots: the table doubles
        d = int(rng.integers(1, 13))  # up to 12 links: wider rows than 8
        links = rng.choice(nlinks, d, replace=False).astype(np.int64)
        live.append(k.add(links, np.ones(d), math.inf, 1e6, 0.0))
        if rng.random() < 0.3:
            k.remove(live.pop(int(rng.integers(len(live)))), 0.0)
    k.settle(0.0)
    assert k.nslots == 128 and k.width >= 12
    assert len(set(live)) == len(live)  # no active slot was handed out twice
    assert not set(live) & set(k.free)
    by_link, by_slot = _pairs(k)
    assert by_link == by_slot
    assert {s for s, _ in by_slot} == set(live)
    assert np.allclose(np.asarray(k.rate)[live], _global_rates(k, live), rtol=1e-9)
    assert np.asarray(k.pool_slot).size > 8


def test_links_a_connection_leaves_are_reported_by_the_next_settle():
    k = MaxMinKernel(np.full(6, 10.0))
    a = k.add(np.array([0, 1]), np.ones(2), math.inf, 1e6, 0.0)
    b = k.add(np.array([1, 2, 3]), np.ones(3), math.inf, 1e6, 0.0)
    k.settle(0.0)
    k.remove(b, 0.0)
    assert list(np.asarray(k.changed)[: k.nchanged]) == [1, 2, 3]
    k.settle(0.0)
    assert k.nchanged == 0  # looked at
    links, load = k.link_loads()
    assert links.tolist() == [0, 1, 2, 3]  # a re-solved (links 0, 1) and b's links
    assert load.tolist() == [10.0, 10.0, 0.0, 0.0]
    assert k.rate_bps(a) == 10.0


def test_grown_keeps_contents_and_dtype():
    out = grown(np.array([3, 4], dtype=np.int8), 5, 0)
    assert out.dtype == np.int8 and out.tolist() == [3, 4, 0, 0, 0]
    assert grown(np.ones(4), 2, 0.0).tolist() == [1.0] * 4  # never shrinks
