"""PFC's switch behaviours in a packet run, as the engine sets them up and reads them back.

* **Input-port arbitration** (``switch.pfc_arbitration``): each lossless switch port serves
  its data round robin between the ingress ports it came over
  (:class:`~fabricsim.packetsim.ports.InputArbiter`), or in arrival order (``fifo``);
* **deadlock detection** (always on with PFC): a :class:`~fabricsim.packetsim.pfc.PfcWatch`
  shared by every port's component; without a watchdog the run stops once every unfinished
  flow waits on the deadlocked queues (:func:`deadlock_holds_all`);
* **the PFC watchdog** (``switch.pfc_watchdog_ms``) at the switches' ports and the **hosts
  that stop draining** (``switch.pfc_stalled_hosts``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fabricsim.config.models import SwitchConfig
from fabricsim.errors import ConfigError
from fabricsim.packetsim.calendar import Sim
from fabricsim.packetsim.checks import duration_ps, time_ps
from fabricsim.packetsim.pfc import PfcWatch
from fabricsim.packetsim.ports import HostPort, Port
from fabricsim.topology.fabric import Fabric
from fabricsim.units import ps_to_s

__all__ = ["deadlock_holds_all", "pfc_summary", "watch_lossless"]


def watch_lossless(
    sim: Sim, fab: Fabric, sw: SwitchConfig, ports: list[Port], nic_tier: list[bool]
) -> PfcWatch:
    """Set up arbitration, the watch, the watchdog and the stalls on a lossless fabric."""
    ms = sw.pfc_watchdog_ms
    wd = duration_ps(ms * 1e3, "switch.pfc_watchdog_ms") if ms else 0
    watch = PfcWatch(wd, [fab.node_names[int(n)] for n in fab.link_src])
    out_of: dict[int, list[Port]] = {}
    for link, port in enumerate(ports):
        out_of.setdefault(int(fab.link_src[link]), []).append(port)
    for link, port in enumerate(ports):
        pfc = port.pfc_kept
        assert pfc is not None
        pfc.watch = watch
        far = int(fab.link_dst[link])  # (a host's NIC takes what arrives: no queue)
        pfc.outs = out_of.get(far, []) if far >= fab.num_hosts else []
        at_switch = not isinstance(port, HostPort) and not nic_tier[int(fab.link_src[link])]
        pfc.dog = at_switch and wd > 0
        if at_switch and sw.pfc_arbitration == "round_robin":
            port.set_arbitration()
    hosts = {name: h for h, name in enumerate(fab.host_names)}
    for stall in sw.pfc_stalled_hosts:
        if stall.host not in hosts:
            raise ConfigError(
                f"switch.pfc_stalled_hosts: unknown host '{stall.host}'; names look like "
                f"'{fab.host_names[-1]}'"
            )
        pfc = ports[int(fab.host_downlink[hosts[stall.host]])].pfc_kept
        assert pfc is not None  # a lossless fabric: every port has its PFC state
        sim.at(time_ps(stall.at_s, "switch.pfc_stalled_hosts.at_s"), pfc.stall, True)
        if stall.until_s is not None:
            sim.at(time_ps(stall.until_s, "switch.pfc_stalled_hosts.until_s"), pfc.stall, False)
    return watch


def deadlock_holds_all(
    watch: PfcWatch, ports: list[Port], fab: Fabric, src: np.ndarray, waiting: np.ndarray
) -> bool:
    """After a deadlock: does every flow still going (``waiting``: their ids, ``src``: every
    flow's source host) wait on it -- data in a queue paused for good, or a source whose
    uplink is?  Then no flow can finish and the run stops; flows clear of it run on."""
    members = watch.settle([p.pfc_kept for p in ports if p.pfc_kept is not None])
    stuck_hosts, stuck_flows = set(), set()
    for m in members:
        port = m.port
        if isinstance(port, HostPort):
            stuck_hosts.add(int(fab.link_src[port.link]))
        for pkt in port.queued(False):
            stuck_flows.add(pkt.pdc.flow)
    return all(f in stuck_flows or int(src[f]) in stuck_hosts for f in waiting.tolist())


def pfc_summary(watch: PfcWatch | None, ports: list[Port], now: int) -> dict[str, Any]:
    """The summary's PFC pathology keys: the longest pause of any port, s, the deadlocks
    found and the watchdog's firings."""
    pfcs = [p.pfc_kept for p in ports if p.pfc_kept is not None]
    longest = max((c.longest_pause_ps(now) for c in pfcs), default=0)
    return {
        "pfc_max_pause_s": ps_to_s(longest),
        "pfc_deadlocks": watch.deadlocks if watch is not None else 0,
        "pfc_watchdog_triggers": watch.triggers if watch is not None else 0,
    }
