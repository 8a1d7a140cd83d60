"""Running a sweep: the per-point worker function and the driver loop."""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from fabricsim.errors import ConfigError, FabricsimError
from fabricsim.sweep.backends import open_backend
from fabricsim.sweep.plan import SweepPlan, SweepPoint
from fabricsim.sweep.store import (
    MANIFEST,
    TABLE,
    aggregate,
    atomic_write,
    check_manifest,
    dumps,
    manifest_of,
    point_done,
    store_point,
)


def run_point(task: dict[str, Any]) -> dict[str, Any]:
    """Run one point (in a worker): its summary and its output directory's files as bytes.

    Parameters
    ----------
    task
        ``{"id", "scenario" (effective scenario dict), "engine" (or None)}``.

    Returns
    -------
    dict
        ``{"id", "ok": True, "summary", "files": {name: bytes}}``, or ``{"id", "ok": False,
        "error", "config_error"}`` if the run raised.
    """
    import fabricsim

    try:
        res = fabricsim.run(fabricsim.load_scenario(task["scenario"]), engine=task["engine"])
    except Exception as exc:  # noqa: BLE001 - reported per point, the sweep goes on
        return {
            "id": task["id"],
            "ok": False,
            "error": f"{type(exc).__name__}: {exc}".splitlines()[0],
            "config_error": isinstance(exc, ConfigError),
        }
    with tempfile.TemporaryDirectory(prefix="fabricsim-point-") as tmp:
        res.save(tmp)
        files = {p.name: p.read_bytes() for p in sorted(Path(tmp).iterdir()) if p.is_file()}
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

    Returns
    -------
    SweepOutcome
        Points that failed are listed in ``failed`` (id -> error line) and have no
        ``point.json``, so a rerun retries them.
    """
    wall0 = time.perf_counter()
    out = Path(out)
    manifest = manifest_of(plan)
    check_manifest(out, manifest)
    todo = [p for p in plan.points if not point_done(out, p)]
    backend = open_backend(workers, scheduler, timeout_s) if todo else None
    out.mkdir(parents=True, exist_ok=True)
    if not (out / MANIFEST).exists():
        atomic_write(out / MANIFEST, dumps(manifest))
    ran: list[str] = []
    failed: dict[str, str] = {}
    refused: set[str] = set()
    if backend is not None:
        bar = _Bar(len(todo), progress)
        try:
            for point, result in _execute(backend, plan, todo):
                if result["ok"]:
                    store_point(out, point, result)
                    ran.append(point.id)
                else:
                    failed[point.id] = result["error"]
                    if result.get("config_error"):
                        refused.add(point.id)
                bar.advance()
        finally:
            bar.stop()
    table = _write_table(out)
    todo_ids = {p.id for p in todo}
    order = {p.id: p.index for p in plan.points}
    return SweepOutcome(
        out, sorted(ran, key=order.__getitem__), [p.id for p in plan.points if p.id not in todo_ids],
        dict(sorted(failed.items())), table, backend.name if backend is not None else "",
        time.perf_counter() - wall0, frozenset(refused),
    )  # fmt: skip


def _execute(backend: Any, plan: SweepPlan, todo: list[SweepPoint]):
    """Submit every point, yield ``(point, result)`` as they complete; cancel on any error."""
    by_id = {p.id: p for p in todo}
    try:
        tasks = [{"id": p.id, "scenario": p.scenario, "engine": plan.engine} for p in todo]
        futures = [backend.submit(run_point, t) for t in tasks]
        for fut in backend.as_completed(futures):
            result = fut.result()
            yield by_id[result["id"]], result
    except BaseException:
        backend.close(cancel=True)
        raise
    backend.close()


def _write_table(out: Path) -> pd.DataFrame:
    """Aggregate the points into ``sweep.parquet`` (written atomically)."""
    from fabricsim.metrics.results import write_parquet

    table = aggregate(out)
    tmp = out / f".{TABLE}.tmp"
    write_parquet(table, tmp)
    os.replace(tmp, out / TABLE)
    return table


def describe(outcome: SweepOutcome) -> str:
    """One line about a finished sweep."""
    n = len(outcome.table)
    parts = [f"{len(outcome.ran)} run", f"{len(outcome.skipped)} already done"]
    if outcome.failed:
        parts.append(f"{len(outcome.failed)} failed")
    where = f" on {outcome.backend}" if outcome.backend else ""
    return f"sweep: {n} points ({', '.join(parts)}){where} in {outcome.wall_s:.1f} s -> {outcome.out / TABLE}"


def failure_error(outcome: SweepOutcome) -> FabricsimError | None:
    """The error to raise for failed points (None if none failed)."""
    if not outcome.failed:
        return None
    first_id, first = next(iter(outcome.failed.items()))
    msg = (
        f"sweep: {len(outcome.failed)} of {len(outcome.table)} points failed (first: {first_id}: "
        f"{first}); rerun the same command to retry them"
    )
    if set(outcome.failed) <= outcome.refused:
        return ConfigError(msg)
    return FabricsimError(msg)
