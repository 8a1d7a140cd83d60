"""ARK's reservation protocol without a network: a race, its resolution, and a release.

Three hosts share a control channel with a 5 us delay.  Hosts 0 and 1 both start a KV flow
toward host 2 within 2 us, so both reserve spine 0 before hearing of the other; when the
RESERVE messages arrive, the smaller (timestamp, host id) keeps the spine and the other flow is
re-hashed onto spine 1 (a new source port).  The control plane runs on the standard library's
event scheduler (``sched``) with a virtual clock.  Run: ``python examples/ark_controller.py``.
"""

from __future__ import annotations

import sched

import numpy as np

from fabricsim.lb.ark import ArkControlPlane, PortTable

PATHS = 4  # spines; unit k is reached by source ports k, k + 4, k + 8, ...


class VirtualClock:
    """``sched``'s clock: time moves only when the scheduler waits for its next event."""

    def __init__(self) -> None:
        self.t = 0.0

    def time(self) -> float:
        return self.t

    def sleep(self, dt: float) -> None:
        self.t += dt


def main() -> None:
    clock = VirtualClock()
    events = sched.scheduler(clock.time, clock.sleep)
    ports = [np.arange(k, 65536, PATHS, dtype=np.int64) for k in range(PATHS)]
    rerouted: list[tuple[int, int]] = []
    plane = ArkControlPlane(
        hosts=3,
        delay_s=5e-6,
        tables=lambda src, dst: PortTable(list(range(PATHS)), list(ports)),
        schedule=lambda at_s, callback: events.enterabs(at_s, 0, callback),
        now=clock.time,
        reroute=lambda flow, port: rerouted.append((flow, port)),
        rng=np.random.default_rng(0),
    )
    p0 = plane.arrive(flow=0, src=0, dst=2, now_s=0.0)
    print(f"t=0 us   flow 0 (host 0) takes spine {plane.key_of(0)} with source port {p0}")
    clock.t = 2e-6  # flow 0's RESERVE reaches the others at 5 us: host 1 has not heard of it
    p1 = plane.arrive(flow=1, src=1, dst=2, now_s=clock.t)
    print(f"t=2 us   flow 1 (host 1) takes spine {plane.key_of(1)} with source port {p1}")
    events.run()
    for flow, port in rerouted:
        spine = plane.key_of(flow)
        print(f"t=7 us   flow {flow} lost the race: re-routed to spine {spine}, port {port}")
    tables = [c.table for c in plane.controllers]
    print(f"races={plane.races}  tables agree: {all(t == tables[0] for t in tables)}")
    plane.finish(0)
    events.run()
    print(
        f"after flow 0 completes, host 2 sees reserved spines {sorted(plane.controllers[2].table)}"
    )


if __name__ == "__main__":
    main()
