"""minpy_jit fuzz reproducer: seed 17904, shrunk from 30 to 12 statements.

First difference (eager vs jit()): final[6][1][6]: value at (0, 1, 1) is nan (eager) vs -inf (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed17904.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(17904)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (5, 4,)), dtype='float32')
    a5 = nd.array(RNG.uniform(-2.0, 2.0, (5, 1,)), dtype='float32')
    a10 = nd.array(RNG.uniform(-2.0, 2.0, (5, 4, 1,)), dtype='float32')
    a14 = nd.array(RNG.uniform(-2.0, 2.0, (1, 1, 3,)), dtype='float32')
    a18 = nd.array(RNG.uniform(-2.0, 2.0, (1, 4, 3,)), dtype='float32')
    a23 = nd.array(RNG.uniform(0.0, 0.5, (5, 4, 3,)), dtype='float32')
    try:
        with J():
            a6 = a5 - a3
            a8 = nd.stack(a6, a6, a6, axis=2)
            a11 = nd.broadcast_lesser_equal(a10, a8)
            a15 = nd.broadcast_greater(a14, a11)
            a19 = nd.broadcast_power(a15, a18)
            nd.nag_mom_update(a11, a19, a23, lr=abs(3.0), momentum=0.9, out=a11)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 17904, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
