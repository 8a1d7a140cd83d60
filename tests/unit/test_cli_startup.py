"""Start-up of the command line: a named verb is the only one typer builds; the help, the
errors and every verb's options stay those of the whole program."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest
import typer

import fabricsim
from fabricsim._compat import LazyModule
from fabricsim.cli import app, main
from fabricsim.cli.app import _command_for
from fabricsim.experiments import paired, sweep

CLI_MODULES = ("run", "tools", "sweep", "report", "compare", "study", "keys")

FULL = typer.main.get_command(app)
VERBS = list(FULL.commands)  # type: ignore[attr-defined]


def _option(param) -> tuple:
    """A click parameter as plain data (typer copies its parameter info and wraps its callback
    each time it builds a command)."""
    fields = {k: v for k, v in vars(param).items() if k != "_runtime_param"}  # set when parsing
    annotation = getattr(fields.pop("type_descriptor", None), "annotation", None)
    callback = getattr(fields.pop("callback", None), "__qualname__", None)
    return type(param), fields, annotation, callback


def _described(group, verb: str | None = None) -> tuple:
    """The help text and the options of ``verb`` (``None``: of the group, without its verbs)."""
    ctx = group.make_context("fabricsim", [], resilient_parsing=True)
    command = group
    if verb is not None:
        command = group.commands[verb]
        ctx = command.make_context(verb, [], parent=ctx, resilient_parsing=True)
    options = [_option(p) for p in command.params]
    help_text = command.get_help(ctx) if verb is not None else group.help
    return help_text, options, command.callback.__qualname__


def test_every_verb_is_listed_in_the_order_of_the_help():
    assert VERBS == [
        "run",
        "scenarios",
        "ecmp-math",
        "ports",
        "export-trace",
        "sweep",
        "report",
        "compare",
        "study",
        "keys",
    ]


@pytest.mark.parametrize("verb", VERBS)
def test_a_named_verb_is_built_alone_and_the_same(verb):
    alone = _command_for([verb, "--help"])
    assert list(alone.commands) == [verb]  # type: ignore[attr-defined]
    assert _described(alone, verb) == _described(FULL, verb)
    assert _described(alone) == _described(FULL)


@pytest.mark.parametrize(
    "argv", [[], ["--help"], ["--version"], ["rn"], ["RUN"], ["export_trace"], ["--", "run"]]
)
def test_anything_else_builds_every_verb(argv):
    assert list(_command_for(argv).commands) == VERBS  # type: ignore[attr-defined]


def test_the_help_lists_every_verb_and_a_typo_gets_its_suggestion(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(f" {verb} " in out for verb in VERBS)
    assert main(["rn"]) == 2
    assert capsys.readouterr().err == "error: No such command 'rn'. Did you mean 'run'?\n"
    assert main(["run", "--sed", "3"]) == 2
    assert "Possible options: --scheduler, --seed, --set" in capsys.readouterr().err


LATER = (  # what `fabricsim run SCENARIO` does without: the verbs import them when they run
    "fabricsim.analysis",
    "fabricsim.config.keys",
    "fabricsim.experiments.backend",
    "fabricsim.experiments.compare",
    "fabricsim.experiments.paired",
    "fabricsim.experiments.plan",
    "fabricsim.experiments.study",
    "fabricsim.experiments.sweep",
    "fabricsim.report",
)  # (not the stdlib's concurrent.futures or logging: some pydantic versions import asyncio)


def test_the_command_line_starts_without_studies_sweeps_reports_and_analysis():
    code = "import sys, fabricsim.cli\nprint(*sorted(m for m in sys.modules), sep='\\n')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = done.stdout.split()
    assert "fabricsim.cli.run" in loaded
    assert [m for m in loaded if m.startswith(LATER)] == []


def test_the_modules_imported_on_first_use_exist_and_hold_what_is_read():
    modules = [fabricsim, *(importlib.import_module(f"fabricsim.cli.{v}") for v in CLI_MODULES)]
    for module in modules:
        lazy = [v for v in vars(module).values() if isinstance(v, LazyModule)]
        lazy += list(vars(module).get("_LAZY", {}).values())
        for proxy in lazy:
            importlib.import_module(proxy._LazyModule__name)
    assert fabricsim.study is paired.study and fabricsim.sweep is sweep.sweep
    assert {"study", "sweep"} <= set(dir(fabricsim))
    with pytest.raises(AttributeError, match="no attribute 'stduy'"):
        fabricsim.stduy  # noqa: B018
