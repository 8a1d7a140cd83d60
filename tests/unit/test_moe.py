"""MoE dispatch: demand matrices, the rate-based normalization, the workload and its summary."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import fabricsim
from fabricsim.errors import ConfigError
from fabricsim.experiments.runner import fabric_of
from fabricsim.workloads import generate
from fabricsim.workloads.moe import (
    PRESETS,
    check_matrix,
    expert_gpu,
    expert_popularity,
    flow_pacing_bps,
    normalization_factor,
    normalized_rates,
    pure_zipf_matrix,
    remove_intra_server,
    sample_top_k,
    token_matrix,
    wire_bytes_array,
)

PAPER_D = np.array([[0, 1000, 2000], [800, 0, 2000], [2000, 1000, 0]], dtype=float)


def moe_scenario(hosts: int = 16, leaves: int = 2, **workload) -> fabricsim.Scenario:
    wl = {"kind": "moe", "matrix": "zipf", "tokens_per_gpu": 64, "gpus_per_server": 4, **workload}
    return fabricsim.load_scenario(
        {
            "topology": {
                "kind": "leaf_spine",
                "leaves": leaves,
                "spines": 4,
                "hosts_per_leaf": hosts // leaves,
                "link_gbps": 400,
            },
            "workload": wl,
            "nic": {"packet_spraying_type": "none"},
        }
    )


# -- the paper's example and the normalization -----------------------------------------------
def test_paper_example_m_and_r():
    assert normalization_factor(PAPER_D) == 4000.0
    r = normalized_rates(PAPER_D)
    expected = [[0.0, 0.25, 0.5], [0.2, 0.0, 0.5], [0.5, 0.25, 0.0]]
    assert r.tolist() == expected
    assert r.sum(axis=0).max() == 1.0  # column 3 is the bottleneck receiver


@settings(max_examples=200, deadline=None)
@given(
    arrays(
        np.float64,
        st.tuples(st.integers(1, 12), st.integers(1, 12)),
        elements=st.floats(0, 1e12, allow_nan=False, allow_subnormal=False),
    )
)
def test_rates_rows_and_columns_at_most_one(d):
    n = max(d.shape)
    m = np.zeros((n, n))
    m[: d.shape[0], : d.shape[1]] = d
    if not m.any():
        with pytest.raises(ValueError):
            normalized_rates(m)
        return
    r = normalized_rates(m)
    sums = np.r_[r.sum(axis=1), r.sum(axis=0)]
    assert sums.max() <= 1 + 1e-12
    assert sums.max() == pytest.approx(1.0, rel=1e-12)
    assert (r >= 0).all()


@settings(max_examples=100, deadline=None)
@given(st.integers(2, 10), st.integers(0, 2**32 - 1))
def test_rates_with_mixed_port_speeds(n, seed):
    rng = np.random.default_rng(seed)
    d = rng.random((n, n)) * (rng.random((n, n)) < 0.7)
    d[0, 1] += 1.0
    send = rng.choice([200e9, 400e9, 800e9], n)
    recv = rng.choice([200e9, 400e9, 800e9], n)
    r = normalized_rates(d, (send, recv))
    out_use = r.sum(axis=1)  # fraction of each sender's own rate
    in_use = (r * send[:, None]).sum(axis=0) / recv  # fraction of each receiver's rate
    assert out_use.max() <= 1 + 1e-12 and in_use.max() <= 1 + 1e-12
    assert max(out_use.max(), in_use.max()) == pytest.approx(1.0, rel=1e-12)


def test_flow_pacing_matches_dense_rates_and_finishes_together():
    src, dst = np.nonzero(PAPER_D)
    wire = PAPER_D[src, dst]
    rates, m_s = flow_pacing_bps(src, dst, wire, np.full(3, 8.0), np.full(3, 8.0))
    assert m_s == pytest.approx(4000.0)  # 4000 bytes at 1 byte/s
    np.testing.assert_allclose(rates / 8.0, normalized_rates(PAPER_D)[src, dst])
    np.testing.assert_allclose(8 * wire / rates, m_s)  # every flow ends at M


# -- synthetic matrices ---------------------------------------------------------------------
def test_expert_popularity_is_zipf_and_shuffled():
    p = expert_popularity(8, 1.0)
    assert p.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(p[0] / p, np.arange(1, 9))
    q = expert_popularity(8, 1.0, np.random.default_rng(3))
    np.testing.assert_allclose(np.sort(q), np.sort(p))
    assert not np.allclose(q, p)
    np.testing.assert_allclose(expert_popularity(5, 0.0), 0.2)


def test_expert_gpu_blocks_even_with_fewer_experts_than_gpus():
    assert expert_gpu(4, 8).tolist() == [0, 2, 4, 6]
    assert np.bincount(expert_gpu(256, 32)).tolist() == [8] * 32


@pytest.mark.parametrize("s", [0.0, 0.5, 10.0])
def test_sample_top_k_distinct_and_follows_popularity(s):
    rng = np.random.default_rng(0)
    p = expert_popularity(16, s)
    picks = sample_top_k(rng, p, 20_000, 4)
    srt = np.sort(picks, axis=1)
    assert (np.diff(srt, axis=1) > 0).all()  # distinct experts per token
    first = np.bincount(picks[:, 0], minlength=16) / 20_000
    np.testing.assert_allclose(first, p, atol=0.015)


def test_token_sent_once_per_destination_gpu():
    shape = PRESETS["deepseek-v3"]
    rng = np.random.default_rng(1)
    # all 256 experts picked by every token: every GPU gets each token exactly once
    every = token_matrix(8, 10, type(shape)(16, 256, 256, 1), 0.5, rng)
    assert (every == 10).all()
    c = token_matrix(8, 100, shape, 0.5, rng)
    rows = c.sum(axis=1)
    assert (rows >= 100).all() and (rows <= 800).all()  # 1..8 GPUs per token
    assert rows.sum() < 8 * 100 * 8  # experts sharing a GPU are sent once


def test_remove_intra_server_and_pure_zipf():
    m, gone = remove_intra_server(np.arange(16.0).reshape(4, 4), 2)
    assert gone == 0 + 1 + 4 + 5 + 10 + 11 + 14 + 15
    assert m[0, 2] == 2 and m[1, 1] == 0
    d = pure_zipf_matrix(64, 1e6)
    np.testing.assert_allclose(d.sum(axis=1), 1e6)
    alpha = np.sum(1 / np.arange(1, 65))
    np.testing.assert_allclose(d.sum(axis=0), 64e6 / (np.arange(1, 65) * alpha))


# -- the workload ---------------------------------------------------------------------------
def test_zipf_workload_flows_are_inter_server_and_deterministic():
    sc = moe_scenario(model="qwen3-235b")
    flows = generate(sc, fabric_of(sc))
    assert (flows.src // 4 != flows.dst // 4).all()
    assert (flows.size_bytes % (4096 * 2) == 0).all()  # whole Qwen3 tokens
    again = generate(sc, fabric_of(sc))
    np.testing.assert_array_equal(flows.size_bytes, again.size_bytes)
    other = generate(sc.with_overrides({"seed": 2}), fabric_of(sc))
    assert not np.array_equal(flows.size_bytes, other.size_bytes)
    assert flows.meta["moe"]["nvlink_bytes"] > 0
    assert "rate_cap_bps" not in flows.extra


def test_shape_fields_override_the_preset():
    sc = moe_scenario(model="deepseek-v3", hidden_size=1000, bytes_per_element=2)
    flows = generate(sc, fabric_of(sc))
    assert (flows.size_bytes % 2000 == 0).all()
    assert flows.meta["moe"]["token_bytes"] == 2000 and flows.meta["moe"]["experts"] == 256


def test_rate_based_caps_fill_the_busiest_port_exactly():
    sc = moe_scenario(scheduler="rate_based")
    flows = generate(sc, fabric_of(sc))
    caps = flows.extra["rate_cap_bps"]
    wire = wire_bytes_array(flows.size_bytes, 4096, 88)
    out_use = np.bincount(flows.src, weights=caps, minlength=16) / 400e9
    in_use = np.bincount(flows.dst, weights=caps, minlength=16) / 400e9
    assert max(out_use.max(), in_use.max()) == pytest.approx(1.0)
    np.testing.assert_allclose(8 * wire / caps, flows.meta["moe"]["m_s"])


def test_pure_zipf_is_bipartite():
    sc = moe_scenario(hosts=16, leaves=1, matrix="pure_zipf", total_bytes_per_sender=100_000)
    flows = generate(sc, fabric_of(sc))
    assert (
        len(flows) == 64 and set(flows.src) == set(range(8)) and set(flows.dst) == set(range(8, 16))
    )
    assert flows.size_bytes[flows.src == 0].sum() == pytest.approx(100_000, abs=8)


# -- files and errors -----------------------------------------------------------------------
def test_csv_npy_and_token_units(tmp_path):
    d = np.zeros((16, 16))
    d[0, 5], d[3, 12], d[1, 2] = 1000, 2000, 7  # (1, 2) is intra-server: removed
    np.savetxt(tmp_path / "m.csv", d, delimiter=",")
    np.save(tmp_path / "m.npy", d)
    for name, units, scale in (("m.csv", "bytes", 1), ("m.npy", "tokens", 7168)):
        sc = moe_scenario(matrix="file", path=str(tmp_path / name), units=units)
        flows = generate(sc, fabric_of(sc))
        assert sorted(flows.size_bytes.tolist()) == [1000 * scale, 2000 * scale]


@pytest.mark.parametrize(
    ("matrix", "message"),
    [
        (np.ones((4, 5)), "square"),
        (np.array([[0, -1.0], [1, 0]]), "negative"),
        (np.array([[0, np.nan], [1, 0]]), "finite"),
        (np.zeros((3, 3)), "all zeros"),
    ],
)
def test_check_matrix_rejects(matrix, message):
    with pytest.raises(ConfigError, match=message):
        check_matrix(matrix)


def test_matrix_of_the_wrong_size_and_unreadable_files(tmp_path):
    np.save(tmp_path / "m.npy", np.ones((8, 8)))
    sc = moe_scenario(matrix="file", path=str(tmp_path / "m.npy"))
    with pytest.raises(ConfigError, match="8 x 8 but the fabric/workload has 16"):
        generate(sc, fabric_of(sc))
    (tmp_path / "bad.csv").write_text("1,2\nx,y\n")
    sc = moe_scenario(matrix="file", path=str(tmp_path / "bad.csv"))
    with pytest.raises(ConfigError, match="cannot read bad.csv"):
        generate(sc, fabric_of(sc))
    with pytest.raises(ConfigError, match="needs workload.path"):
        moe_scenario(matrix="file")
    local = np.zeros((16, 16))
    local[0, 1] = 5.0  # GPUs 0 and 1 share a server: NVLink only
    np.save(tmp_path / "local.npy", local)
    sc = moe_scenario(matrix="file", path=str(tmp_path / "local.npy"))
    with pytest.raises(ConfigError, match="no inter-server traffic"):
        generate(sc, fabric_of(sc))
    with pytest.raises(ConfigError, match="workload.gpus: 32 GPUs need 32 hosts"):
        sc = moe_scenario(gpus=32)
        generate(sc, fabric_of(sc))


@pytest.mark.parametrize("content", ["1,2,3\n4,5,6\n", "0,1\nnan,0\n", "0,-5\n1,0\n"])
def test_cli_malformed_matrix_one_line_exit_2(tmp_path, capsys, content):
    from fabricsim.cli import main

    (tmp_path / "m.csv").write_text(content)
    yaml = tmp_path / "s.yaml"
    yaml.write_text(
        "topology: {kind: leaf_spine, leaves: 1, hosts_per_leaf: 2, spines: 1}\n"
        "workload: {kind: moe, matrix: file, path: m.csv, gpus_per_server: 1}\n"
    )
    assert main(["run", str(yaml), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: workload.path: m.csv") and "\n" not in err


# -- runs and the summary ---------------------------------------------------------------------
def test_builtin_scenario_runs_with_cct_keys():
    res = fabricsim.run("moe", engine="flow")
    s = res.summary
    assert s["flows_completed"] == s["flows_total"] > 0
    assert s["cct_s"] >= s["cct_lower_bound_s"] * (1 - 1e-9)
    assert s["cct_inflation"] == pytest.approx(s["cct_s"] / s["cct_lower_bound_s"])
    assert s["peak_backlog_bytes"] > 0 and "timeline_backlog" in res.tables
    paced = fabricsim.run(
        fabricsim.load_scenario("moe").with_overrides(
            {"workload.scheduler": "rate_based", "engine.kind": "flow"}
        )
    )
    assert paced.summary["peak_backlog_bytes"] == 0.0
    assert paced.summary["cct_inflation"] == pytest.approx(1.0, abs=1e-9)


def test_max_min_engine_honours_rate_caps_with_mixed_nic_rates():
    from fabricsim.experiments.runner import router_of
    from fabricsim.flowsim.engine import FlowEngine
    from fabricsim.lb import PolicyContext, make_policy
    from fabricsim.lb.base import with_rate_caps
    from fabricsim.rng import stream

    sc = moe_scenario(hosts=16, leaves=1, scheduler="rate_based").with_overrides(
        {"topology.degraded_links": {"host0->leaf0": 0.5, "leaf0->host9": 0.25}}
    )
    fab = fabric_of(sc)
    flows = generate(sc, fab)
    ctx = PolicyContext(sc, fab, router_of(sc, fab), flows, stream(sc.seed, "policy"))
    policy = with_rate_caps(make_policy(ctx), flows)
    out = FlowEngine(sc, fab, ctx.router, flows, policy).run()
    m_s = flows.meta["moe"]["m_s"]
    # every paced flow ends at M plus its path latency (propagation + store-and-forward of the
    # last packet, slower on the degraded links): the caps are honoured and feasible
    latency = out.finish_s - m_s
    assert latency.min() > 0 and latency.max() < 10e-6
    np.testing.assert_allclose(out.finish_s, m_s, rtol=0, atol=10e-6)
    send = np.bincount(flows.src, weights=flows.extra["rate_cap_bps"], minlength=16)
    assert send[0] <= 200e9 * (1 + 1e-12)
