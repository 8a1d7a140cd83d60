"""Progress of a single run: the engines report simulated time; results do not depend on it."""

import pytest

import fabricsim
from fabricsim.metrics.results import dumps_json


@pytest.mark.parametrize(
    ("name", "engine", "sets"),
    [
        ("permutation", "packet", {"topology.k": 4, "workload.size_bytes": 400_000}),
        ("ark", "flow", {"workload.requests": 1000}),
    ],
)
def test_progress_reports_and_changes_nothing(name, engine, sets, monkeypatch):
    sc = fabricsim.load_scenario(name).with_overrides(sets)
    plain = fabricsim.run(sc, engine=engine)
    calls: list[tuple[float, float]] = []
    clock = iter(range(10**9))
    monkeypatch.setattr("time.perf_counter", lambda: next(clock) * 0.07)  # every call: 70 ms on
    watched = fabricsim.run(sc, engine=engine, progress=lambda now, end: calls.append((now, end)))
    monkeypatch.undo()
    assert dumps_json(watched.summary) == dumps_json(plain.summary)
    assert watched.flows.equals(plain.flows)
    assert len(calls) >= 3, calls
    times = [t for t, _ in calls]
    assert times == sorted(times) and times[-1] == pytest.approx(plain.summary["sim_end_s"])
    assert all(end == calls[0][1] > 0 for _, end in calls)  # the ideal end, fixed for the run
