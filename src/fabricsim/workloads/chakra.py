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
import gzip
import math
import re
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
def _messages(data: bytes, fname: str) -> Iterator[tuple[int, bytes]]:
    """Yield ``(index, payload)`` of each length-delimited message."""
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
        yield index, data[pos : pos + size]
        pos += size
        index += 1


def read_trace(path: str | Path) -> tuple[Any, list[Any]]:
    """One rank's ``(GlobalMetadata, [Node, ...])``; malformed input raises ConfigError."""
    p = Path(path)
    data = p.read_bytes()
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError):
            raise ConfigError(f"workload.path: {p.name}: broken gzip data") from None
    from google.protobuf.message import DecodeError  # perf: lazy

    node_cls, _, meta_cls = _classes()
    meta, nodes = meta_cls(), []
    for index, payload in _messages(data, p.name):
        msg = meta if index == 0 else node_cls()
        try:
            msg.ParseFromString(payload)
        except DecodeError:
            what = "GlobalMetadata" if index == 0 else "Node"
            raise ConfigError(
                f"workload.path: {p.name}: message {index} is not a Chakra {what} (protobuf decode error)"
            ) from None
        if index:
            nodes.append(msg)
    if not nodes and not data:
        raise ConfigError(f"workload.path: {p.name}: empty file")
    return meta, nodes


def trace_files(path: str | Path) -> dict[int, Path]:
    """Rank -> file of a trace set given as a directory or as one ``<prefix>.<rank>.et`` file."""
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
    return {int(m["rank"]): f for m, f in found}


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
    path: str | Path, groups: dict[str, list[int]] | None = None
) -> tuple[np.ndarray, dict[str, int]]:
    """The demand matrix (bytes, ranks x ranks) of a Chakra trace set, and node counts."""
    files = trace_files(path)
    n = max(files) + 1
    sends: list[tuple[int, int, int]] = []
    recvs: list[tuple[int, int, int]] = []
    d = np.zeros((n, n))
    counts = {"send": 0, "recv": 0, "all_to_all": 0, "ignored": 0}
    for rank, f in sorted(files.items()):
        for node in read_trace(f)[1]:
            attrs = _attrs(node)
            kind = _node_kind(node, attrs)
            counts[kind] += 1
            if kind == "send":
                sends.append(
                    (
                        rank,
                        _peer(attrs, "comm_dst", node, f.name, n),
                        _int_attr(attrs, "comm_size", node, f.name),
                    )
                )
            elif kind == "recv":
                recvs.append(
                    (
                        _peer(attrs, "comm_src", node, f.name, n),
                        rank,
                        _int_attr(attrs, "comm_size", node, f.name),
                    )
                )
            elif kind == "all_to_all":
                members = _group(attrs, groups, n, rank, f.name)
                d[rank, members] += _int_attr(attrs, "comm_size", node, f.name) / len(members)
    for s, t, size in sends or recvs:
        d[s, t] += size
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


def _group(
    attrs: dict[str, Any], groups: dict[str, list[int]] | None, n: int, rank: int, fname: str
) -> np.ndarray:
    pg = str(attrs.get("pg_name", ""))
    if groups and pg in groups:
        members = np.array(sorted(set(groups[pg])), dtype=np.int64)
        if len(members) == 0 or members.min() < 0 or members.max() >= n:
            raise ConfigError(f"workload.trace_groups.{pg}: ranks must be in 0..{n - 1}")
        if rank not in members:
            raise ConfigError(
                f"workload.trace_groups.{pg}: rank {rank} runs an all-to-all in group '{pg}' "
                f"({fname}) but is not listed in it"
            )
        return members
    return np.arange(n)


def chakra_matrix(path: str | Path, groups: dict[str, list[int]] | None = None) -> np.ndarray:
    """The validated demand matrix of a Chakra trace set (see :func:`read_chakra`)."""
    d, counts = read_chakra(path, groups)
    if not (counts["send"] or counts["recv"] or counts["all_to_all"]):
        raise ConfigError(
            f"workload.path: {Path(path).name}: no send/recv or all-to-all nodes in the trace"
        )
    return check_matrix(d, f"workload.path: {Path(path).name}")
