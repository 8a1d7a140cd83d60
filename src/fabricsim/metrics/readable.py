"""A run's summary for people: a short list of (what, value) rows, units chosen per magnitude.

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

from typing import Any

from fabricsim.units import human_bytes, human_seconds, human_share

__all__ = ["summary_rows"]


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
        rows.append(("time limit", "reached: flows left unfinished"))
    rows.append(("simulated time", human_seconds(s.get("sim_end_s", 0.0))))
    if "events" in s:
        rows.append(("events", f"{s['events']:,}"))
    return rows
