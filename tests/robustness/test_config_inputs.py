"""Bad scenarios, overrides and options: one line, exit 2, nothing written, quickly.

Each case runs ``fabricsim`` in a forked child under an address-space and CPU limit (see
harness.py), so a regression that hangs or allocates without bound fails here instead of
taking the machine down.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from harness import assert_refused, run_cli, snapshot

RUN = ["run", "ecmp-collision", "--out", "out"]


def _write(t: Path, name: str, data: str | bytes) -> str:
    path = t / name
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data)
    return name


def _yaml(t: Path, text: str) -> list[str]:
    return ["run", _write(t, "s.yaml", text), "--out", "out"]


def _symlink(t: Path) -> str:
    """A link to a file that must survive (export-trace once wrote through such a link)."""
    _write(t, "victim.txt", "keep me")
    (t / "link.csv").symlink_to(t / "victim.txt")
    return "link.csv"


def _deep(t: Path) -> list[str]:
    depth = 50_000
    return _yaml(t, "workload: " + "[" * depth + "]" * depth + "\n")


CASES: dict[str, tuple] = {
    # --- scenario files
    "non-utf8 scenario": (
        lambda t: ["run", _write(t, "s.yaml", b"seed: 1\n\xff\xfe\x00junk: [\n"), "--out", "o"],
        "UTF-8",
    ),
    "50,000-deep nesting": (_deep, "nested too deeply"),
    "duplicate yaml key": (
        lambda t: _yaml(t, "seed: 1\nseed: 2\nworkload: {kind: permutation}\n"),
        "duplicate key",
    ),
    "duplicate nested key": (
        lambda t: _yaml(t, "workload: {kind: permutation, size_bytes: 1, size_bytes: 2}\n"),
        "duplicate key",
    ),
    "scenario is a directory": (lambda t: ["run", ".", "--out", "out"], "directory"),
    "scenario is /dev/zero": (lambda t: ["run", "/dev/zero", "--out", "out"], "regular file"),
    "scenario of 20 MB": (
        lambda t: ["run", _write(t, "big.yaml", "# " + "x" * 20 * 1024**2 + "\n"), "--out", "o"],
        "MiB",
    ),
    "set value nested deeply": (
        lambda t: [*RUN, "--set", "topology.failed_links=" + "[" * 5000 + "]" * 5000],
        "topology.failed_links",
    ),
    "scenario is a list": (lambda t: _yaml(t, "- 1\n- 2\n"), "mapping"),
    "name escapes runs/": (
        lambda t: _yaml(t, "name: ../../../etc/x\nworkload: {kind: permutation}\n")[:2],
        "name",
    ),
    "name with leading dot": (lambda t: [*RUN, "--set", "name=.hidden"], "name"),
    # --- numbers
    "nan delay": (lambda t: [*RUN, "--set", "topology.link_delay_us=nan"], "finite"),
    "inf time limit": (lambda t: [*RUN, "--set", "engine.time_limit_s=.inf"], "finite"),
    "huge time limit": (lambda t: [*RUN, "--set", "engine.time_limit_s=1e12"], "time_limit_s"),
    "start 1e12": (lambda t: [*RUN, "--set", "workload.start_s=1e12"], "workload.start_s"),
    "start 1e7": (lambda t: [*RUN, "--set", "workload.start_s=1e7"], "workload.start_s"),
    "size 9e18": (lambda t: [*RUN, "--set", "workload.size_bytes=9e18"], "workload.size_bytes"),
    "failure at inf": (
        lambda t: [
            "run",
            "permutation",
            "--engine",
            "packet",
            "--out",
            "o",
            "--set",
            "topology.k=4",
            "--set",
            "topology.link_failures=[{link: agg0_0->core0, at_s: .inf}]",
        ],
        "finite",
    ),
    "auto-or-number word": (
        lambda t: [*RUN, "--set", "nic.initial_base_rtt_us=soon"],
        "'auto'",
    ),
    "auto-or-number nan": (lambda t: [*RUN, "--set", "nic.initial_base_rtt_us=nan"], "finite"),
    "memory limit word": (lambda t: [*RUN, "--set", "engine.max_memory_gb=lots"], "'auto'"),
    "ecn min above max": (
        lambda t: [
            "run",
            "spray-example",
            "--out",
            "o",
            "--set",
            "switch.ecn_min_bytes=9000",
            "--set",
            "switch.ecn_max_bytes=100",
        ],
        "ecn_min_bytes",
    ),
    "boolean seed": (lambda t: [*RUN, "--set", "seed=true"], "seed"),
    "boolean size": (lambda t: [*RUN, "--set", "workload.size_bytes=false"], "size_bytes"),
    "link rate rounding to 0 bps": (
        lambda t: [*RUN, "--set", "topology.link_gbps=1e-12"],
        "topology.link_gbps",
    ),
    "degraded to nothing": (
        lambda t: [*RUN, "--set", "topology.degraded_links={leaf0->spine0: 1.0e-300}"],
        "degraded_links",
    ),
    "timeline interval below 1 ps": (
        lambda t: [
            "run",
            "spray-example",
            "--out",
            "o",
            "--set",
            "records.timelines=true",
            "--set",
            "records.timeline_interval_us=1e-9",
        ],
        "timeline_interval_us",
    ),
    "negative seed": (lambda t: [*RUN, "--seed", "-4"], "seed"),
    "seed too big": (lambda t: [*RUN, "--set", "seed=1e30"], "seed"),
    # --- keys that do nothing
    "nscc on the flow engine": (lambda t: [*RUN, "--set", "nic.cc=nscc"], "nic.cc"),
    "no trimming on the flow engine": (
        lambda t: [*RUN, "--set", "switch.trimming=false"],
        "switch.trimming",
    ),
    "spines on a fat tree": (
        lambda t: ["run", "permutation", "--out", "o", "--set", "topology.spines=8"],
        "topology.spines",
    ),
    "k on a leaf-spine": (lambda t: [*RUN, "--set", "topology.k=4"], "topology.k"),
    "qp_mode with ecmp": (lambda t: [*RUN, "--set", "lb.qp_mode=split"], "lb.qp_mode"),
    "flowlet gap without flowlet": (
        lambda t: ["run", "spray-example", "--out", "o", "--set", "switch.flowlet_gap_us=5"],
        "switch.flowlet_gap_us",
    ),
    "fixed prompt length with zipf prompts": (
        lambda t: ["run", "ark", "--out", "o", "--set", "workload.prompt_tokens=5000"],
        "workload.prompt_tokens",
    ),
    "ARK delay without ARK": (
        lambda t: [*RUN, "--set", "lb.ark_control_delay_us=50"],
        "lb.ark_control_delay_us",
    ),
    "MoE token units with a synthetic matrix": (
        lambda t: ["run", "moe", "--out", "o", "--set", "workload.units=tokens"],
        "workload.units",
    ),
    "open loop on the packet engine": (
        lambda t: [
            "run",
            "spray-example",
            "--out",
            "o",
            "--set",
            "engine.flow_model=open_loop",
        ],
        "engine.flow_model",
    ),
    "default study on the packet engine": (lambda t: ["run", "--engine", "packet"], "--engine"),
    "default study with a negative seed": (lambda t: ["run", "--seed", "-4"], "seed"),
    "default study with a bad key": (lambda t: ["run", "--set", "lb.polcy=ark"], "lb.polcy"),
    # --- output paths
    "empty --out": (lambda t: ["run", "ecmp-collision", "--out", ""], "--out"),
    "export-trace empty --out": (
        lambda t: ["export-trace", "ecmp-collision", "--out", ""],
        "--out",
    ),
    "export-trace --out a directory": (
        lambda t: ["export-trace", "ecmp-collision", "--out", "."],
        "directory",
    ),
    "export-trace --out under a file": (
        lambda t: ["export-trace", "ecmp-collision", "--out", _write(t, "f", "x") + "/t.csv"],
        "is a file",
    ),
    "export-trace --out a symlink": (
        lambda t: ["export-trace", "ecmp-collision", "--out", _symlink(t)],
        "symbolic link",
    ),
    "empty --engine": (lambda t: [*RUN, "--engine", ""], "--engine"),
    "empty --engine for compare": (
        lambda t: ["compare", "ecmp-collision", "--engine", "", "--out", "c"],
        "--engine",
    ),
    "default study of another workload": (
        lambda t: ["run", "--set", "workload.kind=permutation"],
        "kv_cache",
    ),
    "empty key part": (lambda t: [*RUN, "--set", ".spines=5"], "key part"),
    "export-trace bad format": (
        lambda t: ["export-trace", "ecmp-collision", "--format", "xml", "--out", "t.xml"],
        "--format",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_is_refused_in_one_line(case, tmp_path):
    make_args, needle = CASES[case]
    argv = make_args(tmp_path)
    before = snapshot(tmp_path)
    outcome = run_cli(argv, tmp_path, wall_s=30)
    assert_refused(outcome, before, snapshot(tmp_path), needle=needle, wall_s=30)
