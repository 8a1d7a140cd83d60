"""The contract suite's shared pieces: the small fabric and the files some workloads read.

The contract cases themselves are derived, in the test modules, from the registries and from
the engines' declarations (:data:`fabricsim.experiments.engines.ENGINES`); this file holds only
what every case needs: a small non-blocking fabric and tiny input files written to a temporary
directory.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np

# 2 leaves x 4 spines x 4 hosts: non-blocking (the open-loop flow model refuses oversubscription),
# 8 hosts, 100 Gb/s links.  Packet runs over it take tens of milliseconds.
BASE: dict[str, Any] = {
    "name": "contract",
    "seed": 7,
    "topology": {
        "kind": "leaf_spine",
        "leaves": 2,
        "spines": 4,
        "hosts_per_leaf": 4,
        "link_gbps": 100,
    },
    "workload": {"kind": "permutation", "size_bytes": 100_000},
}
HOSTS = 8


def scenario(overrides: dict[str, Any], workload: dict[str, Any] | None = None) -> dict[str, Any]:
    """:data:`BASE` with dotted ``overrides`` (``section.key``) and optionally another workload."""
    d = copy.deepcopy(BASE)
    if workload is not None:
        d["workload"] = dict(workload)
    for key, value in overrides.items():
        *path, name = key.split(".")
        node = d
        for part in path:
            node = node.setdefault(part, {})
        node[name] = value
    return d


def write_inputs(directory: Path) -> dict[str, Path]:
    """Tiny input files for the workloads that read one; returns them by role."""
    from fabricsim.workloads.chakra import compute_node, send_node, write_trace

    trace = directory / "trace.csv"
    trace.write_text(
        "src,dst,size_bytes,start_s\n"
        "host0,host5,100000,0\n"
        "host1,host6,150000,0.00001\n"
        "host4,host2,80000,0\n"
    )
    matrix = directory / "matrix.csv"
    m = np.full((HOSTS, HOSTS), 60_000, dtype=np.int64)
    np.fill_diagonal(m, 0)
    np.savetxt(matrix, m, delimiter=",", fmt="%d")
    chakra_dir = directory / "chakra"
    chakra_dir.mkdir()
    for r in range(HOSTS):
        nodes = [compute_node(1)]
        nodes += [send_node(10 + d, dst=d, size=50_000) for d in range(HOSTS) if d != r]
        write_trace(chakra_dir / f"moe.{r}.et", nodes)
    prompts = directory / "prompts.csv"
    prompts.write_text("prompt_tokens\n100\n250\n60\n")
    return {
        "trace": trace,
        "matrix": matrix,
        "chakra": chakra_dir / "moe.0.et",
        "prompts": prompts,
    }


# A small configuration of each workload kind ("@role" names an input file of write_inputs).
# A kind an engine declares without an entry here fails its contract with a message to add one.
SMALL_WORKLOADS: dict[str, dict[str, Any]] = {
    "trace": {"kind": "trace", "path": "@trace"},
    "permutation": {"kind": "permutation", "size_bytes": 100_000},
    "incast": {"kind": "incast", "senders": 4, "size_bytes": 100_000},
    "leaf_to_leaf": {"kind": "leaf_to_leaf", "size_bytes": 100_000},
    "kv_cache": {
        "kind": "kv_cache",
        "requests": 10,
        "prompt": "fixed",
        "prompt_tokens": 100,
        "kv_bytes_per_token": 1000,
    },
    "moe": {"kind": "moe", "tokens_per_gpu": 8, "gpus_per_server": 1},
    "collective": {"kind": "collective", "size_bytes": 100_000},
    "chakra": {"kind": "chakra", "path": "@chakra", "gpus_per_server": 1},
}
# The selector fields of a workload whose every value (the field's Literal) is a contract case.
VARIANT_FIELDS: dict[str, tuple[str, ...]] = {
    "moe": ("matrix", "scheduler"),
    "collective": ("op",),
    "kv_cache": ("prompt",),
}
# What one selector value needs besides itself (kept small).
VARIANT_NEEDS: dict[tuple[str, str, str], dict[str, Any]] = {
    ("moe", "matrix", "file"): {"path": "@matrix"},
    ("moe", "matrix", "chakra"): {"path": "@chakra"},
    ("kv_cache", "prompt", "trace"): {"prompt_path": "@prompts"},
    ("kv_cache", "prompt", "zipf"): {"prompt_min_tokens": 50, "prompt_max_tokens": 200},
}
# The keys a congestion controller needs to run at all (DCQCN reacts to RoCE's CNPs).
CC_NEEDS: dict[str, dict[str, Any]] = {"dcqcn": {"nic.transport": "roce"}}
# The knobs a path policy needs to do something beyond the default (more than one QP, each on its
# own path: PDC groups would give a peer's QPs one entropy value, and the run warns so).
POLICY_KNOBS: dict[str, dict[str, Any]] = {
    "qp_scaling": {"lb.qp_count": 2, "nic.pdc_groups_enabled": False}
}


def resolve(workload: dict[str, Any], files: dict[str, Path]) -> dict[str, Any]:
    """``workload`` with each ``"@role"`` value replaced by the path of that input file."""
    out = {}
    for key, value in workload.items():
        if isinstance(value, str) and value.startswith("@"):
            value = str(files[value[1:]])
        out[key] = value
    return out
