"""The ``ark`` scenario on the packet engine: refused at full size, runs as an MB-sized variant."""

from __future__ import annotations

from pathlib import Path

import pytest

import fabricsim
from fabricsim.cli import main
from fabricsim.errors import EngineRefusal

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ark_small_packet.yaml"


def test_full_ark_scenario_is_refused_in_one_line(tmp_path, capsys):
    code = main(["run", "ark", "--engine", "packet", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "engine.max_packets" in err and "--engine flow" in err
    assert not (tmp_path / "out").exists()


def test_refusal_through_the_api_names_the_packet_count():
    with pytest.raises(EngineRefusal, match=r"about 4\.\de\+08 data packets"):
        fabricsim.run("ark", engine="packet")


def _packet_engine_available() -> bool:
    try:
        import fabricsim.packetsim.engine  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.skipif(
    not _packet_engine_available(),
    reason="fabricsim.packetsim.engine cannot be imported (the packet engine is not in this build)",
)
@pytest.mark.parametrize("policy", ["ecmp", "ark"])
def test_small_variant_runs_on_the_packet_engine(policy):
    sc = fabricsim.load_scenario(EXAMPLE).with_overrides({"lb.policy": policy})
    pkt = fabricsim.run(sc, engine="packet")
    flow = fabricsim.run(sc, engine="flow")
    s = pkt.summary
    assert s["flows_completed"] == s["flows_total"] == 40
    assert s["bytes_conserved"]
    assert pkt.flows["size_bytes"].min() >= 60_000 and pkt.flows["size_bytes"].max() <= 3_400_000
    assert {"ttft_mean_s", "ttft_p95_s", "spine_peak_flows"} <= set(s)
    if policy == "ark":
        assert {"ark_races", "ark_fallbacks"} <= set(s)
    # long-ish flows, no loss: the two engines agree on the mean FCT within 50 %
    assert s["fct_mean_s"] == pytest.approx(flow.summary["fct_mean_s"], rel=0.5)
