"""The HTML report: sections with stable ids, self-contained, and clean in headless Chromium."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

import fabricsim
from fabricsim.cli import main
from fabricsim.experiments.plan import plan_sweep
from fabricsim.experiments.sweep import run_sweep
from fabricsim.report import SECTION_IDS, write_report
from fabricsim.report.browser import check_page

RUN_SECTIONS = ["summary", "fct-cdf", "fct-percentiles", "spine-heatmap", "link-timelines",
                "diagnostics", "config"]  # fmt: skip
SWEEP_SECTIONS = ["summary", "sweep-table", "fct-cdf", "fct-percentiles", "fct-vs-load",
                  "spine-heatmap", "link-timelines", "diagnostics", "config"]  # fmt: skip


def _sections(html: str) -> list[str]:
    return re.findall(r'<section id="([^"]+)"', html)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("run")
    sc = fabricsim.load_scenario("ecmp-collision").with_overrides({"records.timelines": True})
    fabricsim.run(sc).save(d)
    write_report(d)
    return d


@pytest.fixture(scope="module")
def ark_run_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("ark")
    sc = fabricsim.load_scenario("ark").with_overrides(
        {"workload.requests": 60, "records.timelines": True, "lb.policy": "ark"}
    )
    fabricsim.run(sc).save(d)
    write_report(d)
    return d


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("sweep") / "s"
    plan = plan_sweep(
        "ecmp-collision", grid=["workload.size_bytes=1000000,4000000", "lb.policy=ecmp,ideal_spray"],
        sets=["records.timelines=true"],
    )  # fmt: skip
    run_sweep(plan, d, workers=2)
    write_report(d)
    return d


def test_run_report_sections_and_figures(run_dir: Path) -> None:
    html = (run_dir / "report.html").read_text()
    assert _sections(html) == RUN_SECTIONS
    assert set(RUN_SECTIONS) <= set(SECTION_IDS)
    for name in ("fct-cdf", "spine-heatmap", "link-timelines"):
        svg = (run_dir / "figures" / f"{name}.svg").read_bytes()
        assert svg.startswith(b"<?xml") and b"<svg" in svg
    assert html.count('<figure role="img"') == 3  # inline SVG
    assert "fabric" not in html or "leaf-spine, 16 hosts" in html
    assert "leaf0" in html and "step_efficiency" in html and "max_over_mean" in html


def test_report_png_on_request(run_dir: Path, tmp_path: Path) -> None:
    d = tmp_path / "run"
    shutil.copytree(run_dir, d)
    html = write_report(d, "png").read_text()
    assert html.count("data:image/png;base64,") == 3 and "<svg" not in html
    for name in ("fct-cdf", "spine-heatmap", "link-timelines"):
        assert (d / "figures" / f"{name}.png").read_bytes().startswith(b"\x89PNG")
    assert main(["report", str(d), "--png"]) == 0


@pytest.mark.full
def test_report_is_self_contained(run_dir: Path, sweep_dir: Path) -> None:
    for d in (run_dir, sweep_dir):
        html = (d / "report.html").read_text()
        assert "<script" not in html.lower()
        for url in re.findall(r'(?:src|href)="([^"]+)"', html):
            assert url.startswith(("data:", "#")), url
        bare = re.sub(r'xmlns(:\w+)?="[^"]*"', "", html)  # SVG namespace names are not fetched
        assert "http://" not in bare and "https://" not in bare


def test_sections_appear_only_with_their_data(tmp_path: Path) -> None:
    res = fabricsim.run("ecmp-collision")
    res.summary["cct_inflation"] = 1.25  # a MoE run's key: the CCT bars appear
    res.save(tmp_path)
    html = write_report(tmp_path).read_text()
    assert _sections(html) == ["summary", "fct-cdf", "fct-percentiles", "cct-inflation",
                               "diagnostics", "config"]  # fmt: skip


def test_sweep_report_sections(sweep_dir: Path) -> None:
    html = (sweep_dir / "report.html").read_text()
    assert _sections(html) == SWEEP_SECTIONS
    assert "ideal_spray" in html and "workload.size_bytes" in html
    assert "Per point" in html


def test_kv_sweep_has_ttft_vs_load(tmp_path: Path) -> None:
    plan = plan_sweep("ark", grid=["workload.qps=10,30"], sets=["workload.requests=20"])
    run_sweep(plan, tmp_path / "kv", workers=1)
    html = write_report(tmp_path / "kv").read_text()
    assert {"fct-vs-load", "ttft-vs-load", "fct-percentiles"} <= set(_sections(html))
    assert "TTFT percentiles" in html


def test_report_cli(run_dir: Path, tmp_path: Path, capsys) -> None:
    assert main(["report", str(run_dir)]) == 0
    assert "report.html" in capsys.readouterr().out
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "summary.json" in err
    assert main(["report", str(tmp_path / "nope")]) == 2


@pytest.mark.full
def test_browser_check_catches_errors(tmp_path: Path, chromium: str) -> None:
    """The checker itself can fail: a page with a console error, an exception, a broken image."""
    exe = chromium
    bad = tmp_path / "bad.html"
    bad.write_text(
        '<!DOCTYPE html><html><head><link rel="icon" href="data:,"></head><body>'
        '<section id="x">x</section><img src="missing.png">'
        '<script>console.error("boom"); notDefined();</script></body></html>'
    )
    check = check_page(bad, exe)
    assert check.section_ids == ["x"] and check.broken_images == 1
    text = json.dumps(check.errors)
    assert "boom" in text and "notDefined" in text and "missing.png" in text


@pytest.mark.full
@pytest.mark.parametrize("which", ["run", "ark-run", "sweep"])
def test_report_opens_in_headless_chromium(
    which: str, run_dir: Path, ark_run_dir: Path, sweep_dir: Path, chromium: str
) -> None:
    exe = chromium
    d, expected = {
        "run": (run_dir, RUN_SECTIONS),
        "ark-run": (ark_run_dir, RUN_SECTIONS),
        "sweep": (sweep_dir, SWEEP_SECTIONS),
    }[which]
    check = check_page(d / "report.html", exe)
    assert check.errors == []
    assert check.section_ids == expected
    assert len(check.images) >= 3 and check.broken_images == 0
    assert check.title.startswith("fabricsim")


def test_bad_inputs_leave_the_directory_as_it_was(run_dir: Path, tmp_path: Path) -> None:
    from fabricsim.errors import ConfigError

    d = tmp_path / "run"
    shutil.copytree(run_dir, d)
    for name, data, needle in [
        ("summary.json", b"{", "summary.json: not valid JSON"),
        ("flows.parquet", b"PAR1", "flows.parquet: not a readable Parquet table"),
        ("config.yaml", b"\xff\xfe", "config.yaml: not UTF-8"),
    ]:
        good = (d / name).read_bytes()
        (d / name).write_bytes(data)
        before = {p: p.stat().st_mtime_ns for p in d.rglob("*")}
        with pytest.raises(ConfigError, match=needle):
            write_report(d)
        assert {p: p.stat().st_mtime_ns for p in d.rglob("*")} == before
        (d / name).write_bytes(good)
    assert write_report(d).exists()


def test_report_replaces_figures_whole(run_dir: Path, tmp_path: Path) -> None:
    d = tmp_path / "run"
    shutil.copytree(run_dir, d)
    (d / "figures" / "old-section.png").write_bytes(b"stale")
    write_report(d)
    names = {p.name for p in (d / "figures").iterdir()}
    assert names == {"fct-cdf.svg", "spine-heatmap.svg", "link-timelines.svg"}
    assert not [p.name for p in d.iterdir() if p.name.startswith(".figures")]


def test_the_command_line_imports_no_matplotlib():
    """The report modules draw lazily: start-up (every verb, --help) does not load matplotlib."""
    import subprocess
    import sys

    code = "import sys, fabricsim.cli; print(sorted(m for m in sys.modules if 'matplotlib' in m))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_run_without_timelines_says_which_key_adds_them(tmp_path: Path) -> None:
    fabricsim.run("ecmp-collision").save(tmp_path)
    html = write_report(tmp_path).read_text()
    summary = html[html.index('<section id="summary">') : html.index("</section>")]
    assert "records.timelines=true" in summary
    assert html.count("records.timelines=true") == 1  # one line (config.yaml says false)


def test_diagnostics_tables_have_units_and_separators(tmp_path: Path) -> None:
    sc = fabricsim.load_scenario("ecmp-collision").with_overrides({
        "engine.kind": "packet", "records.timelines": True, "records.port_stats": True,
        "topology.link_gbps": 400, "workload.size_bytes": 1_000_000,
    })  # fmt: skip
    fabricsim.run(sc).save(tmp_path)
    html = write_report(tmp_path).read_text()
    diag = html[html.index('<section id="diagnostics">') :]
    diag = diag[: diag.index("</section>")]
    cells = re.findall(r"<td>([^<]*)</td>", diag)
    assert cells and not [c for c in cells if re.search(r"\de[+-]\d", c)], cells[:40]
    assert any(re.fullmatch(r"[\d.]+ (kB|MB)", c) for c in cells)  # bytes with their unit
    assert any(re.fullmatch(r"\d{1,3}(,\d{3})+", c) for c in cells)  # counts: 1,355
    assert any(c.endswith(" %") for c in cells)  # utilization


def test_report_help_and_docstring_say_inline_svg_is_the_default(capsys) -> None:
    import fabricsim.report as reports

    assert main(["report", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "inline SVG by default" in text and "base64 PNG with --png" in text
    doc = " ".join((reports.__doc__ or "").split())
    assert "SVG by default" in doc and "embedded as base64 PNG," not in doc
