"""``fabricsim ports``: two modes that do not mix, and every option range-checked (issue 37)."""

from __future__ import annotations

import json

import pytest

from fabricsim.cli import main

SCEN = ["--scenario", "ecmp-collision", "--src-host", "0", "--dst-host", "9"]


def _refused(capsys, argv: list[str]) -> str:
    assert main(["ports", *argv]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err and not captured.out
    return err


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (
            ["--paths", "4", *SCEN],
            "--paths (one ECMP stage) and --scenario, --src-host, --dst-host",
        ),
        ([*SCEN, "--salt", "5"], "--salt (one ECMP stage) and --scenario"),
        ([*SCEN, "--src-ip", "10.0.0.9"], "--src-ip (one ECMP stage)"),
        ([*SCEN, "--hash", "crc32"], "--hash (one ECMP stage)"),
        ([*SCEN, "--tier", "2"], "--tier (one ECMP stage)"),
        (["--paths", "4", "--dst-qp", "5"], "and --dst-qp (a whole path in a scenario)"),
        (["--paths", "4", "--src-host", "3"], "and --src-host (a whole path"),
        (["--paths", "4", "--set", "seed=2"], "and --set (a whole path"),
        (["--dst-qp", "3"], "ports: --dst-qp needs --scenario"),
        (["--salt", "3", "--proto", "6"], "ports: --proto, --salt need --paths K"),
        ([], "give --paths K"),
    ],
)
def test_the_two_modes_do_not_mix(capsys, argv, needle):
    assert needle in _refused(capsys, argv)


@pytest.mark.parametrize(
    "argv",
    [["--paths", "4", "--dst-qp", "-1"], [*SCEN, "--dst-qp", "-1"], [*SCEN, "--dst-qp", "1024"]],
)
def test_dst_qp_out_of_range_is_refused_with_its_range(capsys, argv):
    err = _refused(capsys, argv)
    assert "--dst-qp: must be an integer in 0..1023" in err


def test_an_empty_hash_is_not_the_default(capsys):
    assert "--hash: must be one of" in _refused(capsys, ["--paths", "4", "--hash", ""])


def test_each_mode_alone_still_runs(capsys):
    assert main(["ports", "--paths", "4", "--salt", "0", "--json"]) == 0
    stage = json.loads(capsys.readouterr().out)
    assert sum(p["count"] for p in stage["paths"].values()) == 65536
    assert main(["ports", "--paths", "4", "--json"]) == 0  # defaults are the same values
    assert json.loads(capsys.readouterr().out) == stage
    assert main(["ports", *SCEN, "--dst-qp", "1023", "--json"]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert sum(p["count"] for p in whole["paths"].values()) == 65536
