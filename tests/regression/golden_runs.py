"""The golden runs: small scenarios on both engines whose outputs must not change by accident.

``python tests/regression/golden_runs.py`` rewrites ``tests/regression/golden/`` (do it only for
an intended change of results, and say so in the commit); ``test_golden.py`` compares.  Each
run is stored as text: ``summary.json`` as written, and every table as CSV with full-precision
floats (``%.17g``), so a diff shows what moved and no Parquet encoder version matters.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

GOLDEN = Path(__file__).parent / "golden"

RUNS: dict[str, tuple[str, dict, str]] = {
    "ecmp-collision-flow": ("ecmp-collision", {}, "flow"),
    "ecmp-collision-packet": ("ecmp-collision", {"workload.size_bytes": 200_000}, "packet"),
    "permutation-k4-flow": ("permutation", {"topology.k": 4, "records.timelines": True}, "flow"),
    "permutation-k4-reps-packet": (
        "permutation",
        {
            "topology.k": 4,
            "workload.size_bytes": 300_000,
            "nic.packet_spraying_type": "reps",
            "nic.cc": "nscc",
            "records.port_stats": True,
            "records.uet_transport_stats": True,
        },
        "packet",
    ),
    "spray-example-packet": ("spray-example", {}, "packet"),
    "incast-k4-packet": (
        "incast",
        {"topology.k": 4, "workload.senders": 6, "workload.size_bytes": 200_000},
        "packet",
    ),
    "incast-k4-roce-packet": (
        "incast",
        {
            "topology.k": 4,
            "topology.hosts_per_edge": 5,
            "workload.senders": 32,
            "workload.size_bytes": 300_000,
            "nic.transport": "roce",
            "records.port_stats": True,
            "records.timelines": True,
            "records.uet_transport_stats": True,
        },
        "packet",
    ),
    "permutation-k4-roce-spray-packet": (
        "permutation",
        {
            "topology.k": 4,
            "workload.size_bytes": 200_000,
            "nic.transport": "roce",
            "nic.packet_spraying_type": "oblivious",
            "switch.pfc": False,
        },
        "packet",
    ),
    "ark-40-ark-flow": ("ark", {"workload.requests": 40, "lb.policy": "ark"}, "flow"),
    "moe-small-packet": (
        "moe",
        {"workload.tokens_per_gpu": 8, "records.timelines": False},
        "packet",
    ),
    "moe-small-open-loop-flow": ("moe", {"workload.tokens_per_gpu": 8}, "flow"),
}


def canonical(name: str) -> dict[str, str]:
    """The run's outputs as text files: name -> content."""
    import fabricsim

    scenario, overrides, engine = RUNS[name]
    sc = fabricsim.load_scenario(scenario).with_overrides(overrides)
    res = fabricsim.run(sc, engine=engine)
    from fabricsim.metrics.results import dumps_json

    out = {"summary.json": dumps_json(res.summary)}
    tables = {"flows": res.flows, **res.tables}
    for table, df in sorted(tables.items()):
        out[f"{table}.csv"] = df.to_csv(index=False, float_format="%.17g", lineterminator="\n")
    for rec, data in sorted(res.json_records.items()):
        out[f"{rec}.json"] = dumps_json(data)
    return out


def digest(files: dict[str, str]) -> dict[str, str]:
    return {k: hashlib.sha256(v.encode()).hexdigest()[:20] for k, v in sorted(files.items())}


def write_all(names: list[str] | None = None) -> None:
    """Rewrite the stored outputs of ``names`` (default: every run)."""
    for name in names or RUNS:
        files = canonical(name)
        folder = GOLDEN / name
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.iterdir():
            old.unlink()
        small = {k: v for k, v in files.items() if len(v) <= 200_000}
        for fname, text in small.items():
            (folder / fname).write_text(text)
        (folder / "digests.json").write_text(json.dumps(digest(files), indent=1) + "\n")
        print(f"{name}: {', '.join(sorted(files))}")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))
    write_all(sys.argv[1:])
