"""Every load-balancing method on one fabric: ``fabricsim compare``.

:func:`compare` runs a scenario once per method (and seed), each with the overrides of
:data:`PACKET_METHODS` or :data:`FLOW_METHODS`, saves every run under ``out/<method>/seed-<N>``
and returns one table: completed messages, mean / P99 / max FCT, retransmissions and trims
(packet engine), and the uplinks' utilization during each step (max, mean over every uplink,
idle ones included, and their ratio: 1 is perfect balance).

Steps are the workload's ``step`` column (collectives), else the whole run; a step's window runs
from its first start to its last finish.  An uplink's utilization in a window comes from the
``timeline_links`` record (turned on for every run): packet-engine rows are the utilization
over the sampling interval ending at ``time_s``, flow-engine rows hold from ``time_s`` to the
link's next row.

Examples
--------
>>> sorted(FLOW_METHODS)
['ecmp', 'ideal_spray', 'pinned', 'qp_scaling']
>>> method_overrides("reps", "packet", 1)["nic.packet_spraying_type"]
'reps'
"""

from __future__ import annotations

import contextlib
import io
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fabricsim.config.loader import load_scenario
from fabricsim.config.models import Scenario
from fabricsim.errors import ConfigError
from fabricsim.metrics.outdir import prepare_out_dir
from fabricsim.metrics.results import Result
from fabricsim.runner import ENGINES, check_engine, fabric_of, run
from fabricsim.sweep.backends import (
    check_workers,
    signals_deferred,
    sigterm_as_interrupt,
    stop_pool,
    worker_pool,
)
from fabricsim.topology.fabric import HOST, Fabric
from fabricsim.units import ps_to_s, s_to_us, us_to_s

_BASE_PACKET = {
    "lb.policy": "ecmp",
    "nic.packet_spraying_type": "none",
    "switch.load_balancing_method": "ecmp",
}

PACKET_METHODS: dict[str, tuple[str, dict[str, Any]]] = {
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
"""Packet-engine methods: name -> (what it is, overrides on top of per-flow ECMP)."""

FLOW_METHODS: dict[str, tuple[str, dict[str, Any]]] = {
    "ecmp": ("per-flow ECMP hash", {"lb.policy": "ecmp"}),
    "ideal_spray": ("even split over all paths", {"lb.policy": "ideal_spray"}),
    "pinned": ("path by destination slice", {"lb.policy": "pinned"}),
    "qp_scaling": ("QPs per host pair (E-ECMP)", {"lb.policy": "qp_scaling"}),
}
"""Flow-engine methods (the ones it can answer)."""

DEFAULT_METHODS = {
    "packet": ("ecmp", "default", "oblivious", "reps", "adaptive", "flowlet", "spray"),
    "flow": ("ecmp", "ideal_spray", "pinned", "qp_scaling"),
}

QP_COUNT = 4  # qp_scaling's connections per pair when the scenario has lb.qp_count = 1
MAX_SEEDS = 10_000  # runs per method in one comparison

TABLE_COLUMNS = [
    "method", "what", "runs", "completed", "flows", "fct_mean_us", "fct_p99_us", "fct_max_us",
    "vs_best", "retransmissions", "trims", "uplink_util_max", "uplink_util_mean",
    "uplink_max_over_mean",
]  # fmt: skip


def method_overrides(method: str, engine: str, qp_count: int) -> dict[str, Any]:
    """The ``--set`` overrides that turn a scenario into ``method`` on ``engine``.

    ``qp_count`` is the scenario's ``lb.qp_count``: ``qp_scaling`` uses it (and the scenario's
    ``lb.qp_mode``), or, if it is 1, :data:`QP_COUNT` QPs splitting every message (posting
    whole messages in turn changes nothing for one message per pair).  On the packet engine ``pinned`` and ``qp_scaling`` turn PDC
    groups off so that every connection keeps its own source port.
    """
    table = PACKET_METHODS if engine == "packet" else FLOW_METHODS
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


@dataclass(eq=False)
class Comparison:
    """What :func:`compare` produced.

    Attributes
    ----------
    table : DataFrame
        One row per method (:data:`TABLE_COLUMNS`): seeds pooled (means of the per-run
        mean / P99 FCT, maximum of the maxima, mean counters), ``vs_best`` = mean FCT over
        the best method's.
    runs : DataFrame
        One row per run (method, seed and the same metrics).
    out : Path or None
        Where the runs, ``compare.csv``, ``runs.csv`` and ``compare.png`` were written.
    """

    table: pd.DataFrame
    runs: pd.DataFrame
    out: Path | None = None


# -- uplink utilization ---------------------------------------------------------------------------


def uplinks(fabric: Fabric) -> list[str]:
    """Names of the switch links that go up a tier (leaf -> spine, edge -> agg -> core)."""
    tier, src, dst = fabric.node_tier, fabric.link_src, fabric.link_dst
    return [
        fabric.link_names[x]
        for x in range(fabric.num_links)
        if tier[src[x]] != HOST and tier[dst[x]] > tier[src[x]]
    ]


def _segments(timeline: pd.DataFrame, engine: str, interval_s: float, end_s: float) -> tuple:
    """(link codes, t0, t1, utilization) of every timeline row, as time intervals."""
    tl = timeline.sort_values(["link", "time_s"], kind="stable")
    link = tl["link"].to_numpy()
    t = tl["time_s"].to_numpy(dtype=float)
    u = tl["utilization"].to_numpy(dtype=float)
    if engine == "packet":
        return link, t - interval_s, t, u
    nxt = np.append(t[1:], end_s)
    last = np.append(link[1:] != link[:-1], True)
    nxt[last] = max(end_s, float(t.max(initial=0.0)))
    return link, t, nxt, u


def step_windows(flows: pd.DataFrame, end_s: float) -> list[tuple[float, float]]:
    """(first start, last finish) of each step (``step`` column, else the whole run), s."""
    groups = flows.groupby("step", sort=True) if "step" in flows.columns else [(0, flows)]
    out = []
    for _, g in groups:
        a = float(g["start_s"].min())
        finish = g["finish_s"].to_numpy(dtype=float)
        b = end_s if np.isnan(finish).any() else float(finish.max())
        if b > a:
            out.append((a, b))
    return out


def uplink_utilization(res: Result, fabric: Fabric) -> dict[str, float]:
    """Mean over steps of the uplinks' max and mean utilization in the step, and their ratio.

    Only the uplinks of switches that sent traffic up during the step count (a leaf with no
    senders would otherwise halve the mean): with 8 flows hashed onto one leaf's 8 uplinks the
    ratio averages the 2.6 of ``002_*.txt``.

    Needs the run's ``timeline_links`` table; NaN values without it.
    """
    nan = {"uplink_util_max": math.nan, "uplink_util_mean": math.nan}
    tl = res.tables.get("timeline_links")
    if tl is None or res.flows.empty:
        return {**nan, "uplink_max_over_mean": math.nan}
    names = uplinks(fabric)
    end = float(res.summary.get("sim_end_s") or np.nanmax(res.flows["finish_s"]))
    interval = us_to_s(res.scenario.records.timeline_interval_us)
    tl = tl[tl["link"].isin(names)]
    link, t0, t1, u = _segments(tl, res.summary["engine"], interval, end)
    codes = pd.Categorical(link, categories=names).codes
    owner = np.array([n.split("->")[0] for n in names])  # each uplink's lower switch
    maxes, means, ratios = [], [], []
    for a, b in step_windows(res.flows, end):
        overlap = np.clip(np.minimum(t1, b) - np.maximum(t0, a), 0.0, None)
        busy = np.bincount(codes, weights=u * overlap, minlength=len(names)) / (b - a)
        # only switches that sent traffic up in this step (the seed's per-leaf diagnostic)
        carried = pd.Series(busy).groupby(owner).transform("sum").to_numpy() > 0
        busy = busy[carried]
        mean = float(busy.mean()) if len(busy) else 0.0
        maxes.append(float(busy.max(initial=0.0)))
        means.append(mean)
        ratios.append(maxes[-1] / mean if mean > 0 else math.nan)
    if not maxes:
        return {**nan, "uplink_max_over_mean": math.nan}
    return {
        "uplink_util_max": float(np.mean(maxes)),
        "uplink_util_mean": float(np.mean(means)),
        "uplink_max_over_mean": float(np.nanmean(ratios)) if not np.isnan(ratios).all() else 0.0,
    }


def receiver_busy_fraction(res: Result, fabric: Fabric, receiver: int) -> float:
    """How busy the link into ``receiver`` was from the first arrival to the last.

    Packet engine with ``records.port_stats``: the time the receiver's downlink spent
    serializing (every byte it sent: data, retransmissions, trimmed headers) over the time it
    could have: from the earliest moment a first full packet can reach the downlink (the
    nearest sender's start plus its unloaded latency to the receiver's switch) to the moment
    the last message's last bit left it (finish minus the link's delay).  At most 1.
    """
    ports = res.tables["port_stats"]
    down = int(fabric.host_downlink[receiver])
    row = ports[ports["link"] == fabric.link_names[down]].iloc[0]
    mine = res.flows[res.flows["dst"] == fabric.host_names[receiver]]
    size = res.scenario.nic.rdma_data_mss + res.scenario.nic.header_bytes
    first = math.inf
    for name, start in zip(mine["src"], mine["start_s"], strict=True):
        path = fabric.paths(fabric.host_names.index(name), receiver)[0][:-1]
        ahead = fabric.unloaded_path_ps(path, size, whole_ps=False)
        first = min(first, float(start) + ps_to_s(ahead))
    last = float(mine["finish_s"].max()) - ps_to_s(fabric.link_delay_ps[down])
    return float(row["bytes"]) * 8 / float(row["rate_bps"]) / (last - first)


# -- runs ---------------------------------------------------------------------------------------


def _run_one(job: tuple[dict[str, Any], str, str, int, str | None]) -> dict[str, Any]:
    """Run one (method, seed); save it under ``out``; return its table row."""
    data, engine, method, seed, out = job
    sc = Scenario.model_validate(data)
    res = run(sc, engine=engine)
    if out is not None:  # inside the comparison's staging directory (replaced whole)
        run_dir = Path(out) / method / f"seed-{seed}"
        run_dir.mkdir(parents=True)
        res.write_files(run_dir)
    s = res.summary
    row = {
        "method": method,
        "seed": seed,
        "completed": int(s["flows_completed"]),
        "flows": int(s["flows_total"]),
        "fct_mean_us": _us(s.get("fct_mean_s")),
        "fct_p99_us": _us(s.get("fct_p99_s")),
        "fct_max_us": _us(s.get("fct_max_s")),
        "retransmissions": s.get("packets_retransmitted", math.nan),
        "trims": s.get("packets_trimmed", math.nan),
    }
    row.update(uplink_utilization(res, fabric_of(sc)))
    return row


def _us(v: Any) -> float:
    return math.nan if v is None else s_to_us(float(v))


def _jobs(
    sc: Scenario, engine: str, methods: Sequence[str], seeds: int, out: Path | None
) -> list[tuple[dict[str, Any], str, str, int, str | None]]:
    jobs = []
    for method in methods:
        over = method_overrides(method, engine, sc.lb.qp_count)
        over["records.timelines"] = True
        variant = sc.varying(set(over)).with_overrides(over)
        check_engine(variant, engine)  # the user's keys checked here, once per method
        for i in range(seeds):
            seed = sc.seed + i
            data = variant.with_overrides({"seed": seed}).to_dict()
            jobs.append((data, engine, method, seed, None if out is None else str(out)))
    return jobs


def compare(
    scenario: str | Path | dict[str, Any] | Scenario,
    engine: str | None = None,
    overrides: dict[str, Any] | None = None,
    seeds: int = 1,
    out: str | Path | None = None,
    methods: Sequence[str] | None = None,
    workers: int = 1,
    progress: Callable[[dict[str, Any]], None] | None = None,
) -> Comparison:
    """Run ``scenario`` once per load-balancing method and seed; one comparison table.

    Parameters
    ----------
    scenario
        Built-in name, YAML path, dict or :class:`Scenario`.
    engine
        ``packet`` or ``flow`` (default: the scenario's ``engine.kind``).
    overrides
        Dotted-key overrides applied first (``--set``).
    seeds
        Runs per method, with seeds ``scenario.seed .. scenario.seed + seeds - 1``.
    out
        Directory for the runs (``<method>/seed-<N>/``), ``compare.csv``, ``runs.csv`` and
        ``compare.png``; None writes nothing.  Checked before any run
        (:func:`fabricsim.metrics.outdir.check_out_dir`); written into a temporary sibling
        and swapped in at the end, so a previous output is replaced whole and an error or
        Ctrl-C leaves it as it was.
    methods
        Subset of the engine's methods (default :data:`DEFAULT_METHODS`).
    workers
        Processes running in parallel (1: in this process); they die with this process.
    progress
        Called with each run's row as it finishes.

    Returns
    -------
    Comparison
    """
    target = prepare_out_dir(out, "compare") if out is not None else None
    check_workers(workers)
    sc = load_scenario(scenario)
    if overrides:
        sc = sc.with_overrides(overrides)
    engine = engine or sc.engine.kind
    if engine not in ENGINES:
        raise ConfigError(f"--engine: must be one of {', '.join(ENGINES)} (got {engine!r})")
    _check_seeds(seeds)
    methods = _methods(methods, engine)
    jobs = _jobs(sc, engine, methods, seeds, None)  # every run validated before anything runs
    staging = target.staging() if target is not None else contextlib.nullcontext(None)
    with staging as tmp:
        if tmp is not None:
            jobs = [(*job[:4], str(tmp)) for job in jobs]
        rows = _run_all(jobs, workers, progress)
        runs = pd.DataFrame(rows)
        table = summarize(runs, engine)
        if tmp is not None:
            _write_outputs(tmp, runs, table, f"{sc.name} ({engine} engine)")
    return Comparison(table, runs, None if out is None else Path(out))


def _check_seeds(seeds: Any) -> None:
    """Raise ``ConfigError`` unless ``seeds`` is a whole number in ``1 .. MAX_SEEDS``."""
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
        raise ConfigError(f"--seeds: must be a whole number >= 1 (got {seeds!r})")
    if seeds > MAX_SEEDS:
        raise ConfigError(f"--seeds: at most {MAX_SEEDS} runs per method (got {seeds})")


def _write_outputs(tmp: Path, runs: pd.DataFrame, table: pd.DataFrame, title: str) -> None:
    """Write ``runs.csv``, ``compare.csv`` and ``compare.png`` (titled ``title``) into ``tmp``."""
    (tmp / "runs.csv").write_text(runs.to_csv(index=False, float_format="%.6g"))
    (tmp / "compare.csv").write_text(table.to_csv(index=False, float_format="%.6g"))
    (tmp / "compare.png").write_bytes(bars_png(table, title))


def _methods(methods: Sequence[str] | None, engine: str) -> list[str]:
    """The methods to run: the engine's defaults, or a non-empty list without repeats."""
    if methods is None:
        return list(DEFAULT_METHODS[engine])
    if isinstance(methods, str):
        methods = [m.strip() for m in methods.split(",") if m.strip()]
    chosen = list(methods)
    table = PACKET_METHODS if engine == "packet" else FLOW_METHODS
    if not chosen:
        raise ConfigError(f"--methods: empty list; give one or more of {', '.join(table)}")
    repeated = sorted({m for m in chosen if chosen.count(m) > 1})
    if repeated:
        raise ConfigError(f"--methods: {repeated[0]} given twice")
    return chosen


def _run_all(
    jobs: list[tuple[dict[str, Any], str, str, int, str | None]],
    workers: int,
    progress: Callable[[dict[str, Any]], None] | None,
) -> list[dict[str, Any]]:
    """Every job's row, in job order; a pool of ``workers`` processes when more than one.

    The pool's workers die with this process; on any exception or Ctrl-C (and SIGTERM) the
    pool is cancelled and its workers are terminated before the exception goes on.
    """
    rows: list[dict[str, Any]] = []
    with sigterm_as_interrupt():
        if workers > 1 and len(jobs) > 1:
            pool = worker_pool(min(workers, len(jobs)))
            try:
                with signals_deferred():  # a worker started is one the pool can stop
                    futures = [pool.submit(_run_one, job) for job in jobs]
                for fut in futures:
                    rows.append(fut.result())
                    if progress:
                        progress(rows[-1])
            except BaseException:
                stop_pool(pool)
                raise
            pool.shutdown(wait=True)
        else:
            for job in jobs:
                rows.append(_run_one(job))
                if progress:
                    progress(rows[-1])
    return rows


def summarize(runs: pd.DataFrame, engine: str) -> pd.DataFrame:
    """One row per method from the per-run rows (see :class:`Comparison`)."""
    what = PACKET_METHODS if engine == "packet" else FLOW_METHODS
    g = runs.groupby("method", sort=False)
    table = pd.DataFrame(
        {
            "method": list(g.groups),
            "what": [what[str(m)][0] for m in g.groups],
            "runs": g.size().to_numpy(),
            "completed": g["completed"].sum().to_numpy(),
            "flows": g["flows"].sum().to_numpy(),
            "fct_mean_us": g["fct_mean_us"].mean().to_numpy(),
            "fct_p99_us": g["fct_p99_us"].mean().to_numpy(),
            "fct_max_us": g["fct_max_us"].max().to_numpy(),
            "retransmissions": g["retransmissions"].mean().to_numpy(),
            "trims": g["trims"].mean().to_numpy(),
            "uplink_util_max": g["uplink_util_max"].mean().to_numpy(),
            "uplink_util_mean": g["uplink_util_mean"].mean().to_numpy(),
            "uplink_max_over_mean": g["uplink_max_over_mean"].mean().to_numpy(),
        }
    )
    best = table["fct_mean_us"].min()
    table["vs_best"] = table["fct_mean_us"] / best if best and best > 0 else math.nan
    return table[TABLE_COLUMNS].reset_index(drop=True)


# -- output -------------------------------------------------------------------------------------


def format_table(table: pd.DataFrame) -> str:
    """The comparison as fixed-width text (what ``fabricsim compare`` prints)."""
    head = (
        f"{'method':<12}{'done':>10}{'mean_us':>10}{'p99_us':>10}{'max_us':>10}{'vs_best':>8}"
        f"{'retx':>10}{'trims':>10}{'up_max':>8}{'up_mean':>8}{'max/mean':>9}"
    )
    lines = [head]
    for r in table.itertuples(index=False):
        lines.append(
            f"{r.method:<12}{f'{r.completed}/{r.flows}':>10}{r.fct_mean_us:>10.1f}"
            f"{r.fct_p99_us:>10.1f}{r.fct_max_us:>10.1f}{r.vs_best:>8.3f}{_n(r.retransmissions)}"
            f"{_n(r.trims)}{r.uplink_util_max:>8.3f}{r.uplink_util_mean:>8.3f}"
            f"{r.uplink_max_over_mean:>9.3f}"
        )
    return "\n".join(lines)


def _n(v: Any) -> str:
    return f"{'-':>10}" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:>10.0f}"


def bars_png(table: pd.DataFrame, title: str) -> bytes:
    """Bars of mean and P99 FCT per method (the comparison figure), PNG bytes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(max(5.0, 0.9 * len(table) + 2.5), 3.8), layout="constrained")
    ax = fig.add_subplot()
    x = np.arange(len(table))
    ax.bar(x - 0.2, table["fct_mean_us"], 0.4, label="mean FCT")
    ax.bar(x + 0.2, table["fct_p99_us"], 0.4, label="P99 FCT")
    ax.set_xticks(x, labels=list(table["method"]), rotation=30, ha="right")
    ax.set_ylabel("FCT (us)")
    ax.set_title(title, fontsize="medium")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize="small")
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, metadata={"Software": None})
    return buf.getvalue()


def print_progress(row: dict[str, Any]) -> None:
    """One line per finished run on stderr (the CLI's progress on a TTY)."""
    print(
        f"  {row['method']:<12} seed {row['seed']}: mean FCT {row['fct_mean_us']:.1f} us",
        file=sys.stderr,
    )
