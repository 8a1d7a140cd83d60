"""Collective algorithms as DAGs of flows: ring, double binary tree, pairwise exchange.

Every builder appends flows to a :class:`Dag` for one channel of one group of ranks; a flow
depends on the flows whose data it needs (and, for pipelined pieces, on the previous piece
on the same link, which the NIC sends first).  Sizes follow nccl-tests (see
:data:`fabricsim.config.workloads.CollectiveWorkload`); bytes are split exactly (parts differ
by at most one byte; a part is at least one byte).

Examples
--------
>>> import numpy as np
>>> d = Dag()
>>> ring(d, "all_reduce", np.array([0, 1, 2]), 300)
>>> len(d), d.deps[3]
(12, [0, 2])
>>> split_bytes(10, 3)
[4, 3, 3]
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

MAX_PIECES = 64
"""Most pipeline pieces per channel (tree, broadcast and reduce)."""


def split_bytes(total: int, parts: int) -> list[int]:
    """``total`` in ``parts`` whole parts differing by at most one (each at least 1 byte)."""
    base, extra = divmod(int(total), parts)
    return [max(1, base + (i < extra)) for i in range(parts)]


def pieces(total: int, chunk_bytes: int) -> int:
    """Pipeline pieces of a channel's ``total`` bytes: ``ceil(total / chunk_bytes)``, 1..64."""
    return int(min(MAX_PIECES, max(1, -(-int(total) // int(chunk_bytes)))))


@dataclass(eq=False)
class Dag:
    """Flows being built: ranks' host ids, sizes, dependencies (earlier ids), channel."""

    src: list[int] = field(default_factory=list)
    dst: list[int] = field(default_factory=list)
    size: list[int] = field(default_factory=list)
    deps: list[list[int]] = field(default_factory=list)
    channel: list[int] = field(default_factory=list)
    ch: int = 0  # the channel of the flows added next

    def __len__(self) -> int:
        return len(self.src)

    def add(self, src: int, dst: int, size: int, deps: list[int]) -> int:
        self.src.append(int(src))
        self.dst.append(int(dst))
        self.size.append(int(size))
        self.deps.append(deps)
        self.channel.append(self.ch)
        return len(self.src) - 1


def ring(dag: Dag, op: str, order: np.ndarray, size: int) -> None:
    """Ring all_reduce (``2(n-1)`` steps), all_gather / reduce_scatter (``n-1``) or
    all_to_all's pairwise exchange (``n-1`` steps, step ``k``: rank ``i`` to ``i+k``), or
    send_recv (one step: ``i`` to ``i+1``), over ``order``; ``size`` as nccl-tests'.

    Step ``s`` of rank ``i`` waits for its own step ``s-1`` and for what it received in
    step ``s-1``.
    """
    n, order = len(order), order.tolist()  # perf: Python ints in the loops
    chunk = split_bytes(size, n) if op != "send_recv" else [int(size)] * n
    steps = {"all_reduce": 2 * (n - 1), "send_recv": 1}.get(op, n - 1)
    prev: list[int] = []
    for s in range(steps):
        base = len(dag)
        for i in range(n):
            if op == "all_to_all":
                peer, nbytes = (i + s + 1) % n, chunk[(i + s + 1) % n]
                recv = (i - s) % n  # who sent to me in step s-1
            else:
                peer, nbytes, recv = (i + 1) % n, chunk[(i - s) % n], (i - 1) % n
            deps = [prev[i], prev[recv]] if prev else []
            dag.add(order[i], order[peer], nbytes, sorted(set(deps)))
        prev = list(range(base, base + n))


def direct(dag: Dag, order: np.ndarray, size: int) -> None:
    """all_to_all as one group of sends (NCCL's grouped send/recv): every rank sends its
    chunk to every other rank at once, rank by rank, peers in ring order."""
    n, order = len(order), order.tolist()
    chunk = split_bytes(size, n)
    for i in range(n):
        for k in range(1, n):
            dag.add(order[i], order[(i + k) % n], chunk[(i + k) % n], [])


def chain(dag: Dag, order: np.ndarray, size: int, chunk_bytes: int) -> None:
    """Ring broadcast (from ``order[0]`` along the ring) or reduce (along the ring into
    ``order[-1]``: the caller orders the ring), pipelined in pieces: piece ``p`` on hop ``h`` waits for piece ``p`` on
    hop ``h-1`` and piece ``p-1`` on hop ``h``."""
    n, order = len(order), order.tolist()
    part = split_bytes(size, pieces(size, chunk_bytes))
    prev: list[int] = []  # the previous piece's flows, per hop
    for nbytes in part:
        row: list[int] = []
        for h in range(n - 1):
            deps = ([row[-1]] if row else []) + ([prev[h]] if prev else [])
            row.append(dag.add(order[h], order[h + 1], nbytes, deps))
        prev = row


def tree_parent(v: int) -> int:
    """Heap position ``v``'s parent: the top (0) has one child (1), under which positions
    ``1..n-1`` form a binary heap (as NCCL's trees, whose root has one child)."""
    return 0 if v == 1 else (v - 2) // 2 + 1


def tree_depth(n: int) -> int:
    """Edges from the top to the deepest of ``n`` positions: ``1 + floor(log2(n - 1))``."""
    return 1 + (n - 1).bit_length() - 1 if n > 1 else 0


def tree_positions(order: np.ndarray, rooted: bool) -> list[np.ndarray]:
    """The two trees' rank at each heap position (:func:`tree_parent`).

    Unrooted (all_reduce): tree 1 is tree 0 mirrored, so most ranks are inner nodes in one tree
    and leaves in the other (NCCL's double binary tree).  Rooted: both trees have ``order[0]``
    on top and the other ranks in opposite orders.
    """
    if not rooted:
        return [order, order[::-1]]
    rest = order[1:]
    return [order, np.concatenate([order[:1], rest[::-1]])]


def tree(dag: Dag, op: str, order: np.ndarray, size: int, chunk_bytes: int) -> None:
    """Double binary tree: each tree carries half of ``size``, pipelined in pieces.

    all_reduce: pieces go up to the top (a node sends piece ``p`` once its children's
    piece ``p`` arrived), then down; reduce: up only (into ``order[0]``); broadcast: down
    only (from ``order[0]``).  A link sends its pieces in order.
    """
    n = len(order)
    kids: list[list[int]] = [[] for _ in range(n)]
    for v in range(1, n):
        kids[tree_parent(v)].append(v)
    halves = split_bytes(size, 2)
    for half, top in zip(halves, tree_positions(order, rooted=op != "all_reduce"), strict=True):
        pos = top.tolist()
        part = split_bytes(half, pieces(half, chunk_bytes))
        up_prev: list[int] = [-1] * n
        down_prev: list[int] = [-1] * n
        for nbytes in part:
            up = [-1] * n
            if op in ("all_reduce", "reduce"):
                for v in range(n - 1, 0, -1):  # children before parents: deps point back
                    deps = [up[c] for c in kids[v]] + ([up_prev[v]] if up_prev[v] >= 0 else [])
                    up[v] = dag.add(pos[v], pos[tree_parent(v)], nbytes, deps)
            if op in ("all_reduce", "broadcast"):
                down = [-1] * n
                for v in range(1, n):
                    parent = tree_parent(v)
                    deps = [up[c] for c in kids[0]] if parent == 0 else [down[parent]]
                    deps = [d for d in deps if d >= 0]
                    if down_prev[v] >= 0:
                        deps.append(down_prev[v])
                    down[v] = dag.add(pos[parent], pos[v], nbytes, deps)
                down_prev = down
            up_prev = up


def levels(deps: list[list[int]]) -> np.ndarray:
    """Each flow's step: 0 without dependencies, else one more than its latest dependency
    (dependencies point to earlier flows)."""
    out = [0] * len(deps)
    for i, dep in enumerate(deps):
        if dep:
            out[i] = 1 + max([out[d] for d in dep])
    return np.array(out, dtype=np.int64)


def entries(src: np.ndarray, deps: list[list[int]]) -> np.ndarray:
    """Flows that wait for no earlier flow of their own sender: where a rank's part of the
    collective begins (what must wait for the rank's earlier work)."""
    s = src.tolist()  # perf: Python ints, not numpy scalars, in the loop
    return np.array(
        [i for i, dep in enumerate(deps) if all(s[d] != s[i] for d in dep)], dtype=np.int64
    )


def sinks(n: int, deps: list[list[int]]) -> np.ndarray:
    """Flows no other flow waits for: when they are done, every flow is."""
    waited = np.zeros(n, dtype=bool)
    waited[[d for dep in deps for d in dep]] = True
    return np.flatnonzero(~waited)
