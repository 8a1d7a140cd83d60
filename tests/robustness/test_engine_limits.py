"""Engines safe under any input: the memory budget, time that always advances, clean refusals.

* The budget (``fabricsim.experiments.budget``) refuses every known memory bomb in one line that
  names the key to change, from the config alone (milliseconds, nothing allocated), and
  passes every built-in scenario and example at 8 GB.
* The flow engine and the open-loop engine end where ``now + dt == now`` in floating point
  (they used to loop forever); each case runs in a daemon thread with a wall limit.
* The packet engine refuses times its integer picosecond clock cannot hold (``inf``, past
  ``MAX_TIME_S``, a sampling interval under 1 ps) instead of an ``OverflowError`` or a loop.
"""

from __future__ import annotations

import math
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from harness import assert_refused, run_cli, snapshot

import fabricsim
import fabricsim.experiments.runner
from fabricsim.config import builtin_names, load_scenario
from fabricsim.errors import ConfigError
from fabricsim.experiments.budget import check_budget, estimate
from fabricsim.units import MAX_MESSAGE_BYTES

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
WALL_S = 60.0


def _sc(name: str, overrides: dict | None = None, gb: float = 8.0):
    return load_scenario(name).with_overrides({"engine.max_memory_gb": gb, **(overrides or {})})


def _bypass(sc, **sections):
    """``sc`` with fields set WITHOUT validation (values the config refuses, to reach engines)."""
    for section, fields in sections.items():
        sub = getattr(sc, section).model_copy(update=fields)
        sc = sc.model_copy(update={section: sub})
    return sc


def _within(fn, wall_s: float = WALL_S):
    """Run ``fn()`` in a daemon thread; fail (instead of hanging the suite) past ``wall_s``."""
    box: dict = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread
            box["error"] = exc

    th = threading.Thread(target=target, daemon=True)
    th.start()
    th.join(wall_s)
    assert not th.is_alive(), f"did not end within {wall_s:g} s (an engine loop that never ends)"
    if "error" in box:
        raise box["error"]
    return box["value"]


# -- the memory budget -------------------------------------------------------------------------
BOMBS = {
    "fat tree k=128": ("permutation", {"topology.k": 128}, "flow", "topology.k=128"),
    "leaf-spine 4096^3": (
        "ecmp-collision",
        {"topology.spines": 4096, "topology.leaves": 4096, "topology.hosts_per_leaf": 4096},
        "flow",
        "topology.",
    ),
    "leaf-spine 4096 leaves x 4096 hosts": (
        "ecmp-collision",
        {"topology.leaves": 4096, "topology.hosts_per_leaf": 4096},
        "flow",
        "topology.leaves=4096",
    ),
    "leaf-spine 4096 leaves x 4096 spines": (
        "ecmp-collision",
        {"topology.spines": 4096, "topology.leaves": 4096},
        "packet",
        "topology.",
    ),
    "timeline every 1 ps": (
        "moe",
        {"records.timeline_interval_us": 1e-6},
        "packet",
        "records.timeline_interval_us=1e-06",
    ),
    "kv_cache 10M requests": (
        "ark",
        {"workload.requests": 10_000_000},
        "flow",
        "workload.requests",
    ),
    "kv_cache 10M requests, ark": (
        "ark",
        {"workload.requests": 10_000_000, "lb.policy": "ark"},
        "flow",
        "workload.requests",
    ),
    "long time limit, blackholed packets retried, timelines": (
        "moe",
        {
            "engine.time_limit_s": 1e5,
            "topology.failed_links": ["leaf0->spine1"],
            "nic.max_retries": 40,
        },
        "packet",
        "engine.time_limit_s",
    ),
    "late start with timelines": (
        "moe",
        {"workload.start_s": 1e5},
        "packet",
        "records.timeline_interval_us",
    ),
    "flow timelines on k=64": (
        "permutation",
        {"topology.k": 64, "records.timelines": True},
        "flow",
        "records.timelines",
    ),
    "uet_monitor of 2.7e8 packets": (
        "spray-example",
        {"workload.size_bytes": 2**40, "engine.max_packets": 1e12},
        "packet",
        "records.uet_monitor",
    ),
    "2.7e8 packets": (
        "spray-example",
        {"workload.size_bytes": 2**40, "engine.max_packets": 1e12, "records.uet_monitor": False},
        "packet",
        "workload.size_bytes",
    ),
    "ring all-reduce over 4096 hosts": (
        str(EXAMPLES / "ring_allreduce.yaml"),
        {"topology.leaves": 512},
        "flow",
        "topology.leaves",
    ),
    "MoE over 16384 GPUs": (
        "moe",
        {"topology.leaves": 64, "topology.hosts_per_leaf": 256},
        "flow",
        "topology.",
    ),
    "rank-Zipf table of 1e9 prompts": (
        "ark",
        {"workload.prompt_max_tokens": 10**9},
        "flow",
        "workload.prompt_max_tokens",
    ),
}


@pytest.mark.parametrize("case", BOMBS, ids=list(BOMBS))
def test_budget_refuses_memory_bombs_in_one_line(case):
    name, overrides, engine, key = BOMBS[case]
    sc = _sc(name, overrides)
    t0 = time.perf_counter()
    with pytest.raises(ConfigError) as info:
        check_budget(sc, engine)
    elapsed = time.perf_counter() - t0
    msg = str(info.value)
    assert "\n" not in msg
    assert key in msg, msg
    assert "engine.max_memory_gb=8 GB" in msg and "needs about" in msg
    assert elapsed < 0.5, f"the estimate took {elapsed:.2f} s; it must not build anything"


def test_budget_message_names_the_dominant_term():
    sc = _sc("permutation", {"topology.k": 128})
    est = estimate(sc, "flow")
    assert est.dominant == "fabric paths"
    assert est.paths == 8192 * (128**3 // 4 + 128**2 + 128**2 // 4)  # leaves x nodes
    assert est.gb > 33  # the bound of 13 bytes per (leaf, node) entry
    with pytest.raises(ConfigError, match=r"topology\.k=128 needs about \d+ GB \(fabric paths\)"):
        check_budget(sc, "flow")


def test_budget_raises_with_the_limit():
    sc = _sc("permutation", {"topology.k": 64}, gb=1.0)
    with pytest.raises(ConfigError, match="topology.k=64"):
        check_budget(sc, "flow")
    check_budget(sc.with_overrides({"engine.max_memory_gb": 16}), "flow")


def test_budget_auto_limit_says_so():
    sc = load_scenario("permutation").with_overrides({"topology.k": 128})
    with pytest.raises(ConfigError, match=r"auto: half the RAM"):
        check_budget(sc, "flow")


BUILTIN = sorted(builtin_names())
EXAMPLE_YAMLS = sorted(EXAMPLES.glob("*.yaml"))


@pytest.mark.parametrize("name", BUILTIN)
def test_every_builtin_scenario_passes_the_budget_at_8_gb(name):
    sc = _sc(name)
    check_budget(sc, sc.engine.kind)
    assert estimate(sc, sc.engine.kind).gb < 1.0  # they are small; a big estimate is a bug


@pytest.mark.parametrize("path", EXAMPLE_YAMLS, ids=[p.name for p in EXAMPLE_YAMLS])
def test_every_example_passes_the_budget_at_8_gb(path):
    sc = _sc(str(path))
    check_budget(sc, sc.engine.kind)


def test_estimate_counts_match_the_built_fabric_and_workload():
    from fabricsim import workloads
    from fabricsim.experiments.runner import fabric_of

    for name, ov in [
        ("permutation", {}),
        ("incast", {}),
        ("ecmp-collision", {"topology.parallel_links": 2}),
        ("ark", {"workload.requests": 50}),
        (str(EXAMPLES / "ring_allreduce.yaml"), {}),
    ]:
        sc = _sc(name, ov)
        est = estimate(sc, sc.engine.kind)
        fab = fabric_of(sc)
        assert (est.nodes, est.links) == (fab.num_nodes, fab.num_links), name
        assert est.paths == len(fab.leaves) * fab.num_nodes, name
        assert est.flows == len(workloads.generate(sc, fab)), name


def test_moe_flow_count_is_an_upper_bound():
    from fabricsim import workloads
    from fabricsim.experiments.runner import fabric_of

    sc = _sc("moe")
    assert estimate(sc, "packet").flows >= len(workloads.generate(sc, fabric_of(sc)))


@pytest.mark.skipif(
    "check_budget" not in vars(fabricsim.experiments.runner),
    reason="runner.run does not call check_budget yet (the call is the lead's to add)",
)
@pytest.mark.parametrize(
    "args,key",
    [
        (["run", "permutation", "--set", "topology.k=128"], "topology.k=128"),
        (["run", "moe", "--set", "records.timeline_interval_us=1e-6"], "timeline_interval_us"),
        (["run", "ark", "--set", "workload.requests=10000000"], "workload.requests"),
        (
            ["run", "ecmp-collision", "--set", "topology.leaves=4096"]
            + ["--set", "topology.hosts_per_leaf=4096", "--set", "topology.spines=4096"],
            "topology.",
        ),
    ],
)
def test_cli_refuses_memory_bombs_before_allocating(tmp_path, args, key):
    argv = [*args, "--set", "engine.max_memory_gb=2", "--out", "out"]
    before = snapshot(tmp_path)
    outcome = run_cli(argv, tmp_path, wall_s=30)
    assert_refused(outcome, before, snapshot(tmp_path), needle=key, wall_s=30)
    assert outcome.peak_rss_mb < 1500, f"peak RSS {outcome.peak_rss_mb:.0f} MB: it allocated"


# -- the flow engine: time always advances --------------------------------------------------------
def _flow_engine(sc, src, dst, sizes, starts, raw=False, engine=None):
    from fabricsim.experiments.runner import fabric_of, router_of
    from fabricsim.flowsim.engine import FlowEngine
    from fabricsim.lb import PolicyContext, make_policy
    from fabricsim.rng import stream
    from fabricsim.workloads.base import FlowTable

    fab = fabric_of(sc)
    router = router_of(sc, fab)
    if raw:  # no input checks: what reaches the engine when a caller bypasses them
        n = len(src)
        flows = FlowTable(src, dst, np.asarray(sizes), np.asarray(starts), np.zeros(n, np.int64))
    else:
        flows = FlowTable.build(sc, src, dst, sizes, starts)
    ctx = PolicyContext(sc, fab, router, flows, stream(sc.seed, "policy"))
    eng = (engine or FlowEngine)(sc, fab, router, flows, make_policy(ctx))
    ctx.hooks = eng
    return eng


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_flow_engine_ends_where_now_plus_dt_equals_now(seed):
    """In bounds (starts just under 1e6 s, 0.1 Gbps, PiB-scale messages): now reaches ~1e8 s,
    where a remainder's dt is below half a float step; the old loop never ended on these."""
    sc = _sc("ecmp-collision", {"topology.link_gbps": 0.1})
    rng = np.random.default_rng(seed)
    sizes = rng.integers(MAX_MESSAGE_BYTES // 2, MAX_MESSAGE_BYTES, 8)
    starts = 1e6 - rng.random(8)
    eng = _flow_engine(sc, np.arange(8), np.arange(8) + 8, sizes, starts)
    out = _within(eng.run)
    assert np.isfinite(out.finish_s).all()
    assert out.summary["link_counters_match_flows"] is True
    assert "stalled" not in out.summary
    assert (out.finish_s > starts).all()


def test_flow_engine_ends_far_past_the_time_bound():
    """Programmatic start_s=1e12 (the config refuses it; the engine must still end)."""
    sc = _sc("ecmp-collision")
    src, dst, size = np.arange(8), np.arange(8) + 8, np.full(8, 4 * 2**20)
    eng = _flow_engine(sc, src, dst, size, np.full(8, 1e12), raw=True)
    out = _within(eng.run)
    assert np.isfinite(out.finish_s).all()
    assert (out.delivered_bytes == 4 * 2**20).all()


def test_flow_engine_backstop_reports_unfinished_flows():
    from fabricsim.flowsim.engine import FlowEngine

    class Tiny(FlowEngine):  # (the compiled engine's methods are overridden, not patched)
        def _max_passes(self):
            return 3

    sc = _sc("ecmp-collision")
    src, dst, size, start = np.arange(8), np.arange(8) + 8, np.full(8, 10**6), np.arange(8) * 1e-3
    eng = _flow_engine(sc, src, dst, size, start, engine=Tiny)
    out = _within(eng.run)
    assert out.summary["stalled"] is True
    assert np.isnan(out.finish_s).any()
    assert (out.delivered_bytes < 10**6)[np.isnan(out.finish_s)].all()


def test_trace_that_used_to_hang_runs_from_the_cli(tmp_path):
    rng = np.random.default_rng(2)
    pd.DataFrame(
        {
            "src": np.arange(8),
            "dst": np.arange(8) + 8,
            "size_bytes": rng.integers(MAX_MESSAGE_BYTES // 2, MAX_MESSAGE_BYTES, 8),
            "start_s": 1e6 - rng.random(8),
        }
    ).to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "s.yaml").write_text(
        "topology: {kind: leaf_spine, leaves: 2, spines: 8, hosts_per_leaf: 8, link_gbps: 0.1}\n"
        "workload: {kind: trace, path: t.csv}\nnic: {packet_spraying_type: none}\n"
    )
    outcome = run_cli(["run", "s.yaml", "--out", "out", "--quiet"], tmp_path, wall_s=WALL_S)
    assert outcome.code == 0, outcome.stderr[-2000:]
    assert (tmp_path / "out" / "summary.json").exists()


def test_open_loop_processor_sharing_ends_at_large_times():
    """Staggered starts at 1e6 s: served + dt x rate / k stalled below the next finisher."""
    from fabricsim.flowsim.open_loop import round_robin_ends

    rng = np.random.default_rng(1)
    wire = rng.integers(1000, 10**6, 50).astype(float)
    for t0 in (1e6, 1e12):
        start = t0 + rng.random(50) * 1e-4
        end = _within(lambda s=start: round_robin_ends(s, wire, 1.25e10))
        assert np.isfinite(end).all() and (end >= start).all()


# -- the packet engine: times its integer clock cannot hold ------------------------------------------
def _packet(sc, starts=None):
    """The packet engine of ``sc``, built without the run pipeline's checks (the engine's own
    checks are under test); ``starts`` replaces the flows' start times unchecked."""
    from fabricsim import workloads
    from fabricsim.experiments.runner import fabric_of, router_of
    from fabricsim.lb import PolicyContext, make_policy
    from fabricsim.packetsim.engine import PacketEngine
    from fabricsim.rng import stream

    fab = fabric_of(sc)
    router = router_of(sc, fab)
    flows = workloads.generate(sc, fab)
    if starts is not None:
        flows.start_s = np.full(len(flows), starts)
    ctx = PolicyContext(sc, fab, router, flows, stream(sc.seed, "policy"))
    eng = PacketEngine(sc, fab, router, flows, make_policy(ctx))
    ctx.hooks = eng
    return eng


@pytest.mark.parametrize(
    "sections,key",
    [
        ({"engine": {"time_limit_s": math.inf}}, "engine.time_limit_s"),
        ({"engine": {"time_limit_s": 1e7}}, "engine.time_limit_s"),
        ({"records": {"timelines": True, "timeline_interval_us": 1e-7}}, "timeline_interval_us"),
        ({"records": {"timelines": True, "timeline_interval_us": math.inf}}, "timeline_interval"),
        ({"nic": {"rto_us": math.inf}}, "nic.rto_us"),
    ],
)
def test_packet_engine_refuses_times_out_of_range(sections, key):
    sc = _bypass(load_scenario("spray-example"), **sections)
    with pytest.raises(ConfigError) as info:
        _within(lambda: _packet(sc).run(), 30)
    msg = str(info.value)
    assert key in msg and "\n" not in msg
    assert "1e+06" in msg or "1e+12 us" in msg  # the bound: MAX_TIME_S


@pytest.mark.parametrize("start", [1e7, math.inf, math.nan, -1.0])
def test_packet_engine_refuses_start_times_out_of_range(start):
    with pytest.raises(ConfigError) as info:
        _packet(load_scenario("spray-example"), starts=start)
    msg = str(info.value)
    assert "workload.start_s" in msg and "MAX_TIME_S" in msg and "\n" not in msg


def test_packet_engine_refuses_an_infinite_failure_time():
    eng = _packet(load_scenario("spray-example"))
    with pytest.raises(ConfigError, match=r"topology\.link_failures.*MAX_TIME_S"):
        eng.fail_link_at("leaf0->spine1", math.inf)


def test_packet_engine_automatic_limit_stays_inside_int64():
    from fabricsim.packetsim.checks import LIMIT_MAX_PS, MAX_TIME_PS

    slowest = {"host_link_gbps": 1e-6, "fabric_link_gbps": 1e-6}  # 1 kbps, the lowest rate
    sc = _bypass(
        load_scenario("spray-example"), topology=slowest, workload={"size_bytes": 10**9}
    )  # 8e18 ps of serialization, x 2 in the automatic limit: past int64
    eng = _packet(sc)
    # a run may pass MAX_TIME_S (a flow may start there), never int64
    assert eng.time_limit_ps() == LIMIT_MAX_PS == 4 * MAX_TIME_PS < 2**63


@pytest.mark.full
def test_packet_timeline_sampler_caps_its_rows_at_run_time():
    sc = load_scenario("moe").with_overrides({"engine.max_memory_gb": 0.001})
    eng = _packet(sc)
    with pytest.raises(ConfigError, match=r"records\.timeline_interval_us=2: the timelines passed"):
        _within(eng.run)


VARIANTS = [
    ("permutation", {}),
    ("permutation", {"topology.hosts_per_edge": 16}),
    ("incast", {"workload.senders": 10**6}),
    ("ecmp-collision", {"workload.hosts": 3}),
    ("ecmp-collision", {"topology.leaves": 1, "workload.src_leaf": 0}),
    ("ecmp-collision", {"nic.packet_spraying_type": "oblivious"}),
    ("ecmp-collision", {"lb.policy": "ideal_spray"}),
    ("ecmp-collision", {"switch.hash_method": "random"}),
    ("ecmp-collision", {"lb.policy": "qp_scaling", "lb.qp_count": 8, "lb.qp_mode": "split"}),
    ("ark", {"workload.prompt": "fixed"}),
    ("ark", {"workload.prompt_theta": 0.0}),
    ("ark", {"workload.decode_hosts": [15], "workload.prefill_hosts": [0, 1]}),
    ("moe", {"workload.matrix": "pure_zipf"}),
    ("moe", {"workload.gpus_per_server": 64}),
    ("moe", {"workload.model": None, "workload.experts": 2, "workload.top_k": 2}),
    ("moe", {"engine.time_limit_s": 1e-4, "records.timeline_interval_us": 1e-6}),
    ("moe", {"nic.rto_us": 1e9, "topology.failed_links": ["leaf0->spine1"]}),
    ("moe", {"switch.buffer_bytes": 10**12}),
    (str(EXAMPLES / "ring_allreduce.yaml"), {"workload.op": "all_to_all"}),
    (str(EXAMPLES / "ring_allreduce.yaml"), {"workload.hosts": [0, 1, 2]}),
    (str(EXAMPLES / "trace.yaml"), {}),
    (str(EXAMPLES / "trace.yaml"), {"records.timelines": True, "engine.time_limit_s": 1.0}),
]


@pytest.mark.parametrize("name,overrides", VARIANTS)
@pytest.mark.parametrize("engine", ["flow", "packet"])
def test_estimate_is_defined_for_every_kind_of_scenario(name, overrides, engine):
    sc = _sc(name, overrides, gb=1e5)
    est = estimate(sc, engine)
    assert 0.2e9 <= est.bytes_estimate < 2**62
    assert sum(est.breakdown.values()) == pytest.approx(est.bytes_estimate, rel=1e-9)
    try:
        check_budget(sc, engine)
    except ConfigError as exc:  # a genuine bomb (e.g. a 1000 s RTO behind a failed link)
        assert "\n" not in str(exc) and "needs about" in str(exc)


def test_estimate_of_a_matrix_file_counts_gpus_squared(tmp_path):
    np.save(tmp_path / "m.npy", np.ones((64, 64)))
    sc = _sc("moe", {"workload.matrix": "file", "workload.path": str(tmp_path / "m.npy")})
    est = estimate(sc, "packet")
    assert est.flows == 64 * 64 and est.packets == 0 and est.notes


def test_packet_engine_refuses_more_packets_than_max_packets_before_allocating():
    from fabricsim.errors import EngineRefusal

    sc = _sc("spray-example", {"workload.size_bytes": 2**40})  # 2.7e8 packets of PSN state
    with pytest.raises(EngineRefusal, match=r"about 2\.7e\+08 data packets.*engine\.max_packets"):
        _within(lambda: _packet(sc), 30)
