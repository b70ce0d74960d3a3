"""minpy_jit fuzz reproducer: seed 205983, shrunk from 39 to 7 statements.

First difference (eager vs jit()): final[4][1][6]: value at (0, 1) is 0.8053794 (eager) vs -1.3480673 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed205983.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(205983)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (4, 2, 4, 3,)), dtype='float32')
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (2, 1,)), dtype='float32')
    a4 = nd.array(RNG.uniform(-2.0, 2.0, (2, 2,)), dtype='float32')
    a5 = nd.array(RNG.uniform(-2.0, 2.0, (2, 3,)), dtype='float32')
    try:
        with J():
            a6 = nd.concat(a3, a4, a5, dim=1)
            a8 = a2.reshape((4, -1,))
            a6 /= 0.5
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 205983, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
