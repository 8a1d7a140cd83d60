"""What the engines share: the output every engine returns (so both feed the same output tables),
the wire-byte formula, the packet kinds of the packet engine, and the collector pause around
their loops.

The packet kinds live here, below both :mod:`fabricsim.packetsim` (ports, switches, trimming)
and :mod:`fabricsim.nic` (which sends and answers them), so neither package imports the other
for them: the packet engine imports the NIC, and the NIC sees the packet engine only as types.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fabricsim._compat import pd

ROUTE_KEY_HOSTS = 1 << 18
"""The packet engine's route cache keys hold host indices below this (18 bits each)."""


def route_key(src: int, dst: int) -> int:
    """The route cache key of a host pair; OR an entropy value (26 bits: port and QP) into it.

    >>> route_key(1, 2) | 7 == (((1 << 18) | 2) << 26) | 7
    True
    """
    return ((src << 18) | dst) << 26


DATA, HDR, ACK, NACK, CNP = 0, 1, 2, 3, 4
"""Packet kinds.  Anything but DATA is a header-sized control packet (priority queue); NACK
is UET's NACK of a trimmed packet or RoCE's NAK (sequence error); CNP is RoCE's congestion
notification (DCQCN)."""


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run an engine's event loop with the cyclic garbage collector off (restored after).

    perf: the loops create no reference cycles worth collecting (packets are pooled, routes,
    PDCs and connections live for the run); the collector would only walk them, again and
    again (4-7 % of a run).
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


@dataclass(eq=False)
class EngineOutput:
    """Per-flow results in flow-id order, engine counters, and optional record tables.

    ``finish_s`` is NaN for a flow that did not finish.  ``delivered_bytes`` counts payload
    bytes that reached the receiver (exactly once).  ``summary`` holds engine-specific keys for
    ``summary.json`` (deterministic); ``timing`` wall-clock figures for ``timing.json``.
    """

    finish_s: np.ndarray
    delivered_bytes: np.ndarray
    path: list[str]
    entropy: np.ndarray
    summary: dict[str, Any] = field(default_factory=dict)
    timing: dict[str, Any] = field(default_factory=dict)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    json_records: dict[str, Any] = field(default_factory=dict)
    start_s: np.ndarray | None = None  # actual start (dependent flows start when released)
    acked_s: np.ndarray | None = None  # packet engine: the sender saw the message all ACKed


def wire_bytes(size_bytes: int, mss: int, header_bytes: int) -> int:
    """Bytes on the wire for a message: payload plus one header per packet (both engines)."""
    packets = -(-size_bytes // mss)
    return size_bytes + packets * header_bytes


def wire_bytes_array(size_bytes: np.ndarray, mss: int, header_bytes: int) -> np.ndarray:
    """Vectorized :func:`wire_bytes` (int64): payload plus one header per packet."""
    size = np.asarray(size_bytes, dtype=np.int64)
    return size + (-(-size // mss)) * header_bytes
