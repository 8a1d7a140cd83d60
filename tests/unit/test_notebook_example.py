"""The notebook-style example (jupytext percent format) runs top to bottom."""

import runpy
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "notebook_study.py"


def test_notebook_example_runs_and_its_cells_hold_what_they_say():
    text = EXAMPLE.read_text()
    assert "# %% [markdown]" in text and "format_name: percent" in text
    env = runpy.run_path(str(EXAMPLE), run_name="__main__")
    res, fct, sweep = env["res"], env["fct"], env["sweep"]
    assert repr(res).startswith("<Result ark on the flow engine, seed 1: 200/200 flows")
    assert "<table>" in res._repr_html_() and "flows completed" in res._repr_html_()
    assert list(fct["workload.qps"]) == [5, 25]
    assert fct["delta_pct"].notna().all() and (fct["delta_ci_low"] <= fct["delta_pct"]).all()
    assert sorted(set(sweep["topology.spines"])) == [4, 8, 16]
