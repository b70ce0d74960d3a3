"""minpy_jit fuzz reproducer: seed 307564, shrunk from 29 to 9 statements.

First difference (eager vs jit()): final[6][1][6]: value at (0, 0, 0) is 1.9760534 (eager) vs -1.3621194e+28 (jit)

    PYTHONPATH=<minpy_jit checkout> python tests/stress/repros/repro_seed307564.py    # exits 1 while jit() and eager differ
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fuzz_harness import *  # noqa: E402,F401,F403  (the harness the fuzzer ran, tests/stress/fuzz_harness.py)

# ---------------------------------------------------------------- the program

def program(J, FLUSH, OBS):
    RNG = np.random.RandomState(307564)
    S = [0.5, 0.25, 2.0, -1.0, 0.125]  # scalars that change from one iteration to the next
    a11 = nd.array(RNG.uniform(-2.0, 2.0, (2, 2,)), dtype='float32')
    a11.attach_grad()
    a15 = nd.array(RNG.uniform(-2.0, 2.0, (2, 1,)), dtype='float16')
    a15.attach_grad(grad_req='add')
    a19 = nd.array(RNG.uniform(-2.0, 2.0, (2, 2, 2,)), dtype='float32')
    a20 = nd.array(RNG.uniform(-2.0, 2.0, (2, 2, 3,)), dtype='float32')
    try:
        with J():
            with autograd.record(train_mode=False):
                a12 = nd.reciprocal(nd.abs(a11) + 0.5)
                a16 = nd.argsort(a15, axis=1)
            a12.backward()
            a21 = nd.batch_dot(a19, a20)
    except Exception as e:
        OBS.append(('left the scope',) + X(e))
    return locals()


if __name__ == '__main__':
    difference = compare_runs(program, 307564, exact=False, config={'fuse': False, 'segment_ops': 64, 'async_launch': True, 'max_ops': 10000})
    print(difference or 'eager and jit() agree')
    raise SystemExit(1 if difference else 0)
