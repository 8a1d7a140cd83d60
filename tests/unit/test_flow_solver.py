"""The incremental max-min kernel against the reference solver (``engine.flow_solver``).

Two levels: the kernel's rates after every event of a random add/remove/reroute sequence equal
a from-scratch max-min solve of the same connections; and whole runs on random fabrics,
workloads, caps and multipath splits give the reference's per-flow FCTs to 1e-9 relative.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import fabricsim
from fabricsim.experiments.runner import _run_engine, fabric_of, router_of
from fabricsim.flowsim.kernel import CAP, MaxMinKernel
from fabricsim.flowsim.maxmin import maxmin_progressive, maxmin_rates
from fabricsim.workloads import generate

sys_path = Path(__file__).resolve().parents[1] / "regression"


def _solve_all(k: MaxMinKernel) -> tuple[np.ndarray, np.ndarray]:
    """(active slots, their max-min rates) solved from scratch."""
    active = np.flatnonzero(np.asarray(k.active))
    rows, cols, coef = [], [], []
    for i, s in enumerate(active):
        for c in range(k.deg[s]):
            rows.append(i)
            cols.append(k.links[s, c])
            coef.append(k.coef[s, c])
    caps = np.asarray(k.cap)[active]
    args = (len(active), np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64))
    rates = maxmin_rates(*args, np.array(coef), np.asarray(k.capacity), caps)
    return active, rates


def _check_incidence(k: MaxMinKernel) -> None:
    """Both directions of the incidence describe the same (slot, link) pairs."""
    pairs = set()
    for link in range(k.nlinks):
        start = k.lstart[link]
        for p in range(start, start + k.llen[link]):
            s, c = int(k.pool_slot[p]), int(k.pool_col[p])
            assert k.active[s] and k.links[s, c] == link and k.pos[s, c] == p - start
            pairs.add((s, link))
    rows = {
        (s, int(k.links[s, c])) for s in range(k.nslots) if k.active[s] for c in range(k.deg[s])
    }
    assert pairs == rows


def _random_links(rng: np.random.Generator, nlinks: int) -> tuple[np.ndarray, np.ndarray]:
    d = int(rng.integers(1, 6))
    links = rng.choice(nlinks, size=d, replace=False).astype(np.int64)
    coefs = np.where(rng.random(d) < 0.3, rng.uniform(0.1, 1.0, d), 1.0)
    return links, coefs


@pytest.mark.parametrize("seed", range(12))
def test_kernel_rates_equal_a_global_solve_after_every_event(seed):
    rng = np.random.default_rng(seed)
    nlinks = int(rng.integers(3, 25))
    capacity = rng.choice([10.0, 25.0, 40.0, 100.0], size=nlinks)
    capacity[rng.random(nlinks) < 0.05] = 0.0  # failed links
    k = MaxMinKernel(capacity, fallback=float(rng.choice([0.5, 2.0])))
    k.pool_slot = np.zeros(8, dtype=np.int64)  # a tiny pool: segments move, the pool compacts
    k.pool_col = np.zeros(8, dtype=np.int64)
    live: list[int] = []
    for _ in range(120):
        for _ in range(int(rng.integers(1, 4))):  # a batch of simultaneous changes
            op = rng.random()
            if op < 0.5 or len(live) < 2:
                links, coefs = _random_links(rng, nlinks)
                cap = float(rng.uniform(1, 30)) if rng.random() < 0.25 else math.inf
                live.append(k.add(links, coefs, cap, 1e6, 0.0))
            elif op < 0.8:
                k.remove(live.pop(int(rng.integers(len(live)))), 0.0)
            else:
                links, coefs = _random_links(rng, nlinks)
                k.reroute(live[int(rng.integers(len(live)))], links, coefs, math.inf, 0.0)
        k.settle(0.0)
        active, want = _solve_all(k)
        got = np.asarray(k.rate)[active]
        assert np.allclose(got, want, rtol=1e-9, atol=1e-9), (got, want)
        for s in active:  # every connection knows its bottleneck (none is left unknown)
            assert k.bneck[s] == CAP or k.bneck[s] >= 0
    _check_incidence(k)
    assert np.asarray(k.pool_slot).size > 8  # segments moved, the pool compacted and grew


def test_kernel_fills_weighted_links_like_progressive_filling():
    # a split connection (0.5 on each of two links) against single-path ones
    k = MaxMinKernel(np.array([10.0, 10.0, 4.0]))
    a = k.add(np.array([0, 1]), np.array([0.5, 0.5]), math.inf, 1.0, 0.0)
    b = k.add(np.array([0, 2]), np.array([1.0, 1.0]), math.inf, 1.0, 0.0)
    c = k.add(np.array([1]), np.array([1.0]), math.inf, 1.0, 0.0)
    k.settle(0.0)
    want = maxmin_progressive(
        3,
        np.array([0, 0, 1, 1, 2]),
        np.array([0, 1, 0, 2, 1]),
        np.array([0.5, 0.5, 1.0, 1.0, 1.0]),
        np.array([10.0, 10.0, 4.0]),
        np.full(3, np.inf),
    )
    assert [k.rate_bps(s) for s in (a, b, c)] == pytest.approx(want.tolist(), rel=1e-12)


def test_kernel_moves_bytes_lazily_and_completes_on_time():
    k = MaxMinKernel(np.array([8.0]))  # 8 bits/s = 1 byte/s
    a = k.add(np.array([0]), np.array([1.0]), math.inf, 10.0, 0.0)
    k.settle(0.0)
    assert k.next_done(0.0) == pytest.approx(10.0)
    b = k.add(np.array([0]), np.array([1.0]), math.inf, 2.0, 4.0)  # a has 6 bytes left
    k.settle(4.0)
    assert k.remaining_bytes(a, 4.0) == pytest.approx(6.0)
    assert k.next_done(4.0) == pytest.approx(8.0)  # b: 2 bytes at 0.5 byte/s
    assert k.done(8.0) == [b]
    k.remove(b, 8.0)
    k.settle(8.0)
    assert k.next_done(8.0) == pytest.approx(12.0)  # a: 4 bytes left at 1 byte/s
    assert k.done(12.0) == [a]
    k.remove(a, 12.0)
    assert k.link_bytes[0] == pytest.approx(12.0)  # every byte counted once on the link


def _trace(tmp: Path, rng: np.random.Generator, hosts: int, n: int) -> Path:
    src = rng.integers(0, hosts, n)
    dst = (src + rng.integers(1, hosts, n)) % hosts
    size = rng.integers(10_000, 3_000_000, n)
    start = np.sort(rng.uniform(0, 2e-4, n)) if rng.random() < 0.7 else np.zeros(n)
    path = tmp / "flows.csv"
    pd.DataFrame({"src": src, "dst": dst, "size_bytes": size, "start_s": start}).to_csv(
        path, index=False
    )
    return path


def _random_scenario(rng: np.random.Generator, tmp: Path) -> dict:
    if rng.random() < 0.5:
        spines, leaves, hpl = (int(x) for x in rng.integers(1, 5, 3) + [0, 1, 1])
        topo = {"kind": "leaf_spine", "spines": spines, "leaves": leaves, "hosts_per_leaf": hpl}
        topo["fabric_link_gbps"] = float(rng.choice([25, 100, 400]))
        hosts = leaves * hpl
    else:
        topo = {"kind": "fat_tree", "k": 4}
        hosts = 16
    policy = str(rng.choice(["ecmp", "ideal_spray", "qp_scaling", "pinned"]))
    sc = {
        "name": "prop",
        "seed": int(rng.integers(0, 1000)),
        "topology": topo,
        "workload": {
            "kind": "trace",
            "path": str(_trace(tmp, rng, hosts, int(rng.integers(3, 40)))),
        },
        "lb": {"policy": policy},
        "nic": {"packet_spraying_type": str(rng.choice(["none", "default", "oblivious"]))},
    }
    if policy in ("ideal_spray", "pinned"):
        sc["nic"]["packet_spraying_type"] = "none"
    if policy == "qp_scaling":
        sc["lb"].update(
            qp_count=int(rng.integers(2, 5)), qp_mode=str(rng.choice(["round_robin", "split"]))
        )
    if rng.random() < 0.2:
        sc["switch"] = {"hash_method": "random"}
    return sc


def _run(sc: fabricsim.Scenario, solver: str, caps: np.ndarray | None):
    sc = sc.with_overrides({"engine.flow_solver": solver})
    fab = fabric_of(sc)
    flows = generate(sc, fab)
    if caps is not None:
        flows.extra["rate_cap_bps"] = caps
    return _run_engine(sc, "flow", fab, router_of(sc, fab), flows)


@pytest.mark.parametrize("seed", range(16))
def test_incremental_runs_equal_the_reference(seed, tmp_path):
    rng = np.random.default_rng(1000 + seed)
    sc = fabricsim.load_scenario(_random_scenario(rng, tmp_path))
    n = len(generate(sc, fabric_of(sc)))
    caps = None
    if rng.random() < 0.4:  # per-flow caps (paced flows), some far below the fabric's rates
        caps = np.where(rng.random(n) < 0.5, rng.uniform(1e9, 80e9, n), np.inf)
    inc, ref = _run(sc, "incremental", caps), _run(sc, "reference", caps)
    assert inc.summary["link_counters_match_flows"] is True
    np.testing.assert_array_equal(np.isnan(inc.finish_s), np.isnan(ref.finish_s))
    done = ~np.isnan(ref.finish_s)
    np.testing.assert_allclose(inc.finish_s[done], ref.finish_s[done], rtol=1e-9, atol=0)
    np.testing.assert_array_equal(inc.delivered_bytes, ref.delivered_bytes)
    assert inc.path == ref.path


@pytest.mark.parametrize("name", ["ecmp-collision-flow", "permutation-k4-flow", "ark-40-ark-flow"])
def test_golden_flow_runs_agree_between_solvers(name):
    import sys

    sys.path.insert(0, str(sys_path))
    from golden_runs import RUNS

    scenario, overrides, engine = RUNS[name]
    sc = fabricsim.load_scenario(scenario).with_overrides(overrides)
    runs = [
        fabricsim.run(sc.with_overrides({"engine.flow_solver": s}), engine=engine)
        for s in ("incremental", "reference")
    ]
    a, b = (r.flows for r in runs)
    assert list(a["path"]) == list(b["path"])
    np.testing.assert_allclose(a["fct_s"], b["fct_s"], rtol=1e-9)
    for key in ("flows_completed", "events", "ark_fallbacks", "ark_races"):
        assert runs[0].summary.get(key) == runs[1].summary.get(key)
