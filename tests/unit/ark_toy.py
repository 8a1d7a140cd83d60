"""A test double for ARK's control plane: :class:`ToyArkPlane` drives an
:class:`~fabricsim.lb.ark.ArkControlPlane` on a toy clock, without an engine.

>>> plane = ToyArkPlane(hosts=3, paths=4, delay_s=5e-6)
>>> plane.arrive(flow=0, src=0, dst=2, now_s=0.0), plane.arrive(flow=1, src=1, dst=2, now_s=1e-6)
(0, 0)
>>> plane.run_until(1e-3)
>>> plane.key_of(0), plane.key_of(1), plane.races
(0, 1, 1)
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

import numpy as np

from fabricsim.lb.ark import ArkControlPlane, PortTable


class ToyArkPlane(ArkControlPlane):
    """An :class:`ArkControlPlane` on a toy clock, for tests and examples (no engine).

    Unit ``k`` of every pair is reached by source ports ``k, k + paths, k + 2 paths, ...``.
    Drive it with :meth:`arrive`, :meth:`finish` and :meth:`run_until`; :attr:`rerouted` lists
    the ``(flow, src_port)`` re-routes the controllers asked for.

    Parameters
    ----------
    hosts : int
        Number of hosts.
    paths : int
        Units (spines) per host pair.
    delay_s : float
        Control delay (s).
    seed : int
        Seed of the fallback's random choice.
    """

    def __init__(self, hosts: int, paths: int, delay_s: float, seed: int = 0) -> None:
        self.clock = _ToyClock()
        self.rerouted: list[tuple[int, int]] = []
        buckets = [np.arange(k, 65536, paths, dtype=np.int64) for k in range(paths)]
        super().__init__(
            hosts,
            delay_s,
            lambda src, dst: PortTable(list(range(paths)), list(buckets)),
            self.clock.schedule,
            self.clock.now,
            lambda flow, port: self.rerouted.append((flow, port)),
            np.random.default_rng(seed),
        )

    def run_until(self, t_s: float) -> None:
        """Deliver every message due by ``t_s`` (s) and move the clock there."""
        self.clock.run_until(t_s)


class _ToyClock:
    """A minimal event queue: ``schedule(at_s, callback)``, ``now()``, ``run_until(t)``."""

    def __init__(self) -> None:
        self.t = 0.0
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = 0

    def now(self) -> float:
        return self.t

    def schedule(self, at_s: float, callback: Callable[[], None]) -> None:
        heapq.heappush(self._heap, (at_s, self._seq, callback))
        self._seq += 1

    def run_until(self, t_s: float) -> None:
        while self._heap and self._heap[0][0] <= t_s:
            at, _, cb = heapq.heappop(self._heap)
            self.t = at
            cb()
        self.t = max(self.t, t_s)
