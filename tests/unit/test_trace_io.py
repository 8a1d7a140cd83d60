"""Trace workloads: CSV/Parquet/htsim .cm reading, export, and the round trip."""

import pandas as pd
import pytest

import fabricsim
from fabricsim.cli import main
from fabricsim.errors import ConfigError
from fabricsim.workloads.trace import read_htsim_cm, read_message_table, write_htsim_cm

CM = """Nodes 16
Connections 3
0->9 id 1 start 0 size 2000000
3->12 id 2 start 5.5 size 1000
15->0 id 7 start 2 size 4096
"""


def test_read_htsim_cm(tmp_path):
    path = tmp_path / "x.cm"
    path.write_text(CM)
    df = read_htsim_cm(path)
    assert df["id"].tolist() == [1, 7, 2]  # sorted by start time
    assert df["start_s"].tolist() == [0.0, 2e-6, 5.5e-6]
    assert df["size_bytes"].tolist() == [2_000_000, 4096, 1000]


def test_htsim_round_trip(tmp_path):
    a = tmp_path / "a.cm"
    a.write_text(CM)
    first = read_htsim_cm(a)
    b = tmp_path / "b.cm"
    write_htsim_cm(first, b, nodes=16)
    pd.testing.assert_frame_equal(first, read_htsim_cm(b))


@pytest.mark.parametrize(
    "text, needle",
    [
        ("Nodes 4\nConnections 1\n0->1 id 1 start 0 size 10 trigger 3\n", "trigger"),
        ("Nodes 4\nConnections 2\n0->1 id 1 start 0 size 10\n", "declares 2"),
        ("Nodes 4\nConnections 1\nzero to one\n", "cannot parse"),
        ("Nodes 4\nConnections 1\n0->1 id 1 start 0 size 0\n", "size_bytes"),
    ],
)
def test_bad_cm_files(tmp_path, text, needle):
    path = tmp_path / "bad.cm"
    path.write_text(text)
    with pytest.raises(ConfigError, match=needle):
        read_htsim_cm(path)


def test_parquet_and_host_names(tmp_path):
    path = tmp_path / "m.parquet"
    pd.DataFrame(
        {
            "src": ["host1", "host2"],
            "dst": ["host9", "host0"],
            "size_bytes": [10, 20],
            "start_s": [0.0, 1e-6],
            "id": [5, 6],
        }
    ).to_parquet(path)
    df = read_message_table(path)
    assert df["src"].tolist() == [1, 2] and df["id"].tolist() == [5, 6]


def test_run_cm_trace_and_export_round_trip(tmp_path, capsys):
    cm = tmp_path / "t.cm"
    cm.write_text(CM)
    sc = {
        "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 4, "hosts_per_leaf": 8},
        "workload": {"kind": "trace", "path": str(cm)},
        "nic": {"packet_spraying_type": "none"},
    }
    res = fabricsim.run(sc, engine="flow")
    assert res.summary["flows_completed"] == 3
    assert res.flows["trace_id"].tolist() == [1, 7, 2]
    yaml_path = tmp_path / "s.yaml"
    import yaml

    yaml_path.write_text(yaml.safe_dump(sc))
    out = tmp_path / "again.cm"
    assert main(["export-trace", str(yaml_path), "--format", "htsim", "--out", str(out)]) == 0
    pd.testing.assert_frame_equal(read_htsim_cm(cm), read_htsim_cm(out))
    csv = tmp_path / "perm.csv"
    assert main(["export-trace", "permutation", "--format", "csv", "--out", str(csv)]) == 0
    assert len(pd.read_csv(csv)) == 128
