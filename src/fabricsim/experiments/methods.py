"""The load-balancing methods ``fabricsim compare`` runs, per engine, read from the registries.

:func:`compare_methods` lists every registered method (path policy, NIC spraying type, switch
method; :func:`fabricsim.lb.registered_methods`) that runs on the engine and is ``compared``,
as name -> (its ``label``, the overrides that select it on top of per-flow ECMP), the baseline
``ecmp`` first.  A newly registered method appears here by itself.  :func:`default_methods` is
what a comparison runs when none are named; :func:`method_overrides` turns a name into the
``--set`` overrides of one comparison run.

Examples
--------
>>> list(compare_methods("packet"))[:3], "reps" in compare_methods("packet")
(['ecmp', 'default', 'oblivious'], True)
>>> default_methods("flow")
('ecmp', 'ideal_spray', 'pinned', 'qp_scaling')
>>> method_overrides("reps", "packet", 1)["nic.packet_spraying_type"]
'reps'
"""

from __future__ import annotations

from typing import Any

from fabricsim.errors import ConfigError
from fabricsim.lb import registered_methods
from fabricsim.lb.registry import Method

__all__ = ["QP_COUNT", "compare_methods", "default_methods", "method_overrides"]

_BASE_PACKET = {
    "lb.policy": "ecmp",
    "nic.packet_spraying_type": "none",
    "switch.load_balancing_method": "ecmp",
}
_BASELINE = "ecmp"  # lb.policy ecmp with no spraying and hashing switches
_SPREADING = ("nic.packet_spraying_type", "switch.load_balancing_method")

QP_COUNT = 4  # qp_scaling's connections per pair when the scenario has lb.qp_count = 1


def _entry(m: Method) -> tuple[str, dict[str, Any]]:
    over: dict[str, Any] = {} if m.name == _BASELINE else m.overrides
    return (m.label or m.help, over)


def _groups(engine: str) -> tuple[list[Method], list[Method], list[Method]]:
    """The baseline, the spraying/switch methods, and the other policies ``engine`` runs."""
    runs = [m for m in registered_methods() if m.compared and engine in m.engines]
    base = [m for m in runs if m.point == "lb.policy" and m.name == _BASELINE]
    spreading = [m for m in runs if m.point in _SPREADING]
    policies = [m for m in runs if m.point == "lb.policy" and m.name != _BASELINE]
    # the policies only this engine runs first (ideal_spray on the flow engine)
    policies.sort(key=lambda m: len(m.engines))
    return base, spreading, policies


def compare_methods(engine: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """The methods ``engine`` can compare: name -> (what it is, overrides on top of ECMP).

    The flow engine's overrides are its policies' (``lb.policy``) and spraying types'; the
    packet engine also has the switch methods.
    """
    base, spreading, policies = _groups(engine)
    out = {m.name: _entry(m) for m in (*base, *spreading, *policies)}
    if engine == "flow" and _BASELINE in out:
        out[_BASELINE] = (out[_BASELINE][0], {"lb.policy": _BASELINE})
    return out


def default_methods(engine: str) -> tuple[str, ...]:
    """What a comparison runs when no ``--methods`` are named.

    Packet engine: the baseline and every spraying type and switch method (the mechanisms it
    exists to show); flow engine: the baseline and every path policy.
    """
    base, spreading, policies = _groups(engine)
    chosen = spreading if engine == "packet" else policies
    return tuple(m.name for m in (*base, *chosen))


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
