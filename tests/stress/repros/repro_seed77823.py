"""minpy_jit fuzz reproducer: seed 77823, shrunk from 34 to 9 statements.

First difference (eager vs jit()): final[6][1][6]: value at (0, 0, 1) is 0.0 (eager) vs 2.644938e-17 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed77823.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(77823)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a1 = nd.array(RNG.uniform(-2.0, 2.0, (4, 2,)), dtype='float32')
    a2 = nd.array(RNG.uniform(-2.0, 2.0, (3,)), dtype='float32')
    a3 = nd.array(RNG.uniform(-2.0, 2.0, (2, 4, 3,)), dtype='float32')
    a6 = nd.array(RNG.uniform(-2.0, 2.0, (3,)), dtype='float32')
    a6.attach_grad()
    a11 = nd.array(RNG.uniform(-2.0, 2.0, (2, 5, 2,)), dtype='float32')
    a12 = nd.array(RNG.uniform(-2.0, 2.0, (2, 1, 1,)), dtype='float32')
    a12.attach_grad()
    try:
        with J():
            a13 = nd.broadcast_div(a11, a12)
            a23 = nd.minimum(a11, a13)
            a24 = nd.Activation(a23, act_type='softrelu')
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 77823, exact=False, config={'fuse': True, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
