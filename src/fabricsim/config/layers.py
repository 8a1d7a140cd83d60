"""How scenario layers combine: one precedence rule, defined here and nowhere else.

A scenario is built from layers, earliest first: a built-in scenario (or a preset), then the
user's file or dict, then each ``--set`` (or :meth:`Scenario.with_overrides`).  A later layer
wins over an earlier one key by key.  Some keys stand for others, and there the rule needs
saying exactly:

* **general and specific keys** (``topology.link_gbps`` stands for ``host_link_gbps`` and
  ``fabric_link_gbps``).  Within one layer the specific key wins.  Across layers the later
  layer wins: a later general key replaces the earlier layer's specific ones; a later
  specific key replaces only its own tier, and the earlier general value keeps the others.
  So ``ecmp-collision --set topology.fabric_link_gbps=100`` runs hosts at 400 and the fabric
  at 100 Gbps.
* **alternatives** (``switch.buffer_bytes`` / ``switch.buffer_bdp``): setting one in a later
  layer clears the other from the earlier layers.
* **kinds** (``topology.kind``, ``workload.kind``): a later layer that changes the kind drops
  the earlier layers' keys that belong only to the old kind (a workload of another kind
  replaces the whole section).

Examples
--------
>>> merge({"topology": {"link_gbps": 400}}, {"topology": {"fabric_link_gbps": 100}})
{'topology': {'host_link_gbps': 400, 'fabric_link_gbps': 100}}
>>> merge({"topology": {"fabric_link_gbps": 100}}, {"topology": {"link_gbps": 200}})
{'topology': {'link_gbps': 200}}
"""

from __future__ import annotations

import copy
from typing import Any

GENERAL_KEYS: dict[tuple[str, str], tuple[str, ...]] = {
    ("topology", "link_gbps"): ("host_link_gbps", "fabric_link_gbps"),
}
ALTERNATIVES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("switch", ("buffer_bytes", "buffer_bdp")),
    ("nic", ("ack_bytes", "ack_coalesce")),
    ("workload", ("size_bytes", "sizes")),  # a collective's one size or its sweep
)
KIND_KEYS: dict[str, dict[str, tuple[str, ...]]] = {
    "topology": {
        "leaf_spine": ("spines", "leaves", "hosts_per_leaf", "parallel_links"),
        "fat_tree": ("k", "hosts_per_edge", "core_link_gbps"),
        "rail_optimized": (
            "servers",
            "rails",
            "servers_per_leaf",
            "spines",
            "parallel_links",
            "pxn",
            "nvlink_gbps",
            "nvlink_delay_us",
        ),  # fmt: skip
        "multi_plane": (
            "planes",
            "plane_kind",
            "spines",
            "leaves",
            "hosts_per_leaf",
            "parallel_links",
            "k",
            "hosts_per_edge",
        ),  # fmt: skip
    },
}
DEFAULT_KINDS = {"topology": "leaf_spine"}


def merge(base: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    """``overlay`` (a later layer) laid over ``base``; neither input is changed."""
    out = copy.deepcopy(base)
    for section, sub in overlay.items():
        target = out.get(section)
        if not isinstance(sub, dict) or not isinstance(target, dict):
            out[section] = copy.deepcopy(sub)
            continue
        if section == "workload" and "kind" in sub and sub["kind"] != target.get("kind"):
            out[section] = copy.deepcopy(sub)
            continue
        _clear_overridden(section, target, sub)
        _deep_update(target, sub)
    return out


def _clear_overridden(section: str, target: dict[str, Any], sub: dict[str, Any]) -> None:
    for (sec, general), specifics in GENERAL_KEYS.items():
        if sec != section:
            continue
        if general in sub:
            for key in (general, *specifics):
                target.pop(key, None)
        elif general in target and any(k in sub for k in specifics):
            value = target.pop(general)
            if value is not None:
                for key in specifics:
                    target.setdefault(key, value)
    for sec, keys in ALTERNATIVES:
        if sec == section:
            for key in keys:
                if key in sub:
                    for other in keys:
                        if other != key:
                            target.pop(other, None)
    kinds = KIND_KEYS.get(section)
    if kinds and "kind" in sub:
        old = target.get("kind", DEFAULT_KINDS.get(section))
        if sub["kind"] != old:
            for key in kinds.get(str(old), ()):
                target.pop(key, None)


def _deep_update(target: dict[str, Any], sub: dict[str, Any]) -> None:
    for key, value in sub.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _deep_update(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


def nest(dotted: dict[str, Any]) -> dict[str, Any]:
    """``{"a.b": 1}`` -> ``{"a": {"b": 1}}`` (keys already canonical)."""
    out: dict[str, Any] = {}
    for key, value in dotted.items():
        parts = key.split(".")
        node = out
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return out


def leaf_keys(data: dict[str, Any], prefix: str = "") -> set[str]:
    """Dotted keys of every leaf value in a nested scenario dict."""
    out: set[str] = set()
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and value and key not in ("degraded_links", "inputs"):
            out |= leaf_keys(value, dotted + ".")
        else:
            out.add(dotted)
    return out
