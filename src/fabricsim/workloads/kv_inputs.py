"""Input checks shared by the KV-cache workload models: integer fields and strict CSV columns.

The prompt traces (:func:`fabricsim.workloads.prompts.load_prompt_trace`) and the measured GPU
profiles (:meth:`fabricsim.workloads.gpu_latency.TableGpuModel.from_csv`) are read with the same
rules: a UTF-8 file, every cell a stripped string, and on any bad cell one
:class:`~fabricsim.errors.ConfigError` line naming the field, the file, the line and the problem.

Examples
--------
>>> check_int_field("n", 3, 0)
3
>>> check_int_field("n", -1, 0)
Traceback (most recent call last):
...
fabricsim.errors.ConfigError: n must be >= 0 (got -1)
"""

from __future__ import annotations

import io
from os import PathLike
from pathlib import Path

import numpy as np
import numpy.typing as npt

from fabricsim._compat import pd
from fabricsim.config.catalog import is_int
from fabricsim.errors import ConfigError
from fabricsim.units import MAX_MESSAGE_BYTES, MAX_TIME_S
from fabricsim.workloads.base import power_of_two, read_text

__all__ = [
    "check_int_field",
    "first_bad",
    "parse_int_column",
    "parse_time_column",
    "read_csv_strings",
]

_INT_PATTERN = r"[+-]?\d{1,18}"  # at most 18 digits: fits in int64


def check_int_field(field: str, value: object, minimum: int) -> int:
    """Validate that ``value`` is an integer >= ``minimum``; return it as int."""
    if not is_int(value):
        raise ConfigError(f"{field} must be an integer (got {value!r})")
    if int(value) < minimum:  # type: ignore[call-overload]
        raise ConfigError(f"{field} must be >= {minimum} (got {value})")
    return int(value)  # type: ignore[call-overload]


def read_csv_strings(path: str | PathLike[str], field: str) -> pd.DataFrame:
    """Read a UTF-8 CSV without a header, every cell as a stripped string."""
    text = _read_file_text(path, field)
    try:
        frame = pd.read_csv(io.StringIO(text), header=None, dtype=str, keep_default_na=False)
    except pd.errors.EmptyDataError:
        raise ConfigError(f"{field}: {path}: file is empty") from None
    except (OSError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"{field}: {path}: cannot read CSV ({first})") from None
    return frame.apply(lambda col: col.str.strip())


def _read_file_text(path: str | PathLike[str], field: str) -> str:
    """The file's text; a missing, unreadable or non-UTF-8 file raises ConfigError."""
    if not Path(path).exists():
        raise ConfigError(f"{field}: {path}: cannot read CSV (file not found)")
    return read_text(Path(path), field, shown=str(path))


def first_bad(values: pd.Series, bad: npt.NDArray[np.bool_]) -> tuple[int, str]:
    """File line number (1-based) and raw text of the first flagged cell."""
    pos = int(np.argmax(bad))
    return int(str(values.index[pos])) + 1, str(values.iloc[pos])


def parse_int_column(values: pd.Series, field: str, path: object, column: str) -> np.ndarray:
    """Parse a column of strings as positive int64; row numbers are file lines."""
    if values.empty:
        raise ConfigError(f"{field}: {path}: no data rows in column {column!r}")
    bad = ~values.str.fullmatch(r"[+-]?\d+").to_numpy(dtype=bool)
    if bad.any():
        line, text = first_bad(values, bad)
        problem = (
            "is not a number" if text.lower() in ("nan", "+nan", "-nan") else "is not an integer"
        )
        raise ConfigError(f"{field}: {path}: line {line}: {text!r} {problem}")
    fits = values.str.fullmatch(_INT_PATTERN).to_numpy(dtype=bool)
    # a number too long for int64 stands in as one just past its bound, for the message below
    stand_in = values.str.startswith("-").map({True: "-1", False: str(MAX_MESSAGE_BYTES + 1)})
    parsed = values.where(fits, stand_in).map(int).to_numpy(dtype=np.int64)
    if (parsed <= 0).any():
        line, text = first_bad(values, parsed <= 0)
        raise ConfigError(f"{field}: {path}: line {line}: {column} must be > 0 (got {text})")
    if (parsed > MAX_MESSAGE_BYTES).any():
        line, text = first_bad(values, parsed > MAX_MESSAGE_BYTES)
        raise ConfigError(
            f"{field}: {path}: line {line}: {column} {text} is more than "
            f"{power_of_two(MAX_MESSAGE_BYTES)} (a token's KV cache is at least 1 byte, and one "
            "message at most that many bytes)"
        )
    return parsed


def parse_time_column(values: pd.Series, field: str, path: object, column: str) -> np.ndarray:
    """Parse a column of strings as finite float64 times (s) in ``(0, MAX_TIME_S]``."""
    parsed = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64)
    nan_text = values.str.lower().isin(("nan", "+nan", "-nan")).to_numpy(dtype=bool)
    checks = (
        (np.isnan(parsed) & ~nan_text, "must be a number > 0 (got {text!r})"),
        (np.isnan(parsed), "{text!r} is not a number"),
        (np.isinf(parsed), "{text!r} is not finite"),
        (parsed <= 0, "must be a number > 0 (got {text!r})"),
        (
            parsed > MAX_TIME_S,
            f"{{text}} s is more than {MAX_TIME_S:g} s, the longest simulated time",
        ),
    )
    for bad, problem in checks:
        if bad.any():
            line, text = first_bad(values, bad)
            raise ConfigError(f"{field}: {path}: line {line}: {column} {problem.format(text=text)}")
    return parsed
