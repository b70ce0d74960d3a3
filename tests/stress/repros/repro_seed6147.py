"""minpy_jit fuzz reproducer: seed 6147, shrunk from 37 to 8 statements.

First difference (eager vs jit()): final[6][1][6]: value at (0,) is 0.1786 (eager) vs -0.0002321 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed6147.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(6147)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a11 = nd.array(RNG.uniform(-2.0, 2.0, (2, 3, 6, 4,)), dtype='float32')
    a12 = nd.array(RNG.uniform(-2.0, 2.0, (1, 3, 3, 3,)), dtype='float32')
    a13 = nd.array(RNG.uniform(-2.0, 2.0, (1,)), dtype='float32')
    a22 = nd.array(RNG.uniform(-2.0, 2.0, (4, 2, 3,)), dtype='float16')
    a22.attach_grad()
    try:
        with J():
            with autograd.record():
                a14 = nd.Convolution(a11, a12, a13, kernel=(3, 3), pad=(1, 1), num_filter=1)
            a16 = nd.tile(a14, reps=(2, 2, 2, 2,))
            a23 = nd.reshape(a22, shape=(-1,))
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 6147, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
