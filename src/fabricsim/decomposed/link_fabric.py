"""Step 3a of the decomposed engine: the small fabric a link is simulated on.

One link ``X->Y`` of the scenario becomes a dumbbell (:func:`fabricsim.topology.builders.
build_dumbbell`): sender hosts behind switch ``leaf0``, the link ``leaf0->leaf1``, receiver
hosts behind ``leaf1``.

* **Senders**: one host per (real sender, arrival rate) of the link's sub-flows, its link to
  ``leaf0`` at that rate (the sender's NIC rate times the flow's share on the link) and with
  the propagation from the real sender to the link.  Flows of one real sender share its NIC
  (and its PDCs) as they do in the fabric.
* **The link** keeps its real rate, nominal rate (its buffer, ECN and PFC thresholds follow
  from it as in the whole fabric) and delay, in the position where it queues: a host's uplink
  is the sender's own link (its NIC queues), a link into a host is the receiver's link, a
  switch-to-switch link is ``leaf0->leaf1``.
* **Receivers**: one host per (real receiver, propagation after the link), its link from
  ``leaf1`` at the link's rate, so nothing downstream of the link queues, with the remaining
  propagation to the real receiver.  The base RTT of the whole fabric is kept (``nic.
  initial_base_rtt_us``): windows and BDP-sized buffers are those of the whole fabric.

What it cannot see: queueing at other links (each link is simulated with the arrivals its
flows would have on an idle fabric), pauses or drops elsewhere, and ACKs competing with data.

Examples
--------
>>> spec = LinkSpec(
...     name="edge0_0->host1", position=2, rate_bps=1e11, nominal_bps=1e11, delay_ps=10**6,
...     sender=np.array([0, 1]), sender_bps=np.array([1e11, 1e11]),
...     sender_delay_ps=np.array([5 * 10**6, 3 * 10**6]), receiver=np.array([0, 0]),
...     receiver_delay_ps=np.array([0]), size_bytes=np.array([10**6, 10**6]),
...     start_s=np.zeros(2), src_port=np.array([1, 2]), cap_bps=None)
>>> fab = spec.fabric()
>>> fab.num_hosts, fab.link_names[-4:]
(3, ['host2->leaf1', 'leaf1->host2', 'leaf0->leaf1', 'leaf1->leaf0'])
>>> [float(fab.link_rate_bps[fab.link_index[n]]) for n in ("leaf1->host2", "leaf0->leaf1")]
[100000000000.0, 200000000000.0]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fabricsim.decomposed.link_workloads import DOWN, MIDDLE, UP, LinkWorkloads
from fabricsim.decomposed.routes import Routes
from fabricsim.topology.builders import build_dumbbell
from fabricsim.topology.fabric import Fabric
from fabricsim.workloads.base import FlowTable


@dataclass(eq=False)
class LinkSpec:
    """One link simulation's fabric and sub-flows (plain arrays: cheap to send to a worker)."""

    name: str
    position: int
    rate_bps: float
    nominal_bps: float
    delay_ps: int
    sender: np.ndarray
    """Per sub-flow: its sender host (``0 .. S-1``)."""
    sender_bps: np.ndarray
    """Per sender host: its link rate."""
    sender_delay_ps: np.ndarray
    receiver: np.ndarray
    """Per sub-flow: its receiver (``0 .. R-1``; host ``S + r``)."""
    receiver_delay_ps: np.ndarray
    size_bytes: np.ndarray
    start_s: np.ndarray
    src_port: np.ndarray
    cap_bps: np.ndarray | None
    """Per sub-flow: its pacing cap (a paced workload's share), or None."""
    sender_feeder: np.ndarray | None = None
    """Per sender host: the feeder switch it sits behind (-1: on ``leaf0`` itself)."""
    feeder_bps: np.ndarray | None = None
    """Per feeder: the rate of the real link feeding the link (the hop before it)."""
    feeder_delay_ps: np.ndarray | None = None

    def fabric(self) -> Fabric:
        """The dumbbell of this link (see the module docstring)."""
        senders, receivers = len(self.sender_bps), len(self.receiver_delay_ps)
        snd_bps = self.sender_bps.astype(float).copy()
        snd_delay = self.sender_delay_ps.astype(np.int64).copy()
        rcv_bps = np.full(receivers, self.nominal_bps)
        rcv_delay = self.receiver_delay_ps.astype(np.int64).copy()
        middle_bps = max(float(snd_bps.sum()), self.nominal_bps)
        middle_delay = 0
        degraded: dict[str, float] = {}
        kept = self.rate_bps / self.nominal_bps
        if self.position == UP:  # one sender: the host's own link is the link
            snd_bps[:] = self.nominal_bps
            snd_delay += self.delay_ps
            middle_bps = self.nominal_bps
            target = "host0->leaf0"
        elif self.position == DOWN:  # one receiver: its link is the link
            rcv_delay += self.delay_ps
            target = f"leaf1->host{senders}"
        else:
            middle_bps, middle_delay = self.nominal_bps, self.delay_ps
            target = "leaf0->leaf1"
        if kept < 1.0:
            degraded[target] = kept
        feeds = self.feeder_bps if self.feeder_bps is not None else np.zeros(0)
        return build_dumbbell(
            snd_bps,
            snd_delay,
            middle_bps,
            middle_delay,
            rcv_bps,
            rcv_delay,
            degraded,
            self.sender_feeder,
            feeds,
            self.feeder_delay_ps if self.feeder_delay_ps is not None else np.zeros(0, np.int64),
        )

    def flows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(src host, dst host, size, start, source port) of the sub-flows on :meth:`fabric`."""
        dst = len(self.sender_bps) + self.receiver
        return self.sender, dst, self.size_bytes, self.start_s, self.src_port

    def packets(self, mss: int) -> int:
        """Data packets the simulation sends (no retransmissions)."""
        return int(np.sum(-(-self.size_bytes // mss)))


def link_spec(
    w: LinkWorkloads, i: int, routes: Routes, fabric: Fabric, flows: FlowTable
) -> LinkSpec:
    """The simulation of the ``i``-th loaded link of ``w``."""
    r = w.rows(i)
    link = int(w.links[i])
    flow, row = w.flow[r], w.row[r]
    src = flows.src[flow]
    sender_bps = w.sender_bps[r]
    feed = routes.feed[row]
    keys = np.stack([src.astype(np.float64), sender_bps, feed.astype(np.float64)])
    _, first, sender = np.unique(keys, axis=1, return_index=True, return_inverse=True)
    feeders, sender_feeder = np.unique(feed[first], return_inverse=True)
    sender_feeder = sender_feeder.reshape(-1).astype(np.int64)
    if len(feeders) and feeders[0] < 0:  # the senders on leaf0 itself
        feeders = feeders[1:]
        sender_feeder -= 1
    feeder_delay = fabric.link_delay_ps[feeders].astype(np.int64)
    sender_delay = routes.prefix_ps[row][first] - np.where(
        sender_feeder >= 0, feeder_delay[np.maximum(sender_feeder, 0)] if len(feeders) else 0, 0
    )
    dst, suffix = flows.dst[flow], routes.suffix_ps[row]
    _, rfirst, receiver = np.unique(
        np.stack([dst, suffix]), axis=1, return_index=True, return_inverse=True
    )
    caps = flows.extra.get("rate_cap_bps")
    return LinkSpec(
        name=fabric.link_names[link],
        position=int(w.position[i]),
        rate_bps=float(fabric.link_rate_bps[link]),
        nominal_bps=float(fabric.link_nominal_bps[link]),
        delay_ps=int(fabric.link_delay_ps[link]),
        sender=sender.reshape(-1).astype(np.int64),
        sender_bps=sender_bps[first],
        sender_delay_ps=sender_delay,
        receiver=receiver.reshape(-1).astype(np.int64),
        receiver_delay_ps=suffix[rfirst],
        size_bytes=w.size_bytes[r],
        start_s=w.start_s[r],
        src_port=flows.src_port[flow],
        cap_bps=None if caps is None else np.asarray(caps, dtype=float)[flow] * routes.coef[row],
        sender_feeder=sender_feeder,
        feeder_bps=fabric.link_rate_bps[feeders].astype(float),
        feeder_delay_ps=feeder_delay,
    )


__all__ = ["DOWN", "MIDDLE", "UP", "LinkSpec", "link_spec"]
