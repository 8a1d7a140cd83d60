"""Parameter sweeps: grid and zipped parameter sets × seeds, on a local pool or a Dask cluster.

Planned by :func:`fabricsim.experiments.plan.plan_sweep`, run by :func:`run_sweep`; the
directory is :mod:`fabricsim.experiments.sweep_store`.

A sweep directory holds::

    DIR/.fabricsim             the output marker ({"kind": "sweep"}, fabricsim.metrics.outdir)
    DIR/manifest.json          the sweep's spec and its points, in row order
    DIR/points/<id>/           each point's run output (summary.json, flows.parquet, ...)
    DIR/points/<id>/point.json the point's parameters, seed and summary (written last)
    DIR/sweep.parquet          every point's parameters and summary, in row order
    DIR/sweep.csv              the same table as CSV (``--format csv``; the points' tables too)

Points are ordered grid-major (the first ``--grid`` key varies slowest, the zipped keys
together form the last axis), then by seed.  Every file is written atomically (a temporary
file and :func:`os.replace`), and ``point.json`` is written after the point's run output, so
a sweep killed at any moment resumes by running only the points without one.  A point's
directory appears whole (written under ``points/.tmp-*`` and renamed), a directory that holds
anything but the same sweep is refused, and a fresh sweep interrupted before any point
finished (or whose every point was refused as bad input) leaves no directory.

Local workers die with the driver, however it ends (Ctrl-C, SIGTERM, SIGKILL): they ignore
SIGINT, and on Linux the kernel kills them (PDEATHSIG) when their forkserver dies, which it
does when the driver dies; elsewhere a watchdog thread ends them.  On Ctrl-C or SIGTERM the
driver cancels the queued points and terminates the workers before it exits (code 130).

Workers run :func:`run_point`, which takes a plain dict and returns the point's summary and
output files as bytes; only the driver writes to ``DIR``.  The same submit / as-completed code
path drives a local :class:`~concurrent.futures.ProcessPoolExecutor` or a Dask distributed
client, and the workers of a remote cluster need no shared filesystem.

Examples
--------
>>> from fabricsim.experiments.plan import plan_sweep
>>> plan = plan_sweep("ecmp-collision", grid=["topology.spines=4,8"], seeds=2)
>>> [(p.id, p.params, p.seed) for p in plan.points]  # doctest: +NORMALIZE_WHITESPACE
[('p0000', {'topology.spines': 4}, 1), ('p0001', {'topology.spines': 4}, 2),
 ('p0002', {'topology.spines': 8}, 1), ('p0003', {'topology.spines': 8}, 2)]
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fabricsim._compat import pd
from fabricsim.config.loader import effective_scenario
from fabricsim.errors import ConfigError, FabricsimError
from fabricsim.experiments.backend import (
    IN_PROCESS,
    check_timeout,
    check_workers,
    open_backend,
    sigterm_as_interrupt,
)
from fabricsim.experiments.plan import RunSpec, SweepPlan, plan_sweep
from fabricsim.experiments.runner import run
from fabricsim.experiments.runs import completed
from fabricsim.experiments.sweep_store import (
    MANIFEST,
    POINTS,
    TABLE,
    aggregate,
    check_manifest,
    dumps,
    manifest_of,
    point_done,
    remove_stale_temporaries,
    store_point,
)
from fabricsim.metrics.outdir import MARKER, check_out_dir, make_sweep_dir
from fabricsim.metrics.results import atomic_write, check_table_format, csv_bytes, write_parquet

CSV_TABLE = "sweep.csv"  # the sweep table as CSV (``--format csv``)


def run_point(task: dict[str, Any]) -> dict[str, Any]:
    """Run one point (in a worker): its summary and its output directory's files as bytes.

    Parameters
    ----------
    task
        ``{"id", "scenario" (effective scenario dict), "engine" (or None), "format"
        (optional: ``parquet`` or ``csv``, how its tables are written)}``.

    Returns
    -------
    dict
        ``{"id", "ok": True, "summary", "files": {name: bytes}}``, or ``{"id", "ok": False,
        "error", "config_error"}`` if the run raised.
    """
    try:
        # the planner checked the point (with the user's keys); this is its effective scenario
        res = run(effective_scenario(task["scenario"]), engine=task["engine"])
        # in memory: a killed worker leaves nothing
        files = res.to_files(task.get("format", "parquet"))
    except Exception as exc:  # noqa: BLE001 - reported per point, the sweep goes on
        config_error = isinstance(exc, ConfigError)
        text = str(exc) if config_error else f"{type(exc).__name__}: {exc}"
        return {
            "id": task["id"],
            "ok": False,
            "error": (text.splitlines() or [type(exc).__name__])[0],
            "config_error": config_error,
        }
    files = dict(sorted(files.items()))
    return {"id": task["id"], "ok": True, "summary": res.summary, "files": files}


@dataclass
class SweepOutcome:
    """What :func:`run_sweep` did: points run now, found done, failed; the aggregated table."""

    out: Path
    ran: list[str]
    skipped: list[str]
    failed: dict[str, str]
    table: pd.DataFrame
    backend: str = ""
    wall_s: float = 0.0
    refused: frozenset[str] = frozenset()  # failed points whose error was bad input (exit 2)
    lost: frozenset[str] = frozenset()  # failed points whose worker died (a rerun may succeed)
    removed: bool = False  # nothing ran: the directory this call made was removed again


class _Bar:
    """A rich progress bar with ETA on a terminal; nothing otherwise."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.progress = None
        if not enabled or total == 0:
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        console = Console(stderr=True)
        if not console.is_terminal:
            return
        self.progress = Progress(
            TextColumn("sweep"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            TextColumn("ETA"), TimeRemainingColumn(), console=console, transient=True,
        )  # fmt: skip
        self.task = self.progress.add_task("points", total=total)
        self.progress.start()

    def advance(self) -> None:
        if self.progress is not None:
            self.progress.advance(self.task)

    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()


def run_sweep(
    plan: SweepPlan,
    out: str | Path,
    workers: int | None = None,
    scheduler: str | None = None,
    timeout_s: float = 5.0,
    progress: bool = False,
    table_format: str = "parquet",
) -> SweepOutcome:
    """Run the points of ``plan`` that ``out`` does not hold yet, then aggregate the table.

    Parameters
    ----------
    plan
        From :func:`plan_sweep`.
    out
        Sweep directory (created; a directory holding the same sweep is resumed).
    workers
        Local worker processes (default: one per CPU).
    scheduler
        Dask scheduler address (``tcp://host:8786``) instead of local workers.
    timeout_s
        How long to try to reach the scheduler, s.
    progress
        Show a progress bar with ETA when stderr is a terminal.
    table_format
        ``parquet`` or ``csv``: how the points' tables are written (``--format``); with
        ``csv`` the sweep table is also written as ``sweep.csv`` (``sweep.parquet`` is always
        written: resuming reads it).  Points found done keep the format they were written in.

    Returns
    -------
    SweepOutcome
        Points that failed are listed in ``failed`` (id -> error line) and have no
        ``point.json``, so a rerun retries them (see :func:`failure_error` for when that
        can help).  If every point of a fresh sweep was refused as bad input, the directory
        is removed again (``removed``).

    Raises
    ------
    ConfigError
        Bad ``out`` (:func:`fabricsim.metrics.outdir.check_out_dir`), a directory holding a
        different sweep, bad ``workers`` / ``timeout_s``, an unreachable scheduler.
    KeyboardInterrupt
        Ctrl-C or SIGTERM: the pool is cancelled and its workers are terminated; the points
        finished so far stay (whole) so a rerun resumes, and a fresh sweep with none finished
        leaves no directory.
    """
    wall0 = time.perf_counter()
    _check_run_args(out, workers, scheduler, timeout_s)
    check_table_format(table_format)
    out = Path(out)
    manifest = manifest_of(plan)
    check_manifest(out, manifest)
    todo = [p for p in plan.points if not point_done(out, p)]
    where = (workers, scheduler, timeout_s)
    return _run_todo(plan, out, todo, manifest, wall0, where, progress, table_format)


def _check_run_args(
    out: str | Path, workers: int | None, scheduler: str | None, timeout_s: float
) -> None:
    """Raise ``ConfigError`` for a bad ``out``, ``workers``, ``scheduler`` or ``timeout_s``."""
    check_out_dir(out, "sweep")
    if workers is not None and scheduler is not None:
        raise ConfigError("--workers: give --workers N or --scheduler ADDR, not both")
    if workers != IN_PROCESS:
        check_workers(workers)
    check_timeout(timeout_s)


def _run_todo(
    plan: SweepPlan,
    out: Path,
    todo: list[RunSpec],
    manifest: dict[str, Any],
    wall0: float,
    where: tuple[int | None, str | None, float],
    progress: bool,
    table_format: str = "parquet",
) -> SweepOutcome:
    """Run ``todo`` (points of ``plan`` not in ``out`` yet) and write or rebuild the table.

    ``where`` is ``(workers, scheduler, timeout_s)`` of :func:`run_sweep`; ``wall0`` its
    start time.  See :func:`run_sweep` for the cleanup on failure or interrupt.
    """
    workers, scheduler, timeout_s = where
    fresh = not (out / MANIFEST).exists()
    ran: list[str] = []
    failed: dict[str, str] = {}
    refused: set[str] = set()
    lost: set[str] = set()
    created: list[Path] = []
    removed = False
    backend = None
    name = ""
    try:
        with sigterm_as_interrupt():
            # opened before anything is written: an unreachable scheduler leaves no directory
            backend = open_backend(workers, scheduler, timeout_s, limit=len(todo)) if todo else None
            name = backend.name if backend is not None else ""
            created = make_sweep_dir(out)
            remove_stale_temporaries(out)
            if fresh:
                atomic_write(out / MANIFEST, dumps(manifest))
            if backend is not None:
                driving, backend = backend, None  # _drive closes it, whatever happens
                tasks = [p.task(engine=plan.engine, format=table_format) for p in todo]
                _drive(driving, tasks, todo, out, progress, ran, failed, refused, lost)
            removed = fresh and not ran and bool(failed) and set(failed) <= refused
            if removed:  # every point refused as bad input: leave no directory behind
                _undo_fresh(out, created)
                table = aggregate_plan(plan)
            else:
                table = _write_table(out, table_format)
    except BaseException:
        if backend is not None:
            backend.close(cancel=True)
        if fresh and not ran:  # interrupted before any point finished: leave nothing
            _undo_fresh(out, created)
        raise
    todo_ids = {p.id for p in todo}
    order = {p.id: p.index for p in plan.points}
    return SweepOutcome(
        out, sorted(ran, key=order.__getitem__), [p.id for p in plan.points if p.id not in todo_ids],
        dict(sorted(failed.items(), key=lambda kv: order[kv[0]])), table, name,
        time.perf_counter() - wall0, frozenset(refused), frozenset(lost), removed,
    )  # fmt: skip


def _drive(
    backend: Any,
    tasks: list[dict[str, Any]],
    todo: list[RunSpec],
    out: Path,
    progress: bool,
    ran: list[str],
    failed: dict[str, str],
    refused: set[str],
    lost: set[str],
) -> None:
    """Submit every point (``tasks``, one per point of ``todo``) and store results as they
    complete; cancel everything on any error."""
    bar = _Bar(len(todo), progress)
    try:
        for i, fut in completed(backend, run_point, tasks):
            point = todo[i]
            try:
                result = fut.result()
            except Exception as exc:  # noqa: BLE001 - the worker died or the task was lost
                line = (str(exc).splitlines() or [""])[0]
                failed[point.id] = f"worker lost: {type(exc).__name__}{': ' + line if line else ''}"
                lost.add(point.id)
            else:
                if result["ok"]:
                    store_point(out, point, result)
                    ran.append(point.id)
                else:
                    failed[point.id] = result["error"]
                    if result.get("config_error"):
                        refused.add(point.id)
            bar.advance()
    except BaseException:
        backend.close(cancel=True)
        raise
    finally:
        bar.stop()
    backend.close()


def _undo_fresh(out: Path, created: list[Path]) -> None:
    """Remove what a fresh sweep wrote (manifest, marker, point directories, the table)."""
    if out in created:
        shutil.rmtree(out, ignore_errors=True)
        for d in sorted(created, key=lambda p: len(p.parts), reverse=True):
            with contextlib.suppress(OSError):
                d.rmdir()
        return
    for name in (MANIFEST, MARKER, TABLE, CSV_TABLE):
        with contextlib.suppress(OSError):
            (out / name).unlink()
    shutil.rmtree(out / POINTS, ignore_errors=True)


def aggregate_plan(plan: SweepPlan) -> pd.DataFrame:
    """The table of a sweep with no finished point (every row ``missing``), nothing read."""
    keys = plan.keys
    rows = [
        {"point": p.id, "index": p.index, "status": "missing", "seed": p.seed,
         **{k: p.params[k] for k in keys if k != "seed"}}
        for p in plan.points
    ]  # fmt: skip
    return pd.DataFrame(
        rows, columns=["point", "index", "status", "seed", *[k for k in keys if k != "seed"]]
    )


def _write_table(out: Path, table_format: str = "parquet") -> pd.DataFrame:
    """Aggregate the points into ``sweep.parquet`` (and ``sweep.csv`` with ``csv``), each
    written atomically."""
    table = aggregate(out)
    if table_format == "csv":
        atomic_write(out / CSV_TABLE, csv_bytes(table))
    tmp = out / f".{TABLE}.{os.getpid()}.tmp"
    try:
        write_parquet(table, tmp)
        os.replace(tmp, out / TABLE)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return table


def describe(outcome: SweepOutcome) -> str:
    """One line about a finished sweep."""
    n = len(outcome.table)
    parts = [f"{len(outcome.ran)} run", f"{len(outcome.skipped)} already done"]
    if outcome.failed:
        parts.append(f"{len(outcome.failed)} failed")
    where = f" on {outcome.backend}" if outcome.backend else ""
    return f"sweep: {n} points ({', '.join(parts)}){where} in {outcome.wall_s:.1f} s -> {outcome.out / TABLE}"


def to_json_data(outcome: SweepOutcome) -> dict[str, Any]:
    """The sweep for ``fabricsim sweep --json``: where it is, which points ran now, were found
    done or failed (id -> error line), and ``table``: ``sweep.parquet`` as one object per row
    (NaN as null; wall time left out, so the same sweep gives the same JSON)."""
    return {
        "out": str(outcome.out / TABLE) if not outcome.removed else None,
        "points": len(outcome.table),
        "ran": outcome.ran,
        "skipped": outcome.skipped,
        "failed": outcome.failed,
        "table": outcome.table.to_dict(orient="records"),
    }


def failure_error(outcome: SweepOutcome) -> FabricsimError | None:
    """The error to raise for failed points (None if none failed).

    Points refused as bad input (a :class:`ConfigError` in the run) give a ConfigError (exit
    2) that says a rerun will not help; points whose run raised an internal error give a
    FabricsimError that says the same (runs are deterministic); only points whose worker died
    or whose task was lost are worth retrying, and only then does the message say so.
    """
    if not outcome.failed:
        return None
    total = len(outcome.table)
    n = len(outcome.failed)
    lost = [k for k in outcome.failed if k in outcome.lost]
    refused = [k for k in outcome.failed if k in outcome.refused]
    broken = [k for k in outcome.failed if k not in outcome.lost and k not in outcome.refused]

    def first(ids: list[str]) -> str:
        return f"first: {ids[0]}: {outcome.failed[ids[0]]}"

    if lost:
        return FabricsimError(
            f"sweep: {n} of {total} points failed; {len(lost)} lost their worker process "
            f"({first(lost)}); rerun the same command to run the missing points"
        )
    if broken:
        return FabricsimError(
            f"sweep: {n} of {total} points failed with an internal error ({first(broken)}); "
            "runs are deterministic, so a rerun fails the same way"
        )
    nothing = ", nothing written" if outcome.removed else ""
    return ConfigError(
        f"sweep: {n} of {total} points refused as bad input{nothing} ({first(refused)}); "
        "fix the scenario or the sweep keys, a rerun fails the same way"
    )


def _axis_texts(axes: dict[str, Any] | None) -> list[str]:
    """``{key: [values]}`` as ``KEY=V1,V2`` texts (each value as JSON, which is YAML)."""
    return [f"{k}={','.join(json.dumps(v) for v in vals)}" for k, vals in (axes or {}).items()]


def sweep(
    scenario: Any,
    grid: dict[str, list[Any]],
    seeds: int = 1,
    *,
    zipped: dict[str, list[Any]] | None = None,
    sets: dict[str, Any] | None = None,
    engine: str | None = None,
    out: str | Path | None = None,
    workers: int | None = 1,
    table_format: str = "parquet",
) -> pd.DataFrame:
    """The Python form of ``fabricsim sweep``: dicts in, the sweep table (``sweep.parquet``) out.

    Without ``out`` the sweep runs in a temporary directory that is removed afterwards.
    ``workers=1`` runs the points in this process (a notebook or script needs no
    ``__main__`` guard); more run in worker processes.

    Examples
    --------
    >>> t = sweep("ecmp-collision", {"topology.spines": [4, 8]})
    >>> list(t["topology.spines"]), bool((t["fct_mean_s"] > 0).all())
    ([4, 8], True)
    """
    sets_texts = [f"{k}={json.dumps(v)}" for k, v in (sets or {}).items()]
    plan = plan_sweep(scenario, _axis_texts(grid), _axis_texts(zipped), seeds, sets_texts, engine)
    with contextlib.ExitStack() as stack:
        if out is None:
            out = Path(stack.enter_context(tempfile.TemporaryDirectory())) / "sweep"
        outcome = run_sweep(
            plan, out, workers=IN_PROCESS if workers == 1 else workers, table_format=table_format
        )
        error = failure_error(outcome)
        if error is not None:
            raise error
        return outcome.table
