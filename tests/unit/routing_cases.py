"""Fabrics the routing tests walk: fat trees with parallel links and with failed links (both
modes), a leaf-spine incast.  ``(built-in scenario, overrides)`` pairs."""

ROUTING_FABRICS = [
    ("permutation", {"topology.k": 4}),
    ("permutation", {"topology.k": 4, "topology.parallel_links": 2}),
    (
        "permutation",
        {
            "topology.k": 4,
            "topology.failed_link_mode": "withdraw",
            "topology.failed_links": ["edge0_0->agg0_0", "agg1_0->core0", "core2->agg1_1"],
        },
    ),
    ("permutation", {"topology.k": 4, "topology.failed_links": ["agg1_0->core0"]}),
    ("incast", {}),
    ("ark", {}),
]
