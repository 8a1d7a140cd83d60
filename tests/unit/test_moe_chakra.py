"""Chakra execution traces -> MoE demand matrices (traces generated here)."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

import fabricsim
from fabricsim.errors import ConfigError
from fabricsim.experiments.runner import fabric_of
from fabricsim.workloads import generate
from fabricsim.workloads.chakra import (
    Node,
    all_to_all_node,
    chakra_matrix,
    compute_node,
    read_chakra,
    read_trace,
    recv_node,
    send_node,
    write_trace,
)


def p2p_traces(tmp_path, n=4):
    for r in range(n):
        nodes = [compute_node(1)]
        nodes += [send_node(10 + d, dst=d, size=100 * (r + 1) + d) for d in range(n) if d != r]
        nodes += [recv_node(50 + s, src=s, size=100 * (s + 1) + r) for s in range(n) if s != r]
        write_trace(tmp_path / f"moe.{r}.et", nodes)
    return tmp_path


def test_round_trip_of_one_rank(tmp_path):
    nodes = [send_node(3, dst=2, size=4096), all_to_all_node(4, size=999, pg_name="7")]
    write_trace(tmp_path / "t.0.et", nodes)
    meta, back = read_trace(tmp_path / "t.0.et")
    assert meta.version == "0.0.4"
    assert [n.id for n in back] == [3, 4] and [n.type for n in back] == [5, 7]
    assert {a.name: a.WhichOneof("value") for a in back[0].attr}["comm_dst"] == "int32_val"


def test_sends_become_messages_and_matching_recvs_are_not_double_counted(tmp_path):
    d, counts = read_chakra(p2p_traces(tmp_path))
    expected = np.array([[100 * (r + 1) + c if r != c else 0 for c in range(4)] for r in range(4)])
    np.testing.assert_array_equal(d, expected)
    assert counts == {"send": 12, "recv": 12, "all_to_all": 0, "ignored": 4}


def test_recvs_alone_describe_the_messages(tmp_path):
    for r in range(3):
        write_trace(tmp_path / f"x.{r}.et", [recv_node(1, src=(r + 1) % 3, size=10 * r + 5)])
    d = chakra_matrix(tmp_path / "x.1.et")  # one file names the whole set
    assert d[1, 0] == 5 and d[2, 1] == 15 and d[0, 2] == 25 and d.sum() == 45


def test_all_to_all_spread_over_its_process_group(tmp_path):
    write_trace(tmp_path / "a.0.et", [all_to_all_node(1, size=400, pg_name="ep")])
    write_trace(tmp_path / "a.1.et", [all_to_all_node(1, size=800)])  # no group: every rank
    write_trace(tmp_path / "a.2.et", [all_to_all_node(1, size=400, pg_name="ep")])
    write_trace(tmp_path / "a.3.et", [compute_node(1)])
    d = chakra_matrix(tmp_path, {"ep": [0, 2]})
    np.testing.assert_array_equal(d[0], [200, 0, 200, 0])
    np.testing.assert_array_equal(d[1], [200, 200, 200, 200])
    np.testing.assert_array_equal(d[2], [200, 0, 200, 0])
    assert d[3].sum() == 0


def test_gzipped_trace(tmp_path):
    write_trace(tmp_path / "raw.0.et", [send_node(1, dst=1, size=77)])
    write_trace(tmp_path / "raw.1.et", [compute_node(1)])
    for r in range(2):
        data = (tmp_path / f"raw.{r}.et").read_bytes()
        (tmp_path / f"raw.{r}.et").unlink()
        (tmp_path / f"gz.{r}.et").write_bytes(gzip.compress(data))
    assert chakra_matrix(tmp_path)[0, 1] == 77


def test_chakra_workload_end_to_end(tmp_path):
    p2p_traces(tmp_path, n=4)
    sc = fabricsim.load_scenario(
        {
            "engine": {"flow_model": "open_loop"},
            "topology": {"kind": "leaf_spine", "leaves": 1, "spines": 1, "hosts_per_leaf": 4},
            "workload": {
                "kind": "moe",
                "matrix": "chakra",
                "path": str(tmp_path),
                "gpus_per_server": 1,
            },
        }
    )
    flows = generate(sc, fabric_of(sc))
    assert len(flows) == 12 and flows.size_bytes.sum() == sum(
        100 * (r + 1) + c for r in range(4) for c in range(4) if r != c
    )
    res = fabricsim.run(sc)
    assert res.summary["flows_completed"] == 12 and res.summary["cct_s"] > 0


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: (p / "t.0.et").write_bytes(b"\x05abc"), "truncated"),
        (lambda p: (p / "t.0.et").write_bytes(b"\x00\x03\xff\xff\xff"), "not a Chakra Node"),
        (lambda p: (p / "t.0.et").write_bytes(b"\x80"), "truncated length"),
        (lambda p: write_trace(p / "t.0.et", [Node(id=1, type=5)]), "lacks an integer comm_dst"),
        (lambda p: write_trace(p / "t.0.et", [send_node(1, dst=9, size=5)]), "comm_dst=9"),
        (lambda p: write_trace(p / "t.0.et", [compute_node(1)]), "no send/recv or all-to-all"),
        (lambda p: write_trace(p / "trace.et", [compute_node(1)]), "named <prefix>.<rank>.et"),
        (lambda p: (p / "t.0.et").write_bytes(b"\x1f\x8bjunk"), "broken gzip"),
    ],
)
def test_malformed_traces_raise_one_line(tmp_path, make, message):
    make(tmp_path)
    write_trace(tmp_path / "t.1.et", [compute_node(1)])
    target = tmp_path / ("trace.et" if (tmp_path / "trace.et").exists() else "t.0.et")
    with pytest.raises(ConfigError, match=message) as info:
        chakra_matrix(target)
    assert "\n" not in str(info.value)


def test_group_errors(tmp_path):
    write_trace(tmp_path / "g.0.et", [all_to_all_node(1, size=10, pg_name="ep")])
    write_trace(tmp_path / "g.1.et", [compute_node(1)])
    with pytest.raises(ConfigError, match="rank 0 runs an all-to-all in group 'ep'"):
        chakra_matrix(tmp_path, {"ep": [1]})
    with pytest.raises(ConfigError, match="ranks must be in 0..1"):
        chakra_matrix(tmp_path, {"ep": [0, 5]})


def test_trace_size_must_match_the_fabric(tmp_path, capsys):
    from fabricsim.cli import main

    p2p_traces(tmp_path, n=4)
    yaml = tmp_path / "s.yaml"
    yaml.write_text(
        "topology: {kind: leaf_spine, leaves: 1, hosts_per_leaf: 8, spines: 1}\n"
        f"workload: {{kind: moe, matrix: chakra, path: {tmp_path}}}\n"
    )
    assert main(["run", str(yaml), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert "4 x 4 but the fabric/workload has 8 GPUs" in err and "\n" not in err


# -- issue 37 item 1: bounded before allocating; ranks and groups checked ----------------------
def _two_ranks(tmp_path, prefix="t"):
    write_trace(tmp_path / f"{prefix}.0.et", [send_node(1, dst=1, size=10)])
    write_trace(tmp_path / f"{prefix}.1.et", [compute_node(1)])


def test_zero_bytes_are_refused_at_the_first_empty_node(tmp_path):
    _two_ranks(tmp_path)
    (tmp_path / "t.0.et").write_bytes(bytes(100_000))  # 100,000 empty messages
    with pytest.raises(ConfigError, match=r"t\.0\.et: message 1 is empty"):
        chakra_matrix(tmp_path)


def test_file_size_is_bounded_before_reading(tmp_path, monkeypatch):
    from fabricsim.workloads import chakra

    _two_ranks(tmp_path)
    monkeypatch.setattr(chakra, "MAX_TRACE_FILE_BYTES", 8)
    with pytest.raises(ConfigError, match=r"t\.0\.et is \d+ bytes, more than"):
        chakra_matrix(tmp_path)


def test_gunzipped_size_is_bounded(tmp_path, monkeypatch):
    from fabricsim.workloads import chakra

    _two_ranks(tmp_path)
    member = gzip.compress(bytes(4096))
    (tmp_path / "t.0.et").write_bytes(member * 4)  # several members: 16 KiB unpacked
    monkeypatch.setattr(chakra, "MAX_TRACE_DATA_BYTES", 10_000)
    with pytest.raises(ConfigError, match=r"t\.0\.et decompresses to more than"):
        chakra_matrix(tmp_path)


def test_multi_member_gzip_and_zero_padding_still_read(tmp_path):
    _two_ranks(tmp_path)
    data = (tmp_path / "t.0.et").read_bytes()
    (tmp_path / "t.0.et").write_bytes(gzip.compress(data[:3]) + gzip.compress(data[3:]) + bytes(8))
    assert chakra_matrix(tmp_path)[0, 1] == 10


def test_a_cut_gzip_is_refused(tmp_path):
    _two_ranks(tmp_path)
    data = gzip.compress((tmp_path / "t.0.et").read_bytes())
    (tmp_path / "t.0.et").write_bytes(data[:-12])
    with pytest.raises(ConfigError, match="broken gzip"):
        chakra_matrix(tmp_path)


def test_a_huge_rank_id_is_refused_from_the_file_name(tmp_path):
    _two_ranks(tmp_path)
    write_trace(tmp_path / "t.99999999.et", [compute_node(1)])
    with pytest.raises(ConfigError, match=r"none for rank\(s\) 2, 3, 4, 5, 6, 7, 8, 9, \.\.\."):
        chakra_matrix(tmp_path)
    with pytest.raises(ConfigError, match=r"rank 99999999 \(file t\.99999999\.et\).* 4 GPUs"):
        chakra_matrix(tmp_path, gpus=4)


@pytest.mark.parametrize(
    ("ranks", "gpus", "needle"),
    [
        ((0, 1, 5), None, r"files for 3 ranks but none for rank\(s\) 2, 3, 4;"),
        ((1, 2), None, r"none for rank\(s\) 0;"),
        ((0, 1, 2), 2, r"rank 2 \(file t\.2\.et\) but the fabric/workload has 2 GPUs"),
        ((0, 1), 3, r"the trace is 2 x 2 but the fabric/workload has 3 GPUs"),
    ],
)
def test_ranks_must_be_0_to_n_minus_1(tmp_path, ranks, gpus, needle):
    for r in ranks:
        write_trace(tmp_path / f"t.{r}.et", [send_node(1, dst=ranks[0], size=10)])
    with pytest.raises(ConfigError, match=needle):
        chakra_matrix(tmp_path, gpus=gpus)


@pytest.mark.parametrize("other", ["t.01.et", "t.1.et.gz"])
def test_two_files_for_one_rank_are_refused(tmp_path, other):
    _two_ranks(tmp_path)
    write_trace(tmp_path / other, [send_node(1, dst=0, size=99)])
    with pytest.raises(ConfigError, match=r"are both rank 1; keep one file per rank"):
        chakra_matrix(tmp_path)


@pytest.mark.parametrize(
    ("groups", "needle"),
    [
        (
            {"ep": [0, 1], "tp": [0, 1]},
            r"trace_groups\.tp: no all-to-all node .* in the trace: 'ep'\)",
        ),
        ({"ep": [0, 1, 7]}, r"trace_groups\.ep: rank 7 is not in the trace; .* 0\.\.1"),
        ({"ep": [0, 1, 1]}, r"trace_groups\.ep: rank 1 is listed twice"),
        ({"ep": []}, r"trace_groups\.ep: empty"),
    ],
)
def test_trace_groups_must_name_the_traces_groups_and_ranks(tmp_path, groups, needle):
    write_trace(tmp_path / "g.0.et", [all_to_all_node(1, size=10, pg_name="ep")])
    write_trace(tmp_path / "g.1.et", [all_to_all_node(1, size=10, pg_name="ep")])
    with pytest.raises(ConfigError, match=needle):
        chakra_matrix(tmp_path, groups)
    assert chakra_matrix(tmp_path, {"ep": [0, 1]}).sum() == 20


def test_gunzip_in_small_steps_gives_every_byte(monkeypatch):
    from fabricsim.workloads import chakra

    monkeypatch.setattr(chakra, "_INFLATE_STEP", 1000)  # step ends inside long matches
    rng = np.random.default_rng(1)
    raw = bytes(rng.integers(0, 4, 2000, dtype=np.uint8)) * 60 + bytes(rng.bytes(5000))
    data = gzip.compress(raw[:50_000], 9) + gzip.compress(raw[50_000:], 1)
    assert chakra._gunzip_bounded(data, "x") == raw
