"""A text trace's budget counts its lines (it bounded them by the file's size / 8 before)."""

from __future__ import annotations

from pathlib import Path

from fabricsim.config.loader import load_scenario
from fabricsim.experiments.budget import estimate


def test_a_csv_traces_budget_counts_its_rows(tmp_path: Path) -> None:
    rows = ["src,dst,size_bytes,start_s"] + [
        f"{i % 16},{(i + 1) % 16},1000000,0.0" for i in range(500)
    ]
    path = tmp_path / "t.csv"
    path.write_text("\n".join(rows) + "\n")
    sc = load_scenario("permutation").with_overrides(
        {"topology.k": 4, "workload": {"kind": "trace", "path": str(path)}}
    )
    flows = estimate(sc, "flow").flows
    assert 500 <= flows <= 503  # the header and a last line: an upper bound, not size / 8
    assert path.stat().st_size // 8 > 2 * flows
