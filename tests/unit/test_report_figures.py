"""Figures a user can put on a slide (issue 37, item 2): one unit per axis chosen for the data,
human legend labels, legends off the data, runs in numeric order."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fabricsim.cli import main
from fabricsim.experiments.plan import plan_sweep
from fabricsim.experiments.sweep import run_sweep
from fabricsim.report import figures, write_report
from fabricsim.report.labels import natural_key, value_label


@pytest.fixture
def drawn(monkeypatch):
    """The matplotlib Figures the figure functions draw (captured before rendering)."""
    figs = []
    real = figures._png

    def capture(fig, title=None):
        figs.append(fig)
        return real(fig, title)

    monkeypatch.setattr(figures, "_png", capture)
    return figs


def _ticks(ax, which: str) -> list[str]:
    ax.figure.canvas.draw()
    axis = ax.xaxis if which == "x" else ax.yaxis
    labels = axis.get_ticklabels() + axis.get_ticklabels(minor=True)
    return [t.get_text() for t in labels if t.get_text()]


def _legend_clear_of_axes(fig) -> None:
    """No legend inside an axes; the figure's legend lies wholly below every axes."""
    fig.canvas.draw()
    assert all(ax.get_legend() is None for ax in fig.axes)
    assert len(fig.legends) == 1
    box = fig.legends[0].get_window_extent()
    for ax in fig.axes:
        if ax.get_visible() and ax.get_label() != "<colorbar>":
            assert box.y1 <= ax.get_window_extent().y0 + 1, (box, ax.get_window_extent())


def test_cdf_axis_in_microseconds_with_plain_ticks(drawn):
    rng = np.random.default_rng(1)
    fct = {"ECMP": rng.uniform(15e-6, 160e-6, 300), "REPS": rng.uniform(12e-6, 90e-6, 300)}
    figures.cdf_png(fct, "FCT")
    ax = drawn[0].axes[0]
    assert ax.get_xlabel() == "FCT (µs)"
    ticks = _ticks(ax, "x")
    assert ticks and not any("e-" in t or "10^" in t or "0.000" in t for t in ticks), ticks
    _legend_clear_of_axes(drawn[0])


def test_cdf_over_decades_has_a_log_axis_with_plain_numbers(drawn):
    fct = {"ECMP": np.geomspace(3e-6, 0.02, 200)}
    figures.cdf_png(fct, "FCT")
    ax = drawn[0].axes[0]
    assert ax.get_xscale() == "log" and ax.get_xlabel().endswith("(µs)")
    ticks = _ticks(ax, "x")
    assert ticks and all(re.fullmatch(r"[\d,.]+", t) for t in ticks), ticks


def test_link_timelines_time_and_queue_units(drawn):
    t = np.linspace(0, 340e-6, 50)
    links = pd.DataFrame({
        "link": ["leaf0->spine0"] * 50 + ["leaf0->spine1"] * 50, "time_s": np.r_[t, t],
        "utilization": np.r_[np.full(50, 0.5), np.full(50, 1.0)],
        "queue_bytes": np.r_[np.linspace(0, 3e5, 50), np.zeros(50)],
    })  # fmt: skip
    figures.link_timelines_png(links, ["leaf0->spine0", "leaf0->spine1"])
    fig = drawn[0]
    assert fig.axes[1].get_xlabel() == "time (µs)" and fig.axes[1].get_ylabel() == "queue (kB)"
    assert not any("0.000" in x for x in _ticks(fig.axes[1], "x"))
    _legend_clear_of_axes(fig)


def test_vs_load_human_labels_unit_and_numeric_order(drawn):
    table = pd.DataFrame({
        "workload.qps": [10, 1, 5] * 2, "lb.policy": ["ecmp"] * 3 + ["ark"] * 3,
        "fct_p99_s": [3e-3, 1e-3, 2e-3, 2.5e-3, 0.9e-3, 1.5e-3],
    })  # fmt: skip
    figures.vs_load_png(table, "workload.qps", ["fct_p99_s"], "lb.policy")
    fig = drawn[0]
    ax = fig.axes[0]
    assert ax.get_xlabel() == "QPS" and ax.get_ylabel() == "P99 FCT (ms)"
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["ECMP", "ARK"]
    assert list(ax.lines[0].get_xdata()) == [1, 5, 10]
    _legend_clear_of_axes(fig)


def test_value_labels_and_natural_order():
    assert value_label("nic.packet_spraying_type", "none") == "ECMP"
    assert value_label("nic.packet_spraying_type", "reps") == "REPS"
    assert value_label("lb.policy", "ark") == "ARK"
    assert value_label("workload.scheduler", "round_robin") == "round robin"
    assert sorted(["qps10", "qps1", "qps5"], key=natural_key) == ["qps1", "qps5", "qps10"]


def _svg_texts(path: Path) -> list[str]:
    svg = path.read_text()
    return [re.sub(r"<[^>]+>", "", t).strip() for t in re.findall(r"<text[^>]*>(.*?)</text>", svg)]


def test_study_figures_use_human_labels(tmp_path, capsys):
    out = tmp_path / "s"
    code = main([
        "study", "ecmp-collision", "--vs", "lb.policy=ecmp,ideal_spray", "--seeds", "2",
        "--grid", "workload.size_bytes=4000000,1000000", "--svg", "--out", str(out), "--quiet",
    ])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    texts = _svg_texts(out / "vs_grid.svg") + _svg_texts(out / "cdf_size_bytes1000000.svg")
    joined = " ".join(texts)
    assert "ECMP" in texts and "ideal spray" in texts, texts
    assert "lb.policy=" not in joined and "(s)" not in joined
    assert re.search(r"FCT \((µs|ms)\)", joined)


@pytest.mark.full
def test_sweep_cdfs_in_numeric_order(tmp_path):
    d = tmp_path / "sw"
    plan = plan_sweep("ecmp-collision", grid=["workload.size_bytes=4000000,1000000,2000000"])
    run_sweep(plan, d, workers=1)
    html = write_report(d).read_text()
    found = re.findall(r'src="data:image|<figure role="img" aria-label="FCT CDF at ([^"]+)"', html)
    shown = [f for f in found if f]
    assert shown == ["message size (B) 1,000,000", "message size (B) 2,000,000",
                     "message size (B) 4,000,000"], shown  # fmt: skip


def test_study_page_lists_runs_as_they_ran(tmp_path, capsys):
    """Grid values in their order (500000 before 1000000, not as strings), the baseline first."""
    out = tmp_path / "s"
    code = main([
        "study", "ecmp-collision", "--vs", "lb.policy=pinned,ecmp", "--seeds", "1",
        "--grid", "workload.size_bytes=500000,1000000", "--out", str(out), "--quiet",
    ])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    html = write_report(out).read_text()
    runs = html[html.index('<section id="runs">') :]
    assert re.findall(r"<tr><td>([^<]+)</td>", runs) == [
        "size_bytes500000-pinned-seed1", "size_bytes500000-ecmp-seed1",
        "size_bytes1000000-pinned-seed1", "size_bytes1000000-ecmp-seed1",
    ]  # fmt: skip
    points = re.findall(r'<section id="(point-[^"]+)"', html)
    assert points == ["point-size_bytes500000", "point-size_bytes1000000"]


def test_spine_heatmap_in_microseconds_with_whole_flow_counts(drawn):
    t = np.linspace(10e-6, 180e-6, 18)
    spines = pd.DataFrame({
        "spine": ["spine10", "spine2"] * 9, "time_s": t, "active_flows": [0, 1, 2] * 6,
    })  # fmt: skip
    figures.spine_heatmap_png(spines)
    fig = drawn[0]
    ax, bar = fig.axes
    assert ax.get_xlabel() == "time (µs)"
    assert [t.get_text() for t in ax.get_yticklabels()] == ["spine2", "spine10"]
    fig.canvas.draw()
    assert all(float(v).is_integer() for v in bar.get_yticks())


def test_ark_sweep_figure_units_and_labels(tmp_path, monkeypatch):
    from fabricsim.report import plots

    seen = []
    monkeypatch.setattr(plots, "_save", lambda plt, fig, path, tight=True: seen.append(fig))
    sweep = pd.DataFrame({
        "qps": [10, 1, 10, 1], "policy": ["ecmp", "ecmp", "ark", "ark"],
        "fct_mean_s": [0.3, 0.1, 0.2, 0.1], "fct_p95_s": [1.2, 0.5, 0.6, 0.5],
        "ttft_mean_s": [1.1, 1.0, 1.05, 1.0], "ttft_p95_s": [5.0, 4.6, 4.7, 4.6],
    })  # fmt: skip
    plots.plot_sweep(sweep, tmp_path / "s.png")
    fig = seen[0]
    assert (
        fig.axes[0].get_ylabel() == "mean FCT (ms)" and fig.axes[3].get_ylabel() == "P95 TTFT (s)"
    )
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["ECMP", "ARK"]
    assert list(fig.axes[0].lines[0].get_xdata()) == [1, 10]


def test_sweep_cdf_files_never_collide():
    from fabricsim.report.sweep_page import _fct_by_load

    fct = {"ECMP": np.array([1e-4, 2e-4])}
    cdf, _ = _fct_by_load({0.1: fct, 0.1000001: fct}, "workload.qps", None)
    assert len({name for name, _ in cdf.figures}) == 2
