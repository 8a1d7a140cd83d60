"""The :class:`Result` of a run: summary, flow table, record tables, and saving them."""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from fabricsim.config.models import Scenario

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
    """Everything a run produced.  ``summary`` and ``flows`` match the files of :meth:`save`."""

    scenario: Scenario
    summary: dict[str, Any]
    flows: pd.DataFrame
    timing: dict[str, Any] = field(default_factory=dict)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    json_records: dict[str, Any] = field(default_factory=dict)

    def save(self, out_dir: str | Path) -> Path:
        """Write the output directory (files replaced as a whole; see DESIGN.md)."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".fabricsim-", dir=out))
        try:
            (tmp / "summary.json").write_text(dumps_json(self.summary))
            (tmp / "timing.json").write_text(dumps_json(self.timing))
            (tmp / "config.yaml").write_text(
                yaml.safe_dump(self.scenario.to_dict(), sort_keys=False)
            )
            write_parquet(self.flows, tmp / "flows.parquet")
            for name, df in self.tables.items():
                write_parquet(df, tmp / f"{name}.parquet")
            for name, data in self.json_records.items():
                (tmp / f"{name}.json").write_text(dumps_json(data))
            for item in tmp.iterdir():
                os.replace(item, out / item.name)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return out


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
