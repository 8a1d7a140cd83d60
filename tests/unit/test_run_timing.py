"""``timing.json``'s start-up and memory figures: ``startup_s`` (process start to the engine's
first event, the first run of a process only) and ``startup_cpu_s`` (the process's CPU
seconds by then), ``setup_s`` (``fabricsim.run`` called to the
engine's first event) and ``engine_rss_growth_mb`` (resident memory from before the fabric is
built to the end of the engine's run), on either engine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from fabricsim._compat import process_age_s, resident_mb, start_up_once

TWO_RUNS = """
import json, time
import fabricsim
t0 = time.perf_counter()
a = fabricsim.run("ecmp-collision", engine="{first}").timing
b = fabricsim.run("ecmp-collision", engine="{second}").timing
print(json.dumps([a, b, time.perf_counter() - t0]))
"""


@pytest.mark.parametrize(("first", "second"), [("packet", "flow"), ("flow", "packet")])
def test_the_first_run_of_a_process_records_its_start_up_and_every_run_its_memory(first, second):
    t0 = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", TWO_RUNS.format(first=first, second=second)],
        capture_output=True,
        text=True,
    )
    whole = time.monotonic() - t0
    assert done.returncode == 0, done.stderr
    a, b, runs = json.loads(done.stdout)
    assert a["total_wall_s"] + b["total_wall_s"] <= runs
    # the interpreter and the imports came before the first run's engine; at most one clock
    # tick (10 ms) is added by the start time's resolution
    assert a["setup_s"] < a["startup_s"] < whole + 0.011
    assert 0 < a["startup_cpu_s"] < whole * (os.cpu_count() or 1)  # (numpy's BLAS threads)
    assert b["startup_s"] is None and b["startup_cpu_s"] is None  # paid by the first run
    for timing in (a, b):
        assert 0 < timing["setup_s"] < timing["total_wall_s"]
        assert isinstance(timing["engine_rss_growth_mb"], float)
        assert abs(timing["engine_rss_growth_mb"]) < 500


def test_the_process_clock_and_memory():
    age = process_age_s()
    assert age is not None and 0 < age < 10**7  # this test runs on Linux
    assert process_age_s() >= age
    start_up_once()  # this process may have made its first run already
    assert start_up_once() == {"startup_s": None, "startup_cpu_s": None}
    rss = resident_mb()
    assert rss is not None and 5 < rss < 10**6
    grown = bytearray(50 * 2**20)  # 50 MB touched (zeroed pages are resident once written)
    grown[::4096] = b"\x01" * len(grown[::4096])
    assert resident_mb() - rss > 40
