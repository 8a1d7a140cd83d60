"""Resolve a connection to weighted paths for the flow engine (the fluid view of spraying)."""

from __future__ import annotations

import numpy as np

from fabricsim.config.models import Scenario
from fabricsim.errors import EngineRefusal
from fabricsim.lb.base import SPRAY_ALL
from fabricsim.routing.router import Path, Router

WeightedPaths = list[tuple[Path, float]]


class PathResolver:
    """Weighted paths of a connection ``(src, dst, src_port)`` under the scenario's NIC and hash.

    * spraying ``none``: the one path the switches' hash gives the source port;
    * ``default``: the 2^EntropyMaskBits round-robin ports' paths, weighted by port count
      (the fluid limit of strict round robin);
    * ``oblivious``: all 65,536 ports' paths weighted by port count;
    * ``reps`` is not declared by the flow engine (its choices react to per-packet ACK
      feedback): :func:`fabricsim.experiments.engines.check_supported` refuses it before a run
      is built; the check here only guards direct use;
    * hash ``random``: an even split at every ECMP stage; ``SPRAY_ALL``: even over all paths.
    """

    def __init__(self, sc: Scenario, router: Router) -> None:
        self.sc = sc
        self.router = router
        self.spray = sc.nic.packet_spraying_type
        if self.spray == "reps":  # defensive: the run was refused earlier (engine registry)
            raise EngineRefusal(
                "nic.packet_spraying_type=reps needs the packet engine (REPS reacts to per-packet "
                "ACK feedback); use --engine packet"
            )
        nic = sc.nic
        count = 2**nic.entropy_mask_bits
        self.default_ports = (nic.starting_port_offset + np.arange(count)) % 65536
        self._cache: dict[tuple[int, int, int], WeightedPaths] = {}

    def resolve(self, src: int, dst: int, src_port: int) -> WeightedPaths | None:
        """Weighted paths (weights sum to 1), or None if the connection cannot be routed."""
        key = (src, dst, src_port if self.spray == "none" else -2)
        if src_port == SPRAY_ALL:
            key = (src, dst, SPRAY_ALL)
        hit = self._cache.get(key)
        if hit is None:
            hit = self._compute(src, dst, src_port)
            self._cache[key] = hit
        return hit or None

    def _compute(self, src: int, dst: int, src_port: int) -> WeightedPaths:
        fab = self.router.fabric
        if src_port == SPRAY_ALL:
            paths = fab.paths(src, dst)
            return [(p, 1.0 / len(paths)) for p in paths]
        if not self.router.deterministic:
            return self._per_stage_split(src, dst)
        if self.spray == "none":
            path = self.router.route(src, dst, src_port)
            return [(path, 1.0)] if path is not None else []
        per_path = self.router.ports_per_path(src, dst)
        if self.spray == "default":
            ports = self.default_ports
            total = len(ports)
            out = []
            for path, members in per_path.items():
                n = int(np.isin(ports, members, assume_unique=False).sum())
                if n:
                    out.append((path, n / total))
            return out
        return [(p, len(m) / 65536) for p, m in per_path.items() if len(m)]

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
