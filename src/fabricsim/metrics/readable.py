"""A run's summary (and a study's numbers) for people: short rows, units chosen per magnitude.

``fabricsim run`` prints it and :class:`~fabricsim.metrics.Result` shows it in a notebook;
every key stays in ``summary.json``.

Examples
--------
>>> rows = dict(summary_rows({"flows_total": 1000, "flows_completed": 748, "fct_mean_s": 2.1e-4,
...                           "sim_end_s": 0.5}))
>>> rows["flows completed"], rows["FCT"], rows["simulated time"]
('748 of 1,000 = 75 %', 'mean 210 µs', '500 ms')
"""

from __future__ import annotations

import math
from typing import Any

from fabricsim.units import human_bytes, human_number, human_seconds, human_share, seconds_unit

__all__ = [
    "METRIC_LABELS", "PRIMARY_MARK", "delta_text", "human_pct", "human_share", "mean_text",
    "study_point_rows",
    "summary_rows",
]  # fmt: skip


def _quantiles(summary: dict[str, Any], stem: str) -> str | None:
    parts = [
        f"{label} {human_seconds(summary[f'{stem}_{q}_s'])}"
        for q, label in (
            ("mean", "mean"),
            ("p50", "P50"),
            ("p95", "P95"),
            ("p99", "P99"),
            ("max", "max"),
        )  # fmt: skip
        if isinstance(summary.get(f"{stem}_{q}_s"), int | float)
    ]
    return " · ".join(parts) or None


def summary_rows(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """The single run's table for people: (what, value) rows, units chosen per magnitude.

    Only what a reader looks at first; every key is in ``summary.json`` (and ``--json``).
    """
    s = summary
    rows: list[tuple[str, str]] = []
    total = s.get("flows_total", 0)
    rows.append(("flows completed", human_share(s.get("flows_completed", 0), total)))
    left = s.get("flows_not_completed", total - s.get("flows_completed", 0))
    if left:
        why = s.get("not_completed_reason") or "unknown"
        done = total - left
        rows.append(("not completed", f"{left:,} ({why}); FCT: the {done:,} completed only"))
    for stem, label in (("fct", "FCT"), ("ttft", "TTFT")):
        text = _quantiles(s, stem)
        if text:
            rows.append((label, text))
    if "cct_s" in s:
        bound = s.get("cct_lower_bound_s")
        extra = (
            f" (lower bound {human_seconds(bound)}, × {s['cct_inflation']:.2f})" if bound else ""
        )
        rows.append(("CCT", human_seconds(s["cct_s"]) + extra))
    if "iteration_time_s" in s:  # a Chakra replay (None: a flow did not finish)
        for key, label in (
            ("iteration_time_s", "iteration time"),
            ("exposed_comm_s", "exposed communication"),
        ):
            value = s.get(key)
            rows.append((label, "unfinished" if value is None else human_seconds(value)))
    if "step_efficiency" in s:
        rows.append(("step efficiency", f"{s['step_efficiency']:.3f}"))
    if "bytes_total" in s:
        conserved = s.get("bytes_conserved")
        ok = "" if conserved is None else "(conserved)" if conserved else "(NOT conserved)"
        delivered = f"{human_bytes(s.get('bytes_delivered', 0))} of {human_bytes(s['bytes_total'])}"
        rows.append(("bytes delivered", f"{delivered} {ok}".strip()))
    if "packets_sent" in s:
        sent = s["packets_sent"]
        rows.append(("packets sent", f"{sent:,}"))
        for key in ("packets_retransmitted", "packets_trimmed", "packets_dropped"):
            if s.get(key):
                rows.append((key.replace("_", " "), human_share(s[key], sent)))
        if s.get("timeouts"):
            rows.append(("timeouts", f"{s['timeouts']:,}"))
    if s.get("pfc_pauses"):
        rows.append(
            ("PFC pauses", f"{s['pfc_pauses']:,} ({human_seconds(s['pfc_paused_s'])} paused)")
        )
    for key, label in (("ark_fallbacks", "ARK fallbacks"), ("ark_races", "ARK races")):
        if key in s:
            rows.append((label, human_share(s[key], total)))
    peaks = s.get("spine_peak_flows")
    if isinstance(peaks, dict) and peaks:
        top = f"{max(peaks.values()):,} (busiest of {len(peaks)} top switches)"
        rows.append(("peak concurrent flows", top))
    if s.get("time_limit_reached"):
        rows.append(("time limit", "reached"))
    rows.append(("simulated time", human_seconds(s.get("sim_end_s", 0.0))))
    if "events" in s:
        rows.append(("events", f"{s['events']:,}"))
    return rows


# -- a paired study's numbers for people (fabricsim study, the default study, the report) -------
METRIC_LABELS = {
    "fct_mean_s": "mean FCT", "fct_p95_s": "P95 FCT", "fct_p99_s": "P99 FCT",
    "ttft_mean_s": "mean TTFT", "ttft_p95_s": "P95 TTFT", "ttft_p99_s": "P99 TTFT",
    "cct_s": "CCT",
}  # fmt: skip
"""How tables and figures name a study's metrics."""

PRIMARY_MARK = "★"
"""Marks, in a study's tables, the metrics its workload is judged by."""


def _num(x: Any) -> float:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else math.nan


def human_pct(x: float) -> str:
    """A signed percentage: one decimal below 10, none above.

    >>> human_pct(-2.63), human_pct(-29.9), human_pct(4.0)
    ('-2.6', '-30', '+4.0')
    """
    return f"{x:+.1f}" if abs(x) < 9.95 else f"{x:+.0f}"


def delta_text(row: dict[str, Any], short: bool = False) -> str:
    """A study row's change against the baseline: ``-14 % [-20, -7.0]`` (``-`` for the baseline),
    followed, when its interval holds 0, by ``not significant with N seeds (about M would
    resolve it)`` (``short``: ``n.s. (≈M seeds)``, for tables whose caption says the rest).

    >>> delta_text({"delta_pct": -14.2, "delta_ci_low": -20.1, "delta_ci_high": -7.0})
    '-14 % [-20, -7.0]'
    >>> row = {"delta_pct": -12.0, "delta_ci_low": -30.0, "delta_ci_high": 9.0, "seeds": 3,
    ...        "significant": False, "seeds_needed": 11}
    >>> delta_text(row)
    '-12 % [-30, +9.0] not significant with 3 seeds (about 11 would resolve it)'
    >>> delta_text(row, short=True)
    '-12 % [-30, +9.0] n.s. (≈11 seeds)'
    """
    d, low, high = (_num(row.get(k)) for k in ("delta_pct", "delta_ci_low", "delta_ci_high"))
    if not math.isfinite(d):
        return "-"
    text = f"{human_pct(d)} %"
    text += f" [{human_pct(low)}, {human_pct(high)}]" if math.isfinite(low) else ""
    if str(row.get("significant")) == "False":  # bool, numpy bool or a CSV's text
        text += " " + _not_significant(row, short)
    return text


def _not_significant(row: dict[str, Any], short: bool) -> str:
    needed = _num(row.get("seeds_needed"))
    if _num(row.get("delta_ci_low")) == _num(row.get("delta_ci_high")) == 0:
        return "(no change in any seed)"
    if short:
        return f"n.s. (≈{needed:,.0f} seeds)" if math.isfinite(needed) else "n.s. (>1,000 seeds)"
    seeds = _num(row.get("seeds"))
    text = f"not significant with {seeds:,.0f} seeds" if math.isfinite(seeds) else "not significant"
    if math.isfinite(needed):
        return f"{text} (about {needed:,.0f} would resolve it)"
    return f"{text} (too small for the spread: more than 1,000 seeds to resolve it)"


def mean_text(row: dict[str, Any], factor: float, unit: str) -> str:
    """A study row's mean with its 95 % CI in ``unit`` (``factor`` seconds per unit).

    >>> mean_text({"mean": 2.14e-4, "ci_low": 1.9e-4, "ci_high": 2.38e-4}, 1e-6, "µs")
    '214 µs [190, 238]'
    """
    mean, low, high = (_num(row.get(k)) for k in ("mean", "ci_low", "ci_high"))
    if not math.isfinite(mean):
        return "-"
    text = f"{human_number(mean / factor)} {unit}"
    return text + (
        f" [{human_number(low / factor)}, {human_number(high / factor)}]"
        if math.isfinite(low)
        else ""
    )


def study_point_rows(rows: list[dict[Any, Any]], names: list[str]) -> list[dict[str, str]]:
    """One grid point's table for people: per metric, each value's mean [CI] and each change
    against ``names[0]`` (``Δ <name>``), seconds in the unit the baseline's mean reads best in;
    a metric the workload is judged by (its rows' ``primary``) is marked ``★``."""
    out: list[dict[str, str]] = []
    for metric in dict.fromkeys(r["metric"] for r in rows):
        by = {str(r["value"]): r for r in rows if r["metric"] == metric}
        if names[0] not in by:
            continue
        factor, unit = seconds_unit(_num(by[names[0]]["mean"]))
        label = METRIC_LABELS.get(metric, metric)
        line = {"metric": f"{label} {PRIMARY_MARK}" if by[names[0]].get("primary") else label}
        line.update({n: mean_text(by.get(n, {}), factor, unit) for n in names})
        line.update({f"Δ {n}": delta_text(by.get(n, {})) for n in names[1:]})
        out.append(line)
    return out
