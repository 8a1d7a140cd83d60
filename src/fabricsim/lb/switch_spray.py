"""``switch.load_balancing_method: spray``: a uniformly random member per packet (packet only)."""

from __future__ import annotations

from collections.abc import Callable

from fabricsim.lb.switch import (
    DeciderView,
    MemberChoice,
    PacketView,
    SwitchContext,
    random_live,
    register_switch_method,
)


@register_switch_method
class SprayChoice(MemberChoice):
    """``spray``: a uniformly random member per packet (live members only).

    Examples
    --------
    >>> class P: failed, qbytes, hbytes = False, 0, 0
    >>> class D: ports = [P(), P(), P(), P()]
    >>> SprayChoice(lambda: 0.6).pick(D(), None)
    2
    """

    name = "spray"
    label = "switch: random member per packet"
    help = "a uniformly random member per packet"

    def __init__(self, rand: Callable[[], float]) -> None:
        self.rand = rand

    @classmethod
    def for_switch(cls, ctx: SwitchContext) -> MemberChoice:
        return cls(ctx.rand)

    def pick(self, dec: DeciderView, pkt: PacketView | None) -> int:
        return random_live(dec.ports, self.rand)
