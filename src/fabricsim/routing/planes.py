"""The NIC stage of a path: which plane (``nic.plane_select``), or NVLink first (PXN).

A multi-plane fabric's host reaches the planes through its NIC node (``nic<h>``), whose ports
form the first ECMP stage of every path (:mod:`fabricsim.topology.builders`).  Under
``hash`` the NIC hashes the packet's header like a switch (its own salt), so a connection
keeps one plane per entropy value and NIC spraying spreads its packets over the planes; no
object of this module is needed.  The other rules are a :class:`PlaneChoice`:

* ``round_robin``: the ``c``-th distinct flow key ``(dst, entropy)`` host ``h`` sends goes on
  plane ``(h + c) mod planes`` (so the hosts of a permutation alternate planes, and the values
  a spraying NIC uses alternate too);
* ``pinned``: every packet on ``nic.pinned_plane``.

A plane the NIC cannot reach the destination through (its port or that plane's leaf is down)
is not in the stage's group; the packet then takes the next plane up that is (cyclically).

On a rail-optimized fabric with ``topology.pxn`` a GPU's NIC node has two ports, its rail leaf
and the server's NVSwitch; :class:`PxnChoice` sends traffic for another rail over NVLink
whenever that is one of the stage's equal-cost choices (the destination's rail leaf is as
close to the peer GPU as the spines are: one leaf group, or the same one), and the NVSwitch
hands it to the NIC on the destination's rail (:meth:`Fabric.groups_toward`).

Examples
--------
>>> from fabricsim.config import TopologyConfig
>>> from fabricsim.topology import build_fabric
>>> fab = build_fabric(TopologyConfig(kind="multi_plane", leaves=2, hosts_per_leaf=2))
>>> rr = PlaneChoice(fab, "round_robin")
>>> group = fab.ecmp_group(int(fab.host_leaf[1]), 3)  # host 1's NIC toward host 3
>>> [rr.plane(1, 3, e, group) for e in (7, 8, 7, 9)]
[1, 0, 1, 1]
"""

from __future__ import annotations

import numpy as np

from fabricsim.config.models import Scenario
from fabricsim.errors import ConfigError
from fabricsim.topology.fabric import NVSWITCH, Fabric


def nic_rule(sc: Scenario, fabric: Fabric) -> PlaneChoice | PxnChoice | None:
    """The rule of the fabric's NIC stage, or None when its NICs hash (or it has none)."""
    if fabric.rails:
        return PxnChoice(fabric)
    return PlaneChoice.of(sc, fabric)


class PxnChoice:
    """PXN: a source NIC sends over NVLink when that is one of its choices.

    Examples
    --------
    >>> from fabricsim.config import TopologyConfig
    >>> from fabricsim.topology import build_fabric
    >>> fab = build_fabric(TopologyConfig(kind="rail_optimized", servers=2, rails=2, pxn=True))
    >>> nic = int(fab.host_leaf[0])
    >>> group = fab.ecmp_group(nic, 3)  # GPU 0 of server 0 to GPU 1 of server 1
    >>> [fab.link_names[x] for x in group], fab.link_names[group[PxnChoice(fab).member(0, 3, 0, group)]]
    (['nic0->rail0_leaf0', 'nic0->nvs0'], 'nic0->nvs0')
    """

    def __init__(self, fabric: Fabric) -> None:
        self.to_nvswitch = (fabric.node_tier[fabric.link_dst] == NVSWITCH).tolist()

    def member(self, src: int, dst: int, entropy: int, group) -> int:
        for i, link in enumerate(group):
            if self.to_nvswitch[int(link)]:
                return i
        return 0

    def members(self, src: int, dst: int, entropies: np.ndarray, group) -> np.ndarray:
        return np.full(len(entropies), self.member(src, dst, 0, group), dtype=np.int64)


class PlaneChoice:
    """The ``round_robin`` or ``pinned`` rule of the NICs of one multi-plane fabric."""

    def __init__(self, fabric: Fabric, rule: str, pinned: int = 0) -> None:
        if fabric.node_plane is None:
            raise ValueError("a plane choice needs a multi_plane fabric")
        if not 0 <= pinned < fabric.planes:
            raise ConfigError(
                f"nic.pinned_plane: plane {pinned} does not exist (planes are 0..{fabric.planes - 1})"
            )
        self.rule, self.pinned, self.planes = rule, pinned, fabric.planes
        self.link_plane = fabric.node_plane[fabric.link_dst].tolist()  # a NIC port: its plane
        self.taken: dict[tuple[int, int, int], int] = {}  # flow key -> wanted plane
        self.next = [0] * fabric.num_hosts  # flow keys each host has placed

    @classmethod
    def of(cls, sc: Scenario, fabric: Fabric) -> PlaneChoice | None:
        """The scenario's rule, or None when the NIC hashes (or the fabric has one plane)."""
        if fabric.node_plane is None or sc.nic.plane_select == "hash":
            return None
        return cls(fabric, sc.nic.plane_select, sc.nic.pinned_plane)

    def wanted(self, src: int, dst: int, entropy: int) -> int:
        """The plane the rule gives a packet (before skipping planes that are down)."""
        if self.rule == "pinned":
            return self.pinned
        key = (src, dst, entropy)
        plane = self.taken.get(key)
        if plane is None:
            plane = self.taken[key] = (src + self.next[src]) % self.planes
            self.next[src] += 1
        return plane

    def member(self, src: int, dst: int, entropy: int, group) -> int:
        """Index in ``group`` (the NIC's usable ports toward ``dst``) of the packet's port."""
        want = self.wanted(src, dst, entropy)
        best, best_gap = 0, self.planes
        for i, link in enumerate(group):
            gap = (self.link_plane[int(link)] - want) % self.planes
            if gap < best_gap:
                best, best_gap = i, gap
        return best

    def plane(self, src: int, dst: int, entropy: int, group) -> int:
        """The plane of :meth:`member`'s port."""
        return self.link_plane[int(group[self.member(src, dst, entropy, group)])]

    def members(self, src: int, dst: int, entropies: np.ndarray, group) -> np.ndarray:
        """:meth:`member` of many entropy values of one host pair, in order."""
        return np.fromiter(
            (self.member(src, dst, int(e), group) for e in entropies),
            dtype=np.int64,
            count=len(entropies),
        )
