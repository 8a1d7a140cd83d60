"""``switch.load_balancing_method: adaptive``: per packet, the least-queued member (packet only).

Knob: ``switch.adaptive_quantum_bytes`` (queues compared in units of this many bytes; default
one full packet).
"""

from __future__ import annotations

from collections.abc import Callable

from fabricsim.lb.switch import (
    DeciderView,
    MemberChoice,
    PacketView,
    SwitchContext,
    least_loaded,
    register_switch_method,
)


@register_switch_method
class AdaptiveChoice(MemberChoice):
    """``adaptive``: the member with the least queued bytes; ties broken uniformly at random.

    Queued bytes (data and priority bytes waiting at the member's output port) are compared
    in units of ``quantum_bytes`` (``switch.adaptive_quantum_bytes``, default one full packet),
    as switches quantize port load: queues within the same unit tie.  Exact byte comparison
    makes a flow follow small, persistent queue differences, which skews its bytes over the
    paths and overloads the downlinks no switch on the way up can see (measured: 4 % higher
    mean and 17 % higher P99 FCT than one-packet units on the k = 8 permutation).  Members
    whose link has failed are skipped.

    Examples
    --------
    >>> class P:
    ...     def __init__(self, q): self.qbytes, self.hbytes, self.failed = q, 0, False
    >>> class D: ports = [P(9000), P(4000), P(4184)]
    >>> AdaptiveChoice(lambda: 0.99, 4184).pick(D(), None)
    1
    """

    name = "adaptive"
    label = "switch: least-queued member"
    help = "per packet, the member whose output port has the least queued bytes"
    knobs = ("switch.adaptive_quantum_bytes",)

    def __init__(self, rand: Callable[[], float], quantum_bytes: int) -> None:
        self.rand, self.quantum = rand, max(1, quantum_bytes)

    @classmethod
    def for_switch(cls, ctx: SwitchContext) -> MemberChoice:
        return cls(ctx.rand, ctx.quantum_bytes)

    def pick(self, dec: DeciderView, pkt: PacketView | None) -> int:
        return least_loaded(dec.ports, self.quantum, self.rand)
