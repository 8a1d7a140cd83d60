"""User traffic from a file: CSV/Parquet message tables, or htsim connection matrices (.cm)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from fabricsim.config.models import Scenario
from fabricsim.config.workloads import TraceWorkload
from fabricsim.errors import ConfigError
from fabricsim.topology.fabric import Fabric
from fabricsim.workloads.base import FlowTable, register

REQUIRED = ("src", "dst", "size_bytes", "start_s")
_CM_LINE = re.compile(
    r"^\s*(\d+)\s*->\s*(\d+)(?:\s+id\s+(\d+))?(?:\s+start\s+([0-9.eE+-]+))?\s+size\s+(\d+)"
)


def read_message_table(path: str | Path) -> pd.DataFrame:
    """Read and check a CSV/Parquet/.cm message table; columns src, dst, size_bytes, start_s, id."""
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"workload.path: file not found: {p}")
    if p.suffix.lower() == ".cm":
        return read_htsim_cm(p)
    try:
        df = pd.read_parquet(p) if p.suffix.lower() in (".parquet", ".pq") else pd.read_csv(p)
    except Exception as exc:  # noqa: BLE001 - any reader failure is bad user input
        raise ConfigError(f"workload.path: cannot read {p}: {str(exc).splitlines()[0]}") from None
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise ConfigError(
            f"workload.path: {p.name} lacks column(s) {', '.join(missing)} "
            f"(needs {', '.join(REQUIRED)}, optional id)"
        )
    if len(df) == 0:
        raise ConfigError(f"workload.path: {p.name} has no messages")
    return _check_table(df, p.name)


def _host_index(col: pd.Series, name: str, fname: str) -> np.ndarray:
    if not pd.api.types.is_numeric_dtype(col):
        text = col.astype(str).str.replace("host", "", regex=False)
        if not text.str.fullmatch(r"\d+").all():
            bad = col[~text.str.fullmatch(r"\d+")].iloc[0]
            raise ConfigError(f"workload.path: {fname}: {name} '{bad}' is not a host (hostN or N)")
        return text.astype(np.int64).to_numpy()
    return _numeric(col, name, fname, integer=True).astype(np.int64)


def _numeric(col: pd.Series, name: str, fname: str, integer: bool = False) -> np.ndarray:
    vals = pd.to_numeric(col, errors="coerce")
    if vals.isna().any():
        row = int(np.flatnonzero(vals.isna().to_numpy())[0])
        raise ConfigError(
            f"workload.path: {fname}: row {row}: {name} {str(col.iloc[row])!r} is not a number"
        )
    arr = vals.to_numpy(dtype=np.float64)
    if integer and np.any(arr != np.round(arr)):
        raise ConfigError(f"workload.path: {fname}: {name} must be integers")
    return arr


def _check_table(df: pd.DataFrame, fname: str) -> pd.DataFrame:
    out = pd.DataFrame(
        {
            "src": _host_index(df["src"], "src", fname),
            "dst": _host_index(df["dst"], "dst", fname),
            "size_bytes": _numeric(df["size_bytes"], "size_bytes", fname, True).astype(np.int64),
            "start_s": _numeric(df["start_s"], "start_s", fname),
        }
    )
    out["id"] = (
        _numeric(df["id"], "id", fname, True).astype(np.int64) if "id" in df else np.arange(len(df))
    )
    if (out["size_bytes"] <= 0).any():
        raise ConfigError(f"workload.path: {fname}: size_bytes must be >= 1")
    if (out["start_s"] < 0).any():
        raise ConfigError(f"workload.path: {fname}: start_s must be >= 0")
    if out["id"].duplicated().any():
        raise ConfigError(f"workload.path: {fname}: id values must be unique")
    return out.sort_values(["start_s", "id"], kind="stable").reset_index(drop=True)


def read_htsim_cm(path: Path) -> pd.DataFrame:
    """Read an htsim connection matrix: ``Nodes N``, ``Connections C``, then ``a->b ... size S``.

    Start times are microseconds in the file; trigger-based flows and failure lines are refused.
    """
    rows: list[tuple[int, int, int, float, int]] = []
    declared: int | None = None
    for lineno, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        head = line.split()[0].lower()
        if head in ("nodes", "triggers", "failures"):
            if head == "failures" and len(line.split()) > 1 and line.split()[1] != "0":
                raise ConfigError(
                    f"workload.path: {path.name}:{lineno}: failure lines are not supported"
                )
            continue
        if head == "connections":
            declared = int(line.split()[1])
            continue
        if "trigger" in line or line.lower().startswith("failure"):
            raise ConfigError(
                f"workload.path: {path.name}:{lineno}: trigger/failure lines are not supported"
            )
        m = _CM_LINE.match(line)
        if not m:
            raise ConfigError(f"workload.path: {path.name}:{lineno}: cannot parse {line!r}")
        src, dst, fid, start, size = m.groups()
        rows.append(
            (
                int(src),
                int(dst),
                int(size),
                float(start or 0) * 1e-6,
                int(fid) if fid else len(rows),
            )
        )
    if not rows:
        raise ConfigError(f"workload.path: {path.name} has no connections")
    if declared is not None and declared != len(rows):
        raise ConfigError(
            f"workload.path: {path.name} declares {declared} connections, has {len(rows)}"
        )
    df = pd.DataFrame(rows, columns=["src", "dst", "size_bytes", "start_s", "id"])
    return _check_table(df, path.name)


def write_htsim_cm(df: pd.DataFrame, path: str | Path, nodes: int) -> None:
    """Write messages (src, dst, size_bytes, start_s, id) as an htsim connection matrix."""
    lines = [f"Nodes {nodes}", f"Connections {len(df)}"]
    cols = zip(df["src"], df["dst"], df["id"], df["start_s"], df["size_bytes"], strict=True)
    for src, dst, fid, start_s, size in cols:
        lines.append(
            f"{int(src)}->{int(dst)} id {int(fid)} start {float(start_s) * 1e6:.6g} size {int(size)}"
        )
    Path(path).write_text("\n".join(lines) + "\n")


@register("trace")
def trace(sc: Scenario, fabric: Fabric) -> FlowTable:
    wl = sc.workload
    assert isinstance(wl, TraceWorkload)
    df = read_message_table(wl.path)
    table = FlowTable.build(sc, df["src"], df["dst"], df["size_bytes"], df["start_s"])
    table.extra["trace_id"] = df["id"].to_numpy()
    table.check_hosts(fabric, "workload.path")
    return table


def messages_frame(table: FlowTable) -> pd.DataFrame:
    """A flow table as the message table of this module (host indices, start in seconds)."""
    ids = table.extra.get("trace_id", np.arange(len(table)))
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
    from fabricsim.runner import fabric_of
    from fabricsim.workloads.base import generate

    fabric = fabric_of(sc)
    table = generate(sc, fabric)
    if table.depends_on is not None and any(table.depends_on):
        raise ConfigError(
            f"workload.kind={sc.workload.kind}: messages depend on each other; a flat trace "
            "cannot express that (htsim triggers are not exported)"
        )
    df = messages_frame(table)
    if fmt == "htsim":
        write_htsim_cm(df, path, fabric.num_hosts)
    else:
        df.to_csv(path, index=False)
    return len(df)
