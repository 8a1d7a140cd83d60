"""Sections of a report about a sweep directory (``manifest.json`` + points + table)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from fabricsim._compat import pd
from fabricsim.analysis import run_files
from fabricsim.analysis.diagnostics import diagnose
from fabricsim.errors import ConfigError
from fabricsim.experiments.sweep_store import MANIFEST, POINT_FILE, TABLE, aggregate
from fabricsim.report import figures
from fabricsim.report.guard import guarded
from fabricsim.report.html import Section, dict_table, scaled, with_units
from fabricsim.report.labels import natural_key, value_label
from fabricsim.report.run_page import (
    built_sections,
    cct_section,
    check_run_files,
    config_section,
    describe_lines,
    diagnostics_section,
    link_section,
    percentile_rows,
    read_config,
    read_table,
    spine_section,
    unfinished_lines,
)

#: keys read as "the load" of a sweep, in order of preference
LOAD_KEYS = ("workload.qps", "workload.requests", "workload.size_bytes", "workload.senders")
_MAIN = (
    "flows_completed", "fct_mean_s", "fct_p50_s", "fct_p99_s", "ttft_mean_s", "ttft_p95_s",
    "step_efficiency", "cct_inflation", "ark_fallbacks", "packets_retransmitted",
)  # fmt: skip


_POINT_ID = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")


def read_manifest(out: Path) -> dict[str, Any]:
    """A sweep's ``manifest.json``, checked where the report relies on its shape.

    Point ids become paths (``points/<id>``), so they must be plain names.
    """
    path = out / MANIFEST
    manifest = run_files.read_json_object(path)
    spec, points = manifest.get("spec"), manifest.get("points")
    bad = f"{path}: not a fabricsim sweep manifest"
    if not isinstance(spec, dict) or not isinstance(points, list):
        raise ConfigError(f"{bad} (needs a 'spec' object and a 'points' list)")
    if not isinstance(spec.get("scenario"), str):
        raise ConfigError(f"{bad} ('spec.scenario' must be a string)")
    for key in ("grid", "zip"):
        pairs = spec.get(key)
        if not isinstance(pairs, list) or not all(
            isinstance(kv, list) and len(kv) == 2 and isinstance(kv[0], str) for kv in pairs
        ):
            raise ConfigError(f"{bad} ('spec.{key}' must be a list of [key, values] pairs)")
    for point in points:
        if not isinstance(point, dict) or not isinstance(point.get("params"), dict):
            raise ConfigError(f"{bad} (every point needs an object with 'params')")
        pid = point.get("id")
        if not isinstance(pid, str) or not _POINT_ID.fullmatch(pid):
            raise ConfigError(f"{bad} (point id {pid!r} is not a plain name)")
        for key in ("index", "seed", "config_hash"):
            if key not in point:
                raise ConfigError(f"{bad} (point {pid} lacks {key!r})")
    return manifest


def _check_points(out: Path, manifest: dict[str, Any]) -> None:
    """Each stored ``point.json`` must be a point record (the table is built from them)."""
    for point in manifest["points"]:
        path = out / "points" / point["id"] / POINT_FILE
        if path.exists():
            record = run_files.read_json_object(path)
            if not isinstance(record.get("summary"), dict):
                raise ConfigError(f"{path}: not a sweep point record (no 'summary' object)")


def _table(out: Path, manifest: dict[str, Any]) -> pd.DataFrame:
    path = out / TABLE
    if not path.exists():
        _check_points(out, manifest)
        return aggregate(out)
    table = run_files.read_table(path)
    assert table is not None
    keys = [k for k in _keys(manifest) if k != "seed"]
    missing = [c for c in ("point", "status", "seed", *keys) if c not in table.columns]
    if missing:
        raise ConfigError(f"{path}: lacks column(s) {', '.join(missing)} (not this sweep's table)")
    ids = {p["id"] for p in manifest["points"]}
    unknown = sorted(set(map(str, table["point"])) - ids)
    if unknown:
        raise ConfigError(f"{path}: point {unknown[0]!r} is not in the sweep's manifest")
    return table


def _keys(manifest: dict[str, Any]) -> list[str]:
    spec = manifest["spec"]
    return [k for k, _ in spec["grid"]] + [k for k, _ in spec["zip"]]


def _load_key(table: pd.DataFrame, keys: list[str]) -> str | None:
    numeric = [
        k for k in keys
        if k != "seed" and pd.api.types.is_numeric_dtype(table[k]) and table[k].nunique() > 1
    ]  # fmt: skip
    preferred = [k for k in LOAD_KEYS if k in numeric] + numeric
    return preferred[0] if preferred else None


def _group_key(keys: list[str], load: str | None) -> str | None:
    if "lb.policy" in keys and load != "lb.policy":
        return "lb.policy"
    others = [k for k in keys if k not in (load, "seed")]
    return others[0] if len(others) == 1 else None


def _label(row: pd.Series, keys: list[str]) -> str:
    return ", ".join(value_label(k, row[k]) for k in keys if k != "seed") or "all"


def _fct_samples(
    out: Path, ok: pd.DataFrame, keys: list[str], load: str | None
) -> dict[Any, dict[str, np.ndarray]]:
    """Flows' FCTs per value of the load key (one CDF each, never pooled across loads), by
    policy (or parameter set) within it, seeds pooled."""
    group = "lb.policy" if "lb.policy" in keys else None
    others = [k for k in keys if k != load]
    pooled: dict[Any, dict[str, list[np.ndarray]]] = {}
    for _, row in ok.iterrows():
        label = value_label(group, row[group]) if group else _label(row, others)
        flows = read_table(out / "points" / row["point"] / "flows.parquet", required=True)
        if flows is not None:
            at = pooled.setdefault(row[load] if load else None, {})
            at.setdefault(label, []).append(flows["fct_s"].to_numpy(dtype=float))
    return {
        value: {k: np.concatenate(v) for k, v in by.items()}
        for value, by in sorted(pooled.items(), key=lambda kv: natural_key(kv[0]))
    }


def _by_params(ok: pd.DataFrame, keys: list[str], metrics: list[str]) -> pd.DataFrame:
    params = [k for k in keys if k != "seed"]
    if not params:
        return ok[metrics].mean().to_frame().T
    return ok.groupby(params, sort=False)[metrics].mean().reset_index()


def _overview(manifest: dict[str, Any], table: pd.DataFrame, keys: list[str]) -> list[Section]:
    spec = manifest["spec"]
    info = {
        "scenario": spec["scenario"], "engine": spec.get("engine") or "(scenario default)",
        "points": len(table), "points_ok": int((table["status"] == "ok").sum()),
        "keys": ", ".join(keys) or "(seeds only)", "seeds": json.dumps(spec.get("seeds")),
    }  # fmt: skip
    summary = Section("summary", "Sweep summary").table(dict_table(info, "item"))
    cols = ["point", "status", "seed", *[k for k in keys if k != "seed"]]
    cols += [c for c in _MAIN if c in table.columns]
    sweep = Section("sweep-table", "Points").table(scaled(table[cols]), max_rows=200)
    sweep.note("Each point's run output is in points/<point>/ (fabricsim report points/<point>).")
    return [summary, sweep]


def _title(manifest: dict[str, Any], detail: Path | None) -> str | None:
    """``sweep <scenario> · <engine> · seeds ...`` and the fabric and workload lines (from the
    detail point's effective scenario)."""
    spec = manifest["spec"]
    seeds = spec.get("seeds") or []
    head = f"sweep {spec['scenario']} · {spec.get('engine') or 'default'} engine"
    head += f" · seeds {', '.join(map(str, seeds[:6]))}" if seeds else ""
    lines = [head]
    if detail is not None:
        config = read_config(detail)
        lines += describe_lines(config, {})[1:] if config else []
        keys = ", ".join(_keys(manifest))
        if len(lines) > 1 and keys:
            lines[-1] += f" (as {detail.name}; the sweep varies {keys})"
    return "\n".join(lines)


def _fct_by_load(
    samples: dict[Any, dict[str, np.ndarray]],
    load: str | None,
    title: str | None,
    unfinished: list[str] | None = None,
) -> list[Section]:
    """The FCT CDF section with one figure per load value, and the percentiles per value;
    the ``unfinished`` lines (points that left flows unfinished) above them."""
    if not any(np.isfinite(v).any() for by in samples.values() for v in by.values()):
        return []
    cdf = Section("fct-cdf", "Flow completion time CDF")
    for line in unfinished or []:
        cdf.warn(line)
    pct = Section("fct-percentiles", "FCT percentiles")
    rows = []
    names: set[str] = set()
    for value, by in samples.items():
        what = value_label(load, value) if load else "all points"
        head = f"{title}\n{what}" if title else what
        name = stem = "fct-cdf" if load is None else f"fct-cdf-{_slug(value)}"
        while name in names:  # two values alike once cut to a file name: never one file
            name = f"{stem}-{len(names)}"
        names.add(name)
        cdf.figure(name, figures.cdf_png(by, "FCT", head), f"FCT CDF at {what}")
        for label, fct in by.items():
            rows.append({**({load: value} if load else {}), **percentile_rows(label, fct)})
    if load:
        cdf.note(f"One CDF per {load} (seeds pooled within each).")
    pct.table(scaled(pd.DataFrame(rows)))
    return [cdf, pct]


def _slug(value: Any) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", f"{value:g}" if isinstance(value, float) else str(value))


def _vs_load(ok: pd.DataFrame, keys: list[str], title: str | None = None) -> list[Section]:
    load = _load_key(ok, keys)
    if load is None:
        return []
    group = _group_key(keys, load)
    out = []
    for sid, name, metrics in (
        ("fct-vs-load", "FCT vs load", ["fct_p50_s", "fct_p99_s"]),
        ("ttft-vs-load", "TTFT vs load", ["ttft_mean_s", "ttft_p95_s"]),
    ):
        have = [m for m in metrics if m in ok.columns and ok[m].notna().any()]
        if not have:
            continue
        sec = Section(sid, name)
        sec.note(
            f"Mean over seeds, band: its 95 % confidence interval (Student t on the log scale, above 0); x = {load}"
            + (f", one line per {group}" if group else "")
        )
        png = figures.vs_load_png(ok, load, have, group, title)
        out.append(sec.figure(sid, png, name))
    return out


def _cct(ok: pd.DataFrame, keys: list[str]) -> Section | None:
    if "cct_inflation" not in ok.columns or not ok["cct_inflation"].notna().any():
        return None
    by = _by_params(ok, keys, ["cct_inflation"])
    values = {_label(row, keys): float(row["cct_inflation"]) for _, row in by.iterrows()}
    return cct_section(values, by)


def _detail_point(out: Path, ok: pd.DataFrame) -> tuple[Path | None, str]:
    """The first point with timelines (else the first point), and a note naming it."""
    dirs = [out / "points" / p for p in ok["point"]]
    with_tl = [d for d in dirs if (d / "timeline_links.parquet").exists()]
    chosen = (with_tl or dirs or [None])[0]
    if chosen is None:
        return None, ""
    return chosen, f"From point {chosen.name} (run fabricsim report points/<point> for any other)."


def _diagnostics(out: Path, ok: pd.DataFrame, keys: list[str], detail: Path | None, note: str):
    """A digest row per point, then the detail point's full tables."""
    rows = []
    params = ["point", *[k for k in keys if k != "seed"]]
    for _, row in ok.iterrows():
        digest = diagnose(out / "points" / row["point"]).to_dict()
        rows.append({**{k: row[k] for k in params}, **digest})
    sec = Section("diagnostics", "Diagnostics")
    frame = pd.DataFrame(rows).dropna(axis=1, how="all") if rows else pd.DataFrame()
    if len(frame.columns) > len(params):  # a digest with values, not only the point's keys
        sec.table(with_units(frame), caption="Per point (worst values)", max_rows=200)
    if detail is not None:
        diagnostics_section(detail, note, sec)
    return sec if sec.parts else None


def sweep_sections(out: Path, manifest: dict[str, Any] | None = None) -> list[Section]:
    """Every section a sweep directory has data for, in page order."""
    manifest = read_manifest(out) if manifest is None else manifest
    keys = _keys(manifest)
    table = _table(out, manifest)
    ok = table[table["status"] == "ok"].reset_index(drop=True)
    for point in ok["point"]:
        check_run_files(out / "points" / str(point))
    sections = _overview(manifest, table, keys)
    detail, note = _detail_point(out, ok)
    title = _title(manifest, detail)
    load = _load_key(ok, keys) if len(ok) else None
    ttft = [c for c in ("ttft_mean_s", "ttft_p95_s", "ttft_p99_s") if c in ok.columns]
    samples = _fct_samples(out, ok, keys, load)
    left = unfinished_lines(
        [(f"point {row['point']} ({_label(row, keys)})", row.to_dict()) for _, row in ok.iterrows()]
    )
    fct = guarded("section fct-cdf", lambda: _fct_by_load(samples, load, title, left)) or []
    for line in left if not fct else []:  # no flow finished: the summary carries the lines
        sections[0].warn(line)
    sections += fct
    if ttft and len(ok):
        pct = next((s for s in sections if s.id == "fct-percentiles"), None)
        if pct is not None:
            by = scaled(_by_params(ok, keys, ttft))
            pct.table(by, caption="TTFT percentiles (mean over seeds)")
    sections += guarded("section fct-vs-load", lambda: _vs_load(ok, keys, title)) or []
    builders: dict[str, Callable[[], Section | None]] = {}
    if detail is not None:
        builders["spine-heatmap"] = lambda: spine_section(detail, note, title)
        builders["link-timelines"] = lambda: link_section(detail, note, title)
    builders["cct-inflation"] = lambda: _cct(ok, keys)
    builders["diagnostics"] = lambda: _diagnostics(out, ok, keys, detail, note)
    sections += built_sections(builders)
    spec = {k: v for k, v in manifest["spec"].items() if k != "version"}
    cfg = config_section(detail if detail is not None else out, spec)
    if detail is not None and not read_config(detail):
        cfg = config_section(out, spec)
    return sections + ([cfg] if cfg is not None else [])
