"""Exceptions that separate bad user input (exit code 2) from internal errors (exit 1), and the
one-line form of the machine's refusals (a full disk) and of fabricsim's warnings.

Examples
--------
>>> import errno
>>> storage_problem(OSError(errno.ENOSPC, "No space left on device"), "runs/x")
'no space left on device writing runs/x'
>>> storage_problem(OSError(errno.EIO, "Input/output error"), "runs/x") is None
True
>>> plain_warning("REPS with flowlet switches:\\n  entropy feedback loses its meaning")
'warning: REPS with flowlet switches: entropy feedback loses its meaning'
"""

from __future__ import annotations

import errno
import os
import sys
import warnings
from typing import Any


class FabricsimError(Exception):
    """Base class of fabricsim's own errors."""


class ConfigError(FabricsimError, ValueError):
    """Bad input from the user: a scenario field, an override, a trace or a file.

    The message is one line that names the field (dotted key) and what is allowed.  The CLI
    prints it and exits with code 2; nothing is written.
    """


class EngineRefusal(ConfigError):
    """The chosen engine cannot answer this scenario's question (also exit code 2)."""


class StorageError(FabricsimError, OSError):
    """The machine refused to store an output (a full disk, a quota, no permission, a read-only
    file system): the user's problem to fix, not fabricsim's.

    Still an :class:`OSError` with the original ``errno``.  The message is one line naming what
    was being written; the CLI prints it and exits with code 2.  Nothing is left half-written.
    """

    def __str__(self) -> str:
        return str(self.strerror)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread so that every cleanup written for Ctrl-C runs (the
    CLI then says ``terminated`` and exits with 143)."""


STORAGE_ERRNOS: dict[int, str] = {
    errno.ENOSPC: "no space left on device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EFBIG: "file too large for the file system",
    errno.EROFS: "read-only file system",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
}
"""The ``errno`` values that are the machine's refusal to store a file, and how to say them."""


WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS})
"""Of :data:`STORAGE_ERRNOS`, those only a write meets (EACCES and EPERM may be a read)."""


def storage_problem(exc: BaseException, what: str | os.PathLike[str] | None) -> str | None:
    """One line for an :class:`OSError` that is the machine's refusal to store ``what``
    (``None``: what ``exc`` names); ``None`` if ``exc`` is another error."""
    if not isinstance(exc, OSError) or exc.errno not in STORAGE_ERRNOS:
        return None
    said = STORAGE_ERRNOS[exc.errno]
    if what is not None:
        return f"{said} writing {os.fspath(what)}"
    return f"{said}: {os.fsdecode(exc.filename)}" if exc.filename else said


def as_storage_error(exc: BaseException, what: str | os.PathLike[str] | None) -> BaseException:
    """``exc`` as a :class:`StorageError` naming ``what`` when it is a refusal to store; else
    ``exc`` itself."""
    if isinstance(exc, StorageError):
        return exc
    line = storage_problem(exc, what)
    if line is None:
        return exc
    assert isinstance(exc, OSError)
    return StorageError(exc.errno, line)


def plain_warning(message: Any) -> str:
    """A warning as the command line shows it: ``warning: `` and the text on one line (no file,
    line number or category)."""
    text = " ".join(str(message).split())
    return f"warning: {text}"


class PlainWarnings:
    """A :func:`warnings.showwarning` that writes each warning as :func:`plain_warning` to
    stderr, once per text (a scenario's warning is met again by each run of a command; the
    user needs it once).
    """

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def __call__(
        self,
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: Any = None,
        line: str | None = None,
    ) -> None:
        text = plain_warning(message)
        if text in self.seen:
            return
        self.seen.add(text)
        out = sys.stderr if file is None else file
        if out is None:
            return
        try:
            out.write(text + "\n")
            out.flush()
        except (OSError, ValueError):  # a closed stderr: the warning has nowhere to go
            pass


def plain_warnings_on() -> bool:
    """Whether this process shows warnings as :class:`PlainWarnings` (the command line's)."""
    return isinstance(warnings.showwarning, PlainWarnings)
