"""Command line: argv -> config -> run.  No model logic lives here.

Exit codes: 0 success, 2 bad input or a refusal of the machine such as a full disk (one line on
stderr), 1 internal error (``--debug`` shows its traceback), 130 Ctrl-C, 143 SIGTERM.

:mod:`fabricsim.cli.app` holds the typer :data:`app`, the shared option types, :func:`main` and
:func:`program` (the console script ``fabricsim = "fabricsim.cli:program"``); each verb group is
one module that registers its commands on :data:`app` when it is imported below.
"""

from fabricsim.cli.app import app, main, program

# isort: off
# The order of these imports is the order of the commands in ``fabricsim --help``.
from fabricsim.cli import run  # noqa: F401 - run
from fabricsim.cli import tools  # noqa: F401 - scenarios, ecmp-math, ports, export-trace
from fabricsim.cli import sweep  # noqa: F401 - sweep
from fabricsim.cli import report  # noqa: F401 - report
from fabricsim.cli import compare  # noqa: F401 - compare
from fabricsim.cli import study  # noqa: F401 - study
from fabricsim.cli import keys  # noqa: F401 - keys

# isort: on

__all__ = ["app", "main", "program"]
