"""The :class:`Result` of a run: summary, flow table, record tables, and saving them."""

from __future__ import annotations

import html
import json
import math
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from fabricsim._compat import pa, pd, pq
from fabricsim.config.models import Scenario
from fabricsim.metrics.outdir import MARKER, marker_text, prepare_out_dir
from fabricsim.metrics.readable import summary_rows
from fabricsim.units import human_seconds

FLOW_COLUMNS = (
    "flow_id",
    "src",
    "dst",
    "size_bytes",
    "start_s",
    "finish_s",
    "fct_s",
    "path",
    "entropy",
)


@dataclass(eq=False)
class Result:
    """Everything a run produced.  ``summary`` and ``flows`` match the files of :meth:`save`.

    Attributes
    ----------
    scenario : Scenario
        The effective scenario (every default filled in; ``config.yaml``).
    summary : dict
        ``summary.json``: deterministic figures of the run (``fct_mean_s``, ``flows_completed``
        ...; the keys of DESIGN.md's output section).
    flows : pandas.DataFrame
        ``flows.parquet``: one row per flow or message, in flow-id order.
    timing : dict
        ``timing.json``: wall time and engine speed (not deterministic).
    tables : dict of str to pandas.DataFrame
        Record tables by file stem (``timeline_links``, ``port_stats``, ``uet_monitor`` ...).
    json_records : dict
        JSON records by file stem (``uet_transport_stats`` ...).

    In a notebook a Result shows its summary as a table; ``repr`` is one line.
    """

    scenario: Scenario
    summary: dict[str, Any]
    flows: pd.DataFrame
    timing: dict[str, Any] = field(default_factory=dict)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    json_records: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        s = self.summary
        mean = s.get("fct_mean_s")
        fct = f", mean FCT {human_seconds(mean)}" if isinstance(mean, int | float) else ""
        return (
            f"<Result {s.get('scenario', self.scenario.name)} on the {s.get('engine', '?')} "
            f"engine, seed {s.get('seed', self.scenario.seed)}: "
            f"{s.get('flows_completed', 0):,}/{s.get('flows_total', 0):,} flows{fct}>"
        )

    def _repr_html_(self) -> str:
        """The summary table (notebooks)."""
        title = html.escape(repr(self)[1:-1])
        cells = "".join(
            f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
            for k, v in summary_rows(self.summary)
        )
        return f"<table><caption>{title}</caption>{cells}</table>"

    def save(self, out_dir: str | Path) -> Path:
        """Write the output directory, replacing a previous fabricsim output whole.

        The files are written into a temporary sibling directory that is then swapped in
        (:mod:`fabricsim.metrics.outdir`): no file of an earlier output survives, and an
        exception or Ctrl-C leaves the earlier output as it was.  A path that cannot be an
        output directory (a file, a non-empty directory that is not a fabricsim output, a
        sweep directory, ...) raises :class:`~fabricsim.errors.ConfigError`.
        """
        with prepare_out_dir(out_dir, "run").staging() as tmp:
            self.write_files(tmp)
        return Path(out_dir)

    def write_files(self, directory: str | Path) -> None:
        """Write this run's files into the existing ``directory`` (with the output marker)."""
        d = Path(directory)
        for name, data in self.to_files().items():
            (d / name).write_bytes(data)

    def to_files(self) -> dict[str, bytes]:
        """The output directory's files as bytes, by name (what :meth:`save` writes)."""
        files = {
            "summary.json": dumps_json(self.summary).encode(),
            "timing.json": dumps_json(self.timing).encode(),
            "config.yaml": yaml.safe_dump(self.scenario.to_dict(), sort_keys=False).encode(),
            "flows.parquet": parquet_bytes(self.flows),
        }
        for name, df in self.tables.items():
            files[f"{name}.parquet"] = parquet_bytes(df)
        for name, data in self.json_records.items():
            files[f"{name}.json"] = dumps_json(data).encode()
        files[MARKER] = marker_text("run").encode()
        return files


def atomic_write(path: Path, data: bytes | str) -> None:
    """Write ``path`` via a temporary file in the same directory and :func:`os.replace`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        tmp.write_bytes(data.encode() if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _clean(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_clean(v) for v in obj]
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating | float):
        f = float(obj)
        return None if math.isnan(f) or math.isinf(f) else f
    if isinstance(obj, np.bool_):
        return bool(obj)
    return obj


def dumps_json(data: Any) -> str:
    """Deterministic JSON: sorted keys, NaN/inf as null, numpy scalars as Python numbers."""
    return json.dumps(_clean(data), indent=2, sort_keys=True) + "\n"


def write_parquet(df: pd.DataFrame, path: Path) -> None:
    """Parquet without the pandas index, NaN floats as nulls (deterministic bytes)."""
    table = pa.Table.from_pandas(df, preserve_index=False)
    pq.write_table(table, path, compression="zstd")


def parquet_bytes(df: pd.DataFrame) -> bytes:
    """The bytes :func:`write_parquet` would write."""
    sink = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), sink, compression="zstd")
    return sink.getvalue().to_pybytes()


def percentiles(fct: np.ndarray) -> dict[str, float | None]:
    """Mean and P50/P95/P99/max of the completed flows' FCTs (None when none completed)."""
    done = fct[~np.isnan(fct)]
    if len(done) == 0:
        return {k: None for k in ("fct_mean_s", "fct_p50_s", "fct_p95_s", "fct_p99_s", "fct_max_s")}
    return {
        "fct_mean_s": float(done.mean()),
        "fct_p50_s": float(np.percentile(done, 50)),
        "fct_p95_s": float(np.percentile(done, 95)),
        "fct_p99_s": float(np.percentile(done, 99)),
        "fct_max_s": float(done.max()),
    }
