"""The history reproducer's pure parts (tests/stress/fuzz_history.py): delta debugging (minimize) and the
worker a seed ran in. The replays themselves are a campaign tool, run on demand."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "stress"))

import fuzz_history  # noqa: E402


def _needs(*required):
    calls = []

    def fails(subset):
        calls.append(list(subset))
        return all(r in subset for r in required)
    return fails, calls


def test_minimize_finds_the_programs_that_matter_in_order():
    for required in [(37,), (3, 190), (0, 77, 199), (198, 199)]:
        fails, calls = _needs(*required)
        assert fuzz_history.minimize(range(200), fails) == list(required)
        assert len(calls) < 40  # far fewer trials than programs


def test_minimize_returns_empty_when_nothing_is_needed():
    fails, _ = _needs()
    assert fuzz_history.minimize(range(50), fails) == []


def test_minimize_treats_a_broken_trial_as_not_reproducing():
    def fails(subset):
        if len(subset) == 1:
            raise RuntimeError("trial crashed")
        return 4 in subset and 5 in subset
    assert fuzz_history.minimize(range(10), fails) == [4, 5]


def test_minimize_keeps_only_what_is_needed_when_two_programs_each_suffice():
    fails, _ = _needs()
    assert fuzz_history.minimize(range(30), lambda s: 3 in s or 20 in s) == [20]


def test_worker_first_seed_follows_restarts_and_crashes():
    first = fuzz_history.worker_first_seed
    # every 100 programs a new worker; crashes at seeds 1030 and 1250 start one after them
    assert first(1010, 1000, (0, 1), 100, []) == 1000
    assert first(1150, 1000, (0, 1), 100, []) == 1100
    assert first(1040, 1000, (0, 1), 100, [1030]) == 1031
    assert first(1030, 1000, (0, 1), 100, [1030]) == 1000   # the crashing program's own worker
    assert first(1135, 1000, (0, 1), 100, [1030]) == 1131   # 1031 + 100
    assert first(1260, 1000, (0, 1), 100, [1030, 1250]) == 1251
    # shard 1/2: seeds 1001, 1003, ...; k counts the shard's programs
    assert first(1203, 1000, (1, 2), 50, []) == 1201
    assert first(1201, 1000, (1, 2), 50, [1101]) == 1103
    assert first(1203, 1000, (1, 2), 50, [1101]) == 1203   # 1103 + 50 programs of the shard
