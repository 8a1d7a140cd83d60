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


# PFC (packetsim/pfc.py): a lossless incast with dynamic thresholds whose path loses a link
# mid-run (the failed port releases what it held and leaves PFC), compared with port_stats.
PFC_RUN = """
import json
import fabricsim
from fabricsim._core_build import core_mode
sc = fabricsim.load_scenario({
    "name": "incast-roce", "seed": 3, "engine": {"kind": "packet"},
    "topology": {"kind": "fat_tree", "k": 4, "link_gbps": 100, "link_delay_us": 1.0,
                 "link_failures": [{"link": "edge0_0->agg0_0", "at_s": 20e-6}]},
    "workload": {"kind": "incast", "senders": 12, "receiver": 0, "size_bytes": 100_000},
    "lb": {"policy": "ecmp"}, "switch": {"pfc_dynamic_alpha": 1.0},
    "nic": {"transport": "roce", "initial_base_rtt_us": "auto", "cc": "constant"},
    "records": {"port_stats": True}})
res = fabricsim.run(sc, engine="packet")
print(json.dumps({"mode": core_mode(), "summary": res.summary,
                  "flows": res.flows.astype(str).to_dict("list"),
                  "ports": res.tables["port_stats"].astype(str).to_dict("list")}, sort_keys=True))
"""


def _run(pure: bool, script: str = RUN) -> dict:
    env = {**os.environ, "FABRICSIM_PURE": "1" if pure else ""}
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


def test_pure_mode_runs_the_sources():
    assert _run(pure=True)["mode"] == "pure"


@pytest.mark.full
@pytest.mark.skipif(
    core_mode() == "pure" and not os.environ.get("CI"),
    reason="no compiled core in this install (CI requires one)",
)
def test_compiled_and_pure_give_identical_results():
    compiled, pure = _run(pure=False), _run(pure=True)
    assert compiled["mode"] == "compiled", "the build did not compile the packet core"
    assert compiled["summary"] == pure["summary"]
    assert compiled["flows"] == pure["flows"]


@pytest.mark.full
@pytest.mark.skipif(
    core_mode() == "pure" and not os.environ.get("CI"),
    reason="no compiled core in this install (CI requires one)",
)
def test_compiled_and_pure_pfc_give_identical_results():
    compiled, pure = _run(False, PFC_RUN), _run(True, PFC_RUN)
    assert compiled["mode"] == "compiled", "the build did not compile the packet core"
    assert compiled["summary"]["pfc_pauses"] > 0  # the lossless path ran
    assert compiled == {**pure, "mode": "compiled"}


def test_version_says_which_core():
    out = subprocess.run(
        [sys.executable, "-m", "fabricsim.cli", "--version"],
        env={**os.environ, "FABRICSIM_PURE": "1"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == f"fabricsim {fabricsim.__version__} (pure packet core)"


# Random small scenarios (drawn from a seeded generator): every compiled mechanism's choices --
# spraying type, congestion control, ACK policy, trimming or drop-tail, failed links, queue
# sizes, workload -- run compiled and pure in one process each, compared field by field.
PROPERTY = """
import json, sys
import numpy as np
import fabricsim
from fabricsim._core_build import core_mode
rng = np.random.default_rng(20261201)
out = {"mode": core_mode(), "runs": []}
for case in range(int(sys.argv[1])):
    pick = lambda xs: xs[int(rng.integers(len(xs)))]
    over = {
        "seed": int(rng.integers(1 << 16)),
        "topology.k": 4,
        "nic.packet_spraying_type": pick(["none", "default", "oblivious", "reps"]),
        "nic.cc": pick(["nscc", "constant"]),
        "nic.ack_coalesce": pick([1, 2, 4]),
        "switch.trimming": bool(rng.integers(2)),
        "switch.buffer_bdp": pick([0.25, 1.0, 4.0]),
        "switch.trim_last_queued": pick([0.0, 0.5]),
        "records.port_stats": True,
    }
    if rng.integers(3) == 0:
        over["topology.failed_links"] = ["agg0_0->core0"]
    kind = pick(["incast", "permutation"])
    if kind == "incast":
        over["workload.senders"] = int(rng.integers(3, 15))
    over["workload.size_bytes"] = int(rng.integers(5_000, 80_000))
    sc = fabricsim.load_scenario(kind).with_overrides(over)
    res = fabricsim.run(sc, engine="packet")
    out["runs"].append({"over": over, "summary": res.summary,
                        "flows": res.flows.astype(str).to_dict("list"),
                        "tables": {k: v.astype(str).to_dict("list") for k, v in res.tables.items()}})
print(json.dumps(out, sort_keys=True))
"""


def _property_runs(pure: bool, cases: int) -> dict:
    env = {**os.environ, "FABRICSIM_PURE": "1" if pure else ""}
    proc = subprocess.run(
        [sys.executable, "-c", PROPERTY, str(cases)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(proc.stdout)


@pytest.mark.full
@pytest.mark.skipif(
    core_mode() == "pure" and not os.environ.get("CI"),
    reason="no compiled core in this install (CI requires one)",
)
def test_compiled_and_pure_agree_on_random_small_scenarios():
    compiled, pure = _property_runs(False, 8), _property_runs(True, 8)
    assert compiled["mode"] == "compiled" and pure["mode"] == "pure"
    for c, p in zip(compiled["runs"], pure["runs"], strict=True):
        assert c["over"] == p["over"]
        for part in ("summary", "flows", "tables"):
            assert c[part] == p[part], (part, c["over"])


def test_a_build_is_stale_when_a_cimported_declaration_changes(tmp_path):
    """A module compiled against another's ``.pxd`` (``cimport``) is stale when that ``.pxd``
    changes, not only when its own source does: the runtime check and the build's reuse of a
    compiled module read this one hash (a reused ``nic`` built against an older ``Pdc`` layout
    warned "size changed" at import)."""
    import importlib.util
    import shutil

    from fabricsim import _core_build

    pkg = tmp_path / "fabricsim"
    (pkg / "nic").mkdir(parents=True)
    shutil.copy(_core_build.__file__, pkg / "_core_build.py")
    (pkg / "nic" / "nic.py").write_text("x = 1\n")
    (pkg / "nic" / "pdc.pxd").write_text("cdef class Pdc:\n    cdef public long long a\n")
    spec = importlib.util.spec_from_file_location("copied_core_build", pkg / "_core_build.py")
    copied = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(copied)
    before = copied.digest(pkg / "nic" / "nic.py")
    (pkg / "nic" / "pdc.pxd").write_text("cdef class Pdc:\n    cdef public long long a, b\n")
    assert copied.digest(pkg / "nic" / "nic.py") != before
    (pkg / "nic" / "pdc.pxd").write_text("cdef class Pdc:\n    cdef public long long a\n")
    assert copied.digest(pkg / "nic" / "nic.py") == before
