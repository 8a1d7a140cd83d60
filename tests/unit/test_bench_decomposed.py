"""The decomposed-engine benchmark's workload: its trace has the load and sizes it states."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]


def _bench():
    spec = importlib.util.spec_from_file_location(
        "bench_decomposed", ROOT / "benchmarks" / "bench_decomposed.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_trace_offers_the_load_it_states(tmp_path):
    bench = _bench()
    hosts = bench.make_trace(tmp_path / "t.csv", 8, 4000, 0.4, seed=1)
    t = pd.read_csv(tmp_path / "t.csv")
    assert hosts == 128 and len(t) == 4000
    assert (t.src != t.dst).all() and t.src.between(0, 127).all() and t.dst.between(0, 127).all()
    assert t.size_bytes.between(bench.MIN_B, bench.MAX_B).all()
    assert np.all(np.diff(t.start_s) >= 0) and t.start_s.iloc[0] == 0
    offered = t.size_bytes.sum() * 8 / t.start_s.iloc[-1] / (hosts * 100e9)
    assert abs(offered - 0.4) < 0.04
    again = tmp_path / "u.csv"
    bench.make_trace(again, 8, 4000, 0.4, seed=1)
    assert again.read_bytes() == (tmp_path / "t.csv").read_bytes()


def test_size_classes_need_enough_flows():
    bench = _bench()
    flows = pd.DataFrame(
        {
            "fct_s": np.r_[np.ones(150), 2 * np.ones(50)],
            "size_bytes": np.r_[[70_000] * 150, [5_000_000] * 50],
        }
    )
    got = bench.fct_stats(flows)
    assert list(got["classes"]) == ["64K-256K"] and got["classes"]["64K-256K"]["flows"] == 150
