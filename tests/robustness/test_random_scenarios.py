"""Random scenario dicts, valid and broken, against the contract of ``fabricsim run``.

Hypothesis starts from a small valid scenario and sets up to three keys (any key of the
effective scenario, or a made-up one) to values of random types.  Every run happens in a
forked child under rlimits (harness.py).  The contract:

* refused: exit 2, at most two stderr lines, no traceback, nothing written;
* accepted: exit 0 within the wall limit, every byte conserved, the flow count honest, and a
  second run of the same file gives a byte-identical ``summary.json``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from harness import assert_refused, run_cli, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fabricsim

BASES = [
    {
        "seed": 3,
        "engine": {"kind": "flow", "max_memory_gb": 2},
        "topology": {"kind": "leaf_spine", "spines": 2, "leaves": 2, "hosts_per_leaf": 2},
        "workload": {"kind": "permutation", "size_bytes": 50_000},
    },
    {
        "seed": 5,
        "engine": {"kind": "packet", "max_memory_gb": 2, "max_packets": 20_000},
        "topology": {"kind": "fat_tree", "k": 4},
        "workload": {"kind": "incast", "senders": 3, "size_bytes": 40_000},
        "nic": {"packet_spraying_type": "reps"},
    },
    {
        "seed": 7,
        "engine": {"kind": "flow", "max_memory_gb": 2},
        "topology": {"kind": "leaf_spine", "spines": 2, "leaves": 2, "hosts_per_leaf": 4},
        "workload": {"kind": "collective", "op": "ring_allreduce", "size_bytes": 80_000},
    },
]


def _dotted(data: dict, prefix: str = "") -> list[str]:
    out = []
    for key, value in data.items():
        if isinstance(value, dict) and value:
            out += _dotted(value, f"{prefix}{key}.")
        else:
            out.append(f"{prefix}{key}")
    return out


KEYS = sorted(
    {k for base in BASES for k in _dotted(fabricsim.load_scenario(base).to_dict())}
    | {"topology.spinez", "workload.bogus", "nic", "lb.policy.x"}
)
VALUES = st.one_of(
    st.sampled_from([0, 1, 2, 3, -1, 7, 2**31, 2**70, 10**19]),
    st.sampled_from([0.5, -0.5, 1e-9, 1e30, float("nan"), float("inf"), -float("inf")]),
    st.sampled_from(["", "x", "auto", "none", "ecmp", "reps", "fat_tree", "../x", "é"]),
    st.booleans(),
    st.none(),
    st.lists(st.integers(-2, 40), max_size=3),
    st.dictionaries(st.sampled_from(["a", "link", "at_s"]), st.integers(-1, 3), max_size=2),
)


def _set(data: dict, key: str, value) -> None:
    parts = key.split(".")
    node = data
    for part in parts[:-1]:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[parts[-1]] = value


@pytest.mark.full
@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    base=st.sampled_from(range(len(BASES))),
    changes=st.lists(st.tuples(st.sampled_from(KEYS), VALUES), max_size=3),
)
def test_random_scenarios_keep_the_contract(tmp_path_factory, base, changes):
    work: Path = tmp_path_factory.mktemp("case")
    data = json.loads(json.dumps(BASES[base]))
    for key, value in changes:
        _set(data, key, value)
    (work / "s.yaml").write_text(yaml.safe_dump(data, allow_unicode=True))
    before = snapshot(work)
    first = run_cli(["run", "s.yaml", "--out", "out", "--quiet"], work, wall_s=60)
    if first.code != 0:
        assert_refused(first, before, snapshot(work), wall_s=60)
        return
    summary = json.loads((work / "out" / "summary.json").read_text())
    assert summary["bytes_conserved"] is True, summary
    assert 0 <= summary["flows_completed"] <= summary["flows_total"]
    assert summary["bytes_delivered"] <= summary["bytes_total"]
    again = run_cli(["run", "s.yaml", "--out", "again", "--quiet"], work, wall_s=60)
    assert again.code == 0, again.stderr
    assert (work / "again" / "summary.json").read_bytes() == (
        work / "out" / "summary.json"
    ).read_bytes()
    shutil.rmtree(work, ignore_errors=True)
