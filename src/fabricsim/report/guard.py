"""Figures and report sections that fail are skipped with one warning line, never fatal.

A study, a sweep or a run has finished its runs before any figure is drawn; a figure that
cannot be drawn (a column one engine does not write, a plotting bug) must not discard them.
:func:`guarded` calls one figure or section builder and, if it raises, prints one line on
stderr naming it and returns None.  Bad input files are checked before (``ConfigError``,
exit 2) and are not caught here; Ctrl-C (``KeyboardInterrupt``) is not an ``Exception``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TypeVar

from fabricsim.errors import ConfigError

__all__ = ["guarded", "skip_message"]

T = TypeVar("T")


def skip_message(what: str, exc: BaseException) -> str:
    """The warning line of a skipped figure or section (one line, however long the error).

    >>> skip_message("figure moe_queue_all", KeyError("hot_utilization"))
    "warning: figure moe_queue_all skipped (KeyError: 'hot_utilization')"
    """
    text = " ".join(str(exc).split())[:200]
    detail = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return f"warning: {what} skipped ({detail})"


def guarded(what: str, draw: Callable[[], T]) -> T | None:
    """``draw()``, or None with one warning line on stderr naming ``what`` if it raises.

    A ``ConfigError`` (bad input, said in one line with exit 2) passes through.
    """
    try:
        return draw()
    except ConfigError:
        raise
    except Exception as exc:  # noqa: BLE001 - a figure never discards finished runs
        print(skip_message(what, exc), file=sys.stderr)
        return None
