"""Helpers several verbs share: a scenario from SCENARIO/--set/--seed, an ``--out`` path."""

from __future__ import annotations

from pathlib import Path

from fabricsim.config.loader import load_scenario, parse_set_options
from fabricsim.config.models import Scenario
from fabricsim.errors import ConfigError
from fabricsim.experiments.runner import ENGINES


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
