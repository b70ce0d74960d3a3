"""minpy_jit fuzz reproducer: seed 7004, shrunk from 12 to 5 statements.

First difference (eager vs jit()): final[2][1][6]: value at (0, 0, 0, 1) is -0.12018209627630075 (eager) vs -0.12018209627630078 (jit) [bit-exact required]

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed7004.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(7004)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a6 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1, 1, 5,)), dtype='float64')
    a7 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1, 1, 5,)), dtype='float64')
    a8 = nd.array(RNG.uniform(0.0, 0.5, (1, 1, 1, 5,)), dtype='float64')
    a9 = nd.array(RNG.uniform(0.0, 0.5, (1, 1, 1, 5,)), dtype='float64')
    try:
        with J():
            nd.adam_update(a6, a7, a8, a9, lr=abs(1e-3), wd=0.01, out=a6)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 7004, exact=True, config={'fuse': False, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
