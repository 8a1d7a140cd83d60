"""The compiled packet core and its pure-Python source give the same results; FABRICSIM_PURE
and a stale build run the source (fabricsim._core_build)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import fabricsim
from fabricsim._core_build import core_mode

RUN = """
import json, sys
import fabricsim
from fabricsim._core_build import core_mode
sc = fabricsim.load_scenario("incast").with_overrides(
    {"topology.k": 4, "workload.senders": 15, "workload.size_bytes": 60_000, "nic.cc": "nscc",
     "nic.ack_coalesce": 4, "nic.packet_spraying_type": "reps", "switch.trim_last_queued": 0.5,
     "records.port_stats": True})
res = fabricsim.run(sc, engine="packet")
print(json.dumps({"mode": core_mode(), "summary": res.summary,
                  "flows": res.flows.astype(str).to_dict("list")}, sort_keys=True))
"""


def _run(pure: bool) -> dict:
    env = {**os.environ, "FABRICSIM_PURE": "1" if pure else ""}
    out = subprocess.run(
        [sys.executable, "-c", RUN], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


def test_pure_mode_runs_the_sources():
    assert _run(pure=True)["mode"] == "pure"


@pytest.mark.skipif(
    core_mode() == "pure" and not os.environ.get("CI"),
    reason="no compiled core in this install (CI requires one)",
)
def test_compiled_and_pure_give_identical_results():
    compiled, pure = _run(pure=False), _run(pure=True)
    assert compiled["mode"] == "compiled", "the build did not compile the packet core"
    assert compiled["summary"] == pure["summary"]
    assert compiled["flows"] == pure["flows"]


def test_version_says_which_core():
    out = subprocess.run(
        [sys.executable, "-m", "fabricsim.cli", "--version"],
        env={**os.environ, "FABRICSIM_PURE": "1"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == f"fabricsim {fabricsim.__version__} (pure packet core)"
