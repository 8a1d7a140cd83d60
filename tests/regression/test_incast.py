"""Incast under NSCC (trimming vs drop-tail), NACK-driven retransmission, failed links.

The 32 -> 1 and 127 -> 1 incasts of 2 MB run at full size (k = 8 fat tree, 100 Gbps); the
trimming / drop-tail contrast and the failures run on a k = 4 fat tree.  Receiver busy = the
receiver downlink's serialization time over the time from the first possible arrival to the
last (:func:`fabricsim.analysis.links.receiver_busy_fraction`).
"""

import pytest

import fabricsim
from fabricsim.analysis.links import receiver_busy_fraction
from fabricsim.experiments.runner import fabric_of

INCAST = fabricsim.load_scenario("incast").with_overrides(
    {"nic.cc": "nscc", "records.port_stats": True}
)
SMALL = INCAST.with_overrides(
    {"topology.k": 4, "workload.senders": 15, "workload.size_bytes": 500_000}
)


def run(sc, **over):
    sc = sc.with_overrides(over) if over else sc
    res = fabricsim.run(sc, engine="packet")
    return res, receiver_busy_fraction(res, fabric_of(sc), sc.workload.receiver)


@pytest.mark.parametrize("senders", [32, 127])
def test_large_incast_finishes_and_keeps_the_receiver_busy(senders):
    res, busy = run(INCAST, **{"workload.senders": senders})
    s = res.summary
    assert s["flows_completed"] == senders and s["bytes_conserved"]
    assert busy >= 0.9
    # every loss is a trim answered by a NACK: no timeouts
    assert s["packets_retransmitted"] == s["packets_trimmed"] > 0
    assert s["timeouts"] == 0 and s["packets_dropped"] == 0
    ideal = senders * 2_000_000 * (1 + 88 / 4096) * 8 / 100e9
    assert s["fct_max_s"] <= 1.1 * ideal + 50e-6


def test_trimming_beats_drop_tail():
    trim, busy_trim = run(SMALL)
    tail, busy_tail = run(SMALL, **{"switch.trimming": False})
    st, sd = trim.summary, tail.summary
    assert st["flows_completed"] == sd["flows_completed"] == 15
    assert st["packets_trimmed"] > 0 and st["nacks_sent"] > 0 and st["timeouts"] == 0
    assert sd["packets_trimmed"] == 0 and sd["packets_dropped"] > 0
    assert sd["timeouts"] >= sd["packets_dropped"]  # drop-tail recovers by timeouts only
    assert busy_trim >= 0.9 and busy_tail < busy_trim
    assert sd["fct_max_s"] > st["fct_max_s"]


def test_constant_windows_with_drop_tail_collapse():
    _, busy_nscc = run(SMALL, **{"switch.trimming": False})
    res, busy = run(SMALL, **{"switch.trimming": False, "nic.cc": "constant"})
    assert res.summary["flows_completed"] == 15 and busy < 0.5 * busy_nscc


PERM = fabricsim.load_scenario("permutation").with_overrides(
    {"topology.k": 4, "workload.size_bytes": 300_000, "nic.cc": "nscc", "seed": 1}
)
FAIL = [{"link": "agg0_0->core0", "at_s": 20e-6}]


def test_a_link_failing_mid_run():
    over = {"topology.link_failures": FAIL}
    ecmp = fabricsim.run(
        PERM.with_overrides({**over, "nic.packet_spraying_type": "none"}), engine="packet"
    )
    reps = fabricsim.run(
        PERM.with_overrides({**over, "nic.packet_spraying_type": "reps"}), engine="packet"
    )
    adaptive = fabricsim.run(
        PERM.with_overrides(
            {**over, "nic.packet_spraying_type": "none", "switch.load_balancing_method": "adaptive"}
        ),
        engine="packet",
    )
    # per-flow ECMP keeps hashing a flow onto the dead link: it never finishes (NSCC's window
    # falls to one packet, so its lost PSNs time out one at a time until the time limit)
    s = ecmp.summary
    assert s["flows_completed"] < 16 and (s["flows_failed"] >= 1 or s["time_limit_reached"])
    # REPS loses what it sent into the link and stops using its entropy values
    assert reps.summary["flows_completed"] == 16
    assert 0 < reps.summary["packets_retransmitted"] <= 40
    # the switch next to the link stops using it at once
    assert adaptive.summary["flows_completed"] == 16
    assert adaptive.summary["packets_retransmitted"] <= 10


def test_failed_and_degraded_links_at_start():
    sc = PERM.with_overrides(
        {
            "nic.packet_spraying_type": "none",
            "switch.load_balancing_method": "adaptive",
            "topology.failed_links": ["agg0_0->core0", "core1->agg2_0"],
            "topology.degraded_links": {"agg1_1->core3": 0.25},
        }
    )
    res = fabricsim.run(sc, engine="packet")
    s = res.summary
    # agg0_0 never uses its dead uplink; core1 has one way into pod 2, so what the aggregation
    # switches of other pods send to core1 for pod 2 is lost -- each retransmission is a new
    # choice, and every message gets through
    assert s["flows_completed"] == 16 and s["bytes_conserved"]
    assert s["packets_dropped"] > 0 and s["packets_retransmitted"] >= s["packets_dropped"] - 5
