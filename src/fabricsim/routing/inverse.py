"""The inverse ECMP hash as data: which source ports land on each member or path.

Both functions validate their inputs and raise :class:`~fabricsim.errors.ConfigError` (one
line naming the ``fabricsim ports`` option and the allowed range) before any work.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fabricsim.config.models import Scenario
from fabricsim.errors import ConfigError
from fabricsim.routing.hashing import HASH_METHODS, MAX_QPS, PORT_TABLE, base_crc, switch_hash
from fabricsim.routing.router import Router
from fabricsim.topology.builders import fabric_for
from fabricsim.topology.fabric import CORE, LEAF, SPINE

#: the number of UDP source ports, and so the most members a stage can usefully split into
NUM_PORTS = 65536
#: switch tiers ``--tier`` accepts (the tier only changes ``crc32Offset``'s bit rotation)
TIERS = {LEAF: "leaf/edge", SPINE: "spine/aggregation", CORE: "core"}


def _int(name: str, value: object, low: int, high: int, what: str = "") -> int:
    """``value`` as an int in ``low..high``, else a one-line ConfigError naming ``name``."""
    ok = isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)
    if not ok or not low <= int(value) <= high:  # type: ignore[call-overload]
        raise ConfigError(f"{name}: must be an integer in {low}..{high}{what} (got {value!r})")
    return int(value)  # type: ignore[call-overload]


def check_dst_qp(dst_qp: object) -> int:
    """``--dst-qp``: a queue pair index, ``0..MAX_QPS-1``."""
    return _int("--dst-qp", dst_qp, 0, MAX_QPS - 1, " (a queue pair index)")


def stage_ports(
    members: int,
    src_ip: int,
    dst_ip: int,
    dst_port: int,
    proto: int,
    method: str,
    salt: int,
    tier: int = 1,
) -> dict[str, Any]:
    """Source ports per member of one ECMP stage of ``members`` next hops.

    ``members`` is at most 65,536 (the number of source ports: more members than ports
    leaves all but 65,536 empty); ``tier`` is 1 (leaf/edge), 2 (spine/aggregation) or 3
    (core); ``salt`` is 32 bits; ``method`` a deterministic hash (``random`` has no inverse).

    Examples
    --------
    >>> out = stage_ports(4, 0x0A000001, 0x0A000002, 4791, 17, "crc32WithSalt", 7)
    >>> sum(p["count"] for p in out["paths"].values())
    65536
    >>> stage_ports(100_000_000, 1, 2, 4791, 17, "crc32", 0)
    Traceback (most recent call last):
    fabricsim.errors.ConfigError: --paths: must be an integer in 1..65536 (one member per source port at most) (got 100000000)
    """  # noqa: E501
    members = _int("--paths", members, 1, NUM_PORTS, " (one member per source port at most)")
    if method not in HASH_METHODS or method == "random":
        allowed = ", ".join(m for m in HASH_METHODS if m != "random")
        extra = (
            " (random picks a member per packet: it has no inverse)" if method == "random" else ""
        )
        raise ConfigError(f"--hash: must be one of {allowed} (got {method!r}){extra}")
    salt = _int("--salt", salt, 0, 2**32 - 1, " (32 bits)")
    src_ip = _int("--src-ip", src_ip, 0, 2**32 - 1)
    dst_ip = _int("--dst-ip", dst_ip, 0, 2**32 - 1)
    dst_port = _int("--dst-port", dst_port, 0, 65535)
    proto = _int("--proto", proto, 0, 255)
    if isinstance(tier, bool | np.bool_) or tier not in TIERS:
        allowed = ", ".join(f"{t} ({name})" for t, name in TIERS.items())
        raise ConfigError(f"--tier: must be one of {allowed} (got {tier!r})")
    crc = np.uint32(base_crc(src_ip, dst_ip, dst_port, proto)) ^ PORT_TABLE
    member = (switch_hash(crc, method, salt, int(tier)) % np.uint32(members)).astype(np.int64)
    # group the ports by member in one pass (a loop of flatnonzero is members x 65,536)
    order = np.argsort(member, kind="stable")
    bounds = np.searchsorted(member[order], np.arange(members + 1))
    out = {f"member{m}": order[bounds[m] : bounds[m + 1]] for m in range(members)}
    return _as_result(out)


def path_ports(sc: Scenario, src_host: int, dst_host: int, dst_qp: int = 0) -> dict[str, Any]:
    """Source ports per whole path from ``src_host`` to ``dst_host`` in a scenario's fabric.

    Paths are keyed by :meth:`~fabricsim.topology.fabric.Fabric.path_label`, which names
    parallel links (``leaf0>spine1#1>leaf3``), so every equal-cost path has its own key and
    the counts add up to 65,536 (less the ports that dead-end on a failed, withdrawn link).
    ``dst_qp`` is the packets' destination QP: it moves them only if the switches hash it
    (``switch.hash_fields`` with ``dst_qp``).
    """
    dst_qp = check_dst_qp(dst_qp)
    fab = fabric_for(sc.topology)
    top = fab.num_hosts - 1
    src_host = _int("--src-host", src_host, 0, top, " (a host of the scenario's fabric)")
    dst_host = _int("--dst-host", dst_host, 0, top, " (a host of the scenario's fabric)")
    if src_host == dst_host:
        raise ConfigError(f"--dst-host: must differ from --src-host (both {src_host})")
    paths = _count_paths(fab, src_host, dst_host)
    if paths > NUM_PORTS:
        raise ConfigError(
            f"--src-host/--dst-host: {paths} equal-cost paths from host {src_host} to host "
            f"{dst_host}, more than the {NUM_PORTS} source ports to list (reduce "
            "topology.parallel_links or topology.spines)"
        )
    router = Router.for_scenario(sc, fab)
    per_path = router.ports_per_path(src_host, dst_host, dst_qp)
    labels = {p: fab.path_label(p) for p in per_path}
    if len(set(labels.values())) != len(labels):  # pragma: no cover - a labelling bug
        raise RuntimeError("two paths share a label; ports would be merged")
    return _as_result({labels[p]: v for p, v in per_path.items()})


def _count_paths(fab: Any, src: int, dst: int) -> int:
    """Number of equal-cost paths from ``src`` to ``dst`` (without listing them)."""
    memo: dict[int, int] = {}

    def count(node: int) -> int:
        if node == dst:
            return 1
        if node < fab.num_hosts:
            return 0
        if node not in memo:
            memo[node] = sum(count(int(fab.link_dst[link])) for link in fab.ecmp_group(node, dst))
        return memo[node]

    return count(int(fab.link_dst[fab.host_uplink[src]]))


def _as_result(per: dict[str, np.ndarray]) -> dict[str, Any]:
    return {
        "paths": {
            k: {"count": int(len(v)), "ports": v.astype(int).tolist()} for k, v in per.items()
        },
        "empty_paths": [k for k, v in per.items() if len(v) == 0],
    }
