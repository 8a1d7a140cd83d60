"""A study's intervals respect the quantity (issue 37): times > 0, changes > -100 %; a change
whose interval holds 0 says so with the seeds that would resolve it; the metric a workload is
judged by is marked; headers show what the study varies."""

import io
import json
import math

import numpy as np
import pytest
from rich.console import Console
from scipy import stats

import fabricsim
from fabricsim.cli.study import print_study
from fabricsim.config.loader import load_scenario
from fabricsim.experiments.intervals import mean_interval, ratio_interval, seeds_to_resolve
from fabricsim.experiments.paired import describe_study, paired_table, run_paired
from fabricsim.experiments.study import study_seeds
from fabricsim.metrics.readable import delta_text, study_point_rows

# Two-seed and three-seed samples as wide as the issue's: plain t intervals of these reach below
# zero (a time) and below -100 % (a change).
WIDE_A = np.array([0.31e-3, 1.10e-3])  # P99 FCT of ecmp on 2 seeds: 703 µs, like the issue
WIDE_B = np.array([0.05e-3, 0.33e-3])


def _table(a, b, metric="fct_p99_s"):
    summaries = {
        ((), "ecmp"): [{metric: float(x)} for x in a],
        ((), "ark"): [{metric: float(x)} for x in b],
    }
    rows = paired_table(summaries, [], ["ecmp", "ark"]).to_dict(orient="records")
    return rows[0], rows[1]


def test_a_time_interval_stays_positive_where_the_plain_t_interval_went_negative():
    half = stats.t.ppf(0.975, 1) * np.std(WIDE_A, ddof=1) / math.sqrt(2)
    assert WIDE_A.mean() - half < 0  # what the study printed before: [-220, 1626] µs-like
    base, other = _table(WIDE_A, WIDE_B)
    for row in (base, other):
        assert 0 < row["ci_low"] < row["mean"] < row["ci_high"]
    m = WIDE_A.mean()
    h = stats.t.ppf(0.975, 1) * np.std(WIDE_A, ddof=1) / (m * math.sqrt(2))
    assert (base["ci_low"], base["ci_high"]) == pytest.approx((m * math.exp(-h), m * math.exp(h)))


def test_a_change_interval_stays_above_minus_100_and_holds_the_change_shown():
    d = WIDE_B - WIDE_A
    plain_low = 100 * (d.mean() - stats.t.ppf(0.975, 1) * np.std(d, ddof=1) / math.sqrt(2))
    assert plain_low / WIDE_A.mean() < -100  # the old `-73 % [-206, +59]`
    _, other = _table(WIDE_A, WIDE_B)
    geometric = math.exp(np.mean(np.log(WIDE_B / WIDE_A)))
    assert other["delta_pct"] == pytest.approx(100 * (geometric - 1))
    assert -100 < other["delta_ci_low"] < other["delta_pct"] < other["delta_ci_high"]


def test_the_change_uses_the_pairing_a_steady_ratio_is_significant_with_three_seeds():
    """ARK-like: B = 0.7 A at every seed within 3 %, while A varies 5x between seeds. The old
    interval of B - A (scaled by mean A) spans zero; the paired ratio's does not."""
    a = np.array([0.4, 1.0, 2.0])
    b = a * np.array([0.70, 0.72, 0.68])
    d = b - a
    half = stats.t.ppf(0.975, 2) * np.std(d, ddof=1) / math.sqrt(3)
    assert d.mean() + half > 0  # not significant the old way
    c = ratio_interval(a, b)
    assert c.significant is True and c.seeds_needed is None
    assert c.high_pct < 0 and c.pct == pytest.approx(-30, abs=0.5)


def test_not_significant_says_so_with_the_seeds_that_would_resolve_it():
    a = np.array([1.0, 1.0, 1.0])
    b = np.array([0.80, 1.05, 0.90])
    _, other = _table(a, b, "fct_mean_s")
    assert other["significant"] is False
    effect, sd = abs(np.mean(np.log(b / a))), np.std(np.log(b / a), ddof=1)
    brute = next(
        n for n in range(4, 1001) if stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n) < effect
    )
    assert other["seeds_needed"] == brute
    text = delta_text(other)
    assert text.endswith(f"not significant with 3 seeds (about {brute} would resolve it)"), text
    assert delta_text(other, short=True).endswith(f"n.s. (≈{brute} seeds)")
    assert seeds_to_resolve(1e-6, 0.5, 3) is None  # tiny against the spread: no promise
    sig = dict(other, significant=True)
    assert "significant" not in delta_text(sig) and "n.s." not in delta_text(sig, short=True)


def test_one_seed_has_no_interval_and_no_verdict():
    base, other = _table(np.array([1.0]), np.array([0.5]))
    assert ratio_interval(np.array([0.0, 2.0]), np.array([1.0, 1.0])).pct == 0  # no log: means
    assert math.isnan(base["ci_low"]) and math.isnan(other["delta_ci_low"])
    assert other["delta_pct"] == pytest.approx(-50) and other["significant"] is None
    assert delta_text(other) == "-50 %"
    assert mean_interval(np.array([-1.0, 1.0]))[0] < 0  # not a positive quantity: plain t


def test_the_api_table_and_study_json_carry_the_new_columns_and_the_method(tmp_path):
    table = fabricsim.study(
        "ecmp-collision", {"lb.policy": ["ecmp", "pinned"]}, seeds=3, out=tmp_path / "st"
    )
    for column in ("ci_low", "delta_ci_low", "significant", "seeds_needed", "primary"):
        assert column in table.columns
    pinned = table[table["value"] == "pinned"]
    assert pinned["significant"].map(lambda v: v in (True, False)).all()
    assert table[table["value"] == "ecmp"]["significant"].isna().all()
    record = json.loads((tmp_path / "st" / "study.json").read_text())
    assert "log scale" in record["interval"] and record["judged_by"] == []
    assert "significant" in (tmp_path / "st" / "study.csv").read_text().splitlines()[0]


def test_headers_show_the_grid_values_not_the_base_scenarios():
    sc = load_scenario("ark").with_overrides({"workload.requests": 20})
    st = run_paired(sc, ("lb.policy", ["ecmp", "ark"]), {"workload.qps": [5, 25]}, 1)
    head = describe_study(st)
    assert "at QPS {5, 25}," in head["workload"] and "QPS 25," not in head["workload"]
    assert head["compared"].startswith("lb.policy = ecmp vs ark (baseline ecmp)")
    assert "workload.qps = 5, 25" in head["compared"]
    assert head["fabric"].endswith("2:1 oversubscribed")  # nothing varied there: unchanged
    moe = load_scenario("moe")
    st.scenario, st.vs, st.grid = moe, ("workload.scheduler", ["round_robin", "rate_based"]), {}
    assert "{round_robin vs rate_based} scheduler" in describe_study(st)["workload"]


def test_kv_cache_rows_mark_fct_and_ttft_as_what_the_workload_is_judged_by():
    rows = [
        {"metric": m, "value": v, "mean": 1.0, "primary": m in ("fct_mean_s", "ttft_mean_s")}
        for m in ("fct_mean_s", "fct_p95_s", "ttft_mean_s") for v in ("ecmp", "ark")
    ]  # fmt: skip
    labels = [line["metric"] for line in study_point_rows(rows, ["ecmp", "ark"])]
    assert labels == ["mean FCT ★", "P95 FCT", "mean TTFT ★"]
    assert study_seeds(None, None) == list(range(1, 9))  # the default study's 8 seeds


def test_moe_study_marks_cct_and_explains_the_fct_rise():
    sc = load_scenario("moe").with_overrides({"workload.gpus": 16})
    st = run_paired(sc, ("workload.scheduler", ["round_robin", "rate_based"]), {}, 2, engine="flow")
    assert st.table[st.table["primary"]]["metric"].unique().tolist() == ["cct_s"]
    out = io.StringIO()
    print_study(st, Console(file=out, width=200))
    text = out.getvalue()
    assert "CCT ★" in text and "mean FCT ★" not in text
    assert "MoE is judged by CCT" in text and "end together" in text
    assert "{round_robin vs rate_based}" in text
