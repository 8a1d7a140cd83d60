"""ECMP hash polarization on a three-tier fat tree: aggregation→core links no port reaches.

A flow between two pods climbs two ECMP stages: its edge switch picks an aggregation switch,
and that aggregation switch picks a core.  If the two stages' hashes are correlated, only a few
of the ``(k/2)**2`` (aggregation, core) combinations are ever used, whatever the source port.

:func:`hash_polarization` measures it exactly: for every inter-pod host pair and all 65,536
UDP source ports, it follows both upward stages (the switches' own hash, salts and ECMP groups,
as :class:`~fabricsim.routing.router.Router` forwards) and counts

* ``unreached_share``: the share of the fabric's aggregation→core links that **no** source
  port of **any** inter-pod host pair reaches (the links polarization leaves dark), and
* ``pair_unreached_share``: for each pair, the share of its source pod's aggregation→core
  links (one per equal-cost path) that none of its 65,536 ports reaches; mean over pairs.

Why the linear ``crc32`` polarizes: with a power-of-two group, the member is the low bits of
``crc ^ salt``, so the aggregation stage's member is the edge stage's member XOR the low bits
of ``salt_edge ^ salt_agg`` — fixed per (edge, aggregation) whatever the port.  Each pair
reaches one core per aggregation switch (3/4 of its links dark for k = 8); over the fabric an
aggregation switch reaches one core per distinct edge salt in its pod: with four random edge
salts, a member value is missed with probability ``(3/4)**4 ≈ 0.316``; with one shared salt
every edge gives the same member, so 3/4 of the links stay dark.  ``crc32WithSalt`` applies
murmur3's finaliser, which decorrelates the stages: every link is reached.

Examples
--------
>>> r = hash_polarization(k=4, hash_method="crc32", salt_mode="shared", seed=1)
>>> r.links_total, r.unreached_share
(16, 0.5)
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from fabricsim._compat import pd
from fabricsim.config.loader import validate
from fabricsim.config.models import Scenario
from fabricsim.errors import ConfigError
from fabricsim.routing.hashing import PORT_TABLE, switch_hash
from fabricsim.routing.router import Router
from fabricsim.topology.builders import fabric_for
from fabricsim.topology.fabric import CORE, LEAF, SPINE, Fabric

__all__ = ["PolarizationResult", "hash_polarization", "polarization_table"]

_PORTS = 65536
_FIRST = 1024  # ports of the first, settling pass
_DETERMINISTIC = ("crc32WithSalt", "crc32", "crc32Offset")


@dataclass(frozen=True)
class PolarizationResult:
    """Measured polarization of one fat tree under one hash method and salt choice.

    Attributes
    ----------
    k, hash_method, salt_mode, seed
        The fabric radix and the switch settings measured.
    pairs : int
        Inter-pod host pairs walked (ordered pairs).
    ports : int
        Source ports per pair (65,536).
    links_total : int
        Aggregation→core links in the fabric.
    links_unreached : int
        Of those, links no port of any inter-pod pair reaches.
    unreached_share : float
        ``links_unreached / links_total`` (dimensionless).
    pair_unreached_share : float
        Mean over pairs of the share of the pair's aggregation→core links (its equal-cost
        paths' upper hops) that no port reaches (dimensionless).
    unreached_links : tuple of str
        Names of the unreached links, sorted.
    wall_s : float
        Wall-clock time of the measurement, s (not deterministic; excluded from ``to_dict``).
    """

    k: int
    hash_method: str
    salt_mode: str
    seed: int
    pairs: int
    ports: int
    links_total: int
    links_unreached: int
    unreached_share: float
    pair_unreached_share: float
    unreached_links: tuple[str, ...]
    wall_s: float

    def to_dict(self) -> dict[str, Any]:
        """Deterministic, JSON-ready fields (no wall time)."""
        out = asdict(self)
        out.pop("wall_s")
        out["unreached_links"] = list(self.unreached_links)
        return out


def _scenario(k: int, hash_method: str, salt_mode: str, seed: int) -> Scenario:
    return validate(
        {
            "name": f"polarization-k{k}",
            "seed": seed,
            "topology": {"kind": "fat_tree", "k": k},
            "workload": {"kind": "permutation"},
            "switch": {"hash_method": hash_method, "salt_mode": salt_mode},
        }
    )


def _check_scenario(scenario: Scenario) -> None:
    """Raise ``ConfigError`` unless ``scenario`` is a fat tree (k <= 16) with a per-flow hash."""
    if scenario.topology.kind != "fat_tree":
        raise ConfigError("topology.kind: hash polarization needs a three-tier fat_tree")
    if scenario.switch.hash_method not in _DETERMINISTIC:
        raise ConfigError(
            f"switch.hash_method: polarization needs a per-flow hash, one of "
            f"{', '.join(_DETERMINISTIC)} (got {scenario.switch.hash_method!r})"
        )
    if scenario.topology.k > 16:
        raise ConfigError(
            f"topology.k: polarization walks every inter-pod pair x 65,536 ports; k <= 16 "
            f"(got {scenario.topology.k})"
        )


def _walk_sources(
    router: Router, fabric: Fabric, workers: int | None
) -> tuple[np.ndarray, list[np.ndarray], int]:
    """Walk every source host (in threads): links reached, per-pair dark shares, pairs."""
    reached = np.zeros(fabric.num_links, dtype=bool)
    pair_dark: list[np.ndarray] = []
    pairs = 0
    sources = range(fabric.num_hosts)
    threads = workers or min(4, os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        for dark, hit, n in pool.map(lambda s: _walk_source(router, s), sources):
            reached[hit] = True
            pair_dark.extend(dark)
            pairs += n
    return reached, pair_dark, pairs


def hash_polarization(
    scenario: Scenario | None = None,
    *,
    k: int = 8,
    hash_method: str = "crc32WithSalt",
    salt_mode: str = "per_switch",
    seed: int = 1,
    workers: int | None = None,
) -> PolarizationResult:
    """Share of aggregation→core links that no source port reaches, over inter-pod pairs.

    Parameters
    ----------
    scenario
        A fat-tree scenario (its topology, ``switch.hash_method``, ``switch.salt_mode``,
        ``seed`` and ``lb.dst_port`` are used); if None, one is built from the keywords.
    k
        Fat-tree radix (even), when ``scenario`` is None.
    hash_method
        ``switch.hash_method``: ``crc32WithSalt``, ``crc32`` or ``crc32Offset``.
    salt_mode
        ``switch.salt_mode``: ``per_switch`` or ``shared``.
    seed
        Scenario seed (the salts derive from it).
    workers
        Threads walking source hosts in parallel (numpy releases the GIL; default: up to 4,
        one per CPU); the results do not depend on it.

    Returns
    -------
    PolarizationResult
    """
    if scenario is None:
        scenario = _scenario(k, hash_method, salt_mode, seed)
    _check_scenario(scenario)
    wall0 = time.perf_counter()
    fabric = fabric_for(scenario.topology)
    router = Router.for_scenario(scenario, fabric)
    up_links = _agg_core_links(fabric)
    reached, pair_dark, pairs = _walk_sources(router, fabric, workers)
    unreached = up_links[~reached[up_links]]
    share = float(np.concatenate(pair_dark).mean()) if pair_dark else 0.0
    return PolarizationResult(
        k=scenario.topology.k,
        hash_method=scenario.switch.hash_method,
        salt_mode=scenario.switch.salt_mode,
        seed=scenario.seed,
        pairs=pairs,
        ports=_PORTS,
        links_total=len(up_links),
        links_unreached=len(unreached),
        unreached_share=len(unreached) / len(up_links) if len(up_links) else 0.0,
        pair_unreached_share=share,
        unreached_links=tuple(sorted(fabric.link_names[i] for i in unreached)),
        wall_s=time.perf_counter() - wall0,
    )


def _agg_core_links(fabric: Fabric) -> np.ndarray:
    tier = fabric.node_tier
    return np.flatnonzero((tier[fabric.link_src] == SPINE) & (tier[fabric.link_dst] == CORE))


def _inter_pod_dsts(fabric: Fabric, src: int) -> np.ndarray:
    pods = fabric.pod_of_node[: fabric.num_hosts]
    return np.flatnonzero(pods != pods[src])


def _up_groups(fabric: Fabric, edge: int, dst: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """The edge's ECMP group toward ``dst`` and each reached aggregation switch's group."""
    first = fabric.ecmp_group(edge, dst)
    second = [fabric.ecmp_group(int(fabric.link_dst[link]), dst) for link in first]
    return first, second


def _classes(fabric: Fabric, src: int, dsts: np.ndarray):
    """Split ``dsts`` into classes whose two upward ECMP stages are identical."""
    edge = int(fabric.link_dst[fabric.host_uplink[src]])
    if fabric.node_tier[edge] != LEAF:
        raise ConfigError("topology: a host must attach to an edge switch")
    by_key: dict[tuple, tuple[list[int], np.ndarray, list[np.ndarray]]] = {}
    for dst in dsts:
        first, second = _up_groups(fabric, edge, int(dst))
        key = (tuple(first), tuple(tuple(g) for g in second))
        by_key.setdefault(key, ([], first, second))[0].append(int(dst))
    return [(np.array(d, dtype=np.int64), first, second) for d, first, second in by_key.values()]


def _members(h: np.ndarray, size: int | np.ndarray) -> np.ndarray:
    """ECMP member index ``h % size``, uint32, computed in place in ``h``."""
    # perf: a power-of-two group's member is the hash's low bits; & is ~3x faster than %
    if np.ndim(size) == 0 and int(size) & (int(size) - 1) == 0:
        return np.bitwise_and(h, np.uint32(int(size) - 1), out=h)
    return np.remainder(h, np.asarray(size, dtype=np.uint32), out=h)


@dataclass(frozen=True)
class _Stages:
    """The two upward ECMP stages shared by a class of pairs from one source host."""

    edge_salt: int
    edge_tier: int
    first_size: int
    agg_salt: np.ndarray  # uint32, per member of the edge's group
    agg_tier: int
    sizes: np.ndarray  # uint32, group size of each aggregation switch (1 if empty)
    width: int  # widest aggregation group
    table: np.ndarray  # [agg member, core member] -> link id, -1 if none


def _stages(router: Router, src: int, first: np.ndarray, second: list[np.ndarray]) -> _Stages:
    fab = router.fabric
    edge = int(fab.link_dst[fab.host_uplink[src]])
    aggs = fab.link_dst[first]
    width = max(1, max(len(g) for g in second))
    table = np.full((len(first), width), -1, dtype=np.int64)
    for i, g in enumerate(second):
        table[i, : len(g)] = g
    return _Stages(
        edge_salt=int(router.salts[edge]),
        edge_tier=int(fab.node_tier[edge]),
        first_size=len(first),
        agg_salt=router.salts[aggs].astype(np.uint32),
        agg_tier=int(fab.node_tier[aggs[0]]),
        sizes=np.array([max(len(g), 1) for g in second], dtype=np.uint32),
        width=width,
        table=table,
    )


def _combo_masks(method: str, st: _Stages, base: np.ndarray, ports: np.ndarray) -> np.ndarray:
    """Per pair (row of ``base``), a bit mask of the (agg member, core member) combos reached.

    Bit ``m1 * width + m2`` is set when some port in ``ports`` (a slice of the CRC contributions
    of the source ports) goes to aggregation member ``m1`` and then core member ``m2``.
    """
    # perf: uint32 throughout and in-place ops; this loop sees 65,536 x pairs elements
    crc = base[:, None] ^ ports[None, :]
    m1 = _members(switch_hash(crc, method, st.edge_salt, st.edge_tier), st.first_size)
    # every hash method XORs the salt first, so a per-port salt is salt 0 on crc ^ salt
    crc ^= np.take(st.agg_salt, m1)
    h2 = switch_hash(crc, method, 0, st.agg_tier)
    same = bool(np.all(st.sizes == st.sizes[0]))
    m2 = _members(h2, int(st.sizes[0]) if same else np.take(st.sizes, m1))
    m1 *= np.uint32(st.width)
    m1 += m2
    dtype = np.uint32 if st.table.size <= 32 else np.uint64
    bits = np.left_shift(dtype(1), m1.astype(dtype, copy=False))
    return np.bitwise_or.reduce(bits, axis=1).astype(np.uint64)


def _walk_class(router: Router, src: int, dsts: np.ndarray, st: _Stages) -> tuple[np.ndarray, int]:
    """Per pair: share of its aggregation→core links unreached; and the union of combos reached.

    A first pass over 1,024 ports settles every pair that already reaches all its links (no
    further port can change it); the others are walked over the remaining ports one pair at a
    time.
    """
    valid_bits = st.table.ravel() >= 0
    full = int(np.sum(np.left_shift(np.uint64(1), np.flatnonzero(valid_bits).astype(np.uint64))))
    base = np.array([router.base(src, int(d)) for d in dsts], dtype=np.uint32)
    masks = _combo_masks(router.method, st, base, PORT_TABLE[:_FIRST])
    rest = PORT_TABLE[_FIRST:]
    for row in np.flatnonzero((masks & np.uint64(full)) != np.uint64(full)):
        # perf: one pair at a time keeps the arrays in L2 cache (3x faster than 4 at a time)
        masks[row] |= _combo_masks(router.method, st, base[row : row + 1], rest)[0]
    bits = (masks[:, None] >> np.arange(st.table.size, dtype=np.uint64)[None, :]) & np.uint64(1)
    reached = bits[:, valid_bits].astype(bool)
    dark = 1.0 - reached.mean(axis=1)
    return dark, int(np.bitwise_or.reduce(masks))


def _walk_source(router: Router, src: int) -> tuple[list[np.ndarray], np.ndarray, int]:
    """Walk every inter-pod pair from ``src``: per-pair dark shares, links reached, pairs."""
    fab = router.fabric
    dark: list[np.ndarray] = []
    hit: list[int] = []
    pairs = 0
    for dsts, first, second in _classes(fab, src, _inter_pod_dsts(fab, src)):
        pairs += len(dsts)
        if len(first) == 0:
            dark.append(np.ones(len(dsts)))
            continue
        st = _stages(router, src, first, second)
        d, union = _walk_class(router, src, dsts, st)
        dark.append(d)
        flat = st.table.ravel()
        hit.extend(int(flat[b]) for b in range(flat.size) if flat[b] >= 0 and union >> b & 1)
    return dark, np.array(hit, dtype=np.int64), pairs


def polarization_table(
    k: int = 8,
    seeds: tuple[int, ...] = (1,),
    methods: tuple[str, ...] = ("crc32WithSalt", "crc32", "crc32Offset"),
    salt_modes: tuple[str, ...] = ("per_switch", "shared"),
) -> pd.DataFrame:
    """:func:`hash_polarization` for every method × salt mode × seed, one row each."""
    rows = []
    for method in methods:
        for mode in salt_modes:
            for seed in seeds:
                r = hash_polarization(k=k, hash_method=method, salt_mode=mode, seed=seed)
                row = r.to_dict()
                row.pop("unreached_links")
                rows.append(row | {"wall_s": r.wall_s})
    return pd.DataFrame(rows)
