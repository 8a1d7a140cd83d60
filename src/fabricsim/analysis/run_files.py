"""Reading a run's or a sweep's output files as untrusted input.

Anything that reads an output directory back (``fabricsim report``, :func:`diagnose` of a
directory) goes through these readers, so a missing, truncated or foreign file ends as one
:class:`~fabricsim.errors.ConfigError` line that names the file and what is wrong with it,
never as a traceback or a half-written report.

Examples
--------
>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "summary.json").write_text("{not json")
>>> read_json_object(d / "summary.json")  # doctest: +ELLIPSIS
Traceback (most recent call last):
fabricsim.errors.ConfigError: .../summary.json: not valid JSON (Expecting property name ...)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from fabricsim._compat import pd
from fabricsim.errors import ConfigError
from fabricsim.metrics.results import read_csv_table

__all__ = [
    "TABLE_COLUMNS",
    "read_json",
    "read_json_object",
    "read_table",
    "read_transport_stats",
    "read_text",
    "read_yaml_mapping",
]

#: columns a reader relies on, per table (file ``<name>.parquet``); numeric ones marked ``#``
TABLE_COLUMNS: dict[str, tuple[str, ...]] = {
    "flows": ("fct_s#", "size_bytes#", "start_s#"),
    "timeline_links": ("link", "time_s#", "utilization#", "queue_bytes#"),
    "timeline_spine_flows": ("spine", "time_s#", "active_flows#"),
    "port_stats": ("link",),
}


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:200]


def read_text(path: Path) -> str:
    """The UTF-8 text of ``path``; a ConfigError naming it when absent or unreadable."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: missing") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory, not a file") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text (a corrupt or foreign file)") from None
    except OSError as exc:
        raise ConfigError(f"{path}: unreadable ({exc.strerror or _first_line(exc)})") from None


def read_json(path: Path) -> Any:
    """The parsed JSON of ``path`` (ConfigError naming the file if it is not JSON)."""
    text = read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:
        raise ConfigError(f"{path}: not valid JSON (nested too deeply)") from None


def read_json_object(path: Path) -> dict[str, Any]:
    """:func:`read_json` that must give a JSON object (a dict)."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: must hold a JSON object, not {type(data).__name__}")
    return data


def read_yaml_mapping(path: Path) -> dict[str, Any]:
    """The parsed YAML mapping of ``path`` (an empty file gives ``{}``)."""
    text = read_text(path)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({_first_line(exc)})") from None
    except RecursionError:
        raise ConfigError(f"{path}: not valid YAML (nested too deeply)") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: must hold a YAML mapping, not {type(data).__name__}")
    return data


def read_table(path: Path, required: bool = False) -> pd.DataFrame | None:
    """A Parquet table (or the CSV a ``--format csv`` run wrote in its place), or None when it
    is absent (a ConfigError instead if ``required``).

    A file that is not Parquet, is truncated, or lacks the columns of :data:`TABLE_COLUMNS`
    for its name (or has them as text where numbers belong) is a ConfigError naming it.
    """
    path = Path(path)
    csv = path.with_suffix(".csv")
    if not path.exists() and path.suffix == ".parquet" and csv.is_file():
        path = csv  # a run saved with --format csv
    if not path.exists():
        if required:
            raise ConfigError(f"{path}: missing (every run writes it; is this a run directory?)")
        return None
    if not path.is_file():
        raise ConfigError(f"{path}: is a directory, not a Parquet file")
    try:
        df = read_csv_table(path) if path.suffix == ".csv" else pd.read_parquet(path)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises many kinds for a corrupt file
        kind = "CSV" if path.suffix == ".csv" else "Parquet"
        raise ConfigError(f"{path}: not a readable {kind} table ({_first_line(exc)})") from None
    name = path.name.removesuffix(path.suffix)
    missing = []
    for col in TABLE_COLUMNS.get(name, ()):
        numeric = col.endswith("#")
        col = col.rstrip("#")
        if col not in df.columns:
            missing.append(col)
        elif numeric and not (
            pd.api.types.is_numeric_dtype(df[col]) or df[col].isna().all()
        ):  # all-null columns are fine
            raise ConfigError(f"{path}: column {col!r} must be numeric (found {df[col].dtype})")
    if missing:
        raise ConfigError(f"{path}: lacks column(s) {', '.join(missing)} (not a fabricsim table)")
    return df


def read_transport_stats(path: Path) -> dict[str, Any]:
    """``uet_transport_stats.json``: an object whose ``nics`` and ``total`` are objects."""
    stats = read_json_object(path)
    for key in ("nics", "total"):
        value = stats.get(key)
        if value is not None and not isinstance(value, dict):
            raise ConfigError(f"{path}: {key!r} must be a JSON object")
    if any(not isinstance(v, dict) for v in (stats.get("nics") or {}).values()):
        raise ConfigError(f"{path}: every entry of 'nics' must be a JSON object")
    return stats
