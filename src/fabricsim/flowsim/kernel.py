# cython: boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""The flow engine's incremental max-min kernel (``engine.flow_solver: incremental``).

Connections live in slots, each with the links it uses and a coefficient on each; both
directions of that incidence are kept up to date as connections come and go
(:class:`fabricsim.flowsim.incidence.Incidence`, the kernel's base class).

**Rates** are max-min fair, kept exact by repairing only what an event breaks.  The rates are
max-min fair exactly when every connection has a *bottleneck*: its cap, or a saturated link on
which no connection has a higher rate (positive coefficients make this the classical
characterisation).  Each slot remembers its bottleneck (``bneck``: a link, ``CAP``, or
``UNKNOWN``).  An event seeds a set ``S`` (new or rerouted connections) and a set of changed
links (a departed connection's links).  :meth:`MaxMinKernel.settle` then repeats:

1. water-fill ``S`` (progressive filling, all of ``S`` rising together from zero) on the
   capacities the connections outside ``S`` leave;
2. on every link ``S`` crosses and every changed link, look for connections outside ``S``
   whose bottleneck no longer holds: their bottleneck link is no longer saturated or carries
   a faster member of ``S``, or a member of ``S`` is bottlenecked on a link where they are
   faster;
3. add them to ``S``; stop when none is found.

At the fixpoint every connection has a valid bottleneck, so the rates are the max-min fair
ones.  When ``S`` grows past ``fallback`` of the active connections the kernel water-fills all
of them at once (the same filling with nothing held fixed).  Rates are compared with a relative
tolerance of ``1e-9``; sums over a link are recomputed from its members, never carried along,
so no rounding drifts over millions of events.

**Time** advances lazily: a slot's remaining bytes are brought up to date (and its bytes added
to the per-link counters) only when its rate changes or it completes.  Completion times sit in
a binary heap with a version per slot; a changed rate bumps the version and pushes a new entry,
stale ones are dropped when they surface.  A connection completes within 1 ns of transfer of
its last byte, as the reference solver.

Units: rates in bits/s (``rate``, ``cap``, ``capacity``), bytes in bytes, time in seconds.
"""

from __future__ import annotations

import math

import numpy as np

from fabricsim.flowsim.incidence import Incidence, grown

# perf: module constants are C values when compiled (kernel.pxd), not global lookups
_CAP = -1
_UNKNOWN = -2
_EPS = 1e-9
_DONE_S = 1e-9  # a connection completes when its last byte is at most 1 ns away
_INF = math.inf

CAP = _CAP
"""``bneck`` of a connection at its rate cap (or cap 0: it never moves)."""
UNKNOWN = _UNKNOWN
"""``bneck`` not known (a fresh slot): any check that meets it re-solves the connection."""


class MaxMinKernel(Incidence):
    """Connections, links and their max-min fair rates, kept up to date event by event.

    Parameters
    ----------
    capacity
        Capacity of every link, bits/s (0 for a failed link).
    fallback
        Fraction of the active connections past which :meth:`settle` re-solves all of them.

    Examples
    --------
    Two connections share link 0 (10 bits/s); the second also crosses link 1 (2 bits/s):

    >>> k = MaxMinKernel(np.array([10.0, 2.0]))
    >>> a = k.add(np.array([0]), np.array([1.0]), math.inf, 100.0, 0.0)
    >>> b = k.add(np.array([0, 1]), np.array([1.0, 1.0]), math.inf, 100.0, 0.0)
    >>> k.settle(0.0)
    >>> k.rate_bps(a), k.rate_bps(b)
    (8.0, 2.0)
    >>> k.remove(b, 0.0); k.settle(0.0); k.rate_bps(a)
    10.0
    """

    def __init__(self, capacity: np.ndarray, fallback: float = 0.5) -> None:
        super().__init__(len(capacity))
        self.capacity = np.asarray(capacity, dtype=np.float64).copy()
        self.tol = _EPS * np.maximum(self.capacity, 1.0)
        self.fallback = fallback
        self.link_bytes = np.zeros(self.nlinks)
        # per-link scratch of settle()
        self.lmark = np.zeros(self.nlinks, dtype=np.int64)
        self.lrem = np.zeros(self.nlinks)
        self.ldem = np.zeros(self.nlinks)
        self.lbuf = np.zeros(self.nlinks, dtype=np.int64)
        self.nl = 0
        self.abuf = np.zeros(self.nlinks, dtype=np.int64)  # water-filling: links with demand
        self.satb = np.zeros(self.nlinks, dtype=np.int64)  # water-filling: saturated this round
        self.mfirst = np.zeros(self.nlinks, dtype=np.int64)  # a link's members in mslot/mcoef
        self.mcnt = np.zeros(self.nlinks, dtype=np.int64)
        self.mslot = np.zeros(1024, dtype=np.int64)
        self.mcoef = np.zeros(1024)
        self.dmark = np.zeros(self.nlinks, dtype=np.int64)  # == depoch: demand summed again
        self.depoch = 0
        self.epoch = 0  # settle() passes: smark == epoch marks the set
        self.lepoch = 0  # water-fill passes: lmark == lepoch marks the set's links
        self.nlast = 0  # changed links the last settle() looked at
        # completion heap: (time, slot, version)
        self.ht = np.zeros(256)
        self.hs = np.zeros(256, dtype=np.int64)
        self.hv = np.zeros(256, dtype=np.int64)
        self.hsize = 0
        self.nactive = 0
        self.nseed = 0
        self.solves = 0  # settle() calls
        self.global_solves = 0  # of which re-solved every connection
        self.set_total = 0  # connections re-solved, summed over settle() calls
        self.fill_rounds = 0  # water-filling levels, summed
        # per slot (grown by _alloc)
        i64, f64, i8 = np.int64, np.float64, np.int8
        self.cap: np.ndarray = np.zeros(0, dtype=f64)  # rate cap, bits/s
        self.rate: np.ndarray = np.zeros(0, dtype=f64)  # bits/s
        self.rtry: np.ndarray = np.zeros(0, dtype=f64)  # settle(): the set's new rates
        self.remaining: np.ndarray = np.zeros(0, dtype=f64)  # bytes left at t_upd
        self.t_upd: np.ndarray = np.zeros(0, dtype=f64)  # when remaining was brought up to date
        self.bneck: np.ndarray = np.zeros(0, dtype=i64)  # bottleneck link, _CAP or _UNKNOWN
        self.version: np.ndarray = np.zeros(0, dtype=i64)  # bumped when the finish time moves
        self.active: np.ndarray = np.zeros(0, dtype=i8)
        self.smark: np.ndarray = np.zeros(0, dtype=i64)  # == epoch: in settle()'s set
        self.frozen: np.ndarray = np.zeros(0, dtype=i8)  # water-filling: rate fixed
        self.sbuf: np.ndarray = np.zeros(0, dtype=i64)  # settle()'s set
        self.cbuf: np.ndarray = np.zeros(0, dtype=i64)  # water-filling: capped members by cap
        self.fbuf: np.ndarray = np.zeros(0, dtype=i64)  # water-filling: stopped this round
        self.seed: np.ndarray = np.zeros(0, dtype=i64)  # slots added or rerouted since settle()
        self.free: list[int] = []
        self._alloc(64, 8)

    # -- storage ----------------------------------------------------------------------------
    def _alloc(self, slots: int, width: int) -> None:
        """Room for ``slots`` connections of up to ``width`` links (contents kept)."""
        old, w_old = self.nslots, self.width
        Incidence._alloc(self, slots, width)
        self.cap = grown(self.cap, slots, _INF)
        self.rate = grown(self.rate, slots, 0.0)
        self.rtry = grown(self.rtry, slots, 0.0)
        self.remaining = grown(self.remaining, slots, 0.0)
        self.t_upd = grown(self.t_upd, slots, 0.0)
        self.bneck = grown(self.bneck, slots, _UNKNOWN)
        self.version = grown(self.version, slots, 0)
        self.active = grown(self.active, slots, 0)
        self.smark = grown(self.smark, slots, 0)
        self.frozen = grown(self.frozen, slots, 0)
        self.sbuf = grown(self.sbuf, slots, 0)
        self.cbuf = grown(self.cbuf, slots, 0)
        self.fbuf = grown(self.fbuf, slots, 0)
        self.seed = grown(self.seed, slots, 0)
        if width == w_old:  # more slots: the new ones go on the free list, highest first
            self.free = list(range(slots - 1, old - 1, -1)) + self.free
        else:  # wider rows (the reference solver's rule: every inactive slot, highest first)
            self.free = [s for s in range(slots - 1, -1, -1) if not self.active[s]]

    def _seed(self, slot: int) -> None:
        if self.nseed == len(self.seed):
            self.seed = np.concatenate([self.seed, np.zeros(len(self.seed), dtype=np.int64)])
        self.seed[self.nseed] = slot
        self.nseed += 1

    # -- connections ------------------------------------------------------------------------
    def add(
        self, links: np.ndarray, coefs: np.ndarray, cap_bps: float, wire_bytes: float, now: float
    ) -> int:
        """A new connection over ``links`` (coefficients ``coefs``, distinct links), capped at
        ``cap_bps``, with ``wire_bytes`` to send; returns its slot.  Rates change at the next
        :meth:`settle`."""
        if not self.free:
            self._alloc(2 * self.nslots, self.width)
        slot = self.free.pop()
        self.active[slot] = 1  # before attaching: a wider table keeps it off the free list
        self._attach(slot, links, coefs)
        self.cap[slot] = cap_bps
        self.rate[slot] = 0.0
        self.remaining[slot] = wire_bytes
        self.t_upd[slot] = now
        self.bneck[slot] = _UNKNOWN
        self.version[slot] += 1
        self.nactive += 1
        self._seed(slot)
        return slot

    def reroute(
        self, slot: int, links: np.ndarray, coefs: np.ndarray, cap_bps: float, now: float
    ) -> None:
        """Move an active connection onto other links (and cap)."""
        self._integrate(slot, now)
        self._detach(slot)
        self._attach(slot, links, coefs)
        self.cap[slot] = cap_bps
        self.bneck[slot] = _UNKNOWN
        self._seed(slot)

    def remove(self, slot: int, now: float) -> None:
        """A connection completes: its last bytes are counted on its links, its slot freed."""
        self._integrate(slot, now)
        left = max(self.remaining[slot], 0.0)
        if left > 0:
            for c in range(self.deg[slot]):
                self.link_bytes[self.links[slot, c]] += self.coef[slot, c] * left
        self._detach(slot)
        self.active[slot] = 0
        self.rate[slot] = 0.0
        self.remaining[slot] = 0.0
        self.bneck[slot] = _UNKNOWN
        self.version[slot] += 1
        self.nactive -= 1
        self.free.append(slot)

    def rate_bps(self, slot: int) -> float:
        return float(self.rate[slot])

    def remaining_bytes(self, slot: int, now: float) -> float:
        """Bytes the connection in ``slot`` has left at ``now`` (may dip below 0 by rounding)."""
        return float(self.remaining[slot] - self.rate[slot] / 8.0 * (now - self.t_upd[slot]))

    def _integrate(self, slot: int, now: float) -> None:
        dt = now - self.t_upd[slot]
        r = self.rate[slot] / 8.0
        if dt > 0 and r > 0:
            moved = r * dt
            left = max(self.remaining[slot], 0.0)
            sent = min(moved, left)
            self.remaining[slot] -= moved
            for c in range(self.deg[slot]):
                self.link_bytes[self.links[slot, c]] += self.coef[slot, c] * sent
        self.t_upd[slot] = now

    def finalize(self, now: float) -> None:
        """Bring every active connection's bytes and the link counters up to ``now``."""
        for slot in range(self.nslots):
            if self.active[slot]:
                self._integrate(slot, now)

    # -- completions ----------------------------------------------------------------------------
    def advance(self, now: float, t: float, clamp: bool) -> None:
        """Nothing to do: bytes move lazily, when a rate changes or a connection completes."""

    def next_done(self, now: float) -> float:
        """When the next connection completes at the current rates (``inf``: none)."""
        while self.hsize:
            s = self.hs[0]
            if self.version[s] == self.hv[0] and self.active[s]:
                return float(self.ht[0])
            self._heap_pop()
        return _INF

    def done(self, now: float) -> list[int]:
        """Slots that complete at ``now`` (within 1 ns of their last byte), in slot order."""
        out: list[int] = []
        while self.hsize and self.ht[0] <= now + _DONE_S:
            s = self.hs[0]
            if self.version[s] == self.hv[0] and self.active[s]:
                out.append(int(s))
                self.version[s] += 1  # taken: a later pop of an older entry is stale
            self._heap_pop()
        out.sort()
        return out

    def _push_done(self, slot: int) -> None:
        r = self.rate[slot] / 8.0
        if r <= 0:
            return
        t = self.t_upd[slot] + max(self.remaining[slot], 0.0) / r
        if self.hsize == len(self.ht):
            if self.hsize > 4 * self.nactive + 64:
                self._heap_rebuild()
            if self.hsize == len(self.ht):
                self.ht = np.concatenate([self.ht, np.zeros(self.hsize)])
                self.hs = np.concatenate([self.hs, np.zeros(self.hsize, dtype=np.int64)])
                self.hv = np.concatenate([self.hv, np.zeros(self.hsize, dtype=np.int64)])
        i = self.hsize
        self.hsize += 1
        v = self.version[slot]
        while i > 0:
            up = (i - 1) >> 1
            if self.ht[up] <= t:
                break
            self.ht[i], self.hs[i], self.hv[i] = self.ht[up], self.hs[up], self.hv[up]
            i = up
        self.ht[i], self.hs[i], self.hv[i] = t, slot, v

    def _heap_pop(self) -> None:
        self.hsize -= 1
        n = self.hsize
        if n == 0:
            return
        t, s, v = self.ht[n], self.hs[n], self.hv[n]
        i = 0
        while True:
            child = 2 * i + 1
            if child >= n:
                break
            if child + 1 < n and self.ht[child + 1] < self.ht[child]:
                child += 1
            if self.ht[child] >= t:
                break
            self.ht[i], self.hs[i], self.hv[i] = self.ht[child], self.hs[child], self.hv[child]
            i = child
        self.ht[i], self.hs[i], self.hv[i] = t, s, v

    def _heap_rebuild(self) -> None:
        """Drop the stale entries (the heap holds more than four per active connection)."""
        self.hsize = 0
        for slot in range(self.nslots):
            if self.active[slot]:
                self._push_done(slot)

    # -- rates ------------------------------------------------------------------------------------
    def settle(self, now: float) -> None:
        """Make the rates max-min fair again after the adds, reroutes and removals since the
        last call; changed rates take effect at ``now``."""
        self.solves += 1
        self.epoch += 1
        ep = self.epoch
        n = 0
        for k in range(self.nseed):
            s = self.seed[k]
            if self.active[s] and self.smark[s] != ep:
                self.smark[s] = ep
                self.sbuf[n] = s
                n += 1
        self.nseed = 0
        limit = self.fallback * self.nactive
        while True:
            if n > limit and n > 8:
                n = self._seed_all(ep)
                self._waterfill(n, ep)
                self.global_solves += 1
                break
            self._waterfill(n, ep)
            grown = self._check(n, ep)
            if grown == n:
                break
            n = grown
        self._apply(n, now)
        self.set_total += n
        self.nlast = self.nchanged
        self.cepoch += 1
        self.nchanged = 0

    def _seed_all(self, ep: int) -> int:
        n = 0
        for s in range(self.nslots):
            if self.active[s]:
                self.smark[s] = ep
                self.sbuf[n] = s
                n += 1
        return n

    def _touch(self, n: int) -> None:
        """``lbuf[:nl]``: the links the set ``sbuf[:n]`` crosses (``lmark`` = this pass)."""
        self.nl = 0
        self.lepoch += 1
        le = self.lepoch
        for k in range(n):
            s = self.sbuf[k]
            for c in range(self.deg[s]):
                link = self.links[s, c]
                if self.lmark[link] != le:
                    self.lmark[link] = le
                    self.lbuf[self.nl] = link
                    self.nl += 1

    def _waterfill(self, n: int, ep: int) -> None:
        """Progressive filling of ``sbuf[:n]`` on what the other connections leave.

        Sets ``rtry`` (the new rates) and ``bneck`` of the set's members.  Every member still
        rising has the same rate (``level``: they all start from 0 and rise by the same steps),
        so a round costs the links with demand left, not the members times their links: each
        link lists its members once (in set order), a link's demand is summed again only when
        one of its members stops, and a member stops when a link it crosses saturates or
        ``level`` reaches its cap (the capped members are visited in the order of their caps).
        The sums and comparisons are the ones of filling member by member, in the same order."""
        self._touch(n)
        integral = self._list_members(n)
        self._residual(ep)
        live = self._start_members(n)
        nc = self._list_capped(n)
        na = self._demand_links()
        cp = 0
        level = 0.0
        while live:
            while cp < nc and self.frozen[self.cbuf[cp]]:
                cp += 1
            step = self._step(cp, nc, na, level)
            if step == _INF:  # no link and no cap: cannot happen for a routed connection
                self._unbounded(n)
                break
            step = max(step, 0.0)
            self.fill_rounds += 1
            ns = self._saturate(na, step)
            level += step
            nf = self._stop_capped(cp, nc, level)
            nf = self._stop_saturated(ns, nf, level)
            live -= nf
            if nf:
                na = self._drop_demand(nf, na, integral)

    def _residual(self, ep: int) -> None:
        """``lrem`` of the set's links: their capacity minus what the others use."""
        for k in range(self.nl):
            link = self.lbuf[k]
            used = 0.0
            start = self.lstart[link]
            for p in range(start, start + self.llen[link]):
                s = self.pool_slot[p]
                if self.smark[s] != ep:
                    used += self.coef[s, self.pool_col[p]] * self.rate[s]
            self.lrem[link] = max(self.capacity[link] - used, 0.0)

    def _start_members(self, n: int) -> int:
        """Every member at rate 0, rising unless its cap is 0 or it crosses a failed link
        (then it never moves); returns how many rise."""
        live = 0
        for k in range(n):
            s = self.sbuf[k]
            self.rtry[s] = 0.0
            self.frozen[s] = 0
            if self.cap[s] <= 0:
                self.frozen[s] = 1
                self.bneck[s] = _CAP
                continue
            for c in range(self.deg[s]):
                link = self.links[s, c]
                if self.capacity[link] <= 0:
                    self.frozen[s] = 1
                    self.bneck[s] = link
                    break
            if not self.frozen[s]:
                live += 1
        return live

    def _list_capped(self, n: int) -> int:
        """``cbuf``: the rising members with a cap, by cap (stable: ties in set order);
        returns how many."""
        nc = 0
        for k in range(n):
            s = self.sbuf[k]
            if not self.frozen[s] and self.cap[s] < _INF:
                self.cbuf[nc] = s
                nc += 1
        if nc > 1:
            capped = np.asarray(self.cbuf)[:nc]
            capped[:] = capped[np.argsort(np.asarray(self.cap)[capped], kind="stable")]
        return nc

    def _demand_links(self) -> int:
        """``abuf``: the set's links with demand (``ldem`` > 0); returns how many."""
        na = 0
        for k in range(self.nl):
            link = self.lbuf[k]
            self._demand(link)
            if self.ldem[link] > 0:
                self.abuf[na] = link
                na += 1
        return na

    def _step(self, cp: int, nc: int, na: int, level: float) -> float:
        """How far ``level`` rises this round: to the next cap (``cbuf[cp]``) or until the
        first link of ``abuf[:na]`` saturates."""
        step = _INF
        if cp < nc:
            step = self.cap[self.cbuf[cp]] - level
        for k in range(na):
            link = self.abuf[k]
            step = min(step, self.lrem[link] / self.ldem[link])
        return step

    def _unbounded(self, n: int) -> None:
        """The rising members at an infinite rate (nothing bounds them)."""
        for k in range(n):
            s = self.sbuf[k]
            if not self.frozen[s]:
                self.rtry[s] = _INF
                self.frozen[s] = 1
                self.bneck[s] = _CAP

    def _saturate(self, na: int, step: float) -> int:
        """The links of ``abuf[:na]`` give ``step`` times their demand; ``satb``: the ones
        now saturated (returns how many)."""
        ns = 0
        for k in range(na):
            link = self.abuf[k]
            self.lrem[link] -= step * self.ldem[link]
            if self.lrem[link] <= self.tol[link]:
                self.satb[ns] = link
                ns += 1
        return ns

    def _stop_capped(self, cp: int, nc: int, level: float) -> int:
        """The capped members from ``cbuf[cp]`` whose cap ``level`` reached stop there
        (``fbuf``, from 0); returns how many."""
        nf = 0
        while cp < nc:
            s = self.cbuf[cp]
            if not self.frozen[s]:
                if level < self.cap[s] * (1 - _EPS):
                    break
                self.rtry[s] = level
                self.frozen[s] = 1
                self.bneck[s] = _CAP
                self.fbuf[nf] = s
                nf += 1
            cp += 1
        return nf

    def _stop_saturated(self, ns: int, nf: int, level: float) -> int:
        """The members still rising on the saturated links ``satb[:ns]`` stop at ``level``,
        bottlenecked on the first saturated link in their own order (``fbuf`` from ``nf``);
        returns the new ``nf``.  The saturated links are left with nothing."""
        for k in range(ns):
            link = self.satb[k]
            start = self.mfirst[link]
            for p in range(start, start + self.mcnt[link]):
                s = self.mslot[p]
                if self.frozen[s]:
                    continue
                self.rtry[s] = level
                self.frozen[s] = 1
                self.fbuf[nf] = s
                nf += 1
                for c in range(self.deg[s]):
                    b = self.links[s, c]
                    if self.lrem[b] <= self.tol[b]:
                        self.bneck[s] = b
                        break
        for k in range(ns):
            self.lrem[self.satb[k]] = 0.0
        return nf

    def _drop_demand(self, nf: int, na: int, integral: bool) -> int:
        """The links of the stopped members ``fbuf[:nf]`` lose their demand; ``abuf[:na]``
        keeps the links with demand left (returns how many)."""
        self.depoch += 1
        for f in range(nf):
            s = self.fbuf[f]
            for c in range(self.deg[s]):
                link = self.links[s, c]
                if self.dmark[link] == self.depoch:
                    continue
                if integral:  # perf: whole coefficients: subtracting is exact
                    self.ldem[link] -= self.coef[s, c]
                else:
                    self.dmark[link] = self.depoch
                    self._demand(link)
        kept = 0
        for k in range(na):
            link = self.abuf[k]
            if self.ldem[link] > 0:
                self.abuf[kept] = link
                kept += 1
        return kept

    def _list_members(self, n: int) -> bool:
        """Each link of ``lbuf[:nl]`` lists the set's members on it, in set order:
        ``mslot``/``mcoef`` from ``mfirst[link]``, ``mcnt[link]`` entries.  Returns whether
        every coefficient is a whole number (then every sum of them is exact)."""
        total = 0
        integral = True
        for k in range(self.nl):
            self.mcnt[self.lbuf[k]] = 0
        for k in range(n):
            s = self.sbuf[k]
            for c in range(self.deg[s]):
                self.mcnt[self.links[s, c]] += 1
            total += self.deg[s]
        if total > len(self.mslot):
            self.mslot = np.zeros(2 * total, dtype=np.int64)
            self.mcoef = np.zeros(2 * total)
        at = 0
        for k in range(self.nl):
            link = self.lbuf[k]
            self.mfirst[link] = at
            at += self.mcnt[link]
            self.mcnt[link] = 0
        for k in range(n):
            s = self.sbuf[k]
            for c in range(self.deg[s]):
                link = self.links[s, c]
                p = self.mfirst[link] + self.mcnt[link]
                a = self.coef[s, c]
                self.mslot[p] = s
                self.mcoef[p] = a
                self.mcnt[link] += 1
                if a % 1.0 != 0.0:
                    integral = False
        return integral

    def _demand(self, link: int) -> None:
        """``ldem[link]``: the coefficients of its members still rising, summed in set order."""
        d = 0.0
        start = self.mfirst[link]
        for p in range(start, start + self.mcnt[link]):
            if not self.frozen[self.mslot[p]]:
                d += self.mcoef[p]
        self.ldem[link] = d

    def _check(self, n: int, ep: int) -> int:
        """Add to ``sbuf`` the connections outside it whose bottleneck the new rates break;
        returns the new size."""
        grown = n
        for k in range(self.nl + self.nchanged):
            link = self.lbuf[k] if k < self.nl else self.changed[k - self.nl]
            if k >= self.nl and self.lmark[link] == self.lepoch:
                continue  # a changed link the set crosses: checked already
            start = self.lstart[link]
            stop = start + self.llen[link]
            used = 0.0
            max_s = 0.0
            min_b = _INF
            others = False
            for p in range(start, stop):
                s = self.pool_slot[p]
                a = self.coef[s, self.pool_col[p]]
                if self.smark[s] == ep:
                    r = self.rtry[s]
                    max_s = max(max_s, r)
                    if self.bneck[s] == link:
                        min_b = min(min_b, r)
                else:
                    r = self.rate[s]
                    others = True
                used += a * r
            if not others:
                continue
            sat = self.capacity[link] - used <= self.tol[link]
            for p in range(start, stop):
                s = self.pool_slot[p]
                if self.smark[s] == ep:
                    continue
                r = self.rate[s]
                b = self.bneck[s]
                # unknown; or a member of S is held below it on this saturated link; or this
                # is its bottleneck and it is no longer saturated or carries a faster member
                bad = (
                    b == _UNKNOWN
                    or (sat and r > min_b * (1 + _EPS))
                    or (b == link and (not sat or max_s > r * (1 + _EPS)))
                )
                if bad:
                    self.smark[s] = ep
                    self.sbuf[grown] = s
                    grown += 1
        return grown

    def _apply(self, n: int, now: float) -> None:
        """The set's new rates take effect at ``now`` (bytes so far at the old rates)."""
        for k in range(n):
            s = self.sbuf[k]
            r = self.rtry[s]
            if r != self.rate[s]:
                self._integrate(s, now)
                self.rate[s] = r
                self.version[s] += 1
                self._push_done(s)

    # -- observation ----------------------------------------------------------------------------
    def link_loads(self, every: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """(links, bits/s on each): the links whose load the last :meth:`settle` may have
        changed (``every``: all links), in link order."""
        if every:
            links = np.arange(self.nlinks)
        else:
            links = np.unique(np.concatenate([self.lbuf[: self.nl], self.changed[: self.nlast]]))
        load = np.zeros(len(links))
        self._loads(links, load)
        return links, load

    def _loads(self, links: np.ndarray, out: np.ndarray) -> None:
        for i in range(len(links)):
            out[i] = self.link_load_bps(links[i])

    def link_load_bps(self, link: int) -> float:
        """Bits/s the active connections put on ``link``."""
        used = 0.0
        start = self.lstart[link]
        for p in range(start, start + self.llen[link]):
            s = self.pool_slot[p]
            used += self.coef[s, self.pool_col[p]] * self.rate[s]
        return used
