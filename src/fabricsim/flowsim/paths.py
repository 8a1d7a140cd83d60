"""Resolve a connection to its link shares for the flow engine (the fluid view of spraying)."""

from __future__ import annotations

import numpy as np

from fabricsim.config.models import Scenario
from fabricsim.errors import EngineRefusal
from fabricsim.lb.base import SPRAY_ALL
from fabricsim.lb.spraying import OnePort, PortSet, spraying_type
from fabricsim.routing.dag import LinkShares, PairDags
from fabricsim.routing.router import Router

__all__ = ["LinkShares", "PathResolver"]


class PathResolver:
    """Link shares of a connection ``(src, dst, src_port)`` under the scenario's NIC and hash.

    * the spraying type's fluid form (:class:`fabricsim.lb.spraying.FluidForm`) weighs the
      paths: ``none`` the one path the hash gives the source port, ``default`` its round-robin
      ports' paths by port count, ``oblivious`` all 65,536 ports' paths by port count (the
      ports are split stage by stage: only paths some port takes are visited);
    * a type without a fluid form (``reps``: packet only) is not declared by the flow engine:
      :func:`fabricsim.experiments.engines.check_supported` refuses it before a run is built,
      with the type's ``packet_only`` reason; the check here only guards direct use;
    * hash ``random``: an even split at every ECMP stage; ``SPRAY_ALL``: even over all paths;
      both from the DAG of ECMP groups (:class:`fabricsim.routing.dag.PairDags`), without
      enumerating the paths.
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
        self.dags = PairDags(router.fabric, sc.nic.rdma_data_mss + sc.nic.header_bytes)
        self._cache: dict[tuple[int, int, int], LinkShares | None] = {}

    def first_entropy(self, src_port: int) -> int:
        """The entropy the flows table shows for a connection on ``src_port``."""
        if src_port == SPRAY_ALL:
            return src_port
        return self.fluid.first_entropy(src_port) & 0xFFFF  # (a dst_qp rides above bit 16)

    def resolve(self, src: int, dst: int, src_port: int) -> LinkShares | None:
        """The connection's link shares, or None if it cannot be routed."""
        # a shared form differs only by the connection's destination QP (lb.qp_field dst_qp)
        key = (src, dst, src_port if self.fluid.per_connection else -2 - (src_port >> 16))
        if src_port == SPRAY_ALL:
            key = (src, dst, SPRAY_ALL)
        try:
            return self._cache[key]
        except KeyError:
            hit = self._cache[key] = self._compute(src, dst, src_port)
            return hit

    def prefetch(self, src: np.ndarray, dst: np.ndarray, ports: np.ndarray) -> None:
        """Resolve many connections ahead, in one batch, where each takes the one path its
        port hashes to (``none`` spraying, deterministic hash); otherwise nothing to do."""
        if not (isinstance(self.fluid, OnePort) and self.router.deterministic) or not len(src):
            return
        paths = self.router.route_many(src, dst, ports)
        of_paths = self.dags.of_paths
        for s, d, p, path in zip(src.tolist(), dst.tolist(), ports.tolist(), paths, strict=True):
            key = (s, d, p)
            if key not in self._cache:  # the same shares as _compute would give
                self._cache[key] = of_paths([(path, 1.0)] if path is not None else [])

    def _compute(self, src: int, dst: int, src_port: int) -> LinkShares | None:
        if src_port == SPRAY_ALL:
            return self.dags.shares(src, dst, even=True)
        if not self.router.deterministic:
            return self.dags.shares(src, dst, even=False)
        return self.dags.of_paths(self.fluid.weights(self.router, src, dst, src_port))
