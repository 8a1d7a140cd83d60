"""Keys that would do nothing on this run are refused, not silently accepted.

A key counts when the user set it explicitly -- in their YAML file, dict or ``--set``, to
any value, its default included -- and the run's engine, fabric kind or policy never reads it
(:func:`explicit`).  A built-in scenario's or a preset's own keys do not count, so ``moe --set
engine.kind=flow`` runs.  Two kinds of key count only where they differ from the default:
those of a recorded scenario that spells out every key (a run's ``config.yaml``, rerun), and
those an experiment (compare, sweep, study) sets per variant.  The check is one line naming
the key, its value and what would read it.

Examples
--------
>>> from fabricsim.config.loader import load_scenario
>>> sc = load_scenario("ecmp-collision").with_overrides({"topology.k": 6})
>>> try:
...     check_keys_apply(sc)
... except Exception as exc:
...     print(exc)
topology.k does nothing on topology.kind=leaf_spine; remove it or change topology.kind

Which keys an engine does not read is the engine table
(:data:`fabricsim.experiments.engines.KEY_ENGINES`); its check uses :func:`explicit` too.
"""

from __future__ import annotations

from typing import Any

from fabricsim.config.layers import leaf_keys
from fabricsim.config.models import Scenario
from fabricsim.config.names import name_entries
from fabricsim.errors import EngineRefusal

# Keys of one fabric shape.
_RAIL_KEYS = (
    "topology.servers",
    "topology.rails",
    "topology.servers_per_leaf",
    "topology.pxn",
    "topology.nvlink_gbps",
    "topology.nvlink_delay_us",
)
_PLANE_KEYS = ("topology.planes", "topology.plane_kind")
_TREE_KEYS = ("topology.k", "topology.hosts_per_edge", "topology.core_link_gbps")
_LEAF_SPINE_KEYS = (
    "topology.spines",
    "topology.leaves",
    "topology.hosts_per_leaf",
    "topology.parallel_links",
)
SHAPE_KEYS = {
    "leaf_spine": (*_TREE_KEYS, *_RAIL_KEYS, *_PLANE_KEYS),
    "fat_tree": (*_LEAF_SPINE_KEYS, *_RAIL_KEYS, *_PLANE_KEYS),
    "rail_optimized": (*_TREE_KEYS, "topology.leaves", "topology.hosts_per_leaf", *_PLANE_KEYS),
    "multi_plane": _RAIL_KEYS,
}
# multi_plane: keys of the plane kind not chosen (topology.plane_kind)
PLANE_SHAPE_KEYS = {"leaf_spine": _TREE_KEYS, "fat_tree": _LEAF_SPINE_KEYS}
# Keys one path policy reads.
POLICY_KEYS = {
    "lb.qp_count": "qp_scaling",
    "lb.qp_mode": "qp_scaling",
    "lb.qp_field": "qp_scaling",
    "lb.ark_control_delay_us": "ark",
}
# Workload keys read only under some value of another key of the same workload:
# kind -> key -> (selector key, the values under which it is read).
WORKLOAD_KEYS: dict[str, dict[str, tuple[str, tuple[str, ...]]]] = {
    "kv_cache": {
        "prompt_tokens": ("prompt", ("fixed",)),
        "prompt_path": ("prompt", ("trace",)),
        "prompt_theta": ("prompt", ("zipf",)),
        "prompt_min_tokens": ("prompt", ("zipf",)),
        "prompt_max_tokens": ("prompt", ("zipf",)),
    },
    "moe": {
        "units": ("matrix", ("file",)),
        "trace_groups": ("matrix", ("chakra",)),
        "total_bytes_per_sender": ("matrix", ("pure_zipf",)),
    },
}
# Sections of keys one congestion-control algorithm reads (nic.cc).
CC_SECTIONS = {"nic.nscc.": "nscc", "nic.dcqcn.": "dcqcn"}
# Keys read only when a switch (key, value) holds: key -> (selector, value, what to say).
SELECTED_KEYS: dict[str, tuple[str, Any]] = {
    "nic.plane_select": ("topology.kind", "multi_plane"),
    "topology.nvlink_gbps": ("topology.pxn", True),
    "topology.nvlink_delay_us": ("topology.pxn", True),
    "nic.pinned_plane": ("nic.plane_select", "pinned"),
    "nic.reps.use_csig": ("nic.packet_spraying_type", "reps"),
    "switch.pfc_xoff_bytes": ("switch.pfc", True),
    "switch.pfc_xon_bytes": ("switch.pfc", True),
    "switch.pfc_headroom_bytes": ("switch.pfc", True),
    "switch.pfc_dynamic_alpha": ("switch.pfc", True),
    "switch.pfc_shared_buffer_bytes": ("switch.pfc", True),
    "switch.llr_timeout_us": ("switch.llr", True),
    "switch.llr_nack": ("switch.llr", True),
}
# Keys one switch load-balancing method reads.
SWITCH_METHOD_KEYS = {
    "switch.flowlet_gap_us": "flowlet",
    "switch.flowlet_pick": "flowlet",
    "switch.adaptive_quantum_bytes": "adaptive",
}


def _value(sc: Scenario, key: str) -> Any:
    node: Any = sc
    for part in key.split("."):
        node = getattr(node, part)
    return node


def _default(key: str, sc: Scenario | None = None) -> Any:
    section, *path, name = key.split(".")
    model: Any = Scenario.model_fields[section].annotation
    if section == "workload" and sc is not None:  # a union: the scenario's own workload model
        model = type(sc.workload)
    for part in path:  # a nested section (nic.nscc.*)
        model = model.model_fields[part].annotation
    return model.model_fields[name].get_default(call_default_factory=True)


def value_of(sc: Scenario, key: str) -> Any:
    """The value of dotted ``key`` in ``sc`` (``nic.nscc.target_delay_us`` too)."""
    return _value(sc, key)


def is_default(sc: Scenario, key: str) -> bool:
    """Whether ``key`` has its default value in ``sc``."""
    return bool(_value(sc, key) == _default(key, sc))


def explicit(sc: Scenario, key: str) -> bool:
    """Whether the user set ``key`` explicitly (whatever its value; see the module's text).

    A key an experiment sets per variant (``sc.varied_keys``) counts only at another value
    than its default: a comparison's baseline sets defaults the variant may not read.
    """
    if key not in sc.user_keys:
        return False
    return key not in sc.varied_keys or not is_default(sc, key)


def recorded_keys(sc: Scenario) -> frozenset[str]:
    """The user keys of a scenario that spells out every key (a run's ``config.yaml``): only
    those at another value than their default count as set; other scenarios' keys unchanged."""
    every = leaf_keys(sc.to_dict()) - {"inputs"}  # filled in at load, not by the user
    if not every <= sc.user_keys:
        return sc.user_keys
    return frozenset(k for k in sc.user_keys if k not in every or not _is_default_safe(sc, k))


def _is_default_safe(sc: Scenario, key: str) -> bool:
    try:
        return is_default(sc, key)
    except (AttributeError, KeyError, ValueError):  # not a section's field: it counts
        return False


def _shown(value: Any) -> str:
    if value is None:
        return "null"
    return str(value).lower() if isinstance(value, bool) else str(value)


def shown(value: Any) -> str:
    """A value as a refusal line shows it (``true``, ``8``)."""
    return _shown(value)


def check_keys_apply(sc: Scenario, varied: frozenset[str] = frozenset()) -> None:
    """Raise :class:`EngineRefusal` for the first explicitly set key this run would not read
    on its fabric, policy, switch method, workload or CC (the engine's own keys are checked by
    :func:`fabricsim.experiments.engines.check_supported`).

    ``varied`` are keys an experiment (compare, sweep, study) sets per variant: when it varies
    ``lb.policy``, a policy's own keys are kept for the variants that read them.
    """
    for key in SHAPE_KEYS[sc.topology.kind]:
        if explicit(sc, key):
            raise EngineRefusal(
                f"{key} does nothing on topology.kind={sc.topology.kind}; remove it or change "
                "topology.kind"
            )
    if sc.topology.kind == "multi_plane":
        for key in PLANE_SHAPE_KEYS[sc.topology.plane_kind]:
            if explicit(sc, key):
                raise EngineRefusal(
                    f"{key} does nothing on topology.plane_kind={sc.topology.plane_kind}; "
                    "remove it or change topology.plane_kind"
                )
    method = sc.switch.load_balancing_method
    if "switch.load_balancing_method" not in varied:
        for key, wanted in SWITCH_METHOD_KEYS.items():
            if method != wanted and explicit(sc, key):
                raise EngineRefusal(
                    f"{key}={_shown(_value(sc, key))} is read only by "
                    f"switch.load_balancing_method={wanted} (this run has {method}); remove it "
                    f"or set switch.load_balancing_method={wanted}"
                )
    _check_workload_keys(sc, varied)
    _check_cc_keys(sc, varied)
    _check_transport_keys(sc, varied)
    for key, (selector, wanted) in SELECTED_KEYS.items():
        if selector not in varied and _value(sc, selector) != wanted and explicit(sc, key):
            raise EngineRefusal(
                f"{key}={_shown(_value(sc, key))} is read only when {selector} is "
                f"{_shown(wanted)} (this run has {_shown(_value(sc, selector))}); remove it "
                f"or set {selector}={_shown(wanted)}"
            )
    if "lb.policy" in varied:
        return
    for key, policy in POLICY_KEYS.items():
        if sc.lb.policy != policy and explicit(sc, key):
            raise EngineRefusal(
                f"{key}={_shown(_value(sc, key))} is read only by lb.policy={policy} "
                f"(this run has lb.policy={sc.lb.policy}); remove it or set lb.policy={policy}"
            )


def _check_workload_keys(sc: Scenario, varied: frozenset[str]) -> None:
    """A workload key read only under another key's value (``prompt_tokens`` needs
    ``prompt: fixed``) is refused when that key has another value."""
    wl = sc.workload
    for name, (selector, values) in WORKLOAD_KEYS.get(wl.kind, {}).items():
        key, chosen = f"workload.{name}", getattr(wl, selector)
        if f"workload.{selector}" in varied or chosen in values:
            continue
        if explicit(sc, key):
            wanted = " or ".join(values)
            raise EngineRefusal(
                f"{key} is read only when workload.{selector} is {wanted} (this run has "
                f"{chosen}); remove it or set workload.{selector}"
            )


def _check_cc_keys(sc: Scenario, varied: frozenset[str]) -> None:
    """A key of one congestion-control algorithm's section (``nic.nscc.*``) is refused when
    the run uses another one."""
    if "nic.cc" in varied:
        return
    for prefix, cc in CC_SECTIONS.items():
        if sc.nic.cc == cc:
            continue
        for key in sorted(k for k in sc.user_keys if k.startswith(prefix)):
            if explicit(sc, key):
                raise EngineRefusal(
                    f"{key}={_shown(_value(sc, key))} is read only by nic.cc={cc} (this run has "
                    f"nic.cc={sc.nic.cc}); remove it or set nic.cc={cc}"
                )


def transport_knobs() -> dict[str, tuple[str, ...]]:
    """Key -> the transports that read it: the knobs each registered transport declares
    (``nic.roce.nak_interval_us`` is read by ``roce`` only)."""
    out: dict[str, tuple[str, ...]] = {}
    for entry in name_entries("nic.transport"):
        for key in entry.knobs:
            out[key] = (*out.get(key, ()), entry.name)
    return out


def _check_transport_keys(sc: Scenario, varied: frozenset[str]) -> None:
    """A key only some transports read (their declared knobs) is refused under another."""
    if "nic.transport" in varied:
        return
    chosen = sc.nic.transport
    for key, readers in transport_knobs().items():
        if chosen not in readers and explicit(sc, key):
            wanted = " or ".join(readers)
            raise EngineRefusal(
                f"{key}={_shown(_value(sc, key))} is read only when nic.transport is {wanted} "
                f"(this run has {chosen}); remove it or set nic.transport={readers[0]}"
            )
