"""Same scenario + seed => byte-identical outputs (all but timing.json)."""

import fabricsim


def _files(res, path):
    res.save(path)
    return {p.name: p.read_bytes() for p in path.iterdir() if p.name != "timing.json"}


def test_flow_engine_outputs_are_byte_identical(tmp_path):
    sc = fabricsim.load_scenario("permutation").with_overrides(
        {"records.timelines": True, "topology.k": 4}
    )
    a = _files(fabricsim.run(sc, engine="flow"), tmp_path / "a")
    b = _files(fabricsim.run(sc, engine="flow"), tmp_path / "b")
    assert set(a) >= {"summary.json", "flows.parquet", "config.yaml", "timeline_links.parquet"}
    assert a == b


def test_seed_changes_results(tmp_path):
    sc = fabricsim.load_scenario("ecmp-collision")
    a = fabricsim.run(sc).flows["entropy"].tolist()
    b = fabricsim.run(sc.with_overrides({"seed": 2})).flows["entropy"].tolist()
    assert a != b
