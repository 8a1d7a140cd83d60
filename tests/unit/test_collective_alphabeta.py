"""Every collective operation/algorithm pair against its alpha-beta time on an ideal fabric.

The fabric: 8 hosts on one switch (non-blocking, 100 Gbps).  ``alpha`` is a one-packet flow's
time alone less its transmission; a flow of ``B`` bytes transmits ``wire(B) * 8 / rate``
(one header per packet).  The formulas are those of docs/collectives.md.
"""

import pytest

import fabricsim
from fabricsim.engine_api import wire_bytes
from fabricsim.workloads.collective_algos import pieces, tree_depth

N, RATE, S = 8, 100e9, 8 * 2**20
MSS, HDR = 4096, 88
IDEAL = {
    "topology": {"kind": "leaf_spine", "leaves": 1, "spines": 1, "hosts_per_leaf": N},
    "nic": {"packet_spraying_type": "none"},
}
IDEAL["topology"]["link_gbps"] = RATE / 1e9
PAIRS = [
    ("all_reduce", "ring"),
    ("all_reduce", "tree"),
    ("all_gather", "ring"),
    ("reduce_scatter", "ring"),
    ("broadcast", "ring"),
    ("broadcast", "tree"),
    ("reduce", "ring"),
    ("reduce", "tree"),
    ("all_to_all", "pairwise"),
    ("all_to_all", "direct"),
    ("send_recv", "ring"),
]


def _tx(nbytes: float, flows: int = 1) -> float:
    """``flows`` flows of ``nbytes`` each through one NIC, s."""
    return flows * wire_bytes(int(nbytes), MSS, HDR) * 8 / RATE


def scenario(engine, **wl):
    sc = {**IDEAL, "workload": {"kind": "collective", **wl}}
    return fabricsim.load_scenario(sc).with_overrides({"engine.kind": engine})


_ALPHA: dict[str, float] = {}


def alpha(engine: str) -> float:
    if engine not in _ALPHA:
        sc = scenario(engine, op="send_recv", size_bytes=MSS, hosts=[0, 1])
        _ALPHA[engine] = fabricsim.run(sc).summary["collective_time_s"] - _tx(MSS)
    return _ALPHA[engine]


def formula(
    op: str, algo: str, n: int, size: int, c: int, a: float, chunk: int = 2**20
) -> tuple[float, float]:
    """(lower, upper) alpha-beta time, s: equal except the tree all-reduce's bounds."""
    if algo == "ring" and op == "all_reduce":
        t = 2 * (n - 1) * (a + _tx(size / (n * c), c))
    elif op == "send_recv":
        t = a + _tx(size / c, c)
    elif algo == "direct":
        t = a + _tx(size / (n * c), (n - 1) * c)
    elif algo in ("ring", "pairwise") and op in ("all_gather", "reduce_scatter", "all_to_all"):
        t = (n - 1) * (a + _tx(size / (n * c), c))
    elif algo == "ring":  # broadcast, reduce: a pipelined chain
        p = pieces(size // c, chunk)
        t = (n - 2 + p) * (a + _tx(size / (c * p), c))
    else:  # the double binary tree: each tree half the data in p pieces
        p, d = pieces(size // (2 * c), chunk), tree_depth(n)
        if op != "all_reduce":
            t = (d - 1 + p) * (a + _tx(size / (2 * c * p), 2 * c))
        else:
            rounds = 2 * d - 1 + p
            lower = rounds * a + max(_tx(size / c, 2 * c), rounds * _tx(size / (2 * c * p)))
            return lower, rounds * (a + _tx(size / (2 * c * p), 4 * c))
    return t, t


@pytest.mark.parametrize("channels", [1, 2])
@pytest.mark.parametrize("op,algo", PAIRS, ids=[f"{o}-{a}" for o, a in PAIRS])
def test_flow_engine_matches_the_alpha_beta_time(op, algo, channels):
    sc = scenario("flow", op=op, algorithm=algo, channels=channels, size_bytes=S)
    t = fabricsim.run(sc).summary["collective_time_s"]
    lo, hi = formula(op, algo, N, S, channels, alpha("flow"))
    assert lo * (1 - 1e-9) <= t <= hi * (1 + 1e-9), (t, lo, hi)
    if lo == hi:
        assert t == pytest.approx(lo, rel=1e-9)


@pytest.mark.parametrize(
    "op,algo", [("all_reduce", "ring"), ("broadcast", "tree"), ("all_to_all", "pairwise")]
)
def test_packet_engine_matches_the_alpha_beta_time(op, algo):
    size = 2**20  # 1 MiB: a few thousand packets
    sc = scenario("packet", op=op, algorithm=algo, size_bytes=size, chunk_bytes=2**18)
    t = fabricsim.run(sc).summary["collective_time_s"]
    lo, hi = formula(op, algo, N, size, 1, alpha("packet"), chunk=2**18)
    # the packet engine's steps also pay the window's ramp and the ACK clock: within 3 %
    assert lo * 0.99 <= t <= hi * 1.03, (t, lo, hi)


def test_tree_all_reduce_bounds_close_in_with_pieces():
    """The tree all-reduce's bounds converge as pieces grow: 64 MiB, 32 pieces of 1 MiB."""
    size = 64 * 2**20
    sc = scenario("flow", op="all_reduce", algorithm="tree", size_bytes=size)
    t = fabricsim.run(sc).summary["collective_time_s"]
    lo, hi = formula("all_reduce", "tree", N, size, 1, alpha("flow"))
    assert lo <= t <= hi and hi / lo < 1.25
