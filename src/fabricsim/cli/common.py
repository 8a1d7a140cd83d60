"""Helpers several verbs share: a scenario from SCENARIO/--set/--seed, an ``--out`` path, the
progress bar of runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fabricsim._compat import rich_progress
from fabricsim.config.loader import load_scenario, parse_set_options
from fabricsim.config.models import Scenario
from fabricsim.errors import ConfigError
from fabricsim.experiments.runner import ENGINES
from fabricsim.units import human_seconds


def scenario_from_options(name: str, sets: list[str] | None, seed: int | None) -> Scenario:
    """The scenario ``name`` with the ``--set`` overrides and ``--seed`` applied."""
    sc = load_scenario(name)
    overrides = parse_set_options(sets or [])
    if seed is not None:
        overrides["seed"] = seed
    return sc.with_overrides(overrides) if overrides else sc


def out_path(text: str | None, option: str, what: str = "directory") -> Path | None:
    """An ``--out`` value as a path; ``''`` is refused (it would mean the current directory)."""
    if text is None:
        return None
    if not text.strip():
        example = "runs/x" if what == "directory" else "trace.csv"
        raise ConfigError(f"{option}: empty path; give a {what} name, e.g. {option} {example}")
    return Path(text)


def engine_option(engine: str | None) -> str | None:
    """``--engine`` checked at once (``''`` is not "the default")."""
    if engine is not None and engine not in ENGINES:
        raise ConfigError(f"--engine: must be one of {', '.join(ENGINES)} (got {engine!r})")
    return engine


class ProgressBar:
    """A transient rich progress bar of runs done, as a ``progress(done, total)`` callable;
    nothing when not ``enabled`` (piped, ``--quiet``, ``--json``)."""

    def __init__(self, label: str, enabled: bool) -> None:
        self.label = label
        self.progress = rich_progress.Progress(transient=True) if enabled else None
        self.task: Any = None

    def __call__(self, done: int, total: int) -> None:
        if self.progress is None:
            return
        if self.task is None:
            self.progress.start()
            self.task = self.progress.add_task(self.label, total=total)
        self.progress.update(self.task, completed=done)
        if done >= total:  # the runs are done: the bar goes before anything is written
            self.stop()

    def stop(self) -> None:
        if self.progress is not None and self.task is not None:
            self.progress.stop()
        self.progress = None


class SimBar:
    """A single run's progress on a terminal: simulated time against the run's ideal end, with
    the elapsed wall time and an ETA (``progress(simulated_s, expected_end_s)`` of
    :func:`fabricsim.run`); the total grows when the run goes past the ideal end."""

    def __init__(self, label: str, enabled: bool, unit: str = "seconds") -> None:
        self.label = label
        self.unit = unit  # "packets": the decomposed engine's link simulations
        self.progress = _sim_progress() if enabled else None
        self.task: Any = None

    def __call__(self, now_s: float, expected_s: float) -> None:
        if self.progress is None:
            return
        if self.unit == "packets":
            total = max(float(expected_s), 1.0)
            shown = f"link simulations: {int(now_s):,} of {int(expected_s):,} packets"
        else:
            total = max(expected_s, now_s * 1.1, 1e-12)
            shown = f"{human_seconds(now_s)} simulated of ~{human_seconds(total)}"
        if self.task is None:
            self.progress.start()
            self.task = self.progress.add_task(self.label, total=total, sim=shown)
        self.progress.update(self.task, completed=now_s, total=total, sim=shown)

    def stop(self) -> None:
        if self.progress is not None and self.task is not None:
            self.progress.stop()
        self.progress = None


def _sim_progress() -> rich_progress.Progress:
    """:class:`SimBar`'s bar: the run, the bar, simulated time, wall time elapsed and an ETA."""
    rp = rich_progress
    return rp.Progress(
        rp.TextColumn("{task.description}"),
        rp.BarColumn(),
        rp.TextColumn("{task.fields[sim]}"),
        rp.TimeElapsedColumn(),
        rp.TextColumn("ETA"),
        rp.TimeRemainingColumn(),
        transient=True,
    )
