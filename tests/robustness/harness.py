"""Run one CLI invocation in a forked, resource-limited child and check the error contract.

The child inherits the already-imported package (fork), so a case costs milliseconds of
start-up instead of a fresh interpreter.  It runs ``fabricsim.cli.main(argv)`` under
``RLIMIT_AS`` (address space) and ``RLIMIT_CPU`` so a regression (a memory bomb, a hang) ends
as a failed test, not as a machine that swaps; the parent also kills it past ``wall_s``.

The contract of a bad input (DESIGN.md section 3): exit code 2, at most two lines on stderr,
no ``Traceback``, and nothing written (the working directory and ``--out`` stay as they were).
"""

from __future__ import annotations

import os
import resource
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

MEM_LIMIT_BYTES = 3 * 1024**3  # address space of one case's child
CPU_LIMIT_S = 60


@dataclass
class Outcome:
    code: int  # exit code; -N for a signal; None-like 999 for a wall-time kill
    stdout: str
    stderr: str
    wall_s: float
    peak_rss_mb: float


def run_cli(
    argv: list[str],
    cwd: Path,
    *,
    wall_s: float = 60.0,
    mem_bytes: int = MEM_LIMIT_BYTES,
    env: dict[str, str] | None = None,
    stdin: bytes | None = None,
) -> Outcome:
    """Fork, limit, run ``main(argv)`` in ``cwd``; return its exit code and output."""
    import fabricsim.cli  # noqa: F401 - imported before fork so the child starts warm

    out_path = cwd / ".case.stdout"
    err_path = cwd / ".case.stderr"
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # child
        code = 1
        try:
            os.setsid()
            _forget_parent_processes()
            resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
            resource.setrlimit(resource.RLIMIT_CPU, (CPU_LIMIT_S, CPU_LIMIT_S))
            fd_out = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            fd_err = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            fd_in = os.open(os.devnull, os.O_RDONLY)
            os.dup2(fd_in, 0)
            os.dup2(fd_out, 1)
            os.dup2(fd_err, 2)
            os.chdir(cwd)
            if env:
                os.environ.update(env)
            sys.stdin = open(0, closefd=False)  # noqa: SIM115
            sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
            sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
            from fabricsim.cli import main

            code = main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:  # noqa: BLE001 - report like an uncaught exception would
            import traceback

            traceback.print_exc()
            code = 1
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)
    deadline = t0 + wall_s
    status = None
    while time.perf_counter() < deadline:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.01)
    else:
        os.killpg(pid, signal.SIGKILL)
        _, status, usage = os.wait4(pid, 0)
        status = None
    wall = time.perf_counter() - t0
    if status is None:
        code = 999
    elif os.WIFEXITED(status):
        code = os.WEXITSTATUS(status)
    else:
        code = -os.WTERMSIG(status)
    text_out = out_path.read_text(errors="replace") if out_path.exists() else ""
    text_err = err_path.read_text(errors="replace") if err_path.exists() else ""
    out_path.unlink(missing_ok=True)
    err_path.unlink(missing_ok=True)
    return Outcome(code, text_out, text_err, wall, usage.ru_maxrss / 1024)


def _forget_parent_processes() -> None:
    """A forked child must not reuse the parent's forkserver or resource tracker (not its own
    children: waitpid on them fails); start fresh ones on demand, as a new process would."""
    from multiprocessing import forkserver, resource_tracker

    forkserver._forkserver = forkserver.ForkServer()  # type: ignore[attr-defined]
    resource_tracker._resource_tracker = resource_tracker.ResourceTracker()  # type: ignore[attr-defined]
    for name in ("ensure_running", "get_inherited_fds", "connect_to_new_process",
                 "set_forkserver_preload"):  # fmt: skip
        setattr(forkserver, name, getattr(forkserver._forkserver, name))  # type: ignore[attr-defined]
    for name in ("ensure_running", "register", "unregister", "getfd"):
        setattr(resource_tracker, name, getattr(resource_tracker._resource_tracker, name))  # type: ignore[attr-defined]


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` with its size and mtime (to assert nothing was written)."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.name in (".case.stdout", ".case.stderr"):
            continue
        st = path.lstat()
        out[str(path.relative_to(root))] = (st.st_size, st.st_mtime_ns)
    return out


def assert_refused(
    outcome: Outcome,
    before: dict[str, tuple[int, int]],
    after: dict[str, tuple[int, int]],
    *,
    needle: str | None = None,
    code: int = 2,
    wall_s: float | None = None,
) -> None:
    """The bad-input contract: exit ``code``, no traceback, nothing written; <= 2 stderr lines,
    or one ``error:`` line per bad field of a scenario (at most 5, and a count of the rest)."""
    lines = [ln for ln in outcome.stderr.splitlines() if ln.strip()]
    detail = f"exit {outcome.code}, stderr:\n{outcome.stderr[-2000:]}"
    assert outcome.code == code, detail
    assert "Traceback" not in outcome.stderr, detail
    several = len(lines) <= 6 and all(ln.startswith("error: ") for ln in lines)
    assert len(lines) <= 2 or several, detail
    assert before == after, f"files changed: {set(after) ^ set(before) or 'contents'}\n{detail}"
    if needle is not None:
        assert needle.lower() in outcome.stderr.lower(), f"{needle!r} not in stderr\n{detail}"
    if wall_s is not None:
        assert outcome.wall_s <= wall_s, f"took {outcome.wall_s:.1f} s > {wall_s} s\n{detail}"
