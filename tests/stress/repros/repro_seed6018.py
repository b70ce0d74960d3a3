"""minpy_jit fuzz reproducer: seed 6018, shrunk from 45 to 5 statements.

First difference (eager vs jit()): final[2][1][6]: value at (2, 0) is 0.08636837249751496 (eager) vs 0.08636837249751494 (jit) [bit-exact required]

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed6018.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(6018)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a4 = nd.array(RNG.uniform(-2.0, 2.0, (4, 1,)), dtype='float64')
    a5 = nd.array(RNG.uniform(-2.0, 2.0, (4, 1,)), dtype='float64')
    a6 = nd.array(RNG.uniform(0.0, 0.5, (4, 1,)), dtype='float64')
    a7 = nd.array(RNG.uniform(0.0, 0.5, (4, 1,)), dtype='float64')
    try:
        with J():
            nd.adam_update(a4, a5, a6, a7, lr=0.1, wd=0.01, out=a4)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 6018, exact=True, config={'fuse': False, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
