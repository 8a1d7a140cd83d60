"""The sweep directory: atomic writes, the manifest, point records and the aggregated table."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from fabricsim._compat import pd
from fabricsim.errors import ConfigError
from fabricsim.experiments.plan import RunSpec, SweepPlan
from fabricsim.metrics.outdir import MARKER, pid_alive
from fabricsim.metrics.results import dumps_json

MANIFEST = "manifest.json"
POINT_FILE = "point.json"
TABLE = "sweep.parquet"
POINTS = "points"
_TMP = ".tmp-"  # points/.tmp-<id>-<pid>-<random>: a point being written


def dumps(data: Any) -> str:
    return dumps_json(data)


def manifest_of(plan: SweepPlan) -> dict[str, Any]:
    points = [
        {
            "id": p.id,
            "index": p.index,
            "params": p.params,
            "seed": p.seed,
            "config_hash": p.config_hash,
        }
        for p in plan.points
    ]
    return {"spec": plan.spec, "points": points}


def check_manifest(out: Path, manifest: dict[str, Any]) -> None:
    """Refuse a directory that holds a different sweep (a resume must be the same sweep)."""
    path = out / MANIFEST
    if not path.exists():
        # a sweep killed before its manifest was written leaves only its marker: fresh again
        if out.exists() and any(p.name != MARKER for p in out.iterdir()):
            raise ConfigError(f"--out {out}: not empty and not a sweep directory")
        return
    try:
        old = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        raise ConfigError(f"--out {out}: {MANIFEST} is unreadable; use a new directory") from None
    if json.loads(dumps(manifest)) != old:
        raise ConfigError(
            f"--out {out}: holds a different sweep (its {MANIFEST} differs); use a new directory"
        )


def point_done(out: Path, point: RunSpec) -> bool:
    path = out / POINTS / point.id / POINT_FILE
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return False
    return data.get("config_hash") == point.config_hash and "summary" in data


def store_point(out: Path, point: RunSpec, result: dict[str, Any]) -> None:
    """Write a finished point: its files and ``point.json`` in a temporary directory, renamed
    into place at once (an interrupted store leaves no half-written point)."""
    points = out / POINTS
    points.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"{_TMP}{point.id}-{os.getpid()}-", dir=points))
    pdir = points / point.id
    try:
        for name, data in result["files"].items():
            (tmp / name).write_bytes(data)
        record = {
            "id": point.id,
            "index": point.index,
            "params": point.params,
            "seed": point.seed,
            "config_hash": point.config_hash,
            "summary": result["summary"],
        }
        (tmp / POINT_FILE).write_text(dumps(record))
        if pdir.exists():
            shutil.rmtree(pdir)
        os.rename(tmp, pdir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def remove_stale_temporaries(out: Path) -> None:
    """Delete half-written points and tables left by a killed sweep (their process is gone)."""

    def dead(text: str) -> bool:
        return text.isdigit() and not pid_alive(int(text))

    with contextlib.suppress(OSError):
        for entry in (out / POINTS).iterdir():
            if entry.name.startswith(_TMP) and dead(entry.name.rsplit("-", 2)[-2]):
                shutil.rmtree(entry, ignore_errors=True)
    with contextlib.suppress(OSError):
        for entry in out.iterdir():
            parts = entry.name.split(".")
            if entry.name.startswith(f".{TABLE}.") and len(parts) > 3 and dead(parts[-2]):
                entry.unlink(missing_ok=True)


def _flatten(summary: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in summary.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flatten(value, f"{name}."))
        elif isinstance(value, list):
            out[name] = json.dumps(value)
        else:
            out[name] = value
    return out


def _param_column(values: list[Any]) -> list[Any]:
    """One type per column: numbers stay numbers, mixed or structured values become text."""
    kinds = {type(v) for v in values}
    if kinds <= {int, float} or kinds == {bool} or kinds == {str}:
        return values
    return [v if isinstance(v, str) else json.dumps(v) for v in values]


def aggregate(out: str | Path) -> pd.DataFrame:
    """Every point's parameters and summary, one row per point in the manifest's order.

    Columns: ``point``, ``index``, ``status`` (``ok`` or ``missing``), ``seed``, the sweep keys
    (dotted names), then the summary keys (nested dicts flattened to ``key.sub``), sorted.
    """
    out = Path(out)
    try:
        manifest = json.loads((out / MANIFEST).read_text())
    except (OSError, json.JSONDecodeError):
        raise ConfigError(f"{out}: not a sweep directory (no readable {MANIFEST})") from None
    spec = manifest["spec"]
    keys = [k for k, _ in spec["grid"]] + [k for k, _ in spec["zip"]]
    rows = []
    summary_cols: set[str] = set()
    for p in manifest["points"]:
        row: dict[str, Any] = {"point": p["id"], "index": p["index"], "status": "missing"}
        row["seed"] = p["seed"]
        row.update({k: p["params"][k] for k in keys if k != "seed"})
        path = out / POINTS / p["id"] / POINT_FILE
        if path.exists():
            data = json.loads(path.read_text())
            if data.get("config_hash") == p["config_hash"]:
                flat = {k: v for k, v in _flatten(data["summary"]).items() if k != "seed"}
                summary_cols.update(flat)
                row.update(flat, status="ok")
        rows.append(row)
    cols = ["point", "index", "status", "seed", *[k for k in keys if k != "seed"]]
    cols += sorted(summary_cols - set(cols))
    df = pd.DataFrame(rows, columns=cols)
    for key in keys:
        if key != "seed":
            df[key] = _param_column(df[key].tolist())
    return df


def load_table(out: str | Path) -> pd.DataFrame:
    """The aggregated table of a finished sweep directory (``sweep.parquet``)."""
    path = Path(out) / TABLE
    if not path.exists():
        raise ConfigError(f"{out}: no {TABLE}; run the sweep (again) to finish it")
    return pd.read_parquet(path)
