"""Sections of a report about one run's output directory (also reused for a sweep's point)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from fabricsim._compat import pd
from fabricsim.analysis import moe_incast, run_files
from fabricsim.analysis.diagnostics import diagnose, link_timeline_stats
from fabricsim.config.loader import load_scenario
from fabricsim.errors import ConfigError
from fabricsim.experiments.describe import describe_fabric, describe_run, describe_workload
from fabricsim.metrics.readable import summary_rows
from fabricsim.report import figures
from fabricsim.report.guard import guarded
from fabricsim.report.html import Section, dict_table, scaled, with_units
from fabricsim.report.labels import value_label

#: section ids (stable: tests and links rely on them)
SECTION_IDS = (
    "summary", "sweep-table", "fct-cdf", "fct-percentiles", "fct-vs-load", "ttft-vs-load",
    "spine-heatmap", "link-timelines", "moe-incast", "cct-inflation", "diagnostics", "config",
)  # fmt: skip

_PCT_KEYS = ("fct_mean_s", "fct_p50_s", "fct_p95_s", "fct_p99_s", "fct_max_s")
_TTFT_KEYS = ("ttft_mean_s", "ttft_p50_s", "ttft_p95_s", "ttft_p99_s", "ttft_max_s")
_TOP_LINKS = 8
TIMELINES_OFF = (
    "No queue or utilization pictures: this run recorded no timelines; "
    "rerun with --set records.timelines=true to add them."
)


def read_table(path: Path, required: bool = False) -> pd.DataFrame | None:
    """A parquet table, or None if the file is absent or empty.

    A corrupt file, or a missing one when ``required``, is a ConfigError naming it.
    """
    df = run_files.read_table(path, required=required)
    return df if df is not None and len(df) else None


def read_config(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "config.yaml"
    return run_files.read_yaml_mapping(path) if path.exists() else {}


def read_summary(run_dir: Path) -> dict[str, Any]:
    """``summary.json`` of a run, checked where the report reads numbers from it."""
    path = run_dir / "summary.json"
    summary = run_files.read_json_object(path)
    cct = summary.get("cct_inflation")
    if cct is not None and (isinstance(cct, bool) or not isinstance(cct, int | float)):
        raise ConfigError(f"{path}: 'cct_inflation' must be a number (got {cct!r})")
    return summary


def policy_label(config: dict[str, Any]) -> str:
    """How the run balanced load, for people: ``ECMP``, ``ARK``, ``REPS`` (NIC spraying or a
    switch method when the packet engine ran one, with the path policy when not ECMP).

    >>> policy_label({"lb": {"policy": "ark"}})
    'ARK'
    >>> policy_label({"lb": {"policy": "ecmp"}, "nic": {"packet_spraying_type": "reps"},
    ...               "engine": {"kind": "packet"}})
    'REPS'
    """
    lb = str((config.get("lb") or {}).get("policy", "?"))
    parts = [] if lb == "ecmp" else [value_label("lb.policy", lb)]
    if (config.get("engine") or {}).get("kind") == "packet":
        spray = (config.get("nic") or {}).get("packet_spraying_type")
        switch = (config.get("switch") or {}).get("load_balancing_method")
        if spray and spray != "none":
            parts.append(value_label("nic.packet_spraying_type", spray))
        if switch and switch != "ecmp":
            parts.append(value_label("switch.load_balancing_method", switch))
    return " + ".join(parts) or value_label("lb.policy", lb)


def describe_lines(config: dict[str, Any], summary: dict[str, Any]) -> list[str]:
    """The run line, the fabric line and the workload line (none if the config is not one)."""
    try:
        sc = load_scenario(config)
    except (ConfigError, ValueError, TypeError):
        return []
    engine = str(summary.get("engine", sc.engine.kind))
    seed = summary.get("seed", sc.seed)
    seeds = [int(seed)] if isinstance(seed, int) and not isinstance(seed, bool) else None
    return [describe_run(sc, engine, seeds), describe_fabric(sc), describe_workload(sc)]


def summary_section(summary: dict[str, Any], config: dict[str, Any] | None = None) -> Section:
    sec = Section("summary", "Summary")
    for line in describe_lines(config or {}, summary) if config else []:
        sec.note(line)
    sec.table(pd.DataFrame(summary_rows(summary), columns=["", "value"]))
    sec.details("every summary.json value", dict_table(summary))
    nested = {k: v for k, v in summary.items() if isinstance(v, dict)}
    for key, value in nested.items():
        sec.details(key, dict_table(value, "name", key))
    return sec


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        return None
    return int(value) if np.isfinite(value) else None


def unfinished_line(summary: Mapping[Any, Any]) -> str | None:
    """``2 of 1,024 flows did not complete (reason); FCT statistics cover the 1,022 that did``,
    or None when every flow finished.

    Reads ``flows_not_completed`` and ``not_completed_reason`` (``flows_total -
    flows_completed`` when a summary predates the first key).

    >>> unfinished_line({"flows_total": 1024, "flows_completed": 1022,
    ...                  "flows_not_completed": 2, "not_completed_reason": "time limit 0.1 s"})
    '2 of 1,024 flows did not complete (time limit 0.1 s); FCT statistics cover the 1,022 that did'
    >>> unfinished_line({"flows_total": 8, "flows_completed": 8, "flows_not_completed": 0})
    """
    total, done = _count(summary.get("flows_total")), _count(summary.get("flows_completed"))
    left = _count(summary.get("flows_not_completed"))
    if left is None and total is not None and done is not None:
        left = total - done
    if not left or left <= 0:
        return None
    if total is None:
        total = left + (done or 0)
    done = total - left if done is None else done
    reason = summary.get("not_completed_reason")
    why = f" ({reason})" if isinstance(reason, str) and reason.strip() else ""
    return (
        f"{left:,} of {total:,} flows did not complete{why}; "
        f"FCT statistics cover the {done:,} that did"
    )


def unfinished_lines(named: Sequence[tuple[str, Mapping[Any, Any]]], most: int = 8) -> list[str]:
    """:func:`unfinished_line` of each (name, summary) with unfinished flows, prefixed by its
    name; at most ``most`` lines, then one saying how many more."""
    lines = [f"{name}: {line}" for name, s in named if (line := unfinished_line(s))]
    if len(lines) > most:
        lines = [*lines[:most], f"... and {len(lines) - most} more with unfinished flows"]
    return lines


def percentile_rows(label: str, fct: np.ndarray) -> dict[str, Any]:
    done = fct[np.isfinite(fct)]
    row: dict[str, Any] = {"policy": label, "flows": len(fct), "completed": len(done)}
    if len(done):
        row.update(
            fct_mean_s=float(done.mean()), fct_p50_s=float(np.percentile(done, 50)),
            fct_p95_s=float(np.percentile(done, 95)), fct_p99_s=float(np.percentile(done, 99)),
            fct_max_s=float(done.max()),
        )  # fmt: skip
    return row


def fct_sections(
    samples: dict[str, np.ndarray],
    extra: pd.DataFrame | None = None,
    title: str | None = None,
    unfinished: list[str] | None = None,
) -> list[Section]:
    """FCT CDFs by policy and their percentiles (empty when no flow finished), the
    ``unfinished`` lines (:func:`unfinished_line`) above them."""
    if not any(np.isfinite(v).any() for v in samples.values()):
        return []
    cdf = Section("fct-cdf", "Flow completion time CDF")
    for line in unfinished or []:
        cdf.warn(line)
    cdf.figure("fct-cdf", figures.cdf_png(samples, "FCT", title), "FCT CDF by policy")
    pct = Section("fct-percentiles", "FCT percentiles")
    pct.table(scaled(pd.DataFrame([percentile_rows(k, v) for k, v in samples.items()])))
    if extra is not None and len(extra):
        pct.table(scaled(extra), caption="TTFT percentiles")
    return [cdf, pct]


def spine_section(run_dir: Path, note: str = "", title: str | None = None) -> Section | None:
    spines = read_table(run_dir / "timeline_spine_flows.parquet")
    if spines is None:
        return None
    sec = Section("spine-heatmap", "Active flows per spine")
    if note:
        sec.note(note)
    png = figures.spine_heatmap_png(spines, title)
    sec.figure("spine-heatmap", png, "active flows per spine")
    return sec


def link_section(run_dir: Path, note: str = "", title: str | None = None) -> Section | None:
    links = read_table(run_dir / "timeline_links.parquet")
    if links is None:
        return None
    stats = link_timeline_stats(links)
    if stats.empty:
        return None
    names = stats["link"].head(_TOP_LINKS).tolist()
    queues = bool((links["queue_bytes"] > 0).any())  # the flow engine has none
    sec = Section("link-timelines", "Link utilization and queues" if queues else "Link utilization")
    if note:
        sec.note(note)
    order = (
        "the deepest queues, then the highest utilization" if queues else "the highest utilization"
    )
    sec.note(f"The {len(names)} links with {order}.")
    png = figures.link_timelines_png(links, names, queues, title)
    sec.figure("link-timelines", png, "link timelines")
    return sec


def moe_section(
    run_dir: Path, config: dict[str, Any], flows: pd.DataFrame | None, title: str | None = None
) -> Section | None:
    """MoE dispatch (``003_*.txt`` Fig. 1 and 4): the hot receiver's queue and the backlog over
    time, receiver utilization and active destinations per sender, beside the fluid model."""
    tl = read_table(run_dir / "timeline_backlog.parquet")
    if tl is None or flows is None or "hot_queue_bytes" not in tl.columns:
        return None
    scheduler = str((config.get("workload") or {}).get("scheduler", "run"))
    label = value_label("workload.scheduler", scheduler)
    rate = float((config.get("topology") or {}).get("host_link_gbps", 0) or 0) * 1e9
    times = np.linspace(0.0, float(tl["time_s"].max()), 400)
    k_model = q_model = None
    if scheduler == "round_robin" and rate > 0:
        k, q = moe_incast.run_model(flows, rate, times)
        k_model, q_model = (times, k), (times, q)
    sec = Section("moe-incast", "MoE dispatch: incast at the hot receiver")
    sec.note(
        "Hot receiver = the one receiving the most bytes. Dashed: the exact fluid model of "
        "round-robin senders (analysis/moe_incast.py) for this run's matrix (each sender's "
        "messages sorted by size, averaged over senders): no feedback and unbounded buffers, so "
        "finite buffers, trimming and congestion control keep a packet run's backlog below it; "
        "rate-based senders have no model line."
    )
    png = figures.moe_queue_png({label: tl}, q_model, title)
    sec.figure("moe-queue", png, "hot receiver queue")
    active = {label: (times, moe_incast.active_destinations(flows, times))}
    sec.figure(
        "moe-utilization", figures.moe_utilization_png({label: tl}, active, k_model, title),
        "receiver utilization and active destinations",
    )  # fmt: skip
    return sec


def cct_section(
    values: dict[str, float], table: pd.DataFrame | None = None, title: str | None = None
) -> Section | None:
    if not values:
        return None
    sec = Section("cct-inflation", "Collective completion time inflation")
    sec.note("CCT / its lower bound (1 = no inflation).")
    png = figures.bars_png(values, "CCT inflation", 1.0, title)
    sec.figure("cct-inflation", png, "CCT inflation")
    if table is not None:
        sec.table(table)
    return sec


def diagnostics_section(
    run_dir: Path, note: str = "", sec: Section | None = None
) -> Section | None:
    """Diagnostics tables of a run (appended to ``sec`` if given); None if it has none."""
    diag = diagnose(run_dir)
    sec = sec or Section("diagnostics", "Diagnostics")
    before = len(sec.parts)
    if note:
        sec.note(note)
    steps = diag.uplink_steps
    if steps is not None and len(steps):
        caption = "Uplink bytes per step (max/mean over each switch's uplinks)"
        sec.table(with_units(steps), caption=caption)
        sec.note(
            "8 equal flows hashed onto 8 uplinks give max/mean 2.6 on average: hashing, not a fault."
        )
    if diag.link_stats is not None and len(diag.link_stats):
        stats = diag.link_stats
        queue_cols = [c for c in stats.columns if str(c).startswith("queue_")]
        if queue_cols and not (stats[queue_cols].fillna(0) != 0).any().any():
            stats = stats.drop(columns=queue_cols)  # no queues (the flow engine): utilization only
            caption = "Link utilization (time-weighted)"
        else:
            caption = "Link utilization and queue depth (time-weighted)"
        sec.table(with_units(stats), caption=caption, max_rows=25)
    if diag.ports is not None and len(diag.ports):
        sec.table(with_units(diag.ports), caption="Port counters (ports with traffic)", max_rows=40)
    if diag.nics is not None and len(diag.nics):
        sec.table(with_units(diag.nics), caption="NIC transport counters", max_rows=40)
    counters = {**(diag.transport or {}), **(diag.out_of_order or {})}
    if counters:
        sec.table(dict_table(counters, "counter"), caption="Transport and out-of-order counters")
    if len(sec.parts) == before + (1 if note else 0):
        del sec.parts[before:]
    return sec if sec.parts else None


def config_section(run_dir: Path, extra: dict[str, Any] | None = None) -> Section | None:
    path = run_dir / "config.yaml"
    if not path.exists() and not extra:
        return None
    sec = Section("config", "Effective configuration")
    if extra:
        sec.pre(yaml.safe_dump(extra, sort_keys=False, default_flow_style=None), caption="Sweep")
    if path.exists():
        sec.pre(run_files.read_text(path), caption=f"{path.parent.name}/config.yaml")
    return sec


def check_run_files(run_dir: Path) -> None:
    """Read every input file of a run's report once, before any figure is drawn.

    A missing ``summary.json`` or ``flows.parquet``, or any corrupt file, is a ConfigError
    naming it (so a bad file fails fast and nothing is half-built).
    """
    read_summary(run_dir)
    read_config(run_dir)
    for name in run_files.TABLE_COLUMNS:
        run_files.read_table(run_dir / f"{name}.parquet", required=name == "flows")
    for path in sorted(run_dir.glob("*.json")):
        run_files.read_json(path)
    stats = run_dir / "uet_transport_stats.json"
    if stats.exists():
        run_files.read_transport_stats(stats)


def run_sections(run_dir: Path) -> list[Section]:
    """Every section a run directory has data for, in page order."""
    check_run_files(run_dir)
    summary = read_summary(run_dir)
    config = read_config(run_dir)
    flows = read_table(run_dir / "flows.parquet", required=True)
    title = "\n".join(describe_lines(config, summary)) or None
    out: list[Section] = [summary_section(summary, config)]
    if not (run_dir / "timeline_links.parquet").exists():
        out[0].note(TIMELINES_OFF)
    label = policy_label(config)
    left = [line] if (line := unfinished_line(summary)) else []
    secs: list[Section] | None = None
    if flows is not None:
        fct = flows["fct_s"].to_numpy(dtype=float)
        ttft = {k: summary[k] for k in _TTFT_KEYS if summary.get(k) is not None}
        extra = pd.DataFrame([{"policy": label, **ttft}]) if ttft else None
        secs = guarded("section fct-cdf", lambda: fct_sections({label: fct}, extra, title, left))
        out += secs or []
    if left and not secs:  # no flow finished: no FCT section to carry the line
        out[0].warn(left[0])
    cct = summary.get("cct_inflation")
    builders: dict[str, Callable[[], Section | None]] = {
        "spine-heatmap": lambda: spine_section(run_dir, "", title),
        "link-timelines": lambda: link_section(run_dir, "", title),
        "moe-incast": lambda: moe_section(run_dir, config, flows, title),
        "cct-inflation": lambda: (
            cct_section({label: float(cct)}, None, title) if cct is not None else None
        ),
        "diagnostics": lambda: diagnostics_section(run_dir),
        "config": lambda: config_section(run_dir),
    }
    return out + built_sections(builders)


def built_sections(builders: dict[str, Callable[[], Section | None]]) -> list[Section]:
    """Each builder's section, in order; one that fails is left out with one warning line
    naming it (:func:`~fabricsim.report.guard.guarded`), the rest of the page is kept."""
    out = []
    for sid, build in builders.items():
        sec = guarded(f"section {sid}", build)
        if sec is not None:
            out.append(sec)
    return out
