"""The reference rate solver of the flow engine (``engine.flow_solver: reference``).

Every settle re-solves max-min fairness for all active connections at once
(:func:`fabricsim.flowsim.maxmin.maxmin_rates`), and time advances eagerly: every step moves
every connection's bytes.  Plain and slow (a run costs about flows x hosts); kept as the
oracle the incremental kernel (:mod:`fabricsim.flowsim.kernel`) is tested against.  Same
interface as :class:`fabricsim.flowsim.kernel.MaxMinKernel`.

Active connections live in fixed-width slot arrays (link ids and coefficients, padded with a
dummy link of infinite capacity), so adding or removing one never reallocates.
"""

from __future__ import annotations

import math

import numpy as np

from fabricsim.flowsim.maxmin import maxmin_rates


class ReferenceRates:
    """Connections in slots and their rates, re-solved globally (see the module docstring)."""

    def __init__(self, capacity: np.ndarray) -> None:
        self.nlinks = len(capacity)
        self.capacity = np.append(np.asarray(capacity, dtype=np.float64), np.inf)
        self.pad = self.nlinks
        self.width = 8
        self.link_bytes = np.zeros(self.nlinks + 1)
        self._alloc(64)
        self.solves = 0
        self.global_solves = 0

    # -- slot storage ----------------------------------------------------------------------
    def _alloc(self, slots: int) -> None:
        self.links = np.full((slots, self.width), self.pad, dtype=np.int64)
        self.coef = np.zeros((slots, self.width))
        self.remaining = np.zeros(slots)
        self.rate = np.zeros(slots)  # bytes per second
        self.cap = np.full(slots, np.inf)
        self.active = np.zeros(slots, dtype=bool)
        self.free = list(range(slots - 1, -1, -1))

    def _grow(self, slots: int, width: int) -> None:
        old = (self.links, self.coef, self.remaining, self.rate, self.cap, self.active)
        n_old, w_old = old[0].shape
        self.width = width
        self._alloc(slots)
        self.links[:n_old, :w_old] = old[0]
        self.coef[:n_old, :w_old] = old[1]
        self.remaining[:n_old], self.rate[:n_old], self.cap[:n_old] = old[2], old[3], old[4]
        self.active[:n_old] = old[5]
        self.free = [s for s in range(slots - 1, -1, -1) if not self.active[s]]

    def _write(self, s: int, links: np.ndarray, coefs: np.ndarray, cap_bps: float) -> None:
        self.cap[s] = cap_bps
        if len(links) > self.width:
            self._grow(len(self.active), max(len(links), 2 * self.width))
        self.links[s, :] = self.pad
        self.coef[s, :] = 0.0
        self.links[s, : len(links)] = links
        self.coef[s, : len(links)] = coefs

    # -- connections -----------------------------------------------------------------------
    def add(
        self, links: np.ndarray, coefs: np.ndarray, cap_bps: float, wire_bytes: float, now: float
    ) -> int:
        if not self.free:
            self._grow(2 * len(self.active), self.width)
        s = self.free.pop()
        self.remaining[s] = wire_bytes
        self.active[s] = True
        self._write(s, links, coefs, cap_bps)
        return s

    def reroute(
        self, slot: int, links: np.ndarray, coefs: np.ndarray, cap_bps: float, now: float
    ) -> None:
        self._write(slot, links, coefs, cap_bps)

    def remove(self, slot: int, now: float) -> None:
        left = max(float(self.remaining[slot]), 0.0)  # at most 1 ns of transfer (completion eps)
        if left > 0:  # the last bytes go out with the completion: count them on the links
            np.add.at(self.link_bytes, self.links[slot], self.coef[slot] * left)
        self.active[slot] = False
        self.rate[slot] = 0.0
        self.remaining[slot] = 0.0
        self.free.append(slot)

    def rate_bps(self, slot: int) -> float:
        return float(self.rate[slot] * 8.0)

    def remaining_bytes(self, slot: int, now: float) -> float:
        return float(self.remaining[slot])

    def finalize(self, now: float) -> None:
        """Nothing to do: bytes are moved at every step."""

    # -- time ------------------------------------------------------------------------------
    def next_done(self, now: float) -> float:
        act = np.flatnonzero(self.active & (self.rate > 0))
        if not len(act):
            return math.inf
        return now + float((self.remaining[act] / self.rate[act]).min())

    def advance(self, now: float, t: float, clamp: bool) -> None:
        dt = t - now
        if dt > 0:
            moved = self.rate * dt
            left = np.maximum(self.remaining, 0.0)
            if clamp:  # a forced step: a connection sends at most what it has left
                moved = np.minimum(moved, left)
            self.remaining -= moved
            moving = np.flatnonzero(self.rate > 0)
            if len(moving):  # per-link byte counters: an independent conservation check
                # a step past a completion (dt quantized by the float clock) sends nothing
                # beyond what was left: count what was sent, not rate x dt
                sent = np.minimum(moved[moving], left[moving])
                self.link_bytes += np.bincount(
                    self.links[moving].ravel(),
                    weights=(self.coef[moving] * sent[:, None]).ravel(),
                    minlength=len(self.link_bytes),
                )

    def done(self, now: float) -> list[int]:
        act = np.flatnonzero(self.active)
        if not len(act):
            return []
        eps = np.maximum(1e-6, 1e-9 * self.rate[act])  # 1 ns of transfer, or a micro-byte
        return [int(s) for s in act[self.remaining[act] <= eps]]

    # -- rates -----------------------------------------------------------------------------
    def settle(self, now: float) -> None:
        self.solves += 1
        self.global_solves += 1
        idx = np.flatnonzero(self.active)
        self.rate[:] = 0.0
        if len(idx):
            w = self.width
            rows = np.repeat(np.arange(len(idx)), w)
            cols = self.links[idx].ravel()
            coef = self.coef[idx].ravel()
            keep = coef > 0
            r = maxmin_rates(
                len(idx), rows[keep], cols[keep], coef[keep], self.capacity, self.cap[idx] * 1.0
            )
            self.rate[idx] = r / 8.0  # bytes per second

    def link_loads(self, every: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """(links, bits/s on each): every link, always."""
        nl = self.nlinks
        idx = np.flatnonzero(self.active)
        load = np.bincount(
            self.links[idx].ravel(),
            weights=(self.coef[idx] * self.rate[idx, None] * 8).ravel(),
            minlength=nl + 1,
        )[:nl]
        return np.arange(nl), load
