"""Every example runs: YAML scenarios on their default engine, scripts as subprocesses."""

import subprocess
import sys
from pathlib import Path

import pytest

import fabricsim

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
YAMLS = sorted(EXAMPLES.glob("*.yaml"))
SCRIPTS = sorted(EXAMPLES.glob("*.py"))


@pytest.mark.parametrize("path", YAMLS, ids=[p.name for p in YAMLS])
def test_example_scenario_runs(path, tmp_path):
    sc = fabricsim.load_scenario(path)
    if sc.workload.kind == "kv_cache":  # keep the suite fast: a shorter request stream
        sc = sc.with_overrides({"workload.requests": min(sc.workload.requests, 60)})
    res = fabricsim.run(sc)
    res.save(tmp_path)
    assert res.summary["flows_total"] > 0
    assert res.summary["bytes_conserved"] is True


@pytest.mark.full
@pytest.mark.parametrize("path", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_example_script_runs(path, tmp_path):
    proc = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, timeout=240, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
