"""Machine-readable paths (issue 37, item 2): an integer ``paths`` column on both engines, the
``path`` column names them (never prose such as ``"42 paths"``), and on the packet engine a
``flow_paths`` table with the data packets of every (flow, path) when a flow took several."""

import numpy as np

import fabricsim
from fabricsim.routing.dag import MAX_PATH_LABELS

SPRAY = {"workload.size_bytes": 100_000, "nic.packet_spraying_type": "reps",
         "records.uet_monitor": True}  # fmt: skip


def _collision(**overrides):
    return fabricsim.load_scenario("ecmp-collision").with_overrides(overrides)


def test_sprayed_packet_flows_count_and_table_their_paths():
    for spines in (8, 16):  # at most MAX_PATH_LABELS paths: named in `path`; more: only counted
        res = fabricsim.run(_collision(**SPRAY, **{"topology.spines": spines}), engine="packet")
        flows, table = res.flows, res.tables["flow_paths"]
        assert list(table.columns) == ["flow_id", "path", "packets"]
        assert flows["paths"].dtype == np.int64 and (flows["paths"] > 1).all()
        assert list(table.groupby("flow_id").size()) == list(flows["paths"])
        mon = res.tables["uet_monitor"].groupby(["flow_id", "path"]).size()
        got = table.set_index(["flow_id", "path"])["packets"]
        assert got.sort_index().equals(mon.sort_index().astype(np.int64))  # every packet counted
        assert table["packets"].sum() == res.summary["packets_sent"]
        for row in flows.itertuples():
            named = list(table[table["flow_id"] == row.flow_id]["path"])
            if row.paths <= MAX_PATH_LABELS:
                assert row.path.split(";") == named  # first-use order, as the table
            else:
                assert spines == 16 and row.path == ""  # counted, not prose in a data column
        assert not flows["path"].str.contains("paths").any()


def test_single_path_runs_have_no_flow_paths_table():
    res = fabricsim.run(_collision(**{"workload.size_bytes": 50_000}), engine="packet")
    assert "flow_paths" not in res.tables
    assert (res.flows["paths"] == 1).all() and not res.flows["path"].str.contains(";").any()


def test_flow_engine_counts_paths_too():
    for spines, named in ((8, True), (16, False)):
        sc = _collision(**{"topology.spines": spines, "lb.policy": "ideal_spray"})
        flows = fabricsim.run(sc, engine="flow").flows
        assert (flows["paths"] == spines).all()
        if named:
            assert (flows["path"].str.count(";") + 1 == spines).all()
        else:
            assert (flows["path"] == "").all()
    flows = fabricsim.run(_collision(), engine="flow").flows
    assert (flows["paths"] == 1).all() and flows["path"].str.startswith("leaf0>").all()
