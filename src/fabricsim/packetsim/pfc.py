# cython: boundscheck=False, wraparound=False
"""PFC, priority flow control: the component a lossless port holds (a lossy port holds None).

A :class:`Pfc` plays two parts for the port that holds it:

* the **ingress** at its link's far end: ``ing`` counts the data bytes that came over the link
  and wait in the next switch's output queues (:meth:`Pfc.admit` when a packet is queued
  there, :meth:`Pfc.release` when it starts to leave).  At ``xoff`` bytes the far end sends
  the port an XOFF frame, at ``xon`` an XON; each takes the link's delay to arrive.  An XOFF
  is repeated every half pause while the ingress stays above XON.  A packet that finds the
  ingress past ``xoff + hroom`` (the headroom) is dropped: a headroom too small for the link
  shows up as drops.  With a :class:`SharedBuffer` (``pool``: dynamic thresholds) XOFF is the
  pool's threshold at the time, XON that less ``xon`` bytes, and the headroom counts from
  where the pause began;
* the **sender** a pause stops: a pause frame closes the port's data gate (``port.paused``;
  control packets still leave, and the packet on the wire finishes) for ``pause_len`` ps
  (65,535 quanta) unless refreshed or lifted by XON; ``pauses`` counts the XOFF frames that
  arrived and ``paused_total_ps`` the time the gate was closed.

Pause events are rare next to packets: the component holds its port and calendar as plain
objects (no C types), so this module needs none of the others'.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Pfc", "SharedBuffer"]


class SharedBuffer:
    """A switch's buffer shared by its ingress ports (PFC's dynamic thresholds).

    ``used`` counts the bytes its ingresses hold; an ingress pauses its upstream sender when it
    holds ``alpha x (size - used)`` (the free buffer scaled by ``alpha``: the more the switch
    holds, the sooner each ingress pauses), and a packet that would pass ``size`` is dropped.
    """

    __slots__ = ("size", "used", "alpha", "peak")

    def __init__(self, size: int, alpha: float) -> None:
        self.size, self.alpha = size, alpha
        self.used = self.peak = 0

    def threshold(self) -> int:
        """The XOFF threshold of each of its ingresses now, bytes."""
        return int(self.alpha * (self.size - self.used))


class Pfc:
    """PFC state of one lossless port: thresholds, the ingress count, pause timers, counters.

    ``port`` is the port it belongs to (its ``paused`` gate and ``restart``), ``sim`` the
    calendar and ``delay_ps`` the link's delay (a pause frame's trip).

    Examples
    --------
    >>> from fabricsim.packetsim.calendar import Sim
    >>> class Gate:
    ...     paused = False
    ...     def restart(self): pass
    >>> sim = Sim(); pfc = Pfc(Gate(), sim, 1_000)
    >>> pfc.configure(xoff=10_000, xon=5_000, headroom=5_000, pause_ps=100_000)
    >>> pfc.admit(12_000), pfc.xoff_sent, pfc.admit(4_000)  # XOFF at 10 kB; past the headroom
    (True, True, False)
    >>> sim.run(10_000), pfc.port.paused, pfc.pauses  # the frame arrives a link delay later
    (1, True, 1)
    """

    # fmt: off
    __slots__ = (
        "port", "sim", "delay_ps", "xoff", "xon", "hroom", "pause_len", "pool", "ing",
        "peak_ing", "pause_at", "xoff_sent", "refresh_tok", "pause_tok", "paused_since",
        "pauses", "paused_total_ps",
    )
    # fmt: on

    def __init__(self, port: Any, sim: Any, delay_ps: int) -> None:
        self.port, self.sim, self.delay_ps = port, sim, delay_ps
        self.xoff = self.xon = self.hroom = self.pause_len = 0
        self.pool: SharedBuffer | None = None  # dynamic thresholds (None: static)
        self.ing = self.peak_ing = 0
        self.pause_at = 0  # bytes the ingress held when it paused (dynamic headroom)
        self.xoff_sent = False  # the far end has paused the port (and refreshes the pause)
        self.refresh_tok = self.pause_tok = 0  # the latest refresh / expiry timer
        self.paused_since = 0
        self.pauses = self.paused_total_ps = 0

    def configure(
        self, xoff: int, xon: int, headroom: int, pause_ps: int, pool: SharedBuffer | None = None
    ) -> None:
        """Set the thresholds, bytes, and a pause's length, ps.  With ``pool`` (dynamic
        thresholds) ``xoff`` is unused and ``xon`` is the gap below the pool's threshold at
        which the ingress resumes its sender."""
        self.xoff, self.xon, self.hroom, self.pause_len = xoff, min(xon, xoff), headroom, pause_ps
        self.pool = pool
        if pool is not None:
            self.xon = xon

    # -- the ingress: packets that came over the link wait at the next switch -----------------
    def admit(self, size: int) -> bool:
        """Account ``size`` data bytes queued at the far end (False: the packet is dropped)."""
        ing = self.ing + size
        pool = self.pool
        if pool is None:
            if ing > self.xoff + self.hroom:  # the headroom did not cover the pause's trip
                return False
            xoff = self.xoff
        else:
            used = pool.used + size
            if used > pool.size or (self.xoff_sent and ing > self.pause_at + self.hroom):
                return False
            pool.used = used
            if used > pool.peak:
                pool.peak = used
            xoff = pool.threshold()
        self.ing = ing
        if ing > self.peak_ing:
            self.peak_ing = ing
        if ing >= xoff and not self.xoff_sent:
            self.pause_at = ing
            self.send_pause(True)
        return True

    def release(self, size: int) -> None:
        """``size`` data bytes left the far end's queue: the ingress holds them no more."""
        self.ing -= size
        pool = self.pool
        if pool is None:
            xon = self.xon
        else:
            pool.used -= size
            xon = pool.threshold() - self.xon
        if self.xoff_sent and self.ing <= xon:
            self.send_pause(False)

    def send_pause(self, xoff: bool) -> None:
        """The far end sends the port XOFF (or XON): it arrives a link delay later."""
        sim = self.sim
        self.xoff_sent = xoff
        self.refresh_tok += 1
        sim.at(sim.now + self.delay_ps, self.on_pause, self.pause_len if xoff else 0)
        if xoff:
            sim.at(sim.now + self.pause_len // 2, self._refresh, self.refresh_tok)

    def _refresh(self, tok: int) -> None:
        """Half a pause later and still over XON: the far end repeats the XOFF."""
        if tok != self.refresh_tok or not self.xoff_sent:
            return
        sim = self.sim
        sim.at(sim.now + self.delay_ps, self.on_pause, self.pause_len)
        sim.at(sim.now + self.pause_len // 2, self._refresh, tok)

    # -- the sender: pause frames close and open the port's data gate ---------------------------
    def on_pause(self, pause_ps: int) -> None:
        """A pause frame arrives: stop data for ``pause_ps`` (0: XON, resume now)."""
        now = self.sim.now
        port = self.port
        if pause_ps:
            self.pauses += 1
            self.pause_tok += 1
            if not port.paused:
                port.paused = True
                self.paused_since = now
            self.sim.at(now + pause_ps, self._expire, self.pause_tok)
        elif port.paused:
            self._resume()

    def _expire(self, tok: int) -> None:
        if tok == self.pause_tok and self.port.paused:
            self._resume()

    def _resume(self) -> None:
        port = self.port
        port.paused = False
        self.paused_total_ps += self.sim.now - self.paused_since
        port.restart()

    def paused_ps(self, now: int) -> int:
        """Total time the port has been paused up to ``now``, ps."""
        return self.paused_total_ps + (now - self.paused_since if self.port.paused else 0)
