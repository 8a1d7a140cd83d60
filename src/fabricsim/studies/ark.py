"""The ARK study (``001_*.txt``): ECMP vs ARK for KV-cache transfers, on paired seeds.

:func:`default_study` is what ``fabricsim run`` (no scenario) runs: the built-in ``ark``
scenario under ``lb.policy=ecmp`` and ``lb.policy=ark`` on the same seeds (same requests, same
prompts, same host pairs, same switch salts), a side-by-side table, every run's output directory
and PNG plots.  :func:`qps_sweep` repeats the comparison over request rates (the paper's Fig. 2
and Fig. 4).

Examples
--------
>>> runs = paired_runs(load_scenario("ark").with_overrides({"workload.requests": 30}), [1])
>>> sorted(runs)
[('ark', 1), ('ecmp', 1)]
>>> row = comparison(runs)
>>> bool(row.loc["fct_mean_s", "ecmp"] > 0)
True
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fabricsim.config.loader import effective_scenario, load_scenario, parse_set_options
from fabricsim.config.models import Scenario
from fabricsim.errors import ConfigError
from fabricsim.metrics.outdir import prepare_out_dir
from fabricsim.metrics.results import Result, dumps_json
from fabricsim.runner import check_engine, run
from fabricsim.sweep.backends import (
    check_workers,
    signals_deferred,
    sigterm_as_interrupt,
    stop_pool,
    worker_pool,
)
from fabricsim.workloads.kv_cache import kv_bytes_per_token_of
from fabricsim.workloads.kv_models import RankZipf

__all__ = [
    "POLICIES",
    "comparison",
    "default_study",
    "offered_load",
    "paired_runs",
    "plot_fct_ttft",
    "plot_spine_heatmap",
    "plot_sweep",
    "qps_sweep",
    "sweep_table",
]

POLICIES = ("ecmp", "ark")
DEFAULT_SEEDS = 3
_METRICS = ("fct_mean_s", "fct_p95_s", "ttft_mean_s", "ttft_p95_s")
_LABELS = {
    "fct_mean_s": "mean FCT (s)",
    "fct_p95_s": "P95 FCT (s)",
    "ttft_mean_s": "mean TTFT (s)",
    "ttft_p95_s": "P95 TTFT (s)",
}


# -- runs --------------------------------------------------------------------------------------
def paired_runs(
    base: Scenario, seeds: Iterable[int], policies: Sequence[str] = POLICIES
) -> dict[tuple[str, int], Result]:
    """Run ``base`` under each policy on each seed (same seed = same workload for all policies).

    Returns
    -------
    dict
        ``(policy, seed) -> Result``.
    """
    out: dict[tuple[str, int], Result] = {}
    for seed in seeds:
        for policy in policies:
            variant = base.varying({"lb.policy"})  # ark's own keys stay for its runs
            sc = variant.with_overrides({"seed": int(seed), "lb.policy": policy})
            out[(policy, int(seed))] = run(sc, engine="flow")
    return out


def _peak(summary: dict[str, Any]) -> dict[str, int]:
    return {str(k): int(v) for k, v in summary.get("spine_peak_flows", {}).items()}


def comparison(runs: dict[tuple[str, int], Result]) -> pd.DataFrame:
    """Seed-averaged metrics, one column per policy and a relative change column.

    Rows: mean/P95 FCT and TTFT (s, the mean over seeds of each run's value), each spine's peak
    of concurrent flows (mean over seeds), the largest of those peaks, and ARK's counters.
    ``change_pct`` is ``100 * (ark / ecmp - 1)`` when both policies are present.
    """
    policies = list(dict.fromkeys(p for p, _ in runs))
    data: dict[str, dict[str, float]] = {}
    for policy in policies:
        summaries = [r.summary for (p, _), r in runs.items() if p == policy]
        col: dict[str, float] = {m: float(np.mean([s[m] for s in summaries])) for m in _METRICS}
        peaks = [_peak(s) for s in summaries]
        for spine in peaks[0]:
            col[f"peak_flows_{spine}"] = float(np.mean([p[spine] for p in peaks]))
        col["peak_flows_max"] = float(np.mean([max(p.values()) for p in peaks]))
        for key in ("ark_races", "ark_fallbacks"):
            col[key] = float(np.mean([s.get(key, np.nan) for s in summaries]))
        data[policy] = col
    frame = pd.DataFrame(data)
    if "ecmp" in frame and "ark" in frame:
        frame["change_pct"] = 100.0 * (frame["ark"] / frame["ecmp"] - 1.0)
    return frame


def offered_load(sc: Scenario) -> float:
    """Offered load on the prefill leaf's uplinks: ``qps * E[KV bytes] * 8 / uplink capacity``.

    Uses the exact mean of the prompt distribution (payload only, no headers); NaN when the
    fabric is not a leaf-spine or the prompts come from a trace.  ``ark`` at QPS 25: 0.87; at
    QPS 30: 1.05 (past the spine capacity).
    """
    wl, topo = sc.workload, sc.topology
    if wl.kind != "kv_cache" or topo.kind != "leaf_spine" or wl.prompt == "trace":
        return float("nan")
    if wl.prompt == "zipf":
        mean = RankZipf(wl.prompt_min_tokens, wl.prompt_max_tokens, wl.prompt_theta).mean()
    else:
        mean = float(wl.prompt_tokens)
    uplinks_bps = topo.spines * topo.parallel_links * topo.fabric_link_gbps * 1e9
    return wl.qps * mean * kv_bytes_per_token_of(wl) * 8 / uplinks_bps


def _sweep_point(args: tuple[dict[str, Any], float, str, int]) -> dict[str, Any]:
    data, qps, policy, seed = args
    sc = effective_scenario(data).with_overrides(  # the driver checked the user's keys
        {"workload.qps": qps, "lb.policy": policy, "seed": seed}
    )
    s = run(sc, engine="flow").summary
    row = {"qps": qps, "policy": policy, "seed": seed, "rho": offered_load(sc)}
    row.update({m: s[m] for m in _METRICS})
    row["peak_flows_max"] = max(_peak(s).values(), default=0)
    row["ark_races"] = s.get("ark_races", 0)
    row["ark_fallbacks"] = s.get("ark_fallbacks", 0)
    return row


def qps_sweep(
    qps_values: Iterable[float] = range(1, 31),
    seeds: Iterable[int] = (1,),
    policies: Sequence[str] = POLICIES,
    base: Scenario | None = None,
    workers: int = 1,
) -> pd.DataFrame:
    """Run every (QPS, policy, seed) of the ``ark`` scenario (or ``base``).

    Parameters
    ----------
    qps_values : iterable of float
        Request rates (requests/s); default 1 ... 30.
    seeds : iterable of int
        Seeds; each is paired across policies and QPS values (same prompts and host pairs;
        the arrival times at QPS ``q`` are those at QPS 1 divided by ``q``).
    policies : sequence of str
        ``lb.policy`` values.
    base : Scenario, optional
        Scenario to sweep (default: the built-in ``ark``).
    workers : int
        Processes (1: run in this process).

    Returns
    -------
    pandas.DataFrame
        One row per run: ``qps``, ``policy``, ``seed``, ``rho`` (offered load),
        ``fct_mean_s``, ``fct_p95_s``, ``ttft_mean_s``, ``ttft_p95_s``, ``peak_flows_max``,
        ``ark_races``, ``ark_fallbacks``.
    """
    check_workers(workers)
    data = (base or load_scenario("ark")).to_dict()
    tasks = [(data, float(q), p, int(s)) for q in qps_values for s in seeds for p in policies]
    with sigterm_as_interrupt():
        if workers > 1 and len(tasks) > 1:
            pool = worker_pool(min(workers, len(tasks)))  # workers die with this process
            try:
                with signals_deferred():  # a worker started is one the pool can stop
                    results = pool.map(
                        _sweep_point, tasks, chunksize=max(1, len(tasks) // (4 * workers))
                    )
                rows = list(results)
            except BaseException:
                stop_pool(pool)
                raise
            pool.shutdown(wait=True)
        else:
            rows = [_sweep_point(t) for t in tasks]
    return (
        pd.DataFrame(rows)
        .sort_values(["qps", "policy", "seed"], kind="stable")
        .reset_index(drop=True)
    )


def sweep_table(sweep: pd.DataFrame) -> pd.DataFrame:
    """Seed-averaged ECMP vs ARK per QPS, with ARK's change in percent (the docs table)."""
    mean = sweep.groupby(["qps", "policy"])[[*_METRICS, "rho"]].mean().unstack("policy")
    out = pd.DataFrame(index=mean.index)
    out["rho"] = mean[("rho", "ecmp")]
    for m in _METRICS:
        out[f"{m}_ecmp"] = mean[(m, "ecmp")]
        out[f"{m}_ark"] = mean[(m, "ark")]
        out[f"{m}_change_pct"] = 100.0 * (mean[(m, "ark")] / mean[(m, "ecmp")] - 1.0)
    return out.reset_index()


# -- plots -------------------------------------------------------------------------------------
def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_fct_ttft(runs: dict[tuple[str, int], Result], path: Path) -> Path:
    """CDFs of FCT and TTFT per policy (all seeds pooled), saved as a PNG."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for policy in dict.fromkeys(p for p, _ in runs):
        frames = [r.flows for (p, _), r in runs.items() if p == policy]
        fct = np.sort(np.concatenate([f["fct_s"].to_numpy() for f in frames]))
        ttft = np.sort(
            np.concatenate(
                [(f["prefill_s"] + f["fct_s"] + f["decode_s"]).to_numpy() for f in frames]
            )
        )
        for ax, values in zip(axes, (fct, ttft), strict=True):
            values = values[~np.isnan(values)]
            ax.plot(values, np.arange(1, len(values) + 1) / max(len(values), 1), label=policy)
    for ax, what in zip(axes, ("KV-flow FCT (s)", "TTFT (s)"), strict=True):
        ax.set_xscale("log")
        ax.set_xlabel(what)
        ax.set_ylabel("CDF")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def spine_grid(timeline: pd.DataFrame, bin_s: float, end_s: float) -> tuple[list[str], np.ndarray]:
    """Per-spine active flows on a time grid: the peak within each bin (Fig. 3's heatmap).

    Parameters
    ----------
    timeline : pandas.DataFrame
        ``timeline_spine_flows`` (``spine``, ``time_s``, ``active_flows``; a step function).
    bin_s, end_s : float
        Bin width and end of the grid (s).

    Returns
    -------
    spines : list of str
    grid : numpy.ndarray
        Shape ``(spines, bins)``.
    """
    spines = sorted(timeline["spine"].unique(), key=lambda s: (len(s), s))
    bins = max(1, int(np.ceil(end_s / bin_s)))
    grid = np.zeros((len(spines), bins))
    for i, spine in enumerate(spines):
        rows = timeline[timeline["spine"] == spine].sort_values("time_s", kind="stable")
        t, v = rows["time_s"].to_numpy(), rows["active_flows"].to_numpy(dtype=np.float64)
        starts = np.arange(bins) * bin_s
        at = np.searchsorted(t, starts, side="right") - 1
        grid[i] = np.where(at >= 0, v[np.maximum(at, 0)], 0.0)  # value carried into the bin
        idx = np.minimum((t / bin_s).astype(np.int64), bins - 1)
        np.maximum.at(grid[i], idx, v)  # and every value reached inside it
    return spines, grid


def plot_spine_heatmap(ecmp: Result, ark: Result, path: Path, bin_s: float = 0.1) -> Path:
    """Per-spine active flows over time, ECMP (top) and ARK (bottom), as the paper's Fig. 3."""
    plt = _pyplot()
    tables = [r.tables.get("timeline_spine_flows") for r in (ecmp, ark)]
    if any(t is None or t.empty for t in tables):
        raise ConfigError("records.timelines: the spine heatmap needs records.timelines=true")
    end = max(float(t["time_s"].max()) for t in tables if t is not None)
    grids = [spine_grid(t, bin_s, end) for t in tables if t is not None]
    vmax = max(float(g.max()) for _, g in grids)
    fig, axes = plt.subplots(2, 1, figsize=(11, 4.5), sharex=True)
    for ax, (spines, grid), name in zip(axes, grids, ("ECMP", "ARK"), strict=True):
        im = ax.imshow(
            grid,
            aspect="auto",
            origin="lower",
            cmap="viridis",
            vmin=0,
            vmax=vmax,
            extent=(0, grid.shape[1] * bin_s, -0.5, len(spines) - 0.5),
            interpolation="nearest",
        )
        ax.set_yticks(range(len(spines)), spines)
        ax.set_title(f"{name}: active flows per spine (peak {int(grid.max())})")
    axes[-1].set_xlabel("time (s)")
    fig.colorbar(im, ax=axes, label="active flows")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_sweep(sweep: pd.DataFrame, path: Path) -> Path:
    """Mean and P95 FCT and TTFT against QPS per policy (Fig. 2 and Fig. 4)."""
    plt = _pyplot()
    mean = sweep.groupby(["qps", "policy"])[list(_METRICS)].mean().reset_index()
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.6))
    for ax, metric in zip(axes, _METRICS, strict=True):
        for policy, rows in mean.groupby("policy"):
            ax.plot(rows["qps"], rows[metric], marker="o", ms=3, label=str(policy))
        ax.set_xlabel("QPS")
        ax.set_ylabel(_LABELS[metric])
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# -- the default study --------------------------------------------------------------------------
def _seeds(seed: int | None, seeds: int | Sequence[int] | None) -> list[int]:
    if seeds is not None and not isinstance(seeds, int):
        return [int(s) for s in seeds]
    count = DEFAULT_SEEDS if seeds is None else int(seeds)
    if count < 1:
        raise ConfigError(f"seeds: need at least 1 seed (got {count})")
    if count > 10_000:
        raise ConfigError(f"seeds: at most 10000 seeds (got {count})")
    first = 1 if seed is None else int(seed)
    return list(range(first, first + count))


def study_scenario(sets: Sequence[str] = ()) -> Scenario:
    """The ``ark`` scenario with ``--set`` overrides and spine timelines on.

    ``lb.policy`` is chosen by the study, so setting it is refused.
    """
    overrides = parse_set_options(list(sets))
    if "lb.policy" in overrides:
        raise ConfigError("lb.policy: the ARK study runs both ecmp and ark; do not set it")
    overrides.setdefault("records.timelines", True)
    return load_scenario("ark").with_overrides(overrides)


def _print_table(frame: pd.DataFrame, seeds: list[int], sc: Scenario) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(
        title=f"ARK vs ECMP: {sc.workload.requests} requests at QPS {sc.workload.qps:g}, "  # type: ignore[union-attr]
        f"seeds {', '.join(map(str, seeds))} (mean over seeds)"
    )
    table.add_column("metric")
    for name in frame.columns:
        table.add_column("ARK vs ECMP" if name == "change_pct" else name.upper(), justify="right")
    for key, row in frame.iterrows():
        label = _LABELS.get(str(key), str(key).replace("_", " "))
        cells = []
        for col, value in row.items():
            if not np.isfinite(value):
                cells.append("-")
            elif col == "change_pct":
                cells.append(f"{value:+.1f} %")
            elif str(key).startswith(("peak", "ark_")):
                cells.append(f"{value:.1f}")
            else:
                cells.append(f"{value:.3f}")
        table.add_row(label, *cells)
    Console().print(table)


def default_study(
    out: Path,
    sets: list[str],
    seed: int | None,
    quiet: bool,
    seeds: int | Sequence[int] | None = None,
) -> None:
    """ECMP vs ARK on the ``ark`` scenario (QPS 25 unless ``--set workload.qps=...``).

    Parameters
    ----------
    out : pathlib.Path
        Output directory: ``<policy>-seed<N>/`` per run, ``comparison.csv``, ``study.json``,
        ``fct_ttft.png`` (CDFs) and ``spine_heatmap.png`` (first seed, as Fig. 3).
    sets : list of str
        ``KEY=VALUE`` overrides of the scenario (not ``lb.policy``).
    seed : int or None
        First seed (default 1).
    quiet : bool
        Print nothing.
    seeds : int or sequence of int, optional
        How many consecutive seeds (default 3), or the seeds themselves.
    """
    target = prepare_out_dir(out, "study")  # checked before anything runs; written at the end
    base = study_scenario(sets)
    chosen = _seeds(seed, seeds)
    for s in chosen:  # every run's scenario is valid before the first one starts
        for policy in POLICIES:
            check_engine(
                base.varying({"lb.policy"}).with_overrides({"seed": int(s), "lb.policy": policy}),
                "flow",
            )
    runs = _run_with_progress(base, chosen, quiet)
    frame = comparison(runs)
    with target.staging() as tmp:
        for (policy, s), res in runs.items():
            run_dir = tmp / f"{policy}-seed{s}"
            run_dir.mkdir()
            res.write_files(run_dir)
        frame.to_csv(tmp / "comparison.csv", index_label="metric")
        record = {
            "scenario": base.name,
            "qps": base.workload.qps,  # type: ignore[union-attr]
            "seeds": chosen,
            "offered_load": offered_load(base),
            "mean_over_seeds": frame.to_dict(),
            "runs": {f"{p}-seed{s}": r.summary for (p, s), r in runs.items()},
        }
        (tmp / "study.json").write_text(dumps_json(record))
        plot_fct_ttft(runs, tmp / "fct_ttft.png")
        if base.records.timelines:
            first = chosen[0]
            plot_spine_heatmap(
                runs[("ecmp", first)], runs[("ark", first)], tmp / "spine_heatmap.png"
            )
    if not quiet:
        _print_table(frame, chosen, base)
        print(f"wrote {out}/ (runs, comparison.csv, study.json, plots)")


def _run_with_progress(
    base: Scenario, seeds: list[int], quiet: bool
) -> dict[tuple[str, int], Result]:
    if quiet or not sys.stdout.isatty():
        return paired_runs(base, seeds)
    from rich.progress import Progress

    runs: dict[tuple[str, int], Result] = {}
    with Progress(transient=True) as progress:
        task = progress.add_task("ARK study", total=len(seeds) * len(POLICIES))
        for s in seeds:
            runs.update(paired_runs(base, [s]))
            progress.advance(task, len(POLICIES))
    return runs


def main_sweep(out: Path, seeds: Sequence[int] = (1,), workers: int = 2) -> pd.DataFrame:
    """Run :func:`qps_sweep` (QPS 1 ... 30) and write ``sweep.csv``, ``sweep_table.csv`` and
    ``sweep.png`` under ``out``; returns the seed-averaged table."""
    target = prepare_out_dir(out, "study")
    sweep = qps_sweep(seeds=seeds, workers=workers)
    table = sweep_table(sweep)
    with target.staging() as tmp:
        sweep.to_csv(tmp / "sweep.csv", index=False)
        table.to_csv(tmp / "sweep_table.csv", index=False)
        plot_sweep(sweep, tmp / "sweep.png")
        (tmp / "sweep.json").write_text(json.dumps({"seeds": list(seeds)}) + "\n")
    return table
