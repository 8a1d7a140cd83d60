"""scripts/docs_figures.py: its markers in docs/ and its rendering (no simulation runs here)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("docs_figures", ROOT / "scripts" / "docs_figures.py")
docs_figures = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("docs_figures", docs_figures)  # dataclasses look their module up
_spec.loader.exec_module(docs_figures)


def test_every_figure_has_one_block_in_its_doc_and_every_block_a_figure():
    names = [f.name for f in docs_figures.FIGURES]
    assert len(set(names)) == len(names)
    for fig in docs_figures.FIGURES:
        text = (ROOT / fig.doc).read_text(encoding="utf-8")
        assert text.count(docs_figures.marker(fig.name)) == 1, fig.name
        docs_figures.replace_block(text, fig.name, "x")  # exactly one well-formed block
    found = []
    for doc in sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]:
        text = doc.read_text(encoding="utf-8")
        found += docs_figures.markers_in(text)
        assert text.count("<!-- docs_figures:") == text.count(docs_figures.END), doc.name
    assert sorted(found) == sorted(names)


def test_every_figure_stays_small():
    # the whole script must run in ~10 minutes on 2 busy cores
    assert sum(f.runs() for f in docs_figures.FIGURES) <= 400
    assert all(f.seeds >= 3 for f in docs_figures.FIGURES)


def _table():
    rows = []
    for qps in (1, 25):
        ark = (-25.0, -40.0, -10.0, True, None) if qps == 1 else (-5.0, -20.0, 10.0, False, 9)
        for value, mean, delta in (("ecmp", 2.0, None), ("ark", 1.5, ark)):
            d = delta or (float("nan"),) * 3 + (None, None)
            rows.append(
                {
                    "workload.qps": qps,
                    "metric": "fct_mean_s",
                    "value": value,
                    "mean": mean,
                    "ci_low": 0.0,
                    "ci_high": 0.0,
                    "delta_pct": d[0],
                    "delta_ci_low": d[1],
                    "delta_ci_high": d[2],
                    "seeds": 4,
                    "significant": d[3],
                    "seeds_needed": d[4],
                }
            )
            rows.append({**rows[-1], "metric": "fct_p99_s"})  # not a metric of the figure
    return pd.DataFrame(rows)


def test_render_prints_means_change_interval_and_seed_count():
    fig = docs_figures.Figure(
        "t",
        "docs/ark.md",
        "ark",
        ("lb.policy", ("ecmp", "ark")),
        seeds=4,
        engine="flow",
        grid={"workload.qps": (1, 25)},
        metrics=("fct_mean_s",),
        unit="ms",
    )
    text = docs_figures.render(fig, _table())
    assert "--vs lb.policy=ecmp,ark --grid workload.qps=1,25 --seeds 4 --engine flow" in text
    rows = [r for r in text.splitlines() if r.startswith("| 1 ") or r.startswith("| 25 ")]
    assert rows == [
        "| 1 | mean FCT | 2,000.0 | ark | 1,500.0 | −25.0 % | −40.0 % … −10.0 % | 4 | yes |",
        "| 25 | mean FCT | 2,000.0 | ark | 1,500.0 | −5.0 % | −20.0 % … +10.0 % | 4 "
        "| no (about 9 seeds) |",
    ]


def test_replace_block_rewrites_only_between_its_markers():
    m, end = docs_figures.marker("a"), docs_figures.END
    text = f"before\n{m}\nold\n{end}\nafter\n{docs_figures.marker('b')}\nkeep\n{end}\n"
    new = docs_figures.replace_block(text, "a", "new")
    assert new == f"before\n{m}\nnew\n{end}\nafter\n{docs_figures.marker('b')}\nkeep\n{end}\n"
    assert docs_figures.replace_block(new, "a", "new") == new
    with pytest.raises(ValueError, match="c: expected one"):
        docs_figures.replace_block(text, "c", "x")
