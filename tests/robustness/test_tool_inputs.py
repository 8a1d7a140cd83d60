"""``ports`` option mixes and ranges, and ``export-trace`` on failed fabrics (issue 37 items 3
and 5), each in a forked, resource-limited child (harness.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness import assert_refused, run_cli, snapshot

SCEN = ["--scenario", "ecmp-collision", "--src-host", "0", "--dst-host", "9"]
STAGE = ["--paths", "4"]

CASES: dict[str, tuple[list[str], str]] = {
    # --- two modes that do not mix
    "--paths with --scenario": ([*STAGE, *SCEN], "are two modes"),
    "--scenario with --salt": ([*SCEN, "--salt", "7"], "--salt (one ECMP stage)"),
    "--scenario with --hash": ([*SCEN, "--hash", "crc32"], "--hash (one ECMP stage)"),
    "--scenario with --tier": ([*SCEN, "--tier", "2"], "--tier (one ECMP stage)"),
    "--scenario with --src-ip": ([*SCEN, "--src-ip", "10.0.0.5"], "--src-ip (one ECMP stage)"),
    "--scenario with --dst-port": ([*SCEN, "--dst-port", "4791"], "--dst-port (one ECMP"),
    "--scenario with --proto": ([*SCEN, "--proto", "17"], "--proto (one ECMP stage)"),
    "--paths with --src-host": ([*STAGE, "--src-host", "1"], "--src-host (a whole path"),
    "--paths with --dst-qp": ([*STAGE, "--dst-qp", "3"], "--dst-qp (a whole path"),
    "--paths with --set": ([*STAGE, "--set", "seed=3"], "--set (a whole path"),
    "--dst-qp alone": (["--dst-qp", "3"], "--dst-qp needs --scenario"),
    "--salt alone": (["--salt", "3"], "--salt needs --paths K"),
    # --- 5-tuple ranges, either mode
    "--paths --dst-qp -1": ([*STAGE, "--dst-qp", "-1"], "--dst-qp: must be an integer in 0..1023"),
    "--scenario --dst-qp -1": ([*SCEN, "--dst-qp", "-1"], "0..1023 (a queue pair index)"),
    "--scenario --dst-qp 1024": ([*SCEN, "--dst-qp", "1024"], "0..1023"),
    "--scenario --dst-qp 2**70": ([*SCEN, "--dst-qp", str(2**70)], "--dst-qp"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_ports_options_are_refused(tmp_path, case):
    argv, needle = CASES[case]
    before = snapshot(tmp_path)
    outcome = run_cli(["ports", *argv], tmp_path, wall_s=30)
    assert_refused(outcome, before, snapshot(tmp_path), needle=needle, wall_s=30)


FAILURES = {
    "failed link, htsim": ("htsim", "topology.failed_links=[agg0_0->core0]", "no htsim form"),
    "failed link, csv": ("csv", "topology.failed_links=[agg0_0->core0]", "CSV trace has no"),
    "degraded like htsim": ("htsim", "topology.degraded_links={core0->agg0_0: 0.1}", "-failed 1"),
    "degraded 0.5, htsim": ("htsim", "topology.degraded_links={core0->agg0_0: 0.5}", "not to"),
    "failed switch, csv": ("csv", "topology.failed_switches=[core1]", "failed_switches=[core1]"),
    "timed failure, htsim": (
        "htsim",
        "topology.link_failures=[{link: agg0_0->core0, at_s: 1e-5}]",
        "at_s: 1.0e-05",
    ),
}


@pytest.mark.parametrize("case", list(FAILURES))
def test_export_of_a_failed_fabric_warns_in_one_line(tmp_path, case):
    fmt, failure, needle = FAILURES[case]
    out: Path = tmp_path / "t.out"
    argv = ["export-trace", "permutation", "--format", fmt, "--out", str(out)]
    argv += ["--set", "topology.k=4", "--set", failure]
    outcome = run_cli(argv, tmp_path, wall_s=30)
    assert outcome.code == 0, outcome.stderr
    lines = [ln for ln in outcome.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "t.out carries no link failure" in lines[0], outcome.stderr
    assert needle in lines[0] and "--set 'topology." in lines[0]
    assert out.stat().st_size > 0
