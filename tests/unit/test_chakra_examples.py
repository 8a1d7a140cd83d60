"""The example Chakra trace sets are the project writer's, and ``fabricsim run`` of them prints
the iteration time and the exposed communication on both engines."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabricsim.cli import main
from fabricsim.workloads.chakra_traces import (
    moe_layer_traces,
    rail_groups,
    training_step_traces,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize(
    ("folder", "write"),
    [("chakra-training-step", training_step_traces), ("chakra-moe-layer", moe_layer_traces)],
)
def test_the_example_traces_are_what_the_writer_writes(tmp_path, folder, write):
    written = {p.name: p.read_bytes() for p in write(tmp_path)}
    shipped = {p.name: p.read_bytes() for p in (EXAMPLES / folder / "traces").iterdir()}
    assert written == shipped


def test_the_training_step_yaml_lists_the_writers_groups():
    import yaml

    data = yaml.safe_load((EXAMPLES / "chakra-training-step/training-step.yaml").read_text())
    assert data["workload"]["trace_groups"] == rail_groups(32, 8)


def test_fabricsim_run_prints_the_training_steps_iteration_and_exposed_comm(tmp_path, capsys):
    yaml_path = EXAMPLES / "chakra-training-step/training-step.yaml"
    assert main(["run", str(yaml_path), "--engine", "flow", "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "iteration time" in out and "exposed communication" in out
    assert (tmp_path / "o" / "chakra_timeline.parquet").exists()


def test_fabricsim_run_of_a_chakra_replay_prints_both_on_the_packet_engine(tmp_path, capsys):
    """The packet engine (the example itself: ``scripts/chakra_study.py``); a small step."""
    training_step_traces(tmp_path / "t", ranks=4, gpus_per_server=1, layers=1, bucket_bytes=65536)
    yaml_path = tmp_path / "s.yaml"
    yaml_path.write_text(
        "topology: {kind: leaf_spine, leaves: 2, spines: 2, hosts_per_leaf: 2, link_gbps: 100}\n"
        "workload: {kind: chakra, path: t, gpus_per_server: 1}\n"
    )
    assert main(["run", str(yaml_path), "--engine", "packet", "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "iteration time" in out and "exposed communication" in out


def test_the_moe_layer_yaml_builds_its_flows():
    import fabricsim
    from fabricsim.experiments.runner import fabric_of
    from fabricsim.workloads import generate

    sc = fabricsim.load_scenario(EXAMPLES / "chakra-moe-layer/moe-layer.yaml")
    flows = generate(sc, fabric_of(sc))
    assert len(flows) == 2 * 2 * 32 * 24  # 2 layers x 2 all-to-alls x 32 ranks x 24 off-server
    assert flows.meta["chakra"].ranks == 32
