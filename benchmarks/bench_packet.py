"""Packet-engine speed: a 128-host three-tier fat tree (k = 8), a random permutation of 2 MB
messages at 100 Gbps with 1 us links, for spraying types ``none``, ``default`` and ``reps``.

Prints, per spraying type: wall seconds of the engine (and CPU seconds of the process, which
shows how much a busy machine stole), events, data packets sent, events per wall second and
data packets per wall second (target: >= 25,000); and a calibration line (a pure-Python heap
loop) so that numbers from different machines can be compared.  Options: ``--types``,
``--size-bytes``, ``--profile`` (cProfile of the first type, top 25 functions by own time),
``--ack-coalesce``.  Run: ``python benchmarks/bench_packet.py``.

``--htsim PATH`` (an ``htsim_uec`` you built yourself) instead runs both simulators on the same
``.cm`` matrix (a 2 MB permutation on the k-ary fat tree of ``--k``, default 8 = 128 hosts),
fabricsim with its ``htsim-uec`` preset and REPS, ``--repeats`` times alternating, and prints
whole-process wall seconds, peak RSS (through a small launcher, see :data:`LAUNCHER`), data
packets per wall second and the ratios against issue 13's targets.
"""

from __future__ import annotations

import argparse
import cProfile
import heapq
import os
import pstats
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import fabricsim


def scenario(spray: str, size_bytes: int, ack_coalesce: int) -> fabricsim.Scenario:
    return fabricsim.load_scenario("permutation").with_overrides(
        {
            "nic.packet_spraying_type": spray,
            "workload.size_bytes": size_bytes,
            "nic.ack_coalesce": ack_coalesce,
        }
    )


def calibrate(n: int = 300_000) -> float:
    """Million heappush + heappop pairs of int keys per second on this machine (one core)."""
    heap = list(range(0, 2000, 2))
    t0 = time.perf_counter()
    for i in range(n):
        heapq.heappush(heap, heapq.heappop(heap) + 1000 + (i & 7))
    return n / (time.perf_counter() - t0) / 1e6


# The launcher of each timed run: a bare interpreter (no site, ~9 MB) that forks the command,
# waits for it and reports its wall seconds and peak RSS on stderr.  Linux records the RSS a
# process had when it forked or exec'd into its child's peak (``ru_maxrss``); a child forked
# straight from this script would start at the script's ~60 MB (numpy, fabricsim), which made
# htsim's 15 MB at 128 hosts read as 56 MB.  Through the launcher the floor is its own ~9 MB.
LAUNCHER = """
import os, sys, time
t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
    os.execvp(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
sys.stderr.write(f"{time.perf_counter() - t0} {usage.ru_maxrss}")
sys.exit(os.waitstatus_to_exitcode(status))
"""


def timed(cmd: list[str], cwd: Path | None = None) -> tuple[float, float, str]:
    """Run ``cmd`` (in ``cwd``) through :data:`LAUNCHER`: its wall seconds, peak RSS in MB
    and standard output."""
    proc = subprocess.run(
        [sys.executable, "-S", "-I", "-c", LAUNCHER, *cmd],
        capture_output=True,
        text=True,
        cwd=cwd,
    )
    if proc.returncode:
        raise SystemExit(f"{cmd[0]} failed with exit code {proc.returncode}")
    wall, rss_kb = proc.stderr.split()
    return float(wall), int(rss_kb) / 1024, proc.stdout


def versus_htsim(htsim: str, k: int, size_bytes: int, repeats: int) -> None:
    """Both simulators on one matrix, alternating; whole-process wall, RSS and packets/s."""
    work = Path(tempfile.mkdtemp(prefix="bench-htsim-"))
    cm = work / f"perm_k{k}.cm"
    fab = [sys.executable, "-m", "fabricsim.cli"]
    sets = ["--set", f"topology.k={k}", "--set", f"workload.size_bytes={size_bytes}"]
    subprocess.run(
        [*fab, "export-trace", "permutation", "--format", "htsim", "--out", str(cm), *sets],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    ours = [
        *fab,
        "run",
        str(cm),
        "--set",
        "nic.packet_spraying_type=reps",
        "--quiet",
        "--out",
        str(work / "out"),
    ]
    theirs = [
        htsim,
        "-tm",
        str(cm),
        "-o",
        str(work / "h.dat"),
        "-end",
        "1000000",
        "-load_balancing_algo",
        "reps",
    ]
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print(
            "note: PYTHONDONTWRITEBYTECODE is set: every fabricsim run compiles its modules to "
            "bytecode again (about 0.5 s here); unset it to time a normal install"
        )
    print(f"{'run':<12}{'wall_s':>8}{'rss_mb':>8}{'data_pkts':>11}{'pkts/s':>10}")
    rows: dict[str, list[tuple[float, float, int]]] = {"htsim": [], "fabricsim": []}
    for _ in range(repeats):
        w, rss, out = timed(theirs, cwd=work)  # htsim writes idmap.txt where it runs
        m = re.search(r"New: (\d+) Rtx: (\d+)", out)
        pkts = int(m.group(1)) + int(m.group(2)) if m else 0
        rows["htsim"].append((w, rss, pkts))
        w, rss, _ = timed(ours)
        summary = (work / "out" / "summary.json").read_text()
        pkts = int(re.search(r'"packets_sent": (\d+)', summary).group(1))  # type: ignore[union-attr]
        rows["fabricsim"].append((w, rss, pkts))
        for name in rows:
            w, rss, pkts = rows[name][-1]
            print(f"{name:<12}{w:>8.2f}{rss:>8.0f}{pkts:>11,}{pkts / w:>10,.0f}")
    best = {n: min(r, key=lambda x: x[0]) for n, r in rows.items()}
    (hw, hr, _), (fw, fr, _) = best["htsim"], best["fabricsim"]
    print(
        f"best of {repeats}: fabricsim / htsim wall {fw / hw:.2f}x, peak RSS {fr:.0f} MB vs "
        f"{hr:.0f} MB ({fr / hr:.1f}x)"
    )
    med = {n: sorted(x[0] for x in r)[len(r) // 2] for n, r in rows.items()}
    target = 1.0 if k <= 8 else 0.5
    rss_cap = 2 * max(x[1] for x in rows["htsim"]) + 60
    print(
        f"median wall ratio {med['fabricsim'] / med['htsim']:.2f}x (target <= {target}x); "
        f"peak RSS {max(x[1] for x in rows['fabricsim']):.0f} MB (target <= 2 x htsim + 60 = "
        f"{rss_cap:.0f} MB)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--types", default="none,default,reps")
    ap.add_argument("--size-bytes", type=int, default=2_000_000)
    ap.add_argument("--ack-coalesce", type=int, default=1)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--htsim", help="path of an htsim_uec binary: compare on the same .cm")
    ap.add_argument("--k", type=int, default=8, help="--htsim: fat-tree radix (8: 128 hosts)")
    ap.add_argument("--repeats", type=int, default=3, help="--htsim: alternating runs each")
    args = ap.parse_args()
    if args.htsim:
        versus_htsim(args.htsim, args.k, args.size_bytes, args.repeats)
        return
    print(f"calibration: {calibrate():.2f} M heap push+pop per second")
    print(
        f"{'type':<10}{'wall_s':>8}{'cpu_s':>7}{'events':>11}{'data_pkts':>11}{'events/s':>11}"
        f"{'pkts/s':>10}{'done':>6}{'fct_max_us':>12}"
    )
    for i, spray in enumerate(args.types.split(",")):
        sc = scenario(spray, args.size_bytes, args.ack_coalesce)
        prof = cProfile.Profile() if args.profile and i == 0 else None
        if prof:
            prof.enable()
        cpu0 = time.process_time()
        res = fabricsim.run(sc, engine="packet")
        cpu = time.process_time() - cpu0
        if prof:
            prof.disable()
        t, s = res.timing, res.summary
        print(
            f"{spray:<10}{t['wall_s']:>8.2f}{cpu:>7.2f}{t['events']:>11,}{s['packets_sent']:>11,}"
            f"{t['events_per_s']:>11,.0f}{t['packets_per_s']:>10,.0f}"
            f"{s['flows_completed']:>6}{s['fct_max_s'] * 1e6:>12.1f}"
        )
        if prof:
            pstats.Stats(prof).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
