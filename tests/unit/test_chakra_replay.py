"""``workload.kind: chakra``: traces replayed with their dependencies, the timeline, and one
line for each kind of bad trace."""

from __future__ import annotations

import json

import numpy as np
import pytest

import fabricsim
from fabricsim.errors import ConfigError
from fabricsim.experiments.runner import fabric_of
from fabricsim.workloads import generate
from fabricsim.workloads.chakra import (
    all_to_all_node,
    compute_node,
    recv_node,
    send_node,
    write_trace,
)
from fabricsim.workloads.chakra_replay import collective_messages
from fabricsim.workloads.chakra_traces import (
    all_reduce_node,
    moe_layer_traces,
    training_step_traces,
    with_deps,
)

TOPOLOGY = {"kind": "leaf_spine", "leaves": 2, "spines": 4, "hosts_per_leaf": 4, "link_gbps": 100}


def scenario(path, **workload) -> dict:
    wl = {"kind": "chakra", "path": str(path), "gpus_per_server": 1, **workload}
    return {"topology": TOPOLOGY, "workload": wl, "nic": {"packet_spraying_type": "none"}}


def step(tmp_path, **kw):
    args = {"ranks": 8, "gpus_per_server": 1, "layers": 2, "bucket_bytes": 256 * 1024, **kw}
    training_step_traces(tmp_path, **args)
    return tmp_path


def nodes_of(res, rank=0):
    t = res.tables["chakra_timeline"]
    return t[t["rank"] == rank].set_index("name")


# -- the replay -------------------------------------------------------------------------------
@pytest.fixture
def step_run(tmp_path):
    return fabricsim.run(scenario(step(tmp_path, backward_us=400)), engine="flow")


def test_the_training_step_replays_in_dependency_order(step_run):
    t = nodes_of(step_run)
    for i in range(2):  # forward 0, 1; backward 1, 0; all-reduce i after backward i
        assert t.loc[f"all_reduce_grad_{i}", "start_s"] == pytest.approx(
            t.loc[f"backward_{i}", "finish_s"]
        )
    assert t.loc["backward_1", "start_s"] == pytest.approx(t.loc["forward_1", "finish_s"])
    assert t.loc["backward_0", "start_s"] == pytest.approx(t.loc["backward_1", "finish_s"])
    # the first all-reduce runs while backward_0 computes: they overlap
    assert t.loc["all_reduce_grad_1", "start_s"] < t.loc["backward_0", "finish_s"]
    last = max(t.loc["all_reduce_grad_0", "finish_s"], t.loc["all_reduce_grad_1", "finish_s"])
    assert t.loc["optimizer", "start_s"] == pytest.approx(last)
    assert step_run.summary["iteration_time_s"] == pytest.approx(
        step_run.tables["chakra_timeline"]["finish_s"].max()
    )


def test_exposed_communication_is_the_all_reduce_time_no_compute_hides(step_run):
    """The 400 us backward layer hides the first all-reduce (~50 us) whole; the last one runs
    alone before the optimizer: that is every rank's exposed communication."""
    for rank in range(8):
        t = nodes_of(step_run, rank)
        assert t.loc["all_reduce_grad_1", "duration_s"] < 400e-6
        ranks = step_run.tables["chakra_ranks"].set_index("rank")
        assert ranks.loc[rank, "exposed_comm_s"] == pytest.approx(
            t.loc["all_reduce_grad_0", "duration_s"]
        )
    assert step_run.summary["exposed_comm_s"] == pytest.approx(
        step_run.tables["chakra_ranks"]["exposed_comm_s"].max()
    )
    assert step_run.summary["compute_s"] == pytest.approx((2 * 250 + 2 * 400 + 200) * 1e-6)


def test_without_compute_the_step_is_its_communication(tmp_path):
    res = fabricsim.run(scenario(step(tmp_path), compute_scale=0.0), engine="flow")
    s = res.summary
    assert s["compute_s"] == 0.0
    assert s["exposed_comm_s"] == pytest.approx(s["iteration_time_s"])


def test_a_ring_all_reduce_of_the_trace_is_the_collectives_ring(tmp_path):
    """The replay's flows of one all-reduce are the collective module's ring (the adapter)."""
    training_step_traces(tmp_path, ranks=8, gpus_per_server=1, layers=1, bucket_bytes=80_000)
    sc = fabricsim.load_scenario(scenario(tmp_path))
    flows = generate(sc, fabric_of(sc))
    src, dst, size, deps = collective_messages("all_reduce", list(range(8)), 80_000)
    assert len(flows) == 2 * 7 * 8 == len(src)
    assert np.array_equal(flows.src, src) and np.array_equal(flows.dst, dst)
    assert np.array_equal(flows.size_bytes, size)
    assert flows.depends_on[8:] == [sorted(d) for d in deps[8:]]  # the ring's previous step
    assert all(g == 0.0 for gaps in flows.gap_s for g in gaps)
    assert flows.start_s[:8].tolist() == [250e-6 + 500e-6] * 8  # after forward and backward


def test_send_recv_pairs_and_intra_server_messages_cross_nvlink(tmp_path):
    """Rank 0 -> 1 stays in the server (NVLink, 1 MB at 8 Gbps = 1 ms); rank 1 -> 4 crosses
    the fabric after it."""
    write_trace(tmp_path / "t.0.et", [send_node(1, dst=1, size=1_000_000)])
    nodes = [recv_node(1, src=0, size=1_000_000), with_deps(send_node(2, 4, 50_000), [1])]
    write_trace(tmp_path / "t.1.et", nodes)
    for r in (2, 3, 5, 6, 7):
        write_trace(tmp_path / f"t.{r}.et", [compute_node(1, 1)])
    write_trace(tmp_path / "t.4.et", [recv_node(1, src=1, size=50_000)])
    res = fabricsim.run(scenario(tmp_path, gpus_per_server=4, nvlink_gbps=8), engine="flow")
    f = res.flows
    assert len(f) == 1 and (f["src"][0], f["dst"][0]) == ("host1", "host4")
    assert f["start_s"][0] == pytest.approx(1e-3)
    assert f["chakra_node"][0] == 2
    t = res.tables["chakra_timeline"].set_index(["rank", "node_id"])
    assert t.loc[(1, 1), "finish_s"] == pytest.approx(1e-3)  # the receive of the NVLink message


def test_all_to_all_ranks_send_their_own_share_to_each_member(tmp_path):
    for r in range(8):
        write_trace(tmp_path / f"a.{r}.et", [all_to_all_node(1, size=8_000 * (r + 1))])
    sc = fabricsim.load_scenario(scenario(tmp_path))
    flows = generate(sc, fabric_of(sc))
    assert len(flows) == 8 * 7
    for r in range(8):
        assert set(flows.size_bytes[flows.src == r]) == {1_000 * (r + 1)}


def test_same_seed_same_outputs_and_moe_example_runs(tmp_path):
    moe_layer_traces(tmp_path, ranks=8, layers=1, dispatch_bytes=64_000)
    a = fabricsim.run(scenario(tmp_path), engine="flow")
    b = fabricsim.run(scenario(tmp_path), engine="flow")
    assert json.dumps(a.summary, sort_keys=True) == json.dumps(b.summary, sort_keys=True)
    assert a.tables["chakra_timeline"].equals(b.tables["chakra_timeline"])
    assert a.summary["iteration_time_s"] > (150 + 20 + 300) * 1e-6
    assert set(a.tables["chakra_timeline"]["kind"]) == {"compute", "all_to_all"}


def test_the_timeline_tables_are_written(tmp_path):
    res = fabricsim.run(scenario(step(tmp_path / "t")), engine="flow")
    res.save(tmp_path / "out")
    names = {p.name for p in (tmp_path / "out").iterdir()}
    assert {"chakra_timeline.parquet", "chakra_ranks.parquet"} <= names
    back = fabricsim.load_run(tmp_path / "out")
    assert list(back.tables["chakra_timeline"].columns) == [
        "rank", "node_id", "name", "kind", "start_s", "finish_s", "duration_s"
    ]  # fmt: skip
    assert len(back.tables["chakra_ranks"]) == 8


# -- bad traces: one line each ----------------------------------------------------------------
def refused(tmp_path, **workload) -> str:
    with pytest.raises(ConfigError) as exc:
        sc = fabricsim.load_scenario(scenario(tmp_path, **workload))
        generate(sc, fabric_of(sc))
    text = str(exc.value)
    assert "\n" not in text
    return text


def two_ranks(tmp_path, nodes0, nodes1=None):
    write_trace(tmp_path / "t.0.et", nodes0)
    write_trace(tmp_path / "t.1.et", nodes1 or [recv_node(1, src=0, size=100)])
    return tmp_path


def test_a_dependency_cycle_is_refused_naming_its_nodes(tmp_path):
    nodes = [
        with_deps(compute_node(1, name="a"), data=[3]),
        with_deps(compute_node(2, name="b"), data=[1]),
        with_deps(send_node(3, dst=1, size=100, name="c"), ctrl=[2]),
    ]
    text = refused(two_ranks(tmp_path, nodes))
    assert text.startswith("workload.path: t.0.et: dependency cycle: node ")
    for name in ("(a)", "(b)", "(c)"):
        assert name in text


def test_ranks_waiting_on_each_other_are_a_cycle_through_messages(tmp_path):
    """Each rank receives before it sends: a deadlock."""
    r0 = [recv_node(1, src=1, size=100, name="r0"), with_deps(send_node(2, 1, 100), [1])]
    r1 = [recv_node(1, src=0, size=100, name="r1"), with_deps(send_node(2, 0, 100), [1])]
    text = refused(two_ranks(tmp_path, r0, r1))
    assert text.startswith("workload.path: the ranks wait on each other")
    assert "rank 0 node" in text and "rank 1 node" in text


def test_a_missing_parent_is_refused(tmp_path):
    text = refused(two_ranks(tmp_path, [with_deps(send_node(1, dst=1, size=10), ctrl=[9])]))
    assert text == (
        "workload.path: t.0.et: node 1 (send) names parent 9 in ctrl_deps, which is not a node "
        "of that file"
    )


def test_more_ranks_than_hosts_names_the_fabric_it_needs(tmp_path):
    for r in range(12):
        write_trace(tmp_path / f"t.{r}.et", [send_node(1, dst=(r + 1) % 12, size=10)])
    text = refused(tmp_path)
    assert "the trace has 12 ranks" in text and "the fabric has 8 hosts" in text
    assert "it needs a fabric of at least 12 hosts" in text


def test_a_text_file_given_as_et_says_which_key_reads_what(tmp_path):
    (tmp_path / "t.0.et").write_text("src,dst,size_bytes,start_s\n0,1,100,0\n")
    (tmp_path / "t.1.et").write_text("src,dst,size_bytes,start_s\n1,0,100,0\n")
    text = refused(tmp_path)
    assert text == (
        "workload.path: t.0.et is text, not a Chakra execution trace (binary protobuf); a CSV "
        "or Parquet message table is read by workload.kind: trace"
    )


def test_an_et_file_given_as_a_message_table_names_the_key_that_reads_it(tmp_path):
    """It used to be 'byte 0x.. is not UTF-8 text'."""
    two_ranks(tmp_path, [send_node(1, dst=1, size=100_000)])
    with pytest.raises(ConfigError) as exc:
        sc = fabricsim.load_scenario(
            {"topology": TOPOLOGY, "workload": {"kind": "trace", "path": str(tmp_path / "t.0.et")}}
        )
        generate(sc, fabric_of(sc))
    assert str(exc.value).startswith(
        "workload.path: t.0.et is a Chakra execution trace, not text; Chakra traces are read "
        "by workload.kind: chakra"
    )


def test_all_ranks_in_one_server_hints_at_gpus_per_server(tmp_path):
    text = refused(two_ranks(tmp_path, [send_node(1, dst=1, size=100)]), gpus_per_server=8)
    assert text.startswith("workload.gpus_per_server: all 2 ranks of the trace sit in one server")
    assert "set workload.gpus_per_server below 2" in text


def test_an_unreplayed_collective_and_mismatched_collectives_are_refused(tmp_path):
    node = all_to_all_node(1, size=100)
    node.attr[0].int64_val = 9  # BARRIER
    assert (
        "is a BARRIER collective; the replay runs ALL_GATHER, ALL_REDUCE, ALL_TO_ALL, "
        "BROADCAST, REDUCE, REDUCE_SCATTER, REDUCE_SCATTER_BLOCK"
    ) in refused(two_ranks(tmp_path, [node]))
    del node.attr[0]
    assert "is a collective without a comm_type attribute" in refused(two_ranks(tmp_path, [node]))
    text = refused(two_ranks(tmp_path, [all_reduce_node(1, 100)], [all_reduce_node(1, 200)]))
    assert "are one collective" in text and "all_reduce of 100 bytes" in text
    text = refused(two_ranks(tmp_path, [all_reduce_node(1, 100)], [compute_node(1)]))
    assert "rank 0 runs 1 collectives in it but rank 1 runs 0" in text


def test_the_cli_refuses_a_bad_trace_in_one_line_and_writes_nothing(tmp_path, capsys):
    from fabricsim.cli import main

    (tmp_path / "t").mkdir()
    two_ranks(tmp_path / "t", [with_deps(send_node(1, dst=1, size=10), ctrl=[9])])
    yaml_path = tmp_path / "s.yaml"
    yaml_path.write_text(
        "topology: {kind: leaf_spine, leaves: 2, spines: 2, hosts_per_leaf: 2, link_gbps: 100}\n"
        "workload: {kind: chakra, path: t, gpus_per_server: 1}\n"
    )
    out = tmp_path / "out"
    assert main(["run", str(yaml_path), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "names parent 9 in ctrl_deps" in err
    assert "Traceback" not in err and not out.exists()


@pytest.mark.parametrize(
    ("ctype", "op"), [(2, "all_gather"), (5, "broadcast"), (7, "reduce_scatter")]
)
def test_every_replayed_collective_is_the_collectives_own_dag(tmp_path, ctype, op):
    """A collective node of each type runs as ``collective_flows`` runs the operation."""
    nodes = []
    for _ in range(2):
        node = all_to_all_node(1, size=400_000)
        node.attr[0].int64_val = ctype
        nodes.append(node)
    sc = fabricsim.load_scenario(scenario(two_ranks(tmp_path, [nodes[0]], [nodes[1]])))
    flows = generate(sc, fabric_of(sc))
    src, dst, size, deps = collective_messages(op, [0, 1], 400_000)
    assert np.array_equal(flows.src, src) and np.array_equal(flows.size_bytes, size)
    assert len(flows) > 0
