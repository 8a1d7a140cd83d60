"""Spraying strategies of lb/spraying.py and lb/reps.py, driven by hand (no event loop)."""

from collections import Counter

import pytest

from fabricsim.config.models import NicConfig
from fabricsim.lb.reps import RepsSpraying, exploration_window_packets
from fabricsim.lb.spraying import DefaultSpraying, NoSpraying, ObliviousSpraying, make_spraying
from fabricsim.packetsim.calendar import RandomPool
from fabricsim.rng import stream


class Clock:
    now = 0


class Counting:
    """Uniform draws that also count how many were taken (each draw is one exploration)."""

    def __init__(self, seed=1):
        self.pool = RandomPool(stream(seed, "test"))
        self.draws = 0

    def __call__(self):
        self.draws += 1
        return self.pool.random()


def reps(bits=3, window=71, timeout=100, rand=None, clock=None):
    return RepsSpraying(bits, 65536, timeout, window, rand or Counting(), clock or Clock())


# -- none / default / oblivious ------------------------------------------------------------
def test_none_uses_the_creators_src_port_live():
    class Pdc:
        src_port = 777

    pdc = Pdc()
    s = NoSpraying(pdc)
    assert [s.next_entropy() for _ in range(3)] == [777] * 3
    pdc.src_port = 9  # a re-route of the creating PDC moves the whole group
    assert s.next_entropy() == 9
    assert not s.explored


def test_default_round_robin_worked_example():
    s = DefaultSpraying(256, 7)
    vals = [s.next_entropy() for _ in range(256)]  # one 1 MiB message: 256 packets
    counts = Counter(vals)
    assert sorted(counts) == list(range(256, 384))
    assert set(counts.values()) == {2}
    assert vals[:3] == [256, 257, 258] and vals[128] == 256


def test_default_wraps_modulo_65536():
    s = DefaultSpraying(65535, 8)
    vals = [s.next_entropy() for _ in range(256)]
    assert vals == [65535, *range(0, 255)]
    assert s.next_entropy() == 65535


def test_default_mask_zero_is_one_value():
    s = DefaultSpraying(1234, 0)
    assert {s.next_entropy() for _ in range(50)} == {1234}


def test_default_state_is_shared_by_calls_across_messages():
    s = DefaultSpraying(0, 2)
    first = [s.next_entropy() for _ in range(3)]  # message 1
    second = [s.next_entropy() for _ in range(3)]  # message 2 continues the sequence
    assert first + second == [0, 1, 2, 3, 0, 1]


def test_oblivious_is_reproducible_and_covers_the_port_range():
    a = ObliviousSpraying(RandomPool(stream(5, "nic/0")).random)
    b = ObliviousSpraying(RandomPool(stream(5, "nic/0")).random)
    va = [a.next_entropy() for _ in range(5000)]
    assert va == [b.next_entropy() for _ in range(5000)]
    assert min(va) >= 0 and max(va) <= 65535 and len(set(va)) > 4500


def test_make_spraying_picks_by_name():
    class Pdc:
        src_port = 1

    for kind, cls in [
        ("none", NoSpraying),
        ("default", DefaultSpraying),
        ("oblivious", ObliviousSpraying),
        ("reps", RepsSpraying),
    ]:
        nic = NicConfig(PacketSprayingType=kind)
        assert type(make_spraying(nic, Pdc(), lambda: 0.5, Clock(), 71, 10)) is cls


# -- REPS -------------------------------------------------------------------------------------
def test_exploration_window_at_the_seed_defaults():
    assert exploration_window_packets(400e9, 6_000_000, 4096) == 71
    assert exploration_window_packets(100e9, 6_000_000, 4096) == 17


def test_reps_explores_until_first_cached_then_reuses_oldest():
    rand = Counting()
    r = reps(rand=rand)
    first = [r.next_entropy() for _ in range(5)]
    assert rand.draws == 5 and r.explored and r.reason == "cache_empty"
    assert all(0 <= v < 65536 for v in first)
    for v in (11, 12, 13):
        r.on_ack(v, ecn=False)
    assert [r.next_entropy() for _ in range(3)] == [11, 12, 13]
    assert not r.explored and r.reason is None and rand.draws == 5
    r.next_entropy()  # empty again: explore
    assert rand.draws == 6 and r.reason == "cache_empty"


def test_reps_ecn_echo_and_nack_discard():
    r = reps()
    r.on_ack(5, ecn=True)
    r.on_nack(6)
    assert r.count == 0
    r.on_ack(7, ecn=False)
    assert r.count == 1 and r.next_entropy() == 7


def test_reps_full_cache_overwrites_oldest():
    r = reps(bits=2)  # 4 slots
    for v in range(10, 16):
        r.on_ack(v, ecn=False)
    assert r.count == 4
    assert [r.next_entropy() for _ in range(4)] == [12, 13, 14, 15]


def test_reps_freezing_reuses_entries_in_turn_and_never_explores():
    clock = Clock()
    rand = Counting()
    r = reps(bits=2, rand=rand, clock=clock)
    for v in (1, 2, 3):
        r.on_ack(v, ecn=False)
    r.on_path_failure(99)
    assert r.state == "freezing"
    draws = rand.draws
    got = [r.next_entropy() for _ in range(9)]
    assert got[:3] == [1, 2, 3]  # cached values first
    assert set(got[3:]) <= {1, 2, 3}  # then the slots in turn, no exploration
    assert rand.draws == draws and not r.explored
    # a second failure while freezing changes nothing
    start = r.freeze_start_ps
    clock.now = 50
    r.on_path_failure(98)
    assert r.freeze_start_ps == start and r.freezes == 1


def test_reps_freezing_ends_at_first_recycle_after_timeout_then_window():
    clock = Clock()
    r = reps(bits=3, window=71, timeout=100, clock=clock)
    r.on_ack(1, ecn=False)
    r.on_path_failure(2)
    clock.now = 99
    r.on_ack(3, ecn=False)
    assert r.state == "freezing"  # before the timeout
    clock.now = 150
    r.on_ack(4, ecn=True)  # discarded values do not end freezing
    assert r.state == "freezing"
    r.on_ack(5, ecn=False)
    assert r.state == "window"
    r.on_path_failure(6)  # ignored in the window
    assert r.state == "window"


def test_reps_window_explores_7th_15th_to_71st():
    clock = Clock()
    r = reps(bits=3, window=71, timeout=0, clock=clock)
    r.on_ack(1, ecn=False)
    r.on_path_failure(1)
    r.on_ack(2, ecn=False)  # timeout 0: this recycle ends freezing
    assert r.state == "window"
    reasons = []
    for i in range(1, 72):
        r.on_ack(1000 + i, ecn=False)  # keep the cache non-empty
        r.next_entropy()
        reasons.append(r.reason if r.explored else None)
    windows = [i + 1 for i, x in enumerate(reasons) if x == "window"]
    assert windows == list(range(7, 72, 8))
    assert reasons.count("cache_empty") == 0
    assert r.state == "normal"


def test_reps_window_cache_empty_explorations_only_when_empty():
    clock = Clock()
    r = reps(bits=3, window=71, timeout=0, clock=clock)
    r.on_ack(1, ecn=False)
    r.on_path_failure(1)
    r.on_ack(2, ecn=False)
    rows = []
    for i in range(1, 72):
        if i % 3 == 0:
            r.on_ack(2000 + i, ecn=False)
        before = r.count
        r.next_entropy()
        rows.append((i, before, r.explored, r.reason))
    for i, before, explored, reason in rows:
        if (71 - i) % 8 == 0:
            assert reason == "window"
        elif explored:
            assert reason == "cache_empty" and before == 0
        else:
            assert before > 0


@pytest.mark.parametrize("bits", [0, 1, 4])
def test_reps_cache_sizes(bits):
    r = reps(bits=bits)
    for v in range(40):
        r.on_ack(v, ecn=False)
    size = 1 << bits
    assert r.count == size
    assert [r.next_entropy() for _ in range(size)] == list(range(40 - size, 40))
