"""Parameter sweeps: grid and zipped parameter sets × seeds, on a local pool or a Dask cluster.

A sweep directory holds::

    DIR/.fabricsim             the output marker ({"kind": "sweep"}, fabricsim.metrics.outdir)
    DIR/manifest.json          the sweep's spec and its points, in row order
    DIR/points/<id>/           each point's run output (summary.json, flows.parquet, ...)
    DIR/points/<id>/point.json the point's parameters, seed and summary (written last)
    DIR/sweep.parquet          every point's parameters and summary, in row order

Points are ordered grid-major (the first ``--grid`` key varies slowest, the zipped keys
together form the last axis), then by seed.  Every file is written atomically (a temporary
file and :func:`os.replace`), and ``point.json`` is written after the point's run output, so
a sweep killed at any moment resumes by running only the points without one.  A point's
directory appears whole (written under ``points/.tmp-*`` and renamed), a directory that holds
anything but the same sweep is refused, and a fresh sweep interrupted before any point
finished (or whose every point was refused as bad input) leaves no directory.

Local workers die with the driver, however it ends (Ctrl-C, SIGTERM, SIGKILL): they ignore
SIGINT, and on Linux the kernel kills them (PDEATHSIG) when their forkserver dies, which it
does when the driver dies; elsewhere a watchdog thread ends them.  On Ctrl-C or SIGTERM the
driver cancels the queued points and terminates the workers before it exits (code 130).

Workers run :func:`run_point`, which takes a plain dict and returns the point's summary and
output files as bytes; only the driver writes to ``DIR``.  The same submit / as-completed code
path drives a local :class:`~concurrent.futures.ProcessPoolExecutor` or a Dask distributed
client, and the workers of a remote cluster need no shared filesystem.

Examples
--------
>>> plan = plan_sweep("ecmp-collision", grid=["topology.spines=4,8"], seeds=2)
>>> [(p.id, p.params, p.seed) for p in plan.points]  # doctest: +NORMALIZE_WHITESPACE
[('p0000', {'topology.spines': 4}, 1), ('p0001', {'topology.spines': 4}, 2),
 ('p0002', {'topology.spines': 8}, 1), ('p0003', {'topology.spines': 8}, 2)]
"""

from fabricsim.sweep.backends import open_backend
from fabricsim.sweep.plan import SweepPlan, SweepPoint, parse_axis, plan_sweep
from fabricsim.sweep.run import SweepOutcome, describe, failure_error, run_point, run_sweep
from fabricsim.sweep.store import MANIFEST, POINT_FILE, TABLE, aggregate, load_table

__all__ = [
    "MANIFEST",
    "POINT_FILE",
    "TABLE",
    "SweepOutcome",
    "SweepPlan",
    "SweepPoint",
    "aggregate",
    "describe",
    "failure_error",
    "load_table",
    "open_backend",
    "parse_axis",
    "plan_sweep",
    "run_point",
    "run_sweep",
]
