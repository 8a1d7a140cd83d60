"""Resolve a connection to weighted paths for the flow engine (the fluid view of spraying)."""

from __future__ import annotations

import numpy as np

from fabricsim.config.models import Scenario
from fabricsim.errors import EngineRefusal
from fabricsim.lb.base import SPRAY_ALL
from fabricsim.lb.spraying import OnePort, PortSet, WeightedPaths, spraying_type
from fabricsim.routing.router import Path, Router

__all__ = ["PathResolver", "WeightedPaths"]


class PathResolver:
    """Weighted paths of a connection ``(src, dst, src_port)`` under the scenario's NIC and hash.

    * the spraying type's fluid form (:class:`fabricsim.lb.spraying.FluidForm`) weighs the
      paths: ``none`` the one path the hash gives the source port, ``default`` its round-robin
      ports' paths by port count, ``oblivious`` all 65,536 ports' paths by port count;
    * a type without a fluid form (``reps``: packet only) is not declared by the flow engine:
      :func:`fabricsim.experiments.engines.check_supported` refuses it before a run is built,
      with the type's ``packet_only`` reason; the check here only guards direct use;
    * hash ``random``: an even split at every ECMP stage; ``SPRAY_ALL``: even over all paths.
    """

    def __init__(self, sc: Scenario, router: Router) -> None:
        self.sc = sc
        self.router = router
        self.spray = sc.nic.packet_spraying_type
        strategy = spraying_type(self.spray)
        if strategy.fluid is None:  # defensive: the run was refused earlier (engine registry)
            raise EngineRefusal(
                f"nic.packet_spraying_type={self.spray} needs the packet engine "
                f"({strategy.packet_only}); use --engine packet"
            )
        self.fluid = strategy.fluid(sc.nic)
        self.default_ports = PortSet(sc.nic).ports  # the default type's ports (flows table)
        self._cache: dict[tuple[int, int, int], WeightedPaths] = {}

    def first_entropy(self, src_port: int) -> int:
        """The entropy the flows table shows for a connection on ``src_port``."""
        if src_port == SPRAY_ALL:
            return src_port
        return self.fluid.first_entropy(src_port) & 0xFFFF  # (a dst_qp rides above bit 16)

    def resolve(self, src: int, dst: int, src_port: int) -> WeightedPaths | None:
        """Weighted paths (weights sum to 1), or None if the connection cannot be routed."""
        # a shared form differs only by the connection's destination QP (lb.qp_field dst_qp)
        key = (src, dst, src_port if self.fluid.per_connection else -2 - (src_port >> 16))
        if src_port == SPRAY_ALL:
            key = (src, dst, SPRAY_ALL)
        hit = self._cache.get(key)
        if hit is None:
            hit = self._compute(src, dst, src_port)
            self._cache[key] = hit
        return hit or None

    def prefetch(self, src: np.ndarray, dst: np.ndarray, ports: np.ndarray) -> None:
        """Resolve many connections ahead, in one batch, where each takes the one path its
        port hashes to (``none`` spraying, deterministic hash); otherwise nothing to do."""
        if not (isinstance(self.fluid, OnePort) and self.router.deterministic) or not len(src):
            return
        paths = self.router.route_many(src, dst, ports)
        for s, d, p, path in zip(src.tolist(), dst.tolist(), ports.tolist(), paths, strict=True):
            key = (s, d, p)
            if key not in self._cache:  # the same list as _compute would give
                self._cache[key] = [(path, 1.0)] if path is not None else []

    def _compute(self, src: int, dst: int, src_port: int) -> WeightedPaths:
        fab = self.router.fabric
        if src_port == SPRAY_ALL:
            paths = fab.paths(src, dst)
            return [(p, 1.0 / len(paths)) for p in paths]
        if not self.router.deterministic:
            return self._per_stage_split(src, dst)
        return self.fluid.weights(self.router, src, dst, src_port)

    def _per_stage_split(self, src: int, dst: int) -> WeightedPaths:
        fab = self.router.fabric
        out: WeightedPaths = []
        first = int(fab.host_uplink[src])
        stack: list[tuple[int, Path, float]] = [(int(fab.link_dst[first]), (first,), 1.0)]
        while stack:
            node, path, w = stack.pop()
            if node == dst:
                out.append((path, w))
                continue
            group = fab.ecmp_group(node, dst)
            for link in group:
                stack.append((int(fab.link_dst[link]), (*path, int(link)), w / len(group)))
        return out
