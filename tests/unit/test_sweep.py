"""Sweeps: planning, bad input, local pool vs Dask, resuming a killed sweep."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

import fabricsim
from fabricsim.cli import main
from fabricsim.experiments.plan import parse_axis, plan_sweep
from fabricsim.experiments.sweep import run_sweep
from fabricsim.experiments.sweep_store import MANIFEST, POINT_FILE, TABLE

FAST = ["topology.spines=4,8"]  # ecmp-collision points take ~10 ms each


def test_parse_axis_values_are_yaml_scalars() -> None:
    assert parse_axis("workload.qps=5, 10.5 ,20") == ("workload.qps", [5, 10.5, 20])
    assert parse_axis("topology.failed_links=[],[leaf0->spine1, leaf0->spine2]") == (
        "topology.failed_links",
        [[], ["leaf0->spine1", "leaf0->spine2"]],
    )
    assert parse_axis("records.timelines=true,false", "--zip")[1] == [True, False]


def test_plan_orders_grid_then_zip_then_seed() -> None:
    plan = plan_sweep(
        "ecmp-collision",
        grid=["topology.spines=4,8"],
        zipped=["workload.size_bytes=1000,2000", "topology.link_gbps=100,400"],
        seeds=2,
    )
    rows = [
        (p.params["topology.spines"], p.params["workload.size_bytes"], p.seed) for p in plan.points
    ]
    assert rows == [
        (4, 1000, 1), (4, 1000, 2), (4, 2000, 1), (4, 2000, 2),
        (8, 1000, 1), (8, 1000, 2), (8, 2000, 1), (8, 2000, 2),
    ]  # fmt: skip
    assert all(
        p.params["topology.link_gbps"] == {1000: 100, 2000: 400}[p.params["workload.size_bytes"]]
        for p in plan.points
    )
    assert [p.id for p in plan.points] == [f"p{i:04d}" for i in range(8)]
    assert plan.keys == ["topology.spines", "workload.size_bytes", "topology.link_gbps"]
    assert (
        plan.points[3].scenario["seed"] == 2 and plan.points[3].scenario["topology"]["spines"] == 4
    )


BAD = {
    "unknown grid key": (["--grid", "workload.nope=1,2"], "workload.nope"),
    "unknown section": (["--grid", "nosuch.key=1,2"], "nosuch"),
    "bad grid value": (["--grid", "lb.policy=ecmp,nope"], "lb.policy"),
    "empty grid values": (["--grid", "topology.spines="], "no values"),
    "no grid at all": ([], "empty grid"),
    "no equals": (["--grid", "topology.spines"], "KEY=V1"),
    "zip lengths": (["--zip", "topology.spines=4,8", "--zip", "seed=1,2,3"], "same number"),
    "key twice": (["--grid", "topology.spines=4,8", "--zip", "topology.spines=2,3"], "twice"),
    "unreachable scheduler": (
        ["--grid", *FAST, "--scheduler", "tcp://127.0.0.1:9", "--connect-timeout", "1"],
        "cannot reach",
    ),
    "bad scheduler address": (["--grid", *FAST, "--scheduler", "localhost"], "--scheduler"),
    "workers and scheduler": (
        ["--grid", *FAST, "--workers", "2", "--scheduler", "tcp://127.0.0.1:9"],
        "not both",
    ),
    "bad seeds": (["--grid", *FAST, "--seeds", "0"], "--seeds"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_one_line_exit_2_no_manifest(case: str, tmp_path: Path, capsys) -> None:
    args, needle = BAD[case]
    out = tmp_path / "sweep"
    t0 = time.perf_counter()
    code = main(["sweep", "ecmp-collision", *args, "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and needle in err, err
    assert "Traceback" not in err
    assert not out.exists()  # nothing written, no partial manifest
    assert time.perf_counter() - t0 < 20


def test_local_pool_sweep_resumes_only_missing_points(tmp_path: Path, capsys) -> None:
    out = tmp_path / "s"
    args = ["sweep", "ecmp-collision", "--grid", *FAST, "--seeds", "3", "--out", str(out)]
    assert main([*args, "--workers", "2"]) == 0
    captured = capsys.readouterr()
    assert "6 run, 0 already done" in captured.out and captured.err == ""  # no bar when piped
    first = pd.read_parquet(out / TABLE)
    assert first["point"].tolist() == [f"p{i:04d}" for i in range(6)]
    assert first[["topology.spines", "seed"]].values.tolist() == [
        [4, 1], [4, 2], [4, 3], [8, 1], [8, 2], [8, 3]
    ]  # fmt: skip
    assert (first["status"] == "ok").all() and first["step_efficiency"].notna().all()
    assert list(first.columns[:5]) == ["point", "index", "status", "seed", "topology.spines"]
    assert (out / "points" / "p0004" / "flows.parquet").exists()
    kept = (out / "points" / "p0000" / POINT_FILE).stat().st_mtime_ns
    # a "killed" sweep: two points lost their record, one its whole directory
    (out / "points" / "p0001" / POINT_FILE).unlink()
    (out / "points" / "p0005" / POINT_FILE).write_text("{ truncated")
    for f in (out / "points" / "p0003").iterdir():
        f.unlink()
    (out / TABLE).unlink()
    plan = plan_sweep("ecmp-collision", grid=FAST, seeds=3)
    outcome = run_sweep(plan, out, workers=2)
    assert outcome.ran == ["p0001", "p0003", "p0005"]
    assert outcome.skipped == ["p0000", "p0002", "p0004"] and not outcome.failed
    assert (out / "points" / "p0000" / POINT_FILE).stat().st_mtime_ns == kept
    pd.testing.assert_frame_equal(pd.read_parquet(out / TABLE), first)
    again = run_sweep(plan, out, workers=2)
    assert again.ran == [] and len(again.skipped) == 6


def test_a_different_sweep_in_the_same_directory_is_refused(tmp_path: Path, capsys) -> None:
    out = tmp_path / "s"
    assert main(["sweep", "ecmp-collision", "--grid", "topology.spines=4", "--seeds", "2",
                 "--out", str(out), "--workers", "1", "--quiet"]) == 0  # fmt: skip
    manifest = (out / MANIFEST).read_text()
    code = main(["sweep", "ecmp-collision", "--grid", "topology.spines=8", "--seeds", "2",
                 "--out", str(out), "--workers", "1", "--quiet"])  # fmt: skip
    assert code == 2 and "different sweep" in capsys.readouterr().err
    assert (out / MANIFEST).read_text() == manifest


def _reference_table(plan) -> list[dict]:
    """Each point run directly in this process (what any backend must reproduce)."""
    return [fabricsim.run(fabricsim.load_scenario(p.scenario)).summary for p in plan.points]


@pytest.mark.full
def test_sigkilled_sweep_resumes_and_ends_with_the_same_table(tmp_path: Path) -> None:
    out = tmp_path / "killed"
    sets = ["workload.requests=150"]
    grid = ["workload.qps=10,20,40"]
    cmd = [sys.executable, "-c", "import sys; from fabricsim.cli import main; sys.exit(main())",
           "sweep", "ark", "--grid", *grid, "--seeds", "2", "--set", *sets, "--out", str(out),
           "--workers", "1", "--quiet"]  # fmt: skip
    proc = subprocess.Popen(cmd, start_new_session=True)
    deadline = time.monotonic() + 60

    def finished() -> list[str]:  # (not points/.tmp-*: a point still being written)
        return sorted(
            p.parent.name
            for p in out.glob(f"points/*/{POINT_FILE}")
            if not p.parent.name.startswith(".")
        )

    while not finished():
        assert proc.poll() is None and time.monotonic() < deadline, "sweep ended early"
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done = finished()
    assert (out / MANIFEST).exists() and not (out / TABLE).exists()
    if len(done) == 6:
        pytest.skip("every point finished before the kill landed")
    plan = plan_sweep("ark", grid=grid, seeds=2, sets=sets)
    outcome = run_sweep(plan, out, workers=2)
    assert outcome.skipped == done
    assert sorted(outcome.ran) == sorted({p.id for p in plan.points} - set(done))
    table = pd.read_parquet(out / TABLE)
    for row, ref in zip(table.to_dict("records"), _reference_table(plan), strict=True):
        assert row["config_hash"] == ref["config_hash"]
        assert row["fct_p99_s"] == ref["fct_p99_s"] and row["ttft_mean_s"] == ref["ttft_mean_s"]


def _ark_plan():
    return plan_sweep(
        "ark", grid=["workload.qps=10,25", "lb.policy=ecmp,ark"], seeds=3,
        sets=["workload.requests=50"],
    )  # fmt: skip


@pytest.mark.full
def test_dask_local_cluster_gives_the_local_pools_table(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    plan = _ark_plan()
    local = run_sweep(plan, tmp_path / "local", workers=2)
    with distributed.LocalCluster(  # real worker processes: points are pickled across
        processes=True, n_workers=2, threads_per_worker=1, dashboard_address=None
    ) as cluster:
        remote = run_sweep(plan, tmp_path / "dask", scheduler=cluster.scheduler_address)
    assert remote.backend.startswith("Dask") and len(remote.ran) == 12
    pd.testing.assert_frame_equal(remote.table, local.table)
    pd.testing.assert_frame_equal(
        pd.read_parquet(tmp_path / "dask" / TABLE), pd.read_parquet(tmp_path / "local" / TABLE)
    )
    t = local.table
    assert t[["workload.qps", "lb.policy", "seed"]].values.tolist()[:4] == [
        [10, "ecmp", 1], [10, "ecmp", 2], [10, "ecmp", 3], [10, "ark", 1]
    ]  # fmt: skip
    assert t.loc[t["lb.policy"] == "ark", "ark_fallbacks"].notna().all()
    assert t["ttft_mean_s"].notna().all()
    manifest = json.loads((tmp_path / "dask" / MANIFEST).read_text())
    assert manifest == json.loads((tmp_path / "local" / MANIFEST).read_text())


@pytest.mark.full
def test_a_server_that_is_not_dask_is_one_line_exit_2(tmp_path: Path, capsys) -> None:
    import socket

    with socket.socket() as server:  # accepts connections, never speaks Dask
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        out = tmp_path / "s"
        t0 = time.perf_counter()
        code = main(["sweep", "ecmp-collision", "--grid", "topology.spines=4,8", "--scheduler",
                     f"tcp://127.0.0.1:{port}", "--connect-timeout", "1", "--out", str(out)])  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "--scheduler" in err
    assert time.perf_counter() - t0 < 30
    assert not out.exists()


# -- failures, bounds and interrupts (issue 10) ---------------------------------------------------


def _outcome(failed: dict[str, str], refused=(), lost=(), total: int = 4):
    from fabricsim.experiments.sweep import SweepOutcome

    table = pd.DataFrame({"point": [f"p{i:04d}" for i in range(total)]})
    return SweepOutcome(Path("s"), [], [], failed, table, refused=frozenset(refused),
                        lost=frozenset(lost))  # fmt: skip


def test_failure_error_says_retry_only_when_a_worker_was_lost() -> None:
    from fabricsim.errors import ConfigError, FabricsimError
    from fabricsim.experiments.sweep import failure_error

    assert failure_error(_outcome({})) is None
    refused = failure_error(_outcome({"p0001": "workload.path: file not found"}, refused={"p0001"}))
    assert type(refused) is ConfigError
    assert "refused as bad input" in str(refused) and "retry" not in str(refused)
    assert "rerun the same command" not in str(refused)
    internal = failure_error(_outcome({"p0000": "ZeroDivisionError: x"}))
    assert type(internal) is FabricsimError and "internal error" in str(internal)
    assert "rerun the same command" not in str(internal)
    lost = failure_error(
        _outcome(
            {"p0000": "x", "p0002": "worker lost: BrokenProcessPool"},
            refused={"p0000"},
            lost={"p0002"},
        )  # fmt: skip
    )
    assert type(lost) is FabricsimError and "rerun the same command" in str(lost)
    assert "p0002" in str(lost) and len(str(lost).splitlines()) == 1


def test_a_sweep_too_large_is_refused_before_any_point_is_built() -> None:
    from fabricsim.errors import ConfigError
    from fabricsim.experiments.plan import MAX_POINTS

    t0 = time.perf_counter()
    with pytest.raises(ConfigError, match="--seeds: at most"):
        plan_sweep("ecmp-collision", grid=FAST, seeds=100_000_000)
    with pytest.raises(ConfigError, match=f"at most {MAX_POINTS}"):
        plan_sweep("ecmp-collision", grid=["topology.spines=2,4,8"], seeds=MAX_POINTS // 2)
    assert time.perf_counter() - t0 < 2


@pytest.mark.parametrize("timeout", [-5.0, 0.0, float("nan"), float("inf"), 1e9])
def test_bad_connect_timeouts_are_refused(timeout: float, tmp_path: Path) -> None:
    from fabricsim.errors import ConfigError

    plan = plan_sweep("ecmp-collision", grid=FAST)
    with pytest.raises(ConfigError, match="--connect-timeout"):
        run_sweep(plan, tmp_path / "s", workers=1, timeout_s=timeout)
    assert not (tmp_path / "s").exists()


def _interrupt_at_store(monkeypatch, after: int) -> None:
    import fabricsim.experiments.sweep as sweep_run

    real = sweep_run.store_point
    calls = []

    def store(out, point, result):
        if len(calls) >= after:
            raise KeyboardInterrupt
        calls.append(point.id)
        real(out, point, result)

    monkeypatch.setattr(sweep_run, "store_point", store)


def test_an_interrupted_fresh_sweep_leaves_no_directory(tmp_path: Path, monkeypatch) -> None:
    _interrupt_at_store(monkeypatch, after=0)
    plan = plan_sweep("ecmp-collision", grid=FAST, seeds=2)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(plan, tmp_path / "a" / "s", workers=2)
    assert list(tmp_path.iterdir()) == []  # nor the parent it created


def test_an_interrupted_sweep_keeps_whole_points_and_resumes(tmp_path: Path, monkeypatch) -> None:
    out = tmp_path / "s"
    plan = plan_sweep("ecmp-collision", grid=FAST, seeds=2)
    _interrupt_at_store(monkeypatch, after=1)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(plan, out, workers=1)
    monkeypatch.undo()
    names = {p.name for p in out.iterdir()}
    assert names == {".fabricsim", MANIFEST, "points"}  # no table, no temporary
    done = [p.name for p in (out / "points").iterdir()]
    assert len(done) == 1 and (out / "points" / done[0] / POINT_FILE).exists()
    again = run_sweep(plan, out, workers=1)
    assert again.skipped == done and len(again.ran) == 3


def test_a_sweep_directory_is_not_replaced_by_a_run(tmp_path: Path) -> None:
    from fabricsim.errors import ConfigError

    out = tmp_path / "s"
    run_sweep(plan_sweep("ecmp-collision", grid=["topology.spines=4"]), out, workers=1)
    with pytest.raises(ConfigError, match="holds a sweep"):
        fabricsim.run("ecmp-collision").save(out)
    assert (out / TABLE).exists()
