"""The inverse ECMP hash as data: which source ports land on each member or path."""

from __future__ import annotations

from typing import Any

import numpy as np

from fabricsim.config.models import Scenario
from fabricsim.errors import ConfigError
from fabricsim.routing.hashing import HASH_METHODS, PORT_TABLE, base_crc, switch_hash


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

    Examples
    --------
    >>> out = stage_ports(4, 0x0A000001, 0x0A000002, 4791, 17, "crc32WithSalt", 7)
    >>> sum(p["count"] for p in out["paths"].values())
    65536
    """
    if members < 1:
        raise ConfigError(f"--paths: must be >= 1 (got {members})")
    if method not in HASH_METHODS or method == "random":
        allowed = ", ".join(m for m in HASH_METHODS if m != "random")
        raise ConfigError(f"--hash: must be one of {allowed} (got {method!r})")
    if not 0 <= salt < 2**32:
        raise ConfigError(f"--salt: must be in 0..4294967295 (got {salt})")
    for name, val, top in (("--dst-port", dst_port, 65535), ("--proto", proto, 255)):
        if not 0 <= val <= top:
            raise ConfigError(f"{name}: must be in 0..{top} (got {val})")
    crc = np.uint32(base_crc(src_ip, dst_ip, dst_port, proto)) ^ PORT_TABLE
    member = switch_hash(crc, method, salt, tier) % np.uint32(members)
    out = {f"member{m}": np.flatnonzero(member == m) for m in range(members)}
    return _as_result(out)


def path_ports(sc: Scenario, src_host: int, dst_host: int) -> dict[str, Any]:
    """Source ports per whole path from ``src_host`` to ``dst_host`` in a scenario's fabric."""
    from fabricsim.runner import fabric_of, router_of

    fab = fabric_of(sc)
    for name, host in (("--src-host", src_host), ("--dst-host", dst_host)):
        if not 0 <= host < fab.num_hosts:
            raise ConfigError(f"{name}: must be a host index 0..{fab.num_hosts - 1} (got {host})")
    if src_host == dst_host:
        raise ConfigError("--dst-host: must differ from --src-host")
    router = router_of(sc, fab)
    per_path = router.ports_per_path(src_host, dst_host)
    return _as_result({fab.path_label(p): v for p, v in per_path.items()})


def _as_result(per: dict[str, np.ndarray]) -> dict[str, Any]:
    return {
        "paths": {
            k: {"count": int(len(v)), "ports": v.astype(int).tolist()} for k, v in per.items()
        },
        "empty_paths": [k for k, v in per.items() if len(v) == 0],
    }
