"""Both engines release a dependent flow ``gap_s`` after each dependency (compute between
messages of a Chakra replay), and their time limits leave room for the gaps."""

from __future__ import annotations

import pytest

import fabricsim
from fabricsim.workloads.chakra import compute_node, recv_node, send_node, write_trace
from fabricsim.workloads.chakra_traces import with_deps

TOPOLOGY = {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2, "link_gbps": 100}
ENGINES = ("flow", "packet")
PS = 1e-12  # the packet engine's clock: gaps land on whole picoseconds


def scenario(path, **workload) -> dict:
    wl = {"kind": "chakra", "path": str(path), "gpus_per_server": 1, **workload}
    return {"topology": TOPOLOGY, "workload": wl, "nic": {"packet_spraying_type": "none"}}


def ping_pong(tmp_path, compute_us: int):
    """Rank 0 sends to rank 2; rank 2 computes ``compute_us`` after receiving, then replies."""
    write_trace(
        tmp_path / "t.0.et", [send_node(1, dst=2, size=200_000), recv_node(2, src=2, size=50_000)]
    )
    write_trace(tmp_path / "t.1.et", [compute_node(1, 5)])
    write_trace(
        tmp_path / "t.2.et",
        [
            recv_node(1, src=0, size=200_000),
            with_deps(compute_node(2, compute_us), data=[1]),
            with_deps(send_node(3, dst=0, size=50_000), data=[2]),
        ],
    )
    write_trace(tmp_path / "t.3.et", [compute_node(1, 5)])
    return tmp_path


@pytest.mark.parametrize("engine", ENGINES)
def test_a_reply_starts_its_compute_gap_after_the_message_it_answers(tmp_path, engine):
    res = fabricsim.run(scenario(ping_pong(tmp_path, 700)), engine=engine)
    f = res.flows
    assert list(zip(f["src"], f["dst"], strict=True)) == [("host0", "host2"), ("host2", "host0")]
    assert f["start_s"][1] == pytest.approx(f["finish_s"][0] + 700e-6, abs=2 * PS)
    assert res.summary["iteration_time_s"] == pytest.approx(f["finish_s"][1], abs=2 * PS)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_flow_waits_for_the_latest_of_its_dependencies_plus_its_own_gap(tmp_path, engine):
    """Rank 2 receives a long message from 0 and a short one from 1; 300 us of compute follow
    the long one, 2 ms the short one; its send waits for both computes."""
    write_trace(tmp_path / "t.0.et", [send_node(1, dst=2, size=1_000_000)])
    write_trace(tmp_path / "t.1.et", [send_node(1, dst=2, size=100_000)])
    nodes = [
        recv_node(1, src=0, size=1_000_000),
        recv_node(2, src=1, size=100_000),
        with_deps(compute_node(3, 300), data=[1]),
        with_deps(compute_node(4, 2000), data=[2]),
        with_deps(send_node(5, dst=3, size=10_000), data=[3], ctrl=[4]),
    ]
    write_trace(tmp_path / "t.2.et", nodes)
    write_trace(tmp_path / "t.3.et", [recv_node(1, src=2, size=10_000)])
    res = fabricsim.run(scenario(tmp_path), engine=engine)
    f = res.flows.set_index(["src", "dst"])
    long_done, short_done = (
        f.loc[("host0", "host2"), "finish_s"],
        f.loc[("host1", "host2"), "finish_s"],
    )
    expected = max(long_done + 300e-6, short_done + 2000e-6)
    assert short_done + 2000e-6 > long_done + 300e-6  # the short message's gap decides
    assert f.loc[("host2", "host3"), "start_s"] == pytest.approx(expected, abs=2 * PS)


@pytest.mark.parametrize("engine", ENGINES)
def test_compute_longer_than_the_automatic_time_limit_margin_still_completes(tmp_path, engine):
    """Two seconds of compute: past the flow engine's 1 s margin and the packet engine's
    1 ms; the limit adds the gaps, so the reply is not cut."""
    res = fabricsim.run(scenario(ping_pong(tmp_path, 2_000_000)), engine=engine)
    assert res.summary["flows_completed"] == 2
    assert res.summary["time_limit_reached"] is False
    assert res.summary["iteration_time_s"] > 2.0


@pytest.mark.parametrize("engine", ENGINES)
def test_compute_scale_stretches_the_gaps(tmp_path, engine):
    res = fabricsim.run(scenario(ping_pong(tmp_path, 700), compute_scale=2.0), engine=engine)
    f = res.flows
    assert f["start_s"][1] == pytest.approx(f["finish_s"][0] + 1400e-6, abs=2 * PS)


def test_flow_table_refuses_gaps_that_are_not_times():
    from fabricsim.errors import ConfigError
    from fabricsim.workloads.base import FlowTable

    sc = fabricsim.load_scenario("ecmp-collision")
    cols = ([0, 1], [8, 9], [100, 100], [0.0, 0.0])
    table = FlowTable.build(sc, *cols, depends_on=[[], [0]], gap_s=[[], [0.5]])
    assert table.gaps_bound_s() == 0.5
    with pytest.raises(ConfigError, match="flow 1 waits nan s after a dependency"):
        FlowTable.build(sc, *cols, depends_on=[[], [0]], gap_s=[[], [float("nan")]])
    with pytest.raises(ValueError, match="one gap per dependency"):
        FlowTable.build(sc, *cols, gap_s=[[], [0.5]])
