"""Trace workloads: CSV/Parquet/htsim .cm reading, export, and the round trip."""

import numpy as np
import pandas as pd
import pytest

import fabricsim
import fabricsim.config
from fabricsim.cli import main
from fabricsim.errors import ConfigError
from fabricsim.units import MAX_MESSAGE_BYTES, MAX_TIME_S, MAX_TOTAL_BYTES
from fabricsim.workloads.base import FlowTable, check_total_bytes
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
        (
            "Nodes 4\nConnections 1\n0->1 id 1 start 0 size 0\n",
            "line 3: size 0 is less than 1 byte",
        ),
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


def test_export_warns_that_htsim_truncates_fractional_starts(tmp_path, capsys):
    assert (
        main(["export-trace", "permutation", "--format", "htsim", "--out", str(tmp_path / "p.cm")])
        == 0
    )
    assert "whole microseconds" not in capsys.readouterr().err  # every start is 0
    assert main(["export-trace", "ark", "--format", "htsim", "--out", str(tmp_path / "a.cm")]) == 0
    assert "1000 of 1000 messages start up to 1 us earlier" in capsys.readouterr().err


# -- input bounds and strict parsing (issue 10) -----------------------------------------------
HEADER = "src,dst,size_bytes,start_s\n"


def _csv(tmp_path, rows: str, name: str = "t.csv"):
    path = tmp_path / name
    path.write_text(HEADER + rows)
    return path


def test_whole_floats_are_sizes_but_fractions_are_not(tmp_path):
    df = read_message_table(_csv(tmp_path, "0,9,100.0,0\n1,2,1e6,0\n"))
    assert df["size_bytes"].tolist() == [100, 1_000_000]
    with pytest.raises(ConfigError, match=r"t\.csv: line 2: size_bytes 1\.5 is not a whole number"):
        read_message_table(_csv(tmp_path, "0,9,1.5,0\n"))


@pytest.mark.parametrize(
    "row, needle",
    [
        (
            "0,9,5000000000000000000,0",
            r"line 2: size_bytes 5000000000000000000 is more than 2\*\*50",
        ),
        ("0,9,nan,0", "size_bytes nan is not a number"),
        ("0,9,10,inf", "start_s inf is not finite"),
        ("0,9,10,1e7", "start_s 1e7 is later than 1e\\+06 s"),
        ("0,9,,0", "size_bytes is empty"),
    ],
)
def test_values_outside_the_bounds(tmp_path, row, needle):
    with pytest.raises(ConfigError, match=needle):
        read_message_table(_csv(tmp_path, row + "\n"))


def test_total_bytes_of_a_file_are_bounded(tmp_path):
    rows = f"0,9,{MAX_MESSAGE_BYTES},0\n" * 4096
    assert read_message_table(_csv(tmp_path, rows))["size_bytes"].sum() == MAX_TOTAL_BYTES
    with pytest.raises(ConfigError, match="4097 messages carry .* in total, more than 2\\*\\*62"):
        read_message_table(_csv(tmp_path, rows + "1,9,1,0\n"))


def test_hosts_are_checked_with_their_line(tmp_path):
    path = _csv(tmp_path, "0,9,10,0\nhost3,host16,10,0\n")
    with pytest.raises(
        ConfigError, match=r"line 3: dst host16 is outside the fabric \(hosts are 0\.\.15\)"
    ):
        read_message_table(path, hosts=16)


def test_non_utf8_files_name_line_and_column(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(HEADER.encode() + b"0,9,1\xe9,0\n")
    with pytest.raises(ConfigError, match=r"t\.csv: line 2, column 6: byte 0xe9 is not UTF-8"):
        read_message_table(path)
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbf" + HEADER.encode() + b"0,9,10,0\n")
    assert read_message_table(bom)["size_bytes"].tolist() == [10]


@pytest.mark.parametrize(
    "lines, needle",
    [
        ("Nodes 16\nConnections 1\n0->1 start 0 size 100 junk\n", "line 3: 'junk' needs a value"),
        ("Nodes 16\nConnections 1\n0->1 size 1 junk 2\n", "line 3: unknown word 'junk'"),
        ("Nodes 16\nConnections abc\n0->1 size 1\n", "line 2: 'Connections' needs one whole"),
        ("Nodes 16\nConnections\n0->1 size 1\n", "'Connections' needs .* got nothing"),
        ("Connections 1\n0->1 start 1.2.3 size 1\n", "start '1.2.3' is not a number"),
        ("Connections 1\n0->1 start nan size 1\n", "start nan is not a number"),
        ("Connections 1\n0->1 start -1 size 1\n", "start -1 is negative"),
        ("Connections 1\n0->1 start 2e12 size 1\n", "start 2e12 is later than 1e\\+12 us"),
        ("Connections 1\n0->1 size 1e5\n", "size '1e5' is not a whole number"),
        ("Connections 1\n0->1 size -5\n", "size -5 is less than 1 byte"),
        ("Connections 1\n0->1 size 2 size 3\n", "'size' is given twice"),
        ("Connections 1\n0->1 size 2 prio 1\n", "prio"),
        ("Nodes 2\nConnections 1\n0->2 size 2\n", "node 2 is outside 'Nodes 2'"),
        ("Connections 1\n0->1 size 2\nNodes 16\n", "must come before the connections"),
        ("Failures 1\nConnections 1\n0->1 size 2\n", "not supported"),
    ],
)
def test_cm_grammar_is_strict(tmp_path, lines, needle):
    path = tmp_path / "bad.cm"
    path.write_text(lines)
    with pytest.raises(ConfigError, match=needle):
        read_htsim_cm(path)


def test_flow_table_bounds_every_workload():
    sc = fabricsim.config.load_scenario("permutation")
    FlowTable.build(sc, [0], [1], [MAX_MESSAGE_BYTES], [MAX_TIME_S])
    for size, start, needle in [
        ([MAX_MESSAGE_BYTES + 1], [0.0], "more than 2\\*\\*50"),
        ([1e30], [0.0], "more than 2\\*\\*50"),  # would wrap in an int64 cast
        ([float("nan")], [0.0], "is not a number"),
        ([0], [0.0], "less than 1 byte"),
        ([2.5], [0.0], "not a whole number"),
        ([1], [float("inf")], "is not finite"),
        ([1], [MAX_TIME_S * 2], "later than"),
    ]:
        with pytest.raises(ConfigError, match=needle):
            FlowTable.build(sc, [0], [1], size, start)
    with pytest.raises(ConfigError, match="2 flows carry .* in total"):
        check_total_bytes(np.array([MAX_TOTAL_BYTES, 1], dtype=np.int64), "workload")


def test_plain_cm_cells_are_read_without_pandas_as_pandas_reads_them(tmp_path, monkeypatch):
    """Whole numbers and short decimals: the fast reader gives the checked reader's columns."""
    from fabricsim.workloads import trace

    rng = np.random.default_rng(5)
    n = 400
    starts = [
        rng.choice(["0", "0.0", "17", "2.5", f"{rng.random() * 1e3:.9f}", f"{rng.random():.15f}"])
        for _ in range(n)
    ]
    ids = rng.permutation(n) * 3 + 1  # unique, unsorted: ties in start_s are broken by id
    lines = ["Nodes 64", f"Connections {n}"]
    for i in range(n):
        src, dst = rng.choice(64, 2, replace=False)
        size = rng.integers(1, 10**9)
        lines.append(f"{src}->{dst} id {ids[i]} start {starts[i]} size {size}")
    path = tmp_path / "plain.cm"
    path.write_text("\n".join(lines) + "\n")
    used = []
    plain = trace._plain_cm_columns
    monkeypatch.setattr(trace, "_plain_cm_columns", lambda *a: used.append(1) or plain(*a))
    fast = trace.htsim_cm_columns(path, 64)
    monkeypatch.setattr(trace, "_plain_cm_columns", lambda *a: None)
    checked = trace.htsim_cm_columns(path, 64)
    assert used and list(fast) == list(checked) == ["src", "dst", "size_bytes", "start_s", "id"]
    for name in fast:
        assert fast[name].dtype == checked[name].dtype
        np.testing.assert_array_equal(fast[name], checked[name])


@pytest.mark.parametrize(
    "cell, needle",
    [
        ("start 1e-05", None),  # not plain: pandas reads it
        ("start 0.30000000000000004", None),
        ("start 2000000000000", "start 2000000000000 is later than 1e\\+12 us"),
        ("start abc", "start 'abc' is not a number"),
        ("start 0 size 9999999999999999", "size 9999999999999999 is more than 2\\*\\*50"),
    ],
)
def test_other_cm_cells_take_the_checked_reader(tmp_path, cell, needle):
    path = tmp_path / "x.cm"
    words = {"start": "0", "size": "10"}
    for key, value in zip(cell.split()[::2], cell.split()[1::2], strict=True):
        words[key] = value
    path.write_text(
        f"Nodes 4\nConnections 1\n0->1 id 1 start {words['start']} size {words['size']}\n"
    )
    if needle is None:
        assert read_htsim_cm(path)["start_s"].tolist() == [float(words["start"]) * 1e-6]
    else:
        with pytest.raises(ConfigError, match=needle):
            read_htsim_cm(path)


# -- issue 37 item 2: the .cm header is parsed strictly (it sizes the htsim-uec fabric) --------
@pytest.mark.parametrize(
    ("head", "k"),
    [
        ("Nodes 16\n", 4),
        ("# an example: 0->1 start 0 size 100\nNodes 16\n", 4),  # a comment is not a connection
        ("\nConnections 1\n  nodes 1024\n", 16),  # any order, any case, blank lines
        ("Connections 1\n", 8),  # no Nodes line: the preset's default fabric
    ],
)
def test_cm_header_sizes_the_preset_fabric(tmp_path, head, k):
    path = tmp_path / "m.cm"
    path.write_text(head + ("Connections 1\n" if "Conn" not in head else "") + "0->1 size 10\n")
    assert fabricsim.config.load_scenario(path).topology.k == k


@pytest.mark.parametrize(
    ("head", "needle"),
    [
        ("Nodes 1000000000\n", r"line 1: 'Nodes 1000000000' must be 2\.\.524288"),
        ("Nodes 99999999999999999999\n", r"'Nodes 99999999999999999999' must be 2\.\.524288"),
        ("# 0->1 size 5\nNodes 1000000000\n", r"line 2: 'Nodes 1000000000' must be"),
        ("Nodes 0\n", r"'Nodes 0' must be 2\.\.524288"),
        ("Nodes 1\n", r"'Nodes 1' must be 2\.\.524288"),
        ("Nodes 16 # hosts\n", r"'Nodes' needs one whole number .* got '16 # hosts'"),
        ("Nodes -16\n", r"'Nodes' needs one whole number .* got '-16'"),
        ("Nodes\n", r"'Nodes' needs one whole number .* got nothing"),
    ],
)
def test_cm_header_that_does_not_fit_is_refused_by_the_preset(tmp_path, head, needle):
    path = tmp_path / "m.cm"
    path.write_text(head + "Connections 1\n0->1 size 10\n")
    with pytest.raises(ConfigError, match=needle) as info:
        fabricsim.config.load_scenario(path)
    assert "0..-1" not in str(info.value)


@pytest.mark.parametrize(
    ("head", "needle"),
    [
        ("Nodes 0\n", r"line 1: 'Nodes 0' must be 2\.\.524288"),
        ("Nodes 1\n", r"line 1: 'Nodes 1' must be 2\.\.524288"),
        ("Nodes 600000\n", r"line 1: 'Nodes 600000' must be 2\.\.524288"),
        ("Nodes 32\n", r"'Nodes 32' is more than the fabric's 16 hosts \(node ids 0\.\.15\)"),
    ],
)
def test_cm_reader_refuses_a_header_that_does_not_fit(tmp_path, head, needle):
    path = tmp_path / "m.cm"
    path.write_text(head + "Connections 1\n0->1 size 10\n")
    with pytest.raises(ConfigError, match=needle) as info:
        read_htsim_cm(path, hosts=16)
    assert "0..-1" not in str(info.value)


# -- issue 37 item 4: export-trace --format htsim writes exact decimal microseconds ----------
def test_htsim_starts_are_exact_decimals(tmp_path):
    starts = [50 * 1e-6, 5.5e-6, 1.234567e-6, 0.0, 3e-12, 12.345678901234]
    df = pd.DataFrame({"src": 0, "dst": 1, "id": range(1, 7), "start_s": starts, "size_bytes": 10})
    cm = tmp_path / "x.cm"
    write_htsim_cm(df, cm, nodes=2)
    words = [line.split()[4] for line in cm.read_text().splitlines()[2:]]
    assert words == ["50", "5.5", "1.234567", "0", "0.000003", "12345678.901234"]
    back = read_htsim_cm(cm)
    ps = np.rint(back.sort_values("id")["start_s"].to_numpy() * 1e12).astype(np.int64)
    assert ps.tolist() == np.rint(np.array(starts) * 1e12).astype(np.int64).tolist()


def test_export_trace_writes_50_us_as_50(tmp_path, capsys):
    trace = tmp_path / "t.csv"
    trace.write_text(HEADER + f"0,9,1000,{50 * 1e-6!r}\n1,10,1000,0.0000015\n")
    yaml_path = tmp_path / "s.yaml"
    yaml_path.write_text(f"workload: {{kind: trace, path: {trace}}}\n")
    out = tmp_path / "t.cm"
    assert main(["export-trace", str(yaml_path), "--format", "htsim", "--out", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert lines[2:] == ["1->10 id 1 start 1.5 size 1000", "0->9 id 0 start 50 size 1000"]
    assert "1 of 2 messages start up to 1 us earlier" in capsys.readouterr().err
