"""The typer application, the option types the verbs share, :func:`main` and :func:`program`.

Exit codes: 0 success, 2 bad input (one line on stderr), 1 internal error, 130 Ctrl-C.
"""

from __future__ import annotations

import copy
import gc
import os
import signal
import sys
import threading
from typing import Annotated

import typer
from typer.models import CommandInfo

from fabricsim import __version__
from fabricsim._core_build import core_mode
from fabricsim.errors import ConfigError

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
EngineOpt = Annotated[str | None, typer.Option("--engine", help="flow or packet")]
QuietOpt = Annotated[bool, typer.Option("--quiet", help="print nothing but errors")]
PresetOpt = Annotated[
    str | None,
    typer.Option("--preset", help="named defaults laid under the scenario (htsim-uec)"),
]


def with_preset(sets: list[str] | None, preset: str | None) -> list[str]:
    """``--set`` items with ``--preset NAME`` as ``preset=NAME`` (the scenario's values win)."""
    return [*(sets or []), *([f"preset={preset}"] if preset is not None else [])]


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
) -> None:
    """fabricsim: simulate AI data-center fabrics (ECMP, spraying, ARK, UET transport)."""


def _interrupted() -> None:
    """Ctrl-C: one line, and no second traceback if another Ctrl-C arrives while printing."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        sys.stderr.write("\ninterrupted\n" if sys.stderr.isatty() else "interrupted\n")
        sys.stderr.flush()
    except OSError:
        pass


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
    words = sys.argv[1:] if argv is None else argv
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
    command = _command_for(argv)
    try:
        code = command.main(args=argv, prog_name="fabricsim", standalone_mode=False, obj=outcome)
    except ConfigError as exc:  # one line per problem (a scenario file may have several)
        typer.echo("\n".join(f"error: {line}" for line in str(exc).splitlines() or [""]), err=True)
        return 2
    except (KeyboardInterrupt, typer.Abort):
        _interrupted()
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
        typer.echo(f"internal error: {type(exc).__name__}: {exc}", err=True)
        if "--debug" in (argv or sys.argv):
            raise
        return 1
    if code == 130:  # typer turns Ctrl-C into Exit(130) and returns it here
        _interrupted()
    return code if isinstance(code, int) else 0  # click returns ctx.exit()'s code here
