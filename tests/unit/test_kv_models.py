"""Unit tests for fabricsim.workloads.kv_models (pure KV-cache workload models)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fabricsim.workloads.kv_models import (
    DEFAULT_CALIBRATION,
    GPUS,
    MODELS,
    AnalyticalGpuModel,
    FixedLength,
    RankZipf,
    TableGpuModel,
    default_gpu_model,
    get_gpu,
    get_model,
    load_prompt_trace,
    poisson_arrivals,
    random_pairs,
)

KIB = 1024


# --------------------------------------------------------------------------- #
# Model catalog
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize(
    ("name", "kv_bytes"),
    [
        ("llama-3-8b", 131_072),  # 2 * 32 * 8 * 128 * 2 = 128 KiB
        ("llama-3.1-70b", 327_680),  # 2 * 80 * 8 * 128 * 2 = 320 KiB
        ("llama-3.1-405b", 516_096),  # 2 * 126 * 8 * 128 * 2 = 504 KiB
        ("qwen3-235b", 192_512),  # 2 * 94 * 4 * 128 * 2 = 188 KiB
        ("deepseek-v3", 70_272),  # MLA: (512 + 64) * 61 * 2
    ],
)
def test_kv_bytes_per_token(name: str, kv_bytes: int) -> None:
    assert get_model(name).kv_bytes_per_token == kv_bytes


def test_llama_8b_is_exactly_128_kib_per_token() -> None:
    assert MODELS["llama-3-8b"].kv_bytes_per_token == 128 * KIB


def test_moe_active_params() -> None:
    qwen, ds = get_model("qwen3-235b"), get_model("deepseek-v3")
    assert (qwen.params, qwen.active_params) == (235_000_000_000, 22_000_000_000)
    assert (ds.params, ds.active_params) == (671_000_000_000, 37_000_000_000)
    assert get_model("llama-3-8b").active_params == get_model("llama-3-8b").params


def test_llama_8b_linear_params_per_layer_match_architecture() -> None:
    m = get_model("llama-3-8b")
    # q,o: 4096*4096 each; k,v: 4096*1024 each; MLP 3*4096*14336; 2 RMSNorms of 4096.
    per_layer = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096
    # (params - embeddings) / layers also includes the final norm (4096 / 32 = 128).
    assert m.linear_params_per_layer == pytest.approx(per_layer + 128, rel=1e-12)


def test_unknown_model_names_field_and_allowed() -> None:
    with pytest.raises(
        ValueError, match=r"^workload\.model: unknown model 'gpt-9'; allowed: "
    ) as e:
        get_model("gpt-9")
    assert "llama-3-8b, llama-3.1-70b" in str(e.value)


def test_unknown_gpu() -> None:
    with pytest.raises(ValueError, match=r"workload\.gpu: unknown GPU 'tpu'"):
        get_gpu("tpu")
    assert set(GPUS) >= {"h100", "a100", "h200", "b200"}


# --------------------------------------------------------------------------- #
# Prompt lengths
# --------------------------------------------------------------------------- #
# Exact analytic mean at the defaults (min 1,000, max 52,600, theta 0.7), from
# sum(L * r**-0.7) / sum(r**-0.7) over r = 1 ... 51,601:
DEFAULT_ZIPF_MEAN = 13_302.53406889767


def test_rank_zipf_analytic_mean_defaults() -> None:
    z = RankZipf(1_000, 52_600, 0.7)
    ranks = np.arange(1, 52_600 - 1_000 + 2, dtype=np.float64)
    weights = ranks**-0.7
    direct = float(np.sum((1_000 + ranks - 1) * weights) / np.sum(weights))
    assert z.mean() == pytest.approx(direct, rel=1e-9)
    assert z.mean() == pytest.approx(DEFAULT_ZIPF_MEAN, rel=1e-9)
    assert RankZipf().mean() == pytest.approx(DEFAULT_ZIPF_MEAN, rel=1e-9)


def test_rank_zipf_sample_mean_close_to_analytic() -> None:
    z = RankZipf()
    samples = z.sample(np.random.default_rng(12345), 25_000)
    assert samples.dtype == np.int64
    assert samples.shape == (25_000,)
    assert abs(samples.mean() / z.mean() - 1.0) < 0.03


def test_rank_zipf_bounds_and_flow_sizes() -> None:
    z = RankZipf()
    samples = z.sample(np.random.default_rng(7), 25_000)
    assert samples.min() >= 1_000
    assert samples.max() <= 52_600
    flows = samples * get_model("llama-3-8b").kv_bytes_per_token
    assert flows.min() >= 131_072_000  # 125 MiB
    assert flows.max() <= 6_894_387_200  # ~6.4 GiB
    lengths, _ = z.pmf()
    assert lengths[0] * 131_072 == 131_072_000
    assert lengths[-1] * 131_072 == 6_894_387_200


def test_rank_zipf_most_likely_length_is_min() -> None:
    samples = RankZipf(1_000, 1_009, 2.0).sample(np.random.default_rng(3), 20_000)
    counts = np.bincount(samples - 1_000, minlength=10)
    # P(1000) = 1 / H(10, 2) = 0.6452...
    assert counts[0] / samples.size == pytest.approx(
        1 / sum(r**-2.0 for r in range(1, 11)), abs=0.015
    )
    assert counts.argmax() == 0


def test_rank_zipf_pmf_monotone_and_normalised() -> None:
    lengths, probs = RankZipf(1_000, 52_600, 0.7).pmf()
    assert lengths.size == probs.size == 51_601
    assert np.all(np.diff(lengths) == 1)
    assert math.isclose(probs.sum(), 1.0, rel_tol=1e-12)
    assert np.all(np.diff(probs) < 0)


def test_rank_zipf_theta_zero_is_uniform() -> None:
    z = RankZipf(10, 19, 0.0)
    _, probs = z.pmf()
    np.testing.assert_allclose(probs, np.full(10, 0.1), rtol=1e-12)
    assert z.mean() == pytest.approx(14.5, rel=1e-12)


def test_rank_zipf_single_value() -> None:
    z = RankZipf(500, 500, 0.7)
    assert z.mean() == 500.0
    assert np.all(z.sample(np.random.default_rng(0), 100) == 500)


def test_rank_zipf_reproducible() -> None:
    z = RankZipf()
    a = z.sample(np.random.default_rng(42), 1_000)
    b = z.sample(np.random.default_rng(42), 1_000)
    c = z.sample(np.random.default_rng(43), 1_000)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        (
            {"min_tokens": 2000, "max_tokens": 1000},
            r"workload\.prompt_min_tokens must be <= workload\.prompt_max_tokens "
            r"\(got 2000 > 1000\)",
        ),
        ({"min_tokens": 0}, r"workload\.prompt_min_tokens must be >= 1 \(got 0\)"),
        ({"max_tokens": 1.5}, r"workload\.prompt_max_tokens must be an integer"),
        ({"theta": -0.1}, r"workload\.prompt_theta must be >= 0 \(got -0\.1\)"),
        ({"theta": float("nan")}, r"workload\.prompt_theta must be >= 0"),
    ],
)
def test_rank_zipf_validation(kwargs: dict, pattern: str) -> None:
    with pytest.raises(ValueError, match=pattern):
        RankZipf(**kwargs)


def test_fixed_length() -> None:
    f = FixedLength(4_096)
    out = f.sample(np.random.default_rng(0), 5)
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, [4_096] * 5)
    assert f.mean() == 4_096.0
    with pytest.raises(ValueError, match=r"workload\.prompt_tokens must be >= 1 \(got 0\)"):
        FixedLength(0)


# --------------------------------------------------------------------------- #
# Prompt trace CSV
# --------------------------------------------------------------------------- #
def test_prompt_trace_with_header(tmp_path) -> None:
    path = tmp_path / "trace.csv"
    path.write_text("request_id,prompt_tokens\n0,1200\n1,  5000\n2,52600\n")
    out = load_prompt_trace(path)
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, [1_200, 5_000, 52_600])


def test_prompt_trace_single_column_without_header(tmp_path) -> None:
    path = tmp_path / "trace.csv"
    path.write_text("100\n200\n300\n")
    np.testing.assert_array_equal(load_prompt_trace(path), [100, 200, 300])


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("", "file is empty"),
        ("prompt_tokens\n", "no data rows"),
        ("a,b\n1,2\n", "missing column 'prompt_tokens'"),
        ("prompt_tokens\n100\n12.5\n", "line 3: '12.5' is not an integer"),
        ("prompt_tokens\n100\nabc\n", "line 3: 'abc' is not an integer"),
        ("100\n0\n", "line 2: prompt_tokens must be > 0 (got 0)"),
        ("prompt_tokens\n-5\n", "line 2: prompt_tokens must be > 0 (got -5)"),
        ("id,prompt_tokens\n1,\n", "line 2: '' is not an integer"),
    ],
)
def test_prompt_trace_malformed(tmp_path, content: str, problem: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(ValueError) as e:
        load_prompt_trace(path)
    msg = str(e.value)
    assert msg.startswith(f"workload.prompt_path: {path}: ")
    assert problem in msg
    assert "\n" not in msg


def test_prompt_trace_missing_file(tmp_path) -> None:
    with pytest.raises(ValueError, match=r"workload\.prompt_path: .*nope\.csv: cannot read"):
        load_prompt_trace(tmp_path / "nope.csv")


# --------------------------------------------------------------------------- #
# GPU latency models
# --------------------------------------------------------------------------- #
def test_calibrated_llama_8b_h100_hits_paper_numbers() -> None:
    tokens, prefill, decode = DEFAULT_CALIBRATION["llama-3-8b"]
    assert (tokens, prefill, decode) == (13_300, 0.840, 0.010)
    gm = AnalyticalGpuModel.calibrated(
        get_model("llama-3-8b"), get_gpu("h100"), 0.840, 0.010, 13_300
    )
    assert float(gm.prefill_s(13_300)) == pytest.approx(0.840, rel=1e-12)
    assert float(gm.first_decode_s(13_300)) == pytest.approx(0.010, rel=1e-12)
    # Solved efficiencies (roofline: 0.23461 s prefill, 5.3368 ms decode).
    assert gm.prefill_efficiency == pytest.approx(0.279297, rel=1e-5)
    assert gm.decode_efficiency == pytest.approx(0.533679, rel=1e-5)


def test_default_gpu_model_uses_calibration() -> None:
    gm = default_gpu_model("llama-3-8b")
    np.testing.assert_allclose(gm.prefill_s(np.array([13_300])), [0.840], rtol=1e-12)
    np.testing.assert_allclose(gm.first_decode_s(np.array([13_300])), [0.010], rtol=1e-12)
    # Same efficiencies on a faster GPU give shorter times.
    h200 = default_gpu_model("llama-3-8b", "h200")
    assert h200.prefill_efficiency == gm.prefill_efficiency
    assert float(h200.first_decode_s(13_300)) < 0.010


def test_default_gpu_model_uncalibrated_efficiencies() -> None:
    gm = default_gpu_model("llama-3.1-70b", "a100")
    assert (gm.prefill_efficiency, gm.decode_efficiency) == (0.5, 0.6)


def test_analytical_prefill_flops_formula() -> None:
    m = get_model("llama-3-8b")
    gm = AnalyticalGpuModel(m, get_gpu("h100"), 1.0, 1.0)
    t = 1_000
    expected = 32 * (2 * t * m.linear_params_per_layer + 2 * t**2 * 32 * 128) + 2 * 128256 * 4096
    assert float(gm.prefill_flops(t)) == pytest.approx(expected, rel=1e-12)
    # Compute-bound at 13,300 tokens: time = FLOPs / peak.
    assert float(gm.prefill_s(13_300)) == pytest.approx(float(gm.prefill_flops(13_300)) / 989e12)


@pytest.mark.parametrize("name", list(MODELS))
def test_analytical_monotone_in_tokens(name: str) -> None:
    gm = default_gpu_model(name)
    tokens = np.array([1, 1_000, 4_000, 13_300, 30_000, 52_600])
    prefill, decode = gm.prefill_s(tokens), gm.first_decode_s(tokens)
    assert prefill.shape == decode.shape == (6,)
    assert np.all(np.diff(prefill) > 0)
    assert np.all(np.diff(decode) > 0)
    assert np.all(prefill > decode)


def test_analytical_bad_efficiency() -> None:
    m, g = get_model("llama-3-8b"), get_gpu("h100")
    with pytest.raises(ValueError, match=r"prefill_efficiency must be in \(0, 1\]"):
        AnalyticalGpuModel(m, g, 0.0, 0.5)
    # 1 ms prefill of 13,300 tokens would beat the H100 roofline.
    with pytest.raises(ValueError, match=r"prefill_s_at=0\.001 s is faster than the h100 roofline"):
        AnalyticalGpuModel.calibrated(m, g, 0.001, 0.010, 13_300)
    with pytest.raises(ValueError, match=r"decode_s_at must be > 0"):
        AnalyticalGpuModel.calibrated(m, g, 0.84, 0.0, 13_300)


def test_table_model_interpolation(tmp_path) -> None:
    path = tmp_path / "gpu.csv"
    path.write_text("prompt_tokens,prefill_s,decode_s\n1000,0.1,0.008\n3000,0.5,0.012\n")
    tm = TableGpuModel.from_csv(path)
    np.testing.assert_allclose(
        tm.prefill_s(np.array([1000, 2000, 2500, 3000])), [0.1, 0.3, 0.4, 0.5]
    )
    np.testing.assert_allclose(tm.first_decode_s(np.array([1500, 2000])), [0.009, 0.010])
    # Outside the table the end rows are used.
    np.testing.assert_allclose(tm.prefill_s(np.array([10, 9000])), [0.1, 0.5])
    assert tm.token_range == (1000, 3000)


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("", "file is empty"),
        ("prompt_tokens,prefill_s\n1000,0.1\n", "missing column(s) decode_s"),
        ("prompt_tokens,prefill_s,decode_s\n", "no data rows"),
        ("prompt_tokens,prefill_s,decode_s\n1000,abc,0.01\n", "line 2: prefill_s must be a number"),
        (
            "prompt_tokens,prefill_s,decode_s\n1000,0.1,-0.01\n",
            "line 2: decode_s must be a number > 0",
        ),
        ("prompt_tokens,prefill_s,decode_s\n1.5,0.1,0.01\n", "line 2: '1.5' is not an integer"),
        (
            "prompt_tokens,prefill_s,decode_s\n2000,0.2,0.01\n1000,0.1,0.01\n",
            "prompt_tokens must be sorted and unique",
        ),
        (
            "prompt_tokens,prefill_s,decode_s\n1000,0.2,0.01\n1000,0.1,0.01\n",
            "prompt_tokens must be sorted and unique",
        ),
    ],
)
def test_table_model_malformed(tmp_path, content: str, problem: str) -> None:
    path = tmp_path / "gpu.csv"
    path.write_text(content)
    with pytest.raises(ValueError) as e:
        TableGpuModel.from_csv(path)
    msg = str(e.value)
    assert msg.startswith(f"workload.gpu_profile_path: {path}: ")
    assert problem in msg
    assert "\n" not in msg


# --------------------------------------------------------------------------- #
# Arrivals and pairs
# --------------------------------------------------------------------------- #
def test_poisson_arrivals_rate_and_order() -> None:
    t = poisson_arrivals(np.random.default_rng(1), qps=50.0, n=20_000, start_s=2.0)
    assert t.dtype == np.float64
    assert t.shape == (20_000,)
    assert t[0] > 2.0
    assert np.all(np.diff(t) > 0)
    gaps = np.diff(np.concatenate([[2.0], t]))
    assert gaps.mean() == pytest.approx(1 / 50.0, rel=0.03)  # 3 % ~ 4 sigma at n = 20,000
    assert gaps.std() == pytest.approx(1 / 50.0, rel=0.05)  # exponential: std = mean


def test_poisson_arrivals_reproducible_and_empty() -> None:
    a = poisson_arrivals(np.random.default_rng(9), 10.0, 100)
    b = poisson_arrivals(np.random.default_rng(9), 10.0, 100)
    np.testing.assert_array_equal(a, b)
    assert poisson_arrivals(np.random.default_rng(9), 10.0, 0).shape == (0,)


@pytest.mark.parametrize(("qps", "shown"), [(-1, "-1"), (0, "0"), (0.0, "0")])
def test_poisson_arrivals_bad_qps(qps: float, shown: str) -> None:
    with pytest.raises(ValueError, match=rf"^workload\.qps must be > 0 \(got {shown}\)$"):
        poisson_arrivals(np.random.default_rng(0), qps, 10)


def test_random_pairs_uniform_and_in_pools() -> None:
    prefill = np.array([0, 1, 2, 3])
    decode = np.array([100, 101])
    src, dst = random_pairs(np.random.default_rng(5), prefill, decode, 40_000)
    assert src.shape == dst.shape == (40_000,)
    assert set(np.unique(src)) == {0, 1, 2, 3}
    assert set(np.unique(dst)) == {100, 101}
    np.testing.assert_allclose(np.bincount(src) / src.size, [0.25] * 4, atol=0.01)
    assert np.mean(dst == 100) == pytest.approx(0.5, abs=0.01)


def test_random_pairs_reproducible_and_validated() -> None:
    p, d = np.arange(8), np.arange(8, 16)
    a = random_pairs(np.random.default_rng(3), p, d, 50)
    b = random_pairs(np.random.default_rng(3), p, d, 50)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    with pytest.raises(ValueError, match="decode_hosts must be a non-empty 1-D array"):
        random_pairs(np.random.default_rng(3), p, np.array([]), 5)
