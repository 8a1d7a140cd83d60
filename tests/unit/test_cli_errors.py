"""Bad input: one line on stderr naming the field, exit code 2, nothing written."""

import pytest

from fabricsim.cli import main


def _trace(tmp_path, text, name="t.csv"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _trace_yaml(tmp_path, csv_text):
    return _yaml(tmp_path, f"workload: {{kind: trace, path: {_trace(tmp_path, csv_text)}}}\n")


def _yaml(tmp_path, text):
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return str(path)


CASES = {
    "unknown key": (
        lambda t: ["run", "ecmp-collision", "--set", "topology.spinez=4"],
        "topology.spinez",
    ),
    "negative size": (
        lambda t: ["run", "ecmp-collision", "--set", "workload.size_bytes=-5"],
        "workload.size_bytes",
    ),
    "zero spines": (
        lambda t: ["run", "ecmp-collision", "--set", "topology.spines=0"],
        "topology.spines",
    ),
    "unknown hash": (
        lambda t: ["run", "ecmp-collision", "--set", "switch.hash_method=md5"],
        "switch.hash_method",
    ),
    "unknown topology": (
        lambda t: ["run", "ecmp-collision", "--set", "topology.kind=torus"],
        "topology.kind",
    ),
    "trace missing column": (
        lambda t: ["run", _trace_yaml(t, "src,dst,start_s\n0,1,0\n")],
        "size_bytes",
    ),
    "trace host outside": (
        lambda t: ["run", _trace_yaml(t, "src,dst,size_bytes,start_s\n0,99,10,0\n")],
        "outside the fabric",
    ),
    "trace not a number": (
        lambda t: ["run", _trace_yaml(t, "src,dst,size_bytes,start_s\n0,1,ten,0\n")],
        "size_bytes",
    ),
    "broken yaml": (
        lambda t: ["run", _yaml(t, "topology: {kind: leaf_spine\nworkload: [\n")],
        "broken YAML",
    ),
    "missing file": (lambda t: ["run", str(t / "nope.yaml")], "not found"),
    "unknown scenario": (lambda t: ["run", "no-such-scenario"], "unknown scenario"),
    "bad engine": (lambda t: ["run", "ecmp-collision", "--engine", "quantum"], "--engine"),
    "set without =": (lambda t: ["run", "ecmp-collision", "--set", "seed"], "KEY=VALUE"),
    "spraying range": (
        lambda t: ["run", "ecmp-collision", "--set", "nic.EntropyMaskBits=9"],
        "nic.entropy_mask_bits",
    ),
    "missing workload": (lambda t: ["run", _yaml(t, "seed: 3\n")], "workload"),
    "unknown workload kind": (lambda t: ["run", _yaml(t, "workload: {kind: bogus}\n")], "workload"),
    "bad ecmp-math": (lambda t: ["ecmp-math", "--flows", "0", "--uplinks", "8"], "flows"),
    "unknown option": (lambda t: ["run", "ecmp-collision", "--frobnicate"], "frobnicate"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_one_line_exit_2(case, tmp_path, capsys):
    make_args, needle = CASES[case]
    out_dir = tmp_path / "out"
    args = make_args(tmp_path)
    if args[0] == "run":
        args = [*args, "--out", str(out_dir), "--quiet"]
    code = main(args)
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1, err
    assert needle in err
    assert "Traceback" not in err
    assert not out_dir.exists()


def test_good_run_writes_outputs(tmp_path, capsys):
    out = tmp_path / "o"
    assert main(["run", "ecmp-collision", "--out", str(out), "--quiet"]) == 0
    assert capsys.readouterr().out == ""
    for name in ("summary.json", "timing.json", "flows.parquet", "config.yaml"):
        assert (out / name).exists()


def test_engine_refusal_is_one_line(capsys, tmp_path):
    code = main(
        [
            "run",
            "ecmp-collision",
            "--engine",
            "flow",
            "--set",
            "records.uet_monitor=true",
            "--out",
            str(tmp_path / "x"),
        ]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "packet" in err
