"""ARK's reservation protocol without a network: a race, its resolution, and a release.

Three hosts share a control channel with a 5 us delay.  Hosts 0 and 1 both start a KV flow
toward host 2 within 2 us, so both reserve spine 0 before hearing of the other; when the
RESERVE messages arrive, the smaller (timestamp, host id) keeps the spine and the other flow is
re-hashed onto spine 1 (a new source port).  Run: ``python examples/ark_controller.py``.
"""

from __future__ import annotations

from fabricsim.lb.ark import ToyArkPlane


def main() -> None:
    plane = ToyArkPlane(hosts=3, paths=4, delay_s=5e-6)
    p0 = plane.arrive(flow=0, src=0, dst=2, now_s=0.0)
    p1 = plane.arrive(flow=1, src=1, dst=2, now_s=2e-6)
    print(f"t=0 us   flow 0 (host 0) takes spine {plane.key_of(0)} with source port {p0}")
    print(f"t=2 us   flow 1 (host 1) takes spine {plane.key_of(1)} with source port {p1}")
    plane.run_until(20e-6)
    for flow, port in plane.rerouted:
        print(
            f"t=7 us   flow {flow} lost the race: re-routed to spine {plane.key_of(flow)}, port {port}"
        )
    print(
        f"races={plane.races}  tables agree: "
        f"{all(c.table == plane.controllers[0].table for c in plane.controllers)}"
    )
    plane.finish(0)
    plane.run_until(40e-6)
    print(
        f"after flow 0 completes, host 2 sees reserved spines {sorted(plane.controllers[2].table)}"
    )


if __name__ == "__main__":
    main()
