"""Chakra trace sets written with the project's own writer (:func:`.chakra.write_trace`):
nodes with dependencies, an all-reduce node, and the two example sets.

* :func:`training_step_traces`: one data-parallel training step: forward layers, then backward
  layers in reverse, each backward layer's gradients all-reduced (a data dependency on that
  layer) while the next backward layer computes; the optimizer waits for every all-reduce.
* :func:`moe_layer_traces`: MoE layers: attention, a gate, the all-to-all dispatch, the
  experts, the all-to-all combine; each rank dispatches its own (seeded) number of bytes.

Examples
--------
>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> sorted(p.name for p in training_step_traces(d, ranks=2, gpus_per_server=1, layers=1))
['step.0.et', 'step.1.et']
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from fabricsim.workloads.chakra import (
    COMM_COLL,
    _attr,
    _classes,
    all_to_all_node,
    compute_node,
    write_trace,
)

ALL_REDUCE = 0


def with_deps(node: Any, data: Iterable[int] = (), ctrl: Iterable[int] = ()) -> Any:
    """``node`` with its ``data_deps`` and ``ctrl_deps`` (parents' node ids) added."""
    node.data_deps.extend(int(d) for d in data)
    node.ctrl_deps.extend(int(c) for c in ctrl)
    return node


def all_reduce_node(
    node_id: int, size: int, pg_name: str | None = None, name: str = "all_reduce"
) -> Any:
    """A ``COMM_COLL_NODE`` all-reduce of a ``size``-byte buffer on this rank."""
    attrs = [_attr("comm_type", ALL_REDUCE), _attr("comm_size", size)]
    if pg_name is not None:
        attrs.append(_attr("pg_name", pg_name))
    return _classes()[0](id=node_id, name=name, type=COMM_COLL, attr=attrs)


def rail_groups(ranks: int, gpus_per_server: int) -> dict[str, list[int]]:
    """The data-parallel groups of :func:`training_step_traces`: ``dp<i>`` holds the ranks of
    local index ``i`` of every server (``i, i + g, i + 2g, ...``)."""
    g = gpus_per_server
    return {f"dp{i}": list(range(i, ranks, g)) for i in range(g)}


def training_step_traces(
    directory: str | Path,
    ranks: int = 32,
    gpus_per_server: int = 8,
    layers: int = 4,
    forward_us: int = 250,
    backward_us: int = 500,
    bucket_bytes: int = 4 * 1024**2,
    optimizer_us: int = 200,
    prefix: str = "step",
) -> list[Path]:
    """Write one data-parallel training step per rank (``<prefix>.<rank>.et``); the paths.

    The model is split over the GPUs of a server (tensor parallel); each layer's gradients
    are all-reduced in the rank's data-parallel group, ``dp<rank % gpus_per_server>``
    (:func:`rail_groups`; with one GPU per server, the default group of every rank).
    """
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for rank in range(ranks):
        nodes: list[Any] = []
        last = 0  # 0: no parent yet (node ids start at 1)
        for i in range(layers):  # ids 1..layers
            node = compute_node(1 + i, forward_us, name=f"forward_{i}")
            nodes.append(with_deps(node, ctrl=[last] if last else []))
            last = 1 + i
        reduces = []
        for i in reversed(range(layers)):  # backward ids 101.., all-reduce ids 201..
            node = compute_node(101 + i, backward_us, name=f"backward_{i}")
            nodes.append(with_deps(node, data=[last]))
            last = 101 + i
            pg = f"dp{rank % gpus_per_server}" if gpus_per_server > 1 else None
            reduce = all_reduce_node(201 + i, bucket_bytes, pg, name=f"all_reduce_grad_{i}")
            nodes.append(with_deps(reduce, data=[last]))
            reduces.append(201 + i)
        optimizer = compute_node(301, optimizer_us, name="optimizer")
        nodes.append(with_deps(optimizer, data=reduces, ctrl=[last]))
        path = out / f"{prefix}.{rank}.et"
        write_trace(path, nodes)
        paths.append(path)
    return paths


def moe_layer_traces(
    directory: str | Path,
    ranks: int = 32,
    layers: int = 2,
    attention_us: int = 150,
    gate_us: int = 20,
    expert_us: int = 300,
    dispatch_bytes: int = 2 * 1024**2,
    seed: int = 36,
    prefix: str = "moe",
) -> list[Path]:
    """Write ``layers`` MoE layers per rank (``<prefix>.<rank>.et``); the paths.

    Rank ``r``'s dispatch (and combine) carries ``dispatch_bytes`` times a factor drawn once
    per rank and layer from 0.5..1.5 (seeded: the same files every time).
    """
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    factor = np.random.default_rng(seed).uniform(0.5, 1.5, size=(layers, ranks))
    paths = []
    for rank in range(ranks):
        nodes: list[Any] = []
        last = 0  # 0: no parent yet (node ids start at 1)
        for k in range(layers):
            base = 100 * (k + 1)
            size = int(dispatch_bytes * factor[k, rank])
            steps = [
                compute_node(base + 1, attention_us, name=f"attention_{k}"),
                compute_node(base + 2, gate_us, name=f"gate_{k}"),
                all_to_all_node(base + 3, size, name=f"dispatch_{k}"),
                compute_node(base + 4, expert_us, name=f"experts_{k}"),
                all_to_all_node(base + 5, size, name=f"combine_{k}"),
            ]
            for node in steps:
                nodes.append(with_deps(node, data=[last] if last else []))
                last = node.id
        path = out / f"{prefix}.{rank}.et"
        write_trace(path, nodes)
        paths.append(path)
    return paths
