"""Max-min fair sharing on closed-form cases, directly and through the flow engine."""

import numpy as np
import pytest

import fabricsim
from fabricsim.flowsim.maxmin import maxmin_rates

INF = np.inf


def _rates(flow_links, capacity, caps=None, coefs=None):
    rows = np.array([f for f, links in enumerate(flow_links) for _ in links])
    cols = np.array([link for links in flow_links for link in links])
    coef = np.ones(len(rows)) if coefs is None else np.array(coefs, dtype=float)
    caps = np.full(len(flow_links), INF) if caps is None else np.array(caps, dtype=float)
    return maxmin_rates(len(flow_links), rows, cols, coef, np.array(capacity, float), caps)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 16])
def test_single_bottleneck_equal_shares(n):
    rates = _rates([[0]] * n, [100.0])
    assert np.allclose(rates, 100.0 / n)


def test_textbook_two_bottlenecks():
    # Bertsekas-Gallager: links A (cap 1) and B (cap 1); f0 crosses A and B, f1 only A,
    # f2 and f3 only B... here: f0 on A+B, f1 on A, f2, f3 on B -> B shared by 3: 1/3 each,
    # f1 takes A's rest 2/3.
    rates = _rates([[0, 1], [0], [1], [1]], [1.0, 1.0])
    assert np.allclose(rates, [1 / 3, 2 / 3, 1 / 3, 1 / 3])


def test_parking_lot():
    # long flow over 3 links, one short flow per link, all capacity 1: everyone gets 1/2
    rates = _rates([[0, 1, 2], [0], [1], [2]], [1.0, 1.0, 1.0])
    assert np.allclose(rates, 0.5)


def test_unequal_capacities_cascade():
    # link0 cap 10 (f0, f1, f2), link1 cap 2 (f2 only with f3): f2,f3 get 1; f0,f1 get 4.5
    rates = _rates([[0], [0], [0, 1], [1]], [10.0, 2.0])
    assert np.allclose(rates, [4.5, 4.5, 1.0, 1.0])


def test_rate_caps_redistribute():
    rates = _rates([[0], [0], [0]], [90.0], caps=[10.0, INF, INF])
    assert np.allclose(rates, [10.0, 40.0, 40.0])


def test_multipath_split_weights():
    # one flow split 50/50 over links 0 and 1 (cap 10 each) -> rate 20; a second flow on
    # link 0 alone: share of link 0 -> f0 uses 0.5 r0, f1 uses r1: r0 = r1 = 10/1.5
    rates = _rates([[0, 1], [0]], [10.0, 10.0], coefs=[0.5, 0.5, 1.0])
    assert np.allclose(rates, [10 / 1.5, 10 / 1.5])
    alone = _rates([[0, 1]], [10.0, 10.0], coefs=[0.5, 0.5])
    assert np.allclose(alone, [20.0])


def test_failed_link_gives_zero():
    rates = _rates([[0], [1]], [0.0, 5.0])
    assert rates.tolist() == [0.0, 5.0]


def _scenario(**over):
    base = {
        "seed": 1,
        "topology": {
            "kind": "leaf_spine",
            "leaves": 2,
            "spines": 1,
            "hosts_per_leaf": 4,
            "link_gbps": 100,
            "link_delay_us": 0.0,
        },
        "workload": {"kind": "incast", "senders": 3, "receiver": 0, "size_bytes": 10_000_000},
        "nic": {"packet_spraying_type": "none", "header_bytes": 0},
    }
    for k, v in over.items():
        base[k] = v
    return base


def test_engine_incast_fct_matches_closed_form():
    res = fabricsim.run(_scenario(), engine="flow")
    # 3 senders into one 100 Gbps receiver link: each gets 1/3; all finish together
    expected = 3 * 10_000_000 * 8 / 100e9
    mss_ser = 4096 * 8 / 100e9  # store-and-forward of the last packet per hop after the first
    hops = res.flows["path"].str.count(">") + 1
    assert np.allclose(res.flows["fct_s"], expected + hops * mss_ser, rtol=1e-9)
    assert res.summary["bytes_conserved"] is True
    assert res.summary["bytes_delivered"] == res.summary["bytes_total"]


def test_engine_staggered_arrivals(tmp_path):
    # two 10 MB flows into host0 over one 100 Gbps receiver link; the second starts at 0.4 ms,
    # when the first is half done: first finishes at 0.4 + 2*0.4 = 1.2 ms, second at 1.6 ms
    trace = tmp_path / "t.csv"
    trace.write_text("src,dst,size_bytes,start_s\n1,0,10000000,0\n2,0,10000000,0.0004\n")
    res = fabricsim.run(_scenario(workload={"kind": "trace", "path": str(trace)}), engine="flow")
    lat = 4096 * 8 / 100e9 * np.array([1, 1])  # host1/host2 share leaf0 with host0: 1 hop
    assert np.allclose(res.flows["finish_s"], np.array([1.2e-3, 1.6e-3]) + lat, rtol=1e-9)
    assert res.summary["bytes_conserved"] is True


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from fabricsim.flowsim.maxmin import maxmin_progressive  # noqa: E402


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_parallel_bottleneck_equals_progressive_filling(seed):
    rng = np.random.default_rng(seed)
    n, nl = int(rng.integers(1, 40)), int(rng.integers(1, 20))
    rows, cols, coef = [], [], []
    for f in range(n):
        for link in sorted(rng.choice(nl, size=min(int(rng.integers(1, 5)), nl), replace=False)):
            rows.append(f)
            cols.append(link)
            coef.append(float(rng.choice([1.0, 0.5, 0.25])))
    capacity = rng.choice([1.0, 2.0, 5.0, 10.0], nl)
    if seed % 4 == 0:
        capacity[0] = 0.0
    caps = np.where(rng.random(n) < 0.2, rng.uniform(0.1, 3, n), np.inf)
    args = (n, np.array(rows), np.array(cols), np.array(coef), capacity, caps)
    fast, ref = maxmin_rates(*args), maxmin_progressive(*args)
    assert np.allclose(fast, ref, rtol=1e-7, atol=1e-9)
    # feasibility: no link over capacity
    load = np.bincount(args[2], weights=args[3] * fast[args[1]], minlength=nl)
    assert np.all(load <= capacity * (1 + 1e-9) + 1e-12)
