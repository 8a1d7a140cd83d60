"""CSIG (congestion signalling): switches stamp the path's worst congestion into data packets.

What is modelled: the compare-and-replace signal of in-band congestion signalling, carrying
the largest **queueing delay** a data packet meets at a switch's egress: as the packet leaves
a switch port, the port's queue left behind it, in time at the port's rate (``bytes x 8 /
rate``: a degraded link's queue counts for what it costs), replaces ``pkt.csig`` if larger.
The receiver's ACK is the data packet turned around, so it echoes the value of the packet it
answers; the reverse path does not stamp ACKs.  The NIC's own ports do not stamp (they are not
switches).  The senders read it (:class:`~fabricsim.nic.pdc.Pdc` ``on_ack``):

* ``nic.nscc.use_csig``: NSCC's queueing delay is the echoed worst hop's, not the RTT less the
  base RTT (which sums every hop's queue, both ways, and the receiver's ACK delay);
* ``nic.reps.use_csig``: REPS takes an ACK whose worst hop queued at least a fifth of the base
  RTT (where ECN starts marking a one-BDP buffer) for a congested path, as an ECN-marked one.

The stamp rides the ports' frame hook (``port.llr``, :mod:`fabricsim.packetsim.llr`): a
:class:`CsigStamp` stamps the frame, then hands it to the link's frame-error or LLR carrier, or
schedules its arrival.
"""

from __future__ import annotations

import numpy as np

from fabricsim.config.models import Scenario
from fabricsim.engine_api import DATA
from fabricsim.packetsim.packets import Packet
from fabricsim.packetsim.ports import HostPort, Port
from fabricsim.topology.fabric import NIC, NVSWITCH, Fabric
from fabricsim.units import PS_PER_S

__all__ = ["CsigStamp", "attach_csig", "csig_enabled"]


class CsigStamp:
    """A switch port's CSIG stamp: its queue's delay, compare-and-replace into data packets."""

    __slots__ = ("sim", "port", "delay", "inner", "scale")

    def __init__(self, port: Port, inner: object = None) -> None:
        self.sim, self.port, self.delay, self.inner = port.sim, port, port.delay_ps, inner
        self.scale = 8 * PS_PER_S / max(port.rate_bps, 1.0)  # ps per queued byte

    def carry(self, pkt: Packet, end: int) -> int:
        """Stamp ``pkt`` (data only) as it leaves, then carry it as the link does."""
        if pkt.kind == DATA:
            d = int(self.port.qbytes * self.scale)
            if d > pkt.csig:
                pkt.csig = d
        inner = self.inner
        if inner is not None:
            return inner.carry(pkt, end)  # type: ignore[attr-defined]
        self.sim.at(end + self.delay, pkt.hops[pkt.hop], pkt)
        return end


def csig_enabled(sc: Scenario) -> bool:
    """Whether a sender reads CSIG (NSCC's or REPS's ``use_csig``), so switches stamp it."""
    nic = sc.nic
    return (nic.nscc.use_csig and nic.cc == "nscc") or (
        nic.reps.use_csig and nic.packet_spraying_type == "reps"
    )


def attach_csig(sc: Scenario, fabric: Fabric, ports: list[Port]) -> int:
    """Give every switch egress port its :class:`CsigStamp` when a sender reads CSIG; the
    number of ports that stamp (0 when none reads it: the ports keep their plain path)."""
    if not csig_enabled(sc):
        return 0
    nic_tier = np.isin(fabric.node_tier, (NIC, NVSWITCH))
    n = 0
    for link, port in enumerate(ports):
        src = int(fabric.link_src[link])
        if isinstance(port, HostPort) or src < fabric.num_hosts or nic_tier[src]:
            continue
        port.llr = CsigStamp(port, port.llr)
        n += 1
    return n
