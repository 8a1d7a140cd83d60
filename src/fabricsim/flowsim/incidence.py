# cython: boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Which links each connection uses, and which connections each link carries.

The storage under the incremental max-min kernel (:mod:`fabricsim.flowsim.kernel`).
Connections live in slots; each slot lists the links it uses with a coefficient (1 for one
path, a path weight summed per link for a split connection).  Both directions of the incidence
are kept up to date as connections come and go instead of being rebuilt per event:

* slot -> links: fixed-width rows (``links``, ``coef``; ``deg`` entries used), the width grows
  when a connection needs more;
* link -> slots: one segment per link in a shared pool (``pool_slot``, ``pool_col``), removal by
  swapping in the segment's last entry (``pos`` holds each entry's place), a full segment moves
  to the pool's end at twice the size, the pool is compacted when it runs out.

The links a connection leaves are remembered (``changed[:nchanged]``) until the kernel has
looked at them.
"""

from __future__ import annotations

import numpy as np


class Incidence:
    """Slots of connections and the links each one uses, kept in both directions.

    Parameters
    ----------
    nlinks
        Number of links (ids ``0 .. nlinks - 1``).
    """

    def __init__(self, nlinks: int) -> None:
        self.nlinks = nlinks
        # link -> slots
        self.lstart = np.zeros(nlinks, dtype=np.int64)
        self.llen = np.zeros(nlinks, dtype=np.int64)
        self.lcap = np.zeros(nlinks, dtype=np.int64)
        self.pool_slot = np.zeros(max(1024, 4 * nlinks), dtype=np.int64)
        self.pool_col = np.zeros(max(1024, 4 * nlinks), dtype=np.int64)
        self.pool_top = 0
        # links that connections left (cmark == cepoch: listed in changed[:nchanged])
        self.changed = np.zeros(nlinks, dtype=np.int64)
        self.nchanged = 0
        self.cmark = np.zeros(nlinks, dtype=np.int64)
        self.cepoch = 1
        # slot -> links (grown by _alloc)
        self.width = 0
        self.nslots = 0
        self.links: np.ndarray = np.zeros((0, 0), dtype=np.int64)  # link ids, -1 past deg
        self.coef: np.ndarray = np.zeros((0, 0), dtype=np.float64)  # share on each link
        self.pos: np.ndarray = np.zeros((0, 0), dtype=np.int64)  # place in the link's segment
        self.deg: np.ndarray = np.zeros(0, dtype=np.int64)  # links used

    def _alloc(self, slots: int, width: int) -> None:
        """Rows for ``slots`` connections of up to ``width`` links (contents kept)."""
        old, w_old = self.nslots, self.width
        links = np.full((slots, width), -1, dtype=np.int64)
        coef = np.zeros((slots, width))
        pos = np.zeros((slots, width), dtype=np.int64)
        links[:old, :w_old] = self.links
        coef[:old, :w_old] = self.coef
        pos[:old, :w_old] = self.pos
        self.links, self.coef, self.pos = links, coef, pos
        self.deg = grown(self.deg, slots, 0)
        self.nslots, self.width = slots, width

    def _link_append(self, link: int, slot: int, col: int) -> None:
        n = self.llen[link]
        if n == self.lcap[link]:
            new = max(4, 2 * n)
            if self.pool_top + new > len(self.pool_slot):
                self._compact(new)
            start, top = self.lstart[link], self.pool_top
            for i in range(n):
                self.pool_slot[top + i] = self.pool_slot[start + i]
                self.pool_col[top + i] = self.pool_col[start + i]
            self.lstart[link] = top
            self.lcap[link] = new
            self.pool_top = top + new
        p = self.lstart[link] + n
        self.pool_slot[p] = slot
        self.pool_col[p] = col
        self.pos[slot, col] = n
        self.llen[link] = n + 1

    def _link_remove(self, link: int, slot: int, col: int) -> None:
        start = self.lstart[link]
        last = self.llen[link] - 1
        p = self.pos[slot, col]
        if p != last:
            s2 = self.pool_slot[start + last]
            c2 = self.pool_col[start + last]
            self.pool_slot[start + p] = s2
            self.pool_col[start + p] = c2
            self.pos[s2, c2] = p
        self.llen[link] = last

    def _compact(self, need: int) -> None:
        """Repack every link's segment at the start of a pool with room for ``need`` more."""
        n = np.asarray(self.llen)
        cap = np.asarray(self.lcap)
        used = int(cap.sum())
        size = max(2 * (used + need), len(self.pool_slot))
        start = np.concatenate(([0], np.cumsum(cap)[:-1])).astype(np.int64)
        # perf: one gather for every entry (a loop over 400,000 links took a second at k = 64)
        offset = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
        old = np.repeat(np.asarray(self.lstart), n) + offset
        new = np.repeat(start, n) + offset
        ps = np.zeros(size, dtype=np.int64)
        pc = np.zeros(size, dtype=np.int64)
        ps[new] = np.asarray(self.pool_slot)[old]
        pc[new] = np.asarray(self.pool_col)[old]
        self.lstart = start
        self.pool_slot, self.pool_col, self.pool_top = ps, pc, used

    def _attach(self, slot: int, links: np.ndarray, coefs: np.ndarray) -> None:
        """``slot`` uses ``links`` (distinct) with coefficients ``coefs``."""
        d = len(links)
        if d > self.width:
            self._alloc(self.nslots, max(d, 2 * self.width))
        for c in range(d):
            link = links[c]
            self.links[slot, c] = link
            self.coef[slot, c] = coefs[c]
            self._link_append(link, slot, c)
        self.deg[slot] = d

    def _detach(self, slot: int) -> None:
        """``slot`` leaves its links (each one is marked changed)."""
        for c in range(self.deg[slot]):
            link = self.links[slot, c]
            self._link_remove(link, slot, c)
            self._mark_changed(link)
            self.links[slot, c] = -1
            self.coef[slot, c] = 0.0
        self.deg[slot] = 0

    def _mark_changed(self, link: int) -> None:
        if self.cmark[link] != self.cepoch:
            self.cmark[link] = self.cepoch
            self.changed[self.nchanged] = link
            self.nchanged += 1


def grown(old: np.ndarray, size: int, fill: float) -> np.ndarray:
    """``old`` extended to ``size`` (at least its own length) with ``fill``, same dtype."""
    out = np.full(max(size, len(old)), fill, dtype=np.asarray(old).dtype)
    out[: len(old)] = old
    return out
