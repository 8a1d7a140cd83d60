"""Congestion control as pure state machines: no event loop inside, testable alone.

A NIC's PDC owns one :class:`CongestionControl`; the engine calls its ``on_*`` methods with
integer picosecond timestamps and byte counts, and reads ``cwnd_bytes`` (the sending window)
and optionally ``pacing_bps``.  Algorithms register by name (``nic.cc``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fabricsim.config.models import NicConfig
from fabricsim.config.names import register_name, unregister_name
from fabricsim.errors import ConfigError


@dataclass(frozen=True, slots=True)
class CcParams:
    """What a congestion controller knows of its path when it is created."""

    line_rate_bps: float  # the sender's NIC rate
    base_rtt_ps: int  # initial base RTT (InitialBaseRTT or the unloaded RTT)
    mtu_bytes: int  # wire bytes of a full data packet (MSS + header)
    bdp_bytes: int  # line_rate x base RTT, bytes
    cwnd_bdp: float = 1.5  # constant CC: window in BDPs
    nic: NicConfig | None = None  # the NIC's keys; a controller reads its own section (nic.nscc)


class CongestionControl:
    """Interface (and the ``constant`` algorithm): a fixed window of ``cwnd_bdp`` x BDP.

    Examples
    --------
    >>> cc = CongestionControl(CcParams(100e9, 6_000_000, 4184, 75_000, 1.5))
    >>> cc.cwnd_bytes
    112500.0
    >>> cc.on_ack(10, 4184, 6_500_000, ecn=True, inflight_bytes=0); cc.cwnd_bytes
    112500.0
    """

    name = "constant"

    def __init__(self, params: CcParams) -> None:
        self.params = params
        self.base_rtt_ps = params.base_rtt_ps
        self.cwnd_bytes = max(float(params.mtu_bytes), params.cwnd_bdp * params.bdp_bytes)
        self.pacing_bps: float | None = None

    def on_ack(
        self, now_ps: int, acked_bytes: int, rtt_ps: int | None, ecn: bool, inflight_bytes: int
    ) -> None:
        """An ACK for ``acked_bytes`` arrived; ``rtt_ps`` is an unambiguous sample or None."""
        if rtt_ps is not None and rtt_ps < self.base_rtt_ps:
            self.base_rtt_ps = rtt_ps

    def on_nack(self, now_ps: int, nacked_bytes: int, rtt_ps: int | None = None) -> None:
        """A NACK (trimmed packet) for ``nacked_bytes``; ``rtt_ps``: since that packet left."""

    def on_timeout(self, now_ps: int) -> None:
        """A retransmission timeout."""

    def on_cnp(self, now_ps: int) -> None:
        """A congestion notification packet (RoCE's CNP) arrived."""

    def on_send(self, now_ps: int, wire_bytes: int) -> None:
        """A packet of ``wire_bytes`` leaves now (called only while ``pacing_bps`` is set)."""


_CC: dict[str, Callable[[CcParams], CongestionControl]] = {}


def _first_line(doc: str | None) -> str:
    text = (doc or "").strip()
    return text.splitlines()[0] if text else ""


def register_cc(
    name: str, help: str | None = None
) -> Callable[[type[CongestionControl]], type[CongestionControl]]:
    """Class decorator: register a controller as ``nic.cc: <name>``.

    ``help`` is its one line in the config name table (default: its docstring's first line).
    """

    def deco(cls: type[CongestionControl]) -> type[CongestionControl]:
        register_name("nic.cc", name, help or _first_line(cls.__doc__) or name)
        _CC[name] = cls
        return cls

    return deco


def unregister_cc(name: str) -> None:
    """Remove the controller ``name`` (and its config name)."""
    _CC.pop(name, None)
    unregister_name("nic.cc", name)


def registered_cc() -> tuple[str, ...]:
    """Names of the registered congestion-control algorithms (what ``nic.cc`` may name)."""
    return tuple(sorted(_CC))


def make_cc(name: str, params: CcParams) -> CongestionControl:
    """A fresh controller ``name`` for one PDC."""
    if name not in _CC:
        raise ConfigError(f"nic.cc: '{name}' is not available; allowed: {', '.join(sorted(_CC))}")
    return _CC[name](params)


register_cc("constant", "a constant window of nic.cwnd_bdp x BDP")(CongestionControl)
