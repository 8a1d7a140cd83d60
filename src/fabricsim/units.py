"""Units: integer picoseconds, bytes and bits per second, and their converters.

This is the only module where units change.  Engines keep time as integer picoseconds
(packet engine) or float seconds (flow engine, a fluid model); rates are bits per second;
sizes are bytes.  People-facing outputs use seconds and say so in the column name.

Examples
--------
>>> us_to_ps(1.5)
1500000
>>> gbps_to_bps(400)
400000000000
>>> serialization_ps(4184, 400_000_000_000)
83680
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, overload

if TYPE_CHECKING:
    import numpy as np

PS_PER_S = 10**12
PS_PER_US = 10**6
PS_PER_NS = 10**3
S_PER_PS = 1e-12  # float factors: ``x * S_PER_PS`` rounds differently from ``x / PS_PER_S``
S_PER_US = 1e-6
US_PER_S = 1e6
KIB = 1024
MIB = 1024**2
GIB = 1024**3

# Input bounds (checked where input enters: config models, trace readers, CLI options).
# They keep every sum and every picosecond product inside int64 / exact float range.
MAX_MESSAGE_BYTES = 2**50  # one flow or message: 1 PiB
MAX_TOTAL_BYTES = 2**62  # all flows of one run together (int64 sums cannot wrap)
MAX_TIME_S = 1e6  # any simulated time (start, failure, limit): 1e18 ps, inside int64


def us_to_ps(us: float) -> int:
    """Microseconds to integer picoseconds (rounded to nearest)."""
    return int(round(us * PS_PER_US))


def s_to_ps(s: float) -> int:
    """Seconds to integer picoseconds (rounded to nearest)."""
    return int(round(s * PS_PER_S))


@overload
def ps_to_s(ps: int | float) -> float: ...
@overload
def ps_to_s(ps: np.ndarray) -> np.ndarray: ...
def ps_to_s(ps: int | float | np.ndarray) -> float | np.ndarray:
    """Picoseconds to float seconds (numpy arrays too)."""
    return ps / PS_PER_S


def ps_to_us(ps: int | float) -> float:
    """Picoseconds to float microseconds."""
    return ps / PS_PER_US


def us_to_s(us: float) -> float:
    """Microseconds to float seconds (``us * 1e-6``; works on numpy arrays)."""
    return us * S_PER_US


def s_to_us(s: float) -> float:
    """Float seconds to float microseconds (``s * 1e6``; works on numpy arrays)."""
    return s * US_PER_S


def gbps_to_bps(gbps: float) -> int:
    """Gigabits per second (10^9) to integer bits per second."""
    return int(round(gbps * 1e9))


def serialization_ps(size_bytes: int, rate_bps: int) -> int:
    """Time to put ``size_bytes`` on a link of ``rate_bps``, in whole picoseconds (ceiling)."""
    return -(-(size_bytes * 8 * PS_PER_S) // rate_bps)


@overload
def transmit_ps(size_bytes: float, rate_bps: float) -> float: ...
@overload
def transmit_ps(size_bytes: float, rate_bps: np.ndarray) -> np.ndarray: ...
def transmit_ps(size_bytes: float, rate_bps: float | np.ndarray) -> float | np.ndarray:
    """Time to put ``size_bytes`` on a link of ``rate_bps``, in float picoseconds (no rounding;
    numpy arrays of rates too).

    >>> transmit_ps(4184, 400e9)
    83680.0
    """
    return size_bytes * 8 * 1e12 / rate_bps


def transmitted_bytes(rate_bps: float, duration_ps: float) -> float:
    """Bytes a ``rate_bps`` link puts on the wire in ``duration_ps`` (float, no rounding)."""
    return rate_bps * duration_ps / 8e12


def bdp_bytes(rate_bps: float, rtt_ps: int) -> int:
    """Bandwidth-delay product in bytes of a ``rate_bps`` path with round trip ``rtt_ps``."""
    return int(rate_bps * rtt_ps / PS_PER_S / 8)


# -- input with a unit suffix: "4MB", "4MiB", "100Gbps", "1us" ------------------------------
SIZE_SUFFIXES: dict[str, int] = {
    "B": 1,
    "kB": 10**3,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "PB": 10**15,
    "KiB": KIB,
    "MiB": MIB,
    "GiB": GIB,
    "TiB": 1024**4,
    "PiB": 1024**5,
}
"""Bytes per size suffix: SI (``MB`` = 10^6 bytes, as link rates are) and IEC (``MiB`` = 2^20)."""
RATE_SUFFIXES: dict[str, float] = {
    "bps": 1.0,
    "kbps": 1e3,
    "Kbps": 1e3,
    "Mbps": 1e6,
    "Gbps": 1e9,
    "Tbps": 1e12,
}
"""Bits per second per rate suffix (SI: ``Gbps`` = 10^9 b/s)."""
TIME_SUFFIXES: dict[str, float] = {
    "ps": 1e-12,
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
}
"""Seconds per time suffix."""
QUANTITY_UNITS: dict[str, tuple[str, dict[str, float] | dict[str, int], float]] = {
    # a key's name suffix -> (what it measures, the suffixes it takes, one of its units in base)
    "_bytes": ("size", SIZE_SUFFIXES, 1),
    "_gb": ("size", SIZE_SUFFIXES, 1e9),
    "_gbps": ("rate", RATE_SUFFIXES, 1e9),
    "_mbps": ("rate", RATE_SUFFIXES, 1e6),
    "_us": ("time", TIME_SUFFIXES, 1e-6),
    "_ms": ("time", TIME_SUFFIXES, 1e-3),
    "_s": ("time", TIME_SUFFIXES, 1.0),
}
"""Key names that take unit suffixes: a value ``"4MB"`` of a ``*_bytes`` key is 4,000,000;
``"400Mbps"`` of a ``*_gbps`` key is 0.4; ``"2ms"`` of a ``*_us`` key is 2000.  A plain number
keeps the key's own unit."""
NOT_QUANTITIES = frozenset({"zipf_s"})
"""Key names whose ending is not a unit (``zipf_s``: the Zipf exponent s)."""
_QUANTITY = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([^\d\s.+-][^\s]*)\s*$")


_SPELLINGS = frozenset({"KB", "Kbps", "μs", "µs"})
"""Other spellings accepted but not listed (``KB`` = ``kB``, ``µs`` = ``us``)."""


def shown_suffixes(table: dict[str, float] | dict[str, int]) -> list[str]:
    """The suffixes of a table as ``fabricsim keys`` and errors list them."""
    return [k for k in table if k not in _SPELLINGS]


def quantity_unit(name: str) -> tuple[str, dict[str, float] | dict[str, int], float] | None:
    """(what, suffixes, base units per key unit) of a key ``name`` that takes suffixes."""
    if name in NOT_QUANTITIES:
        return None
    for ending, found in QUANTITY_UNITS.items():
        if name.endswith(ending):
            return found
    return None


def parse_quantity(text: str, name: str) -> int | float | None:
    """The value of ``text`` (a number and a unit suffix) in the unit of key ``name``.

    None when ``text`` is not a number followed by letters (a word like ``auto`` is left to the
    key's own check); :class:`ValueError` naming the suffixes when the suffix is not one the
    key takes.  Whole results are ints (``"4MB"`` -> 4000000).

    >>> parse_quantity("4MB", "size_bytes"), parse_quantity("4MiB", "size_bytes")
    (4000000, 4194304)
    >>> parse_quantity("400Mbps", "link_gbps"), parse_quantity("2ms", "rto_us")
    (0.4, 2000)
    >>> parse_quantity("500ns", "link_delay_us"), parse_quantity("auto", "rtt_us") is None
    (0.5, True)
    >>> parse_quantity("1e-5", "at_s") is None  # a number, not 1 with the suffix "e-5"
    True
    """
    found = quantity_unit(name)
    match = _QUANTITY.match(text)
    if found is None or match is None or _is_number(text):
        return None  # a plain number ("1e-5": YAML 1.1 reads it as text) keeps the key's unit
    what, table, per_unit = found
    number, suffix = match.groups()
    if suffix not in table:
        raise ValueError(
            f"{text.strip()!r} is not a {what}: write a number, or a number with one of "
            f"{', '.join(shown_suffixes(table))}"
        )
    value = float(number) * table[suffix] / per_unit
    value = float(f"{value:.15g}")  # 0.4, not 0.39999999999999997
    return int(value) if value.is_integer() and abs(value) < 2**63 else value


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# -- for people: a value with the unit its magnitude calls for ---------------------------------
def _sig(value: float) -> str:
    """Three significant digits, no exponent for values people read (``214``, ``1.96``)."""
    mag = abs(value)
    if mag >= 100:
        return f"{value:.0f}"
    if mag >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def seconds_unit(seconds: float) -> tuple[float, str]:
    """The unit a duration of this size reads best in, as (seconds per unit, name).

    >>> seconds_unit(0.0123), seconds_unit(2.5), seconds_unit(3e-7)
    ((0.001, 'ms'), (1.0, 's'), (1e-09, 'ns'))
    """
    mag = abs(seconds)
    for factor, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if mag >= factor:
            return factor, unit
    return (1e-9, "ns") if mag > 0 else (1.0, "s")


def human_seconds(seconds: float) -> str:
    """A duration in s, ms, µs or ns, whichever reads best.

    >>> human_seconds(1.9554), human_seconds(0.000214), human_seconds(0.0123), human_seconds(0)
    ('1.96 s', '214 µs', '12.3 ms', '0 s')
    """
    if seconds == 0:
        return "0 s"
    factor, unit = seconds_unit(seconds)
    return f"{_sig(seconds / factor)} {unit}"


def human_number(value: float) -> str:
    """A plain number with three significant digits and no exponent below a million.

    >>> human_number(214.3), human_number(1.955), human_number(2e9)
    ('214', '1.96', '2e+09')
    """
    return _sig(value) if abs(value) < 1e6 else f"{value:.3g}"


def human_bytes(size: float) -> str:
    """A size in B, kB, MB, GB or TB (powers of 1000, as link rates are).

    >>> human_bytes(1866050174976), human_bytes(4096), human_bytes(12)
    ('1.87 TB', '4.10 kB', '12 B')
    """
    mag = abs(size)
    for factor, unit in ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
        if mag >= factor:
            return f"{_sig(size / factor)} {unit}"
    return f"{size:.0f} B"


def human_rate(gbps: float) -> str:
    """A rate given in Gbps, in Tbps, Gbps or Mbps.

    >>> human_rate(400), human_rate(3600), human_rate(0.5)
    ('400 Gbps', '3.60 Tbps', '500 Mbps')
    """
    mag = abs(gbps)
    if mag >= 1000:
        return f"{_sig(gbps / 1000)} Tbps"
    if mag >= 1 or mag == 0:
        return f"{gbps:g} Gbps" if float(gbps).is_integer() else f"{_sig(gbps)} Gbps"
    return f"{_sig(gbps * 1000)} Mbps"


def share_pct(count: float, total: float) -> str:
    """``100 x count / total`` as text that never rounds a shortfall away: whole percents,
    with as many decimals as it takes for a share strictly between 0 and 100 % to read
    neither ``0`` nor ``100``.

    >>> share_pct(748, 1000), share_pct(1022, 1024), share_pct(99999, 100000)
    ('75', '99.8', '99.999')
    >>> share_pct(1, 10**6), share_pct(8, 8), share_pct(0, 8)
    ('0.0001', '100', '0')
    """
    pct = 100.0 * count / total
    if pct <= 0.0 or pct >= 100.0 or not math.isfinite(pct):
        return f"{pct:.0f}"
    for digits in range(0, 13):
        text = f"{pct:.{digits}f}"
        if 0.0 < float(text) < 100.0:
            return text
    return "< 100" if pct > 50 else "> 0"


def human_share(count: float, total: float) -> str:
    """A count with its share of a total (see :func:`share_pct`: 99.8 % never reads 100 %).

    >>> human_share(748, 1000), human_share(1022, 1024), human_share(0, 0)
    ('748 of 1,000 = 75 %', '1,022 of 1,024 = 99.8 %', '0 of 0')
    """
    if not total:
        return f"{count:,.0f} of {total:,.0f}"
    return f"{count:,.0f} of {total:,.0f} = {share_pct(count, total)} %"
