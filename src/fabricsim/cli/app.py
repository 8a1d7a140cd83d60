"""The typer application, the option types the verbs share, :func:`main` and :func:`program`.

Exit codes: 0 success, 2 bad input or a refusal of the machine (a full disk: one line on
stderr), 1 internal error (``--debug``: with its traceback), 130 Ctrl-C, 143 SIGTERM.  A
command's life (:func:`_command_life`): SIGTERM is raised as :class:`~fabricsim.errors.Terminated`
(so it cleans up as Ctrl-C does), warnings are one plain line, and the ``--out`` the command
claimed is released however it ends.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import os
import signal
import sys
import threading
import traceback
import warnings
from collections.abc import Iterator
from typing import Annotated

import typer
from typer.models import CommandInfo

from fabricsim import __version__
from fabricsim._core_build import core_mode
from fabricsim.errors import (
    WRITE_ERRNOS,
    ConfigError,
    PlainWarnings,
    StorageError,
    Terminated,
    storage_problem,
)
from fabricsim.metrics.outdir import claimed, release_claims

try:  # typer >= 0.20 vendors click
    from typer._click import Command
    from typer._click import exceptions as click_exc
except ImportError:  # pragma: no cover - older typer with external click
    from click import Command  # type: ignore[assignment]
    from click import exceptions as click_exc  # type: ignore[no-redef]

app = typer.Typer(
    add_completion=False,
    no_args_is_help=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    help="fabricsim: simulate AI data-center fabrics (ECMP, spraying, ARK, UET transport).",
)

ScenarioArg = Annotated[str, typer.Argument(help="YAML path or built-in name")]
SetOpt = Annotated[
    list[str] | None, typer.Option("--set", help="KEY=VALUE override (dotted key); repeatable")
]
EngineOpt = Annotated[str | None, typer.Option("--engine", help="flow, packet or decomposed")]
QuietOpt = Annotated[bool, typer.Option("--quiet", help="print nothing but errors")]
PresetOpt = Annotated[
    str | None,
    typer.Option("--preset", help="named defaults laid under the scenario (htsim-uec)"),
]


def with_preset(sets: list[str] | None, preset: str | None) -> list[str]:
    """``--set`` items with ``--preset NAME`` as ``preset=NAME`` (the scenario's values win)."""
    return [*(sets or []), *([f"preset={preset}"] if preset is not None else [])]


DEBUG = "--debug"
"""The global option that shows an internal error's traceback; any verb takes it, before or
after its own words (:func:`_without_debug` takes it out before the verb is parsed)."""


def _without_debug(words: list[str]) -> tuple[list[str], bool]:
    """``words`` without ``--debug`` (anywhere before a ``--``), and whether it was there."""
    end = words.index("--") if "--" in words else len(words)
    kept = [w for w in words[:end] if w != DEBUG]
    return [*kept, *words[end:]], len(kept) < end


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"fabricsim {__version__} ({core_mode()} packet core)")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version", help="print the version and exit", callback=_show_version, is_eager=True
        ),
    ] = False,
    debug: Annotated[
        bool,
        typer.Option(
            DEBUG, help="print the traceback of an internal error (before or after the verb)"
        ),
    ] = False,
) -> None:
    """fabricsim: simulate AI data-center fabrics (ECMP, spraying, ARK, UET transport)."""


def _interrupted(line: str = "interrupted") -> None:
    """Ctrl-C (or SIGTERM): one line, and no second traceback if another signal arrives while
    printing."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        sys.stderr.write(f"\n{line}\n" if sys.stderr.isatty() else f"{line}\n")
        sys.stderr.flush()
    except OSError:
        pass


@contextlib.contextmanager
def _command_life(state: dict[str, bool]) -> Iterator[None]:
    """Around one command: SIGTERM raises :class:`Terminated` (once; ``state["terminated"]``
    says it came), warnings are one plain line, the ``--out`` claimed is released at the end.

    Only in the main thread (signal handlers can be set nowhere else); the previous handler
    and warning settings come back afterwards (:func:`main` may be called in-process).
    """

    def on_sigterm(signum: int, frame: object) -> None:
        if state.get("terminated"):  # cleaning up after the first one: let it finish
            return
        state["terminated"] = True
        raise Terminated

    on_sigterm.raises_terminated = True  # type: ignore[attr-defined]  # (kept by the pools)
    previous = None
    if threading.current_thread() is threading.main_thread():
        with contextlib.suppress(ValueError, OSError):
            previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        with warnings.catch_warnings():
            warnings.showwarning = PlainWarnings()
            yield
    finally:
        release_claims()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def main(argv: list[str] | None = None) -> int:
    """Console entry point with the exit-code contract."""
    return _invoke(argv, {})


def program() -> int:
    """The ``fabricsim`` program (its console script, ``python -m fabricsim``): :func:`main`
    on ``sys.argv``; the caller exits with the code returned.

    perf: after a single run (``fabricsim run SCENARIO`` calls :func:`skip_teardown` once its
    files are written and its output printed) the process ends here, with :func:`os._exit`:
    tearing the interpreter down (collecting the run's objects, finalizing every module) took
    0.1-0.2 s and does nothing a run needs.  Such a run leaves no thread, worker process,
    Dask client or temporary directory (:func:`_nothing_left` checks the first two); stdout
    and stderr are flushed first.  Any other command, or an error, exits as usual.  Such a run
    also goes without the cyclic garbage collector (:func:`single_run`).
    """
    outcome: dict[str, bool] = {"program": True}
    code = _invoke(None, outcome)
    if code == 0 and outcome.get("skip_teardown") and _nothing_left():
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):  # a closed or broken pipe: let the interpreter report it
            return code
        os._exit(code)
    return code


def single_run(ctx: typer.Context) -> None:
    """A single run is about to start in the ``fabricsim`` program (not in :func:`main`'s
    caller, whose process goes on): the cyclic collector is turned off for the rest of the
    process.

    perf: the event loops already run without it; around them it walked every object the
    fabric, the routes and the run had made, once or more per run, to free nothing that
    matters: the process ends when the run's files are written.  A 1,024-host packet run's
    process CPU: 0.80-0.97 of before in 4 concurrent pairs (median 0.90); at 128 hosts no
    change beyond the machine's noise.
    """
    if isinstance(ctx.obj, dict) and ctx.obj.get("program"):
        gc.disable()


def skip_teardown(ctx: typer.Context) -> None:
    """Tell :func:`program` that this command left nothing for interpreter teardown to do."""
    if isinstance(ctx.obj, dict):
        ctx.obj["skip_teardown"] = True


def _nothing_left() -> bool:
    """No other thread, and no child process of :mod:`multiprocessing`."""
    mp = sys.modules.get("multiprocessing")
    return threading.active_count() == 1 and not (mp is not None and mp.active_children())


def _command_for(argv: list[str] | None) -> Command:
    """:data:`app` as the click command that parses ``argv`` (``None``: ``sys.argv[1:]``).

    perf: typer turns each verb into a click command (its signature, type hints and options)
    each time the program starts: 12-14 ms for the ten verbs, 2-3 ms for ``run`` alone.
    When the first word of ``argv`` names a verb, click runs that verb (the group has no
    options to come before it), so the group is built with that verb alone; the group keeps
    its name, help, ``--version`` and callback.  Otherwise (``--help``, ``--version``, no
    word, an unknown verb and its "did you mean") it is built with every verb, as before.
    """
    words = _without_debug(list(sys.argv[1:] if argv is None else argv))[0]
    named = [info for info in app.registered_commands if words and words[0] == _verb(info)]
    if not named:
        return typer.main.get_command(app)
    alone = copy.copy(app)  # shallow: the same info, callback and settings
    alone.registered_commands = named
    return typer.main.get_command(alone)


def _verb(info: CommandInfo) -> str:
    """The name a registered verb is called by (typer's rule: its function's name, ``_``
    as ``-``)."""
    return info.name or typer.main.get_command_name(getattr(info.callback, "__name__", ""))


def _invoke(argv: list[str] | None, outcome: dict[str, bool]) -> int:
    """:func:`main`; a command may note in ``outcome`` (its context's ``obj``) what it did."""
    words, debug = _without_debug(list(sys.argv[1:] if argv is None else argv))
    state: dict[str, bool] = {}
    try:
        with _command_life(state):
            code = _run_command(words, outcome, debug)
    except KeyboardInterrupt:  # a signal between the command's end and the handler's removal
        code = 130
    if code == 130:
        _interrupted("terminated" if state.get("terminated") else "interrupted")
        return 143 if state.get("terminated") else 130
    return code


def _run_command(words: list[str], outcome: dict[str, bool], debug: bool) -> int:
    """The command's exit code (130 for Ctrl-C and SIGTERM, said by the caller)."""
    command = _command_for(words)
    try:
        code = command.main(args=words, prog_name="fabricsim", standalone_mode=False, obj=outcome)
    except ConfigError as exc:  # one line per problem (a scenario file may have several)
        typer.echo("\n".join(f"error: {line}" for line in str(exc).splitlines() or [""]), err=True)
        return 2
    except StorageError as exc:  # the machine refused to store the output: one line
        typer.echo(f"error: {exc}", err=True)
        return 2
    except (KeyboardInterrupt, typer.Abort):
        return 130
    except click_exc.UsageError as exc:
        typer.echo(f"error: {exc.format_message()}", err=True)
        return 2
    except typer.Exit as exc:
        return int(exc.exit_code or 0)
    except click_exc.ClickException as exc:
        typer.echo(f"error: {exc.format_message()}", err=True)
        return 2
    except MemoryError:
        typer.echo(
            "error: out of memory: this run needs more than the machine has; make the scenario "
            "smaller (the estimate is checked against engine.max_memory_gb)",
            err=True,
        )
        return 1
    except Exception as exc:  # noqa: BLE001 - the contract: one line, exit 1
        out = claimed()  # a full disk, a read-only file system, ...: name the --out
        writing = len(out) == 1 and getattr(exc, "errno", None) in WRITE_ERRNOS
        line = storage_problem(exc, out[0] if writing else None)
        if line is not None:
            typer.echo(f"error: {line}", err=True)
            return 2
        if debug:
            traceback.print_exc()
        hint = "" if debug else f" (run again with {DEBUG} to see where)"
        typer.echo(f"internal error: {type(exc).__name__}: {exc}{hint}", err=True)
        return 1
    return code if isinstance(code, int) else 0  # click returns ctx.exit()'s code here
