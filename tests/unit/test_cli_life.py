"""The command line's life cycle (issue 37): ``--debug`` on every verb, the machine's refusals
(a full disk) as one line, warnings as one plain line."""

from __future__ import annotations

import errno
import os
import warnings
from pathlib import Path

import pytest
import typer

import fabricsim
from fabricsim.cli import app, main
from fabricsim.cli.app import _command_for, _without_debug
from fabricsim.errors import PlainWarnings, StorageError
from fabricsim.metrics import outdir
from fabricsim.metrics.results import Result

VERBS = list(typer.main.get_command(app).commands)  # type: ignore[attr-defined]


def _boom(*args, **kwargs):
    raise RuntimeError("boom")


# -- item 1: --debug, before or after the verb -------------------------------------------------


@pytest.mark.parametrize("verb", VERBS)
@pytest.mark.parametrize("where", ["before", "after"])
def test_every_verb_takes_debug_before_or_after_it(verb, where, capsys):
    argv = ["--debug", verb, "--help"] if where == "before" else [verb, "--help", "--debug"]
    assert main(argv) == 0, capsys.readouterr().err
    assert "Usage: fabricsim" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [
        ["--debug", "run", "ecmp-collision"],
        ["run", "ecmp-collision", "--debug"],
        ["run", "--debug", "ecmp-collision"],
    ],
)
def test_debug_shows_the_traceback_of_an_internal_error(argv, monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(fabricsim, "run", _boom)
    assert main([*argv, "--out", str(tmp_path / "o"), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "_boom" in err
    assert err.splitlines()[-1] == "internal error: RuntimeError: boom"
    assert not (tmp_path / "o").exists() and list(tmp_path.iterdir()) == []


def test_without_debug_an_internal_error_is_one_line_naming_debug(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(fabricsim, "run", _boom)
    assert main(["run", "ecmp-collision", "--out", str(tmp_path / "o"), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert err == "internal error: RuntimeError: boom (run again with --debug to see where)\n"


def test_debug_is_taken_out_before_the_verb_is_parsed():
    assert _without_debug(["--debug", "run", "x", "--debug"]) == (["run", "x"], True)
    assert _without_debug(["run", "x"]) == (["run", "x"], False)
    assert _without_debug(["run", "--", "--debug"]) == (["run", "--", "--debug"], False)
    assert list(_command_for(["--debug", "run"]).commands) == ["run"]  # type: ignore[attr-defined]


# -- item 2: a full disk, a read-only file system: one line, exit 2, nothing half-written ------


def _failing_writer(code: int):
    def write_files(self, directory, *args, **kwargs):
        (Path(directory) / "summary.json").write_text("{}")  # half an output, then the disk
        raise OSError(code, os.strerror(code))

    return write_files


@pytest.mark.parametrize(
    ("code", "said"),
    [
        (errno.ENOSPC, "no space left on device"),
        (errno.EDQUOT, "disk quota exceeded"),
        (errno.EROFS, "read-only file system"),
        (errno.EACCES, "permission denied"),
    ],
)
def test_a_refused_write_is_one_line_exit_2_and_nothing_is_written(
    code, said, monkeypatch, capsys, tmp_path
):
    monkeypatch.setattr(Result, "write_files", _failing_writer(code))
    out = tmp_path / "a" / "D"
    assert main(["run", "ecmp-collision", "--out", str(out), "--quiet"]) == 2
    assert capsys.readouterr().err == f"error: {said} writing {out}\n"
    assert list(tmp_path.iterdir()) == []  # no D, no parent made for it, no temporary, no lock


def test_a_full_disk_keeps_the_previous_output(monkeypatch, capsys, tmp_path):
    out = tmp_path / "D"
    fabricsim.run("ecmp-collision").save(out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    monkeypatch.setattr(Result, "write_files", _failing_writer(errno.ENOSPC))
    assert main(["run", "ecmp-collision", "--out", str(out), "--quiet"]) == 2
    assert capsys.readouterr().err == f"error: no space left on device writing {out}\n"
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["D"]


def test_the_api_raises_a_storage_error_that_is_still_an_oserror(monkeypatch, tmp_path):
    res = fabricsim.run("ecmp-collision")
    monkeypatch.setattr(Result, "write_files", _failing_writer(errno.ENOSPC))
    with pytest.raises(StorageError) as info:
        res.save(tmp_path / "D")
    assert isinstance(info.value, OSError) and info.value.errno == errno.ENOSPC
    assert str(info.value) == f"no space left on device writing {tmp_path / 'D'}"


def test_a_full_disk_elsewhere_is_one_line_naming_the_out(monkeypatch, capsys, tmp_path):
    """Past the staging directory (a sweep's points, a trace file): the same one line."""

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(fabricsim, "run", full)
    assert main(["run", "ecmp-collision", "--out", str(tmp_path / "o"), "--quiet"]) == 2
    assert capsys.readouterr().err == f"error: no space left on device writing {tmp_path / 'o'}\n"

    def broken(*args, **kwargs):  # another OSError is still an internal error
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(fabricsim, "run", broken)
    assert main(["run", "ecmp-collision", "--out", str(tmp_path / "o"), "--quiet"]) == 1
    assert capsys.readouterr().err.startswith("internal error: OSError: [Errno 5] I/O error")


def test_a_permission_error_of_a_read_names_the_file_not_the_out(monkeypatch, capsys, tmp_path):
    def unreadable(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", "/data/trace.csv")

    monkeypatch.setattr(fabricsim, "run", unreadable)
    assert main(["run", "ecmp-collision", "--out", str(tmp_path / "o"), "--quiet"]) == 2
    assert capsys.readouterr().err == "error: permission denied: /data/trace.csv\n"


# -- item 5: warnings are one plain line on the command line, Python's own in the API ----------

WARNED = ["run", "spray-example", "--set", "nic.packet_spraying_type=reps",
          "--set", "switch.load_balancing_method=flowlet", "--quiet"]  # fmt: skip
WARNING = (
    "warning: nic.packet_spraying_type=reps with switch.load_balancing_method=flowlet: the "
    "switches move flows between members at gaps, so REPS's entropy feedback loses its meaning\n"
)


def test_the_python_api_keeps_python_warnings_and_main_restores_them(tmp_path, capsys):
    sc = fabricsim.load_scenario("spray-example").with_overrides(
        {"nic.packet_spraying_type": "reps", "switch.load_balancing_method": "flowlet"}
    )
    before = warnings.showwarning
    assert main([*WARNED, "--out", str(tmp_path / "o")]) == 0
    assert capsys.readouterr().err == WARNING
    assert warnings.showwarning is before
    with pytest.warns(UserWarning, match="REPS's entropy feedback"):
        fabricsim.run(sc)


def test_plain_warnings_are_one_line_once_per_text():
    shown = PlainWarnings()
    lines: list[str] = []

    class Sink:
        def write(self, text):
            lines.append(text)

        def flush(self):
            pass

    for _ in range(3):
        shown(UserWarning("two\n  lines"), UserWarning, "x.py", 3, Sink())
    shown("another", RuntimeWarning, "y.py", 9, Sink())
    assert lines == ["warning: two lines\n", "warning: another\n"]


def test_claims_are_released_when_a_command_ends(tmp_path, capsys):
    assert main(["run", "ecmp-collision", "--out", str(tmp_path / "o"), "--quiet"]) == 0
    assert outdir.claimed() == [] and outdir._HELD == {}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o"]  # the lock file went with it


QP_GROUPS = ["--set", "lb.policy=qp_scaling", "--set", "nic.pdc_groups_enabled=true",
             "--set", "nic.packet_spraying_type=none"]  # fmt: skip


@pytest.mark.parametrize(
    ("sets", "needle"),
    [
        (WARNED[2:6], "REPS's entropy feedback"),
        (QP_GROUPS, "share their PDC group's source port"),
    ],
    ids=["reps with flowlet", "qp_scaling with PDC groups"],
)
def test_every_warning_of_the_packet_engine_is_one_plain_line(sets, needle, tmp_path, capsys):
    """The packet engine's warnings (packetsim/engine.py: every ``warnings.warn`` of fabricsim)."""
    assert main(["run", "spray-example", *sets, "--out", str(tmp_path / "o"), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith("warning: ") and needle in err, err
    assert "UserWarning" not in err and ".py:" not in err
