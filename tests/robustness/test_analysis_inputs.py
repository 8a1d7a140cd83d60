"""Bad input to the analysis verbs (``ecmp-math``, ``ports``, ``report``): one line, exit 2,
nothing written, quickly.

Each case builds its inputs into a fresh directory (report cases copy a real run or sweep
output and then corrupt one file), takes a snapshot, runs the CLI in a forked,
resource-limited child (harness.py) and checks the bad-input contract.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import scipy.stats  # noqa: F401
from harness import assert_refused, run_cli, snapshot

import fabricsim
import fabricsim.analysis.ecmp_math  # noqa: F401 - imported before the fork: warm children
import fabricsim.report.figures  # noqa: F401

NOT_UTF8 = b"\xff\xfe\x00garbage"
WALL_S = 20


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict[str, Path]:
    """A real run output (with timelines) and a real two-point sweep, made once."""
    from fabricsim.experiments.plan import plan_sweep
    from fabricsim.experiments.sweep import run_sweep

    root = tmp_path_factory.mktemp("outputs")
    sc = fabricsim.load_scenario("ecmp-collision").with_overrides({"records.timelines": True})
    fabricsim.run(sc).save(root / "run")
    plan = plan_sweep("ecmp-collision", grid=["workload.size_bytes=1000000,2000000"])
    run_sweep(plan, root / "sweep", workers=1)
    return {"run": root / "run", "sweep": root / "sweep"}


# --------------------------------------------------------------------------- case builders


def argv(*args: str):
    return lambda t, outputs: list(args)


def _write(path: Path, data: str | bytes) -> None:
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data)


def run_with(name: str, data: str | bytes | None):
    """``report`` of a copy of the run with file ``name`` replaced (None: deleted)."""

    def build(t: Path, outputs: dict[str, Path]) -> list[str]:
        d = t / "run"
        shutil.copytree(outputs["run"], d)
        if data is None:
            (d / name).unlink()
        else:
            _write(d / name, data)
        return ["report", str(d)]

    return build


def run_edit(edit):
    """``report`` of a copy of the run after ``edit(run_dir)``."""

    def build(t: Path, outputs: dict[str, Path]) -> list[str]:
        d = t / "run"
        shutil.copytree(outputs["run"], d)
        edit(d)
        return ["report", str(d)]

    return build


def sweep_with(name: str, data: str | bytes | None):
    """``report`` of a copy of the sweep with file ``name`` replaced (None: deleted)."""

    def build(t: Path, outputs: dict[str, Path]) -> list[str]:
        d = t / "sweep"
        shutil.copytree(outputs["sweep"], d)
        if data is None:
            (d / name).unlink()
        else:
            _write(d / name, data)
        return ["report", str(d)]

    return build


def sweep_manifest(edit):
    """``report`` of a copy of the sweep whose manifest went through ``edit(dict)``."""

    def build(t: Path, outputs: dict[str, Path]) -> list[str]:
        d = t / "sweep"
        shutil.copytree(outputs["sweep"], d)
        manifest = json.loads((d / "manifest.json").read_text())
        edit(manifest)
        (d / "manifest.json").write_text(json.dumps(manifest))
        return ["report", str(d)]

    return build


def sweep_edit(edit):
    """``report`` of a copy of the sweep after ``edit(sweep_dir)``."""

    def build(t: Path, outputs: dict[str, Path]) -> list[str]:
        d = t / "sweep"
        shutil.copytree(outputs["sweep"], d)
        edit(d)
        return ["report", str(d)]

    return build


def _point_json(text: str):
    """A corrupt point record; without sweep.parquet the table is rebuilt from the records."""

    def edit(d: Path) -> None:
        (d / "sweep.parquet").unlink()
        (d / "points" / "p0000" / "point.json").write_text(text)

    return edit


def _unknown_point(d: Path) -> None:
    table = pd.read_parquet(d / "sweep.parquet")
    table.loc[0, "point"] = "../../elsewhere"
    table.to_parquet(d / "sweep.parquet")


def _replace_by_dir(name: str):
    def edit(d: Path) -> None:
        (d / name).unlink()
        (d / name).mkdir()

    return edit


def _truncate(name: str):
    def edit(d: Path) -> None:
        data = (d / name).read_bytes()
        (d / name).write_bytes(data[: len(data) // 2])

    return edit


def _frame(name: str, frame: dict):
    return lambda d: pd.DataFrame(frame).to_parquet(d / name)


def _summary(**changes):
    def edit(d: Path) -> None:
        summary = json.loads((d / "summary.json").read_text())
        (d / "summary.json").write_text(json.dumps(summary | changes))

    return edit


def _drop_key(key: str):
    return lambda m: m.pop(key)


def _point_id(value: str):
    return lambda m: m["points"][0].update(id=value)


def not_a_directory(t: Path, outputs) -> list[str]:
    (t / "f").write_text("x")
    return ["report", str(t / "f")]


def foreign_directory(t: Path, outputs) -> list[str]:
    (t / "d").mkdir()
    (t / "d" / "notes.txt").write_text("mine")
    return ["report", str(t / "d")]


def figures_is_a_file(t: Path, outputs) -> list[str]:
    d = t / "run"
    shutil.copytree(outputs["run"], d)
    (d / "figures").write_text("not a folder")
    return ["report", str(d)]


PORTS = ["ports", "--paths", "4"]
SCEN = ["ports", "--scenario", "ecmp-collision"]

CASES: dict[str, tuple] = {
    # --- ecmp-math: sizes past both methods' bounds, Monte Carlo trial counts
    "ecmp-math 1e6 flows on 64 uplinks": (
        argv("ecmp-math", "--flows", "1000000", "--uplinks", "64"),
        "--flows",
    ),
    "ecmp-math 1e12 flows": (
        argv("ecmp-math", "--flows", str(10**12), "--uplinks", "64"),
        "--uplinks",
    ),
    "ecmp-math 1e7 uplinks, 5000 flows": (
        argv("ecmp-math", "--flows", "5000", "--uplinks", str(10**7)),
        "--uplinks",
    ),
    "ecmp-math qp scaling past the bound": (
        argv("ecmp-math", "--flows", "100000", "--uplinks", "8", "--qp-scaling", "64"),
        "--flows",
    ),
    "ecmp-math monte carlo 1e8 trials": (
        argv("ecmp-math", "--flows", "8", "--uplinks", "8", "--monte-carlo", str(10**8)),
        "--monte-carlo",
    ),
    "ecmp-math monte carlo on 1e5 flows": (
        argv("ecmp-math", "--flows", "100000", "--uplinks", "64", "--monte-carlo", "1000"),
        "--monte-carlo",
    ),
    "ecmp-math monte carlo negative": (
        argv("ecmp-math", "--flows", "8", "--uplinks", "8", "--monte-carlo", "-5"),
        "trials",
    ),
    "ecmp-math uplinks 0": (argv("ecmp-math", "--flows", "8", "--uplinks", "0"), "uplinks"),
    # --- ports, one stage: every option's range
    "ports --paths 1e8": (argv("ports", "--paths", "100000000"), "--paths"),
    "ports --paths 65537": (argv("ports", "--paths", "65537"), "65536"),
    "ports --paths 0": (argv("ports", "--paths", "0"), "--paths"),
    "ports --paths -3": (argv("ports", "--paths", "-3"), "--paths"),
    "ports --tier 99": (argv(*PORTS, "--tier", "99"), "--tier"),
    "ports --tier 0": (argv(*PORTS, "--tier", "0"), "3 (core)"),
    "ports --salt 2**32": (argv(*PORTS, "--salt", str(2**32)), "--salt"),
    "ports --salt -1": (argv(*PORTS, "--salt", "-1"), "--salt"),
    "ports --salt 1e30": (argv(*PORTS, "--salt", str(10**30)), "--salt"),
    "ports --dst-port 65536": (argv(*PORTS, "--dst-port", "65536"), "--dst-port"),
    "ports --dst-port -1": (argv(*PORTS, "--dst-port", "-1"), "--dst-port"),
    "ports --proto 256": (argv(*PORTS, "--proto", "256"), "--proto"),
    "ports --proto -1": (argv(*PORTS, "--proto", "-1"), "--proto"),
    "ports --hash random": (argv(*PORTS, "--hash", "random"), "--hash"),
    "ports --hash unknown": (argv(*PORTS, "--hash", "md5"), "crc32WithSalt"),
    "ports --src-ip bad": (argv(*PORTS, "--src-ip", "300.1.1.1"), "--src-ip"),
    # --- ports, a whole path
    "ports --dst-host outside": (argv(*SCEN, "--src-host", "0", "--dst-host", "99"), "--dst-host"),
    "ports --src-host negative": (argv(*SCEN, "--src-host", "-1", "--dst-host", "9"), "--src-host"),
    "ports src == dst": (argv(*SCEN, "--src-host", "3", "--dst-host", "3"), "must differ"),
    "ports random hash scenario": (
        argv(*SCEN, "--src-host", "0", "--dst-host", "9", "--set", "switch.hash_method=random"),
        "random",
    ),
    "ports more paths than ports": (
        argv(
            *SCEN,
            "--src-host",
            "0",
            "--dst-host",
            "9",
            "--set",
            "topology.parallel_links=64",
            "--set",
            "topology.spines=64",
        ),
        "topology.parallel_links",
    ),  # fmt: skip
    # --- report: the directory itself
    "report missing directory": (argv("report", "nope"), "no such directory"),
    "report of a file": (not_a_directory, "not a directory"),
    "report of an empty directory": (argv("report", "."), "summary.json"),
    "report of a foreign directory": (foreign_directory, "not a fabricsim run, study or sweep"),
    "report figures is a file": (figures_is_a_file, "figures"),
    # --- report of a run: summary.json
    "run summary corrupt": (run_with("summary.json", "{not json"), "summary.json"),
    "run summary empty": (run_with("summary.json", ""), "summary.json"),
    "run summary a list": (run_with("summary.json", "[1, 2]"), "JSON object"),
    "run summary not utf-8": (run_with("summary.json", NOT_UTF8), "UTF-8"),
    "run summary is a directory": (run_edit(_replace_by_dir("summary.json")), "summary.json"),
    "run flows.parquet is a directory": (
        run_edit(_replace_by_dir("flows.parquet")),
        "flows.parquet",
    ),
    "run summary cct_inflation text": (run_edit(_summary(cct_inflation="abc")), "cct_inflation"),
    # --- report of a run: flows.parquet and the other tables
    "run missing flows.parquet": (run_with("flows.parquet", None), "flows.parquet"),
    "run flows.parquet truncated": (run_edit(_truncate("flows.parquet")), "flows.parquet"),
    "run flows.parquet garbage": (
        run_with("flows.parquet", bytes(range(256)) * 8),
        "flows.parquet",
    ),
    "run flows.parquet empty file": (run_with("flows.parquet", b""), "flows.parquet"),
    "run flows.parquet is csv": (run_with("flows.parquet", "flow_id,fct_s\n0,1\n"), "Parquet"),
    "run flows lacks fct_s": (run_edit(_frame("flows.parquet", {"flow_id": [0]})), "fct_s"),
    "run flows fct_s is text": (
        run_edit(_frame("flows.parquet", {"fct_s": ["a"], "size_bytes": [1], "start_s": [0.0]})),
        "fct_s",
    ),
    "run timeline_links truncated": (
        run_edit(_truncate("timeline_links.parquet")),
        "timeline_links.parquet",
    ),
    "run timeline_links lacks columns": (
        run_edit(_frame("timeline_links.parquet", {"link": ["a"]})),
        "queue_bytes",
    ),
    "run spine timeline garbage": (
        run_with("timeline_spine_flows.parquet", b"PAR1junkPAR1"),
        "timeline_spine_flows.parquet",
    ),
    "run port_stats garbage": (run_with("port_stats.parquet", b"\x00" * 64), "port_stats.parquet"),
    "run config.yaml invalid": (run_with("config.yaml", "topology: [unclosed\n"), "config.yaml"),
    "run config.yaml a list": (run_with("config.yaml", "- 1\n- 2\n"), "YAML mapping"),
    "run config.yaml not utf-8": (run_with("config.yaml", NOT_UTF8), "config.yaml"),
    "run transport stats corrupt": (
        run_with("uet_transport_stats.json", "{"),
        "uet_transport_stats",
    ),
    "run transport stats nics a list": (
        run_with("uet_transport_stats.json", '{"nics": [1]}'),
        "nics",
    ),
    # --- report of a sweep
    "sweep manifest corrupt": (sweep_with("manifest.json", '{"spec": '), "manifest.json"),
    "sweep manifest not utf-8": (sweep_with("manifest.json", NOT_UTF8), "manifest.json"),
    "sweep manifest a list": (sweep_with("manifest.json", "[]"), "manifest.json"),
    "sweep manifest without spec": (sweep_manifest(_drop_key("spec")), "manifest.json"),
    "sweep manifest without points": (sweep_manifest(_drop_key("points")), "points"),
    "sweep manifest point id escapes": (sweep_manifest(_point_id("../../etc")), "plain name"),
    "sweep manifest grid not pairs": (
        sweep_manifest(lambda m: m["spec"].update(grid="abc")),
        "spec.grid",
    ),
    "sweep table corrupt": (sweep_with("sweep.parquet", b"garbage"), "sweep.parquet"),
    "sweep table foreign": (sweep_edit(_frame("sweep.parquet", {"a": [1]})), "sweep.parquet"),
    "sweep table unknown point": (sweep_edit(_unknown_point), "not in the sweep's manifest"),
    "sweep point.json corrupt": (sweep_edit(_point_json("{x")), "point.json"),
    "sweep point.json no summary": (sweep_edit(_point_json('{"id": "p0000"}')), "summary"),
    "sweep point flows corrupt": (
        sweep_with("points/p0001/flows.parquet", b"zz"),
        "points/p0001/flows.parquet",
    ),
    "sweep point flows missing": (sweep_with("points/p0000/flows.parquet", None), "flows.parquet"),
    "sweep point summary corrupt": (sweep_with("points/p0000/summary.json", "{"), "summary.json"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_analysis_input_is_refused(tmp_path, outputs, case):
    build, needle = CASES[case]
    args = build(tmp_path, outputs)
    before = snapshot(tmp_path)
    outcome = run_cli(args, tmp_path, wall_s=WALL_S)
    assert_refused(outcome, before, snapshot(tmp_path), needle=needle, wall_s=WALL_S)


# --------------------------------------------------------------------------- what still works


def test_ecmp_math_large_case_is_fast_and_labelled(tmp_path):
    args = ["ecmp-math", "--flows", "100000", "--uplinks", "64", "--json"]
    outcome = run_cli(args, tmp_path, wall_s=WALL_S)
    assert outcome.code == 0, outcome.stderr
    data = json.loads(outcome.stdout)
    assert data["method"] == "numeric"
    assert 1600 < data["expected_max_load"] < 1700
    assert outcome.wall_s < 10


def test_ecmp_math_small_case_stays_exact(tmp_path):
    outcome = run_cli(["ecmp-math", "--flows", "8", "--uplinks", "8", "--json"], tmp_path)
    assert outcome.code == 0, outcome.stderr
    data = json.loads(outcome.stdout)
    assert "method" not in data  # exact output keeps its shape
    assert data["p_no_collision"] == 0.00240325927734375


@pytest.mark.full
def test_ports_65536_members_lists_every_port(tmp_path):
    outcome = run_cli(["ports", "--paths", "65536", "--json"], tmp_path, wall_s=WALL_S)
    assert outcome.code == 0, outcome.stderr
    paths = json.loads(outcome.stdout)["paths"]
    assert len(paths) == 65536 and sum(p["count"] for p in paths.values()) == 65536


@pytest.mark.full
def test_report_of_good_outputs_still_works(tmp_path, outputs):
    for name in ("run", "sweep"):
        d = tmp_path / name
        shutil.copytree(outputs[name], d)
        outcome = run_cli(["report", str(d)], tmp_path, wall_s=60)
        assert outcome.code == 0, outcome.stderr
        assert (d / "report.html").read_text().startswith("<!DOCTYPE html>")
        leftovers = [p.name for p in d.iterdir() if p.name.startswith(".") and "tmp" in p.name]
        assert leftovers == []


def test_report_replaces_old_figures_whole(tmp_path, outputs):
    d = tmp_path / "run"
    shutil.copytree(outputs["run"], d)
    (d / "figures").mkdir()
    (d / "figures" / "stale.png").write_bytes(b"old")
    outcome = run_cli(["report", str(d)], tmp_path, wall_s=60)
    assert outcome.code == 0, outcome.stderr
    names = sorted(p.name for p in (d / "figures").iterdir())
    assert "stale.png" not in names and "fct-cdf.svg" in names
    assert not [p for p in d.iterdir() if p.name.startswith(".figures")]
