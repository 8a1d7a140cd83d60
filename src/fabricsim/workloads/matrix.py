"""Demand matrices from files: validation, CSV and ``.npy`` reading (MoE ``file`` and ``chakra``).

Shared by :mod:`.moe` and :mod:`.chakra`, so neither imports the other for it.
"""

from __future__ import annotations

import io
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from fabricsim.errors import ConfigError
from fabricsim.units import MAX_MESSAGE_BYTES
from fabricsim.workloads.base import power_of_two, read_text


def check_matrix(matrix: Any, where: str = "workload.path") -> np.ndarray:
    """Validate a demand matrix: 2-D, square, finite, in ``0..MAX_MESSAGE_BYTES``, not all zero.

    Raises
    ------
    ConfigError
        One line naming ``where`` and what is wrong.
    """
    try:
        m = np.asarray(matrix, dtype=np.float64)
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: the matrix is not numeric") from None
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise ConfigError(f"{where}: the matrix must be square N x N (got shape {m.shape})")
    if m.shape[0] < 2:
        raise ConfigError(f"{where}: the matrix needs at least 2 GPUs (got {m.shape[0]})")
    checks = (
        (np.isnan(m), "is not a number; entries must be finite numbers"),
        (np.isinf(m), "is not finite; entries must be finite numbers"),
        (m < 0, "is negative; demands are >= 0"),
        (m > MAX_MESSAGE_BYTES, f"is more than {power_of_two(MAX_MESSAGE_BYTES)} bytes, the limit"),
    )
    for bad, problem in checks:
        if bad.any():
            i, j = (int(x) for x in np.argwhere(bad)[0])
            raise ConfigError(
                f"{where}: entry ({i}, {j}) (GPU {i} -> GPU {j}) = {m[i, j]:.6g} {problem}"
            )
    if not m.any():
        raise ConfigError(f"{where}: the matrix is all zeros (no traffic)")
    return m


def load_matrix(path: str | Path) -> np.ndarray:
    """Read a demand matrix from a CSV (comma-separated numbers, no header, UTF-8) or ``.npy``
    file; a bad CSV cell is reported by line and column, counted from 1."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"workload.path: file not found: {p}")
    if p.suffix.lower() == ".npy":
        try:
            data = np.load(p, allow_pickle=False)
        except Exception as exc:  # noqa: BLE001 - any reader failure is bad user input
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ConfigError(f"workload.path: cannot read {p.name} as a matrix: {first}") from None
    else:
        data = _csv_matrix(read_text(p, "workload.path"), p.name)
    return check_matrix(data, f"workload.path: {p.name}")


def _csv_matrix(text: str, name: str) -> np.ndarray:
    if not text.strip():
        raise ConfigError(f"workload.path: {name} is empty")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # loadtxt warns on odd input; we refuse it instead
        try:
            return np.loadtxt(io.StringIO(text), delimiter=",", dtype=np.float64, ndmin=2)
        except ValueError:
            why = _first_bad_cell(text)
            raise ConfigError(f"workload.path: cannot read {name} as a matrix: {why}") from None


def _first_bad_cell(text: str) -> str:
    """Why a CSV is not a matrix of numbers: the first short/long line or non-number cell."""
    width, first = None, 0
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0]
        if not line.strip():
            continue
        cells = line.split(",")
        if width is None:
            width, first = len(cells), lineno
        elif len(cells) != width:
            return f"line {lineno} has {len(cells)} values, line {first} has {width}"
        for column, cell in enumerate(cells, 1):
            try:
                float(cell)
            except ValueError:
                return f"line {lineno}, column {column}: {cell.strip()!r} is not a number"
    return "not a matrix of comma-separated numbers"
