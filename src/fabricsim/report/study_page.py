"""Sections of a report about a study directory (``fabricsim study``, the default ``run``).

The page: what was compared (run line, fabric, workload), one A-vs-B table per grid point
(each value's mean with its 95 % CI over seeds, the change against the baseline with the CI of
the paired difference, units per magnitude) beside that point's figures, the metric-vs-grid
figures, and the list of runs.  Figures are the study's own files (SVG inline, PNG embedded);
sections with nothing to show are left out.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from fabricsim._compat import pd
from fabricsim.analysis import run_files
from fabricsim.errors import ConfigError
from fabricsim.experiments.paired import point_title
from fabricsim.metrics.readable import study_point_rows
from fabricsim.report.html import Section
from fabricsim.report.labels import figure_labels, natural_key, value_label
from fabricsim.report.run_page import unfinished_lines
from fabricsim.units import human_seconds

__all__ = ["is_study", "read_study", "study_sections"]

_POINT_FIGURES = (
    ("cdf", "CDFs"), ("heatmap", "top-switch load"), ("spine_heatmap", "spine load"),
    ("moe_queue", "hot receiver queue"), ("moe_utilization", "receiver utilization"),
)  # fmt: skip
_GRID_FIGURES = (
    ("vs_grid", "metrics vs the grid"), ("fct_vs_qps", "FCT vs QPS (Fig. 2)"),
    ("ttft_vs_qps", "TTFT vs QPS (Fig. 4)"),
)  # fmt: skip


def is_study(directory: Path) -> bool:
    """Whether ``directory`` holds a paired study (``study.json`` with a ``vs`` record)."""
    path = directory / "study.json"
    if not path.exists():
        return False
    try:
        return "vs" in run_files.read_json_object(path)
    except ConfigError:
        return True  # a broken study.json: let read_study say what is wrong


def read_study(directory: Path) -> dict[str, Any]:
    """``study.json``, checked where the page relies on its shape."""
    path = directory / "study.json"
    record = run_files.read_json_object(path)
    bad = f"{path}: not a fabricsim study record"
    vs = record.get("vs")
    if not isinstance(vs, dict) or not isinstance(vs.get("values"), list) or len(vs["values"]) < 2:
        raise ConfigError(f"{bad} ('vs' needs a key and at least two values)")
    if not isinstance(record.get("table"), list) or not isinstance(record.get("grid"), dict):
        raise ConfigError(f"{bad} (needs a 'table' list and a 'grid' object)")
    for row in record["table"]:
        if not isinstance(row, dict) or not {"metric", "value", "mean"} <= set(row):
            raise ConfigError(f"{bad} (every table row needs metric, value and mean)")
    return record


def _figure(sec: Section, directory: Path, stem: str, alt: str) -> None:
    for fmt in ("svg", "png"):
        path = directory / f"{stem}.{fmt}"
        if path.is_file():
            sec.figure(stem, path.read_bytes(), alt, fmt)
            return


def _num(x: Any) -> float:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else math.nan


def _run_order(record: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The runs as the study ran them: by grid point (each key's values in order), then the
    ``vs`` value (the baseline first), then the seed — not by their names as strings
    (``qps10`` after ``qps5``)."""
    grid = record.get("grid") or {}
    values = [str(v) for v in (record.get("vs") or {}).get("values", [])]

    def index(seq: list[Any], item: Any) -> tuple[int, Any]:
        texts = [str(x) for x in seq]
        return (
            (texts.index(str(item)), "") if str(item) in texts else (len(texts), natural_key(item))
        )

    def key(item: tuple[str, Any]) -> tuple[Any, ...]:
        rid, run = item
        if not isinstance(run, dict):
            return ((), (len(values), natural_key(rid)), natural_key(rid))
        params = run.get("params") or {}
        point = tuple(index(list(vals or []), params.get(k)) for k, vals in grid.items())
        return (point, index(values, run.get("value")), natural_key(run.get("seed")), rid)

    return sorted((record.get("runs") or {}).items(), key=key)


def _runs_table(record: dict[str, Any]) -> pd.DataFrame:
    rows = []
    for rid, run in _run_order(record):
        s = run.get("summary") or {}
        mean = _num(s.get("fct_mean_s"))
        rows.append({
            "run": rid, "value": run.get("value"), "seed": run.get("seed"),
            "flows": f"{s.get('flows_completed', 0):,} of {s.get('flows_total', 0):,}",
            "mean FCT": human_seconds(mean) if math.isfinite(mean) else "-",
        })  # fmt: skip
    return pd.DataFrame(rows)


def _unfinished(record: dict[str, Any], key: str, params: dict[str, Any]) -> list[str]:
    """One line per run of this grid point that left flows unfinished."""
    named = [
        (f"{value_label(key, run.get('value'))}, seed {run.get('seed')}", run.get("summary") or {})
        for run in (record.get("runs") or {}).values()
        if isinstance(run, dict) and (run.get("params") or {}) == params
    ]
    return unfinished_lines(named)


def study_sections(directory: Path, record: dict[str, Any]) -> list[Section]:
    """The study page's sections (ids ``study``, ``point-<label>``, ``grid``, ``runs``)."""
    key, names = record["vs"]["key"], [str(v) for v in record["vs"]["values"]]
    grid_keys = list(record["grid"])
    head = Section("study", f"{key}: {' vs '.join(names)}")
    for line in (record.get("title"), record.get("fabric"), record.get("workload")):
        if line:
            head.note(str(line))
    seeds = record.get("seeds") or []
    head.note(
        f"Each value ran on the same {len(seeds)} seeds (same workload, same switch salts); a "
        f"cell is the mean over seeds [95 % CI]; Δ is the change of the mean against "
        f"{names[0]} [95 % CI of the paired difference]."
    )
    sections = [head]
    points = list(dict.fromkeys(tuple((k, r.get(k)) for k in grid_keys) for r in record["table"]))
    for params, label in zip(map(dict, points), figure_labels([dict(p) for p in points]),
                             strict=True):  # fmt: skip
        rows = [r for r in record["table"] if all(r.get(k) == v for k, v in params.items())]
        sec = Section(f"point-{label}", f"at {point_title(params)}" if params else "results")
        for line in _unfinished(record, key, params):
            sec.warn(line)
        table = pd.DataFrame(study_point_rows(rows, names))
        if not table.empty:
            sec.table(table)
        for stem, what in _POINT_FIGURES:
            _figure(sec, directory, f"{stem}_{label}", f"{what} at {point_title(params)}")
        if sec.parts:
            sections.append(sec)
    grid = Section("grid", "across the grid")
    for stem, what in _GRID_FIGURES:
        _figure(grid, directory, stem, what)
    if grid.parts:
        sections.append(grid)
    runs = _runs_table(record)
    if not runs.empty:
        sections.append(Section("runs", "runs").table(runs, max_rows=200))
    return sections
