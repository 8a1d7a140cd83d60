"""Per-host NIC rates (``topology.host_nic_gbps``, issue 16 item 6): mixed 200/400/800 Gbps."""

from __future__ import annotations

import numpy as np
import pytest

import fabricsim
from fabricsim.config import TopologyConfig
from fabricsim.config.loader import load_scenario
from fabricsim.errors import ConfigError
from fabricsim.topology.builders import build_fabric


def test_a_list_or_a_map_sets_each_hosts_links_both_ways():
    base = build_fabric(TopologyConfig(spines=4))
    fab = build_fabric(TopologyConfig(spines=4, host_nic_gbps={0: 400, 9: 25}))
    rate = fab.link_rate_bps
    assert rate[fab.host_uplink[0]] == rate[fab.host_downlink[0]] == 400e9
    assert rate[fab.host_uplink[9]] == 25e9 and rate[fab.host_uplink[1]] == 100e9
    assert fab.oversubscription == pytest.approx((400 + 7 * 100) / (4 * 100))  # leaf 0
    listed = build_fabric(TopologyConfig(spines=4, host_nic_gbps=[100.0] * base.num_hosts))
    assert np.array_equal(listed.link_rate_bps, base.link_rate_bps)
    assert listed.oversubscription == base.oversubscription


@pytest.mark.parametrize(
    ("rates", "message"),
    [
        ([100.0, 200.0], "2 rates for 16 hosts"),
        ({16: 100.0}, "host 16 does not exist"),
    ],
)
def test_bad_rates_are_one_line(rates, message):
    with pytest.raises(ConfigError, match=message):
        build_fabric(TopologyConfig(spines=4, host_nic_gbps=rates))


def test_both_engines_send_at_the_hosts_own_rate():
    data = {
        "name": "slow-nic",
        "topology": {"spines": 2, "host_nic_gbps": {0: 25}},
        "workload": {"kind": "incast", "senders": 1, "receiver": 8, "size_bytes": 1_000_000},
        "nic": {"packet_spraying_type": "none"},
    }
    packet_nic = {"nic": {"initial_base_rtt_us": "auto", "packet_spraying_type": "none"}}
    for engine in ("flow", "packet"):  # the flow engine has no base RTT (the key is refused)
        sc = load_scenario({**data, **packet_nic} if engine == "packet" else data)
        fct = fabricsim.run(sc, engine=engine).flows["fct_s"].iloc[0]
        assert fct == pytest.approx(1_000_000 * 8 / 25e9, rel=0.06), engine


@pytest.mark.full
def test_rate_based_moe_stays_near_its_bound_on_mixed_nics():
    """``003_*.txt`` section 7: the rate-based schedule normalises each port by its own rate."""
    rates = [200.0] * 24 + [400.0] * 24 + [800.0] * 16
    out = {}
    for sched in ("rate_based", "round_robin"):
        sc = load_scenario("moe").with_overrides(
            {
                "topology.host_nic_gbps": rates,
                "workload.scheduler": sched,
                "workload.tokens_per_gpu": 32,
                "records.timelines": False,
            }
        )
        out[sched] = fabricsim.run(sc).summary["cct_inflation"]
    print(f"mixed 200/400/800 Gbps NICs, MoE CCT inflation: {out}")
    assert out["rate_based"] <= 1.02 < out["round_robin"]


def test_a_fat_tree_takes_a_rate_per_switch_tier():
    from fabricsim.errors import EngineRefusal
    from fabricsim.experiments.engines import check_supported

    fab = build_fabric(
        TopologyConfig(kind="fat_tree", k=4, host_link_gbps=200, fabric_link_gbps=400,
                       core_link_gbps=800)
    )  # fmt: skip
    rate = dict(zip(fab.link_names, fab.link_rate_bps, strict=True))
    assert rate["host0->edge0_0"] == 200e9 and rate["edge0_0->agg0_0"] == 400e9
    assert rate["agg0_0->core0"] == rate["core0->agg0_0"] == 800e9
    same = build_fabric(TopologyConfig(kind="fat_tree", k=4, fabric_link_gbps=400))
    assert same.link_rate_bps[same.link_index["agg0_0->core0"]] == 400e9  # null: the fabric's
    planes = build_fabric(
        TopologyConfig(kind="multi_plane", plane_kind="fat_tree", k=4, core_link_gbps=800)
    )
    assert planes.link_rate_bps[planes.link_index["p1_agg0_0->p1_core0"]] == 800e9
    sc = load_scenario("ecmp-collision").with_overrides({"topology.core_link_gbps": 800})
    with pytest.raises(EngineRefusal, match="topology.core_link_gbps does nothing"):
        check_supported(sc, "flow")
