"""Bad Chakra execution traces (issue 37 item 1): refused in one line naming the file, exit 2,
nothing written, in a resource-limited child (harness.py) -- before anything large is allocated.

The default fabric has 16 hosts, so ``workload.gpus`` is 16 and a good trace has 16 files,
``t.0.et`` .. ``t.15.et``.
"""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import pytest
from harness import assert_refused, run_cli, snapshot

from fabricsim.workloads.chakra import (
    Node,
    all_to_all_node,
    send_node,
    write_trace,
)

GPUS = 16
MIB = 1024**2


def _scenario(t: Path, extra: str = "") -> list[str]:
    (t / "s.yaml").write_text(f"workload: {{kind: moe, matrix: chakra, path: d{extra}}}\n")
    return ["run", "s.yaml", "--out", str(t / "out")]


def _good(d: Path, ranks=range(GPUS), pg: str | None = None) -> None:
    d.mkdir(exist_ok=True)
    for r in ranks:
        nodes = [send_node(1, dst=(r + 8) % GPUS, size=1000)]
        if pg is not None:
            nodes.append(all_to_all_node(2, size=1600, pg_name=pg))
        write_trace(d / f"t.{r}.et", nodes)


def rank0(data: bytes, name: str = "t.0.et"):
    """Good traces for every rank, then rank 0's file replaced by ``data``."""

    def build(t: Path) -> list[str]:
        _good(t / "d")
        (t / "d" / "t.0.et").unlink()
        (t / "d" / name).write_bytes(data)
        return _scenario(t)

    return build


def extra_file(name: str, ranks=range(GPUS), extra: str = ""):
    """Good traces for ``ranks``, plus one more file ``name``."""

    def build(t: Path) -> list[str]:
        _good(t / "d", ranks)
        if name:
            write_trace(t / "d" / name, [send_node(1, dst=0, size=10)])
        return _scenario(t, extra)

    return build


def groups(spec: str):
    def build(t: Path) -> list[str]:
        _good(t / "d", pg="ep")
        return _scenario(t, f", trace_groups: {spec}")

    return build


def _nodes(*nodes) -> bytes:
    out = b""
    for msg in [Node(id=0, type=4), *nodes]:  # the first message is read as GlobalMetadata
        data = msg.SerializeToString()
        out += bytes([len(data)]) + data
    return out


def sparse(t: Path) -> list[str]:
    _good(t / "d")
    with open(t / "d" / "t.0.et", "r+b") as fh:
        fh.truncate(300 * MIB)  # a sparse file: 300 MiB long, nothing on disk
    return _scenario(t)


def one_member_bomb() -> bytes:
    deflate = zlib.compressobj(1, zlib.DEFLATED, 31)
    block = bytes(16 * MIB)
    return b"".join(deflate.compress(block) for _ in range(20)) + deflate.flush()  # 320 MiB


MEMBER = gzip.compress(bytes(16 * MIB), 9)  # 16 MiB of zeros in ~16 KiB

CASES: dict[str, tuple] = {
    # --- sizes: bounded before reading or inflating
    "20 MB of zero bytes": (rank0(bytes(20 * MIB)), "t.0.et: message 1 is empty"),
    "gzip bomb 2 MB -> 2 GB (members)": (rank0(MEMBER * 128), "t.0.et decompresses to more than"),
    "gzip bomb 320 MiB one member": (rank0(one_member_bomb()), "decompresses to more than 256"),
    "file above 256 MiB": (sparse, "t.0.et is 314572800 bytes, more than 256 MiB"),
    "empty file": (rank0(b""), "t.0.et: empty file"),
    "length above the file": (rank0(b"\x00\xff\xff\xff\xff\x0f"), "truncated (4294967295 bytes"),
    "length varint of 11 bytes": (rank0(b"\x00" + b"\xff" * 11), "bad length varint"),
    "length cut": (rank0(b"\x00\x80"), "truncated length"),
    "not protobuf": (rank0(b"\x00\x04\xff\xff\xff\xff"), "not a Chakra Node"),
    "gzip cut": (rank0(gzip.compress(_nodes(send_node(1, dst=1, size=5)))[:-9]), "broken gzip"),
    "gzip junk after": (rank0(gzip.compress(b"\x00") + b"junk"), "broken gzip"),
    "gzip header only": (rank0(b"\x1f\x8b"), "broken gzip"),
    # --- node values
    "comm_dst outside": (rank0(_nodes(send_node(1, dst=99, size=5))), "comm_dst=99"),
    "comm_size above 2**50": (rank0(_nodes(send_node(1, dst=1, size=2**51))), "2**50"),
    "send without comm_dst": (rank0(_nodes(Node(id=3, type=5))), "lacks an integer comm_dst"),
    # --- ranks from the file names, against workload.gpus
    "rank 99,999,999": (extra_file("t.99999999.et"), "rank 99999999 (file t.99999999.et)"),
    "rank 10**30": (extra_file("t." + "9" * 30 + ".et"), "but the fabric/workload has 16 GPUs"),
    "only rank 99,999,999": (extra_file("t.99999999.et", ranks=()), "rank 99999999"),
    "ranks 0, 1, 5 of 6": (
        extra_file("", ranks=(0, 1, 5), extra=", gpus: 6"),
        "none for rank(s) 2, 3, 4",
    ),
    "rank 0 missing": (extra_file("", ranks=range(1, GPUS)), "none for rank(s) 0;"),
    "t.1.et and t.01.et": (extra_file("t.01.et"), "t.01.et and t.1.et are both rank 1"),
    "t.1.et and t.1.et.gz": (extra_file("t.1.et.gz"), "are both rank 1"),
    "8 ranks on 16 GPUs": (extra_file("", ranks=range(8)), "the trace is 8 x 8 but"),
    "16 ranks for gpus 8": (extra_file("", extra=", gpus: 8"), "rank 15 (file t.15.et)"),
    "rank 0 is a directory": (
        lambda t: (_good(t / "d", range(1, GPUS)), (t / "d" / "t.0.et").mkdir(), _scenario(t))[-1],
        "none for rank(s) 0;",
    ),
    # --- workload.trace_groups against the trace
    "group not in the trace": (
        groups(f"{{ep: {list(range(GPUS))}, tp: [0, 1]}}"),
        "trace_groups.tp",
    ),
    "group rank outside": (groups("{ep: [0, 16]}"), "rank 16 is not in the trace"),
    "group rank 10**9": (groups("{ep: [0, 1000000000]}"), "ranks must be in 0..15"),
    "group rank negative": (groups("{ep: [-1, 0]}"), "rank -1 is not in the trace"),
    "group rank twice": (groups("{ep: [0, 0, 8]}"), "rank 0 is listed twice"),
    "group empty": (groups("{ep: []}"), "trace_groups.ep: empty"),
    "rank outside its group": (groups("{ep: [0, 8]}"), "rank 1 runs an all-to-all in group 'ep'"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_chakra_trace_is_refused(tmp_path, case):
    build, needle = CASES[case]
    argv = build(tmp_path)
    before = snapshot(tmp_path)
    outcome = run_cli(argv, tmp_path, wall_s=30)
    assert_refused(outcome, before, snapshot(tmp_path), needle=needle, wall_s=30)


def test_good_chakra_trace_runs(tmp_path):
    _good(tmp_path / "d", pg="ep")  # 1000 bytes sent, 1600 all-to-all over 16 ranks, per rank
    argv = _scenario(tmp_path, f", gpus_per_server: 1, trace_groups: {{ep: {list(range(GPUS))}}}")
    outcome = run_cli(argv, tmp_path, wall_s=60)
    assert outcome.code == 0, outcome.stderr
    summary = (tmp_path / "out" / "summary.json").read_text()
    assert f'"bytes_total": {GPUS * 1000 + GPUS * (GPUS - 1) * 100}' in summary
