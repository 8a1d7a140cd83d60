"""Cross-check the htsim-uec preset against an htsim_uec binary you built yourself.

Writes our own connection matrices (random permutation, 32 -> 1 incast, all-to-all, and the
permutation with degraded core links), runs each on htsim_uec with its defaults and here with
``--preset htsim-uec`` (the default for a ``.cm`` scenario), and prints per-seed and 5-seed mean
FCT (mean / p99 / max, µs) and retransmissions with their ratios (the tables of
``docs/validation.md``).  No htsim code is part of fabricsim; pass the binary's path.

Usage::

    python scripts/htsim_crosscheck.py --htsim PATH/htsim_uec [--kinds perm,incast,a2a,degraded]
        [--lbs oblivious,reps,ecmp] [--seeds 1,2,3,4,5] [--out DIR]
"""

from __future__ import annotations

import argparse
import re
import subprocess
from pathlib import Path

import numpy as np

import fabricsim

FAILED = 4  # htsim -failed N: N core->aggregation downlinks at 25 %
HTSIM_LB = {
    "oblivious": ["-load_balancing_algo", "oblivious"],
    "reps": ["-load_balancing_algo", "reps"],
    "ecmp": ["-load_balancing_algo", "oblivious", "-paths", "1"],  # one entropy: per-flow ECMP
}
OUR_LB = {
    "oblivious": {"nic.packet_spraying_type": "oblivious"},
    "reps": {"nic.packet_spraying_type": "reps"},
    "ecmp": {"lb.policy": "ecmp"},
}


def matrix(kind: str, seed: int) -> tuple[int, list[tuple[int, int, int]]]:
    """(nodes, [(src, dst, bytes)]) of one of our matrices; all connections start at 0."""
    rng = np.random.default_rng(
        {"perm": 1000, "degraded": 1000, "incast": 2000}.get(kind, 3000) + seed
    )
    if kind in ("perm", "degraded"):  # a permutation without fixed points, 2 MB each
        while np.any((p := rng.permutation(128)) == np.arange(128)):
            pass
        return 128, [(i, int(p[i]), 2_000_000) for i in range(128)]
    if kind == "incast":  # 32 random senders -> 1 random receiver, 500 kB each
        hosts = rng.choice(128, 33, replace=False)
        return 128, [(int(s), int(hosts[0]), 500_000) for s in hosts[1:]]
    pairs = [(s, d) for s in range(16) for d in range(16) if s != d]  # all-to-all, k = 4
    return 16, [(*pairs[i], 250_000) for i in rng.permutation(len(pairs))]


def degraded_links(n: int, k: int) -> dict[str, float]:
    """htsim's first ``n`` failed links (aggregation switch a's link l from core) by our names."""
    half, out = k // 2, {}
    for x in range(n):
        agg, link = divmod(x, half)
        pod, pos = divmod(agg, half)
        out[f"core{pos * half + link}->agg{pod}_{pos}"] = 0.25
    return out


def run_htsim(binary: str, cm: Path, lb: str, seed: int, failed: int) -> tuple[list[float], int]:
    args = [binary, "-tm", str(cm), "-o", str(cm.with_suffix(".dat")), "-end", "100000"]
    args += ["-seed", str(seed), *HTSIM_LB[lb]] + (["-failed", str(failed)] if failed else [])
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    fct = [float(line.split()[8]) for line in out.splitlines() if " finished at " in line]
    rtx = re.search(r"Rtx: (\d+)", out)
    return fct, int(rtx.group(1)) if rtx else -1


def run_ours(cm: Path, lb: str, seed: int, failed: int, k: int) -> tuple[list[float], int]:
    sets = {**OUR_LB[lb], "seed": seed}
    if failed:
        sets["topology.degraded_links"] = degraded_links(failed, k)
    res = fabricsim.run(fabricsim.load_scenario(str(cm)).with_overrides(sets))
    # htsim's "finished at" is when the sender sees the last ACK: compare with acked_s
    return list(res.flows["acked_s"] * 1e6), int(res.summary["packets_retransmitted"])


def stats(fct: list[float]) -> np.ndarray:
    a = np.asarray(fct, dtype=float)
    return np.array([a.mean(), np.quantile(a, 0.99), a.max()])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--htsim", required=True, help="path of an htsim_uec binary")
    ap.add_argument("--kinds", default="perm,incast,a2a,degraded")
    ap.add_argument("--lbs", default="oblivious,reps,ecmp")
    ap.add_argument("--seeds", default="1,2,3,4,5")
    ap.add_argument("--out", default="htsim-crosscheck", help="directory for the .cm files")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    seeds = [int(s) for s in a.seeds.split(",")]
    print(
        "| matrix | LB | seeds | htsim mean / p99 / max | fabricsim mean / p99 / max | ratio | rtx htsim / here |"
    )
    print("|---|---|---|---|---|---|---|")
    for kind in a.kinds.split(","):
        for lb in a.lbs.split(","):
            if kind == "degraded" and lb == "ecmp":
                continue
            h_all, o_all, hr, orr = [], [], [], []
            for seed in seeds:
                nodes, conns = matrix(kind, seed)
                cm = out / f"{kind}_s{seed}.cm"
                lines = [
                    f"{s}->{d} id {i} start 0 size {b}" for i, (s, d, b) in enumerate(conns, 1)
                ]
                cm.write_text(
                    f"Nodes {nodes}\nConnections {len(conns)}\n" + "\n".join(lines) + "\n"
                )
                failed = FAILED if kind == "degraded" else 0
                h, r1 = run_htsim(a.htsim, cm, lb, seed, failed)
                o, r2 = run_ours(cm, lb, seed, failed, {16: 4, 128: 8}[nodes])
                h_all.append(stats(h)), o_all.append(stats(o)), hr.append(r1), orr.append(r2)
            hm, om = np.mean(h_all, axis=0), np.mean(o_all, axis=0)
            fmt = " / ".join
            print(
                f"| {kind} | {lb} | mean of {len(seeds)} | {fmt(f'{x:.1f}' for x in hm)} | "
                f"{fmt(f'{x:.1f}' for x in om)} | {fmt(f'{x:.3f}' for x in om / hm)} | "
                f"{np.mean(hr):.0f} / {np.mean(orr):.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
