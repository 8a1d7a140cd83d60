"""The :class:`Result` of a run: summary, flow table, record tables, and saving them."""

from __future__ import annotations

import functools
import html
import importlib.metadata
import json
import math
import os
import threading
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


Columns = dict[str, Any]
"""A table as columns in order: name -> numpy array or list (what ``pd.DataFrame`` accepts)."""


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
        ``flows.parquet``: one row per flow or message, in flow-id order.  Given as
        :data:`Columns`, it is made a DataFrame when first read (perf: a run that only saves
        its files never imports pandas; :func:`columns_parquet_bytes` writes the same bytes).
    timing : dict
        ``timing.json``: wall time and engine speed (not deterministic).
    tables : dict of str to pandas.DataFrame
        Record tables by file stem (``timeline_links``, ``port_stats``, ``uet_monitor`` ...).
    json_records : dict
        JSON records by file stem (``uet_transport_stats`` ...).

    In a notebook a Result shows its summary as a table; ``repr`` is one line.
    """

    def __init__(
        self,
        scenario: Scenario,
        summary: dict[str, Any],
        flows: pd.DataFrame | Columns,
        timing: dict[str, Any] | None = None,
        tables: dict[str, pd.DataFrame] | None = None,
        json_records: dict[str, Any] | None = None,
    ) -> None:
        self.scenario = scenario
        self.summary = summary
        self._flows = flows
        self.timing = {} if timing is None else timing
        self.tables = {} if tables is None else tables
        self.json_records = {} if json_records is None else json_records

    @property
    def flows(self) -> pd.DataFrame:
        if isinstance(self._flows, dict):
            self._flows = pd.DataFrame(self._flows)
        return self._flows

    @flows.setter
    def flows(self, df: pd.DataFrame) -> None:
        self._flows = df

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
            "flows.parquet": (
                columns_parquet_bytes(self._flows)
                if isinstance(self._flows, dict)
                else parquet_bytes(self._flows)
            ),
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
    return _table_bytes(pa.Table.from_pandas(df, preserve_index=False))


def columns_parquet_bytes(columns: Columns) -> bytes:
    """The bytes :func:`parquet_bytes` writes for ``pd.DataFrame(columns)``, without pandas for
    columns of numbers, booleans and strings (:func:`_arrow_table`), else through pandas."""
    table = _arrow_table(columns)
    if table is None:
        return parquet_bytes(pd.DataFrame(columns))
    return _table_bytes(table)


def _table_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    return sink.getvalue().to_pybytes()


@functools.cache
def _pandas_metadata_known() -> str | None:
    """The installed pandas version if ``pa.Table.from_pandas`` writes the pandas metadata that
    :func:`_arrow_table` rebuilds (pandas >= 3: strings are ``str``; pyarrow >= 22: it stores
    ``attributes``), else None."""
    try:
        version = importlib.metadata.version("pandas")
    except importlib.metadata.PackageNotFoundError:
        return None
    return version if _major(version) >= 3 and _major(pa.__version__) >= 22 else None


def _major(version: str) -> int:
    head = version.split(".")[0]
    return int(head) if head.isdigit() else 0


def _arrow_column(values: Any) -> tuple[pa.Array, str, str] | None:
    """The Arrow array ``pa.Table.from_pandas`` makes of a DataFrame column built from
    ``values``, with its pandas and numpy type names; None for anything but numbers,
    booleans and strings.

    perf: built from buffers, as ``pa.array`` would import pandas to check its argument.
    """
    if isinstance(values, np.ndarray) and values.ndim == 1 and values.dtype.isnative:
        kind, dtype = values.dtype.kind, str(values.dtype)
        if kind in "iub" or dtype in ("float32", "float64"):
            return _numeric_array(values), dtype, dtype
        if kind == "U" or (kind == "O" and len(values) and all(type(v) is str for v in values)):
            return _string_array(values.tolist()), "object", "str"
        return None
    if isinstance(values, list) and values and all(type(v) is str for v in values):
        return _string_array(values), "object", "str"
    return None


def _numeric_array(values: np.ndarray) -> pa.Array:
    """Integers, floats (NaN as null, as pandas converts them) or booleans as an Arrow array."""
    n = len(values)
    if values.dtype.kind == "b":
        bits = pa.py_buffer(np.packbits(values, bitorder="little"))
        return pa.Array.from_buffers(pa.bool_(), n, [None, bits])
    data = np.ascontiguousarray(values)
    bitmap, nulls = None, 0
    if data.dtype.kind == "f":
        valid = ~np.isnan(data)
        nulls = n - int(np.count_nonzero(valid))
        if nulls:
            bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    kind = pa.from_numpy_dtype(data.dtype)
    return pa.Array.from_buffers(kind, n, [bitmap, pa.py_buffer(data)], null_count=nulls)


def _string_array(values: list[str]) -> pa.Array:
    """Strings as an Arrow ``large_string`` array (what pandas' ``str`` columns become)."""
    encoded = [v.encode() for v in values]
    offsets = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    buffers = [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))]
    return pa.Array.from_buffers(pa.large_string(), len(values), buffers, null_count=0)


def _arrow_table(columns: Columns) -> pa.Table | None:
    """``pa.Table.from_pandas(pd.DataFrame(columns), preserve_index=False)`` built without
    pandas: the same arrays and the same ``pandas`` schema metadata; None where that is not
    known to hold (:func:`_pandas_metadata_known`, :func:`_arrow_column`)."""
    version = _pandas_metadata_known()
    if version is None or not columns or not all(isinstance(k, str) for k in columns):
        return None
    fields, arrays, meta = [], [], []
    for name, values in columns.items():
        col = _arrow_column(values)
        if col is None:
            return None
        array, pandas_type, numpy_type = col
        fields.append(pa.field(name, array.type))
        arrays.append(array)
        meta.append(
            {
                "name": name,
                "field_name": name,
                "pandas_type": pandas_type,
                "numpy_type": numpy_type,
                "metadata": None,
            }
        )
    if len({len(a) for a in arrays}) > 1:
        return None  # pandas refuses columns of different lengths
    pandas_meta = {
        "index_columns": [],
        "column_indexes": [],
        "columns": meta,
        "attributes": {},
        "creator": {"library": "pyarrow", "version": pa.__version__},
        "pandas_version": version,
    }
    schema = pa.schema(fields, metadata={b"pandas": json.dumps(pandas_meta).encode("utf8")})
    return pa.Table.from_arrays(arrays, schema=schema)


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
