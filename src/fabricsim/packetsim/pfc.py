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

The pathologies of lossless fabrics (:class:`PfcWatch`, one per run, shared by its ports'
components): a **deadlock** (a cycle of paused queues, each waiting for the next: found when
an ingress repeats its XOFF, :meth:`PfcWatch.check`), a **stalled host** (a NIC that stops
draining and pauses its switch port for as long as it stalls, :meth:`Pfc.stall`), and the
switches' **PFC watchdog** (a switch queue paused longer than its timeout drops its data and
ignores pauses until they stop for as long again, SONiC's ``drop`` action).
"""

from __future__ import annotations

from typing import Any

__all__ = ["Pfc", "PfcWatch", "SharedBuffer"]


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
        # the pathologies (PfcWatch): see the fields' notes in __init__
        "watch", "outs", "dog", "storm", "epoch", "last_frame", "max_pause_ps", "in_deadlock",
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
        self.watch: PfcWatch | None = None  # the run's deadlock detector and watchdog
        self.outs: list[Any] = []  # the far end's output ports (where its ingress's bytes wait)
        self.dog = False  # a switch port: the watchdog watches it
        self.storm = False  # the watchdog fired: data dropped, pause frames ignored
        self.epoch = 0  # counts the port's resumes (a watchdog check is for one pause)
        self.last_frame = 0  # the latest pause frame ignored during a storm
        self.max_pause_ps = 0  # the longest pause that ended
        self.in_deadlock = False  # part of a deadlock already found (until it resumes)

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
        watch = self.watch
        if watch is not None and not self.in_deadlock and not watch.halted:
            watch.check(self)  # held over XON half a pause: is it deadlocked?

    # -- the sender: pause frames close and open the port's data gate ---------------------------
    def on_pause(self, pause_ps: int) -> None:
        """A pause frame arrives: stop data for ``pause_ps`` (0: XON, resume now)."""
        now = self.sim.now
        port = self.port
        if pause_ps:
            self.pauses += 1
            if self.storm:  # the watchdog ignores the port's pauses
                self.last_frame = now
                return
            self.pause_tok += 1
            if not port.paused:
                port.paused = True
                self.paused_since = now
                if self.dog:
                    assert self.watch is not None  # a watchdog is set with its watch
                    self.sim.at(now + self.watch.watchdog_ps, self._dog, self.epoch)
            self.sim.at(now + pause_ps, self._expire, self.pause_tok)
        elif port.paused and not self.storm:
            self._resume()

    def _expire(self, tok: int) -> None:
        if tok == self.pause_tok and self.port.paused and not self.storm:
            self._resume()

    def _resume(self) -> None:
        port = self.port
        port.paused = False
        self._pause_ends()
        port.restart()

    def _pause_ends(self) -> None:
        d = self.sim.now - self.paused_since
        self.paused_total_ps += d
        if d > self.max_pause_ps:
            self.max_pause_ps = d
        self.epoch += 1
        self.in_deadlock = False

    def paused_ps(self, now: int) -> int:
        """Total time the port has been paused up to ``now``, ps."""
        held = self.port.paused and not self.storm
        return self.paused_total_ps + (now - self.paused_since if held else 0)

    def longest_pause_ps(self, now: int) -> int:
        """The port's longest pause up to ``now`` (one still going counts to now), ps."""
        held = self.port.paused and not self.storm
        return max(self.max_pause_ps, now - self.paused_since if held else 0)

    # -- the pathologies ---------------------------------------------------------------------
    def stall(self, on: bool) -> None:
        """The far end (a host) stops draining (``on``) or drains again: it pauses the port
        for as long as it stalls (XOFF refreshed every half pause, then XON)."""
        if on != self.xoff_sent:
            self.send_pause(on)

    def _dog(self, epoch: int) -> None:
        """The watchdog's look at a pause that began ``watchdog_ps`` ago: still the same pause,
        with data waiting, is a storm; with none it looks again a timeout later."""
        if epoch != self.epoch or self.storm or not self.port.paused:
            return
        sim, watch = self.sim, self.watch
        assert watch is not None  # a watchdog is set with its watch
        if not self.port.qbytes:
            sim.at(sim.now + watch.watchdog_ps, self._dog, epoch)
            return
        watch.triggers += 1
        self._pause_ends()
        self.storm = True
        self.last_frame = sim.now
        self.port.watchdog_drop()
        sim.at(sim.now + watch.watchdog_ps, self._restore, None)

    def _restore(self, _: Any) -> None:
        """The watchdog restores the port once no pause frame came for a timeout."""
        sim = self.sim
        assert self.watch is not None
        due = self.last_frame + self.watch.watchdog_ps
        if sim.now < due:
            sim.at(due, self._restore, None)
            return
        self.storm = False
        self.port.paused = False
        self.port.watchdog_restore()


class PfcWatch:
    """Deadlocks and storms of one run's lossless ports (their components' ``watch``).

    :meth:`check` runs when an ingress repeats its XOFF: the port it pauses is deadlocked when
    the bytes it holds in the far end's paused queues keep its ingress over XON for good, and
    so on for each of those queues (:func:`deadlocked`): none of them can send again.  Each
    deadlock is counted in ``deadlocks`` and the first kept (``found``: the queues, the
    earliest pause, the cycle); without a watchdog ``halted`` is set, and the engine stops the
    run once the deadlock holds every flow still going (:meth:`settle`).  ``watchdog_ps``
    (0: none) is the switches' watchdog timeout, ``triggers`` its firings.  ``names[link]``
    names a link's sending node (the cycle's line).
    """

    __slots__ = ("watchdog_ps", "names", "deadlocks", "triggers", "found", "halted")

    def __init__(self, watchdog_ps: int, names: list[str]) -> None:
        self.watchdog_ps, self.names = watchdog_ps, names
        self.deadlocks = self.triggers = 0
        self.found: tuple[int, int, list[int]] | None = None  # (queues, since ps, cycle links)
        self.halted = False

    def check(self, start: Pfc) -> None:
        """Is the port ``start`` pauses part of a deadlock?  (Reads only: no event.)

        The paused ports reachable from ``start`` through the queues that hold their bytes
        at the far end are the candidates (:func:`deadlocked`); if ``start`` is deadlocked,
        the deadlock is counted (once: its members are marked until they resume) and kept.
        """
        held = _waits([start])
        members = deadlocked(held)
        if start not in members:
            return
        walk: dict[Pfc, int] = {}
        x = start
        while x not in walk:  # every member waits on one: the walk closes a cycle
            walk[x] = len(walk)
            by = held[x]
            x = max((q for q in by if q in members), key=lambda q: by[q])
        cycle = list(walk)[walk[x] :]
        known = any(y.in_deadlock for y in members)  # one found before, seen from elsewhere
        for y in members:
            y.in_deadlock = True
        if known:
            return
        self.deadlocks += 1
        if self.found is None:
            since = min(y.paused_since for y in members)
            self.found = (len(members), since, [y.port.link for y in cycle])
        if not self.watchdog_ps:
            self.halted = True

    def settle(self, pfcs: list[Pfc]) -> set[Pfc]:
        """Every port of ``pfcs`` paused for good now (the deadlock and the ports it holds
        paused upstream); the line counts them from then on."""
        members = deadlocked(_waits([x for x in pfcs if x.xoff_sent and x.port.paused]))
        if self.found is not None and members:
            _, since, cycle = self.found
            self.found = (len(members), min(since, *(y.paused_since for y in members)), cycle)
        return members

    def line(self) -> str | None:
        """The deadlock found, in one line (None if none was)."""
        if self.found is None:
            return None
        n, since, links = self.found
        nodes = [self.names[x] for x in links]
        cycle = "->".join([*nodes, nodes[0]])
        return f"PFC deadlock: {n} queues paused since {since / 1e9:.3f} ms, cycle: {cycle}"


def _waits(starts: list[Pfc]) -> dict[Pfc, dict[Pfc | None, int]]:
    """The paused ports reachable from ``starts`` through the queues holding their bytes at
    the far end: per port, those queues' components (None: the watchdog drops there) and the
    bytes it holds in each (empty: a port that sends, or will)."""
    held: dict[Pfc, dict[Pfc | None, int]] = {}
    stack = list(starts)
    while stack:
        x = stack.pop()
        if x in held:
            continue
        by: dict[Pfc | None, int] = {}
        held[x] = by
        if not (x.xoff_sent and x.port.paused) or x.storm:
            continue
        for q in x.outs:
            b = q.bytes_from(x)
            if b:
                by[q.pfc] = by.get(q.pfc, 0) + b
                if q.pfc is not None:
                    stack.append(q.pfc)
    return held


def deadlocked(held: dict[Pfc, dict[Pfc | None, int]]) -> set[Pfc]:
    """The ports of ``held`` (:func:`_waits`) paused for good.

    A candidate stays while the bytes it holds in the other candidates' queues keep its
    ingress from XON for good: all it holds (nothing of it can leave, so it never releases a
    byte), or more than the highest XON its ingress can have.  Candidates that fail are
    dropped until none does; a port paused by a stalled host (nothing held) never stays.
    """
    members = {x for x, by in held.items() if by}
    while True:
        out = [x for x in members if not _stuck(x, held[x], members)]
        if not out:
            return members
        members.difference_update(out)


def _stuck(x: Pfc, by: dict[Pfc | None, int], members: set[Pfc]) -> bool:
    """Do the bytes ``x`` holds in the queues of ``members`` keep its ingress paused for good?"""
    stuck = sum(b for q, b in by.items() if q in members)
    if stuck == sum(by.values()):
        return stuck > 0
    pool = x.pool
    ceiling = x.xon if pool is None else int(pool.alpha * pool.size) - x.xon
    return stuck > ceiling
