"""The kv_cache workload: sizes, prompts, pools, pairing, GPU times and the TTFT summary."""

from __future__ import annotations

import numpy as np
import pytest

import fabricsim
from fabricsim.config import load_scenario
from fabricsim.errors import ConfigError
from fabricsim.experiments.runner import fabric_of
from fabricsim.workloads.kv_cache import kv_cache, ttft_s
from fabricsim.workloads.kv_models import RankZipf, default_gpu_model

pytestmark = pytest.mark.usefixtures("both_solvers")  # both flow solvers


ANALYTIC_MEAN_TOKENS = 13_302.534  # rank-Zipf theta 0.7 over 1,000 ... 52,600 tokens
MIN_FLOW, MAX_FLOW = 131_072_000, 6_894_387_200  # 1,000 and 52,600 tokens x 128 KiB


def _table(**overrides):
    sc = load_scenario("ark").with_overrides(overrides)
    return sc, kv_cache(sc, fabric_of(sc))


def test_llama_3_8b_kv_is_128_kib_per_token():
    _, table = _table(**{"workload.requests": 50})
    assert table.meta["kv_cache"]["kv_bytes_per_token"] == 131_072
    np.testing.assert_array_equal(table.size_bytes, table.extra["prompt_tokens"] * 131_072)


def test_prompt_mean_and_flow_sizes_over_25000_samples():
    _, table = _table(**{"workload.requests": 25_000})
    tokens = table.extra["prompt_tokens"]
    assert RankZipf().mean() == pytest.approx(ANALYTIC_MEAN_TOKENS, abs=1e-3)
    assert abs(tokens.mean() / ANALYTIC_MEAN_TOKENS - 1) < 0.03
    assert tokens.min() >= 1_000 and tokens.max() <= 52_600
    assert table.size_bytes.min() >= MIN_FLOW and table.size_bytes.max() <= MAX_FLOW
    # heavy tail: the shortest prompts are the most likely, and long ones do occur
    assert np.median(tokens) < tokens.mean() and tokens.max() > 40_000


def test_explicit_kv_bytes_and_fixed_prompt():
    _, table = _table(
        **{
            "workload.requests": 10,
            "workload.kv_bytes_per_token": 1000,
            "workload.prompt": "fixed",
            "workload.prompt_tokens": 2048,
        }
    )
    np.testing.assert_array_equal(table.size_bytes, np.full(10, 2_048_000))


def test_other_model_uses_its_own_kv_size():
    _, table = _table(**{"workload.requests": 5, "workload.model": "llama-3.1-405b"})
    assert table.meta["kv_cache"]["kv_bytes_per_token"] == 516_096


def test_default_pools_and_random_pairs():
    _, table = _table(**{"workload.requests": 2000})
    assert set(table.src.tolist()) == set(range(8))
    assert set(table.dst.tolist()) == set(range(8, 16))
    counts = np.bincount(table.src, minlength=8)
    assert counts.min() > 180  # uniform: 250 expected per prefill host


def test_custom_pools():
    _, table = _table(
        **{
            "workload.requests": 300,
            "workload.prefill_hosts": [0, 9],
            "workload.decode_hosts": [3, 15],
        }
    )
    assert set(table.src.tolist()) == {0, 9} and set(table.dst.tolist()) == {3, 15}


@pytest.mark.parametrize(
    ("pools", "message"),
    [
        ({"workload.prefill_hosts": [0, 99]}, "workload.prefill_hosts: host 99 is outside"),
        ({"workload.decode_hosts": []}, "workload.decode_hosts: must name at least one host"),
        ({"workload.decode_hosts": [1, 9]}, "host 1 is also a prefill host"),
        ({"workload.prefill_hosts": [2, 2]}, "a host is listed twice"),
    ],
)
def test_bad_pools(pools, message):
    with pytest.raises(ConfigError, match=message):
        _table(**{"workload.requests": 5, **pools})


def test_poisson_arrivals_at_qps():
    _, table = _table(**{"workload.requests": 20_000, "workload.qps": 25})
    gaps = np.diff(np.concatenate([[0.0], table.start_s]))
    assert gaps.min() > 0
    assert gaps.mean() == pytest.approx(1 / 25, rel=0.03)
    assert gaps.std() == pytest.approx(1 / 25, rel=0.05)  # exponential: std = mean


def test_requests_are_paired_across_qps_and_policies():
    _, a = _table(**{"workload.requests": 200, "workload.qps": 5})
    _, b = _table(**{"workload.requests": 200, "workload.qps": 25, "lb.policy": "ark"})
    for col in ("prompt_tokens", "prefill_s", "decode_s"):
        np.testing.assert_array_equal(a.extra[col], b.extra[col])
    np.testing.assert_array_equal(a.src, b.src)
    np.testing.assert_array_equal(a.dst, b.dst)
    np.testing.assert_allclose(a.start_s / 5, b.start_s, rtol=1e-12)  # same draws, scaled
    _, c = _table(**{"workload.requests": 200, "seed": 2})
    assert not np.array_equal(a.extra["prompt_tokens"], c.extra["prompt_tokens"])


def test_gpu_times_follow_the_calibrated_model():
    _, table = _table(**{"workload.requests": 100})
    gm = default_gpu_model("llama-3-8b", "h100")
    tokens = table.extra["prompt_tokens"]
    np.testing.assert_allclose(table.extra["prefill_s"], gm.prefill_s(tokens))
    np.testing.assert_allclose(table.extra["decode_s"], gm.first_decode_s(tokens))
    assert float(gm.prefill_s(13_300)) == pytest.approx(0.840, rel=1e-9)
    assert float(gm.first_decode_s(13_300)) == pytest.approx(0.010, rel=1e-9)
    np.testing.assert_array_equal(table.extra["request_id"], np.arange(100))


def test_gpu_profile_csv_replaces_the_model(tmp_path):
    csv = tmp_path / "gpu.csv"
    csv.write_text("prompt_tokens,prefill_s,decode_s\n1000,0.1,0.01\n60000,6.0,0.02\n")
    _, table = _table(**{"workload.requests": 50, "workload.gpu_profile_path": str(csv)})
    tokens = table.extra["prompt_tokens"]
    np.testing.assert_allclose(
        table.extra["prefill_s"], np.interp(tokens, [1000, 60000], [0.1, 6.0])
    )


def test_prompt_trace_in_file_order_wrapping(tmp_path):
    csv = tmp_path / "prompts.csv"
    csv.write_text("prompt_tokens\n1000\n2000\n3000\n")
    _, table = _table(
        **{"workload.requests": 7, "workload.prompt": "trace", "workload.prompt_path": str(csv)}
    )
    np.testing.assert_array_equal(table.extra["prompt_tokens"], [1000, 2000, 3000] * 2 + [1000])


def test_summary_has_ttft_and_spine_peaks():
    sc = load_scenario("ark").with_overrides({"workload.requests": 80})
    res = fabricsim.run(sc)
    s, f = res.summary, res.flows
    ttft = (f["prefill_s"] + f["fct_s"] + f["decode_s"]).to_numpy()
    assert s["ttft_mean_s"] == pytest.approx(ttft.mean(), rel=1e-12)
    assert s["ttft_p95_s"] == pytest.approx(np.percentile(ttft, 95), rel=1e-12)
    assert s["ttft_p50_s"] <= s["ttft_p95_s"] <= s["ttft_p99_s"] <= s["ttft_max_s"]
    assert s["ttft_mean_s"] > s["fct_mean_s"]
    assert set(s["spine_peak_flows"]) == {f"spine{i}" for i in range(4)}
    assert max(s["spine_peak_flows"].values()) >= 1
    for col in ("request_id", "prompt_tokens", "prefill_s", "decode_s"):
        assert col in f.columns
    # an unfinished flow has no TTFT
    out = ttft_s(res_flows_table(sc), np.array([np.nan] * 80))
    assert np.isnan(out).all()


def res_flows_table(sc):
    return kv_cache(sc, fabric_of(sc))


def test_flow_table_has_ttft_column():
    res = fabricsim.run(load_scenario("ark").with_overrides({"workload.requests": 40}))
    f = res.flows
    np.testing.assert_allclose(f["ttft_s"], f["prefill_s"] + f["fct_s"] + f["decode_s"])
