# cython: boundscheck=False, wraparound=False
"""Packets and routes: the header a packet carries, the path it follows, its free list, and
the one contract of everything a packet is handed to (:class:`Element`).

A packet carries its route as the tuple of ``receive`` callables of the elements it visits
(``hops``) and the index of the element holding it (``hop``), so forwarding is one tuple
index per hop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fabricsim.engine_api import DATA

if TYPE_CHECKING:
    from fabricsim.packetsim.pfc import Pfc

__all__ = ["Element", "Packet", "PacketPool", "Route"]


class Packet:
    """Header fields only (htsim style); objects are recycled through :class:`PacketPool`."""

    # fmt: off

    __slots__ = (
        "kind", "pdc", "src", "dst", "psn", "size", "payload", "entropy",
        "hops", "hop", "ecn", "ts", "cack", "sbase", "sack", "ar", "last_hop", "prev", "nxt",
        "bk", "csig",
    )

    # fmt: on

    def __init__(self) -> None:
        self.kind = DATA
        self.pdc: Any = None
        self.src = self.dst = self.psn = self.size = self.payload = self.entropy = 0
        self.hops: tuple[Callable[[Packet], None], ...] = ()
        self.hop = 0
        self.ecn = False
        self.ar = False  # data: the sender asks for an immediate ACK (nic.ack_request)
        self.last_hop = False  # header / NACK: trimmed at the port before the receiver
        self.ts = 0  # send time of the data transmission (echoed by its ACK / NACK)
        self.cack = 0  # ACK: every PSN below is received
        self.sbase = 0  # ACK: first PSN of the SACK bitmap (>= cack, covers the PSN answered)
        self.sack = 0  # ACK: bit j = PSN sbase + j received (64 bits)
        # PFC: the ingress it came over (the component of the lossless port that sent it last)
        self.prev: Pfc | None = None
        # perf: a port's FIFOs are linked through their packets (no deque, no allocation)
        self.nxt: Packet | None = None  # the packet queued after it
        self.bk: Packet | None = None  # ... and before it
        # CSIG: the largest queueing delay (ps) a data packet met at a switch's egress (stamped
        # compare-and-replace on its way, packetsim/csig.py); its ACK carries it back
        self.csig = 0


class Route:
    """One path: link ids, the callables a packet visits, and its label.

    ``hops`` ends with the destination NIC's data entry, ``ctrl_hops`` (same path) with its
    ACK/NACK entry, so the NIC needs no dispatch on the packet kind.  Under a live member
    choice ``hops`` may stop at a decider (then ``label`` is empty and ``links`` the hashed
    path that ``ctrl_hops`` follows).  ``ok`` is False for a route that dead-ends (its last
    hop drops the packet); ``tops`` are the indices of the top-tier switches on it (spine
    timeline).  Built by the route table (:mod:`fabricsim.packetsim.forwarding`).

    ``label`` is the path's label, or a callable that names ``links`` (the fabric's
    ``path_label``): then the label is made when first read.  # perf: most routes of a
    sprayed run are never labelled one by one (a flow's ``path`` column counts them past
    eight), and naming each new path was 2 % of a 1,024-host run
    """

    __slots__ = ("links", "hops", "ctrl_hops", "name", "ok", "tops", "user")

    def __init__(
        self,
        links: tuple[int, ...],
        hops: tuple[Callable, ...],
        ctrl_hops: tuple[Callable, ...],
        label: str | Callable[[tuple[int, ...]], str],
        ok: bool,
        tops: tuple[int, ...] = (),
    ) -> None:
        self.links, self.hops, self.ctrl_hops = links, hops, ctrl_hops
        self.name: Any = label  # the label, or what makes it (see ``label``)
        self.ok, self.tops = ok, tops
        # perf: the sender that last recorded this route (one check per packet instead of a
        # dict insert)
        self.user: Any = None

    @property
    def label(self) -> str:
        """Switch names along the path joined by ``>`` (empty before a live choice)."""
        name = self.name
        if not isinstance(name, str):
            name = self.name = name(self.links)
        return name


class PacketPool:
    """Free list of :class:`Packet` objects (``get`` / ``put``)."""

    __slots__ = ("free",)

    def __init__(self) -> None:
        self.free: list[Packet] = []

    def get(self) -> Packet:
        free = self.free
        if free:
            return free.pop()
        return Packet()

    def put(self, pkt: Packet) -> None:
        pkt.ecn = False
        pkt.csig = 0
        self.free.append(pkt)


class Element:
    """What a packet is handed to: a route's hop, or the calendar's event (one contract).

    ``receive(pkt)`` takes a packet; ``wake()`` is an event without one (a port's next
    transmission).  The calendar calls these methods on the element itself, any other
    callable as ``fn(arg)``; calling an element is ``receive``.  # perf: compiled, a C call
    on the element instead of a Python call of a bound method (at 1,024 hosts the first touch
    of the method object, a cache miss, was 7 % of the loop)
    """

    __slots__ = ()

    def receive(self, pkt: Packet) -> None:
        raise NotImplementedError  # pragma: no cover - interface

    def wake(self) -> None:
        raise NotImplementedError  # pragma: no cover - interface

    def __call__(self, pkt: Packet) -> None:
        self.receive(pkt)
