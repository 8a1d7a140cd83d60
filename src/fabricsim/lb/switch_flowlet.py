"""``switch.load_balancing_method: flowlet``: a flow keeps its member between gaps (packet only).

Knobs: ``switch.flowlet_gap_us`` (the idle gap that ends a flowlet) and ``switch.flowlet_pick``
(the member of a new flowlet: ``random`` as LetFlow, or ``least_loaded``, which compares queues
in units of ``switch.adaptive_quantum_bytes``' resolved default, one full packet).
"""

from __future__ import annotations

from collections.abc import Callable

from fabricsim.lb.switch import (
    Clock,
    DeciderView,
    MemberChoice,
    PacketView,
    SwitchContext,
    least_loaded,
    random_live,
    register_switch_method,
)


@register_switch_method
class FlowletChoice(MemberChoice):
    """``flowlet``: a flow keeps its member until idle for more than ``gap_ps``.

    A flow is a 5-tuple (source, destination, entropy).  After a gap the member is picked
    anew: uniformly at random (``random``, LetFlow) or the least loaded (``least_loaded``).
    A flow whose member's link has failed picks anew at once.  ``flowlets`` counts the picks.

    Examples
    --------
    >>> class P: failed, qbytes, hbytes = False, 0, 0
    >>> class D: ports, fkey = [P(), P()], 0
    >>> class Pkt: entropy = 7
    >>> class C: now = 0
    >>> fl = FlowletChoice(lambda: 0.9, C(), gap_ps=10)
    >>> fl.pick(D(), Pkt()), fl.pick(D(), Pkt()), fl.flowlets
    (1, 1, 1)
    """

    name = "flowlet"
    label = "switch: flowlets"
    help = "a flow (5-tuple) keeps its member until idle longer than switch.flowlet_gap_us"
    knobs = ("switch.flowlet_gap_us", "switch.flowlet_pick")

    def __init__(
        self,
        rand: Callable[[], float],
        sim: Clock,
        gap_ps: int,
        pick: str = "random",
        quantum_bytes: int = 1,
    ) -> None:
        self.rand, self.sim, self.gap_ps = rand, sim, gap_ps
        self.least = pick == "least_loaded"
        self.quantum = max(1, quantum_bytes)
        self.table: dict[int, list[int]] = {}  # flow key -> [last packet time, member]
        self.flowlets = 0

    @classmethod
    def for_switch(cls, ctx: SwitchContext) -> MemberChoice:
        sw = ctx.switch
        return cls(ctx.rand, ctx.clock, ctx.flowlet_gap_ps, sw.flowlet_pick, ctx.quantum_bytes)

    def pick(self, dec: DeciderView, pkt: PacketView) -> int:
        now = self.sim.now
        key = dec.fkey | pkt.entropy
        entry = self.table.get(key)
        if entry is not None and now - entry[0] <= self.gap_ps:
            entry[0] = now
            m = entry[1]
            if not dec.ports[m].failed:
                return m
        self.flowlets += 1
        if self.least:
            m = least_loaded(dec.ports, self.quantum, self.rand)
        else:
            m = random_live(dec.ports, self.rand)
        if entry is None:
            self.table[key] = [now, m]
        else:
            entry[0], entry[1] = now, m
        return m
