"""The open-loop receiver sweep against an eager oracle that steps every host at every event.

The sweep (``flowsim.open_loop._Sweep``) updates per event time only the receivers and flows
it touches; stepping every host's queue and rate with the same operations must give the same
floats, so the comparison is exact (``==``), rows, queues at each flow's end and snapshots.
"""

from __future__ import annotations

import numpy as np
import pytest

import fabricsim
from fabricsim.flowsim.open_loop import OpenLoopEngine, _Sweep
from fabricsim.topology import build_fabric
from fabricsim.workloads.base import FlowTable

HOSTS = 12


def _engine(seed: int, paced: bool, timelines: bool) -> OpenLoopEngine:
    """Random flows on one leaf (a crossbar) with mixed NIC rates: coarse start times and a
    few sizes, so that starts and ends of several senders coincide; host 11 receives nothing."""
    sc = fabricsim.load_scenario(
        {
            "engine": {"kind": "flow", "flow_model": "open_loop"},
            "topology": {
                "kind": "leaf_spine",
                "leaves": 1,
                "spines": 1,
                "hosts_per_leaf": HOSTS,
                "link_gbps": 100.0,
                "degraded_links": {"host2->leaf0": 0.5, "leaf0->host3": 0.25},
            },
            "workload": {"kind": "permutation"},
            "records": {"timelines": timelines},
        }
    )
    fabric = build_fabric(sc.topology)
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 120))
    src = rng.integers(0, HOSTS, n)
    dst = (src + rng.integers(1, HOSTS - 1, n)) % (HOSTS - 1)  # never 11
    dst = np.where(dst == src, (dst + 1) % (HOSTS - 1), dst)
    size = rng.choice([1_000, 5_000, 20_000, 123_456], n)
    start = rng.integers(0, 4, n) * 1e-6
    extra = {}
    if paced:
        extra["rate_cap_bps"] = rng.choice([10e9, 25e9, 100e9], n)
    flows = FlowTable.build(sc, src, dst, size, start, extra=extra)
    return OpenLoopEngine(sc, fabric, None, flows, None)  # type: ignore[arg-type]


def _eager(eng: OpenLoopEngine, end: np.ndarray):
    """Rows, queue at each flow's end and snapshots, every host stepped at every event time."""
    f, hosts, c = eng.flows, eng.fabric.num_hosts, eng.recv
    n = len(f)
    q, lam, k, share = np.zeros(hosts), np.zeros(hosts), np.zeros(hosts, np.int64), np.zeros(hosts)
    active, q_at = np.zeros(n, dtype=bool), np.zeros(n)
    recv = np.bincount(f.dst, minlength=hosts) > 0
    cap_total = float(c[recv].sum())
    snap_times = np.empty(0)
    if eng.sc.records.timelines:
        snap_times = np.linspace(float(f.start_s.min()), float(end.max()), 201)
    rows, snaps = [], []

    def served(q: np.ndarray) -> np.ndarray:
        pos = np.maximum(lam, 0.0)
        return np.where((q > 0) | (pos >= c), c, pos)

    times = np.r_[f.start_s, end]
    ids, sign = np.r_[np.arange(n), np.arange(n)], np.r_[np.ones(n, int), -np.ones(n, int)]
    o = np.lexsort((sign, times))
    times, ids, sign = times[o], ids[o], sign[o]
    now = float(times[0])
    for t in np.unique(times):
        at = times == t
        i, s = ids[at], sign[at]
        dt = float(t) - now
        if dt > 0:
            ex = lam - c
            ex[np.abs(ex) <= 1e-9 * c] = 0.0
            for tau in snap_times[(snap_times > now) & (snap_times <= t)]:
                qs = np.maximum(q + ex * (tau - now), 0.0)
                rate = eng.caps[active] if eng.caps is not None else share[f.src[active]]
                inject = np.bincount(f.src[active], weights=rate, minlength=hosts)
                snaps.append((float(tau), qs, served(qs), inject))
            q, now = np.maximum(q + ex * dt, 0.0), float(t)
        np.add.at(k, f.src[i], s)
        if eng.caps is not None:
            idx = i
            old = active[idx] * eng.caps[idx]
            active[i] = s > 0
            new = active[idx] * eng.caps[idx]
        else:  # every flow of the senders, by sender then flow id
            senders = np.unique(f.src[i])
            idx = np.concatenate([np.flatnonzero(f.src == x) for x in senders])
            old = active[idx] * share[f.src[idx]]
            active[i] = s > 0
            share[senders] = np.where(
                k[senders] > 0, eng.send[senders] / np.maximum(k[senders], 1), 0
            )
            new = active[idx] * share[f.src[idx]]
        lam += np.bincount(f.dst[idx], weights=new - old, minlength=hosts)
        q_at[i[s < 0]] = q[f.dst[i[s < 0]]]
        h = eng.hot
        util = float(served(q)[recv].sum()) / cap_total
        rows.append((now, float(q.sum()), float(q[h]), 8.0 * max(float(lam[h]), 0.0),
                     int(k.sum()), int(np.count_nonzero(k)), util))  # fmt: skip
    return rows, q_at, snaps


@pytest.mark.parametrize("paced", [False, True])
@pytest.mark.parametrize("seed", range(12))
def test_sweep_equals_stepping_every_host(seed: int, paced: bool) -> None:
    eng = _engine(seed, paced, timelines=seed % 3 == 0)
    end = eng.injection_ends()
    sweep = _Sweep(eng, end)
    sweep.run()
    rows, q_at, snaps = _eager(eng, end)
    ours = sweep.rows[: len(rows)]  # then the drain's rows
    assert ours == rows
    assert sweep.q_at.tolist() == q_at.tolist()
    assert len(sweep.snaps) >= len(snaps)
    for (t1, *a1), (t2, *a2) in zip(sweep.snaps, snaps, strict=False):
        assert t1 == t2 and all(x.tolist() == y.tolist() for x, y in zip(a1, a2, strict=True))
