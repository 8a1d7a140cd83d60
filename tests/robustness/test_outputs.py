"""Output directories (issue 10, item 5 and the --out / sweep / compare values of item 8).

An output directory holds exactly one run (DESIGN.md section 3): a previous fabricsim output
is replaced whole, a non-empty directory that is not one is refused and left untouched, and a
path that cannot be a directory (empty, a file, under a file, read-only, the current
directory) is refused in one line naming ``--out`` before anything runs.  Every refusal runs
in a forked, resource-limited child (harness.py) and must write nothing.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from harness import assert_refused, run_cli, snapshot

import fabricsim
from fabricsim.errors import ConfigError
from fabricsim.metrics import outdir
from fabricsim.metrics.outdir import MARKER, check_out_dir, output_kind, prepare_out_dir

SRC = str(Path(fabricsim.__file__).resolve().parents[1])  # the sources under test, for children
FAST_S = 5.0  # a refusal comes before any simulation: well under this, even on a busy CI box

COMMANDS: dict[str, list[str]] = {
    "run": ["run", "ecmp-collision"],
    "compare": ["compare", "ecmp-collision", "--methods", "ecmp"],
    "sweep": ["sweep", "ecmp-collision", "--grid", "topology.spines=4,8", "--workers", "1"],
}


def _layout(t: Path) -> None:
    """What the bad --out values point at."""
    (t / "afile").write_text("not a directory\n")
    (t / "ro").mkdir()
    (t / "ro").chmod(0o555)
    (t / "junk").mkdir()
    (t / "junk" / "notes.txt").write_text("my thesis\n")
    (t / "a-sweep").mkdir()  # a sweep directory (as a sweep leaves it)
    (t / "a-sweep" / MARKER).write_text('{"kind": "sweep"}\n')
    (t / "a-sweep" / "manifest.json").write_text('{"spec": {}, "points": []}\n')
    (t / "a-run").mkdir()  # a run output written before the marker existed
    (t / "a-run" / "summary.json").write_text("{}\n")
    (t / "a-run" / "config.yaml").write_text("{}\n")


BAD_OUT: dict[str, tuple[str, str]] = {  # name -> (--out value, needle)
    "empty": ("", "empty"),
    "blank": ("  ", "empty"),
    "existing file": ("afile", "file"),
    "under a file": ("afile/sub", "file"),
    "read-only dir": ("ro", "read-only"),
    "under a read-only dir": ("ro/new", "read-only"),
    "not a fabricsim output": ("junk", "not a fabricsim output"),
    "current directory": (".", "current directory"),
    "parent of the current directory": ("..", "current directory"),
}
KIND_MISMATCH: dict[str, tuple[str, str, str]] = {  # name -> (command, --out, needle)
    "run into a sweep": ("run", "a-sweep", "sweep"),
    "compare into a sweep": ("compare", "a-sweep", "sweep"),
    "sweep into a run": ("sweep", "a-run", "not a sweep"),
}
CASES = [(cmd, name, *BAD_OUT[name]) for cmd in COMMANDS for name in BAD_OUT]
CASES += [(cmd, name, out, needle) for name, (cmd, out, needle) in KIND_MISMATCH.items()]


@pytest.mark.parametrize(
    ("command", "case", "out", "needle"), CASES, ids=[f"{c[0]}: {c[1]}" for c in CASES]
)
def test_bad_out_is_refused_at_once_and_nothing_is_written(
    command: str, case: str, out: str, needle: str, tmp_path: Path
) -> None:
    _layout(tmp_path)
    before = snapshot(tmp_path)
    outcome = run_cli([*COMMANDS[command], "--out", out], tmp_path, wall_s=60)
    assert_refused(outcome, before, snapshot(tmp_path), needle=needle, wall_s=FAST_S)
    assert "--out" in outcome.stderr
    assert (tmp_path / "junk" / "notes.txt").read_text() == "my thesis\n"


# -- bad values of compare and sweep --------------------------------------------------------------


class _JunkServer:
    """A TCP server on 127.0.0.1 that answers every connection with garbage."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            try:
                conn.sendall(b"HTTP/1.1 200 OK\r\n\r\n" + b"\xff\x00garbage" * 500)
            except OSError:
                pass
            finally:
                conn.close()

    def close(self) -> None:
        self.sock.close()


SWEEP = ["sweep", "ecmp-collision", "--grid", "topology.spines=4,8", "--out", "s"]
COMPARE = ["compare", "ecmp-collision", "--out", "c"]
BAD_VALUES: dict[str, tuple[list[str], str]] = {
    "compare --methods ,": ([*COMPARE, "--methods", ","], "--methods"),
    "compare --methods ''": ([*COMPARE, "--methods", ""], "--methods"),
    "compare --methods twice": ([*COMPARE, "--methods", "ecmp,ecmp"], "twice"),
    "compare --workers 0": ([*COMPARE, "--workers", "0"], "--workers"),
    "compare --workers -3": ([*COMPARE, "--workers", "-3"], "--workers"),
    "compare --workers 10**6": ([*COMPARE, "--workers", "1000000"], "--workers"),
    "compare --seeds 0": ([*COMPARE, "--seeds", "0"], "--seeds"),
    "compare --seeds 10**8": ([*COMPARE, "--seeds", "100000000"], "--seeds"),
    "sweep --workers 0": ([*SWEEP, "--workers", "0"], "--workers"),
    "sweep --workers 10**6": ([*SWEEP, "--workers", "1000000"], "--workers"),
    "sweep --seeds 0": ([*SWEEP, "--seeds", "0"], "--seeds"),
    "sweep --seeds 10**8": ([*SWEEP, "--seeds", "100000000"], "--seeds"),
    "sweep grid x seeds too large": (
        [*SWEEP[:3], "topology.spines=2,4,8", *SWEEP[4:], "--seeds", "40000"],
        "at most 100000",
    ),
    "sweep --connect-timeout -5": ([*SWEEP, "--connect-timeout", "-5"], "--connect-timeout"),
    "sweep --connect-timeout nan": ([*SWEEP, "--connect-timeout", "nan"], "not a number"),
    "sweep --connect-timeout inf": ([*SWEEP, "--connect-timeout", "inf"], "finite"),
    "sweep --connect-timeout 0": ([*SWEEP, "--connect-timeout", "0"], "--connect-timeout"),
    "sweep --workers and --scheduler": (
        [*SWEEP, "--workers", "2", "--scheduler", "tcp://127.0.0.1:9"],
        "not both",
    ),
    "sweep --scheduler not an address": ([*SWEEP, "--scheduler", "localhost:8786"], "--scheduler"),
}


@pytest.mark.parametrize("case", sorted(BAD_VALUES))
def test_bad_sweep_and_compare_values(case: str, tmp_path: Path) -> None:
    argv, needle = BAD_VALUES[case]
    before = snapshot(tmp_path)
    outcome = run_cli(argv, tmp_path, wall_s=60)
    assert_refused(outcome, before, snapshot(tmp_path), needle=needle, wall_s=15)


def test_a_scheduler_that_answers_garbage_is_one_line(tmp_path: Path) -> None:
    server = _JunkServer()
    try:
        before = snapshot(tmp_path)
        argv = [*SWEEP, "--scheduler", f"tcp://127.0.0.1:{server.port}", "--connect-timeout", "1"]
        outcome = run_cli(argv, tmp_path, wall_s=60)
    finally:
        server.close()
    assert_refused(outcome, before, snapshot(tmp_path), needle="--scheduler", wall_s=15)
    assert "Exception ignored" not in outcome.stderr


def test_a_sweep_whose_every_point_is_refused_says_so_and_leaves_nothing(tmp_path: Path) -> None:
    """Refused at run time (a trace path is only opened by the run): deterministic, so the
    message says so and does not ask to "rerun the same command to retry"."""
    (tmp_path / "s.yaml").write_text("workload: {kind: trace, path: missing.csv}\n")
    before = snapshot(tmp_path)
    argv = ["sweep", "s.yaml", "--grid", "topology.spines=2,4", "--out", "s", "--workers", "1"]
    outcome = run_cli(argv, tmp_path, wall_s=60)
    assert_refused(outcome, before, snapshot(tmp_path), needle="refused as bad input", wall_s=30)
    assert "missing.csv" in outcome.stderr and "nothing written" in outcome.stderr
    assert "retry" not in outcome.stderr and "rerun the same command" not in outcome.stderr


# -- replacing a previous output whole ------------------------------------------------------------


def _files(d: Path) -> set[str]:
    return {str(p.relative_to(d)) for p in d.rglob("*")}


def test_a_flow_run_replaces_a_packet_run_whole(tmp_path: Path) -> None:
    """Regression (issue 10 item 5): stale port_stats / uet_monitor beside a new summary."""
    first = run_cli(
        ["run", "spray-example", "--out", "D", "--set", "records.port_stats=true", "--quiet"],
        tmp_path,
    )
    assert first.code == 0, first.stderr
    assert (tmp_path / "D" / "port_stats.parquet").exists()
    second = run_cli(["run", "ecmp-collision", "--out", "D", "--quiet"], tmp_path)
    assert second.code == 0, second.stderr
    d = tmp_path / "D"
    assert not (d / "port_stats.parquet").exists()
    assert not (d / "uet_monitor.parquet").exists()
    assert json.loads((d / "summary.json").read_text())["engine"] == "flow"
    assert _files(d) == {MARKER, "summary.json", "timing.json", "config.yaml", "flows.parquet"}
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".D")) == []


def test_compare_keeps_no_stale_method_folders(tmp_path: Path) -> None:
    base = ["compare", "ecmp-collision", "--out", "C", "--quiet"]
    assert run_cli([*base, "--methods", "ecmp,pinned"], tmp_path).code == 0
    assert {"ecmp", "pinned"} <= {p.name for p in (tmp_path / "C").iterdir()}
    outcome = run_cli([*base, "--methods", "ideal_spray"], tmp_path)
    assert outcome.code == 0, outcome.stderr
    names = {p.name for p in (tmp_path / "C").iterdir()}
    assert names == {MARKER, "ideal_spray", "compare.csv", "runs.csv", "compare.png"}
    assert output_kind(tmp_path / "C") == "compare"


def test_a_run_replaces_a_comparison_and_a_sweep_resumes_only_itself(tmp_path: Path) -> None:
    assert run_cli(["compare", "ecmp-collision", "--methods", "ecmp", "--out", "X", "--quiet"],
                   tmp_path).code == 0  # fmt: skip
    assert run_cli(["run", "ecmp-collision", "--out", "X", "--quiet"], tmp_path).code == 0
    assert output_kind(tmp_path / "X") == "run" and not (tmp_path / "X" / "ecmp").exists()
    sweep = ["sweep", "ecmp-collision", "--grid", "topology.spines=4", "--out", "S", "--workers",
             "1", "--quiet"]  # fmt: skip
    assert run_cli(sweep, tmp_path).code == 0
    assert output_kind(tmp_path / "S") == "sweep"
    again = run_cli(sweep, tmp_path)  # the same sweep: resumed (nothing to do)
    assert again.code == 0, again.stderr
    before = snapshot(tmp_path)
    other = run_cli([*sweep[:3], "topology.spines=8", *sweep[4:]], tmp_path)
    assert_refused(other, before, snapshot(tmp_path), needle="different sweep")


def test_a_non_fabricsim_directory_is_refused_and_untouched(tmp_path: Path) -> None:
    d = tmp_path / "photos"
    d.mkdir()
    (d / "cat.jpg").write_bytes(b"\xff\xd8 cat")
    (d / "summary.json").write_text("{}")  # looks a little like a run, but is not one
    before = snapshot(tmp_path)
    res = fabricsim.run("ecmp-collision")
    with pytest.raises(ConfigError, match="not a fabricsim output"):
        res.save(d)
    for argv in (
        ["run", "ecmp-collision", "--out", str(d)],
        [*COMMANDS["compare"], "--out", str(d)],
    ):
        assert_refused(run_cli(argv, tmp_path), before, snapshot(tmp_path), needle="--out")
    assert (d / "cat.jpg").read_bytes() == b"\xff\xd8 cat"


# -- the staging directory: all or nothing -------------------------------------------------------


def _previous(d: Path) -> dict[str, bytes]:
    fabricsim.run("ecmp-collision").save(d)
    return {p.name: p.read_bytes() for p in d.iterdir()}


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2", "two renames"])
@pytest.mark.parametrize("error", [KeyboardInterrupt, RuntimeError])
def test_an_interrupted_save_leaves_the_previous_output_intact(
    tmp_path: Path, monkeypatch, exchange: bool, error: type[BaseException]
) -> None:
    if not exchange:
        monkeypatch.setattr(outdir, "_exchange", lambda a, b: False)
    d = tmp_path / "D"
    old = _previous(d)
    with pytest.raises(error), prepare_out_dir(d, "run").staging() as tmp:
        (tmp / "summary.json").write_text('{"new": true}')
        raise error()
    assert {p.name: p.read_bytes() for p in d.iterdir()} == old
    assert [p.name for p in tmp_path.iterdir()] == ["D"]  # no temporary sibling left


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2", "two renames"])
def test_save_replaces_whole_with_either_swap(tmp_path: Path, monkeypatch, exchange: bool) -> None:
    if not exchange:
        monkeypatch.setattr(outdir, "_exchange", lambda a, b: False)
    d = tmp_path / "D"
    _previous(d)
    (d / "report.html").write_text("<html>old report</html>")
    with prepare_out_dir(d, "study").staging() as tmp:
        (tmp / "study.json").write_text("{}")
    assert {p.name for p in d.iterdir()} == {MARKER, "study.json"}
    assert output_kind(d) == "study"
    assert [p.name for p in tmp_path.iterdir()] == ["D"]


def test_a_failed_save_into_a_new_path_creates_nothing(tmp_path: Path) -> None:
    with (
        pytest.raises(KeyboardInterrupt),
        prepare_out_dir(tmp_path / "a" / "b" / "D", "run").staging(),
    ):
        raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


def test_stale_temporaries_of_a_killed_save_are_removed(tmp_path: Path) -> None:
    dead = tmp_path / ".D.fabricsim-new-999999999-abc"  # no such pid
    dead.mkdir()
    (dead / "summary.json").write_text("{}")
    mine = tmp_path / ".D.fabricsim-new-1-xyz"  # pid 1 is alive: not ours to delete
    mine.mkdir()
    fabricsim.run("ecmp-collision").save(tmp_path / "D")
    assert not dead.exists() and mine.exists()


def test_check_out_dir_api(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert check_out_dir("new/dir") == tmp_path / "new" / "dir"
    assert not (tmp_path / "new").exists()  # nothing created
    with pytest.raises(ValueError, match="kind"):
        check_out_dir("x", "bogus")
    with pytest.raises(ConfigError, match="^--out: empty path"):
        check_out_dir("")
    with pytest.raises(ConfigError, match="^--out: empty path"):
        check_out_dir(None)
    (tmp_path / "f").write_text("")
    with pytest.raises(ConfigError, match="^--trace f: is a file"):
        check_out_dir("f", option="--trace")
    link = tmp_path / "link"
    (tmp_path / "real").mkdir()
    link.symlink_to(tmp_path / "real")
    assert check_out_dir("link") == tmp_path / "real"  # the link is followed, never replaced
    (tmp_path / "bad-marker").mkdir()
    (tmp_path / "bad-marker" / MARKER).write_text("{not json")
    with pytest.raises(ConfigError, match="not a fabricsim output"):
        check_out_dir("bad-marker")


def test_check_out_file_api(tmp_path: Path, monkeypatch) -> None:
    """For commands that write one file (``export-trace --out FILE``)."""
    from fabricsim.metrics.outdir import check_out_file

    monkeypatch.chdir(tmp_path)
    _layout(tmp_path)
    before = snapshot(tmp_path)
    assert check_out_file("afile") == tmp_path / "afile"  # replaced by the writer
    assert check_out_file("new/t.csv") == tmp_path / "new" / "t.csv"
    for bad, needle in [("", "empty"), ("junk", "directory"), ("afile/x", "file"),
                        ("ro/t.csv", "read-only"), ("x/", "directory")]:  # fmt: skip
        with pytest.raises(ConfigError, match=needle):
            check_out_file(bad)
    (tmp_path / "afile").chmod(0o444)
    with pytest.raises(ConfigError, match="read-only file"):
        check_out_file("afile")
    (tmp_path / "afile").chmod(0o644)
    assert snapshot(tmp_path) == before


# -- one writer per output directory (issue 37) ----------------------------------------------------

_HOLD = """
import sys, time
from fabricsim.metrics.outdir import claim
claim(sys.argv[1])
print("held", flush=True)
time.sleep(600)
"""


def _holder(path: Path, cwd: Path) -> subprocess.Popen:
    """Another process holding the lock of ``path`` (until killed)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(path)], cwd=cwd, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": SRC},
    )  # fmt: skip
    assert proc.stdout is not None and proc.stdout.readline() == b"held\n", proc.stderr
    return proc


def _kill(proc: subprocess.Popen) -> None:
    proc.kill()  # SIGKILL: nobody releases the lock but the kernel
    proc.wait(10)


def test_two_runs_into_one_out_the_second_is_refused_while_the_first_goes_on(tmp_path: Path):
    """Two real ``fabricsim run`` processes: the first holds ``--out``, the second refuses in
    one line naming the first's pid and writes nothing; once the first is gone (SIGKILL: the
    kernel drops its lock), the directory can be written again and no lock file is left."""
    env = {**os.environ, "PYTHONPATH": SRC, "PYTHONUNBUFFERED": "1"}
    first = subprocess.Popen(
        [sys.executable, "-m", "fabricsim", "run", "ark", "--set", "workload.requests=400000",
         "--out", "R", "--quiet"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not outdir.lock_file(tmp_path / "R").exists():
            assert first.poll() is None and time.monotonic() < deadline, first.stderr
            time.sleep(0.02)
        before = snapshot(tmp_path)
        for argv in (["run", "ecmp-collision"], [*COMMANDS["compare"]]):
            second = run_cli([*argv, "--out", "R", "--quiet"], tmp_path, wall_s=60)
            assert_refused(second, before, snapshot(tmp_path), needle="another fabricsim command")
            assert f"(pid {first.pid})" in second.stderr and "--out R" in second.stderr
    finally:
        _kill(first)
    assert not (tmp_path / "R").exists()
    again = run_cli(["run", "ecmp-collision", "--out", "R", "--quiet"], tmp_path)
    assert again.code == 0, again.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["R"]


def test_a_busy_sweep_directory_is_refused(tmp_path: Path) -> None:
    holder = _holder(tmp_path / "s", tmp_path)
    try:
        before = snapshot(tmp_path)
        outcome = run_cli([*SWEEP, "--workers", "1", "--quiet"], tmp_path, wall_s=60)
        assert_refused(outcome, before, snapshot(tmp_path), needle="another fabricsim command")
    finally:
        _kill(holder)


def test_claim_is_reentrant_released_and_survives_a_stale_lock_file(tmp_path: Path) -> None:
    d = tmp_path / "new" / "D"
    lock = outdir.claim(d)
    assert outdir.claim(d) is lock and lock.count == 2
    assert outdir.lock_file(d).read_text() == f"{os.getpid()}\n"
    lock.release()
    assert outdir.lock_file(d).exists()
    lock.release()
    assert list(tmp_path.iterdir()) == []  # the lock file and the parent made for it are gone
    holder = _holder(d, tmp_path)  # another process: refused, naming it
    try:
        with pytest.raises(ConfigError, match=rf"another fabricsim command \(pid {holder.pid}\)"):
            outdir.claim(d)
    finally:
        _kill(holder)
    assert outdir.lock_file(d).exists()  # left by the killed holder, its lock gone with it
    outdir.claim(d).release()
    assert list(tmp_path.rglob("*")) == [tmp_path / "new"]  # made by the holder: left as it was


def test_a_save_refuses_a_directory_another_process_writes(tmp_path: Path) -> None:
    res = fabricsim.run("ecmp-collision")
    holder = _holder(tmp_path / "D", tmp_path)
    try:
        with pytest.raises(ConfigError, match="another fabricsim command"):
            res.save(tmp_path / "D")
    finally:
        _kill(holder)
    assert not (tmp_path / "D").exists()
    res.save(tmp_path / "D")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["D"]


def test_a_directory_whose_parent_cannot_hold_the_lock_file_is_locked_itself(
    tmp_path: Path, monkeypatch
) -> None:
    """A sweep may resume in a directory under a read-only parent: the lock is then taken on
    the directory itself (root ignores the mode bits, so the refusal is injected)."""
    import fcntl

    d = tmp_path / "S"
    d.mkdir()
    real_open = os.open

    def no_lock_file(path, *args, **kwargs):
        if str(path).endswith(".fabricsim-lock"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(outdir.os, "open", no_lock_file)
    lock = outdir.claim(d)
    try:
        other = real_open(d, os.O_RDONLY)  # another open file description: as another process
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(other)
    finally:
        lock.release()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["S"]


def test_a_full_disk_mid_sweep_is_one_line_and_leaves_no_half_point(tmp_path: Path, monkeypatch):
    """The sweep writes its points itself (not through a staging directory): a full disk there
    is the same one line naming ``--out``, exit 2, and no half-written point or lock is left."""
    import errno

    real = Path.write_bytes

    def full(self: Path, data: bytes) -> int:
        if "points" in self.parts:
            real(self, data[: len(data) // 2])
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, data)

    monkeypatch.setattr(Path, "write_bytes", full)  # in the forked driver (points are its job)
    argv = [*SWEEP, "--workers", "1", "--quiet"]
    outcome = run_cli(argv, tmp_path, wall_s=60)
    assert outcome.code == 2, outcome.stderr
    assert outcome.stderr == "error: no space left on device writing s\n"
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    assert [p for p in left if "points" in p or "lock" in p] == [], left


def test_an_output_directory_is_readable_as_the_umask_allows(tmp_path):
    """A saved run is made like mkdir makes a directory (mode 0777 less the umask), not 0700 as
    a temporary directory is: results are for other users of the machine too."""
    import os
    import stat

    import fabricsim

    old = os.umask(0o022)
    try:
        fabricsim.run("ecmp-collision").save(tmp_path / "o")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "o").stat().st_mode) == 0o755
