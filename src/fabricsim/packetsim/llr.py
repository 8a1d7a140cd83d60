"""Frame errors on links and UEC Link Layer Retry (LLR) in the packet engine.

``topology.link_error_rate`` corrupts each frame a link carries with a probability (one rate
for every link, or a map link name -> rate).  The draws come from one seeded stream per link
(``link/<id>/errors``): the number of frames up to the next corrupted one is geometric, so a
link draws once per error, not once per frame.

Without LLR (:class:`FrameErrors`) the far end of the link drops a corrupted frame (it counts
in the port's drops, so in ``packets_dropped``): the end-to-end transport recovers it.

With ``switch.llr`` (:class:`LinkRetry`, on every link: the switch ports and the NICs' own) the
link recovers it itself, go-back-N, as link-level retry does:

* every frame enters the sender's replay buffer as it goes on the wire and leaves it when the
  receiver's ACK comes back, ``2 x delay`` after its last bit left;
* the receiver drops a corrupted frame and every frame behind it until the replay arrives (the
  link delivers in order); it NACKs the corrupted frame (``switch.llr_nack``), so the sender
  replays ``2 x delay`` after the frame left, or, without a NACK, when its replay timer
  (``switch.llr_timeout_us``) expires;
* the replay re-sends the corrupted frame and the ones behind it back to back from the buffer
  before anything new: the port's wire is busy for them (a frame the port starts meanwhile
  goes on the wire after them), and each replayed frame may be corrupted again.

The replay buffer of a link is sized by its round trip (``rate x (2 x delay + one frame)``);
the model records its peak occupancy and does not stall a sender whose buffer is full.

The hook: a port with a non-None ``llr`` hands each frame it puts on the wire to
:meth:`FrameErrors.carry` instead of scheduling the frame's arrival (one branch per frame
when off).
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

from fabricsim.config.models import Scenario
from fabricsim.config.suggest import closest
from fabricsim.engine_api import ACK
from fabricsim.errors import ConfigError
from fabricsim.packetsim.packets import Packet
from fabricsim.packetsim.ports import Port
from fabricsim.rng import stream
from fabricsim.topology.fabric import Fabric
from fabricsim.units import PS_PER_S, us_to_ps

__all__ = ["FrameErrors", "LinkLayer", "LinkRetry", "attach_link_layer", "link_error_rates"]

NEVER = 1 << 62
"""Frames up to the next error on a link without errors (never reached)."""


class FrameErrors:
    """A link that corrupts frames with probability ``p``: the far end drops them."""

    __slots__ = ("sim", "port", "delay", "gen", "p", "left", "errors", "data_errors")

    def __init__(self, port: Port, p: float, gen: np.random.Generator) -> None:
        self.sim, self.port, self.delay = port.sim, port, port.delay_ps
        self.gen, self.p = gen, float(p)
        self.errors = self.data_errors = 0  # corrupted frames (all, and data or headers)
        self.left = self._draw()  # frames up to and including the next corrupted one

    def _draw(self) -> int:
        return int(self.gen.geometric(self.p)) if self.p > 0 else NEVER

    def _corrupted(self, pkt: Packet) -> bool:
        """Whether this frame is the next corrupted one on the link (counts it)."""
        left = self.left - 1
        if left:
            self.left = left
            return False
        self.left = self._draw()
        self.errors += 1
        if pkt.kind < ACK:
            self.data_errors += 1
        return True

    def carry(self, pkt: Packet, end: int) -> int:
        """``pkt`` leaves the port, its last bit at ``end`` ps: it arrives a delay later, or
        is dropped at the far end if corrupted.  Returns when the wire is free again."""
        if self._corrupted(pkt):
            self.port.drop(pkt)
        else:
            self.sim.at(end + self.delay, pkt.hops[pkt.hop], pkt)
        return end


class LinkRetry(FrameErrors):
    """A link with Link Layer Retry (see the module notes): replay buffer, go-back-N replay."""

    __slots__ = (
        "recover_ps", "ack_ps", "wire", "held", "held_bytes", "unacked", "unacked_bytes",
        "peak", "buffer_bytes", "retries", "replays",
    )  # fmt: skip

    def __init__(
        self, port: Port, p: float, gen: np.random.Generator, timeout_ps: int, nack: bool,
        frame_bytes: int,
    ) -> None:  # fmt: skip
        super().__init__(port, p, gen)
        self.ack_ps = 2 * self.delay  # a frame's ACK is back this long after it left
        self.recover_ps = min(self.ack_ps, timeout_ps) if nack else timeout_ps
        rtt = self.ack_ps + port.ser_ps(frame_bytes)
        self.buffer_bytes = -(-int(port.rate_bps) * rtt // (8 * PS_PER_S)) + frame_bytes
        self.wire = 0  # when the last frame the link sent (new or replayed) has left
        self.held: list[Packet] | None = None  # while recovering: the frames to replay
        self.held_bytes = 0
        self.unacked: deque[tuple[int, int]] = deque()  # (ACK time, bytes), delivered frames
        self.unacked_bytes = self.peak = 0
        self.retries = self.replays = 0  # frames replayed; replays (one per corrupted frame)

    def carry(self, pkt: Packet, end: int) -> int:
        start = self.sim.now
        if self.wire > start:  # a replay holds the wire: this frame follows it
            end += self.wire - start
            start = self.wire
        self.wire = end
        self._put(pkt, start, end)
        return end

    def _put(self, pkt: Packet, start: int, end: int) -> None:
        """``pkt`` is on the wire from ``start`` to ``end``: deliver it, or hold it for the
        replay (corrupted, or behind a corrupted frame)."""
        unacked = self.unacked
        while unacked and unacked[0][0] <= start:
            self.unacked_bytes -= unacked.popleft()[1]
        size = pkt.size
        if self.held is not None:  # the receiver drops it: it waits in the buffer
            self.held.append(pkt)
            self.held_bytes += size
        elif self._corrupted(pkt):
            self.held = [pkt]
            self.held_bytes += size
            self.sim.at(end + self.recover_ps, self._replay)
        else:
            self.sim.at(end + self.delay, pkt.hops[pkt.hop], pkt)
            unacked.append((end + self.ack_ps, size))
            self.unacked_bytes += size
        used = self.unacked_bytes + self.held_bytes
        if used > self.peak:
            self.peak = used

    def _replay(self, _: Any) -> None:
        """The NACK (or the replay timer): re-send the held frames back to back."""
        frames = self.held or []
        self.held, self.held_bytes = None, 0
        port = self.port
        self.replays += 1
        if port.failed:  # the link failed meanwhile: the frames are lost with it
            for pkt in frames:
                port.drop(pkt)
            return
        w = max(self.sim.now, self.wire)
        for pkt in frames:
            size = pkt.size
            end = w + port.ser_ps(size)
            port.tx_bytes += size
            port.tx_pkts += 1
            self.retries += 1
            self._put(pkt, w, end)
            w = end
        self.wire = w
        if port.busy_until < w:
            port.busy_until = w

    def held_data(self) -> int:
        """Data packets (and headers) waiting in the replay buffer for their replay."""
        return sum(1 for p in self.held or () if p.kind < ACK)


def link_error_rates(sc: Scenario, fabric: Fabric) -> list[float]:
    """Each link's frame error probability from ``topology.link_error_rate``; a map names
    links (unknown names refused in one line, with the closest name)."""
    value = sc.topology.link_error_rate
    if not isinstance(value, dict):
        return [float(value)] * fabric.num_links
    rates = [0.0] * fabric.num_links
    index = fabric.link_index
    for name, rate in value.items():
        if name not in index:
            best = closest(name, index)
            if best:
                hint = f"; did you mean '{best}'?"
            else:
                hint = f" (links are named like '{fabric.link_names[0]}')"
            raise ConfigError(f"topology.link_error_rate: unknown link '{name}'{hint}")
        rates[index[name]] = float(rate)
    return rates


class LinkLayer:
    """The links' frame-error and LLR state of one run, and its summary counters."""

    __slots__ = ("links", "llr")

    def __init__(self, links: list[FrameErrors], llr: bool) -> None:
        self.links, self.llr = links, llr

    def held_data(self) -> int:
        """Data packets held for a replay (they are in flight at the end of a run)."""
        return sum(x.held_data() for x in self.links if isinstance(x, LinkRetry))

    def summary(self) -> dict[str, int]:
        """``link_frame_errors``; with LLR ``llr_retries`` (frames replayed),
        ``llr_replay_peak_bytes`` (the fullest replay buffer) with that link's
        ``llr_replay_buffer_bytes`` (its round-trip size), ``llr_e2e_retx_avoided`` (corrupted
        data packets and headers the links recovered: each a retransmission the transport
        did not need)."""
        out = {"link_frame_errors": sum(x.errors for x in self.links)}
        if self.llr:
            retry = [x for x in self.links if isinstance(x, LinkRetry)]
            top = max(retry, key=lambda x: x.peak, default=None)
            out["llr_retries"] = sum(x.retries for x in retry)
            out["llr_replay_peak_bytes"] = top.peak if top is not None else 0
            out["llr_replay_buffer_bytes"] = top.buffer_bytes if top is not None else 0
            out["llr_e2e_retx_avoided"] = sum(x.data_errors for x in retry)
        return out


def attach_link_layer(
    sc: Scenario, fabric: Fabric, ports: list[Port], frame_bytes: int
) -> LinkLayer | None:
    """Give each link with errors (every link under ``switch.llr``) its :class:`FrameErrors`
    or :class:`LinkRetry` (``port.llr``); None when the scenario has neither (the ports keep
    their plain path)."""
    rates = link_error_rates(sc, fabric)
    sw = sc.switch
    if not sw.llr and not any(rates):
        return None
    links: list[FrameErrors] = []
    for link, port in enumerate(ports):
        p = rates[link]
        if not sw.llr and not p:
            continue
        gen = stream(sc.seed, f"link/{link}/errors")
        if sw.llr:
            rtt = 2 * port.delay_ps + port.ser_ps(frame_bytes)
            timeout = us_to_ps(sw.llr_timeout_us) if sw.llr_timeout_us else 2 * rtt
            x: FrameErrors = LinkRetry(port, p, gen, max(timeout, 1), sw.llr_nack, frame_bytes)
        else:
            x = FrameErrors(port, p, gen)
        port.llr = x
        links.append(x)
    return LinkLayer(links, sw.llr)
