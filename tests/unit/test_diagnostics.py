"""Diagnostics of runs: uplink bytes per step, time-weighted queue depths, counters."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pandas as pd
import pytest

import fabricsim
from fabricsim.analysis.diagnostics import (
    diagnose,
    link_timeline_stats,
    nic_counters,
    port_counters,
    uplink_step_loads,
)
from fabricsim.cli import main
from fabricsim.config import TopologyConfig
from fabricsim.topology import build_fabric

# exact E[max load] of 8 flows on 8 uplinks (fabricsim.analysis.ecmp_math; 002 worked example)
EXPECTED_MAX_LOAD_8_8 = 2.5972328186035156
SD_MAX_LOAD_8_8 = 0.6846577453042986  # its standard deviation, from the same distribution


def _collision(seed: int, **over) -> fabricsim.Result:
    return fabricsim.run(
        fabricsim.load_scenario("ecmp-collision").with_overrides({"seed": seed, **over})
    )


def test_uplink_bytes_of_one_step_match_the_paths() -> None:
    res = _collision(1)
    steps = diagnose(res).uplink_steps
    assert steps is not None and len(steps) == 1
    row = steps.iloc[0]
    spines = Counter(p.split(">")[1] for p in res.flows["path"])
    size = 4 * 1024**2
    assert (row["switch"], row["tier"], row["flows"], row["uplinks"]) == ("leaf0", "leaf", 8, 8)
    assert row["bytes_total"] == 8 * size
    assert row["bytes_max"] == max(spines.values()) * size
    assert row["idle_uplinks"] == 8 - len(spines)
    assert row["max_over_mean"] == pytest.approx(max(spines.values()))  # 8 flows, 8 uplinks
    assert spines[row["busiest"]] == max(spines.values())


@pytest.mark.parametrize(
    ("seeds", "tol"),
    [
        # CI: 3.89 standard errors (two-sided false-alarm rate 1e-4; sd 0.685 per seed, exact)
        pytest.param(50, 3.89 * SD_MAX_LOAD_8_8 / np.sqrt(50), id="50-seeds"),
        pytest.param(200, 0.15, marks=pytest.mark.slow, id="200-seeds"),
    ],
)
def test_max_over_mean_averages_the_exact_ecmp_expectation(seeds: int, tol: float) -> None:
    """2.6 with 8 flows on 8 uplinks is hashing, not a fault: the mean over seeds is E[max]."""
    ratios = [
        diagnose(_collision(seed)).to_dict()["uplink_max_over_mean"] for seed in range(1, seeds + 1)
    ]
    # max load has sd ~0.68 per seed; 200 seeds: standard error ~0.05
    assert np.mean(ratios) == pytest.approx(EXPECTED_MAX_LOAD_8_8, abs=tol)
    assert set(np.unique(ratios)) <= {1.0, 2.0, 3.0, 4.0, 5.0, 6.0}


def test_ideal_spray_is_perfectly_even() -> None:
    steps = diagnose(_collision(1, **{"lb.policy": "ideal_spray"})).uplink_steps
    assert steps["max_over_mean"].tolist() == pytest.approx([1.0])
    assert steps["idle_uplinks"].tolist() == [0]


def test_steps_from_a_step_column_and_unused_uplinks() -> None:
    fab = build_fabric(TopologyConfig(leaves=2, spines=4, hosts_per_leaf=4))
    flows = pd.DataFrame(
        {
            "size_bytes": [100, 100, 300, 50, 50, 999],
            "start_s": [0.0, 0.0, 0.0, 1.0, 1.0, 2.0],
            "step": [0, 0, 0, 1, 1, 2],
            "path": [
                "leaf0>spine0>leaf1", "leaf0>spine0>leaf1", "leaf1>spine2>leaf0",
                "leaf0>spine1>leaf1;leaf0>spine3>leaf1", "leaf0>spine1>leaf1", "leaf0>spine2>leaf1",
            ],
        }
    )  # fmt: skip
    out = uplink_step_loads(flows, fab)
    assert out[["step", "switch"]].values.tolist() == [[0, "leaf0"], [0, "leaf1"], [1, "leaf0"]]
    s0 = out.iloc[0]
    assert (s0["bytes_total"], s0["bytes_max"], s0["bytes_mean"]) == (200, 200, 50)
    assert (s0["max_over_mean"], s0["idle_uplinks"], s0["busiest"]) == (4.0, 3, "spine0")
    s1 = out.iloc[2]  # 25 B on spine3, 75 B on spine1 (multipath: even split)
    assert (s1["bytes_max"], s1["bytes_mean"], s1["busiest"]) == (75, 25, "spine1")
    assert out.iloc[1]["max_over_mean"] == 4.0  # step 2 has one flow: not a step


def test_queue_statistics_are_time_weighted() -> None:
    tl = pd.DataFrame(
        {
            "link": ["a", "a", "a", "b", "b"],
            "time_s": [0.0, 1.0, 3.0, 2.0, 4.0],
            "utilization": [0.0, 1.0, 0.5, 1.0, 0.0],
            "queue_bytes": [0.0, 100.0, 0.0, 10.0, 0.0],
        }
    )
    out = link_timeline_stats(tl).set_index("link")
    a = out.loc["a"]  # queue 0 on [0,1), 100 on [1,3), 0 on [3,4]
    assert (a["queue_mean_bytes"], a["queue_std_bytes"]) == (50.0, 50.0)
    assert (a["queue_p95_bytes"], a["queue_max_bytes"]) == (100.0, 100.0)
    assert a["utilization_mean"] == pytest.approx((2 * 1.0 + 0.5) / 4)
    b = out.loc["b"]  # idle before its first row: 0 on [0,2), 10 on [2,4)
    assert b["queue_mean_bytes"] == 5.0 and b["utilization_mean"] == 0.5
    assert list(out.index) == ["a", "b"]  # deepest queue first


def test_counters_tables() -> None:
    ports = pd.DataFrame(
        {"link": ["x", "y", "z"], "bytes": [10, 0, 0], "packets": [1, 0, 0],
         "ecn_marks": [0, 0, 2], "trims": [0, 0, 1], "drops": [0, 0, 0],
         "peak_queue_bytes": [0, 0, 9000]}
    )  # fmt: skip
    assert port_counters(ports)["link"].tolist() == ["x", "z"]
    stats = {"nics": {"host0": {"nacks_sent": 1, "max_out_of_order_on_flow": 3}}, "total": {}}
    nics = nic_counters(stats)
    assert nics.to_dict("records") == [
        {"nic": "host0", "nacks_sent": 1, "max_out_of_order_on_flow": 3}
    ]
    assert nic_counters(None).empty and port_counters(pd.DataFrame()).empty


def test_flow_run_without_records_has_no_packet_tables(tmp_path) -> None:
    res = _collision(2)
    res.save(tmp_path)
    d = diagnose(tmp_path)
    assert d.link_stats is None and d.ports is None and d.nics is None and d.out_of_order is None
    assert d.transport is None
    pd.testing.assert_frame_equal(d.uplink_steps, diagnose(res).uplink_steps)
    json.dumps(d.to_dict())


def test_packet_run_counters(tmp_path) -> None:
    sets = {
        "records.port_stats": True,
        "records.uet_transport_stats": True,
        "records.timelines": True,
    }
    sc = fabricsim.load_scenario("spray-example").with_overrides(sets)
    try:
        res = fabricsim.run(sc, engine="packet")
    except fabricsim.EngineRefusal as exc:
        pytest.skip(f"packet engine unavailable: {exc}")
    res.save(tmp_path)
    d = diagnose(tmp_path)
    assert d.ports is not None and "host0->leaf0" in set(d.ports["link"])
    assert d.nics is not None and set(d.nics["nic"]) == {"host0", "host1"}
    assert d.out_of_order is not None and "num_out_of_order_events_on_nic" in d.out_of_order
    assert d.transport["packets_sent"] == res.summary["packets_sent"]
    assert d.link_stats is not None and len(d.link_stats) > 0
    digest = d.to_dict()
    assert digest["port_trims"] == int(res.tables["port_stats"]["trims"].sum())


def test_ecmp_math_cli_reference_numbers(capsys) -> None:
    """`fabricsim ecmp-math` prints the 002 worked example's numbers."""
    assert main(["ecmp-math", "--flows", "8", "--uplinks", "8", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert round(data["p_no_collision"], 4) == 0.0024
    assert round(data["expected_idle_uplinks"], 2) == 2.75
    assert round(data["expected_max_load"], 2) == 2.60
    assert round(data["efficiency"], 2) == 0.41
    dist = {int(k): v for k, v in data["max_load_distribution"].items()}
    assert sorted(dist) == list(range(1, 9)) and sum(dist.values()) == pytest.approx(1.0)
    assert round(dist[2], 3) == 0.498 and round(dist[3], 3) == 0.409
    assert main(["ecmp-math", "--flows", "8", "--uplinks", "16", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (round(data["p_no_collision"], 3), round(data["efficiency"], 2)) == (0.121, 0.53)
    assert main(["ecmp-math", "--flows", "8", "--uplinks", "8", "--qp-scaling", "16"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if "slowdown" in ln)
    assert round(float(line.split()[-1]), 2) == 1.37


def test_parallel_uplinks_are_counted_one_by_one() -> None:
    res = _collision(1, **{"topology.parallel_links": 2})
    row = diagnose(res).uplink_steps.iloc[0]
    links = Counter(p.split(">")[1] for p in res.flows["path"])  # "spine3" or "spine3#1"
    assert (row["switch"], row["flows"], row["uplinks"]) == ("leaf0", 8, 16)
    assert row["idle_uplinks"] == 16 - len(links)
    assert row["max_over_mean"] == pytest.approx(max(links.values()) * 16 / 8)
    assert links[row["busiest"]] == max(links.values())


def test_diagnose_of_a_directory_names_a_corrupt_file(tmp_path) -> None:
    from fabricsim.errors import ConfigError

    _collision(1).save(tmp_path)
    (tmp_path / "flows.parquet").write_bytes(b"not parquet")
    with pytest.raises(ConfigError, match="flows.parquet: not a readable Parquet table"):
        diagnose(tmp_path)
    (tmp_path / "flows.parquet").unlink()
    with pytest.raises(ConfigError, match="flows.parquet: missing"):
        diagnose(tmp_path)
