"""Collectives as NCCL runs them: operations, algorithms, channels, servers, size sweeps."""

import numpy as np
import pytest

import fabricsim
from fabricsim.errors import ConfigError
from fabricsim.workloads.collective import collective_flows, ring_order

BASE = {
    "topology": {
        "kind": "leaf_spine",
        "leaves": 2,
        "spines": 8,
        "hosts_per_leaf": 8,
        "link_gbps": 100,
    },
    "workload": {"kind": "collective", "op": "ring_allreduce", "size_bytes": 64 * 2**20},
    "nic": {"packet_spraying_type": "none"},
}

RAILS = {
    "topology": {
        "kind": "rail_optimized",
        "servers": 4,
        "rails": 4,
        "spines": 2,
        "link_gbps": 100,
        "pxn": True,
    },
    "nic": {"packet_spraying_type": "none"},
}


def _wl(base, **wl):
    return {**base, "workload": {"kind": "collective", **wl}}


def test_ring_allreduce_is_all_reduce_with_ring():
    old = fabricsim.run(BASE, engine="flow")
    new = fabricsim.run(_wl(BASE, op="all_reduce", size_bytes=64 * 2**20), engine="flow")
    cols = ["src", "dst", "size_bytes", "start_s", "finish_s", "step"]
    assert old.flows[cols].equals(new.flows[cols])
    assert old.summary["busbw_gbps"] == new.summary["busbw_gbps"]


def test_collective_flows_entry_point():
    c = collective_flows("all_reduce", None, np.array([3, 5, 7, 9]), 4000, 2)
    assert len(c) == 2 * 2 * 3 * 4 and int(c.size_bytes.sum()) == 2 * 3 * 4000
    assert set(c.src) == {3, 5, 7, 9}
    # first: flows waiting for no earlier flow of their sender; last: nothing waits for them
    assert all(not c.depends_on[i] for i in c.first)
    waited = {d for dep in c.depends_on for d in dep}
    assert set(c.last) == set(range(len(c))) - waited
    assert all(d < i for i, dep in enumerate(c.depends_on) for d in dep)
    b = collective_flows("broadcast", "ring", np.arange(4), 4 * 2**20, root=2, chunk_bytes=2**20)
    assert list(b.src[b.first]) == [2, 3, 0]  # the chain starts at the root: piece 0 per hop
    with pytest.raises(ConfigError, match="workload.algorithm: all_gather runs with ring"):
        collective_flows("all_gather", "tree", np.arange(4), 100)


def test_bus_bandwidth_factors_per_operation():
    """nccl-tests' busbw / algbw: 2(n-1)/n, (n-1)/n, 1 (broadcast, reduce, send_recv)."""
    n = 16
    for op, factor in [
        ("all_reduce", 2 * (n - 1) / n),
        ("all_gather", (n - 1) / n),
        ("reduce_scatter", (n - 1) / n),
        ("all_to_all", (n - 1) / n),
        ("broadcast", 1.0),
        ("reduce", 1.0),
        ("send_recv", 1.0),
    ]:
        s = fabricsim.run(_wl(BASE, op=op, size_bytes=2**20), engine="flow").summary
        assert s["busbw_gbps"] == pytest.approx(s["algbw_gbps"] * factor, rel=1e-12), op


def test_size_sweep_runs_sizes_one_after_another():
    sizes = [2**20, 2**21, 2**22]
    res = fabricsim.run(_wl(BASE, op="all_gather", sizes="1MiB..4MiB"), engine="flow")
    table = res.tables["collective_sizes"]
    assert table["size_bytes"].tolist() == sizes
    assert table["count"].tolist() == [s // 4 // 16 for s in sizes]  # per rank, float elements
    f = res.flows
    for k in (1, 2):
        assert f["start_s"][f["size_index"] == k].min() == pytest.approx(
            f["finish_s"][f["size_index"] == k - 1].max(), abs=1e-15
        )
    # each size of the sweep takes the time it takes alone
    alone = fabricsim.run(_wl(BASE, op="all_gather", size_bytes=2**21), engine="flow")
    assert table["time_us"][1] * 1e-6 == pytest.approx(alone.summary["collective_time_s"], rel=1e-9)
    assert res.summary["collective_time_s"] == pytest.approx(table["time_us"][2] * 1e-6)
    # steps continue over the sizes: 15 per all_gather, so step analyses see 45 steps
    steps = res.tables["collective_steps"]
    assert steps["step"].tolist() == list(range(45))
    assert steps["size_bytes"].tolist() == [s for s in sizes for _ in range(15)]
    assert f.groupby("step")["size_index"].nunique().max() == 1
    assert table["busbw_GBps"][2] == pytest.approx(res.summary["busbw_gbps"] / 8)


def test_steps_table_has_link_utilization_per_step():
    res = fabricsim.run(BASE, engine="flow")
    steps = res.tables["collective_steps"]
    assert len(steps) == 30 and steps["step"].tolist() == list(range(30))
    assert (steps["link_util_max"] <= 1 + 1e-9).all() and (steps["link_util_max"] > 0.5).all()
    assert (steps["efficiency"] <= 1 + 1e-9).all()
    assert res.summary["step_efficiency_min"] == pytest.approx(steps["efficiency"].min())


def test_channels_leave_servers_by_their_rail():
    """Channel k's ring leaves each server from GPU k-1 for the next server's GPU k; with PXN
    every inter-server hop then stays on rail k's leaf (no spine)."""
    assert ring_order(np.arange(8), 1, 4).tolist() == [1, 2, 3, 0, 5, 6, 7, 4]
    res = fabricsim.run(_wl(RAILS, op="all_gather", size_bytes=2**20, channels=4), engine="flow")
    f = res.flows
    src = f["src"].str[4:].astype(int)
    dst = f["dst"].str[4:].astype(int)
    cross = (src // 4) != (dst // 4)
    ch = f["channel"][cross]
    assert ((dst[cross] % 4) == ch).all() and ((src[cross] % 4) == (ch - 1) % 4).all()
    assert not f["path"].str.contains("spine").any()


def test_hierarchical_all_reduce_runs_in_three_phases():
    res = fabricsim.run(
        _wl(RAILS, op="all_reduce", size_bytes=4 * 2**20, hierarchical=True), engine="flow"
    )
    f = res.flows
    src = f["src"].str[4:].astype(int)
    dst = f["dst"].str[4:].astype(int)
    inside = (src // 4) == (dst // 4)
    assert inside[f["phase"] != 1].all() and not inside[f["phase"] == 1].any()
    assert ((src % 4) == (dst % 4))[f["phase"] == 1].all()  # across servers: one rail each
    for a, b in ((0, 1), (1, 2)):
        assert f["start_s"][f["phase"] == b].min() >= f["finish_s"][f["phase"] == a].min()
    assert res.summary["bytes_conserved"] is True
    # per GPU: 2 x (3/4) x S inside, 2 x (3/4) x S/4 across (ring all_reduce of S/4)
    per_gpu = f.groupby("src")["size_bytes"].sum()
    assert (per_gpu == 2 * 3 * 2**20 + 2 * 3 * 2**18).all()


@pytest.mark.parametrize(
    "wl,msg",
    [
        ({"op": "all_gather", "algorithm": "tree"}, "all_gather runs with ring"),
        ({"op": "ring_allreduce", "algorithm": "tree"}, "use op all_reduce for tree"),
        ({"sizes": "1MB..8MB", "size_bytes": 100}, "not both"),
        ({"sizes": "8MB..1MB"}, "A <= B"),
        ({"sizes": "1MB-8MB"}, "write A..B"),
        ({"sizes": ["4MB", "x"]}, "a size in bytes"),
        ({"op": "send_recv", "hierarchical": True}, "point-to-point"),
    ],
)
def test_bad_collective_config_is_one_line(wl, msg):
    with pytest.raises(ConfigError, match=msg) as err:
        fabricsim.load_scenario(_wl(BASE, **wl))
    assert "\n" not in str(err.value)


def test_hierarchical_needs_servers_and_root_a_rank():
    with pytest.raises(ConfigError, match="workload.hierarchical: needs ranks in servers"):
        fabricsim.run(_wl(BASE, op="all_reduce", size_bytes=2**20, hierarchical=True))
    with pytest.raises(ConfigError, match="workload.root: a rank index in 0..15"):
        fabricsim.run(_wl(BASE, op="broadcast", size_bytes=2**20, root=16))


def test_cli_prints_the_nccl_tests_table(capsys, tmp_path):
    from fabricsim.cli import main

    sweep = "examples/collective-sweep.yaml"
    code = main(["run", sweep, "--out", str(tmp_path / "r"), "--set", "workload.sizes=1MiB..2MiB"])
    out = capsys.readouterr().out
    assert code == 0
    assert "busbw (GB/s)" in out and "1048576" in out and "2097152" in out
    assert (tmp_path / "r" / "collective_sizes.parquet").exists()
    assert (tmp_path / "r" / "collective_steps.parquet").exists()
    code = main(
        ["run", sweep, "--out", str(tmp_path / "b"), "--set", "workload.algorithm=pairwise"]
    )
    err = capsys.readouterr().err
    assert code == 2 and "all_reduce runs with ring, tree" in err and len(err.splitlines()) == 1


def test_ecmp_collisions_show_in_the_step_efficiency():
    """A ring over ranks alternating between the leaves: every step hashes 8 flows onto each
    leaf's 8 uplinks; ideal spraying keeps the steps at their NIC bound (the verify script
    runs 20 seeds: ECMP 0.350 [0.343, 0.358], spraying 0.945)."""
    shuffled = [0, 9, 2, 11, 4, 13, 6, 15, 8, 1, 10, 3, 12, 5, 14, 7]
    wl = {"op": "all_reduce", "size_bytes": 16 * 2**20, "hosts": shuffled}
    ecmp = fabricsim.run(_wl(BASE, **wl), engine="flow").summary
    spray = fabricsim.run({**_wl(BASE, **wl), "lb": {"policy": "ideal_spray"}}, engine="flow")
    assert spray.summary["step_efficiency_min"] > 0.9
    assert ecmp["step_efficiency_mean"] < 0.7 * spray.summary["step_efficiency_mean"]
    assert ecmp["busbw_gbps"] < spray.summary["busbw_gbps"]


@pytest.mark.parametrize(
    "wl",
    [
        {"op": "all_reduce", "algorithm": "tree", "channels": 2},
        {"op": "broadcast", "algorithm": "tree"},
        {"op": "reduce"},
        {"op": "all_to_all", "algorithm": "pairwise"},
        {"op": "send_recv", "channels": 3},
        {"op": "all_gather", "sizes": "1MiB..8MiB"},
        {"op": "all_reduce", "hierarchical": True},
    ],
)
def test_budget_terms_count_the_flows_and_bytes(wl):
    """The memory budget's flows and bytes from the config alone: exact for a flat
    collective, an upper bound for a hierarchical one."""
    from types import SimpleNamespace

    from fabricsim.experiments.runner import fabric_of
    from fabricsim.workloads import generate
    from fabricsim.workloads.collective import collective_load

    sc = fabricsim.load_scenario(_wl(RAILS, size_bytes=8 * 2**20, **wl) if "sizes" not in wl
                                 else _wl(RAILS, **wl))  # fmt: skip
    table = generate(sc, fabric_of(sc))
    est = collective_load(sc.workload, SimpleNamespace(hosts=16, leaves=4))
    if wl.get("hierarchical"):
        assert len(table) <= est.flows and table.size_bytes.sum() <= est.bytes_total
    else:
        assert (len(table), int(table.size_bytes.sum())) == (est.flows, int(est.bytes_total))


@pytest.mark.parametrize("channels", [1, 3])
@pytest.mark.parametrize(
    "op,algo",
    [
        ("all_reduce", "ring"),
        ("all_reduce", "tree"),
        ("all_gather", "ring"),
        ("reduce_scatter", "ring"),
        ("broadcast", "ring"),
        ("broadcast", "tree"),
        ("reduce", "ring"),
        ("reduce", "tree"),
        ("all_to_all", "direct"),
        ("all_to_all", "pairwise"),
        ("send_recv", "ring"),
    ],
)
def test_every_rank_moves_the_bytes_of_its_operation(op, algo, channels):
    """Per rank, bytes sent and received as the operation needs (a size that splits unevenly
    over ranks, channels and pieces: the parts differ by one byte, none is lost)."""
    n, size, root = 6, 6_000_006, 4
    ranks = np.array([10, 11, 12, 13, 14, 15])
    c = collective_flows(op, algo, ranks, size, channels, root=root, chunk_bytes=700_000)
    sent = {int(r): int(c.size_bytes[c.src == r].sum()) for r in ranks}
    got = {int(r): int(c.size_bytes[c.dst == r].sum()) for r in ranks}
    top = int(ranks[root])
    if op == "broadcast":
        assert got == {int(r): 0 if r == top else size for r in ranks}
    elif op == "reduce":
        assert sent == {int(r): 0 if r == top else size for r in ranks}
    elif op == "send_recv":
        assert set(sent.values()) == set(got.values()) == {size}
    elif op == "all_reduce" and algo == "tree":  # each half up and down: 2 S through a rank
        assert sum(sent.values()) == sum(got.values()) == 2 * (n - 1) * size
    else:
        factor = 2 if op == "all_reduce" else 1
        for r in ranks:  # (n-1)/n of S (twice for all_reduce), to within one byte per part
            assert abs(sent[int(r)] - factor * (n - 1) * size / n) <= factor * n * channels
            assert abs(got[int(r)] - factor * (n - 1) * size / n) <= factor * n * channels
    assert all(d < i for i, dep in enumerate(c.depends_on) for d in dep)
    assert set(c.channel.tolist()) == set(range(channels))


def test_packet_engine_runs_the_dag_hierarchical_and_swept():
    """Both engines run the same DAG: a hierarchical all-reduce on a PXN rail fabric swept over
    two sizes; every message starts when its dependencies delivered, sizes one after another."""
    sc = fabricsim.load_scenario(
        _wl(RAILS, op="all_reduce", sizes=[2**18, 2**19], hierarchical=True, channels=2)
    )
    flow = fabricsim.run(sc, engine="flow")
    pkt = fabricsim.run(sc, engine="packet")
    deps = fabricsim.workloads.generate(sc, fabricsim.experiments.runner.fabric_of(sc)).depends_on
    f = pkt.flows
    finish, start = f["finish_s"].to_numpy(), f["start_s"].to_numpy()
    assert not np.isnan(finish).any()
    for i, dep in enumerate(deps):
        if dep:
            assert start[i] == pytest.approx(finish[dep].max(), abs=1e-12)
    t_flow = flow.tables["collective_sizes"]["time_us"].to_numpy()
    t_pkt = pkt.tables["collective_sizes"]["time_us"].to_numpy()
    # within 10 %: two channels' small messages share a NIC packet by packet (the packet
    # engine) or as fluid flows that each pay the last packet's pipeline delay (the flow engine)
    assert np.all(np.abs(t_pkt / t_flow - 1) < 0.1), (t_flow, t_pkt)
    assert len(pkt.tables["collective_steps"]) == len(flow.tables["collective_steps"])


def test_collective_tables_are_saved_and_read_back(tmp_path):
    res = fabricsim.run(_wl(BASE, op="reduce_scatter", sizes=[2**20, 2**21]), engine="flow")
    res.save(tmp_path / "r")
    back = fabricsim.load_run(tmp_path / "r")
    for name in ("collective_sizes", "collective_steps"):
        assert back.tables[name].equals(res.tables[name])
    assert back.flows["size_index"].tolist() == res.flows["size_index"].tolist()


def test_a_later_layer_sets_the_size_or_the_sweep(tmp_path):
    """``workload.size_bytes`` and ``workload.sizes`` are alternatives across layers: a saved
    sweep's config.yaml reruns with another sweep or with one size."""
    res = fabricsim.run(_wl(BASE, op="all_gather", sizes="1MiB..2MiB"), engine="flow")
    res.save(tmp_path / "r")
    saved = fabricsim.load_scenario(tmp_path / "r" / "config.yaml")
    assert saved.workload.size_list == [2**20, 2**21] and saved.workload.size_bytes == 2**21
    sweep = saved.with_overrides({"workload.sizes": "4MiB..8MiB"}).workload
    assert sweep.size_list == [4 * 2**20, 8 * 2**20]
    one = saved.with_overrides({"workload.size_bytes": 3 * 2**20}).workload
    assert one.sizes is None and one.size_list == [3 * 2**20]
