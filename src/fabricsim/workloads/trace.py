"""User traffic from a file: CSV/Parquet message tables, or htsim connection matrices (.cm).

Every value is checked where it enters, and a bad one is refused with one line naming the file
and the line (CSV, ``.cm``) or row (Parquet) and the column:

* ``src``/``dst``: a host, ``hostN`` or ``N``; the two must differ;
* ``size_bytes``: a whole number of bytes, ``1 .. MAX_MESSAGE_BYTES`` (a float that is exactly
  whole, such as ``100.0`` or ``1e6``, is accepted in CSV/Parquet; ``1.5`` is refused);
* ``start_s``: finite, ``0 .. MAX_TIME_S`` seconds (``.cm`` files give it in microseconds);
* ``id`` (optional): unique whole numbers;
* all messages together: at most ``MAX_TOTAL_BYTES``.

Files must be UTF-8.  An htsim ``.cm`` line is ``A->B [id N] [start T] size S`` after the
``Nodes``/``Connections`` header; anything else (triggers, failures, priorities, trailing
words) is refused, never skipped.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fabricsim._compat import pd, pq
from fabricsim.config.models import Scenario
from fabricsim.config.presets import CM_MAX_NODES
from fabricsim.config.workloads import TraceWorkload
from fabricsim.errors import ConfigError
from fabricsim.topology.builders import fabric_for
from fabricsim.topology.fabric import Fabric
from fabricsim.units import MAX_MESSAGE_BYTES, MAX_TIME_S, PS_PER_S, PS_PER_US, S_PER_US
from fabricsim.workloads.base import (
    FabricCounts,
    FlowTable,
    WorkloadLoad,
    check_total_bytes,
    generate,
    power_of_two,
    read_text,
    register,
)
from fabricsim.workloads.trace_failures import failure_notes

REQUIRED = ("src", "dst", "size_bytes", "start_s")
FIELD = "workload.path"
_NAN_WORDS = {"nan", "+nan", "-nan"}
_INT64_LIMIT = 2.0**63  # ids and host numbers must fit int64 (a representation limit)


@dataclass
class _Source:
    """Where the table came from, to name a cell in messages (``t.csv: line 3: size_bytes``)."""

    fname: str
    unit: str  # "line" or "row"
    numbers: np.ndarray  # the line/row number of each table row
    names: dict[str, str] = field(default_factory=dict)  # column -> its name in the file
    start_scale: float = 1.0  # the file's unit of start times, in seconds
    start_unit: str = "s"

    def at(self, i: int, column: str) -> str:
        name = self.names.get(column, column)
        return f"{FIELD}: {self.fname}: {self.unit} {int(self.numbers[i])}: {name}"


def read_message_table(
    path: str | Path, hosts: int | None = None, rails: int | None = None
) -> pd.DataFrame:
    """Read and check a CSV/Parquet/.cm message table; columns src, dst, size_bytes, start_s, id.

    With ``hosts``, every ``src``/``dst`` must also be one of the fabric's hosts ``0..hosts-1``;
    with ``rails`` (a rail-optimized fabric) a cell may also name a GPU as ``server:rail``.
    """
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"{FIELD}: file not found: {p}")
    if not p.is_file():
        raise ConfigError(f"{FIELD}: {p.name} is not a regular file")
    if p.suffix.lower() == ".cm":
        return read_htsim_cm(p, hosts)
    if p.suffix.lower() in (".parquet", ".pq"):
        df, src = _read_parquet(p)
    else:
        df, src = _read_csv(p)
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise ConfigError(
            f"{FIELD}: {p.name} lacks column(s) {', '.join(missing)} "
            f"(needs {', '.join(REQUIRED)}, optional id)"
        )
    if len(df) == 0:
        raise ConfigError(f"{FIELD}: {p.name} has no messages")
    return _check_table(df, src, hosts, rails)


def message_columns(
    path: str | Path, hosts: int | None = None, rails: int | None = None
) -> dict[str, np.ndarray]:
    """:func:`read_message_table` as numpy columns (an htsim .cm file as :func:`htsim_cm_columns`)."""
    p = Path(path)
    if p.suffix.lower() == ".cm" and p.is_file():
        return htsim_cm_columns(p, hosts)
    df = read_message_table(p, hosts, rails)
    return {c: df[c].to_numpy() for c in df.columns}


def _read_csv(p: Path) -> tuple[pd.DataFrame, _Source]:
    """Every cell as stripped text; blank lines dropped; line numbers kept for messages."""
    text = read_text(p, FIELD)
    try:
        raw = pd.read_csv(
            io.StringIO(text), header=None, dtype=str, keep_default_na=False, skip_blank_lines=False
        )
    except pd.errors.EmptyDataError:
        raise ConfigError(f"{FIELD}: {p.name} is empty (needs a header line)") from None
    except (pd.errors.ParserError, ValueError) as exc:
        raise ConfigError(f"{FIELD}: {p.name} is not a valid CSV table: {_first(exc)}") from None
    raw = raw.apply(lambda col: col.str.strip())
    header = [str(c) for c in raw.iloc[0]]
    dup = [c for c in REQUIRED + ("id",) if header.count(c) > 1]
    if dup:
        raise ConfigError(f"{FIELD}: {p.name}: column {dup[0]} appears twice in the header")
    body = raw.iloc[1:]
    body.columns = header
    body = body[(body != "").any(axis=1)]
    return body, _Source(p.name, "line", body.index.to_numpy() + 1)


def _read_parquet(p: Path) -> tuple[pd.DataFrame, _Source]:
    try:
        df = pd.read_parquet(p)
    except Exception as exc:  # noqa: BLE001 - any reader failure is bad user input
        raise ConfigError(
            f"{FIELD}: {p.name} is not a readable Parquet file: {_first(exc)}"
        ) from None
    df = df.reset_index(drop=True)
    df.columns = [str(c) for c in df.columns]
    return df, _Source(p.name, "row", np.arange(1, len(df) + 1))


def _first(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# -- columns ----------------------------------------------------------------------------------
def _numbers(col: pd.Series, name: str, src: _Source, what: str = "a number") -> np.ndarray:
    """The column as finite numbers (int64 or float64); text cells must parse."""
    if pd.api.types.is_bool_dtype(col):
        raise ConfigError(f"{FIELD}: {src.fname}: column {name} holds true/false, not numbers")
    if pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_complex_dtype(col):
        if col.dtype.kind == "i" and not col.isna().any():
            vals = col.to_numpy(dtype=np.int64)
        else:
            vals = col.to_numpy(dtype=np.float64, na_value=np.nan)
    elif pd.api.types.is_string_dtype(col) or col.dtype == object:
        vals = _parse_text(col.astype(str).str.strip(), name, src, what)
    else:
        raise ConfigError(
            f"{FIELD}: {src.fname}: column {name} has type {col.dtype}; it must hold numbers"
        )
    if vals.dtype.kind == "f":
        for bad, problem in (
            (np.isnan(vals), "is not a number"),
            (np.isinf(vals), "is not finite"),
        ):
            if bad.any():
                i = int(np.argmax(bad))
                raise ConfigError(f"{src.at(i, name)} {_cell(col, i)} {problem}")
    return vals


def _parse_text(text: pd.Series, name: str, src: _Source, what: str) -> np.ndarray:
    """Numbers from text cells; a cell that is neither a number nor ``nan`` is refused."""
    vals = pd.to_numeric(text, errors="coerce").to_numpy()
    if vals.dtype.kind == "i":
        return vals
    vals = vals.astype(np.float64)
    bad = np.isnan(vals) & ~text.str.lower().isin(_NAN_WORDS).to_numpy(dtype=bool)
    if bad.any():
        i = int(np.argmax(bad))
        if text.iloc[i] == "":
            raise ConfigError(f"{src.at(i, name)} is empty")
        raise ConfigError(f"{src.at(i, name)} {_clip(text.iloc[i])!r} is not {what}")
    return vals


def _cell(col: pd.Series, i: int) -> str:
    return _clip(str(col.iloc[i]).strip())


def _clip(text: str, limit: int = 40) -> str:
    """Text short enough to quote in a one-line message."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _refuse_first(bad: np.ndarray, col: pd.Series, name: str, src: _Source, problem: str) -> None:
    if bad.any():
        i = int(np.argmax(bad))
        raise ConfigError(f"{src.at(i, name)} {_cell(col, i)} {problem}")


def _whole(
    vals: np.ndarray,
    col: pd.Series,
    name: str,
    src: _Source,
    problem: str = "is not a whole number",
) -> np.ndarray:
    """int64 of numbers already checked to be in int64 range; floats that are not whole refused."""
    if vals.dtype.kind == "f":
        _refuse_first(vals != np.floor(vals), col, name, src, problem)
    return vals.astype(np.int64)


def _host_column(
    col: pd.Series, name: str, src: _Source, hosts: int | None, rails: int | None = None
) -> np.ndarray:
    """Host numbers from ``hostN`` or ``N`` cells (and ``server:rail`` with ``rails``)."""
    allowed = f"hosts are 0..{hosts - 1}" if hosts else "hosts are hostN or N, N >= 0"
    if rails:
        allowed += f", or server:rail with rails 0..{rails - 1}"
    numbers = col
    if not pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col):
        text = col.astype(str).str.strip()
        named = text.str.fullmatch(r"host\d+").to_numpy(dtype=bool)
        numbers = text.where(~named, text.str.slice(4))
        pair = text.str.fullmatch(r"\d+:\d+").to_numpy(dtype=bool)
        if pair.any():
            if not rails:
                _refuse_first(
                    pair, col, name, src, "is server:rail, which needs a rail_optimized fabric"
                )
            parts = text[pair].str.split(":", expand=True).astype(np.int64)
            server, rail = parts[0].to_numpy(), parts[1].to_numpy()
            bad = np.zeros(len(col), dtype=bool)
            bad[np.flatnonzero(pair)] = rail >= (rails or 1)
            _refuse_first(bad, col, name, src, f"is not a GPU ({allowed})")
            numbers = numbers.copy()
            numbers[pair] = (server * (rails or 1) + rail).astype(str)
    vals = _numbers(numbers, name, src, f"a host ({allowed})")
    f = vals.astype(np.float64)
    _refuse_first((f < 0) | (f >= _INT64_LIMIT), col, name, src, f"is not a host ({allowed})")
    ints = _whole(vals, col, name, src, f"is not a host ({allowed})")
    if hosts is not None:
        _refuse_first(ints >= hosts, col, name, src, f"is outside the fabric ({allowed})")
    return ints


def _size_column(col: pd.Series, src: _Source) -> np.ndarray:
    name = "size_bytes"
    vals = _numbers(col, name, src)
    f = vals.astype(np.float64)
    _refuse_first(f < 1, col, name, src, "is less than 1 byte (sizes are whole bytes, at least 1)")
    limit = power_of_two(MAX_MESSAGE_BYTES)
    _refuse_first(
        f > MAX_MESSAGE_BYTES, col, name, src, f"is more than {limit} bytes, the largest message"
    )
    problem = "is not a whole number of bytes (exactly whole values such as 100.0 are accepted)"
    return _whole(vals, col, name, src, problem)


def _start_column(col: pd.Series, src: _Source) -> np.ndarray:
    name = "start_s"
    limit = f"{MAX_TIME_S / src.start_scale:g} {src.start_unit}"
    if src.start_scale != 1.0:
        limit += f" ({MAX_TIME_S:g} s)"
    vals = _numbers(col, name, src).astype(np.float64)
    _refuse_first(vals < 0, col, name, src, f"is negative (start times are 0..{limit})")
    seconds = vals * src.start_scale
    late = seconds > MAX_TIME_S
    _refuse_first(late, col, name, src, f"is later than {limit}, the longest simulated time")
    return seconds


def _id_column(col: pd.Series, src: _Source) -> np.ndarray:
    vals = _numbers(col, "id", src)
    f = vals.astype(np.float64)
    too_big = (f < -_INT64_LIMIT) | (f >= _INT64_LIMIT)
    _refuse_first(too_big, col, "id", src, "does not fit a 64-bit integer")
    ids = _whole(vals, col, "id", src)
    dup = pd.Series(ids).duplicated().to_numpy()
    _refuse_first(dup, col, "id", src, "is used twice (id values must be unique)")
    return ids


def _check_table(
    df: pd.DataFrame, src: _Source, hosts: int | None = None, rails: int | None = None
) -> pd.DataFrame:
    """Checked columns, sorted by (start_s, id)."""
    out = pd.DataFrame(
        {
            "src": _host_column(df["src"], "src", src, hosts, rails),
            "dst": _host_column(df["dst"], "dst", src, hosts, rails),
            "size_bytes": _size_column(df["size_bytes"], src),
            "start_s": _start_column(df["start_s"], src),
        }
    )
    out["id"] = _id_column(df["id"], src) if "id" in df else np.arange(len(df))
    same = (out["src"] == out["dst"]).to_numpy()
    if same.any():
        i = int(np.argmax(same))
        raise ConfigError(
            f"{FIELD}: {src.fname}: {src.unit} {int(src.numbers[i])}: src and dst are the same "
            f"host ({int(out['src'].iloc[i])}); a message must go to another host"
        )
    check_total_bytes(out["size_bytes"].to_numpy(), f"{FIELD}: {src.fname}", "messages")
    return out.sort_values(["start_s", "id"], kind="stable").reset_index(drop=True)


# -- htsim connection matrices ----------------------------------------------------------------
_CM_PAIR = re.compile(r"^([0-9]{1,18})\s*->\s*([0-9]{1,18})(?:\s+(.*))?$")
_CM_KEYS = {"id": "id", "start": "start_s", "size": "size_bytes"}
_CM_UNSUPPORTED = {
    "trigger": "trigger/failure lines are not supported (triggered flows)",
    "send_done_trigger": "trigger/failure lines are not supported (triggered flows)",
    "recv_done_trigger": "trigger/failure lines are not supported (triggered flows)",
    "addon": "trigger/failure lines are not supported (triggered flows)",
    "prio": "priorities (prio) are not modelled; remove them",
}
_CM_HEADERS = ("nodes", "connections", "triggers", "failures")
_PLAIN_INT = re.compile(r"[0-9]{1,15}")
_PLAIN_START = re.compile(r"[0-9]{1,15}(?:\.[0-9]{1,15})?")
_CM_SHAPE = "a connection is 'A->B [id N] [start T] size S', T in microseconds"


@dataclass
class _CmFile:
    """What a .cm file says, as text cells (checked by :func:`_check_table`)."""

    name: str
    header: dict[str, int] = field(default_factory=dict)
    rows: list[dict[str, str]] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)

    def fail(self, lineno: int, problem: str) -> ConfigError:
        return ConfigError(f"{FIELD}: {self.name}: line {lineno}: {problem}")


def read_htsim_cm(path: Path, hosts: int | None = None) -> pd.DataFrame:
    """Read an htsim connection matrix: ``Nodes N``, ``Connections C``, then ``a->b ... size S``.

    Start times are microseconds in the file; trigger-based flows, failure lines, priorities
    and any word the format does not define are refused.
    """
    return pd.DataFrame(htsim_cm_columns(path, hosts))


def htsim_cm_columns(path: str | Path, hosts: int | None = None) -> dict[str, np.ndarray]:
    """:func:`read_htsim_cm` as numpy columns (read without pandas when its cells are plain)."""
    path = Path(path)
    cm = _CmFile(path.name)
    for lineno, raw in enumerate(read_text(path, FIELD).splitlines(), 1):
        line = raw.strip()
        if line and not line.startswith("#"):
            _cm_line(cm, lineno, line)
    if not cm.rows:
        raise ConfigError(f"{FIELD}: {path.name} has no connections")
    nodes = cm.header.get("nodes")
    if hosts is not None and nodes is not None and nodes > hosts:
        raise ConfigError(
            f"{FIELD}: {path.name}: 'Nodes {nodes}' is more than the fabric's {hosts} hosts "
            f"(node ids 0..{hosts - 1}); size the topology to the matrix or fix the header"
        )
    declared = cm.header.get("connections")
    if declared is not None and declared != len(cm.rows):
        raise ConfigError(
            f"{FIELD}: {path.name} declares {declared} connections, has {len(cm.rows)}"
        )
    plain = _plain_cm_columns(cm, hosts)
    if plain is not None:
        return plain
    df = pd.DataFrame(cm.rows, columns=["src", "dst", "size_bytes", "start_s", "id"])
    src = _Source(
        path.name,
        "line",
        np.asarray(cm.lines),
        names={"size_bytes": "size", "start_s": "start"},
        start_scale=S_PER_US,
        start_unit="us",
    )
    out = _check_table(df, src, hosts)
    return {c: out[c].to_numpy() for c in out.columns}


def _plain_cm_columns(cm: _CmFile, hosts: int | None) -> dict[str, np.ndarray] | None:
    """The checked columns of a .cm file whose cells are all plain and valid, else None.

    perf: without pandas (0.3-0.5 s to import); :func:`_check_table` gives the same columns,
    and names the bad cell of any other file.  Plain: whole numbers of at most 15 digits, starts
    of at most 15 digits with an optional fraction.  Both parse exactly (an integer below 2**53
    divided by an exact power of ten, rounded once), and unique ids make the (start_s, id)
    order total.
    """
    cells = {k: [row[k] for row in cm.rows] for k in ("src", "dst", "size_bytes", "id")}
    starts = [row["start_s"] for row in cm.rows]
    if not all(_PLAIN_INT.fullmatch(x) for col in cells.values() for x in col) or not all(
        _PLAIN_START.fullmatch(x) and len(x) - ("." in x) <= 15 for x in starts
    ):
        return None
    src, dst, size, ids = (
        np.array([int(x) for x in col], dtype=np.int64) for col in cells.values()
    )
    start_s = np.array([float(x) for x in starts], dtype=np.float64) * S_PER_US
    bad = (src == dst) | (size < 1) | (size > MAX_MESSAGE_BYTES) | (start_s > MAX_TIME_S)
    if hosts is not None:
        bad |= (src >= hosts) | (dst >= hosts)
    # perf: a repeated id found on the sorted ids (np.unique imports numpy.ma, 5-7 ms)
    if bad.any() or (np.diff(np.sort(ids)) == 0).any():
        return None
    check_total_bytes(size, f"{FIELD}: {cm.name}", "messages")
    order = np.lexsort((ids, start_s))
    columns = {"src": src, "dst": dst, "size_bytes": size, "start_s": start_s, "id": ids}
    return {k: v[order] for k, v in columns.items()}


def _cm_line(cm: _CmFile, lineno: int, line: str) -> None:
    words = line.split()
    head = words[0].lower()
    if head in _CM_HEADERS:
        _cm_header(cm, lineno, words)
    elif head in ("trigger", "failure"):
        raise cm.fail(lineno, "trigger/failure lines are not supported")
    elif m := _CM_PAIR.match(line):
        _cm_connection(cm, lineno, m)
    else:
        raise cm.fail(lineno, f"cannot parse {_clip(line)!r} ({_CM_SHAPE})")


def _cm_header(cm: _CmFile, lineno: int, words: list[str]) -> None:
    key, shown = words[0].lower(), words[0]
    if len(words) != 2 or not re.fullmatch(r"[0-9]{1,18}", words[1]):
        got = "nothing" if len(words) == 1 else repr(_clip(" ".join(words[1:])))
        raise cm.fail(
            lineno, f"'{shown}' needs one whole number >= 0 (e.g. '{shown} 16'), got {got}"
        )
    if key in cm.header:
        raise cm.fail(lineno, f"'{shown}' is given twice")
    if cm.rows:
        raise cm.fail(lineno, f"'{shown}' must come before the connections")
    value = int(words[1])
    if key in ("triggers", "failures") and value:
        raise cm.fail(lineno, "trigger/failure lines are not supported")
    if key == "nodes" and not 2 <= value <= CM_MAX_NODES:
        raise cm.fail(
            lineno, f"'{shown} {words[1]}' must be 2..{CM_MAX_NODES} (a connection joins 2 nodes)"
        )
    cm.header[key] = value


def _cm_connection(cm: _CmFile, lineno: int, m: re.Match[str]) -> None:
    row = {"src": m[1], "dst": m[2]}
    nodes = cm.header.get("nodes")
    for node in (int(m[1]), int(m[2])):
        if nodes is not None and node >= nodes:
            raise cm.fail(
                lineno, f"node {node} is outside 'Nodes {nodes}' (nodes are 0..{nodes - 1})"
            )
    words = (m[3] or "").split()
    if len(words) % 2:
        raise cm.fail(lineno, f"{_clip(words[-1])!r} needs a value ({_CM_SHAPE})")
    for key, value in zip(words[::2], words[1::2], strict=True):
        if key in _CM_UNSUPPORTED:
            raise cm.fail(lineno, _CM_UNSUPPORTED[key])
        if key not in _CM_KEYS:
            raise cm.fail(lineno, f"unknown word {_clip(key)!r} ({_CM_SHAPE})")
        if _CM_KEYS[key] in row:
            raise cm.fail(lineno, f"'{key}' is given twice")
        if key in ("id", "size") and not re.fullmatch(r"[+-]?[0-9]+", value):
            shown = _clip(value)
            raise cm.fail(lineno, f"{key} {shown!r} is not a whole number (write digits only)")
        row[_CM_KEYS[key]] = value
    if "size_bytes" not in row:
        raise cm.fail(lineno, f"the connection has no size ({_CM_SHAPE})")
    row.setdefault("start_s", "0")
    row.setdefault("id", str(len(cm.rows)))
    cm.rows.append(row)
    cm.lines.append(lineno)


def write_htsim_cm(df: pd.DataFrame, path: str | Path, nodes: int) -> None:
    """Write messages (src, dst, size_bytes, start_s, id) as an htsim connection matrix."""
    Path(path).write_text(htsim_cm_text(df, nodes))


def htsim_cm_text(df: pd.DataFrame, nodes: int) -> str:
    """Messages as the text of an htsim connection matrix.

    Start times are rounded once to integer picoseconds (the simulator's clock) and written
    as exact decimal microseconds: 50 us is ``start 50``, 1.5 ps is ``start 0.000002``.

    >>> import pandas as pd
    >>> df = pd.DataFrame({"src": [0], "dst": [1], "id": [1], "start_s": [50e-6], "size_bytes": [8]})
    >>> htsim_cm_text(df, 2).splitlines()[-1]
    '0->1 id 1 start 50 size 8'
    """
    lines = [f"Nodes {nodes}", f"Connections {len(df)}"]
    start_ps = start_ps_array(df["start_s"])
    cols = zip(df["src"], df["dst"], df["id"], start_ps, df["size_bytes"], strict=True)
    for src, dst, fid, ps, size in cols:
        lines.append(
            f"{int(src)}->{int(dst)} id {int(fid)} start {us_text(int(ps))} size {int(size)}"
        )
    return "\n".join(lines) + "\n"


def start_ps_array(start_s: pd.Series | np.ndarray) -> np.ndarray:
    """Start times in seconds as integer picoseconds (rounded to nearest, once)."""
    return np.rint(np.asarray(start_s, dtype=np.float64) * PS_PER_S).astype(np.int64)


def us_text(ps: int) -> str:
    """Integer picoseconds as exact decimal microseconds, no trailing zeros.

    >>> us_text(50_000_000), us_text(5_500_000), us_text(1), us_text(0)
    ('50', '5.5', '0.000001', '0')
    """
    whole, frac = divmod(int(ps), PS_PER_US)
    return f"{whole}.{frac:06d}".rstrip("0").rstrip(".") if frac else str(whole)


COUNTED_LINES_BYTES = 1 << 31
"""A text trace up to this size has its lines counted for the budget (about 1 s per GB);
a larger one is bounded by its size (at least 8 bytes a row)."""


def _trace_rows(path: str) -> int | None:
    """Rows of a trace file, at most: from its metadata (Parquet), its line count (text), or
    its size (None: unreadable, refused later)."""
    p = Path(path)
    try:
        if p.suffix.lower() in (".parquet", ".pq"):
            return int(pq.read_metadata(p).num_rows)
        if not p.is_file():
            return None
        size = p.stat().st_size
        if size > COUNTED_LINES_BYTES:
            return max(1, size // 8)
        lines = 0
        with p.open("rb") as f:
            while chunk := f.read(1 << 24):
                lines += chunk.count(b"\n")
        return max(1, lines + 1)  # a last line without a newline
    except Exception:  # noqa: BLE001 - unreadable: the workload reader refuses it in one line
        return None


def trace_load(wl: TraceWorkload, fab: FabricCounts) -> WorkloadLoad:
    """Budget terms: a row per message at most; bytes and starts unknown before reading."""
    rows = _trace_rows(wl.path)
    return WorkloadLoad(
        flows=rows or 0,
        pairs=rows or 0,
        bytes_total=None,
        busiest=None,
        notes=["workload.kind=trace: bytes and start times unknown before reading"],
        flows_key=("workload.path", wl.path),
        packets_key=("workload.path", wl.path),
    )


@register("trace", model=TraceWorkload, budget=trace_load)
def trace(sc: Scenario, fabric: Fabric) -> FlowTable:
    wl = sc.workload
    assert isinstance(wl, TraceWorkload)
    rails = sc.topology.rails if sc.topology.kind == "rail_optimized" else None
    cols = message_columns(wl.path, fabric.num_hosts, rails)
    table = FlowTable.build(sc, cols["src"], cols["dst"], cols["size_bytes"], cols["start_s"])
    table.extra["trace_id"] = cols["id"]
    table.check_hosts(fabric, "workload.path")
    return table


def messages_frame(table: FlowTable) -> pd.DataFrame:
    """A flow table as the message table of this module (host indices, start in seconds)."""
    # generated messages are numbered from 1: htsim reserves flow id 0
    ids = table.extra.get("trace_id", np.arange(1, len(table) + 1))
    return pd.DataFrame(
        {
            "src": table.src,
            "dst": table.dst,
            "size_bytes": table.size_bytes,
            "start_s": table.start_s,
            "id": ids,
        }
    )


def export_messages(sc: Scenario, fmt: str, path: str | Path) -> int:
    """Write a scenario's messages as CSV or an htsim ``.cm`` file; returns the count."""
    text, count, _ = messages_text(sc, fmt)
    Path(path).write_text(text)
    return count


def messages_text(sc: Scenario, fmt: str, name: str = "the trace") -> tuple[str, int, list[str]]:
    """A scenario's messages as CSV or htsim ``.cm`` text, how many there are, and notes for
    the user, one line each: htsim reads whole microseconds (fractional starts move), and
    the file carries none of the scenario's link failures (:mod:`.trace_failures`)."""
    fabric = fabric_for(sc.topology)
    table = generate(sc, fabric)
    if table.depends_on is not None and any(table.depends_on):
        raise ConfigError(
            f"workload.kind={sc.workload.kind}: messages depend on each other; a flat trace "
            "cannot express that (htsim triggers are not exported)"
        )
    df = messages_frame(table)
    notes = failure_notes(sc, fmt, name)
    if fmt != "htsim":
        return df.to_csv(index=False), len(df), notes
    moved = int(np.count_nonzero(start_ps_array(df["start_s"]) % PS_PER_US))
    if moved:
        notes.insert(
            0,
            f"note: htsim_uec reads start times as whole microseconds (it truncates them): "
            f"{moved} of {len(df)} messages start up to 1 us earlier there than here",
        )
    return htsim_cm_text(df, fabric.num_hosts), len(df), notes
