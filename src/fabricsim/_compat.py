"""Heavy libraries imported on first use: ``pd`` (pandas), ``pa`` (pyarrow), ``pq`` (its Parquet),
and the parts of rich the command line prints with (``rich_console``, ``rich_table``,
``rich_progress``); and the process's own clock and memory as the operating system reports
them (:func:`process_age_s`, :func:`resident_mb`) for ``timing.json``.

perf: pandas alone took 0.3-0.5 s of every ``fabricsim`` start, pyarrow 0.1-0.2 s, rich
0.05 s, although a packet run needs neither pandas nor rich until it writes its files (and
then only pyarrow; rich when it prints).  A module writes
``from fabricsim._compat import pd`` where it wrote ``import pandas as pd``: the name stays at
module level (the type checker sees the real module), and the library is imported when an
attribute of it is first read, e.g. ``pd.DataFrame``.  Annotations do not read it (every such
module has ``from __future__ import annotations``); a module-level expression that names
``pd.X`` imports pandas when the module is imported, so write such aliases as strings.

Examples
--------
>>> lazy = LazyModule("json")
>>> lazy
<LazyModule 'json'>
>>> lazy.dumps([1]), "dumps" in vars(lazy)  # imported now; the attribute is kept
('[1]', True)
"""

from __future__ import annotations

import importlib
import os
import time
from typing import TYPE_CHECKING, Any


class LazyModule:
    """Stands for the module ``name`` and imports it when one of its attributes is read."""

    def __init__(self, name: str) -> None:
        self.__dict__["_LazyModule__name"] = name

    def __getattr__(self, attr: str) -> Any:
        value = getattr(importlib.import_module(self.__name), attr)
        self.__dict__[attr] = value  # perf: later reads are plain attribute look-ups
        return value

    def __repr__(self) -> str:
        return f"<LazyModule {self.__name!r}>"

    def __reduce__(self) -> tuple[type, tuple[str]]:
        return LazyModule, (self.__name,)


def process_age_s() -> float | None:
    """Seconds since this process started (``None`` where the system does not say).

    Linux: the start time in ``/proc/self/stat`` (clock ticks since boot, 10 ms each on most
    systems, rounded down: the age is at most one tick too long) against the boot-time clock
    it is counted on; the interpreter's own start-up is in it.

    >>> age = process_age_s()
    >>> age is None or 0 < age < 10**7
    True
    """
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()  # after the command's name
        ticks = int(fields[19])  # field 22, starttime
        return max(0.0, time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, IndexError, ValueError, AttributeError):
        return None


_START_UP_TAKEN: list[bool] = []


def start_up_once() -> dict[str, float | None]:
    """The process's start-up, the first time it is asked in this process: ``startup_s``
    (:func:`process_age_s`) and ``startup_cpu_s`` (the CPU seconds it has used, steadier than
    wall time on a busy machine); both ``None`` afterwards (the first run paid the start-up).

    >>> _ = start_up_once()  # (this process's first run may have asked already)
    >>> start_up_once()
    {'startup_s': None, 'startup_cpu_s': None}
    """
    if _START_UP_TAKEN:
        return {"startup_s": None, "startup_cpu_s": None}
    _START_UP_TAKEN.append(True)
    return {"startup_s": process_age_s(), "startup_cpu_s": time.process_time()}


def resident_mb() -> float | None:
    """This process's resident memory now, in MB of 2^20 bytes (as peak RSS is counted in the
    benchmarks); ``None`` where the system does not say (Linux: ``/proc/self/statm``)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            pages = int(f.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, IndexError, ValueError, AttributeError):
        return None


if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq
    from rich import console as rich_console
    from rich import progress as rich_progress
    from rich import table as rich_table
else:
    pd = LazyModule("pandas")
    pa = LazyModule("pyarrow")
    pq = LazyModule("pyarrow.parquet")
    rich_console = LazyModule("rich.console")
    rich_progress = LazyModule("rich.progress")
    rich_table = LazyModule("rich.table")

__all__ = [
    "LazyModule",
    "pa",
    "pd",
    "pq",
    "process_age_s",
    "resident_mb",
    "rich_console",
    "rich_progress",
    "rich_table",
    "start_up_once",
]
