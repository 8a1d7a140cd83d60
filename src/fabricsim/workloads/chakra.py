"""MLCommons Chakra execution traces -> a GPU-level demand matrix (bytes).

A Chakra trace is one file per rank, named ``<prefix>.<rank>.et`` (optionally gzipped): a
stream of length-delimited protobuf messages (a varint byte count, then the message), first a
``GlobalMetadata``, then ``Node`` s.  No Chakra package is installable from a registry, so the
few messages we read are declared here (field numbers as Chakra's ``et_def.proto``) and built
with ``google.protobuf.descriptor_pb2`` at import — no ``protoc``.

What becomes traffic:

* ``COMM_SEND_NODE``: a message of ``comm_size`` bytes from the file's rank to ``comm_dst``;
* ``COMM_RECV_NODE``: used only when the traces hold no send node at all (then a message from
  ``comm_src`` to the file's rank) — a matching send and receive describe one message;
* ``COMM_COLL_NODE`` with ``comm_type`` = ``ALL_TO_ALL``: the node carries only its total
  ``comm_size``, so it is spread evenly over its process group (``pg_name``), ``comm_size / |G|``
  to every member, the rank itself included (that share stays local);
* everything else (compute, memory, other collectives) is ignored and counted.

Process groups are named, not listed, in Chakra traces: give their ranks with
``workload.trace_groups`` (``pg_name -> ranks``); a group not listed there is every rank.
A listed group must be used by some all-to-all of the trace, with ranks of the trace.

Input is bounded before anything large is allocated: the ranks (from the file names) must be
``0..N-1`` with one file each, ``N`` = ``workload.gpus``; a file is at most
``MAX_TRACE_FILE_BYTES`` on disk and ``MAX_TRACE_DATA_BYTES`` gunzipped (256 MiB each); every
length prefix is checked against the bytes left, an empty ``Node`` is refused, and nodes are
decoded one at a time into the ``N x N`` matrix (never held as a list).

Examples
--------
>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> write_trace(d / "t.0.et", [send_node(1, dst=1, size=100), all_to_all_node(2, size=60)])
>>> write_trace(d / "t.1.et", [all_to_all_node(1, size=30)])
>>> chakra_matrix(d).tolist()
[[30.0, 130.0], [15.0, 15.0]]
"""

from __future__ import annotations

import functools
import math
import re
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from fabricsim.errors import ConfigError
from fabricsim.units import MAX_MESSAGE_BYTES
from fabricsim.workloads.base import power_of_two
from fabricsim.workloads.matrix import check_matrix

NODE_TYPES = (
    "INVALID_NODE",
    "METADATA_NODE",
    "MEM_LOAD_NODE",
    "MEM_STORE_NODE",
    "COMP_NODE",
    "COMM_SEND_NODE",
    "COMM_RECV_NODE",
    "COMM_COLL_NODE",
)
COMM_TYPES = (
    "ALL_REDUCE",
    "REDUCE",
    "ALL_GATHER",
    "GATHER",
    "SCATTER",
    "BROADCAST",
    "ALL_TO_ALL",
    "REDUCE_SCATTER",
    "REDUCE_SCATTER_BLOCK",
    "BARRIER",
)
COMM_SEND, COMM_RECV, COMM_COLL = 5, 6, 7
ALL_TO_ALL = 6
_FILE = re.compile(r"^(?P<prefix>.*)\.(?P<rank>\d+)\.et(?:\.gz)?$")

# AttributeProto's oneof ``value``: the members we read (number, name, type, list message)
_ATTR_VALUES = (
    (3, "double_val", "TYPE_DOUBLE", None),
    (5, "float_val", "TYPE_FLOAT", None),
    (7, "int32_val", "TYPE_INT32", None),
    (8, "int32_list", None, "Int32List"),
    (9, "int64_val", "TYPE_INT64", None),
    (10, "int64_list", None, "Int64List"),
    (11, "uint32_val", "TYPE_UINT32", None),
    (13, "uint64_val", "TYPE_UINT64", None),
    (15, "sint32_val", "TYPE_SINT32", None),
    (17, "sint64_val", "TYPE_SINT64", None),
    (19, "fixed32_val", "TYPE_FIXED32", None),
    (21, "fixed64_val", "TYPE_FIXED64", None),
    (23, "sfixed32_val", "TYPE_SFIXED32", None),
    (25, "sfixed64_val", "TYPE_SFIXED64", None),
    (27, "bool_val", "TYPE_BOOL", None),
    (29, "string_val", "TYPE_STRING", None),
)


def _field(
    msg: Any,
    name: str,
    number: int,
    ftype: str | None,
    label: str = "LABEL_OPTIONAL",
    type_name: str | None = None,
    oneof: int | None = None,
) -> None:
    from google.protobuf.descriptor_pb2 import FieldDescriptorProto as F  # perf: lazy

    f = msg.field.add(name=name, number=number, label=getattr(F, label))
    if type_name:
        f.type = F.TYPE_ENUM if type_name in ("NodeType",) else F.TYPE_MESSAGE
        f.type_name = f".ChakraProtoMsg.{type_name}"
    else:
        f.type = getattr(F, ftype or "TYPE_MESSAGE")
    if oneof is not None:
        f.oneof_index = oneof


def _schema() -> Any:
    """The trace format's descriptor (a ``FileDescriptorProto``)."""
    from google.protobuf import descriptor_pb2  # perf: lazy, only traces need protobuf

    fdp = descriptor_pb2.FileDescriptorProto(
        name="fabricsim/chakra_et_def.proto", package="ChakraProtoMsg", syntax="proto3"
    )
    enum = fdp.enum_type.add(name="NodeType")
    for number, name in enumerate(NODE_TYPES):
        enum.value.add(name=name, number=number)
    for name, ftype in (("Int32List", "TYPE_INT32"), ("Int64List", "TYPE_INT64")):
        _field(fdp.message_type.add(name=name), "values", 1, ftype, "LABEL_REPEATED")
    attr = fdp.message_type.add(name="AttributeProto")
    _field(attr, "name", 1, "TYPE_STRING")
    _field(attr, "doc_string", 2, "TYPE_STRING")
    attr.oneof_decl.add(name="value")
    for number, name, vtype, list_type in _ATTR_VALUES:
        _field(attr, name, number, vtype, type_name=list_type, oneof=0)
    meta = fdp.message_type.add(name="GlobalMetadata")
    _field(meta, "version", 1, "TYPE_STRING")
    _field(meta, "attr", 2, None, "LABEL_REPEATED", "AttributeProto")
    node = fdp.message_type.add(name="Node")
    _field(node, "id", 1, "TYPE_UINT64")
    _field(node, "name", 2, "TYPE_STRING")
    _field(node, "type", 3, None, type_name="NodeType")
    _field(node, "ctrl_deps", 4, "TYPE_UINT64", "LABEL_REPEATED")
    _field(node, "data_deps", 5, "TYPE_UINT64", "LABEL_REPEATED")
    _field(node, "start_time_micros", 6, "TYPE_UINT64")
    _field(node, "duration_micros", 7, "TYPE_UINT64")
    _field(node, "attr", 10, None, "LABEL_REPEATED", "AttributeProto")
    return fdp


@functools.cache
def _classes() -> tuple[type, type, type]:
    """The message classes ``Node``, ``AttributeProto``, ``GlobalMetadata`` (built once)."""
    from google.protobuf import descriptor_pool, message_factory  # perf: lazy

    pool = descriptor_pool.DescriptorPool()  # private: no clash with an installed chakra
    pool.Add(_schema())
    get = getattr(message_factory, "GetMessageClass", None)
    if get is None:  # protobuf < 4.21
        factory = message_factory.MessageFactory(pool)
        get = factory.GetPrototype
    names = ("Node", "AttributeProto", "GlobalMetadata")
    node, attr, meta = (get(pool.FindMessageTypeByName(f"ChakraProtoMsg.{n}")) for n in names)
    return node, attr, meta


_CLASS_NAMES = ("Node", "AttributeProto", "GlobalMetadata")


def __getattr__(name: str) -> Any:
    """``Node``, ``AttributeProto`` and ``GlobalMetadata``, built on first use (protobuf is
    imported only when a trace is read or written)."""
    if name in _CLASS_NAMES:
        return _classes()[_CLASS_NAMES.index(name)]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# -- writing (tests, examples, exporting) ----------------------------------------------------
def _attr(name: str, value: int | str) -> Any:
    if isinstance(value, str):
        return _classes()[1](name=name, string_val=value)
    if name in ("comm_src", "comm_dst", "comm_tag"):
        return _classes()[1](name=name, int32_val=int(value))
    return _classes()[1](name=name, int64_val=int(value))


def send_node(node_id: int, dst: int, size: int, name: str = "send") -> Any:
    """A ``COMM_SEND_NODE`` of ``size`` bytes to rank ``dst``."""
    attrs = [_attr("comm_dst", dst), _attr("comm_size", size), _attr("comm_tag", 0)]
    return _classes()[0](id=node_id, name=name, type=COMM_SEND, attr=attrs)


def recv_node(node_id: int, src: int, size: int, name: str = "recv") -> Any:
    """A ``COMM_RECV_NODE`` of ``size`` bytes from rank ``src``."""
    attrs = [_attr("comm_src", src), _attr("comm_size", size), _attr("comm_tag", 0)]
    return _classes()[0](id=node_id, name=name, type=COMM_RECV, attr=attrs)


def all_to_all_node(
    node_id: int, size: int, pg_name: str | None = None, name: str = "all_to_all"
) -> Any:
    """A ``COMM_COLL_NODE`` all-to-all of ``size`` bytes in total on this rank."""
    attrs = [_attr("comm_type", ALL_TO_ALL), _attr("comm_size", size)]
    if pg_name is not None:
        attrs.append(_attr("pg_name", pg_name))
    return _classes()[0](id=node_id, name=name, type=COMM_COLL, attr=attrs)


def compute_node(node_id: int, duration_us: int = 10, name: str = "compute") -> Any:
    """A ``COMP_NODE`` (ignored by the demand matrix)."""
    return _classes()[0](id=node_id, name=name, type=4, duration_micros=duration_us)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        bits = value & 0x7F
        value >>= 7
        out.append(bits | (0x80 if value else 0))
        if not value:
            return bytes(out)


def write_trace(path: str | Path, nodes: list[Any], version: str = "0.0.4") -> None:
    """Write one rank's trace: ``GlobalMetadata`` then the nodes, each length-delimited."""
    chunks = []
    for msg in [_classes()[2](version=version), *nodes]:
        data = msg.SerializeToString()
        chunks += [_varint(len(data)), data]
    Path(path).write_bytes(b"".join(chunks))


# -- reading ---------------------------------------------------------------------------------
MAX_TRACE_FILE_BYTES = 256 * 1024**2  # one rank's file as stored (gzipped or not)
MAX_TRACE_DATA_BYTES = 256 * 1024**2  # one rank's file after gunzip
_LIMIT_TEXT = "256 MiB"
_INFLATE_STEP = 16 * 1024**2


def _read_bounded(p: Path) -> bytes:
    """The bytes of one rank's file, gunzipped; both sizes bounded before allocating."""
    if not p.is_file():
        raise ConfigError(f"workload.path: {p.name} is not a regular file")
    if p.stat().st_size > MAX_TRACE_FILE_BYTES:
        raise ConfigError(
            f"workload.path: {p.name} is {p.stat().st_size} bytes, more than {_LIMIT_TEXT} "
            f"({MAX_TRACE_FILE_BYTES} bytes), the largest trace file read"
        )
    data = p.read_bytes()
    if data[:2] != b"\x1f\x8b":
        return data
    return _gunzip_bounded(data, p.name)


def _gunzip_bounded(data: bytes, fname: str) -> bytes:
    """Gunzip ``data`` (one or several members) into at most ``MAX_TRACE_DATA_BYTES``,
    inflating 16 MiB at a time (a bomb costs the limit, never its full size)."""
    out = bytearray()
    rest = data
    while rest:
        inflate = zlib.decompressobj(wbits=31)
        pending = rest
        while not inflate.eof:
            room = min(_INFLATE_STEP, MAX_TRACE_DATA_BYTES + 1 - len(out))
            try:
                chunk = inflate.decompress(pending, room)
            except zlib.error:
                raise ConfigError(f"workload.path: {fname}: broken gzip data") from None
            out += chunk
            if len(out) > MAX_TRACE_DATA_BYTES:
                raise ConfigError(
                    f"workload.path: {fname} decompresses to more than {_LIMIT_TEXT} "
                    f"({MAX_TRACE_DATA_BYTES} bytes), the largest trace read"
                )
            pending = inflate.unconsumed_tail
            if not chunk and not pending:
                break  # no input left and nothing more came out
        if not inflate.eof:
            raise ConfigError(f"workload.path: {fname}: broken gzip data (cut short)")
        rest = inflate.unused_data
        if rest and rest.strip(b"\x00") == b"":  # zero padding after the last member
            break
    return bytes(out)


def _messages(data: bytes, fname: str) -> Iterator[tuple[int, memoryview]]:
    """Yield ``(index, payload)`` of each length-delimited message; every length prefix is
    checked against the bytes left before anything is decoded."""
    view = memoryview(data)
    pos, index = 0, 0
    while pos < len(data):
        size, shift = 0, 0
        while True:
            if pos >= len(data):
                raise ConfigError(f"workload.path: {fname}: message {index} has a truncated length")
            byte = data[pos]
            pos += 1
            size |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
            if shift > 63:
                raise ConfigError(
                    f"workload.path: {fname}: message {index} has a bad length varint"
                )
        if pos + size > len(data):
            raise ConfigError(
                f"workload.path: {fname}: message {index} is truncated ({size} bytes announced, "
                f"{len(data) - pos} left) — not a Chakra trace, or a cut file"
            )
        if index and not size:
            raise ConfigError(
                f"workload.path: {fname}: message {index} is empty (0 bytes: a Node with no id "
                f"and no type) — not a Chakra trace"
            )
        yield index, view[pos : pos + size]
        pos += size
        index += 1


def _is_text(data: bytes) -> bool:
    """Whether a file's first 4 KiB read as UTF-8 text (a trace starts with a control byte:
    the metadata's length, then protobuf tags such as 0x0a)."""
    head = data[:4096]
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if len(data) <= len(head) or exc.start < len(head) - 3:  # not a character cut at 4 KiB
            return False
    return not any(b < 0x20 and b not in (9, 10, 13) for b in head)


def iter_trace(path: str | Path) -> Iterator[Any]:
    """One rank's ``GlobalMetadata``, then its ``Node`` s one at a time (a trace is never held
    as a list of messages); malformed input raises ConfigError naming the file."""
    p = Path(path)
    data = _read_bounded(p)
    if not data:
        raise ConfigError(f"workload.path: {p.name}: empty file")
    if _is_text(data):
        raise ConfigError(
            f"workload.path: {p.name} is text, not a Chakra execution trace (binary protobuf); "
            f"a CSV or Parquet message table is read by workload.kind: trace"
        )
    from google.protobuf.message import DecodeError  # perf: lazy

    node_cls, _, meta_cls = _classes()
    for index, payload in _messages(data, p.name):
        msg = meta_cls() if index == 0 else node_cls()
        try:
            msg.ParseFromString(payload)
        except DecodeError:
            what = "GlobalMetadata" if index == 0 else "Node"
            raise ConfigError(
                f"workload.path: {p.name}: message {index} is not a Chakra {what} (protobuf decode error)"
            ) from None
        yield msg


def read_trace(path: str | Path) -> tuple[Any, list[Any]]:
    """One rank's ``(GlobalMetadata, [Node, ...])``; malformed input raises ConfigError."""
    messages = iter_trace(path)
    meta = next(messages)
    return meta, list(messages)


def _listing(ranks: list[int], limit: int = 8) -> str:
    shown = ", ".join(str(r) for r in ranks[:limit])
    return shown + (", ..." if len(ranks) > limit else "")


def _missing_ranks(present: set[int]) -> list[int]:
    """The first few of ``0..max(present)`` without a file (at most ``len + 9`` looked at)."""
    top = min(max(present) + 1, len(present) + 9)
    return [r for r in range(top) if r not in present]


def trace_files(path: str | Path, gpus: int | None = None) -> dict[int, Path]:
    """Rank -> file of a trace set given as a directory or as one ``<prefix>.<rank>.et`` file.

    The ranks must be ``0..N-1``, each with one file; with ``gpus`` given, ``N`` must be it.
    Both are checked from the file names, before any file is read.
    """
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"workload.path: not found: {p}")
    if p.is_dir():
        found = [(m, f) for f in sorted(p.iterdir()) if (m := _FILE.match(f.name)) and f.is_file()]
        prefixes = sorted({m["prefix"] for m, _ in found})
        if len(prefixes) > 1:
            raise ConfigError(
                f"workload.path: {p} holds several traces ({', '.join(prefixes)}); point at one file"
            )
    else:
        m = _FILE.match(p.name)
        if m is None:
            raise ConfigError(
                f"workload.path: {p.name}: Chakra traces are one file per rank named <prefix>.<rank>.et"
            )
        found = [
            (m2, f)
            for f in sorted(p.parent.iterdir())
            if (m2 := _FILE.match(f.name)) and m2["prefix"] == m["prefix"] and f.is_file()
        ]
    if not found:
        raise ConfigError(f"workload.path: {p}: no <prefix>.<rank>.et files")
    files: dict[int, Path] = {}
    for m, f in found:
        rank = int(m["rank"])
        if rank in files:
            raise ConfigError(
                f"workload.path: {files[rank].name} and {f.name} are both rank {rank}; "
                f"keep one file per rank"
            )
        files[rank] = f
    _check_ranks(files, gpus)
    return files


def _check_ranks(files: dict[int, Path], gpus: int | None) -> None:
    n = len(files)
    where = f"workload.path: {next(iter(files.values())).name}"
    if gpus is not None:
        outside = sorted(r for r in files if r >= gpus)
        if outside:
            raise ConfigError(
                f"{where}: the trace has rank {outside[-1]} (file {files[outside[-1]].name}) but "
                f"the fabric/workload has {gpus} GPUs, ranks 0..{gpus - 1} (one NIC per GPU: "
                f"set workload.gpus or change the topology)"
            )
    missing = _missing_ranks(set(files))
    if missing:
        raise ConfigError(
            f"{where}: the trace has files for {n} rank{'s' if n > 1 else ''} but none for rank(s) "
            f"{_listing(missing)}; ranks must be 0..N-1, one file each"
        )
    if gpus is not None and n != gpus:
        raise ConfigError(
            f"{where}: the trace is {n} x {n} but the fabric/workload has {gpus} GPUs (files "
            f"for ranks 0..{n - 1}; one NIC per GPU: set workload.gpus or change the topology)"
        )


def _attrs(node: Any) -> dict[str, Any]:
    out = {}
    for a in node.attr:
        which = a.WhichOneof("value")
        if which is not None:
            out[a.name] = getattr(a, which)
    return out


def _int_attr(attrs: dict[str, Any], key: str, node: Any, fname: str) -> int:
    val = attrs.get(key)
    if isinstance(val, bool) or not isinstance(val, int | float):
        raise ConfigError(
            f"workload.path: {fname}: node {node.id} ({node.name or 'unnamed'}) lacks an integer {key}"
        )
    node_is = f"workload.path: {fname}: node {node.id} has {key}={val}"
    if isinstance(val, float) and not math.isfinite(val):
        problem = "not a number" if math.isnan(val) else "not finite"
        raise ConfigError(f"{node_is}, which is {problem}")
    if val < 0:
        raise ConfigError(f"workload.path: {fname}: node {node.id} has a negative {key} ({val})")
    if val != int(val):
        raise ConfigError(f"{node_is}, which is not a whole number")
    if key == "comm_size" and val > MAX_MESSAGE_BYTES:
        limit = power_of_two(MAX_MESSAGE_BYTES)
        raise ConfigError(f"{node_is}, more than {limit}, the largest message in bytes")
    return int(val)


def read_chakra(
    path: str | Path, groups: dict[str, list[int]] | None = None, gpus: int | None = None
) -> tuple[np.ndarray, dict[str, int]]:
    """The demand matrix (bytes, ranks x ranks) of a Chakra trace set, and node counts.

    The file names (ranks ``0..N-1``, ``N`` = ``gpus`` when given), the file sizes and the
    process groups are checked before anything is allocated; nodes are read one at a time.
    """
    files = trace_files(path, gpus)
    n = len(files)
    members = _check_groups(groups or {}, n)
    sent, received, d = np.zeros((n, n)), np.zeros((n, n)), np.zeros((n, n))
    counts = {"send": 0, "recv": 0, "all_to_all": 0, "ignored": 0}
    used: set[str] = set()
    for rank, f in sorted(files.items()):
        messages = iter_trace(f)
        next(messages)  # GlobalMetadata
        for node in messages:
            attrs = _attrs(node)
            kind = _node_kind(node, attrs)
            counts[kind] += 1
            if kind == "send":
                dst = _peer(attrs, "comm_dst", node, f.name, n)
                sent[rank, dst] += _int_attr(attrs, "comm_size", node, f.name)
            elif kind == "recv":
                src = _peer(attrs, "comm_src", node, f.name, n)
                received[src, rank] += _int_attr(attrs, "comm_size", node, f.name)
            elif kind == "all_to_all":
                pg = str(attrs.get("pg_name", ""))
                used.add(pg)
                group = _group(pg, members, n, rank, f.name)
                d[rank, group] += _int_attr(attrs, "comm_size", node, f.name) / len(group)
    _check_groups_used(members, used)
    d += sent if counts["send"] else received
    return d, counts


def _node_kind(node: Any, attrs: dict[str, Any]) -> str:
    if node.type == COMM_SEND:
        return "send"
    if node.type == COMM_RECV:
        return "recv"
    if node.type == COMM_COLL and attrs.get("comm_type") == ALL_TO_ALL:
        return "all_to_all"
    return "ignored"


def _peer(attrs: dict[str, Any], key: str, node: Any, fname: str, n: int) -> int:
    peer = _int_attr(attrs, key, node, fname)
    if peer >= n:
        raise ConfigError(
            f"workload.path: {fname}: node {node.id} has {key}={peer} but the trace has ranks 0..{n - 1}"
        )
    return peer


def _check_groups(groups: dict[str, list[int]], n: int) -> dict[str, np.ndarray]:
    """``workload.trace_groups`` as sorted rank arrays: each non-empty, ranks in ``0..n-1``
    (the trace's ranks), none twice."""
    out = {}
    for pg, ranks in groups.items():
        where = f"workload.trace_groups.{pg}"
        if not ranks:
            raise ConfigError(f"{where}: empty; list the group's ranks, in 0..{n - 1}")
        outside = [r for r in ranks if not 0 <= r < n]
        if outside:
            raise ConfigError(
                f"{where}: rank {outside[0]} is not in the trace; ranks must be in 0..{n - 1}"
            )
        twice = sorted({r for r in ranks if ranks.count(r) > 1})
        if twice:
            raise ConfigError(f"{where}: rank {twice[0]} is listed twice")
        out[pg] = np.array(sorted(ranks), dtype=np.int64)
    return out


def _check_groups_used(members: dict[str, np.ndarray], used: set[str]) -> None:
    unused = sorted(set(members) - used)
    if unused:
        named = ", ".join(repr(g) for g in sorted(used)) or "none"
        raise ConfigError(
            f"workload.trace_groups.{unused[0]}: no all-to-all node of the trace is in process "
            f"group '{unused[0]}' (groups in the trace: {named})"
        )


def _group(pg: str, members: dict[str, np.ndarray], n: int, rank: int, fname: str) -> np.ndarray:
    if pg in members:
        if rank not in members[pg]:
            raise ConfigError(
                f"workload.trace_groups.{pg}: rank {rank} runs an all-to-all in group '{pg}' "
                f"({fname}) but is not listed in it"
            )
        return members[pg]
    return np.arange(n)


def chakra_matrix(
    path: str | Path, groups: dict[str, list[int]] | None = None, gpus: int | None = None
) -> np.ndarray:
    """The validated demand matrix of a Chakra trace set (see :func:`read_chakra`)."""
    d, counts = read_chakra(path, groups, gpus)
    if not (counts["send"] or counts["recv"] or counts["all_to_all"]):
        raise ConfigError(
            f"workload.path: {Path(path).name}: no send/recv or all-to-all nodes in the trace"
        )
    return check_matrix(d, f"workload.path: {Path(path).name}")
