"""Human labels for legends and tables: ``ECMP``, ``REPS``, ``round robin``, ``QPS 25``.

A figure shows what was compared in the words of a slide, not the config key that selected it
(``nic.packet_spraying_type=none``); :func:`value_label` is the one place that names values,
:func:`natural_key` the one order of run and point names (``qps5`` before ``qps10``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from fabricsim.experiments.plan import point_label
from fabricsim.metrics.readable import METRIC_LABELS
from fabricsim.transport import registered_transports, transport_for

__all__ = [
    "axis_label",
    "figure_labels",
    "method_label",
    "metric_label",
    "natural_key",
    "value_label",
]

_VALUES: dict[str, dict[str, str]] = {
    "lb.policy": {
        "ecmp": "ECMP", "ark": "ARK", "pinned": "pinned", "qp_scaling": "QP scaling",
        "ideal_spray": "ideal spray",
    },
    "nic.packet_spraying_type": {
        "none": "ECMP", "default": "round-robin spraying", "oblivious": "oblivious spraying",
        "plb": "PLB", "rod": "ROD", "reps": "REPS",
    },
    "switch.load_balancing_method": {
        "ecmp": "ECMP", "adaptive": "adaptive switch", "flowlet": "flowlets",
        "spray": "switch spraying",
    },
    "workload.scheduler": {"round_robin": "round robin", "rate_based": "rate based"},
}  # fmt: skip

_VALUES["nic.transport"] = {name: transport_for(name).label for name in registered_transports()}

_ACRONYMS = {"ecmp", "ark", "reps", "plb", "rod", "nscc", "dcqcn", "pfc", "ecn"}

_KEYS = {
    "workload.qps": "QPS", "workload.zipf_s": "Zipf s", "workload.requests": "requests",
    "workload.size_bytes": "message size (B)", "workload.senders": "senders",
    "topology.spines": "spines", "topology.leaves": "leaves", "topology.k": "k",
    "lb.qp_count": "QPs per pair",
}  # fmt: skip


_METRICS = {
    "fct_p50_s": "median FCT", "fct_max_s": "max FCT", "ttft_p50_s": "median TTFT",
    "ttft_max_s": "max TTFT", "cct_lower_bound_s": "CCT lower bound",
}  # fmt: skip


def metric_label(metric: str) -> str:
    """A summary metric for people: ``fct_p99_s`` -> ``P99 FCT``.

    >>> metric_label("fct_p50_s"), metric_label("ttft_p95_s"), metric_label("events")
    ('median FCT', 'P95 TTFT', 'events')
    """
    return METRIC_LABELS.get(metric) or _METRICS.get(metric) or metric.replace("_", " ")


def axis_label(key: str) -> str:
    """A key for people: ``workload.qps`` -> ``QPS``, else its last part with spaces.

    >>> axis_label("workload.qps"), axis_label("topology.host_link_gbps")
    ('QPS', 'host link gbps')
    """
    return _KEYS.get(key) or key.rsplit(".", 1)[-1].replace("_", " ")


def _number(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() and abs(value) >= 1e4 else f"{value:g}"


def value_label(key: str, value: Any) -> str:
    """How a legend names ``key = value``.

    >>> value_label("nic.packet_spraying_type", "none"), value_label("lb.policy", "ark")
    ('ECMP', 'ARK')
    >>> value_label("workload.scheduler", "round_robin"), value_label("workload.qps", 25.0)
    ('round robin', 'QPS 25')
    >>> value_label("cc.algorithm", "nscc"), value_label("topology.failed_links", "[]")
    ('NSCC', 'failed links []')
    >>> value_label("nic.transport", "roce_sr")
    'RoCE-SR'
    """
    text = str(value)
    known = _VALUES.get(key, {}).get(text)
    if known is not None:
        return known
    if isinstance(value, bool) or text in ("True", "False", "true", "false"):
        return f"{axis_label(key)} {'on' if text.lower() == 'true' else 'off'}"
    if isinstance(value, int | float):
        return f"{axis_label(key)} {_number(value)}"
    if text.lower() in _ACRONYMS:
        return text.upper()
    if re.fullmatch(r"[a-z][a-z0-9_]*", text) and "_" in text:
        return text.replace("_", " ")
    if re.fullmatch(r"[a-z][a-z0-9]*", text):
        return text
    return f"{axis_label(key)} {text}"


def method_label(name: str) -> str:
    """A ``fabricsim compare`` method (a path policy, spraying type or switch method name).

    >>> method_label("ecmp"), method_label("reps"), method_label("qp_scaling")
    ('ECMP', 'REPS', 'QP scaling')
    """
    for point in ("lb.policy", "nic.packet_spraying_type", "switch.load_balancing_method"):
        if name in _VALUES[point]:
            return _VALUES[point][name]
    return value_label("method", name)


def natural_key(name: Any) -> tuple[Any, ...]:
    """Sort key reading digit runs as numbers (``qps5`` < ``qps10``; ``s0.25`` < ``s1``).

    >>> sorted(["qps10", "qps1", "qps5", "qps2.5"], key=natural_key)
    ['qps1', 'qps2.5', 'qps5', 'qps10']
    """
    parts = re.split(r"(\d+(?:\.\d+)?)", str(name))
    return tuple((0, float(p), "") if i % 2 else (1, 0.0, p) for i, p in enumerate(parts))


def figure_labels(points: Sequence[dict[str, Any]]) -> list[str]:
    """Each grid point's name in figure file names (``cdf_<name>.png``): its point label
    (``zipf_s0.25``, the value formatted as in run directories), or ``all`` without a grid; two
    points whose labels agree (values alike once cut to a file name) get a suffix from their
    parameters, so two grid values never write one file (the same names for any order).

    >>> figure_labels([{"workload.zipf_s": 0.25}, {"workload.zipf_s": 1.0}])
    ['zipf_s0.25', 'zipf_s1']
    >>> a, b = figure_labels([{"k": "x" * 50 + "a"}, {"k": "x" * 50 + "b"}])
    >>> a != b and a.startswith("k" + "x" * 39)
    True
    """
    labels = [point_label(p) or "all" for p in points]
    counts = Counter(labels)
    out = []
    for label, params in zip(labels, points, strict=True):
        if counts[label] > 1:
            text = json.dumps(params, sort_keys=True, default=str)
            label = f"{label}-{hashlib.sha1(text.encode()).hexdigest()[:6]}"
        out.append(label)
    return out
