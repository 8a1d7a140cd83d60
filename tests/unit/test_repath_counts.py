"""PLB and ROD repath, and the outputs count it: ``repaths`` per flow, in ``summary.json``
and in ``uet_transport_stats.json`` (issue 37, item 4)."""

import numpy as np
import pytest

import fabricsim

COLLISION = {
    "workload.hosts": 4,
    "topology.spines": 2,
    "workload.size_bytes": 400_000,
    "nic.cc": "nscc",
    "records.uet_monitor": True,
    "records.uet_transport_stats": True,
}
TYPES = {
    "plb": {"nic.plb.rehash_rounds": 1, "nic.plb.congested_fraction": 0.1},
    "rod": {},
}


@pytest.mark.parametrize("kind", sorted(TYPES))
def test_repaths_are_counted_per_flow_host_and_run(kind):
    sc = fabricsim.load_scenario("ecmp-collision").with_overrides(
        {**COLLISION, "nic.packet_spraying_type": kind, **TYPES[kind]}
    )
    res = fabricsim.run(sc, engine="packet")
    mon = res.tables["uet_monitor"]
    values = mon.groupby("flow_id")["entropy_value"].nunique().to_numpy()
    repaths = res.flows["repaths"].to_numpy()
    assert repaths.dtype == np.int64 and repaths.sum() > 0  # this collision does repath
    assert list(repaths) == list(values - 1)  # one new entropy value per repath
    assert res.summary["repaths"] == repaths.sum()  # a PDC group per flow here: no sharing
    stats = res.json_records["uet_transport_stats"]
    assert stats["total"]["repaths"] == res.summary["repaths"]
    per_nic = {name: nic["repaths"] for name, nic in stats["nics"].items()}
    for src, n in zip(res.flows["src"], repaths, strict=True):
        assert per_nic[src] == n  # each sender has one flow
    assert sum(per_nic.values()) == res.summary["repaths"]


def test_types_that_never_repath_count_zero_on_both_engines():
    sc = fabricsim.load_scenario("ecmp-collision").with_overrides({"workload.size_bytes": 50_000})
    for engine, extra in (("flow", {}), ("packet", {"nic.packet_spraying_type": "reps"})):
        res = fabricsim.run(sc.with_overrides(extra), engine=engine)
        assert (res.flows["repaths"] == 0).all() and "repaths" not in res.summary
