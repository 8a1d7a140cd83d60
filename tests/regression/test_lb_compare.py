"""Load-balancing methods compared on one fabric (reduced; full: scripts/verify_lb.py).

A k = 4 fat tree (16 hosts, 100 Gbps, 1 us links, 1-BDP queues, trimming, NSCC with the
unloaded RTT as base RTT), random permutations of 1 MB messages, seeds 1-3.  Measured when
written (mean / P99 FCT, us): ecmp 163.4 / 274.6, oblivious 98.0 / 104.2, reps 96.6 / 102.0,
adaptive 96.5 / 104.3, spray 98.4 / 105.0, flowlet 141.4 / 219.0.
"""

import numpy as np
import pytest

import fabricsim
from fabricsim.experiments.compare import compare

BASE = fabricsim.load_scenario("permutation").with_overrides(
    {"topology.k": 4, "nic.cc": "nscc", "workload.size_bytes": 1_000_000}
)
SEEDS = 3


@pytest.fixture(scope="module")
def table():
    res = compare(BASE, engine="packet", seeds=SEEDS)
    assert (res.runs["completed"] == res.runs["flows"]).all()
    return res.table.set_index("method")


@pytest.mark.full
def test_ecmp_is_much_slower_than_per_packet_spraying(table):
    assert table.loc["ecmp", "fct_mean_us"] >= 1.4 * table.loc["spray", "fct_mean_us"]
    assert table.loc["ecmp", "fct_mean_us"] >= 1.4 * table.loc["oblivious", "fct_mean_us"]


def test_reps_at_least_as_good_as_oblivious(table):
    for col in ("fct_mean_us", "fct_p99_us"):
        assert table.loc["reps", col] <= 1.02 * table.loc["oblivious", col]


def test_adaptive_is_the_best_or_close(table):
    assert table.loc["adaptive", "fct_mean_us"] <= 1.05 * table["fct_mean_us"].min()


def test_flowlets_stay_close_to_ecmp(table):
    # NSCC elephants leave no 10 us gaps: flows keep their first member, as under ECMP
    ratio = table.loc["flowlet", "fct_mean_us"] / table.loc["ecmp", "fct_mean_us"]
    assert 0.8 <= ratio <= 1.2


def test_uplink_balance_follows_the_method(table):
    assert table.loc["ecmp", "uplink_max_over_mean"] > 2.0
    for m in ("spray", "adaptive", "reps"):
        assert table.loc[m, "uplink_max_over_mean"] < 1.6
    assert (table.loc[["spray", "adaptive"], "trims"] == 0).all()
    assert table.loc["ecmp", "retransmissions"] > 0


DEGRADED = {
    "core0->agg1_0": 0.25,
    "core1->agg2_0": 0.25,
    "core2->agg3_1": 0.25,
    "core3->agg0_1": 0.25,
}


def test_degraded_spine_links_hurt_ecmp_far_more_than_reps():
    rise = {}
    for spray in ("none", "reps"):
        r = []
        for seed in range(1, SEEDS + 1):
            sc = BASE.with_overrides({"seed": seed, "nic.packet_spraying_type": spray})
            healthy = fabricsim.run(sc, engine="packet").summary["fct_max_s"]
            deg = sc.with_overrides({"topology.degraded_links": DEGRADED})
            s = fabricsim.run(deg, engine="packet").summary
            assert s["flows_completed"] == 16
            r.append(s["fct_max_s"] - healthy)
        rise[spray] = float(np.mean(r))
    assert rise["none"] > 0 and rise["none"] >= 2 * max(rise["reps"], 0.0)
