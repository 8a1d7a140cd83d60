"""Warnings on the command line (issue 37): one plain line each, once, also when they come from
the worker processes of ``--workers`` (each worker would meet them again)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import fabricsim

SRC = str(Path(fabricsim.__file__).resolve().parents[1])  # the sources under test, for workers
WARNS = ["--set", "nic.packet_spraying_type=reps", "--set", "switch.load_balancing_method=flowlet"]
WARNING = (
    "warning: nic.packet_spraying_type=reps with switch.load_balancing_method=flowlet: the "
    "switches move flows between members at gaps, so REPS's entropy feedback loses its meaning\n"
)

STUDY = ["study", "spray-example", "--set", "nic.packet_spraying_type=reps",
         "--vs", "switch.load_balancing_method=flowlet,ecmp", "--seeds", "2", "--workers", "2"]  # fmt: skip


@pytest.mark.full
@pytest.mark.parametrize(
    "argv",
    [
        ["run", "spray-example", *WARNS],
        ["sweep", "spray-example", *WARNS, "--grid", "seed=1,2,3,4", "--workers", "2"],
        STUDY,
    ],
    ids=["run", "sweep", "study"],
)
def test_a_warning_is_one_plain_line_once_also_from_worker_processes(argv, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": SRC, "PYTHONWARNINGS": ""}
    done = subprocess.run(
        [sys.executable, "-m", "fabricsim", *argv, "--out", "o", "--quiet"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr == WARNING
