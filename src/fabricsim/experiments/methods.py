"""The load-balancing methods ``fabricsim compare`` runs, per engine, and their overrides.

The one place that lists them: :func:`compare_methods` (name -> what it is, overrides on top
of per-flow ECMP) and :data:`DEFAULT_METHODS`; :func:`method_overrides` turns a name into the
``--set`` overrides of one comparison run.  (To be rewired onto the ``lb`` registries, which
will declare each method's help line and engines, in this module only.)

Examples
--------
>>> sorted(compare_methods("flow"))
['ecmp', 'ideal_spray', 'pinned', 'qp_scaling']
>>> method_overrides("reps", "packet", 1)["nic.packet_spraying_type"]
'reps'
"""

from __future__ import annotations

from typing import Any

from fabricsim.errors import ConfigError

__all__ = ["DEFAULT_METHODS", "QP_COUNT", "compare_methods", "method_overrides"]

_BASE_PACKET = {
    "lb.policy": "ecmp",
    "nic.packet_spraying_type": "none",
    "switch.load_balancing_method": "ecmp",
}

_PACKET_METHODS: dict[str, tuple[str, dict[str, Any]]] = {
    "ecmp": ("per-flow ECMP hash", {}),
    "default": ("NIC round robin over entropies", {"nic.packet_spraying_type": "default"}),
    "oblivious": ("NIC random entropy per packet", {"nic.packet_spraying_type": "oblivious"}),
    "reps": ("NIC recycled entropies (REPS)", {"nic.packet_spraying_type": "reps"}),
    "adaptive": ("switch: least-queued member", {"switch.load_balancing_method": "adaptive"}),
    "flowlet": ("switch: flowlets", {"switch.load_balancing_method": "flowlet"}),
    "spray": ("switch: random member per packet", {"switch.load_balancing_method": "spray"}),
    "pinned": ("path by destination slice", {"lb.policy": "pinned"}),
    "qp_scaling": ("QPs per host pair (E-ECMP)", {"lb.policy": "qp_scaling"}),
}

_FLOW_METHODS: dict[str, tuple[str, dict[str, Any]]] = {
    "ecmp": ("per-flow ECMP hash", {"lb.policy": "ecmp"}),
    "ideal_spray": ("even split over all paths", {"lb.policy": "ideal_spray"}),
    "pinned": ("path by destination slice", {"lb.policy": "pinned"}),
    "qp_scaling": ("QPs per host pair (E-ECMP)", {"lb.policy": "qp_scaling"}),
}

DEFAULT_METHODS = {
    "packet": ("ecmp", "default", "oblivious", "reps", "adaptive", "flowlet", "spray"),
    "flow": ("ecmp", "ideal_spray", "pinned", "qp_scaling"),
}
"""The methods a comparison runs when none are named, per engine."""

QP_COUNT = 4  # qp_scaling's connections per pair when the scenario has lb.qp_count = 1


def compare_methods(engine: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """The methods ``engine`` can compare: name -> (what it is, overrides on top of ECMP).

    Packet engine: NIC spraying types and switch methods (and the two policies); flow engine:
    the policies it can answer.
    """
    return _PACKET_METHODS if engine == "packet" else _FLOW_METHODS


def method_overrides(method: str, engine: str, qp_count: int) -> dict[str, Any]:
    """The ``--set`` overrides that turn a scenario into ``method`` on ``engine``.

    ``qp_count`` is the scenario's ``lb.qp_count``: ``qp_scaling`` uses it (and the scenario's
    ``lb.qp_mode``), or, if it is 1, :data:`QP_COUNT` QPs splitting every message (posting
    whole messages in turn changes nothing for one message per pair).  On the packet engine
    ``pinned`` and ``qp_scaling`` turn PDC groups off so that every connection keeps its own
    source port.
    """
    table = compare_methods(engine)
    if method not in table:
        raise ConfigError(
            f"--methods: '{method}' is not a {engine}-engine method; allowed: {', '.join(table)}"
        )
    out: dict[str, Any] = (
        dict(_BASE_PACKET) if engine == "packet" else {"switch.load_balancing_method": "ecmp"}
    )
    out.update(table[method][1])
    if method == "qp_scaling" and qp_count <= 1:
        out["lb.qp_count"] = QP_COUNT
        out["lb.qp_mode"] = "split"
    if engine == "packet" and method in ("pinned", "qp_scaling"):
        out["nic.pdc_groups_enabled"] = False
    return out
