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
from fabricsim.config.loader import load_scenario
from fabricsim.config.models import Scenario
from fabricsim.errors import ConfigError
from fabricsim.metrics.outdir import MARKER, marker_text, output_kind, prepare_out_dir
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
        Record tables by file stem (``timeline_links``, ``port_stats``, ``uet_monitor``,
        ``flow_paths`` ...); given as :data:`Columns`, made DataFrames when first read.
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
        tables: dict[str, pd.DataFrame | Columns] | None = None,
        json_records: dict[str, Any] | None = None,
    ) -> None:
        self.scenario = scenario
        self.summary = summary
        self._flows = flows
        self.timing = {} if timing is None else timing
        self._tables: dict[str, pd.DataFrame | Columns] = {} if tables is None else tables
        self.json_records = {} if json_records is None else json_records

    @property
    def flows(self) -> pd.DataFrame:
        if isinstance(self._flows, dict):
            self._flows = pd.DataFrame(self._flows)
        return self._flows

    @flows.setter
    def flows(self, df: pd.DataFrame) -> None:
        self._flows = df

    @property
    def tables(self) -> dict[str, pd.DataFrame]:
        for name, table in self._tables.items():  # perf: as flows, DataFrames when first read
            if isinstance(table, dict):
                self._tables[name] = pd.DataFrame(table)
        return self._tables  # type: ignore[return-value]

    @tables.setter
    def tables(self, tables: dict[str, pd.DataFrame]) -> None:
        self._tables = tables  # type: ignore[assignment]

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

    def save(self, out_dir: str | Path, table_format: str = "parquet") -> Path:
        """Write the output directory, replacing a previous fabricsim output whole.

        ``table_format`` is ``parquet`` (default) or ``csv`` (every table as CSV, floats
        written so they read back exactly: for people without Parquet tools);
        :func:`load_run` reads either.

        The files are written into a temporary sibling directory that is then swapped in
        (:mod:`fabricsim.metrics.outdir`): no file of an earlier output survives, and an
        exception or Ctrl-C leaves the earlier output as it was.  A path that cannot be an
        output directory (a file, a non-empty directory that is not a fabricsim output, a
        sweep directory, ...) raises :class:`~fabricsim.errors.ConfigError`.
        """
        check_table_format(table_format)
        with prepare_out_dir(out_dir, "run").staging() as tmp:
            self.write_files(tmp, table_format)
        return Path(out_dir)

    def write_files(self, directory: str | Path, table_format: str = "parquet") -> None:
        """Write this run's files into the existing ``directory`` (with the output marker)."""
        d = Path(directory)
        for name, data in self.to_files(table_format).items():
            (d / name).write_bytes(data)

    def to_files(self, table_format: str = "parquet") -> dict[str, bytes]:
        """The output directory's files as bytes, by name (what :meth:`save` writes)."""
        check_table_format(table_format)
        files = {
            "summary.json": dumps_json(self.summary).encode(),
            "timing.json": dumps_json(self.timing).encode(),
            "config.yaml": yaml.safe_dump(self.scenario.to_dict(), sort_keys=False).encode(),
        }
        if table_format == "csv":
            files["flows.csv"] = csv_bytes(self.flows)
        elif isinstance(self._flows, dict):
            files["flows.parquet"] = columns_parquet_bytes(self._flows)
        else:
            files["flows.parquet"] = parquet_bytes(self._flows)
        for name, table in self._tables.items():
            if table_format == "csv":
                files[f"{name}.csv"] = csv_bytes(pd.DataFrame(table))
            elif isinstance(table, dict):
                files[f"{name}.parquet"] = columns_parquet_bytes(table)
            else:
                files[f"{name}.parquet"] = parquet_bytes(table)
        for name, data in self.json_records.items():
            files[f"{name}.json"] = dumps_json(data).encode()
        files[MARKER] = marker_text("run").encode()
        return files


TABLE_FORMATS = ("parquet", "csv")
"""How :meth:`Result.save` writes tables (``--format``)."""


def check_table_format(table_format: str) -> None:
    """Raise :class:`ConfigError` unless ``table_format`` is one of :data:`TABLE_FORMATS`."""
    if table_format not in TABLE_FORMATS:
        raise ConfigError(
            f"--format: must be one of {', '.join(TABLE_FORMATS)} (got {table_format!r})"
        )


def csv_bytes(df: pd.DataFrame) -> bytes:
    """A table as CSV: header, no index, ``\\n`` line ends, nulls empty, floats as Python's
    shortest repr (they read back exactly, :func:`read_csv_table`)."""
    return df.to_csv(index=False, lineterminator="\n").encode()


def read_csv_table(path: Path) -> pd.DataFrame:
    """A table :func:`csv_bytes` wrote (floats exact; an empty text cell is ``""``, not NaN)."""
    df = pd.read_csv(path, keep_default_na=False, na_values=[""])
    for col in df.columns:
        if not pd.api.types.is_numeric_dtype(df[col]) and not pd.api.types.is_bool_dtype(df[col]):
            df[col] = df[col].fillna("")  # text columns: an empty cell was an empty string
    return df


def load_run(run_dir: str | os.PathLike[str]) -> Result:
    """A saved run (``fabricsim run --out DIR``, :meth:`Result.save`) as the :class:`Result`
    :func:`fabricsim.run` returned: ``scenario``, ``summary``, ``flows``, ``timing``,
    ``tables`` (DataFrames) and ``json_records``; Parquet or CSV tables (``--format csv``).

    Raises
    ------
    ConfigError
        One line naming the directory when it is not a run's output (missing, a sweep, a
        comparison, a study, a foreign directory) or a file in it is unreadable.

    Examples
    --------
    >>> import tempfile, fabricsim
    >>> res = fabricsim.run(fabricsim.load_scenario("ecmp-collision"), engine="flow")
    >>> d = res.save(tempfile.mkdtemp() + "/run", table_format="csv")
    >>> back = load_run(d)
    >>> back.summary == res.summary, back.flows.equals(res.flows)
    (True, True)
    """
    d = Path(run_dir)
    kind = output_kind(d) if d.is_dir() else None
    if kind != "run":
        raise ConfigError(f"{d}: {_not_a_run(d, kind)}")
    summary = _read_json(d / "summary.json")
    timing = _read_json(d / "timing.json") if (d / "timing.json").is_file() else {}
    scenario = _read_scenario(d / "config.yaml")
    tables: dict[str, pd.DataFrame | Columns] = {}
    json_records: dict[str, Any] = {}
    for path in sorted(d.iterdir()):
        if path.suffix in (".parquet", ".csv") and path.is_file():
            tables[path.stem] = _read_table(path)
        elif path.suffix == ".json" and path.name not in ("summary.json", "timing.json"):
            json_records[path.stem] = _read_json(path)
    flows = tables.pop("flows", None)
    if flows is None:
        raise ConfigError(f"{d}: no flows.parquet or flows.csv (every run writes one)")
    return Result(scenario, summary, flows, timing, tables, json_records)


def _not_a_run(d: Path, kind: str | None) -> str:
    if not d.exists():
        return "no such directory"
    if not d.is_dir():
        return "not a directory; name a run's output directory"
    where = {
        "sweep": "a fabricsim sweep, not one run; load a point (DIR/points/<id>) or read "
        "DIR/sweep.parquet",
        "compare": "a fabricsim comparison, not one run; load a run (DIR/<method>/seed-<N>) "
        "or read DIR/compare.csv",
        "study": "a fabricsim study, not one run; load one of its run directories or read "
        "DIR/study.csv",
    }
    return where.get(
        str(kind),
        "not a fabricsim run output (no .fabricsim marker, or summary.json and config.yaml); "
        "name a directory written by `fabricsim run --out` or Result.save",
    )


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"{path}: unreadable or not JSON ({_why(exc)})") from None


def _read_scenario(path: Path) -> Scenario:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: unreadable or not YAML ({_why(exc)})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: must hold the run's scenario (a YAML mapping)")
    try:
        return load_scenario(data)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {_why(exc)}") from None


def _read_table(path: Path) -> pd.DataFrame:
    try:
        return read_csv_table(path) if path.suffix == ".csv" else pd.read_parquet(path)
    except Exception as exc:  # noqa: BLE001 - pyarrow and pandas raise many kinds for a bad file
        raise ConfigError(f"{path}: not a readable table ({_why(exc)})") from None


def _why(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return (lines[0] if lines else type(exc).__name__)[:200]


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
