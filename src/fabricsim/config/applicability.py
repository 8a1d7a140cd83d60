"""Keys that would do nothing on this run are refused, not silently accepted.

A key counts when the user set it (their YAML file, dict or ``--set``; a built-in scenario's
own keys do not count, so ``moe --set engine.kind=flow`` runs) to a value other than its
default, and the run's engine, fabric kind or policy never reads it.  The check is one line
naming the key, its value and what would read it.

Examples
--------
>>> from fabricsim.config.loader import load_scenario
>>> sc = load_scenario("ecmp-collision").with_overrides({"nic.cc": "nscc"})
>>> try:
...     check_keys_apply(sc, "flow")
... except Exception as exc:
...     print(exc)
nic.cc=nscc is read only by the packet engine (the flow engine has no such mechanism); remove it or use --engine packet
"""

from __future__ import annotations

from typing import Any

from fabricsim.config.models import Scenario
from fabricsim.errors import EngineRefusal

# Keys that select or shape a packet-level mechanism the flow engine's fluid model does not have
# (congestion control, trimming, ECN marking, the priority queue).  Set on a flow run, the
# user is asking a question the flow engine cannot answer, so the run is refused.  The packet
# engine's tuning keys (base RTT, RTO, retries, windows, buffers, PDC groups, REPS cache sizes,
# the timeline sampling interval) are accepted on both engines so that one scenario file
# serves both; the flow engine does not read them (docs/design.md, "Keys that do nothing").
PACKET_ONLY_KEYS = (
    "nic.cc",
    "switch.trimming",
    "switch.ecn_min_bytes",
    "switch.ecn_max_bytes",
    "switch.header_buffer_bytes",
)
# Keys of one fabric shape.
SHAPE_KEYS = {
    "leaf_spine": ("topology.k", "topology.hosts_per_edge"),
    "fat_tree": (
        "topology.spines",
        "topology.leaves",
        "topology.hosts_per_leaf",
        "topology.parallel_links",
    ),
}
# Keys one path policy reads.
POLICY_KEYS = {"lb.qp_count": "qp_scaling", "lb.qp_mode": "qp_scaling"}
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


def _default(key: str) -> Any:
    section, name = key.split(".")
    model = Scenario.model_fields[section].annotation
    return model.model_fields[name].get_default(call_default_factory=True)  # type: ignore[union-attr]


def _set_to_other_than_default(sc: Scenario, key: str) -> bool:
    return key in sc.user_keys and _value(sc, key) != _default(key)


def _shown(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def check_keys_apply(sc: Scenario, engine: str, varied: frozenset[str] = frozenset()) -> None:
    """Raise :class:`EngineRefusal` for the first user-set key this run would not read.

    ``varied`` are keys an experiment (compare, sweep, study) sets per variant: when it varies
    ``lb.policy``, a policy's own keys are kept for the variants that read them.
    """
    if engine == "flow":
        for key in PACKET_ONLY_KEYS:
            if _set_to_other_than_default(sc, key):
                raise EngineRefusal(
                    f"{key}={_shown(_value(sc, key))} is read only by the packet engine (the flow "
                    "engine has no such mechanism); remove it or use --engine packet"
                )
    elif sc.engine.flow_model != "max_min" and "engine.flow_model" in sc.user_keys:
        raise EngineRefusal(
            f"engine.flow_model={sc.engine.flow_model} is a flow-engine model; "
            "use --engine flow, or remove it for the packet engine"
        )
    for key in SHAPE_KEYS[sc.topology.kind]:
        if _set_to_other_than_default(sc, key):
            raise EngineRefusal(
                f"{key} does nothing on topology.kind={sc.topology.kind}; remove it or change "
                "topology.kind"
            )
    method = sc.switch.load_balancing_method
    if "switch.load_balancing_method" not in varied:
        for key, wanted in SWITCH_METHOD_KEYS.items():
            if method != wanted and _set_to_other_than_default(sc, key):
                raise EngineRefusal(
                    f"{key}={_shown(_value(sc, key))} is read only by "
                    f"switch.load_balancing_method={wanted} (this run has {method}); remove it "
                    f"or set switch.load_balancing_method={wanted}"
                )
    if "lb.policy" in varied:
        return
    for key, policy in POLICY_KEYS.items():
        if sc.lb.policy != policy and _set_to_other_than_default(sc, key):
            raise EngineRefusal(
                f"{key}={_shown(_value(sc, key))} is read only by lb.policy={policy} "
                f"(this run has lb.policy={sc.lb.policy}); remove it or set lb.policy={policy}"
            )
