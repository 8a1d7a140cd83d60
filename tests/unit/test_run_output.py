"""A single run's output for people: the fabric and workload lines, units per magnitude; --json."""

import json
import re

from fabricsim.cli import main


def _run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_single_run_prints_fabric_workload_and_scaled_units(capsys, tmp_path):
    code, out, err = _run(capsys, "run", "ecmp-collision", "--out", str(tmp_path / "r"))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "ecmp-collision · flow engine · seed 1"
    assert lines[1].startswith("fabric:   leaf-spine, 16 hosts: 2 leaves × 8 hosts, 8 spines")
    assert lines[2].startswith("workload: leaf 0 → leaf 1")
    assert re.search(r"FCT\s+mean \d+(\.\d+)? µs · P50", out), out
    assert "8 of 8 = 100 %" in out and "(conserved)" in out
    assert not re.search(r"\de[-+]\d", out), "no e-notation in the table"
    assert len(lines) < 20


def test_packet_run_shows_shares_of_packets(capsys, tmp_path):
    code, out, _ = _run(capsys, "run", "moe", "--out", str(tmp_path / "m"))
    assert code == 0
    assert re.search(r"packets trimmed\s+[\d,]+ of [\d,]+ = \d+ %", out), out
    assert re.search(r"CCT\s+\d+(\.\d+)? µs \(lower bound", out), out


def test_run_json_is_the_summary(capsys, tmp_path):
    target = tmp_path / "r"
    code, out, _ = _run(capsys, "run", "ecmp-collision", "--out", str(target), "--json")
    assert code == 0
    assert json.loads(out) == json.loads((target / "summary.json").read_text())
