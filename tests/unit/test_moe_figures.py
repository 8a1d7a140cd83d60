"""MoE dispatch figures (``003_*.txt`` Fig. 1 and 4): the hot receiver's queue and the backlog,
receiver utilization and active destinations per sender, beside the fluid model."""

import re

import numpy as np
import pandas as pd
import pytest

import fabricsim
from fabricsim.analysis import moe_incast
from fabricsim.report import write_report

SMALL = {"topology.leaves": 2, "workload.tokens_per_gpu": 32}


@pytest.fixture(scope="module")
def moe_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("moe")
    fabricsim.run(fabricsim.load_scenario("moe").with_overrides(SMALL)).save(d)
    write_report(d)
    return d


def _texts(svg: str) -> list[str]:
    return [
        re.sub(r"<[^>]+>", "", t).strip() for t in re.findall(r"<text[^>]*>(.*?)</text>", svg, re.S)
    ]


def _lines(svg: str) -> list[int]:
    """Points per plotted line (matplotlib's line2d groups)."""
    groups = re.findall(r'<g id="line2d_\d+">\s*<path d="([^"]+)"', svg)
    return [d.count("L") + 1 for d in groups]


@pytest.mark.full
def test_a_moe_run_report_has_the_two_figures(moe_dir):
    html = (moe_dir / "report.html").read_text()
    assert '<section id="moe-incast">' in html
    queue = (moe_dir / "figures" / "moe-queue.svg").read_text()
    util = (moe_dir / "figures" / "moe-utilization.svg").read_text()
    q_text, u_text = _texts(queue), _texts(util)
    for needle in ("hot receiver's downlink queue", "total switch backlog", "time (µs)",
                   "round robin", "fluid model Q(t)"):  # fmt: skip
        assert needle in q_text, needle
    # byte axes in the unit their values read best in (B, kB, MB)
    assert {"queue (kB)", "queue (MB)", "queue (B)"} & set(q_text)
    assert {"backlog (kB)", "backlog (MB)"} & set(q_text)
    for needle in ("receiver downlink utilization", "active destinations per sender",
                   "utilization", "destinations", "round robin: hot receiver",
                   "round robin: all receivers", "fluid model k(t)"):  # fmt: skip
        assert needle in u_text, needle
    assert any("moe · packet engine · seed 1" in t for t in q_text)  # the title names the run
    assert sum(1 for n in _lines(queue) if n >= 5) >= 3  # hot queue, backlog, the model
    assert sum(1 for n in _lines(util) if n >= 5) >= 4  # 2 utilizations, simulated k, model k


def test_rate_based_has_no_model_line(tmp_path):
    sc = fabricsim.load_scenario("moe").with_overrides(
        {**SMALL, "workload.scheduler": "rate_based"}
    )
    fabricsim.run(sc).save(tmp_path / "r")
    write_report(tmp_path / "r")
    queue = (tmp_path / "r" / "figures" / "moe-queue.svg").read_text()
    assert "rate based" in _texts(queue) and "fluid model Q(t)" not in _texts(queue)


def test_simulated_active_destinations_and_the_model():
    flows = pd.DataFrame({
        "src": [0, 0, 1, 1], "size_bytes": [300, 100, 300, 100],
        "start_s": [0.0] * 4, "finish_s": [3.0, 1.0, 2.0, np.nan],
    })  # fmt: skip
    k = moe_incast.active_destinations(flows, np.array([0.0, 1.5, 2.5, 10.0]))
    assert list(k) == [2.0, 1.5, 1.0, 0.5]  # the unfinished message counts until the end
    row, n = moe_incast.mean_row(flows)
    assert list(row) == [300.0, 100.0] and n == 2
    km, qm = moe_incast.run_model(flows, 8.0, np.array([0.0, 1000.0]))  # 1 byte/s
    assert km[0] == 2 and km[-1] == 0 and qm[0] == 0 and qm[-1] == 0
