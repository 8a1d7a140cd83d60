"""Static path policies: path pinning, QP scaling (E-ECMP) and ideal spraying."""

from __future__ import annotations

from fabricsim.lb.base import SPRAY_ALL, Connection, PathPolicy, PolicyContext, register_policy
from fabricsim.routing.hashing import QP_SHIFT


@register_policy
class PinnedPolicy(PathPolicy):
    """Path by destination slice: path index = the destination's index on its leaf, mod paths.

    The source port is the lowest port the switches' real hash puts on that path (inverse hash).
    """

    name = "pinned"
    label = "path by destination slice"
    help = "path by destination slice, on the lowest source port the hash puts on it"

    def __init__(self, ctx: PolicyContext) -> None:
        super().__init__(ctx)
        self._cache: dict[tuple[int, int], int] = {}

    def connections(self, flow: int) -> list[Connection]:
        f = self.ctx.flows
        src, dst = int(f.src[flow]), int(f.dst[flow])
        port = self._cache.get((src, dst))
        if port is None:
            port = self._pinned_port(src, dst)
            self._cache[(src, dst)] = port
        return [Connection(int(f.size_bytes[flow]), port)]

    def _pinned_port(self, src: int, dst: int) -> int:
        fab = self.ctx.fabric
        per_path = self.ctx.router.ports_per_path(src, dst)
        paths = list(per_path)
        if not paths:
            return int(self.ctx.flows.src_port[0])
        leaf_hosts = (fab.host_leaf[:dst] == fab.host_leaf[dst]).sum()
        start = int(leaf_hosts) % len(paths)
        for i in range(len(paths)):  # the slice's path, or the next one a port reaches
            ports = per_path[paths[(start + i) % len(paths)]]
            if len(ports):
                return int(ports[0])
        return 0


@register_policy
class QpScalingPolicy(PathPolicy):
    """E-ECMP: each host pair has ``lb.qp_count`` connections with distinct source ports.

    ``round_robin`` posts whole messages to the pair's QPs in turn; ``split`` divides each
    message evenly over all of them.  QP ``j`` of a pair uses port ``(p0 + j * 65536 // q)``
    where ``p0`` is the source port drawn for the pair's first flow; with ``lb.qp_field:
    dst_qp`` every QP keeps ``p0`` and differs only in its destination QP ``j`` (entropy
    ``p0 | j << 16``), which moves it only if the switches hash ``dst_qp``.
    """

    name = "qp_scaling"
    label = "QPs per host pair (E-ECMP)"
    help = "E-ECMP: lb.qp_count connections (distinct source ports) per host pair"
    knobs = ("lb.qp_count", "lb.qp_mode", "lb.qp_field")

    def __init__(self, ctx: PolicyContext) -> None:
        super().__init__(ctx)
        self._base: dict[tuple[int, int], int] = {}
        self._next: dict[tuple[int, int], int] = {}

    def _ports(self, flow: int) -> tuple[tuple[int, int], list[int]]:
        f = self.ctx.flows
        key = (int(f.src[flow]), int(f.dst[flow]))
        base = self._base.setdefault(key, int(f.src_port[flow]))
        q = self.ctx.scenario.lb.qp_count
        if self.ctx.scenario.lb.qp_field == "dst_qp":
            return key, [base | (j << QP_SHIFT) for j in range(q)]
        return key, [(base + j * (65536 // q)) % 65536 for j in range(q)]

    def connections(self, flow: int) -> list[Connection]:
        size = int(self.ctx.flows.size_bytes[flow])
        key, ports = self._ports(flow)
        if self.ctx.scenario.lb.qp_mode == "round_robin":
            j = self._next.get(key, 0)
            self._next[key] = (j + 1) % len(ports)
            return [Connection(size, ports[j])]
        q = len(ports)
        shares = [size // q + (1 if j < size % q else 0) for j in range(q)]
        return [Connection(s, p) for s, p in zip(shares, ports, strict=True) if s > 0]


@register_policy
class IdealSprayPolicy(PathPolicy):
    """Flow engine only: every flow split evenly over all its equal-cost paths."""

    name = "ideal_spray"
    label = "even split over all paths"
    help = "flow engine only: every flow split evenly over all its equal-cost paths"
    flow_engine_only = True
    refusal = "is the flow engine's ideal split"
    one_path_per_flow = False

    def connections(self, flow: int) -> list[Connection]:
        return [Connection(int(self.ctx.flows.size_bytes[flow]), SPRAY_ALL)]
