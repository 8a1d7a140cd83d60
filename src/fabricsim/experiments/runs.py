"""Running a plan's tasks: in this process, on local worker processes, or on a Dask cluster.

:func:`run_tasks` (comparisons, the ARK study) returns every task's result in task order;
:func:`completed` (sweeps) yields them as they finish.  Both submit through one
:mod:`~fabricsim.experiments.backend` interface with the signals deferred while workers
start, so every worker is one the pool knows of and can stop.  On any exception, Ctrl-C or
SIGTERM (raised as KeyboardInterrupt within :func:`run_tasks`) the backend is cancelled and
its workers are terminated before the exception goes on.  Under the command line, the
warnings of local workers come back with their results and are shown once by the driver, as
the command line shows every warning (one plain line, :class:`~fabricsim.errors.PlainWarnings`).

Examples
--------
>>> run_tasks(len, [{"id": "a"}, {"id": "b", "x": 1}])  # here, in order: workers=1
[1, 2]
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from fabricsim.errors import plain_warnings_on
from fabricsim.experiments.backend import open_backend, signals_deferred, sigterm_as_interrupt

Task = dict[str, Any]


def run_tasks(
    fn: Callable[[Task], Any],
    tasks: Sequence[Task],
    workers: int = 1,
    progress: Callable[[Any], None] | None = None,
    scheduler: str | None = None,
    timeout_s: float = 5.0,
) -> list[Any]:
    """``fn(task)`` of every task, in task order; ``workers`` local processes when more than one.

    Parameters
    ----------
    fn
        A module-level function (workers import it by name).
    tasks
        Plain dicts with an ``id`` (see :meth:`fabricsim.experiments.plan.RunSpec.task`).
    workers
        Processes (1, or a single task: run here, in order).
    progress
        Called with each result, in task order, as it is available.
    scheduler, timeout_s
        A Dask scheduler address (instead of local workers) and how long to try to reach it, s.
    """
    results: list[Any] = []
    with sigterm_as_interrupt():
        if scheduler is None and (workers <= 1 or len(tasks) <= 1):
            for task in tasks:
                results.append(fn(task))
                if progress:
                    progress(results[-1])
            return results
        if scheduler is not None:
            backend = open_backend(scheduler=scheduler, timeout_s=timeout_s)
        else:  # its workers die with this process
            backend = open_backend(workers, limit=len(tasks))
        try:
            for future in submit_all(backend, fn, tasks):
                results.append(_relayed(future.result()))
                if progress:
                    progress(results[-1])
        except BaseException:
            backend.close(cancel=True)
            raise
        backend.close()
    return results


def submit_all(backend: Any, fn: Callable[[Task], Any], tasks: Sequence[Task]) -> list[Any]:
    """Submit every task (signals held meanwhile: a worker started is one the pool can stop)."""
    # local worker processes (a pool) share the driver's stderr: their warnings come back
    relay = plain_warnings_on() and getattr(backend, "pool", None) is not None
    call = functools.partial(_task, fn) if relay else fn
    with signals_deferred():
        return [backend.submit(call, task) for task in tasks]


@dataclass
class _Warned:
    """A worker's result with the warnings it met (shown by the driver, once each)."""

    result: Any
    warnings: list[str]


def _task(fn: Callable[[Task], Any], task: Task) -> _Warned:
    """``fn(task)`` in a worker, its warnings recorded to go back with the result."""
    with warnings.catch_warnings(record=True) as caught:
        result = fn(task)
    return _Warned(result, [str(w.message) for w in caught])


def _relayed(result: Any) -> Any:
    """A task's result; a worker's warnings shown here (as the command line shows them)."""
    if not isinstance(result, _Warned):
        return result
    for text in result.warnings:
        warnings.showwarning(text, UserWarning, "", 0)
    return result.result


class _Relaying:
    """A future whose :meth:`result` shows the worker's warnings first."""

    def __init__(self, future: Any) -> None:
        self.future = future

    def result(self, timeout: float | None = None) -> Any:
        return _relayed(self.future.result(timeout))


def completed(
    backend: Any, fn: Callable[[Task], Any], tasks: Sequence[Task]
) -> Iterator[tuple[int, Any]]:
    """Submit every task to ``backend``; yield ``(task index, future)`` as each one finishes.

    The caller closes the backend (cancelling it on an exception).
    """
    futures = submit_all(backend, fn, tasks)
    index = {f: i for i, f in enumerate(futures)}
    for future in backend.as_completed(futures):
        yield index[future], _Relaying(future)
