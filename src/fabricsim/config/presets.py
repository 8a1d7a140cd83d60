"""Presets: a named bottom layer of a scenario (``preset:`` in YAML, ``--preset`` on the CLI).

A preset supplies defaults under the scenario's own keys: the layers are preset → scenario
file → each ``--set`` (see :mod:`fabricsim.config.layers`), so a value the scenario sets wins
over the preset's.  A preset has two parts: fixed values (:attr:`Preset.values`) and values
derived from the scenario they end up in (:attr:`Preset.derive`, e.g. queue sizes in
bandwidth-delay products of the scenario's own link rate and delay).  Derived values are
computed from the scenario with the fixed values laid under it, then laid under it too; a value
the scenario sets is never replaced.

``htsim-uec`` reproduces the defaults of htsim's ``htsim_uec`` binary where fabricsim has a
counterpart (``docs/htsim.md`` maps its command-line flags to our keys): a three-tier fat tree
sized for the matrix's node count, 100 Gbps and 1 µs per link, 4,150-byte packets with 64-byte
headers, one-BDP queues (five without trimming) with a priority queue twice that size, ECN
between 20 % and 80 % of a BDP, NSCC, a fixed RTO of 15 µs plus six full-queue drains, 64
entropy values per connection, REPS with an 8-entry buffer, 10 ms freezing and no early
failure detection.

Examples
--------
>>> from fabricsim.config.loader import load_scenario
>>> sc = load_scenario({"preset": "htsim-uec", "workload": {"kind": "permutation"}})
>>> sc.topology.kind, sc.topology.k, sc.nic.rdma_data_mss + sc.nic.header_bytes
('fat_tree', 8, 4150)
>>> sc.switch.buffer_bytes, sc.switch.ecn_min_bytes, sc.switch.ecn_max_bytes, sc.nic.rto_us
(178450, 37350, 145250, 100.656)
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fabricsim.config.layers import merge
from fabricsim.errors import ConfigError


@dataclass(frozen=True)
class Preset:
    """One preset: its fixed values and the values it derives from the scenario."""

    name: str
    help: str
    values: Callable[[dict[str, Any]], dict[str, Any]]
    """Fixed values as a nested dict, given the scenario's own data (e.g. its trace path)."""
    derive: Callable[[Any], dict[str, Any]]
    """Values computed from the validated scenario with the fixed values under it."""


_PRESETS: dict[str, Preset] = {}


def register_preset(preset: Preset) -> Preset:
    """Make ``preset`` selectable by its name."""
    _PRESETS[preset.name] = preset
    return preset


def registered_presets() -> dict[str, Preset]:
    """The presets by name."""
    return dict(_PRESETS)


def preset_layer(data: dict[str, Any], validate: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    """The layer the scenario ``data``'s ``preset`` puts under it (``{}`` without a preset).

    ``validate`` turns a scenario dict into a scenario (defaults filled in); the derived
    values are computed from ``validate(fixed values under data)``.
    """
    name = data.get("preset")
    if name is None:
        return {}
    if not isinstance(name, str) or name not in _PRESETS:
        allowed = ", ".join(sorted(_PRESETS))
        raise ConfigError(f"preset: unknown preset {name!r}; allowed: {allowed}")
    preset = _PRESETS[name]
    fixed = preset.values(data)
    first = validate(merge(fixed, data))
    return merge(fixed, preset.derive(first))


# -- htsim-uec ------------------------------------------------------------------------------------

HTSIM_MTU_BYTES = 4150  # data packet on the wire, header included
HTSIM_HEADER_BYTES = 64  # data header; ACKs, NACKs and trimmed headers are this size
# NSCC's reference path (100 Gbps x 12 us): its steps scale with the path's BDP relative to it.
HTSIM_REFERENCE_BDP_BYTES = 150_000
HTSIM_REFERENCE_RTT_US = 12.0
_CM_HEADER_WORDS = ("nodes", "connections", "triggers", "failures")
CM_MAX_NODES = 128**3 // 4  # hosts of a fat tree with topology.k at its largest, 128


def fat_tree_k(hosts: int) -> int:
    """The radix of the three-tier fat tree with ``hosts`` hosts (``k^3/4``), as htsim sizes it.

    >>> fat_tree_k(128), fat_tree_k(1024)
    (8, 16)
    """
    k = 2
    while k**3 // 4 < hosts:
        k += 2
    if k**3 // 4 != hosts:
        sizes = ", ".join(str(j**3 // 4) for j in range(4, 20, 2))
        raise ConfigError(
            f"preset htsim-uec: a three-tier fat tree has k^3/4 hosts ({sizes}, ...), the "
            f"matrix has {hosts}; set topology.k (and topology.hosts_per_edge) yourself"
        )
    return k


def cm_nodes(path: str | Path) -> int | None:
    """The ``Nodes N`` of an htsim connection matrix's header, or None if it has none.

    The header is read as the trace reader reads it: blank lines and ``#`` comments are
    skipped, header words (``Nodes``, ``Connections``, ...) may come in any order, and the
    first other line ends the header.  A ``Nodes`` line that is not ``Nodes <digits>`` with
    ``2 <= N <=`` :data:`CM_MAX_NODES` is refused (it would size the fabric).
    """
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for lineno, raw in enumerate(fh, 1):
                words = raw.split()
                if not words or words[0].startswith("#"):
                    continue
                if words[0].lower() not in _CM_HEADER_WORDS:
                    return None
                if words[0].lower() == "nodes":
                    return _cm_nodes_value(Path(path).name, lineno, words)
    except OSError:
        return None  # the trace reader reports the unreadable file with its own message
    return None


def _cm_nodes_value(name: str, lineno: int, words: list[str]) -> int:
    where = f"workload.path: {name}: line {lineno}"
    if len(words) != 2 or not re.fullmatch(r"[0-9]+", words[1]):
        got = "nothing" if len(words) == 1 else repr(" ".join(words[1:])[:40])
        raise ConfigError(f"{where}: 'Nodes' needs one whole number (e.g. 'Nodes 16'), got {got}")
    nodes = int(words[1])
    if not 2 <= nodes <= CM_MAX_NODES:
        raise ConfigError(
            f"{where}: 'Nodes {words[1][:40]}' must be 2..{CM_MAX_NODES} (the hosts of the "
            f"largest fat tree, k=128)"
        )
    return nodes


def _htsim_nscc(mss: int) -> dict[str, Any]:
    """htsim's NSCC constants that do not depend on the path (the rest: ``_htsim_derive``)."""
    return {
        "initial_cwnd_bdp": 1.5,
        "max_cwnd_bdp": 1.5,
        "md_gain": 0.8,
        "md_min_factor": 0.5,
        "md_wait_sampled_rtt": False,
        "delay_ewma_gain": 0.0125,
        "delay_ewma_unmarked_cap": True,
        "fair_increase_bdp": round(5 * mss / HTSIM_REFERENCE_BDP_BYTES, 12),
        "additive_increase_bdp": round(0.15 * mss / HTSIM_REFERENCE_BDP_BYTES, 12),
        "fast_increase_delay_us": 1.0,
        "qa_delay_targets": 4.0,
        "qa_gate_bits": 3,
        "qa_period_targets": 1.0,
        "adjust_bytes_mtus": 8.0,
        "nack_delay_sample": True,
        "delay_ewma_from_zero": True,
        "ambiguous_ack_avg_delay": True,
        "base_rtt_from_nack": True,
        "max_cwnd_follows_base_rtt": True,
    }


def _htsim_values(data: dict[str, Any]) -> dict[str, Any]:
    topology: dict[str, Any] = {"kind": "fat_tree", "link_gbps": 100.0, "link_delay_us": 1.0}
    wl = data.get("workload")
    path = wl.get("path") if isinstance(wl, dict) and wl.get("kind") == "trace" else None
    if isinstance(path, str) and path.lower().endswith(".cm"):
        nodes = cm_nodes(path)
        user_topology = data.get("topology")
        if nodes and not (isinstance(user_topology, dict) and "k" in user_topology):
            topology["k"] = fat_tree_k(nodes)
    mss = HTSIM_MTU_BYTES - HTSIM_HEADER_BYTES
    nic = data.get("nic")
    if isinstance(nic, dict) and isinstance(nic.get("rdma_data_mss"), int):
        mss = nic["rdma_data_mss"]  # htsim's NSCC steps scale with its MSS
    return {
        "engine": {"kind": "packet"},
        "topology": topology,
        "nic": {
            "rdma_data_mss": HTSIM_MTU_BYTES - HTSIM_HEADER_BYTES,
            "header_bytes": HTSIM_HEADER_BYTES,
            "cc": "nscc",
            "initial_base_rtt_us": "auto",
            "cwnd_bdp": 1.5,
            "entropy_mask_bits": 6,  # htsim -paths 64
            "entropy_value_set_size": 64,
            "oblivious_values": 64,
            "reps_buffer_size_mask_bits": 3,
            "freezing_timeout_us": 10_000.0,
            "failure_detection_rtt_multiplier": 0.0,
            "ack_bytes": 16_384,  # htsim -sack_threshold
            "ack_request": True,
            "max_retries": 64,  # htsim has no retry limit
            "rto_backoff": False,  # htsim's RTO is fixed
            "control_per_data": 10,  # htsim's NIC: 10 control packets per data packet
            "reps_recycle_last_hop_nack": True,
            "nscc": _htsim_nscc(mss),
        },
        "switch": {
            "trimming": True,
            "load_balancing_method": "ecmp",
            "salt_mode": "per_switch",
            "scale_buffers_with_rate": True,
            "trim_last_queued": 0.5,  # htsim's coin flip between the arriving and the last queued  # htsim's -failed links keep 25 % of buffer and ECN
        },
    }


def _htsim_derive(sc: Any) -> dict[str, Any]:
    """htsim_uec's queue, ECN and RTO sizing from the worst-case unloaded RTT."""
    topo, nic, sw = sc.topology, sc.nic, sc.switch
    rate = float(topo.host_link_gbps) * 1e9
    links = 6 if topo.kind == "fat_tree" else 4  # the longest host-to-host path
    mtu, hdr = nic.rdma_data_mss + nic.header_bytes, nic.header_bytes
    rtt_s = links * (2 * topo.link_delay_us * 1e-6 + (mtu + hdr) * 8 / rate)
    bdp_packets = math.ceil(rtt_s * rate / 8 / mtu)
    if sw.buffer_bytes is not None:  # the scenario's own queue size sizes the rest
        buffer = int(sw.buffer_bytes)
    elif "buffer_bdp" in sw.model_fields_set:  # htsim -queue_size_bdp_factor
        buffer = math.ceil(sw.buffer_bdp * bdp_packets) * mtu
    else:
        buffer = (1 if sw.trimming else 5) * bdp_packets * mtu
    # NSCC: target 3/4 of the base RTT with trimming (one RTT without); the proportional step
    # and the fast-increase gain scale with the path's BDP and target against the reference.
    target_us = nic.nscc.target_delay_us or (0.75 if sw.trimming else 1.0) * rtt_s * 1e6
    scale = rtt_s * rate / 8 / HTSIM_REFERENCE_BDP_BYTES
    mss = nic.rdma_data_mss
    nscc = {
        "target_delay_us": round(target_us, 9),
        "proportional_increase_bdp": round(
            4 * mss * target_us / HTSIM_REFERENCE_RTT_US / HTSIM_REFERENCE_BDP_BYTES, 12
        ),
        "fast_increase_gain": round(0.25 * scale, 12),
    }
    return {
        "switch": {
            "buffer_bytes": buffer,
            "header_buffer_bytes": 2 * buffer,
            "ecn_min_bytes": math.ceil(0.2 * bdp_packets) * mtu,
            "ecn_max_bytes": math.ceil(0.8 * bdp_packets) * mtu,
        },
        "nic": {"rto_us": round(15.0 + buffer * 6 * 8 / rate * 1e6, 9), "nscc": nscc},
    }


register_preset(
    Preset(
        "htsim-uec",
        "the defaults of htsim's htsim_uec where fabricsim has a counterpart (docs/htsim.md)",
        _htsim_values,
        _htsim_derive,
    )
)
